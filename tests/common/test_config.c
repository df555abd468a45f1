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
	assert_int_equal(c.limits.max_concurrent_runs,
	    2 * sysconf(_SC_NPROCESSORS_ONLN));
	assert_int_equal(c.limits.queue_timeout_s, 30);
	assert_int_equal(c.image.max_age_days, 30);
	assert_int_equal(c.limits.memory_bytes, 256ULL << 20);
	assert_true(c.limits.pids_limit >= 2 * c.limits.nproc);
	assert_true(c.limits.timeout_s <= c.limits.max_timeout_s);
}

static void
test_parse_overrides(void **state)
{
	const char *j = "{\"docker\":\"/usr/bin/docker\",\"require_probe\":false,"
	    "\"probe_auto\":false,"
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
		{ "{\"user\":\"0:0\"}", "t.json: user: must not be root" },
		{ "{\"user\":\"root\"}", "t.json: user: must not be root" },
		{ "{\"limits\":{\"timeout_s\":600}}", "t.json: limits.timeout_s exceeds limits.max_timeout_s" },
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

static void
test_parse_serve(void **state)
{
	const char *j = "{\"serve\":{\"socket\":\"/tmp/s.sock\","
	    "\"listen\":\"127.0.0.1:8700\",\"global_limit\":8,"
	    "\"queue_max\":3,\"body_max\":\"1m\",\"probe_interval_s\":600,"
	    "\"tenants\":[{\"name\":\"a\",\"token\":\"aaaaaaaaaaaaaaaa\","
	    "\"max_concurrent\":1,\"max_queue\":0},{\"name\":\"b\","
	    "\"token\":\"bbbbbbbbbbbbbbbb\",\"net\":\"proxy\"}]}}";
	static const struct { const char *json, *msg; } rows[] = {
		{ "{\"serve\":{\"sockett\":\"x\"}}",
		  "t.json: unknown key 'serve.sockett'" },
		{ "{\"serve\":[]}", "t.json: serve: expected an object" },
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
	assert_int_equal(config_parse(&c, j, strlen(j), "t.json", err,
	    sizeof(err)), 0);
	assert_string_equal(c.serve.socket, "/tmp/s.sock");
	assert_string_equal(c.serve.listen, "127.0.0.1:8700");
	assert_int_equal(c.serve.global_limit, 8);
	assert_int_equal(c.serve.queue_max, 3);
	assert_int_equal(c.serve.body_max_bytes, 1 << 20);
	assert_int_equal(c.serve.probe_interval_s, 600);
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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_are_closed),
		cmocka_unit_test(test_parse_overrides),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_parse_serve),
		cmocka_unit_test(test_parse_egress),
		cmocka_unit_test(test_load_paths),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
