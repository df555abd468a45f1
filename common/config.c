/*
 * Configuration loading (config.h): built-in safe defaults, overridden key
 * by key from a strict JSON file. Sizes may be numbers of bytes or strings
 * such as "256m". Every key is described once, in the tables below.
 */
#include "common/config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/json.h"
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

/* The profiles every config has: minimal (image.* itself, mirrored by
 * config_profiles_finish), data (Debian's scientific Python stack) and
 * node. Each includes python3: the probe is a Python program. */
static void
config_profiles_default(struct config_image *img)
{
	static const struct {
		const char *name;
		const char *packages[6];
	} defs[] = {
		{ CONFIG_PROFILE_DEFAULT, { NULL } },
		{ "data", { "python3", "python3-numpy", "python3-pandas",
		    "python3-matplotlib", "python3-scipy", NULL } },
		{ "node", { "python3", "nodejs", NULL } },
	};

	img->nprofiles = 0;
	for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++) {
		struct config_profile *p = &img->profiles[img->nprofiles++];
		memset(p, 0, sizeof(*p));
		strcpy(p->name, defs[i].name);
		for (size_t k = 0; defs[i].packages[k] != NULL; k++)
			strcpy(p->packages[p->npackages++], defs[i].packages[k]);
	}
}

static unsigned
config_profile_langs(const struct config_profile *p)
{
	unsigned langs = CONFIG_LANG_PYTHON | CONFIG_LANG_BASH;

	for (size_t i = 0; i < p->npackages; i++)
		if (strcmp(p->packages[i], "nodejs") == 0)
			langs |= CONFIG_LANG_NODE;
	return langs;
}

/* Mirrors image.name/packages/id into profiles[0] (minimal), names the
 * other profiles' images image.name-NAME unless the file named them, and
 * derives every profile's languages. -ENAMETOOLONG when a derived image
 * name does not fit. */
static int
config_profiles_finish(struct config_image *img)
{
	struct config_profile *m = &img->profiles[0];
	int rc = 0;

	util_strlcpy(m->image_name, img->name, sizeof(m->image_name));
	memcpy(m->packages, img->packages, sizeof(m->packages));
	m->npackages = img->npackages;
	util_strlcpy(m->id, img->id, sizeof(m->id));
	for (size_t i = 0; i < img->nprofiles; i++) {
		struct config_profile *p = &img->profiles[i];
		if (i > 0 && !p->named &&
		    (size_t)snprintf(p->image_name, sizeof(p->image_name),
		    "%s-%s", img->name, p->name) >= sizeof(p->image_name)) {
			p->image_name[0] = '\0';
			rc = -ENAMETOOLONG;
		}
		p->langs = config_profile_langs(p);
	}
	return rc;
}

/* Twice the online CPUs: a run spends part of its time starting and
 * stopping its sandbox, not on a CPU. */
static int64_t
config_default_runs(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 1)
		n = 1;
	return n > 512 ? 1024 : 2 * (int64_t)n;
}

void
config_defaults(struct config *c)
{
	memset(c, 0, sizeof(*c));
	strcpy(c->docker, "docker");
	strcpy(c->docker_api, "auto");
	strcpy(c->state_dir, "/var/lib/cordon");
	strcpy(c->cache_dir, "/var/cache/cordon");
	strcpy(c->audit_log, "/var/log/cordon/audit.log");
	c->audit_required = true;
	strcpy(c->runtime_offline, "cordon-offline");
	strcpy(c->runtime_egress, "cordon-egress");
	strcpy(c->runtime_debug, "cordon-debug");
	strcpy(c->runtime_debug_egress, "cordon-debug-egress");
	strcpy(c->user, "65534:65534");
	strcpy(c->egress_network, "cordon-egress");
	strcpy(c->egress_bridge, "cordon0");
	strcpy(c->egress_subnet, "10.213.0.0/24");
	c->proxy_port = 3128;
	c->proxy_transparent_port = 3129;
	c->proxy_dns_port = 53;
	strcpy(c->proxy_user, "nobody");
	strcpy(c->egress_default_policy, "default");
	c->egress_run_max_conns = 32;
	c->egress_source_max_pending = 32;
	c->egress_access_log_max = 64u << 20;
	c->egress_access_log_keep = 5;
	c->require_probe = true;
	c->probe_max_age_s = 3600;
	c->probe_auto = true;
	c->limits = (struct config_limits){
		.memory_bytes = 256ULL << 20,
		.cpus = 1.0,
		.timeout_s = 10,
		.max_timeout_s = 300,
		.max_output_bytes = 1ULL << 20,
		.max_output_cap = 16ULL << 20,
		.nofile = 256,
		.fsize_bytes = 64ULL << 20,
		.nproc = 64,
		.pids_limit = 1024,
		.tmpfs_bytes = 64ULL << 20,
		.in_max_bytes = 64ULL << 20,
		.in_max_files = 256,
		.out_max_bytes = 16ULL << 20,
		.out_max_files = 256,
		.max_concurrent_runs = config_default_runs(),
		.queue_timeout_s = 30,
	};
	strcpy(c->image.name, "cordon-sandbox");
	strcpy(c->image.suite, "bookworm");
	strcpy(c->image.packages[0], "python3");
	c->image.npackages = 1;
	c->image.max_age_days = 30;
	config_profiles_default(&c->image);
	(void)config_profiles_finish(&c->image);
	strcpy(c->serve.socket, "/run/cordon/serve.sock");
	c->serve.global_limit = 4;
	c->serve.queue_max = 16;
	c->serve.body_max_bytes = 16ULL << 20;
	c->serve.probe_interval_s = 3600;
	c->serve.pool = 0;
	c->serve.pool_max_age_s = 900;
	c->serve.sessions_per_tenant = 4;
	c->serve.max_connections = 0;
	c->serve.max_connections_per_peer = 64;
	c->serve.unix_connections = 64;
	c->serve.head_timeout_s = 10;
	c->serve.body_timeout_s = 30;
	c->serve.write_timeout_s = 30;
	c->serve.unsent_max_bytes = 64ULL << 20;
	c->serve.refusals_per_min = 60;
	strcpy(c->serve.stats_tcp, "own");
}

static int fail(char *err, size_t errlen, const char *name, const char *fmt,
    ...) __attribute__((format(printf, 4, 5)));

static int
fail(char *err, size_t errlen, const char *name, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(err, errlen, "%s: ", name);

	if (n < 0 || (size_t)n >= errlen)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int
set_field(void *base, const struct field *f, const cJSON *v, const char *name,
    const char *section, char *err, size_t errlen)
{
	char *p = (char *)base + f->off;
	uint64_t sz;

	switch (f->kind) {
	case F_STR:
		if (!cJSON_IsString(v))
			return fail(err, errlen, name, "%s%s: expected a string",
			    section, f->key);
		if (!util_strlcpy(p, v->valuestring, f->len))
			return fail(err, errlen, name, "%s%s: too long (max %zu)",
			    section, f->key, f->len - 1);
		return 0;
	case F_BOOL:
		if (!cJSON_IsBool(v))
			return fail(err, errlen, name, "%s%s: expected true or false",
			    section, f->key);
		*(bool *)(void *)p = cJSON_IsTrue(v);
		return 0;
	case F_DOUBLE:
		if (!cJSON_IsNumber(v) || v->valuedouble <= (double)f->min ||
		    v->valuedouble > (double)f->max)
			return fail(err, errlen, name,
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
			return fail(err, errlen, name,
			    "%s%s: expected a whole number in [%lld, %lld]",
			    section, f->key, (long long)f->min, (long long)f->max);
		*(int64_t *)(void *)p = iv;
		return 0;
	}
	case F_SIZE:
		if (cJSON_IsString(v)) {
			if (util_parse_size(v->valuestring, &sz) < 0)
				return fail(err, errlen, name,
				    "%s%s: bad size '%s' (e.g. 1024, 64k, 256m, 1g)",
				    section, f->key, v->valuestring);
		} else if (cJSON_IsNumber(v) && v->valuedouble >= 0 &&
		    v->valuedouble < 1.8e19 &&
		    v->valuedouble == (double)(uint64_t)v->valuedouble) {
			sz = (uint64_t)v->valuedouble;
		} else {
			return fail(err, errlen, name,
			    "%s%s: expected a size (bytes, or \"64m\")", section,
			    f->key);
		}
		if (sz < (uint64_t)f->min || sz > (uint64_t)f->max)
			return fail(err, errlen, name,
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
	return fail(err, errlen, name, "unknown key '%s%s'", section, v->string);
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
		return fail(err, errlen, name,
		    "%s: expected an array of names", what);
	*n = 0;
	cJSON_ArrayForEach(p, v) {
		if (!cJSON_IsString(p) || p->valuestring[0] == '\0' ||
		    strspn(p->valuestring, "abcdefghijklmnopqrstuvwxyz"
		    "0123456789+-.") != strlen(p->valuestring))
			return fail(err, errlen, name,
			    "%s: each entry must be a Debian package name",
			    what);
		if (*n == CONFIG_MAX_PACKAGES ||
		    !util_strlcpy(pk[*n], p->valuestring, sizeof(pk[0])))
			return fail(err, errlen, name,
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
		return fail(err, errlen, name, "image.profiles: expected an "
		    "object of NAME: {name, packages, id}");
	cJSON_ArrayForEach(e, obj) {
		struct config_profile *p = NULL;
		if (!config_profile_name_valid(e->string))
			return fail(err, errlen, name, "image.profiles: a "
			    "profile name is 1-%d of [a-z0-9_-]",
			    CONFIG_PROFILE_MAX);
		if (strcmp(e->string, CONFIG_PROFILE_DEFAULT) == 0)
			return fail(err, errlen, name, "image.profiles.minimal: "
			    "the minimal profile is image.name, image.packages "
			    "and image.id themselves");
		if (!cJSON_IsObject(e))
			return fail(err, errlen, name, "image.profiles.%s: "
			    "expected an object", e->string);
		for (size_t i = 0; i < img->nprofiles && p == NULL; i++)
			if (strcmp(img->profiles[i].name, e->string) == 0)
				p = &img->profiles[i];
		if (p == NULL) {
			if (img->nprofiles == CONFIG_MAX_PROFILES)
				return fail(err, errlen, name, "image.profiles: "
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
				rc = fail(err, errlen, name, "unknown key '%s'",
				    what);
			else if (!cJSON_IsString(v) || !util_strlcpy(
			    v->string[0] == 'n' ? p->image_name : p->id,
			    v->valuestring, v->string[0] == 'n' ?
			    sizeof(p->image_name) : sizeof(p->id)))
				rc = fail(err, errlen, name, "%s: expected a "
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
		return fail(err, errlen, name, "serve.tenants.nets: expected a "
		    "non-empty array of \"none\" and \"proxy\"");
	t->nets = 0;
	cJSON_ArrayForEach(n, v) {
		if (cJSON_IsString(n) && strcmp(n->valuestring, "none") == 0)
			t->nets |= CONFIG_NET_NONE;
		else if (cJSON_IsString(n) &&
		    strcmp(n->valuestring, "proxy") == 0)
			t->nets |= CONFIG_NET_PROXY;
		else
			return fail(err, errlen, name, "serve.tenants.nets: "
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
		return fail(err, errlen, name, "serve.tenants.policies: "
		    "expected an array of policy names");
	t->npolicies = 0;
	t->policies_set = true;
	cJSON_ArrayForEach(p, v) {
		if (!cJSON_IsString(p) ||
		    !config_policy_name_valid(p->valuestring))
			return fail(err, errlen, name, "serve.tenants.policies: "
			    "each entry must be a policy name (1-%d of "
			    "[A-Za-z0-9_-])", CONFIG_POLICY_MAX);
		if (t->npolicies == CONFIG_MAX_POLICIES)
			return fail(err, errlen, name, "serve.tenants.policies: "
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
		return fail(err, errlen, name,
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
		return fail(err, errlen, name, "serve.tenants: each entry needs "
		    "a 'name' and a 'token' of at least 16 characters");
	/* The name is the runs' session id in labels and the audit log. */
	if (strspn(t->name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789._-") != strlen(t->name))
		return fail(err, errlen, name, "serve.tenants.name: only "
		    "letters, digits, '.', '_' and '-'");
	if (strcmp(t->net, "none") != 0 && strcmp(t->net, "proxy") != 0)
		return fail(err, errlen, name,
		    "serve.tenants.net: expected \"none\" or \"proxy\"");
	/* Closed by default: without "nets", only the default net. */
	if (!nets_set)
		t->nets = t->net[0] == 'p' ? CONFIG_NET_PROXY : CONFIG_NET_NONE;
	if (!config_tenant_allows_net(t, t->net))
		return fail(err, errlen, name, "serve.tenants.net: \"%s\" is "
		    "not in the tenant's nets", t->net);
	return 0;
}

bool
config_policy_name_valid(const char *name)
{
	size_t n = strlen(name);

	return n >= 1 && n <= CONFIG_POLICY_MAX && strspn(name,
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789_-") == n;
}

bool
config_profile_name_valid(const char *name)
{
	size_t n = strlen(name);

	return n >= 1 && n <= CONFIG_PROFILE_MAX && strspn(name,
	    "abcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

unsigned
config_lang_bit(const char *lang)
{
	if (lang == NULL || strcmp(lang, "python") == 0)
		return CONFIG_LANG_PYTHON;
	if (strcmp(lang, "bash") == 0)
		return CONFIG_LANG_BASH;
	if (strcmp(lang, "node") == 0)
		return CONFIG_LANG_NODE;
	return 0;
}

const char *
config_lang_name(unsigned bit)
{
	switch (bit) {
	case CONFIG_LANG_PYTHON: return "python";
	case CONFIG_LANG_BASH: return "bash";
	case CONFIG_LANG_NODE: return "node";
	}
	return "?";
}

void
config_langs_format(unsigned langs, char *out, size_t outlen)
{
	size_t n = 0;

	out[0] = '\0';
	for (unsigned b = 1; b <= CONFIG_LANG_NODE && n < outlen; b <<= 1)
		if (langs & b)
			n += (size_t)snprintf(out + n, outlen - n, "%s%s",
			    n ? ", " : "", config_lang_name(b));
}

const struct config_profile *
config_profile_find(const struct config *c, const char *name)
{
	for (size_t i = 0; i < c->image.nprofiles; i++)
		if (strcmp(c->image.profiles[i].name, name) == 0)
			return &c->image.profiles[i];
	return NULL;
}

const char *
config_profile_current(const struct config *c)
{
	return c->image.profile[0] != '\0' ? c->image.profile :
	    CONFIG_PROFILE_DEFAULT;
}

/* "minimal, data, node": the profile names, into out. */
static void
profile_names(const struct config *c, char *out, size_t outlen)
{
	size_t n = 0;

	out[0] = '\0';
	for (size_t i = 0; i < c->image.nprofiles && n < outlen; i++)
		n += (size_t)snprintf(out + n, outlen - n, "%s%s",
		    i > 0 ? ", " : "", c->image.profiles[i].name);
}

int
config_profile_pick(const struct config *c, const char *profile,
    const char *lang, const struct config_profile **out, char *err,
    size_t errlen)
{
	const struct config_profile *p;
	unsigned bit = config_lang_bit(lang);
	char have[64], names[CONFIG_MAX_PROFILES * (CONFIG_PROFILE_MAX + 2)];

	*out = NULL;
	if (bit == 0) {
		snprintf(err, errlen, "unknown language '%.32s' (python, bash "
		    "or node)", lang);
		return -EINVAL;
	}
	if (profile != NULL && (p = config_profile_find(c, profile)) == NULL) {
		profile_names(c, names, sizeof(names));
		snprintf(err, errlen, "unknown profile '%.32s' (profiles: %s)",
		    profile, names);
		return -EINVAL;
	}
	if (profile == NULL) {
		p = config_profile_find(c, config_profile_current(c));
		/* From the default profile, a language picks its profile;
		 * never another language. */
		for (size_t i = 0; p != NULL && (p->langs & bit) == 0 &&
		    c->image.profile[0] == '\0' && i < c->image.nprofiles; i++)
			if (c->image.profiles[i].langs & bit)
				p = &c->image.profiles[i];
		if (p == NULL) {
			snprintf(err, errlen, "unknown profile '%.32s'",
			    config_profile_current(c));
			return -EINVAL;
		}
	}
	if ((p->langs & bit) == 0) {
		config_langs_format(p->langs, have, sizeof(have));
		snprintf(err, errlen, "profile '%s' has no %s (it offers %s)%s",
		    p->name, config_lang_name(bit), have, bit ==
		    CONFIG_LANG_NODE ? ": use a profile with nodejs in its "
		    "packages, e.g. node" : "");
		return -EINVAL;
	}
	*out = p;
	return 0;
}

int
config_profile_use(struct config *c, const char *profile, const char *lang,
    char *err, size_t errlen)
{
	const struct config_profile *p;
	int rc;

	if ((rc = config_profile_pick(c, profile, lang, &p, err, errlen)) < 0)
		return rc;
	/* Already there: image.* stands as it is (a caller may have set
	 * image.id on its copy). */
	if (strcmp(p->name, config_profile_current(c)) == 0)
		return 0;
	if (p == &c->image.profiles[0])
		c->image.profile[0] = '\0';
	else
		util_strlcpy(c->image.profile, p->name,
		    sizeof(c->image.profile));
	util_strlcpy(c->image.name, p->image_name, sizeof(c->image.name));
	memcpy(c->image.packages, p->packages, sizeof(c->image.packages));
	c->image.npackages = p->npackages;
	util_strlcpy(c->image.id, p->id, sizeof(c->image.id));
	return 0;
}

bool
config_tenant_allows_net(const struct config_tenant *t, const char *net)
{
	if (strcmp(net, "none") == 0)
		return (t->nets & CONFIG_NET_NONE) != 0;
	if (strcmp(net, "proxy") == 0)
		return (t->nets & CONFIG_NET_PROXY) != 0;
	return false;
}

bool
config_tenant_allows_policy(const struct config *c,
    const struct config_tenant *t, const char *policy)
{
	if (!t->policies_set)
		return strcmp(policy, c->egress_default_policy) == 0;
	for (size_t i = 0; i < t->npolicies; i++)
		if (strcmp(t->policies[i], policy) == 0)
			return true;
	return false;
}

static int
apply_serve(struct config_serve *s, const cJSON *obj, const char *name,
    char *err, size_t errlen)
{
	const cJSON *v, *t;
	int rc;

	cJSON_ArrayForEach(v, obj) {
		if (strcmp(v->string, "tenants") != 0) {
			if ((rc = apply_key(s, serve_fields, sizeof(serve_fields) /
			    sizeof(serve_fields[0]), v, name, "serve.", err,
			    errlen)) < 0)
				return rc;
			continue;
		}
		if (!cJSON_IsArray(v))
			return fail(err, errlen, name,
			    "serve.tenants: expected an array");
		s->ntenants = 0;
		cJSON_ArrayForEach(t, v) {
			if (s->ntenants == CONFIG_MAX_TENANTS)
				return fail(err, errlen, name, "serve.tenants: "
				    "at most %d", CONFIG_MAX_TENANTS);
			if ((rc = apply_tenant(&s->tenants[s->ntenants], t,
			    name, err, errlen)) < 0)
				return rc;
			for (size_t i = 0; i < s->ntenants; i++)
				if (strcmp(s->tenants[i].token,
				    s->tenants[s->ntenants].token) == 0 ||
				    strcmp(s->tenants[i].name,
				    s->tenants[s->ntenants].name) == 0)
					return fail(err, errlen, name,
					    "serve.tenants: names and tokens "
					    "must be unique");
			s->ntenants++;
		}
	}
	return 0;
}

static int
config_check(const struct config *c, const char *name, char *err,
    size_t errlen)
{
	if (c->limits.timeout_s > c->limits.max_timeout_s)
		return fail(err, errlen, name, "limits.timeout_s %lld is above "
		    "the maximum limits.max_timeout_s %lld",
		    (long long)c->limits.timeout_s,
		    (long long)c->limits.max_timeout_s);
	if (c->limits.max_output_bytes > c->limits.max_output_cap)
		return fail(err, errlen, name, "limits.max_output %llu is "
		    "above the maximum limits.max_output_cap %llu",
		    (unsigned long long)c->limits.max_output_bytes,
		    (unsigned long long)c->limits.max_output_cap);
	if (c->limits.pids_limit < c->limits.nproc * 2)
		return fail(err, errlen, name,
		    "limits.pids_limit must be at least twice limits.nproc "
		    "(the host-side limit also counts gVisor's own processes)");
	/* All three listen on the gateway: one port each. */
	if (c->proxy_port == c->proxy_transparent_port ||
	    c->proxy_port == c->proxy_dns_port ||
	    c->proxy_transparent_port == c->proxy_dns_port)
		return fail(err, errlen, name, "proxy_port, "
		    "proxy_transparent_port and proxy_dns_port must differ");
	if (strcmp(c->docker_api, "auto") != 0 &&
	    strcmp(c->docker_api, "never") != 0)
		return fail(err, errlen, name, "docker_api: \"auto\" or "
		    "\"never\"");
	if (!config_policy_name_valid(c->egress_default_policy))
		return fail(err, errlen, name, "egress_default_policy: a policy "
		    "name (1-%d of [A-Za-z0-9_-])", CONFIG_POLICY_MAX);
	if (c->egress_secrets[0] != '\0' && c->egress_secrets[0] != '/')
		return fail(err, errlen, name, "egress_secrets: an absolute "
		    "path (or empty for none)");
	if (c->egress_access_log[0] != '\0' && c->egress_access_log[0] != '/')
		return fail(err, errlen, name, "egress_access_log: an absolute "
		    "path (or empty for access.log in the state dir)");
	for (size_t i = 0; i < c->image.nprofiles; i++) {
		const struct config_profile *p = &c->image.profiles[i];
		bool py = false;
		for (size_t k = 0; k < p->npackages; k++)
			py = py || strcmp(p->packages[k], "python3") == 0;
		if (!py)
			return fail(err, errlen, name, "%s%s.packages: must "
			    "include python3 (the probe is a Python program)",
			    i == 0 ? "image" : "image.profiles.",
			    i == 0 ? "" : p->name);
		if (p->image_name[0] == '\0')
			return fail(err, errlen, name, "image.name is too long "
			    "to name profile %s's image", p->name);
	}
	if (strcmp(c->serve.stats_tcp, "own") != 0 &&
	    strcmp(c->serve.stats_tcp, "local") != 0)
		return fail(err, errlen, name, "serve.stats_tcp: \"own\" or "
		    "\"local\"");
	if (strcmp(c->user, "0") == 0 || strncmp(c->user, "0:", 2) == 0 ||
	    strncmp(c->user, "root", 4) == 0)
		return fail(err, errlen, name, "user: must not be root");
	return 0;
}

int
config_parse(struct config *c, const char *text, size_t len,
    const char *name, char *err, size_t errlen)
{
	cJSON *root;
	const cJSON *v;
	int rc = 0;

	config_defaults(c);
	root = cJSON_ParseWithLength(text, len);
	if (root == NULL)
		return fail(err, errlen, name, "invalid JSON");
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return fail(err, errlen, name, "expected a JSON object");
	}
	cJSON_ArrayForEach(v, root) {
		if (strcmp(v->string, "serve") == 0) {
			rc = cJSON_IsObject(v) ? apply_serve(&c->serve, v, name,
			    err, errlen) : fail(err, errlen, name,
			    "serve: expected an object");
		} else if (strcmp(v->string, "mcp") == 0) {
			rc = cJSON_IsObject(v) ? apply_section(&c->mcp,
			    mcp_fields, sizeof(mcp_fields) /
			    sizeof(mcp_fields[0]), v, name, "mcp.", err,
			    errlen) : fail(err, errlen, name,
			    "mcp: expected an object");
		} else if (strcmp(v->string, "limits") == 0 ||
		    strcmp(v->string, "image") == 0) {
			if (!cJSON_IsObject(v)) {
				rc = fail(err, errlen, name, "%s: expected an object",
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
	cJSON_Delete(root);
	if (rc == 0 && config_profiles_finish(&c->image) < 0)
		rc = fail(err, errlen, name, "image.name is too long to name "
		    "the profiles' images (image.name-PROFILE)");
	if (rc == 0)
		rc = config_check(c, name, err, errlen);
	if (rc < 0) {
		config_defaults(c);
		return rc;
	}
	util_strlcpy(c->path, name, sizeof(c->path));
	return 0;
}

int
config_load(struct config *c, const char *path, char *err, size_t errlen)
{
	const char *env = getenv("CORDON_CONFIG");
	bool explicit_path = path != NULL || (env != NULL && *env != '\0');
	char *text = NULL;
	size_t len = 0;
	int rc;

	config_defaults(c);
	if (path == NULL)
		path = explicit_path ? env : CONFIG_DEFAULT_PATH;
	rc = util_read_file(path, 1 << 20, &text, &len);
	if (rc == -ENOENT && !explicit_path)
		return 0;
	if (rc < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	rc = config_parse(c, text, len, path, err, errlen);
	free(text);
	return rc;
}
