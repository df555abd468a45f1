/*
 * The configuration's keys (config_internal.h): every key is described
 * once, in the tables below, and a file's JSON object is applied to them
 * member by member. Sizes may be numbers of bytes or strings such as
 * "256m".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config_internal.h"
#include "common/util.h"

enum field_kind { F_STR, F_INT, F_SIZE, F_BOOL, F_DOUBLE };

struct field {
	const char *key;
	enum field_kind kind;
	size_t off;
	size_t len;		/* F_STR: buffer size */
	int64_t min, max;	/* F_INT/F_SIZE/F_DOUBLE bounds */
};

#define STR(k, m) { k, F_STR, offsetof(struct config, m), \
	sizeof(((struct config *)0)->m), 0, 0 }
#define INT(k, m, lo, hi) { k, F_INT, offsetof(struct config, m), 0, lo, hi }
#define BOOL(k, m) { k, F_BOOL, offsetof(struct config, m), 0, 0, 0 }

static const struct field top_fields[] = {
	STR("docker", docker),
	STR("docker_api", docker_api),
	STR("state_dir", state_dir),
	STR("cache_dir", cache_dir),
	STR("audit_log", audit_log),
	BOOL("audit_required", audit_required),
	STR("runtime_offline", runtime_offline),
	STR("runtime_egress", runtime_egress),
	STR("runtime_debug", runtime_debug),
	STR("runtime_debug_egress", runtime_debug_egress),
	STR("user", user),
	STR("egress_network", egress_network),
	STR("egress_bridge", egress_bridge),
	STR("egress_subnet", egress_subnet),
	INT("proxy_port", proxy_port, 1, 65535),
	INT("proxy_transparent_port", proxy_transparent_port, 1, 65535),
	INT("proxy_dns_port", proxy_dns_port, 1, 65535),
	STR("proxy_user", proxy_user),
	STR("proxy_bin", proxy_bin),
	STR("egress_default_policy", egress_default_policy),
	STR("egress_secrets", egress_secrets),
	STR("egress_access_log", egress_access_log),
	{ "egress_access_log_max", F_SIZE, offsetof(struct config,
	    egress_access_log_max), 0, 0, 1LL << 53 },
	INT("egress_access_log_keep", egress_access_log_keep, 1, 100),
	INT("egress_run_max_conns", egress_run_max_conns, 1, 65535),
	INT("egress_source_max_pending", egress_source_max_pending, 0, 65535),
	{ "egress_run_bytes_up", F_SIZE, offsetof(struct config,
	    egress_run_bytes_up), 0, 0, 1LL << 53 },
	{ "egress_run_bytes_down", F_SIZE, offsetof(struct config,
	    egress_run_bytes_down), 0, 0, 1LL << 53 },
	BOOL("require_probe", require_probe),
	INT("probe_max_age_s", probe_max_age_s, 1, 30 * 86400),
	BOOL("probe_auto", probe_auto),
};

#define LSZ(k, m, lo, hi) { k, F_SIZE, offsetof(struct config_limits, m), 0, lo, hi }
#define LINT(k, m, lo, hi) { k, F_INT, offsetof(struct config_limits, m), 0, lo, hi }

static const struct field limit_fields[] = {
	LSZ("memory", memory_bytes, 16 << 20, INT64_MAX),
	{ "cpus", F_DOUBLE, offsetof(struct config_limits, cpus), 0, 0, 64 },
	LINT("timeout_s", timeout_s, 1, 86400),
	LINT("max_timeout_s", max_timeout_s, 1, 86400),
	LSZ("max_output", max_output_bytes, 0, 1LL << 30),
	LSZ("max_output_cap", max_output_cap, 0, 1LL << 30),
	LINT("nofile", nofile, 16, 65536),
	LSZ("fsize", fsize_bytes, 4096, INT64_MAX),
	LINT("nproc", nproc, 8, 4096),
	LINT("pids_limit", pids_limit, 128, 65536),
	LSZ("tmpfs_size", tmpfs_bytes, 1 << 20, 1LL << 34),
	LSZ("in_max_bytes", in_max_bytes, 0, 1LL << 34),
	LINT("in_max_files", in_max_files, 0, 100000),
	LSZ("out_max_bytes", out_max_bytes, 0, 1LL << 34),
	LINT("out_max_files", out_max_files, 0, 100000),
	LINT("max_concurrent_runs", max_concurrent_runs, 1, 1024),
	LINT("queue_timeout_s", queue_timeout_s, 0, 3600),
};

#define ISTR(k, m) { k, F_STR, offsetof(struct config_image, m), \
	sizeof(((struct config_image *)0)->m), 0, 0 }

static const struct field image_fields[] = {
	ISTR("name", name),
	ISTR("suite", suite),
	ISTR("mirror", mirror),
	ISTR("id", id),
	{ "max_age_days", F_INT, offsetof(struct config_image, max_age_days), 0,
	    0, 3650 },
};

#define SSTR(k, m) { k, F_STR, offsetof(struct config_serve, m), \
	sizeof(((struct config_serve *)0)->m), 0, 0 }
#define SINT(k, m, lo, hi) { k, F_INT, offsetof(struct config_serve, m), 0, lo, hi }

static const struct field serve_fields[] = {
	SSTR("socket", socket),
	SSTR("listen", listen),
	SINT("global_limit", global_limit, 1, 1024),
	SINT("queue_max", queue_max, 0, 100000),
	{ "body_max", F_SIZE, offsetof(struct config_serve, body_max_bytes), 0,
	    1024, 1LL << 30 },
	SINT("probe_interval_s", probe_interval_s, 60, 30 * 86400),
	SINT("pool", pool, 0, 64),
	SINT("pool_bash", pool_bash, 0, 64),
	SINT("pool_node", pool_node, 0, 64),
	SINT("pool_max_age_s", pool_max_age_s, 10, 86400),
	SINT("pool_starts", pool_starts, 0, 16),	/* POOL_STARTS_MAX */
	SINT("pool_idle_s", pool_idle_s, 0, 30 * 86400),
	SINT("sessions_per_tenant", sessions_per_tenant, 0, 1024),
	SINT("max_connections", max_connections, 0, 1000000),
	SINT("max_connections_per_peer", max_connections_per_peer, 1, 1000000),
	SINT("unix_connections", unix_connections, 1, 100000),
	SINT("head_timeout_s", head_timeout_s, 1, 3600),
	SINT("body_timeout_s", body_timeout_s, 1, 3600),
	SINT("write_timeout_s", write_timeout_s, 1, 3600),
	{ "unsent_max", F_SIZE, offsetof(struct config_serve, unsent_max_bytes),
	    0, 1 << 20, 1LL << 40 },
	SINT("refusals_per_min", refusals_per_min, 0, 1000000),
	SSTR("stats_tcp", stats_tcp),
};

static const struct field mcp_fields[] = {
	{ "pool", F_INT, offsetof(struct config_mcp, pool), 0, 0, 64 },
	{ "pool_bash", F_INT, offsetof(struct config_mcp, pool_bash), 0, 0,
	    64 },
	{ "pool_node", F_INT, offsetof(struct config_mcp, pool_node), 0, 0,
	    64 },
	{ "pool_idle_s", F_INT, offsetof(struct config_mcp, pool_idle_s), 0,
	    0, 30 * 86400 },
	{ "session_idle_s", F_INT, offsetof(struct config_mcp,
	    session_idle_s), 0, 0, 86400 },
	{ "session_life_s", F_INT, offsetof(struct config_mcp,
	    session_life_s), 0, 1, 86400 },
};

#define TSTR(k, m) { k, F_STR, offsetof(struct config_tenant, m), \
	sizeof(((struct config_tenant *)0)->m), 0, 0 }

static const struct field tenant_fields[] = {
	TSTR("name", name),
	TSTR("token", token),
	{ "max_concurrent", F_INT, offsetof(struct config_tenant,
	    max_concurrent), 0, 1, 1024 },
	{ "max_queue", F_INT, offsetof(struct config_tenant, max_queue), 0, 0,
	    100000 },
	TSTR("net", net),
};

static int
set_field(void *base, const struct field *f, const cJSON *v, const char *name,
    const char *section, char *err, size_t errlen)
{
	char *p = (char *)base + f->off;
	uint64_t sz;

	switch (f->kind) {
	case F_STR:
		if (!cJSON_IsString(v))
			return config_fail(err, errlen, name, "%s%s: expected a string",
			    section, f->key);
		if (!util_strlcpy(p, v->valuestring, f->len))
			return config_fail(err, errlen, name, "%s%s: too long (max %zu)",
			    section, f->key, f->len - 1);
		return 0;
	case F_BOOL:
		if (!cJSON_IsBool(v))
			return config_fail(err, errlen, name, "%s%s: expected true or false",
			    section, f->key);
		*(bool *)(void *)p = cJSON_IsTrue(v);
		return 0;
	case F_DOUBLE:
		if (!cJSON_IsNumber(v) || v->valuedouble <= (double)f->min ||
		    v->valuedouble > (double)f->max)
			return config_fail(err, errlen, name,
			    "%s%s: expected a number in (%lld, %lld]", section,
			    f->key, (long long)f->min, (long long)f->max);
		*(double *)(void *)p = v->valuedouble;
		return 0;
	case F_INT: {
		cJSON *wrap = cJSON_CreateObject();
		int64_t iv = 0;
		int rc;
		if (wrap == NULL)
			return -ENOMEM;
		cJSON_AddItemReferenceToObject(wrap, "v", (cJSON *)v);
		rc = json_get_int(wrap, "v", f->min, f->max, &iv);
		cJSON_Delete(wrap);
		if (rc < 0)
			return config_fail(err, errlen, name,
			    "%s%s: expected a whole number in [%lld, %lld]",
			    section, f->key, (long long)f->min, (long long)f->max);
		*(int64_t *)(void *)p = iv;
		return 0;
	}
	case F_SIZE:
		if (cJSON_IsString(v)) {
			if (util_parse_size(v->valuestring, &sz) < 0)
				return config_fail(err, errlen, name,
				    "%s%s: bad size '%s' (e.g. 1024, 64k, 256m, 1g)",
				    section, f->key, v->valuestring);
		} else if (cJSON_IsNumber(v) && v->valuedouble >= 0 &&
		    v->valuedouble < 1.8e19 &&
		    v->valuedouble == (double)(uint64_t)v->valuedouble) {
			sz = (uint64_t)v->valuedouble;
		} else {
			return config_fail(err, errlen, name,
			    "%s%s: expected a size (bytes, or \"64m\")", section,
			    f->key);
		}
		if (sz < (uint64_t)f->min || sz > (uint64_t)f->max)
			return config_fail(err, errlen, name,
			    "%s%s: %llu out of range [%lld, %lld]", section, f->key,
			    (unsigned long long)sz, (long long)f->min,
			    (long long)f->max);
		*(uint64_t *)(void *)p = sz;
		return 0;
	}
	return -EINVAL;
}

static int
apply_key(void *base, const struct field *fields, size_t n, const cJSON *v,
    const char *name, const char *section, char *err, size_t errlen)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(fields[i].key, v->string) == 0)
			return set_field(base, &fields[i], v, name, section, err,
			    errlen);
	return config_fail(err, errlen, name, "unknown key '%s%s'", section, v->string);
}

static int
apply_section(void *base, const struct field *fields, size_t n,
    const cJSON *obj, const char *name, const char *section, char *err,
    size_t errlen)
{
	const cJSON *v;
	int rc;

	cJSON_ArrayForEach(v, obj)
		if ((rc = apply_key(base, fields, n, v, name, section, err,
		    errlen)) < 0)
			return rc;
	return 0;
}

/* A Debian package list (an array of names) into pk/n; what names the
 * key in errors. */
static int
apply_packages(char pk[CONFIG_MAX_PACKAGES][64], size_t *n, const cJSON *v,
    const char *what, const char *name, char *err, size_t errlen)
{
	const cJSON *p;

	if (!cJSON_IsArray(v))
		return config_fail(err, errlen, name,
		    "%s: expected an array of names", what);
	*n = 0;
	cJSON_ArrayForEach(p, v) {
		if (!cJSON_IsString(p) || p->valuestring[0] == '\0' ||
		    strspn(p->valuestring, "abcdefghijklmnopqrstuvwxyz"
		    "0123456789+-.") != strlen(p->valuestring))
			return config_fail(err, errlen, name,
			    "%s: each entry must be a Debian package name",
			    what);
		if (*n == CONFIG_MAX_PACKAGES ||
		    !util_strlcpy(pk[*n], p->valuestring, sizeof(pk[0])))
			return config_fail(err, errlen, name,
			    "%s: too many or too long", what);
		(*n)++;
	}
	return 0;
}

/* image.profiles: {"NAME": {"name": IMAGE, "packages": [...], "id": ID}}.
 * A default profile's keys override its defaults; a new NAME is added
 * (packages default to python3). minimal is image.* itself. */
static int
apply_profiles(struct config_image *img, const cJSON *obj, const char *name,
    char *err, size_t errlen)
{
	const cJSON *e, *v;
	char what[96];

	if (!cJSON_IsObject(obj))
		return config_fail(err, errlen, name, "image.profiles: expected an "
		    "object of NAME: {name, packages, id}");
	cJSON_ArrayForEach(e, obj) {
		struct config_profile *p = NULL;
		if (!config_profile_name_valid(e->string))
			return config_fail(err, errlen, name, "image.profiles: a "
			    "profile name is 1-%d of [a-z0-9_-]",
			    CONFIG_PROFILE_MAX);
		if (strcmp(e->string, CONFIG_PROFILE_DEFAULT) == 0)
			return config_fail(err, errlen, name, "image.profiles.minimal: "
			    "the minimal profile is image.name, image.packages "
			    "and image.id themselves");
		if (!cJSON_IsObject(e))
			return config_fail(err, errlen, name, "image.profiles.%s: "
			    "expected an object", e->string);
		for (size_t i = 0; i < img->nprofiles && p == NULL; i++)
			if (strcmp(img->profiles[i].name, e->string) == 0)
				p = &img->profiles[i];
		if (p == NULL) {
			if (img->nprofiles == CONFIG_MAX_PROFILES)
				return config_fail(err, errlen, name, "image.profiles: "
				    "at most %d profiles", CONFIG_MAX_PROFILES);
			p = &img->profiles[img->nprofiles++];
			memset(p, 0, sizeof(*p));
			strcpy(p->name, e->string);
			strcpy(p->packages[0], "python3");
			p->npackages = 1;
		}
		cJSON_ArrayForEach(v, e) {
			int rc = 0;
			snprintf(what, sizeof(what), "image.profiles.%s.%s",
			    p->name, v->string);
			if (strcmp(v->string, "packages") == 0)
				rc = apply_packages(p->packages, &p->npackages,
				    v, what, name, err, errlen);
			else if (strcmp(v->string, "name") != 0 &&
			    strcmp(v->string, "id") != 0)
				rc = config_fail(err, errlen, name, "unknown key '%s'",
				    what);
			else if (!cJSON_IsString(v) || !util_strlcpy(
			    v->string[0] == 'n' ? p->image_name : p->id,
			    v->valuestring, v->string[0] == 'n' ?
			    sizeof(p->image_name) : sizeof(p->id)))
				rc = config_fail(err, errlen, name, "%s: expected a "
				    "string (too long?)", what);
			if (rc < 0)
				return rc;
			if (v->string[0] == 'n')
				p->named = true;
		}
	}
	return 0;
}

static int
apply_image(struct config_image *img, const cJSON *obj, const char *name,
    char *err, size_t errlen)
{
	const cJSON *v;
	int rc;

	cJSON_ArrayForEach(v, obj) {
		if (strcmp(v->string, "packages") == 0)
			rc = apply_packages(img->packages, &img->npackages, v,
			    "image.packages", name, err, errlen);
		else if (strcmp(v->string, "profiles") == 0)
			rc = apply_profiles(img, v, name, err, errlen);
		else
			rc = apply_key(img, image_fields, sizeof(image_fields) /
			    sizeof(image_fields[0]), v, name, "image.", err,
			    errlen);
		if (rc < 0)
			return -EINVAL;
	}
	return 0;
}

static int
apply_tenant_nets(struct config_tenant *t, const cJSON *v, const char *name,
    char *err, size_t errlen)
{
	const cJSON *n;

	if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0)
		return config_fail(err, errlen, name, "serve.tenants.nets: expected a "
		    "non-empty array of \"none\" and \"proxy\"");
	t->nets = 0;
	cJSON_ArrayForEach(n, v) {
		if (cJSON_IsString(n) && strcmp(n->valuestring, "none") == 0)
			t->nets |= CONFIG_NET_NONE;
		else if (cJSON_IsString(n) &&
		    strcmp(n->valuestring, "proxy") == 0)
			t->nets |= CONFIG_NET_PROXY;
		else
			return config_fail(err, errlen, name, "serve.tenants.nets: "
			    "each entry must be \"none\" or \"proxy\"");
	}
	return 0;
}

static int
apply_tenant_policies(struct config_tenant *t, const cJSON *v,
    const char *name, char *err, size_t errlen)
{
	const cJSON *p;

	if (!cJSON_IsArray(v))
		return config_fail(err, errlen, name, "serve.tenants.policies: "
		    "expected an array of policy names");
	t->npolicies = 0;
	t->policies_set = true;
	cJSON_ArrayForEach(p, v) {
		if (!cJSON_IsString(p) ||
		    !config_policy_name_valid(p->valuestring))
			return config_fail(err, errlen, name, "serve.tenants.policies: "
			    "each entry must be a policy name (1-%d of "
			    "[A-Za-z0-9_-])", CONFIG_POLICY_MAX);
		if (t->npolicies == CONFIG_MAX_POLICIES)
			return config_fail(err, errlen, name, "serve.tenants.policies: "
			    "at most %d", CONFIG_MAX_POLICIES);
		util_strlcpy(t->policies[t->npolicies++], p->valuestring,
		    sizeof(t->policies[0]));
	}
	return 0;
}

static int
apply_tenant(struct config_tenant *t, const cJSON *obj, const char *name,
    char *err, size_t errlen)
{
	const cJSON *v;
	bool nets_set = false;
	int rc;

	if (!cJSON_IsObject(obj))
		return config_fail(err, errlen, name,
		    "serve.tenants: each entry must be an object");
	memset(t, 0, sizeof(*t));
	t->max_concurrent = 1;
	t->max_queue = -1;
	strcpy(t->net, "none");
	cJSON_ArrayForEach(v, obj) {
		if (strcmp(v->string, "nets") == 0) {
			rc = apply_tenant_nets(t, v, name, err, errlen);
			nets_set = true;
		} else if (strcmp(v->string, "policies") == 0) {
			rc = apply_tenant_policies(t, v, name, err, errlen);
		} else {
			rc = apply_key(t, tenant_fields, sizeof(tenant_fields) /
			    sizeof(tenant_fields[0]), v, name, "serve.tenants.",
			    err, errlen);
		}
		if (rc < 0)
			return rc;
	}
	if (t->name[0] == '\0' || strlen(t->token) < 16)
		return config_fail(err, errlen, name, "serve.tenants: each entry needs "
		    "a 'name' and a 'token' of at least 16 characters");
	/* The name is the runs' session id in labels and the audit log. */
	if (strspn(t->name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789._-") != strlen(t->name))
		return config_fail(err, errlen, name, "serve.tenants.name: only "
		    "letters, digits, '.', '_' and '-'");
	if (strcmp(t->net, "none") != 0 && strcmp(t->net, "proxy") != 0)
		return config_fail(err, errlen, name,
		    "serve.tenants.net: expected \"none\" or \"proxy\"");
	/* Closed by default: without "nets", only the default net. */
	if (!nets_set)
		t->nets = t->net[0] == 'p' ? CONFIG_NET_PROXY : CONFIG_NET_NONE;
	if (!config_tenant_allows_net(t, t->net))
		return config_fail(err, errlen, name, "serve.tenants.net: \"%s\" is "
		    "not in the tenant's nets", t->net);
	return 0;
}

static int
apply_serve(struct config_serve *s, const cJSON *obj, const char *name,
    char *err, size_t errlen)
{
	const cJSON *v, *t;
	int rc;

	cJSON_ArrayForEach(v, obj) {
		if (strcmp(v->string, "pool_profiles") == 0) {
			if ((rc = config_pool_profiles_apply(s->pool_profiles,
			    &s->npool_profiles, v, "serve", name, err,
			    errlen)) < 0)
				return rc;
			continue;
		}
		if (strcmp(v->string, "tenants") != 0) {
			if ((rc = apply_key(s, serve_fields, sizeof(serve_fields) /
			    sizeof(serve_fields[0]), v, name, "serve.", err,
			    errlen)) < 0)
				return rc;
			continue;
		}
		if (!cJSON_IsArray(v))
			return config_fail(err, errlen, name,
			    "serve.tenants: expected an array");
		s->ntenants = 0;
		cJSON_ArrayForEach(t, v) {
			if (s->ntenants == CONFIG_MAX_TENANTS)
				return config_fail(err, errlen, name, "serve.tenants: "
				    "at most %d", CONFIG_MAX_TENANTS);
			if ((rc = apply_tenant(&s->tenants[s->ntenants], t,
			    name, err, errlen)) < 0)
				return rc;
			for (size_t i = 0; i < s->ntenants; i++)
				if (strcmp(s->tenants[i].token,
				    s->tenants[s->ntenants].token) == 0 ||
				    strcmp(s->tenants[i].name,
				    s->tenants[s->ntenants].name) == 0)
					return config_fail(err, errlen, name,
					    "serve.tenants: names and tokens "
					    "must be unique");
			s->ntenants++;
		}
	}
	return 0;
}

static int
apply_mcp(struct config_mcp *m, const cJSON *obj, const char *name,
    char *err, size_t errlen)
{
	const cJSON *v;
	int rc;

	cJSON_ArrayForEach(v, obj) {
		rc = strcmp(v->string, "pool_profiles") == 0 ?
		    config_pool_profiles_apply(m->pool_profiles,
		    &m->npool_profiles, v, "mcp", name, err, errlen) :
		    apply_key(m, mcp_fields, sizeof(mcp_fields) /
		    sizeof(mcp_fields[0]), v, name, "mcp.", err, errlen);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Applies each member of the config file's object root: a section or a
 * top-level key. 0, or -EINVAL with "NAME: why" in err. */
int
config_apply(struct config *c, const cJSON *root, const char *name,
    char *err, size_t errlen)
{
	const cJSON *v;
	int rc = 0;

	cJSON_ArrayForEach(v, root) {
		if (strcmp(v->string, "serve") == 0) {
			rc = cJSON_IsObject(v) ? apply_serve(&c->serve, v, name,
			    err, errlen) : config_fail(err, errlen, name,
			    "serve: expected an object");
		} else if (strcmp(v->string, "mcp") == 0) {
			rc = cJSON_IsObject(v) ? apply_mcp(&c->mcp, v, name,
			    err, errlen) : config_fail(err, errlen, name,
			    "mcp: expected an object");
		} else if (strcmp(v->string, "limits") == 0 ||
		    strcmp(v->string, "image") == 0) {
			if (!cJSON_IsObject(v)) {
				rc = config_fail(err, errlen, name, "%s: expected an object",
				    v->string);
				break;
			}
			if (v->string[0] == 'l')
				rc = apply_section(&c->limits, limit_fields,
				    sizeof(limit_fields) / sizeof(limit_fields[0]),
				    v, name, "limits.", err, errlen);
			else
				rc = apply_image(&c->image, v, name, err, errlen);
		} else {
			rc = apply_key(c, top_fields,
			    sizeof(top_fields) / sizeof(top_fields[0]), v, name,
			    "", err, errlen);
		}
		if (rc < 0)
			break;
	}
	return rc;
}
