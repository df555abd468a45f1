/* The one request schema (jobs/request.h), as each front end's rules use
 * it: the same members and refusals for serve's bodies and MCP's
 * arguments; the aliases (`network` for `net`, `lang` for `language`),
 * never both; what differs by rules (the word for a member, the list an
 * unknown one is told, the members a front end reads itself, `files` as
 * base64 or as text). */
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
#include "jobs/request.h"

static struct config cfg;

static const char *const mcp_extra[] = { "session", NULL };
static const struct jobs_req_rules http = {
	.whole = "the body", .noun = "field",
	.advertised = "code, net", .files = STAGE_CONTENT_BASE64,
};
static const struct jobs_req_rules tool = {
	.whole = "the arguments", .noun = "argument",
	.advertised = "code, network, session", .extra = mcp_extra,
	.files = STAGE_CONTENT_TEXT,
};

static int
setup(void **state)
{
	(void)state;
	config_defaults(&cfg);
	cfg.limits.in_max_bytes = 16;
	cfg.limits.in_max_files = 3;
	return 0;
}

/* Parses text with rules; err is "" on success. */
static int
parse(const char *text, const struct jobs_req_rules *rules,
    struct jobs_req *r, char *err, size_t errlen)
{
	cJSON *root = cJSON_Parse(text);
	int rc;

	assert_non_null(root);
	err[0] = '\0';
	rc = jobs_req_parse(&cfg, root, rules, r, err, errlen);
	cJSON_Delete(root);
	return rc;
}

/* A body both front ends accept parses to the same request. */
static void
test_same_for_both(void **state)
{
	static const char *const bodies[] = {
		"{\"code\":\"print(1)\"}",
		"{\"code\":\"x\",\"net\":\"proxy\",\"policy\":\"pypi\"}",
		"{\"code\":\"x\",\"network\":\"proxy\",\"policy\":\"npm\"}",
		("{\"code\":\"x\",\"network\":\"none\",\"timeout_s\":7,"
		    "\"max_output\":99,\"keep\":\"tail\"}"),
		"{\"code\":\"echo\",\"lang\":\"bash\"}",
		"{\"code\":\"1\",\"language\":\"node\",\"profile\":\"node\"}",
	};
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		struct jobs_req a, b;

		assert_int_equal(parse(bodies[i], &http, &a, err,
		    sizeof(err)), 0);
		assert_int_equal(parse(bodies[i], &tool, &b, err,
		    sizeof(err)), 0);
		assert_string_equal(a.code, b.code);
		assert_int_equal(a.has_net, b.has_net);
		assert_int_equal(a.net, b.net);
		assert_string_equal(a.policy, b.policy);
		assert_int_equal(a.timeout_s, b.timeout_s);
		assert_int_equal(a.max_output, b.max_output);
		assert_ptr_equal(a.keep, b.keep);
		assert_string_equal(a.lang, b.lang);
		assert_string_equal(a.profile, b.profile);
		jobs_req_cleanup(&a);
		jobs_req_cleanup(&b);
	}
}

static void
test_aliases(void **state)
{
	struct jobs_req r;
	char err[256];

	(void)state;
	assert_int_equal(parse("{\"code\":\"1\",\"network\":\"proxy\"}",
	    &http, &r, err, sizeof(err)), 0);
	assert_true(r.has_net);
	assert_int_equal(r.net, RUNNER_NET_PROXY);
	assert_string_equal(r.net_key, "network");
	jobs_req_cleanup(&r);
	assert_int_equal(parse("{\"code\":\"1\",\"net\":\"none\"}", &tool, &r,
	    err, sizeof(err)), 0);
	assert_string_equal(r.net_key, "net");
	assert_int_equal(r.net, RUNNER_NET_NONE);
	jobs_req_cleanup(&r);
	assert_int_equal(parse("{\"code\":\"1\"}", &tool, &r, err,
	    sizeof(err)), 0);
	assert_false(r.has_net);
	assert_null(r.net_key);
	assert_null(r.lang_key);
	assert_string_equal(r.lang, "python");
	jobs_req_cleanup(&r);
	assert_int_equal(parse("{\"code\":\"1\",\"lang\":\"node\"}", &tool,
	    &r, err, sizeof(err)), 0);
	assert_string_equal(r.lang, "node");
	assert_string_equal(r.lang_key, "lang");
	jobs_req_cleanup(&r);
}

/* Refusals: the member named as the caller gave it; the front end's word
 * and list for an unknown one. */
static void
test_refusals(void **state)
{
	static const struct {
		const char *body;
		int http_rc, tool_rc;
		const char *http_err, *tool_err;
	} rows[] = {
		{ "{\"code\":\"1\",\"net\":\"none\",\"network\":\"none\"}",
		  -EINVAL, -EINVAL, "give 'net' or 'network', not both",
		  "give 'net' or 'network', not both" },
		{ "{\"code\":\"1\",\"lang\":\"bash\",\"language\":\"bash\"}",
		  -EINVAL, -EINVAL, "give 'language' or 'lang', not both",
		  "give 'language' or 'lang', not both" },
		{ "{\"code\":\"1\",\"network\":\"host\"}", -EINVAL, -EINVAL,
		  "'network' must be \"none\" or \"proxy\"",
		  "'network' must be \"none\" or \"proxy\"" },
		{ "{\"code\":\"1\",\"net\":7}", -EINVAL, -EINVAL,
		  "'net' must be \"none\" or \"proxy\"",
		  "'net' must be \"none\" or \"proxy\"" },
		{ "{\"code\":\"1\",\"session\":\"s\"}", -EINVAL, 0,
		  "unknown field 'session' (allowed: code, net)", "" },
		{ "{\"code\":\"1\",\"memory\":\"1g\"}", -EINVAL, -EINVAL,
		  "unknown field 'memory' (allowed: code, net)",
		  "unknown argument 'memory' (allowed: code, network, "
		  "session)" },
		{ "{}", -EINVAL, -EINVAL, "missing field 'code'",
		  "missing argument 'code'" },
		{ "[]", -EINVAL, -EINVAL, "the body must be a JSON object",
		  "the arguments must be a JSON object" },
		{ "{\"code\":\"\"}", -EINVAL, -EINVAL, "'code' is empty: the "
		  "program is empty, nothing to run", "'code' is empty: the "
		  "program is empty, nothing to run" },
		{ "{\"code\":\"1\",\"timeout_s\":301}", -EINVAL, -EINVAL,
		  "timeout 301 s is above the maximum of 300 s (config "
		  "limits.max_timeout_s)", "timeout 301 s is above the "
		  "maximum of 300 s (config limits.max_timeout_s)" },
		{ "{\"code\":\"1\",\"max_output\":0}", -EINVAL, -EINVAL,
		  "'max_output' must be a whole number of bytes, at least 1",
		  "'max_output' must be a whole number of bytes, at least 1" },
		/* Text in MCP, base64 over HTTP. */
		{ "{\"code\":\"1\",\"files\":[{\"path\":\"a\",\"content\":"
		  "\"hi\"}]}", -EINVAL, 0, NULL, "" },
		{ "{\"code\":\"1\",\"files\":[{\"path\":\"a\",\"content_b64\":"
		  "\"aGk=\"}]}", 0, -EINVAL, "", NULL },
	};
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct jobs_req r;
		int rc;

		rc = parse(rows[i].body, &http, &r, err, sizeof(err));
		if (rc != rows[i].http_rc || (rows[i].http_err != NULL &&
		    strcmp(err, rows[i].http_err) != 0))
			fail_msg("http %s: %d '%s'", rows[i].body, rc, err);
		if (rc == 0)
			jobs_req_cleanup(&r);
		else
			assert_null(r.code);
		rc = parse(rows[i].body, &tool, &r, err, sizeof(err));
		if (rc != rows[i].tool_rc || (rows[i].tool_err != NULL &&
		    strcmp(err, rows[i].tool_err) != 0))
			fail_msg("tool %s: %d '%s'", rows[i].body, rc, err);
		if (rc == 0)
			jobs_req_cleanup(&r);
		else
			assert_null(r.code);
	}
}

/* The decoded file is the same bytes either way. */
static void
test_files(void **state)
{
	struct jobs_req a, b;
	char err[256];

	(void)state;
	assert_int_equal(parse("{\"code\":\"1\",\"files\":[{\"path\":\"d/a\","
	    "\"content_b64\":\"aGk=\"}]}", &http, &a, err, sizeof(err)), 0);
	assert_int_equal(parse("{\"code\":\"1\",\"files\":[{\"path\":\"d/a\","
	    "\"content\":\"hi\"}]}", &tool, &b, err, sizeof(err)), 0);
	assert_int_equal(a.nfiles, 1);
	assert_int_equal(b.nfiles, 1);
	assert_string_equal(a.files[0].path, b.files[0].path);
	assert_int_equal(a.files[0].len, 2);
	assert_memory_equal(a.files[0].data, b.files[0].data, 2);
	jobs_req_cleanup(&a);
	jobs_req_cleanup(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_for_both),
		cmocka_unit_test(test_aliases),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_files),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
