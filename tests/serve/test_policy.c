/* Unit tests for egress per run in the service: the `policy` field of
 * POST /v1/runs bodies, the tenant decision table (serve_tenant_check:
 * which nets and policies a tenant may use, 400/403 and their messages),
 * and the HTTP status of a runner refusal. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "serve/internal.h"
#include "serve/request.h"
#include "serve/tenant.h"

static struct config cfg;

static int
setup(void **state)
{
	(void)state;
	config_defaults(&cfg);
	cfg.serve.body_max_bytes = 4096;
	return 0;
}

/* `policy`: a name is taken as is (whether it goes with the net and the
 * tenant is serve_tenant_check's); anything else is a 400. */
static void
test_req_policy(void **state)
{
	static const struct { const char *body, *policy; } ok[] = {
		{ "{\"code\":\"1\",\"net\":\"proxy\",\"policy\":\"pypi\"}",
		  "pypi" },
		{ "{\"code\":\"1\",\"policy\":\"github-raw_2\"}",
		  "github-raw_2" },
		/* With net none it parses; serve_tenant_check refuses it. */
		{ "{\"code\":\"1\",\"net\":\"none\",\"policy\":\"a\"}", "a" },
		{ "{\"code\":\"1\",\"policy\":\"" "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}",
		  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" },
	};
	static const char *const bad[] = {
		"{\"code\":\"1\",\"policy\":\"\"}",
		"{\"code\":\"1\",\"policy\":\"../etc/passwd\"}",
		"{\"code\":\"1\",\"policy\":\"a.list\"}",
		"{\"code\":\"1\",\"policy\":\"a b\"}",
		"{\"code\":\"1\",\"policy\":\"\\u00e9\"}",
		("{\"code\":\"1\",\"policy\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aaaaaaaaaaaaaaaaaaaaaaaaa\"}"),		/* 65 */
		"{\"code\":\"1\",\"policy\":1}",
		"{\"code\":\"1\",\"policy\":null}",
		"{\"code\":\"1\",\"policy\":[\"pypi\"]}",
		"{\"code\":\"1\",\"policy\":true}",
	};
	struct jobs_req r;
	char err[256];
	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		err[0] = '\0';
		if (serve_req_parse(&cfg, ok[i].body, strlen(ok[i].body), &r,
		    err, sizeof(err)) != 0)
			fail_msg("ok %zu: %s", i, err);
		assert_string_equal(r.policy, ok[i].policy);
		jobs_req_cleanup(&r);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(serve_req_parse(&cfg, bad[i], strlen(bad[i]),
		    &r, err, sizeof(err)), -EINVAL);
		if (strcmp(err, "'policy' must be a policy name (1-64 of "
		    "[A-Za-z0-9_-])") != 0)
			fail_msg("bad %zu: %s", i, err);
		assert_null(r.code);
	}
}

/* The decision table of serve_tenant_check: which net and policy each
 * tenant may use, and what it is told otherwise. */
static void
test_tenant_check(void **state)
{
	const char *j = "{\"egress_default_policy\":\"std\",\"serve\":{"
	    "\"tenants\":["
	    "{\"name\":\"off\",\"token\":\"aaaaaaaaaaaaaaaa\"},"
	    "{\"name\":\"both\",\"token\":\"bbbbbbbbbbbbbbbb\",\"net\":"
	    "\"proxy\",\"nets\":[\"none\",\"proxy\"],\"policies\":"
	    "[\"pypi\",\"github-raw\"]},"
	    "{\"name\":\"prx\",\"token\":\"cccccccccccccccc\",\"net\":"
	    "\"proxy\"},"
	    "{\"name\":\"nopol\",\"token\":\"dddddddddddddddd\",\"nets\":"
	    "[\"proxy\"],\"net\":\"proxy\",\"policies\":[]},"
	    "{\"name\":\"legacy\",\"token\":\"eeeeeeeeeeeeeeee\",\"net\":"
	    "\"none\"}]}}";
	static const struct {
		int tenant;		/* index in serve.tenants; -1: local */
		enum runner_net net;
		const char *policy;
		int rc;
		const char *msg;
	} rows[] = {
		{ -1, RUNNER_NET_NONE, NULL, 0, "" },
		{ -1, RUNNER_NET_PROXY, NULL, 0, "" },
		{ -1, RUNNER_NET_PROXY, "anything", 0, "" },
		{ -1, RUNNER_NET_NONE, "pypi", -EINVAL, "'policy' applies only "
		  "to net \"proxy\" (this run's net is \"none\")" },
		/* No nets in the config: only the default net. */
		{ 0, RUNNER_NET_NONE, NULL, 0, "" },
		{ 0, RUNNER_NET_NONE, "", 0, "" },
		{ 0, RUNNER_NET_PROXY, NULL, -EPERM, "tenant 'off' may not use "
		  "net \"proxy\" (its nets: \"none\")" },
		{ 0, RUNNER_NET_PROXY, "std", -EPERM, "tenant 'off' may not use "
		  "net \"proxy\" (its nets: \"none\")" },
		/* A malformed request is told so before the tenant's rules. */
		{ 0, RUNNER_NET_NONE, "std", -EINVAL, "'policy' applies only to "
		  "net \"proxy\" (this run's net is \"none\")" },
		/* Both nets, two policies: not the default one. */
		{ 1, RUNNER_NET_NONE, NULL, 0, "" },
		{ 1, RUNNER_NET_PROXY, "pypi", 0, "" },
		{ 1, RUNNER_NET_PROXY, "github-raw", 0, "" },
		{ 1, RUNNER_NET_PROXY, NULL, -EPERM, "tenant 'both' may not use "
		  "egress policy 'std' (its policies: pypi, github-raw)" },
		{ 1, RUNNER_NET_PROXY, "pypi2", -EPERM, "tenant 'both' may not "
		  "use egress policy 'pypi2' (its policies: pypi, github-raw)" },
		{ 1, RUNNER_NET_NONE, "pypi", -EINVAL, "'policy' applies only to "
		  "net \"proxy\" (this run's net is \"none\")" },
		/* Proxy only, no policies in the config: the default one. */
		{ 2, RUNNER_NET_PROXY, NULL, 0, "" },
		{ 2, RUNNER_NET_PROXY, "std", 0, "" },
		{ 2, RUNNER_NET_PROXY, "pypi", -EPERM, "tenant 'prx' may not use "
		  "egress policy 'pypi' (its policies: std)" },
		{ 2, RUNNER_NET_NONE, NULL, -EPERM, "tenant 'prx' may not use "
		  "net \"none\" (its nets: \"proxy\")" },
		/* An empty list: proxy mode is closed altogether. */
		{ 3, RUNNER_NET_PROXY, NULL, -EPERM, "tenant 'nopol' may not use "
		  "egress policy 'std' (its policies: none at all)" },
		{ 3, RUNNER_NET_PROXY, "std", -EPERM, "tenant 'nopol' may not use "
		  "egress policy 'std' (its policies: none at all)" },
		/* Issue 20: "net": "none" written out (no "nets") is a
		 * restriction too, not only a default. */
		{ 4, RUNNER_NET_NONE, NULL, 0, "" },
		{ 4, RUNNER_NET_PROXY, NULL, -EPERM, "tenant 'legacy' may not "
		  "use net \"proxy\" (its nets: \"none\")" },
		{ 4, RUNNER_NET_PROXY, "std", -EPERM, "tenant 'legacy' may not "
		  "use net \"proxy\" (its nets: \"none\")" },
	};
	struct serve_tenants ts;
	struct jobs_admission *adm;
	struct config c;
	char err[512];
	(void)state;
	assert_int_equal(config_parse(&c, j, strlen(j), "t", err, sizeof(err)),
	    0);
	adm = jobs_admission_new(&c, JOBS_FRONT_SERVE, NULL);
	assert_non_null(adm);
	serve_tenants_init(&ts, &c, adm);
	assert_null(ts.t[0].conf);
	assert_ptr_equal(ts.t[2].conf, &c.serve.tenants[1]);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int rc;

		err[0] = '\0';
		rc = serve_tenant_check(&c, rows[i].tenant < 0 ? NULL :
		    &c.serve.tenants[rows[i].tenant], rows[i].net,
		    rows[i].policy, err, sizeof(err));
		if (rc != rows[i].rc || strcmp(err, rows[i].msg) != 0)
			fail_msg("row %zu: rc %d '%s'", i, rc, err);
	}
	jobs_admission_free(adm);
}

/* A list longer than the message can hold ends with "...", never with
 * half a name. */
static void
test_tenant_check_long(void **state)
{
	struct config c;
	struct config_tenant *t;
	char err[512];
	(void)state;
	config_defaults(&c);
	t = &c.serve.tenants[0];
	memset(t, 0, sizeof(*t));
	strcpy(t->name, "big");
	t->nets = CONFIG_NET_PROXY;
	t->policies_set = true;
	for (size_t i = 0; i < CONFIG_MAX_POLICIES; i++) {
		memset(t->policies[i], 'a' + (int)(i % 26), CONFIG_POLICY_MAX);
		t->policies[i][CONFIG_POLICY_MAX] = '\0';
	}
	t->npolicies = CONFIG_MAX_POLICIES;
	assert_int_equal(serve_tenant_check(&c, t, RUNNER_NET_PROXY, "x", err,
	    sizeof(err)), -EPERM);
	assert_true(strlen(err) < sizeof(err) - 1);
	assert_non_null(strstr(err, ", ...)"));
	assert_null(strstr(err, "a, ..."));
}

/* How a failed run's errno is answered: the runner's refusal of the
 * request (an unknown policy) is the caller's 400, not our 500. */
static void
test_reply_status(void **state)
{
	static const struct { int rc, code; const char *reason; } rows[] = {
		{ -EINVAL, 400, "Bad Request" },
		{ -ENETDOWN, 503, "Service Unavailable" },
		{ -ESTALE, 503, "Service Unavailable" },
		{ -EBUSY, 503, "Service Unavailable" },
		{ -ENOSYS, 500, "Internal Server Error" },
		{ -ENOMEM, 500, "Internal Server Error" },
	};
	const char *reason;
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		assert_int_equal(serve_reply_status(rows[i].rc, &reason),
		    rows[i].code);
		assert_string_equal(reason, rows[i].reason);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_req_policy, setup),
		cmocka_unit_test(test_tenant_check),
		cmocka_unit_test(test_tenant_check_long),
		cmocka_unit_test(test_reply_status),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
