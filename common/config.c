/*
 * Configuration loading (config.h): built-in safe defaults, overridden key
 * by key from a strict JSON file (config_keys.c: every key, once), then
 * checked across keys. Profiles and languages: config_profile.c.
 */
#include "common/config.h"
#include "common/config_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/json.h"
#include "common/util.h"

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
	/* An MCP session's agent often waits on a person: longer idle than
	 * serve's default (300 s); the lifetime is the label deadline `cordon
	 * gc` holds a session's container to anyway. */
	c->mcp.session_idle_s = 1800;
	c->mcp.session_life_s = 3600;
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

int
config_fail(char *err, size_t errlen, const char *name, const char *fmt, ...)
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
config_check(const struct config *c, const char *name, char *err,
    size_t errlen)
{
	if (c->limits.timeout_s > c->limits.max_timeout_s)
		return config_fail(err, errlen, name, "limits.timeout_s %lld is above "
		    "the maximum limits.max_timeout_s %lld",
		    (long long)c->limits.timeout_s,
		    (long long)c->limits.max_timeout_s);
	if (c->limits.max_output_bytes > c->limits.max_output_cap)
		return config_fail(err, errlen, name, "limits.max_output %llu is "
		    "above the maximum limits.max_output_cap %llu",
		    (unsigned long long)c->limits.max_output_bytes,
		    (unsigned long long)c->limits.max_output_cap);
	if (c->limits.pids_limit < c->limits.nproc * 2)
		return config_fail(err, errlen, name,
		    "limits.pids_limit must be at least twice limits.nproc "
		    "(the host-side limit also counts gVisor's own processes)");
	/* All three listen on the gateway: one port each. */
	if (c->proxy_port == c->proxy_transparent_port ||
	    c->proxy_port == c->proxy_dns_port ||
	    c->proxy_transparent_port == c->proxy_dns_port)
		return config_fail(err, errlen, name, "proxy_port, "
		    "proxy_transparent_port and proxy_dns_port must differ");
	if (strcmp(c->docker_api, "auto") != 0 &&
	    strcmp(c->docker_api, "never") != 0)
		return config_fail(err, errlen, name, "docker_api: \"auto\" or "
		    "\"never\"");
	if (!config_policy_name_valid(c->egress_default_policy))
		return config_fail(err, errlen, name, "egress_default_policy: a policy "
		    "name (1-%d of [A-Za-z0-9_-])", CONFIG_POLICY_MAX);
	if (c->egress_secrets[0] != '\0' && c->egress_secrets[0] != '/')
		return config_fail(err, errlen, name, "egress_secrets: an absolute "
		    "path (or empty for none)");
	if (c->egress_access_log[0] != '\0' && c->egress_access_log[0] != '/')
		return config_fail(err, errlen, name, "egress_access_log: an absolute "
		    "path (or empty for access.log in the state dir)");
	for (size_t i = 0; i < c->image.nprofiles; i++) {
		const struct config_profile *p = &c->image.profiles[i];
		bool py = false;
		for (size_t k = 0; k < p->npackages; k++)
			py = py || strcmp(p->packages[k], "python3") == 0;
		if (!py)
			return config_fail(err, errlen, name, "%s%s.packages: must "
			    "include python3 (the probe is a Python program)",
			    i == 0 ? "image" : "image.profiles.",
			    i == 0 ? "" : p->name);
		if (p->image_name[0] == '\0')
			return config_fail(err, errlen, name, "image.name is too long "
			    "to name profile %s's image", p->name);
	}
	if (config_pool_profiles_check(c, c->serve.pool_profiles,
	    c->serve.npool_profiles, "serve", name, err, errlen) < 0 ||
	    config_pool_profiles_check(c, c->mcp.pool_profiles,
	    c->mcp.npool_profiles, "mcp", name, err, errlen) < 0)
		return -EINVAL;
	if (strcmp(c->serve.stats_tcp, "own") != 0 &&
	    strcmp(c->serve.stats_tcp, "local") != 0)
		return config_fail(err, errlen, name, "serve.stats_tcp: \"own\" or "
		    "\"local\"");
	if (strcmp(c->user, "0") == 0 || strncmp(c->user, "0:", 2) == 0 ||
	    strncmp(c->user, "root", 4) == 0)
		return config_fail(err, errlen, name, "user: must not be root");
	return 0;
}

int
config_parse(struct config *c, const char *text, size_t len,
    const char *name, char *err, size_t errlen)
{
	cJSON *root;
	int rc;

	config_defaults(c);
	root = cJSON_ParseWithLength(text, len);
	if (root == NULL)
		return config_fail(err, errlen, name, "invalid JSON");
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return config_fail(err, errlen, name, "expected a JSON object");
	}
	rc = config_apply(c, root, name, err, errlen);
	cJSON_Delete(root);
	if (rc == 0 && config_profiles_finish(&c->image) < 0)
		rc = config_fail(err, errlen, name, "image.name is too long to name "
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
