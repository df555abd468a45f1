/* Unit tests for the pure parts of the service's sessions (serve/
 * sessions.h): the `POST /v1/sessions` body (defaults, a table of refused
 * bodies with their reasons) and the session paths. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "serve/sessions.h"

static void
test_opts_defaults(void **state)
{
	struct serve_session_opts o;
	char err[256];

	(void)state;
	assert_int_equal(serve_session_opts_parse("", 0, &o, err, sizeof(err)),
	    0);
	assert_false(o.has_net);
	assert_int_equal(o.idle_timeout_s, 300);
	assert_int_equal(o.max_lifetime_s, 3600);
	assert_int_equal(serve_session_opts_parse("{}", 2, &o, err,
	    sizeof(err)), 0);
	assert_int_equal(o.idle_timeout_s, 300);
	assert_int_equal(o.max_lifetime_s, 3600);
}

static void
test_opts_all(void **state)
{
	const char *b = "{\"net\":\"proxy\",\"policy\":\"pypi\",\"profile\":"
	    "\"default\",\"idle_timeout_s\":5,\"max_lifetime_s\":86400}";
	struct serve_session_opts o;
	char err[256];

	(void)state;
	assert_int_equal(serve_session_opts_parse(b, strlen(b), &o, err,
	    sizeof(err)), 0);
	assert_true(o.has_net);
	assert_int_equal(o.net, RUNNER_NET_PROXY);
	assert_string_equal(o.policy, "pypi");
	assert_string_equal(o.profile, "");	/* "default": the current */
	assert_int_equal(o.idle_timeout_s, 5);
	assert_int_equal(o.max_lifetime_s, 86400);
}

static void
test_opts_profile(void **state)
{
	const char *b = "{\"profile\":\"data\"}";
	struct serve_session_opts o;
	char err[256];

	(void)state;
	assert_int_equal(serve_session_opts_parse(b, strlen(b), &o, err,
	    sizeof(err)), 0);
	assert_string_equal(o.profile, "data");
	assert_false(o.has_net);
	assert_string_equal(o.policy, "");
}

/* `files` is kept as given, for stage_files_parse with the config's caps;
 * anything but an array is refused here. */
static void
test_opts_files(void **state)
{
	const char *b = "{\"files\":[{\"path\":\"a.csv\",\"content_b64\":"
	    "\"eCwxCg==\"}]}";
	struct serve_session_opts o;
	char err[256];

	(void)state;
	assert_int_equal(serve_session_opts_parse(b, strlen(b), &o, err,
	    sizeof(err)), 0);
	assert_true(cJSON_IsArray(o.files));
	assert_int_equal(cJSON_GetArraySize(o.files), 1);
	serve_session_opts_cleanup(&o);
	assert_null(o.files);
	b = "{\"files\":{}}";
	assert_int_equal(serve_session_opts_parse(b, strlen(b), &o, err,
	    sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "'files' must be an array"));
	assert_null(o.files);
}

static void
test_opts_refused(void **state)
{
	static const struct { const char *body, *why; } bad[] = {
		{ "[]", "must be a JSON object" },
		{ "{", "not valid JSON" },
		{ "{\"code\":\"1\"}", "unknown field 'code'" },
		{ "{\"net\":\"host\"}", "'net' must be" },
		{ "{\"net\":1}", "'net' must be" },
		{ "{\"policy\":\"a b\"}", "'policy' must be a policy name" },
		{ "{\"profile\":\"Data\"}", "'profile' must be a profile name" },
		{ "{\"profile\":\"\"}", "'profile' must be a profile name" },
		{ "{\"profile\":null}", "'profile' must be a profile name" },
		{ "{\"profile\":7}", "'profile' must be a profile name" },
		{ "{\"idle_timeout_s\":0}", "'idle_timeout_s' must be" },
		{ "{\"idle_timeout_s\":1.5}", "'idle_timeout_s' must be" },
		{ "{\"idle_timeout_s\":\"5\"}", "'idle_timeout_s' must be" },
		{ "{\"max_lifetime_s\":86401}", "'max_lifetime_s' must be" },
		{ "{\"max_lifetime_s\":-1}", "'max_lifetime_s' must be" },
		/* Issue 39: cJSON would cut these at U+0000. */
		{ "{\"profile\":\"data\\u0000x\"}", "'profile' holds a string "
		  "with U+0000" },
		{ "{\"files\":[{\"path\":\"a\\u0000\",\"content_b64\":\"\"}]}",
		  "'files' holds a string with U+0000" },
		{ "[\"\\u0000\"]", "the body holds a string with U+0000" },
	};
	struct serve_session_opts o;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (serve_session_opts_parse(bad[i].body, strlen(bad[i].body),
		    &o, err, sizeof(err)) != -EINVAL ||
		    strstr(err, bad[i].why) == NULL)
			fail_msg("%s: '%s'", bad[i].body, err);
		assert_int_equal(o.idle_timeout_s, 0);
	}
}

static void
test_patch(void **state)
{
	static const char *const bad[] = {
		"", "[]", "{}", "{\"policy\":1}", "{\"policy\":\"\"}",
		"{\"policy\":\".x\"}", "{\"policy\":\"a b\"}",
		"{\"policy\":\"pol\\u0000x\"}", "{\"policy\":\"a\",\"net\":\"none\"}",
		"{\"Policy\":\"a\"}", "{\"policy\":\"a\"", "{\"policy\":null}",
	};
	char policy[CONFIG_POLICY_MAX + 1], err[256];

	(void)state;
	assert_int_equal(serve_session_patch_parse("{\"policy\":\"pol-b\"}", 18,
	    policy, sizeof(policy), err, sizeof(err)), 0);
	assert_string_equal(policy, "pol-b");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (serve_session_patch_parse(bad[i], strlen(bad[i]), policy,
		    sizeof(policy), err, sizeof(err)) != -EINVAL)
			fail_msg("%s: accepted", bad[i]);
		assert_string_equal(policy, "");
		assert_true(err[0] != '\0');
	}
}

static void
test_paths(void **state)
{
	static const struct { const char *path; int want; } rows[] = {
		{ "/v1/sessions", 0 },
		{ "/v1/sessions/ses_0123456789abcdef", 1 },
		{ "/v1/sessions/ses_0123456789abcdef/runs", 2 },
		{ "/v1/sessions/", -1 },
		{ "/v1/sessionsX", -1 },
		{ "/v1/sessions/ses_0123456789abcdef/", -1 },
		{ "/v1/sessions/ses_0123456789abcdef/runs/", -1 },
		{ "/v1/sessions/ses_0123456789ABCDEF", -1 },
		{ "/v1/sessions/ses_0123456789abcde", -1 },
		{ "/v1/sessions/ses_0123456789abcdef0", -1 },
		{ "/v1/sessions/xyz_0123456789abcdef", -1 },
		{ "/v1/sessions/ses_0123456789abcdef/exec", -1 },
		{ "/v1/sessions/../runs", -1 },
		{ "/v1/runs", -1 },
	};
	char id[SERVE_SESSION_ID_LEN + 1];

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int got = serve_session_path(rows[i].path, id);

		if (got != rows[i].want)
			fail_msg("%s: %d, wanted %d", rows[i].path, got,
			    rows[i].want);
		if (got > 0)
			assert_string_equal(id, "ses_0123456789abcdef");
		else
			assert_string_equal(id, "");
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_opts_defaults),
		cmocka_unit_test(test_opts_all),
		cmocka_unit_test(test_opts_profile),
		cmocka_unit_test(test_opts_files),
		cmocka_unit_test(test_opts_refused),
		cmocka_unit_test(test_patch),
		cmocka_unit_test(test_paths),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
