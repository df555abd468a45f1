/* Unit tests for configuration loading: defaults, strictness, ranges. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"

static void
test_defaults_are_closed(void **state)
{
	struct config c;
	(void)state;
	config_defaults(&c);
	assert_string_equal(c.user, "65534:65534");
	assert_string_equal(c.runtime_offline, "cordon-offline");
	assert_true(c.require_probe);
	assert_true(c.probe_auto);
	assert_true(c.audit_required);
	assert_int_equal(c.limits.max_concurrent_runs,
	    2 * sysconf(_SC_NPROCESSORS_ONLN));
	assert_int_equal(c.limits.queue_timeout_s, 30);
	assert_int_equal(c.image.max_age_days, 30);
	assert_int_equal(c.limits.memory_bytes, 256ULL << 20);
	assert_true(c.limits.pids_limit >= 2 * c.limits.nproc);
	assert_true(c.limits.timeout_s <= c.limits.max_timeout_s);
	/* The proxy's three ports on the egress gateway. */
	assert_int_equal(c.proxy_port, 3128);
	assert_int_equal(c.proxy_transparent_port, 3129);
	assert_int_equal(c.proxy_dns_port, 53);
}

static void
test_parse_overrides(void **state)
{
	const char *j = "{\"docker\":\"/usr/bin/docker\",\"require_probe\":false,"
	    "\"probe_auto\":false,\"audit_required\":false,"
	    "\"limits\":{\"memory\":\"512m\",\"cpus\":0.5,\"nproc\":32,"
	    "\"max_concurrent_runs\":3,\"queue_timeout_s\":0,"
	    "\"fsize\":1048576},\"image\":{\"packages\":[\"python3\",\"python3-numpy\"],"
	    "\"max_age_days\":7}}";
	struct config c;
	char err[256] = "";
	(void)state;
	assert_int_equal(config_parse(&c, j, strlen(j), "t.json", err, sizeof(err)), 0);
	assert_string_equal(c.docker, "/usr/bin/docker");
	assert_false(c.require_probe);
	assert_false(c.probe_auto);
	assert_false(c.audit_required);
	assert_int_equal(c.limits.max_concurrent_runs, 3);
	assert_int_equal(c.limits.queue_timeout_s, 0);
	assert_int_equal(c.limits.memory_bytes, 512ULL << 20);
	assert_true(c.limits.cpus == 0.5);
	assert_int_equal(c.limits.nproc, 32);
	assert_int_equal(c.limits.fsize_bytes, 1048576);
	assert_int_equal(c.image.npackages, 2);
	assert_string_equal(c.image.packages[1], "python3-numpy");
	assert_int_equal(c.image.max_age_days, 7);
	assert_string_equal(c.path, "t.json");
	/* Untouched keys keep their defaults. */
	assert_string_equal(c.user, "65534:65534");
	assert_string_equal(c.docker_api, "auto");
	assert_int_equal(config_parse(&c, "{\"docker_api\":\"never\"}", 22,
	    "t.json", err, sizeof(err)), 0);
	assert_string_equal(c.docker_api, "never");
	j = "{\"proxy_port\":8080,\"proxy_transparent_port\":8081,"
	    "\"proxy_dns_port\":5353}";
	assert_int_equal(config_parse(&c, j, strlen(j), "t.json", err,
	    sizeof(err)), 0);
	assert_int_equal(c.proxy_port, 8080);
	assert_int_equal(c.proxy_transparent_port, 8081);
	assert_int_equal(c.proxy_dns_port, 5353);
	/* A port moved onto another's default is refused only when it
	 * collides: 3129 is free once the transparent port moved. */
	j = "{\"proxy_port\":3129,\"proxy_transparent_port\":3130}";
	assert_int_equal(config_parse(&c, j, strlen(j), "t.json", err,
	    sizeof(err)), 0);
	assert_int_equal(c.proxy_port, 3129);
	assert_int_equal(c.proxy_dns_port, 53);
}

static void
test_parse_errors(void **state)
{
	static const struct { const char *json, *msg; } rows[] = {
		{ "{\"dockr\":\"x\"}", "t.json: unknown key 'dockr'" },
		{ "{\"limits\":{\"memroy\":1}}", "t.json: unknown key 'limits.memroy'" },
		{ "{\"limits\":{\"memory\":\"lots\"}}", "t.json: limits.memory: bad size 'lots' (e.g. 1024, 64k, 256m, 1g)" },
		{ "{\"limits\":{\"memory\":\"1m\"}}", "t.json: limits.memory: 1048576 out of range [16777216, 9223372036854775807]" },
		{ "{\"limits\":{\"nproc\":2.5}}", "t.json: limits.nproc: expected a whole number in [8, 4096]" },
		{ "{\"limits\":{\"cpus\":0}}", "t.json: limits.cpus: expected a number in (0, 64]" },
		{ "{\"require_probe\":\"no\"}", "t.json: require_probe: expected true or false" },
		{ "{\"probe_auto\":1}", "t.json: probe_auto: expected true or false" },
		{ "{\"limits\":{\"max_concurrent_runs\":0}}", "t.json: limits.max_concurrent_runs: expected a whole number in [1, 1024]" },
		{ "{\"limits\":{\"queue_timeout_s\":-1}}", "t.json: limits.queue_timeout_s: expected a whole number in [0, 3600]" },
		{ "{\"proxy_transparent_port\":0}", "t.json: proxy_transparent_port: expected a whole number in [1, 65535]" },
		{ "{\"proxy_dns_port\":65536}", "t.json: proxy_dns_port: expected a whole number in [1, 65535]" },
		{ "{\"proxy_dns_port\":\"53\"}", "t.json: proxy_dns_port: expected a whole number in [1, 65535]" },
		{ "{\"proxy_transparent_port\":3128}", "t.json: proxy_port, proxy_transparent_port and proxy_dns_port must differ" },
		{ "{\"proxy_port\":53}", "t.json: proxy_port, proxy_transparent_port and proxy_dns_port must differ" },
		{ "{\"proxy_dns_port\":3129}", "t.json: proxy_port, proxy_transparent_port and proxy_dns_port must differ" },
		{ "{\"proxy_port\":5353,\"proxy_transparent_port\":5353,\"proxy_dns_port\":5354}", "t.json: proxy_port, proxy_transparent_port and proxy_dns_port must differ" },
		{ "{\"docker_api\":\"always\"}", "t.json: docker_api: \"auto\" or \"never\"" },
		{ "{\"docker_api\":\"sometimes\"}", "t.json: docker_api: too long (max 7)" },
		{ "{\"docker_api\":\"\"}", "t.json: docker_api: \"auto\" or \"never\"" },
		{ "{\"user\":\"0:0\"}", "t.json: user: must not be root" },
		{ "{\"user\":\"root\"}", "t.json: user: must not be root" },
		{ "{\"limits\":{\"timeout_s\":600}}", "t.json: limits.timeout_s 600 is above the maximum limits.max_timeout_s 300" },
		{ "{\"limits\":{\"max_output\":\"32m\"}}", "t.json: limits.max_output 33554432 is above the maximum limits.max_output_cap 16777216" },
		{ "{\"limits\":{\"max_timeout_s\":86401}}", "t.json: limits.max_timeout_s: expected a whole number in [1, 86400]" },
		{ "{\"limits\":{\"cpus\":65}}", "t.json: limits.cpus: expected a number in (0, 64]" },
		{ "{\"limits\":{\"nproc\":1000}}", "t.json: limits.pids_limit must be at least twice limits.nproc (the host-side limit also counts gVisor's own processes)" },
		{ "{\"image\":{\"packages\":[\"rm -rf\"]}}", "t.json: image.packages: each entry must be a Debian package name" },
		{ "{\"image\":{\"max_age_days\":-1}}", "t.json: image.max_age_days: expected a whole number in [0, 3650]" },
		{ "{\"limits\":[]}", "t.json: limits: expected an object" },
		{ "[1]", "t.json: expected a JSON object" },
		{ "{", "t.json: invalid JSON" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct config c;
		char err[512] = "";
		int rc = config_parse(&c, rows[i].json, strlen(rows[i].json),
		    "t.json", err, sizeof(err));
		assert_int_equal(rc, -EINVAL);
		assert_string_equal(err, rows[i].msg);
		/* On failure the defaults stand, nothing half-applied. */
		assert_string_equal(c.user, "65534:65534");
		assert_int_equal(c.limits.memory_bytes, 256ULL << 20);
	}
}

/* cordon mcp's section: its pool size, bounded as serve.pool. */
static void
test_parse_mcp(void **state)
{
	static const struct { const char *json, *msg; } rows[] = {
		{ "{\"mcp\":{\"pool\":65}}",
		  "t.json: mcp.pool: expected a whole number in [0, 64]" },
		{ "{\"mcp\":{\"pool\":-1}}",
		  "t.json: mcp.pool: expected a whole number in [0, 64]" },
		{ "{\"mcp\":{\"pool_node\":65}}",
		  "t.json: mcp.pool_node: expected a whole number in [0, 64]" },
		{ "{\"serve\":{\"pool_bash\":65}}",
		  "t.json: serve.pool_bash: expected a whole number in [0, 64]" },
		{ "{\"mcp\":{\"pool_idle_s\":-1}}", "t.json: mcp.pool_idle_s: "
		  "expected a whole number in [0, 2592000]" },
		{ "{\"serve\":{\"pool_idle_s\":2592001}}", "t.json: "
		  "serve.pool_idle_s: expected a whole number in [0, 2592000]" },
		{ "{\"mcp\":{\"session_life_s\":0}}", "t.json: "
		  "mcp.session_life_s: expected a whole number in [1, 86400]" },
		{ "{\"mcp\":{\"session_idle_s\":86401}}", "t.json: "
		  "mcp.session_idle_s: expected a whole number in [0, 86400]" },
		{ "{\"mcp\":{\"pol\":1}}", "t.json: unknown key 'mcp.pol'" },
		{ "{\"mcp\":[]}", "t.json: mcp: expected an object" },
	};
	const char *j = "{\"mcp\":{\"pool\":2,\"pool_node\":3,"
	    "\"pool_idle_s\":600,\"session_idle_s\":0,\"session_life_s\":"
	    "60},\"serve\":{\"pool\":1,\"pool_bash\":4,"
	    "\"pool_node\":5,\"pool_idle_s\":7}}";
	struct config c;
	char err[512] = "";

	(void)state;
	config_defaults(&c);
	assert_int_equal(c.mcp.pool, 0);	/* cold, as before */
	assert_int_equal(c.mcp.pool_idle_s, 0);	/* never shrink */
	assert_int_equal(c.serve.pool_idle_s, 0);
	assert_int_equal(c.mcp.session_idle_s, 1800);
	assert_int_equal(c.mcp.session_life_s, 3600);
	assert_int_equal(config_parse(&c, j, strlen(j), "t.json", err,
	    sizeof(err)), 0);
	assert_int_equal(c.mcp.pool, 2);
	assert_int_equal(c.mcp.pool_bash, 0);
	assert_int_equal(c.mcp.pool_node, 3);
	assert_int_equal(c.serve.pool, 1);
	assert_int_equal(c.serve.pool_bash, 4);
	assert_int_equal(c.serve.pool_node, 5);
	assert_int_equal(c.mcp.pool_idle_s, 600);
	assert_int_equal(c.serve.pool_idle_s, 7);
	assert_int_equal(c.mcp.session_idle_s, 0);
	assert_int_equal(c.mcp.session_life_s, 60);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		assert_int_equal(config_parse(&c, rows[i].json,
		    strlen(rows[i].json), "t.json", err, sizeof(err)), -EINVAL);
		assert_string_equal(err, rows[i].msg);
		assert_int_equal(c.mcp.pool, 0);
	}
}

/* serve.pool_profiles and mcp.pool_profiles: {"PROFILE": {"LANG": N}},
 * each a profile that offers the language, not the one it runs in by
 * default; a broken one refuses the whole file. */
static void
test_parse_pool_profiles(void **state)
{
	static const struct { const char *json, *msg; } rows[] = {
		{ "{\"serve\":{\"pool_profiles\":[]}}", "t.json: "
		  "serve.pool_profiles: expected an object {\"PROFILE\": "
		  "{\"LANG\": N}}" },
		{ "{\"mcp\":{\"pool_profiles\":{\"Data\":{}}}}", "t.json: "
		  "mcp.pool_profiles: each key a profile name (1-32 of "
		  "[a-z0-9_-]), each value an object {\"LANG\": N}" },
		{ "{\"mcp\":{\"pool_profiles\":{\"data\":2}}}", "t.json: "
		  "mcp.pool_profiles: each key a profile name (1-32 of "
		  "[a-z0-9_-]), each value an object {\"LANG\": N}" },
		{ "{\"serve\":{\"pool_profiles\":{\"data\":{\"ruby\":1}}}}",
		  "t.json: serve.pool_profiles.data: unknown language 'ruby' "
		  "(python, bash or node)" },
		{ "{\"serve\":{\"pool_profiles\":{\"data\":{\"python\":65}}}}",
		  "t.json: serve.pool_profiles.data.python: expected a whole "
		  "number in [0, 64]" },
		{ "{\"serve\":{\"pool_profiles\":{\"data\":{\"python\":1.5}}}}",
		  "t.json: serve.pool_profiles.data.python: expected a whole "
		  "number in [0, 64]" },
		{ "{\"serve\":{\"pool_profiles\":{\"data\":{\"python\":1,"
		  "\"python\":2}}}}", "t.json: serve.pool_profiles.data.python: "
		  "given twice" },
		{ "{\"serve\":{\"pool_profiles\":{\"data\":{\"python\":0,"
		  "\"python\":2}}}}", "t.json: serve.pool_profiles.data.python: "
		  "given twice" },
		{ "{\"mcp\":{\"pool_profiles\":{\"data\":{\"bash\":1},"
		  "\"data\":{\"bash\":0}}}}", "t.json: mcp.pool_profiles.data.bash: "
		  "given twice" },
		{ "{\"serve\":{\"pool_profiles\":{\"nosuch\":{\"python\":1}}}}",
		  "t.json: serve.pool_profiles.nosuch.python: unknown profile "
		  "'nosuch' (profiles: minimal, data, node)" },
		{ "{\"mcp\":{\"pool_profiles\":{\"data\":{\"node\":1}}}}",
		  "t.json: mcp.pool_profiles.data.node: profile 'data' has no "
		  "node (it offers python, bash): use a profile with nodejs in "
		  "its packages, e.g. node" },
		{ "{\"serve\":{\"pool_profiles\":{\"minimal\":{\"python\":1}}}}",
		  "t.json: serve.pool_profiles.minimal.python: python runs in "
		  "profile minimal by default: size that pool with serve.pool" },
		{ "{\"mcp\":{\"pool_profiles\":{\"node\":{\"node\":1}}}}",
		  "t.json: mcp.pool_profiles.node.node: node runs in profile "
		  "node by default: size that pool with mcp.pool_node" },
	};
	const char *j = "{\"serve\":{\"pool_profiles\":{\"data\":"
	    "{\"python\":2,\"bash\":0},\"node\":{\"bash\":1}}},"
	    "\"mcp\":{\"pool\":1,\"pool_profiles\":{\"data\":"
	    "{\"python\":3}}}}";
	struct config c;
	char err[512] = "";

	(void)state;
	config_defaults(&c);
	assert_int_equal(c.serve.npool_profiles, 0);
	assert_int_equal(c.mcp.npool_profiles, 0);
	if (config_parse(&c, j, strlen(j), "t.json", err, sizeof(err)) < 0)
		fail_msg("%s", err);
	assert_int_equal(c.serve.npool_profiles, 2);	/* 0: none kept */
	assert_string_equal(c.serve.pool_profiles[0].profile, "data");
	assert_int_equal(c.serve.pool_profiles[0].lang, CONFIG_LANG_PYTHON);
	assert_int_equal(c.serve.pool_profiles[0].size, 2);
	assert_string_equal(c.serve.pool_profiles[1].profile, "node");
	assert_int_equal(c.serve.pool_profiles[1].lang, CONFIG_LANG_BASH);
	assert_int_equal(c.serve.pool_profiles[1].size, 1);
	assert_int_equal(c.mcp.npool_profiles, 1);
	assert_int_equal(c.mcp.pool_profiles[0].size, 3);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		assert_int_equal(config_parse(&c, rows[i].json,
		    strlen(rows[i].json), "t.json", err, sizeof(err)), -EINVAL);
		assert_string_equal(err, rows[i].msg);
		assert_int_equal(c.serve.npool_profiles, 0);
	}
}

static void
test_parse_serve(void **state)
{
	const char *j = "{\"serve\":{\"socket\":\"/tmp/s.sock\","
	    "\"listen\":\"127.0.0.1:8700\",\"global_limit\":8,"
	    "\"queue_max\":3,\"body_max\":\"1m\",\"probe_interval_s\":600,"
	    "\"pool_starts\":3,\"tenants\":[{\"name\":\"a\",\"token\":\"aaaaaaaaaaaaaaaa\","
	    "\"max_concurrent\":1,\"max_queue\":0},{\"name\":\"b\","
	    "\"token\":\"bbbbbbbbbbbbbbbb\",\"net\":\"proxy\"}]}}";
	static const struct { const char *json, *msg; } rows[] = {
		{ "{\"serve\":{\"sockett\":\"x\"}}",
		  "t.json: unknown key 'serve.sockett'" },
		{ "{\"serve\":[]}", "t.json: serve: expected an object" },
		{ "{\"serve\":{\"pool_starts\":17}}",
		  "t.json: serve.pool_starts: expected a whole number in [0, 16]" },
		{ "{\"serve\":{\"global_limit\":0}}",
		  "t.json: serve.global_limit: expected a whole number in [1, 1024]" },
		{ "{\"serve\":{\"tenants\":{}}}",
		  "t.json: serve.tenants: expected an array" },
		{ "{\"serve\":{\"tenants\":[1]}}",
		  "t.json: serve.tenants: each entry must be an object" },
		{ "{\"serve\":{\"tenants\":[{\"name\":\"a\",\"tokn\":\"x\"}]}}",
		  "t.json: unknown key 'serve.tenants.tokn'" },
		{ "{\"serve\":{\"tenants\":[{\"name\":\"a\",\"token\":\"short\"}]}}",
		  "t.json: serve.tenants: each entry needs a 'name' and a 'token' "
		  "of at least 16 characters" },
		{ "{\"serve\":{\"tenants\":[{\"name\":\"a b\",\"token\":"
		  "\"aaaaaaaaaaaaaaaa\"}]}}",
		  "t.json: serve.tenants.name: only letters, digits, '.', '_' and '-'" },
		{ "{\"serve\":{\"tenants\":[{\"name\":\"a\",\"token\":"
		  "\"aaaaaaaaaaaaaaaa\",\"net\":\"all\"}]}}",
		  "t.json: serve.tenants.net: expected \"none\" or \"proxy\"" },
		{ "{\"serve\":{\"tenants\":[{\"name\":\"a\",\"token\":"
		  "\"aaaaaaaaaaaaaaaa\"},{\"name\":\"b\",\"token\":"
		  "\"aaaaaaaaaaaaaaaa\"}]}}",
		  "t.json: serve.tenants: names and tokens must be unique" },
		{ "{\"serve\":{\"tenants\":[{\"name\":\"a\",\"token\":"
		  "\"aaaaaaaaaaaaaaaa\",\"nets\":[]}]}}",
		  "t.json: serve.tenants.nets: expected a non-empty array of "
		  "\"none\" and \"proxy\"" },
		{ "{\"serve\":{\"tenants\":[{\"name\":\"a\",\"token\":"
		  "\"aaaaaaaaaaaaaaaa\",\"nets\":[\"host\"]}]}}",
		  "t.json: serve.tenants.nets: each entry must be \"none\" or "
		  "\"proxy\"" },
		{ "{\"serve\":{\"tenants\":[{\"name\":\"a\",\"token\":"
		  "\"aaaaaaaaaaaaaaaa\",\"net\":\"proxy\",\"nets\":"
		  "[\"none\"]}]}}",
		  "t.json: serve.tenants.net: \"proxy\" is not in the tenant's "
		  "nets" },
		{ "{\"serve\":{\"tenants\":[{\"name\":\"a\",\"token\":"
		  "\"aaaaaaaaaaaaaaaa\",\"policies\":[\"../x\"]}]}}",
		  "t.json: serve.tenants.policies: each entry must be a policy "
		  "name (1-64 of [A-Za-z0-9_-])" },
		{ "{\"serve\":{\"tenants\":[{\"name\":\"a\",\"token\":"
		  "\"aaaaaaaaaaaaaaaa\",\"policies\":\"pypi\"}]}}",
		  "t.json: serve.tenants.policies: expected an array of policy "
		  "names" },
	};
	struct config c;
	char err[512] = "";
	(void)state;
	config_defaults(&c);
	assert_string_equal(c.serve.socket, "/run/cordon/serve.sock");
	assert_int_equal(c.serve.ntenants, 0);
	assert_int_equal(c.serve.pool_starts, 0);	/* online CPUs */
	assert_int_equal(config_parse(&c, j, strlen(j), "t.json", err,
	    sizeof(err)), 0);
	assert_string_equal(c.serve.socket, "/tmp/s.sock");
	assert_string_equal(c.serve.listen, "127.0.0.1:8700");
	assert_int_equal(c.serve.global_limit, 8);
	assert_int_equal(c.serve.queue_max, 3);
	assert_int_equal(c.serve.body_max_bytes, 1 << 20);
	assert_int_equal(c.serve.probe_interval_s, 600);
	assert_int_equal(c.serve.pool_starts, 3);
	assert_int_equal(c.serve.ntenants, 2);
	assert_int_equal(c.serve.tenants[0].max_queue, 0);
	assert_int_equal(c.serve.tenants[1].max_queue, -1);
	assert_int_equal(c.serve.tenants[1].max_concurrent, 1);
	assert_string_equal(c.serve.tenants[1].net, "proxy");
	assert_string_equal(c.serve.tenants[0].net, "none");
	/* Closed by default: only the default net, only the default
	 * policy. */
	assert_true(config_tenant_allows_net(&c.serve.tenants[0], "none"));
	assert_false(config_tenant_allows_net(&c.serve.tenants[0], "proxy"));
	assert_true(config_tenant_allows_net(&c.serve.tenants[1], "proxy"));
	assert_false(config_tenant_allows_net(&c.serve.tenants[1], "none"));
	assert_false(config_tenant_allows_net(&c.serve.tenants[1], "host"));
	assert_true(config_tenant_allows_policy(&c, &c.serve.tenants[1],
	    "default"));
	assert_false(config_tenant_allows_policy(&c, &c.serve.tenants[1],
	    "pypi"));
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int rc = config_parse(&c, rows[i].json, strlen(rows[i].json),
		    "t.json", err, sizeof(err));
		assert_int_equal(rc, -EINVAL);
		assert_string_equal(err, rows[i].msg);
		assert_int_equal(c.serve.ntenants, 0);
	}
}

static void
test_parse_egress(void **state)
{
	const char *j = "{\"egress_default_policy\":\"pypi\","
	    "\"egress_secrets\":\"/etc/cordon/secrets\","
	    "\"egress_run_max_conns\":4,\"egress_run_bytes_down\":\"10m\","
	    "\"serve\":{\"tenants\":[{\"name\":\"a\",\"token\":"
	    "\"aaaaaaaaaaaaaaaa\",\"nets\":[\"none\",\"proxy\"],"
	    "\"policies\":[\"pypi\",\"github-raw\"]},{\"name\":\"b\","
	    "\"token\":\"bbbbbbbbbbbbbbbb\",\"policies\":[]}]}}";
	static const struct { const char *json, *msg; } rows[] = {
		{ "{\"egress_default_policy\":\"a.b\"}",
		  "t.json: egress_default_policy: a policy name (1-64 of "
		  "[A-Za-z0-9_-])" },
		{ "{\"egress_default_policy\":\"\"}",
		  "t.json: egress_default_policy: a policy name (1-64 of "
		  "[A-Za-z0-9_-])" },
		{ "{\"egress_run_max_conns\":0}",
		  "t.json: egress_run_max_conns: expected a whole number in "
		  "[1, 65535]" },
		{ "{\"egress_secrets\":\"etc/secrets\"}",
		  "t.json: egress_secrets: an absolute path (or empty for "
		  "none)" },
		{ "{\"egress_secrets\":7}",
		  "t.json: egress_secrets: expected a string" },
	};
	const struct config_tenant *a, *b;
	struct config c;
	char err[512] = "";
	(void)state;
	config_defaults(&c);
	assert_string_equal(c.egress_default_policy, "default");
	assert_int_equal(c.egress_run_max_conns, 32);
	assert_int_equal(c.egress_run_bytes_up, 0);
	assert_int_equal(c.egress_run_bytes_down, 0);
	assert_string_equal(c.egress_secrets, "");
	assert_int_equal(config_parse(&c, j, strlen(j), "t.json", err,
	    sizeof(err)), 0);
	assert_string_equal(c.egress_secrets, "/etc/cordon/secrets");
	assert_string_equal(c.egress_default_policy, "pypi");
	assert_int_equal(c.egress_run_max_conns, 4);
	assert_int_equal(c.egress_run_bytes_down, 10 << 20);
	a = &c.serve.tenants[0];
	b = &c.serve.tenants[1];
	assert_true(config_tenant_allows_net(a, "none"));
	assert_true(config_tenant_allows_net(a, "proxy"));
	assert_true(config_tenant_allows_policy(&c, a, "github-raw"));
	assert_true(config_tenant_allows_policy(&c, a, "pypi"));
	assert_false(config_tenant_allows_policy(&c, a, "default"));
	/* An explicit empty list: no policy at all, not the default. */
	assert_false(config_tenant_allows_policy(&c, b, "pypi"));
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		assert_int_equal(config_parse(&c, rows[i].json,
		    strlen(rows[i].json), "t.json", err, sizeof(err)),
		    -EINVAL);
		assert_string_equal(err, rows[i].msg);
	}
}

static void
test_load_paths(void **state)
{
	char path[] = "/tmp/cordon-cfg-XXXXXX";
	char err[256];
	struct config c;
	int fd = mkstemp(path);
	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "{\"proxy_port\":8080}", 19), 19);
	close(fd);
	setenv("CORDON_CONFIG", path, 1);
	assert_int_equal(config_load(&c, NULL, err, sizeof(err)), 0);
	assert_int_equal(c.proxy_port, 8080);
	unlink(path);
	/* An explicit file that is missing is an error, not the defaults. */
	assert_int_equal(config_load(&c, NULL, err, sizeof(err)), -ENOENT);
	unsetenv("CORDON_CONFIG");
	assert_int_equal(config_load(&c, "/nonexistent/cordon.json", err,
	    sizeof(err)), -ENOENT);
}

/* The built-in profiles: minimal is image.* itself (today's image and
 * record names), data and node derive their image names from image.name;
 * every profile has python3 (the probe) and bash; node needs nodejs. */
static void
test_profiles_default(void **state)
{
	const char *j = "{\"image\":{\"name\":\"acme\",\"packages\":"
	    "[\"python3\",\"python3-yaml\"],\"id\":\"sha256:1\"}}";
	const struct config_profile *p;
	struct config c;
	char err[256] = "";

	(void)state;
	config_defaults(&c);
	assert_int_equal(c.image.nprofiles, 3);
	assert_string_equal(c.image.profile, "");
	assert_string_equal(config_profile_current(&c), "minimal");
	assert_string_equal(c.image.profiles[0].name, "minimal");
	assert_string_equal(c.image.profiles[0].image_name, "cordon-sandbox");
	assert_string_equal(c.image.profiles[1].name, "data");
	assert_string_equal(c.image.profiles[1].image_name,
	    "cordon-sandbox-data");
	assert_int_equal(c.image.profiles[1].npackages, 5);
	assert_string_equal(c.image.profiles[1].packages[0], "python3");
	assert_string_equal(c.image.profiles[1].packages[4], "python3-scipy");
	assert_int_equal(c.image.profiles[1].langs,
	    CONFIG_LANG_PYTHON | CONFIG_LANG_BASH);
	p = config_profile_find(&c, "node");
	assert_non_null(p);
	assert_int_equal(p->langs, CONFIG_LANG_PYTHON | CONFIG_LANG_BASH |
	    CONFIG_LANG_NODE);
	assert_null(config_profile_find(&c, "gpu"));
	/* The file's image.* is minimal; the others follow its name. */
	assert_int_equal(config_parse(&c, j, strlen(j), "t.json", err,
	    sizeof(err)), 0);
	assert_string_equal(c.image.profiles[0].image_name, "acme");
	assert_int_equal(c.image.profiles[0].npackages, 2);
	assert_string_equal(c.image.profiles[0].packages[1], "python3-yaml");
	assert_string_equal(c.image.profiles[0].id, "sha256:1");
	assert_string_equal(c.image.profiles[1].image_name, "acme-data");
	assert_string_equal(c.image.profiles[2].image_name, "acme-node");
	assert_string_equal(c.image.profiles[2].id, "");
}

static void
test_profiles_parse(void **state)
{
	const char *j = "{\"image\":{\"profiles\":{\"node\":{\"packages\":"
	    "[\"python3\",\"nodejs\",\"npm\"],\"id\":\"sha256:2\"},"
	    "\"web\":{\"name\":\"my-web\",\"packages\":[\"python3\","
	    "\"python3-requests\"]},\"tiny\":{}},\"name\":\"x\"}}";
	static const struct { const char *json, *msg; } rows[] = {
		{ "{\"image\":{\"profiles\":[]}}", "t.json: image.profiles: "
		  "expected an object of NAME: {name, packages, id}" },
		{ "{\"image\":{\"profiles\":{\"minimal\":{}}}}",
		  "t.json: image.profiles.minimal: the minimal profile is "
		  "image.name, image.packages and image.id themselves" },
		{ "{\"image\":{\"profiles\":{\"Data\":{}}}}",
		  "t.json: image.profiles: a profile name is 1-32 of [a-z0-9_-]" },
		{ "{\"image\":{\"profiles\":{\"../x\":{}}}}",
		  "t.json: image.profiles: a profile name is 1-32 of [a-z0-9_-]" },
		{ "{\"image\":{\"profiles\":{\"data\":1}}}",
		  "t.json: image.profiles.data: expected an object" },
		{ "{\"image\":{\"profiles\":{\"data\":{\"pkgs\":[]}}}}",
		  "t.json: unknown key 'image.profiles.data.pkgs'" },
		{ "{\"image\":{\"profiles\":{\"data\":{\"packages\":"
		  "[\"a b\"]}}}}", "t.json: image.profiles.data.packages: each "
		  "entry must be a Debian package name" },
		{ "{\"image\":{\"profiles\":{\"data\":{\"name\":7}}}}",
		  "t.json: image.profiles.data.name: expected a string "
		  "(too long?)" },
		/* Every profile runs the probe, a Python program. */
		{ "{\"image\":{\"profiles\":{\"node\":{\"packages\":"
		  "[\"nodejs\"]}}}}", "t.json: image.profiles.node.packages: "
		  "must include python3 (the probe is a Python program)" },
		{ "{\"image\":{\"packages\":[\"python3-minimal\"]}}",
		  "t.json: image.packages: must include python3 (the probe is "
		  "a Python program)" },
		{ "{\"image\":{\"profiles\":{\"a\":{},\"b\":{},\"c\":{},"
		  "\"d\":{},\"e\":{},\"f\":{}}}}",
		  "t.json: image.profiles: at most 8 profiles" },
	};
	const struct config_profile *p;
	struct config c;
	char err[512] = "";

	(void)state;
	assert_int_equal(config_parse(&c, j, strlen(j), "t.json", err,
	    sizeof(err)), 0);
	assert_int_equal(c.image.nprofiles, 5);
	p = config_profile_find(&c, "node");
	assert_int_equal(p->npackages, 3);
	assert_string_equal(p->id, "sha256:2");
	/* image.name came after profiles: derived names still follow it. */
	assert_string_equal(p->image_name, "x-node");
	p = config_profile_find(&c, "web");
	assert_string_equal(p->image_name, "my-web");
	assert_int_equal(p->langs, CONFIG_LANG_PYTHON | CONFIG_LANG_BASH);
	p = config_profile_find(&c, "tiny");
	assert_int_equal(p->npackages, 1);
	assert_string_equal(p->packages[0], "python3");
	assert_string_equal(p->image_name, "x-tiny");
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		err[0] = '\0';
		assert_int_equal(config_parse(&c, rows[i].json,
		    strlen(rows[i].json), "t.json", err, sizeof(err)), -EINVAL);
		assert_string_equal(err, rows[i].msg);
		assert_int_equal(c.image.nprofiles, 3);
	}
}

/* Which profile a run gets: an explicit one must offer the language (an
 * error otherwise, never another language); without one, the current
 * profile, or from minimal the first that has the language. */
static void
test_profile_pick(void **state)
{
	static const struct {
		const char *profile, *lang, *got, *err;
	} rows[] = {
		{ NULL, NULL, "minimal", NULL },
		{ NULL, "python", "minimal", NULL },
		{ NULL, "bash", "minimal", NULL },
		{ NULL, "node", "node", NULL },
		{ "minimal", "python", "minimal", NULL },
		{ "data", NULL, "data", NULL },
		{ "data", "bash", "data", NULL },
		{ "node", "node", "node", NULL },
		{ "node", "python", "node", NULL },
		{ "minimal", "node", NULL, "profile 'minimal' has no node (it "
		  "offers python, bash): use a profile with nodejs in its "
		  "packages, e.g. node" },
		{ "data", "node", NULL, "profile 'data' has no node (it offers "
		  "python, bash): use a profile with nodejs in its packages, "
		  "e.g. node" },
		{ "gpu", NULL, NULL, "unknown profile 'gpu' (profiles: minimal, "
		  "data, node)" },
		{ NULL, "ruby", NULL, "unknown language 'ruby' (python, bash or "
		  "node)" },
		{ "data", "", NULL, "unknown language '' (python, bash or "
		  "node)" },
	};
	struct config c, u;
	const struct config_profile *p;
	char err[256];

	(void)state;
	config_defaults(&c);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int rc;
		err[0] = '\0';
		rc = config_profile_pick(&c, rows[i].profile, rows[i].lang, &p,
		    err, sizeof(err));
		if (rows[i].got == NULL) {
			assert_int_equal(rc, -EINVAL);
			assert_null(p);
			assert_string_equal(err, rows[i].err);
			continue;
		}
		assert_int_equal(rc, 0);
		assert_string_equal(p->name, rows[i].got);
	}
	/* use: the image fields become the profile's; minimal again. */
	u = c;
	assert_int_equal(config_profile_use(&u, "data", NULL, err,
	    sizeof(err)), 0);
	assert_string_equal(u.image.profile, "data");
	assert_string_equal(u.image.name, "cordon-sandbox-data");
	assert_int_equal(u.image.npackages, 5);
	assert_string_equal(config_profile_current(&u), "data");
	/* From data, no profile and a language data has: stays. */
	assert_int_equal(config_profile_use(&u, NULL, "bash", err,
	    sizeof(err)), 0);
	assert_string_equal(u.image.profile, "data");
	/* From data (not minimal), node is not looked for elsewhere. */
	assert_int_equal(config_profile_use(&u, NULL, "node", err,
	    sizeof(err)), -EINVAL);
	assert_string_equal(u.image.profile, "data");
	assert_int_equal(config_profile_use(&u, "minimal", NULL, err,
	    sizeof(err)), 0);
	assert_string_equal(u.image.profile, "");
	assert_string_equal(u.image.name, "cordon-sandbox");
	assert_int_equal(u.image.npackages, 1);
	assert_string_equal(u.image.packages[0], "python3");
	/* Language bits and names. */
	assert_int_equal(config_lang_bit(NULL), CONFIG_LANG_PYTHON);
	assert_int_equal(config_lang_bit("node"), CONFIG_LANG_NODE);
	assert_int_equal(config_lang_bit("js"), 0);
	assert_string_equal(config_lang_name(CONFIG_LANG_BASH), "bash");
	config_langs_format(CONFIG_LANG_PYTHON | CONFIG_LANG_NODE, err,
	    sizeof(err));
	assert_string_equal(err, "python, node");
	assert_true(config_profile_name_valid("a_b-9"));
	assert_false(config_profile_name_valid(""));
	assert_false(config_profile_name_valid("A"));
	assert_false(config_profile_name_valid(
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_are_closed),
		cmocka_unit_test(test_parse_overrides),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_parse_mcp),
		cmocka_unit_test(test_parse_pool_profiles),
		cmocka_unit_test(test_parse_serve),
		cmocka_unit_test(test_parse_egress),
		cmocka_unit_test(test_load_paths),
		cmocka_unit_test(test_profiles_default),
		cmocka_unit_test(test_profiles_parse),
		cmocka_unit_test(test_profile_pick),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
