/* Unit tests for the service's pure parts: request bodies (a table of bad
 * ones; strict base64 is tested with the `files` check in
 * tests/runner/test_stage.c), tenant lookup and limit accounting, the
 * admission queue with fake waiters, metrics text. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/config.h"
#include "common/util.h"
#include "runner/probe_ops.h"
#include "serve/internal.h"
#include "serve/listen.h"
#include "serve/metrics.h"
#include "serve/probe_sched.h"
#include "serve/request.h"
#include "serve/tenant.h"

#define UNSAFE_PATH "'files'[0]: unsafe path (a relative path of " \
	"printable ASCII, no '..', '.' or empty components, at most 255 bytes)"

static struct config cfg;

static int
setup(void **state)
{
	(void)state;
	config_defaults(&cfg);
	cfg.serve.body_max_bytes = 4096;
	cfg.limits.in_max_bytes = 16;
	cfg.limits.in_max_files = 3;
	return 0;
}

#define LANG_MSG "'language' must be \"python\", \"bash\" or \"node\""

static void
test_req_ok(void **state)
{
	const char *b = "{\"code\":\"print(1)\",\"lang\":\"python\",\"net\":"
	    "\"proxy\",\"timeout_s\":5,\"max_output\":100,\"keep\":\"tail\","
	    "\"files\":[{\"path\":"
	    "\"d/x.bin\",\"content_b64\":\"AAEC\"},{\"path\":\"y\","
	    "\"content_b64\":\"\"}]}";
	struct jobs_req r;
	char err[256] = "";
	(void)state;
	assert_int_equal(serve_req_parse(&cfg, b, strlen(b), &r, err,
	    sizeof(err)), 0);
	assert_string_equal(r.code, "print(1)");
	assert_int_equal(r.code_len, 8);
	assert_true(r.has_net);
	assert_int_equal(r.net, RUNNER_NET_PROXY);
	assert_int_equal(r.timeout_s, 5);
	assert_int_equal(r.max_output, 100);
	assert_string_equal(r.keep, "tail");
	assert_int_equal(r.nfiles, 2);
	assert_string_equal(r.files[0].path, "d/x.bin");
	assert_int_equal(r.files[0].len, 3);
	assert_memory_equal(r.files[0].data, "\0\1\2", 3);
	assert_int_equal(r.files[1].len, 0);
	assert_string_equal(r.policy, "");
	jobs_req_cleanup(&r);

	b = "{\"code\":\"1\"}";
	assert_int_equal(serve_req_parse(&cfg, b, strlen(b), &r, err,
	    sizeof(err)), 0);
	assert_false(r.has_net);
	assert_string_equal(r.policy, "");
	assert_int_equal(r.timeout_s, 0);
	assert_int_equal(r.nfiles, 0);
	assert_null(r.keep);
	/* Default language python; no profile: the language's. */
	assert_string_equal(r.lang, "python");
	assert_string_equal(r.profile, "");
	jobs_req_cleanup(&r);
	b = "{\"code\":\"echo 1\",\"language\":\"bash\",\"profile\":"
	    "\"data\"}";
	assert_int_equal(serve_req_parse(&cfg, b, strlen(b), &r, err,
	    sizeof(err)), 0);
	assert_string_equal(r.lang, "bash");
	assert_string_equal(r.profile, "data");
	jobs_req_cleanup(&r);
	/* "lang", the older name, still works; node picks its profile. */
	b = "{\"code\":\"1\",\"lang\":\"node\"}";
	assert_int_equal(serve_req_parse(&cfg, b, strlen(b), &r, err,
	    sizeof(err)), 0);
	assert_string_equal(r.lang, "node");
	assert_string_equal(r.profile, "");
	jobs_req_cleanup(&r);
}

static void
test_req_bad(void **state)
{
	static const struct { const char *body; int rc; const char *msg; } rows[] = {
		{ "", -EINVAL, "the body is not valid JSON" },
		{ "{\"code\":", -EINVAL, "the body is not valid JSON" },
		{ "[]", -EINVAL, "the body must be a JSON object" },
		{ "\"code\"", -EINVAL, "the body must be a JSON object" },
		{ "{}", -EINVAL, "missing field 'code'" },
		{ "{\"code\":1}", -EINVAL, "'code' must be a string" },
		{ "{\"code\":\"\"}", -EINVAL, "'code' is empty: the program is "
		  "empty, nothing to run" },
		{ "{\"code\":\"x\",\"Code\":\"y\"}", -EINVAL, "unknown field 'Code' "
		  "(allowed: code, language, profile, net, policy, timeout_s, "
		  "max_output, keep, files)" },
		{ "{\"code\":\"x\",\"skip_probe_check\":true}", -EINVAL,
		  "unknown field 'skip_probe_check' (allowed: code, language, "
		  "profile, net, policy, timeout_s, max_output, keep, files)" },
		/* Debug runs are the root CLI's only (runner/debug.h). */
		{ "{\"code\":\"x\",\"debug\":true}", -EINVAL,
		  "unknown field 'debug' (allowed: code, language, profile, "
		  "net, policy, timeout_s, max_output, keep, files)" },
		{ "{\"code\":\"x\",\"lang\":\"js\"}", -EINVAL, LANG_MSG },
		{ "{\"code\":\"x\",\"lang\":null}", -EINVAL, LANG_MSG },
		{ "{\"code\":\"x\",\"language\":\"Python\"}", -EINVAL,
		  LANG_MSG },
		{ "{\"code\":\"x\",\"language\":\"bash\",\"lang\":\"bash\"}",
		  -EINVAL, "give 'language' or 'lang', not both" },
		/* The profile must exist and offer the language. */
		{ "{\"code\":\"x\",\"profile\":\"../x\"}", -EINVAL,
		  "'profile' must be a profile name (1-32 of [a-z0-9_-])" },
		{ "{\"code\":\"x\",\"profile\":1}", -EINVAL,
		  "'profile' must be a profile name (1-32 of [a-z0-9_-])" },
		{ "{\"code\":\"x\",\"profile\":\"gpu\"}", -EINVAL,
		  "unknown profile 'gpu' (profiles: minimal, data, node)" },
		{ "{\"code\":\"x\",\"profile\":\"data\",\"language\":"
		  "\"node\"}", -EINVAL, "profile 'data' has no node (it offers "
		  "python, bash): use a profile with nodejs in its packages, "
		  "e.g. node" },
		{ "{\"code\":\"x\",\"net\":\"host\"}", -EINVAL,
		  "'net' must be \"none\" or \"proxy\"" },
		{ "{\"code\":\"x\",\"net\":0}", -EINVAL,
		  "'net' must be \"none\" or \"proxy\"" },
		/* Above the operator's maximum: refused, naming it. */
		{ "{\"code\":\"x\",\"timeout_s\":301}", -EINVAL, "timeout 301 s "
		  "is above the maximum of 300 s (config limits.max_timeout_s)" },
		{ "{\"code\":\"x\",\"max_output\":16777217}", -EINVAL,
		  "max_output 16777217 bytes is above the maximum of 16m (config "
		  "limits.max_output_cap)" },
		{ "{\"code\":\"x\",\"timeout_s\":0}", -EINVAL, "'timeout_s' must be "
		  "a whole number of seconds, at least 1" },
		{ "{\"code\":\"x\",\"timeout_s\":1.5}", -EINVAL, "'timeout_s' must "
		  "be a whole number of seconds, at least 1" },
		{ "{\"code\":\"x\",\"timeout_s\":\"5\"}", -EINVAL, "'timeout_s' "
		  "must be a whole number of seconds, at least 1" },
		{ "{\"code\":\"x\",\"keep\":\"Tail\"}", -EINVAL, "'keep' must be "
		  "\"head\", \"tail\" or \"both\"" },
		{ "{\"code\":\"x\",\"keep\":2}", -EINVAL, "'keep' must be "
		  "\"head\", \"tail\" or \"both\"" },
		{ "{\"code\":\"x\",\"max_output\":-1}", -EINVAL, "'max_output' must "
		  "be a whole number of bytes, at least 1" },
		{ "{\"code\":\"x\",\"files\":{}}", -EINVAL, "'files' must be an array" },
		{ "{\"code\":\"x\",\"files\":[1]}", -EINVAL, "'files'[0] must be "
		  "an object with string 'path' and 'content_b64'" },
		{ "{\"code\":\"x\",\"files\":[{\"path\":\"a\",\"content\":\"x\"}]}",
		  -EINVAL, "'files'[0] must be an object with string 'path' "
		  "and 'content_b64'" },
		{ "{\"code\":\"x\",\"files\":[{\"path\":\"a\",\"content_b64\":\"\","
		  "\"mode\":1}]}", -EINVAL,
		  "'files'[0]: only 'path' and 'content_b64' are allowed" },
		{ "{\"code\":\"x\",\"files\":[{\"path\":\"../a\",\"content_b64\":\"\"}]}",
		  -EINVAL, UNSAFE_PATH },
		{ "{\"code\":\"x\",\"files\":[{\"path\":\"/etc/x\",\"content_b64\":\"\"}]}",
		  -EINVAL, UNSAFE_PATH },
		{ "{\"code\":\"x\",\"files\":[{\"path\":\"a//b\",\"content_b64\":\"\"}]}",
		  -EINVAL, UNSAFE_PATH },
		{ "{\"code\":\"x\",\"files\":[{\"path\":\"a\",\"content_b64\":\"YQ\"}]}",
		  -EINVAL, "'files'[0]: 'content_b64' is not canonical base64" },
		{ "{\"code\":\"x\",\"files\":[{\"path\":\"a\",\"content_b64\":\"Y Q==\"}]}",
		  -EINVAL, "'files'[0]: 'content_b64' is not canonical base64" },
		{ "{\"code\":\"x\",\"files\":[{\"path\":\"a\",\"content_b64\":"
		  "\"AAAAAAAAAAAAAAAAAAAAAAAA\"}]}", -EFBIG,
		  "'files': more than 16 bytes in total, the "
		    "maximum (config limits.in_max_bytes)" },
		{ "{\"code\":\"x\",\"files\":[{\"path\":\"a\",\"content_b64\":\"\"},"
		  "{\"path\":\"b\",\"content_b64\":\"\"},{\"path\":\"c\","
		  "\"content_b64\":\"\"},{\"path\":\"d\",\"content_b64\":\"\"}]}",
		  -EINVAL, "'files': at most 3 entries (config "
		  "limits.in_max_files)" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct jobs_req r;
		char err[256] = "";
		int rc = serve_req_parse(&cfg, rows[i].body,
		    strlen(rows[i].body), &r, err, sizeof(err));
		if (rc != rows[i].rc || strcmp(err, rows[i].msg) != 0)
			fail_msg("row %zu: rc %d '%s'", i, rc, err);
		assert_null(r.code);
		assert_null(r.files);
	}
}

static void
test_req_oversize(void **state)
{
	size_t n = cfg.serve.body_max_bytes + 1;
	char *big = malloc(n), err[256] = "";
	struct jobs_req r;
	(void)state;
	assert_non_null(big);
	memset(big, ' ', n);
	assert_int_equal(serve_req_parse(&cfg, big, n, &r, err, sizeof(err)),
	    -EFBIG);
	assert_string_equal(err, "the body is over 4096 bytes");
	free(big);
}

/* Issue 39: a string that decodes to hold U+0000 (cJSON would cut it
 * there: print(1)\u0000... ran print(1), and the audit hash was of the
 * prefix) and bodies with more values than a request can hold are refused
 * before cJSON builds them, naming the member. */
static void
test_req_scan(void **state)
{
	static const struct { const char *body; size_t len; const char *msg; }
	    rows[] = {
		{ "{\"code\":\"print(1)\\u0000import os\"}", 0, "'code' holds "
		  "a string with U+0000 (\\u0000 or a NUL byte), which is not "
		  "accepted" },
		{ "{\"code\":\"1\",\"files\":[{\"path\":\"a\\u0000b\","
		  "\"content_b64\":\"\"}]}", 0, "'files' holds a string with "
		  "U+0000" },
		{ "{\"code\":\"1\",\"policy\":\"p\\u0000\"}", 0,
		  "'policy' holds" },
		{ "{\"co\\u0000de\":\"1\"}", 0, "'co\\u0000de' holds" },
		{ "{\"code\":\"a\0b\"}", 13, "'code' holds" },
		{ "[\"\\u0000\"]", 0, "the body holds U+0000" },
	};
	struct jobs_req r;
	char err[256], *big;
	size_t n;
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		n = rows[i].len ? rows[i].len : strlen(rows[i].body);
		err[0] = '\0';
		if (serve_req_parse(&cfg, rows[i].body, n, &r, err,
		    sizeof(err)) != -EINVAL || strstr(err, rows[i].msg) == NULL)
			fail_msg("row %zu: '%s'", i, err);
		assert_null(r.code);
	}
	/* An escaped backslash before u0000 is no NUL. */
	assert_int_equal(serve_req_parse(&cfg, "{\"code\":\"\\\\u0000\"}",
	    18, &r, err, sizeof(err)), 0);
	assert_string_equal(r.code, "\\u0000");
	jobs_req_cleanup(&r);
	/* Values: 64 and 8 per file (in_max_files 3 here: 88). */
	big = malloc(cfg.serve.body_max_bytes);
	assert_non_null(big);
	n = (size_t)snprintf(big, 64, "{\"code\":\"1\",\"x\":[");
	for (int i = 0; i < 90; i++)
		n += (size_t)snprintf(big + n, 8, "0,");
	n += (size_t)snprintf(big + n, 8, "0]}");
	assert_int_equal(serve_req_parse(&cfg, big, n, &r, err, sizeof(err)),
	    -EINVAL);
	assert_string_equal(err, "the body has too many JSON values (over 88: "
	    "at most 64 and 8 per file)");
	n = (size_t)snprintf(big, 64, "{\"code\":\"1\",\"x\":");
	for (int i = 0; i < 17; i++)
		big[n++] = '[';
	for (int i = 0; i < 17; i++)
		big[n++] = ']';
	big[n++] = '}';
	assert_int_equal(serve_req_parse(&cfg, big, n, &r, err, sizeof(err)),
	    -EINVAL);
	assert_string_equal(err, "the body nests deeper than 16");
	free(big);
	/* Who named the language: "language", "lang", or nobody. */
	assert_int_equal(serve_req_parse(&cfg, "{\"code\":\"1\"}", 12, &r,
	    err, sizeof(err)), 0);
	assert_null(r.lang_key);
	jobs_req_cleanup(&r);
	assert_int_equal(serve_req_parse(&cfg, "{\"code\":\"1\",\"lang\":"
	    "\"python\"}", 28, &r, err, sizeof(err)), 0);
	assert_string_equal(r.lang_key, "lang");
	jobs_req_cleanup(&r);
}

/* A waiter of the admission table that nobody starts here. */
static void
nop_start(struct jobs_wait *w)
{
	(void)w;
}

static void
nop_refuse(struct jobs_wait *w, const char *why)
{
	(void)w;
	(void)why;
}

static int
admit_one(struct jobs_admission *a, struct jobs_wait *w, size_t tenant)
{
	memset(w, 0, sizeof(*w));
	w->tenant = tenant;
	w->start = nop_start;
	w->refuse = nop_refuse;
	return jobs_admit(a, w);
}

/* The admission table of c, no hook: the test drains. */
static struct jobs_admission *
table_of(const struct config *c)
{
	struct jobs_admission *a = jobs_admission_new(c, JOBS_FRONT_SERVE,
	    NULL);

	assert_non_null(a);
	return a;
}

/* Issue 39: a tenant's refused requests count against a budget of
 * refusals_per_min, refilled continuously; the local tenant (the host's
 * operator) is never held back. */
static void
test_refusals(void **state)
{
	const char *j = "{\"serve\":{\"tenants\":[{\"name\":\"a\","
	    "\"token\":\"aaaaaaaaaaaaaaaa\",\"max_concurrent\":1,"
	    "\"max_queue\":1}]}}";
	struct serve_tenants ts;
	struct jobs_admission *adm;
	struct jobs_admit_stats st;
	struct jobs_wait w[2];
	struct config c;
	char err[256];
	int64_t t = 1000000;
	(void)state;
	assert_int_equal(config_parse(&c, j, strlen(j), "t", err, sizeof(err)), 0);
	assert_int_equal(c.serve.refusals_per_min, 60);
	adm = table_of(&c);
	serve_tenants_init(&ts, &c, adm);
	for (int i = 0; i < 60; i++) {
		assert_int_equal(serve_tenants_refusal_wait(&ts, 1, t, 60), 0);
		serve_tenants_refused(&ts, 1, t, 60);
	}
	/* Used up: one more in a second (60 a minute). */
	assert_int_equal(serve_tenants_refusal_wait(&ts, 1, t, 60), 1);
	assert_int_equal(serve_tenants_refusal_wait(&ts, 1, t + 500, 60), 1);
	assert_int_equal(serve_tenants_refusal_wait(&ts, 1, t + 1000, 60), 0);
	serve_tenants_refused(&ts, 1, t + 1000, 60);
	assert_int_equal(serve_tenants_refusal_wait(&ts, 1, t + 1000, 6), 10);
	/* Refilled to at most the budget. */
	assert_int_equal(serve_tenants_refusal_wait(&ts, 1, t + 3600000, 60),
	    0);
	assert_true(ts.t[1].refusals_left <= 60);
	/* No bound, and the local tenant. */
	serve_tenants_refused(&ts, 1, t, 0);
	assert_int_equal(serve_tenants_refusal_wait(&ts, 1, t, 0), 0);
	for (int i = 0; i < 100; i++)
		serve_tenants_refused(&ts, SERVE_LOCAL_TENANT, t, 1);
	assert_int_equal(serve_tenants_refusal_wait(&ts, SERVE_LOCAL_TENANT, t,
	    1), 0);
	/* would_reject: nothing counted. */
	assert_false(jobs_admit_would_reject(adm, 1));
	assert_int_equal(admit_one(adm, &w[0], 1), 1);
	assert_false(jobs_admit_would_reject(adm, 1));
	assert_int_equal(admit_one(adm, &w[1], 1), 0);
	assert_true(jobs_admit_would_reject(adm, 1));
	jobs_admit_stats(adm, 1, &st);
	assert_int_equal(st.queued, 1);
	assert_int_equal(st.active, 1);
	jobs_admission_free(adm);
}

static void
test_stage(void **state)
{
	const char *b = "{\"code\":\"1\",\"files\":[{\"path\":\"d/x\","
	    "\"content_b64\":\"AAEC\"},{\"path\":\"d/y\",\"content_b64\":\"\"},"
	    "{\"path\":\"z\",\"content_b64\":\"eg==\"}]}";
	const char *dup = "{\"code\":\"1\",\"files\":[{\"path\":\"d\","
	    "\"content_b64\":\"\"},{\"path\":\"d/y\",\"content_b64\":\"\"}]}";
	struct jobs_req r;
	struct runner_request rq = { .code = NULL };
	struct stage_dir st;
	char err[256] = "", path[PATH_MAX + 8], *data, dir[PATH_MAX];
	size_t len;
	struct stat sb;
	(void)state;
	assert_int_equal(serve_req_parse(&cfg, b, strlen(b), &r, err,
	    sizeof(err)), 0);
	assert_int_equal(jobs_req_stage(&r, "/tmp", "cordon-serve", &st, &rq,
	    err, sizeof(err)), 0);
	assert_int_equal(st.nin, 2);
	assert_int_equal(rq.nin, 2);
	assert_ptr_equal(rq.in[1], st.in[1]);
	assert_ptr_equal(rq.code, r.code);
	snprintf(path, sizeof(path), "%s/d/x", st.dir);
	assert_int_equal(util_read_file(path, 100, &data, &len), 0);
	assert_int_equal(len, 3);
	free(data);
	assert_string_equal(strrchr(st.in[1], '/'), "/z");
	util_strlcpy(dir, st.dir, sizeof(dir));
	stage_dir_cleanup(&st);
	assert_int_equal(stat(dir, &sb), -1);
	jobs_req_cleanup(&r);

	assert_int_equal(serve_req_parse(&cfg, dup, strlen(dup), &r, err,
	    sizeof(err)), 0);
	assert_int_equal(jobs_req_stage(&r, "/tmp", "cordon-serve", &st, &rq,
	    err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "'files': path given twice or both as a file "
	    "and a directory");
	assert_string_equal(st.dir, "");
	jobs_req_cleanup(&r);
}

static void
test_tenants(void **state)
{
	const char *j = "{\"serve\":{\"global_limit\":3,\"queue_max\":2,"
	    "\"tenants\":[{\"name\":\"a\",\"token\":\"aaaaaaaaaaaaaaaa\","
	    "\"max_concurrent\":1,\"max_queue\":0},{\"name\":\"b\","
	    "\"token\":\"bbbbbbbbbbbbbbbb\",\"max_concurrent\":3,"
	    "\"net\":\"proxy\"}]}}";
	struct serve_tenants ts;
	struct jobs_admission *adm;
	struct jobs_admit_stats st;
	struct jobs_wait w[8];
	struct config c;
	char err[256];
	(void)state;
	assert_int_equal(config_parse(&c, j, strlen(j), "t", err, sizeof(err)), 0);
	adm = table_of(&c);
	serve_tenants_init(&ts, &c, adm);
	assert_int_equal(ts.n, 3);
	assert_string_equal(ts.t[0].name, "local");
	assert_string_equal(ts.t[2].name, "b");
	/* Lookup: unix callers may omit the token, TCP callers may not. */
	assert_int_equal(serve_tenants_lookup(&ts, NULL, false), 0);
	assert_int_equal(serve_tenants_lookup(&ts, NULL, true), -EACCES);
	assert_int_equal(serve_tenants_lookup(&ts, "Bearer aaaaaaaaaaaaaaaa",
	    true), 1);
	assert_int_equal(serve_tenants_lookup(&ts, "bearer bbbbbbbbbbbbbbbb",
	    false), 2);
	assert_int_equal(serve_tenants_lookup(&ts, "Bearer aaaaaaaaaaaaaaa",
	    true), -EACCES);
	assert_int_equal(serve_tenants_lookup(&ts, "Bearer aaaaaaaaaaaaaaaaa",
	    true), -EACCES);
	assert_int_equal(serve_tenants_lookup(&ts, "Bearer ", false), -EACCES);
	assert_int_equal(serve_tenants_lookup(&ts, "Basic YTpi", false), -EACCES);
	assert_int_equal(serve_tenants_lookup(&ts, "aaaaaaaaaaaaaaaa", true),
	    -EACCES);
	assert_int_equal(ts.t[2].net, RUNNER_NET_PROXY);
	jobs_admit_stats(adm, 0, &st);
	assert_int_equal(st.max_concurrent, 3);
	jobs_admit_stats(adm, 2, &st);
	assert_int_equal(st.max_queue, 2);

	/* a: one at a time, no queue. */
	assert_int_equal(admit_one(adm, &w[0], 1), 1);
	assert_int_equal(admit_one(adm, &w[1], 1), -EAGAIN);
	/* b: two more fill the global limit of 3, then it queues up to 2. */
	assert_int_equal(admit_one(adm, &w[2], 2), 1);
	assert_int_equal(admit_one(adm, &w[3], 2), 1);
	jobs_admit_stats(adm, SIZE_MAX, &st);
	assert_int_equal(st.active, 3);
	assert_int_equal(admit_one(adm, &w[4], 2), 0);
	assert_int_equal(admit_one(adm, &w[5], 2), 0);
	assert_int_equal(admit_one(adm, &w[6], 2), -EAGAIN);
	jobs_admit_stats(adm, 2, &st);
	assert_int_equal(st.granted, 0);
	/* a finishes: one of b's queued runs may start (granted: it holds
	 * the slot until the owner starts it). */
	jobs_admit_release(adm, 1);
	assert_int_equal(w[4].state, JOBS_WAIT_GRANTED);
	jobs_admit_drain(adm);
	jobs_admit_stats(adm, 2, &st);
	assert_int_equal(st.active, 3);
	assert_int_equal(st.queued, 1);
	/* b is at its own limit now: its next one is granted only when one
	 * of b's ends. */
	assert_int_equal(w[5].state, JOBS_WAIT_QUEUED);
	jobs_admit_release(adm, 2);
	assert_int_equal(w[5].state, JOBS_WAIT_GRANTED);
	jobs_admit_drain(adm);
	jobs_admit_release(adm, 2);
	jobs_admit_stats(adm, SIZE_MAX, &st);
	assert_int_equal(st.active, 2);
	assert_int_equal(st.queued, 0);
	/* A waiter with room never stays behind (a release grants it); the
	 * order within a tenant is test_queue_dispatch's. */
	jobs_admit_release(adm, 2);
	jobs_admit_release(adm, 2);
	jobs_admit_stats(adm, 2, &st);
	assert_int_equal(st.queued, 0);
	assert_int_equal(admit_one(adm, &w[7], 2), 1);
	jobs_admission_free(adm);
}

/* The admission queue (queue.c) with fake waiters: who starts when a slot
 * is freed, in what order, what a withdraw and a flush do, and the metrics
 * that mirror the tenants' counters. */
struct fake_wait {
	struct jobs_wait w;
	const char *id;
	struct serve_queue *q;
	bool release_on_start;		/* a start that fails and releases */
	const char *why;		/* refuse's */
};

static char qlog[256];

static void
fake_start(struct jobs_wait *w)
{
	struct fake_wait *f = (struct fake_wait *)w;

	snprintf(qlog + strlen(qlog), sizeof(qlog) - strlen(qlog), "+%s",
	    f->id);
	if (f->release_on_start)
		serve_queue_release(f->q, w->tenant);
}

static void
fake_refuse(struct jobs_wait *w, const char *why)
{
	struct fake_wait *f = (struct fake_wait *)w;

	f->why = why;
	snprintf(qlog + strlen(qlog), sizeof(qlog) - strlen(qlog), "-%s",
	    f->id);
}

static int
fake_admit(struct serve_queue *q, struct fake_wait *f, const char *id,
    size_t tenant)
{
	memset(f, 0, sizeof(*f));
	f->id = id;
	f->q = q;
	f->w.tenant = tenant;
	f->w.start = fake_start;
	f->w.refuse = fake_refuse;
	return serve_queue_admit(q, &f->w);
}

/* What health and the metrics say (active, queue_depth) is the sum of
 * the tenants' counters, and nothing granted waits for a start. */
static void
check_mirror(const struct serve_queue *q, int64_t active, int64_t depth)
{
	struct serve_metrics m;
	struct jobs_admit_stats st;
	int64_t sum_active = 0, queued = 0;

	for (size_t i = 0; i < q->tenants->n; i++) {
		serve_queue_counts(q, i, &m);
		sum_active += m.active;
		queued += m.queue_depth;
	}
	serve_queue_counts(q, SIZE_MAX, &m);
	assert_int_equal(sum_active, active);
	assert_int_equal(m.active, active);
	assert_int_equal(queued, depth);
	assert_int_equal(m.queue_depth, depth);
	jobs_admit_stats(q->tenants->adm, SIZE_MAX, &st);
	assert_int_equal(st.granted, 0);
}

static int64_t
tenant_count(const struct serve_queue *q, size_t t, bool active)
{
	struct serve_metrics m;

	serve_queue_counts(q, t, &m);
	return active ? m.active : m.queue_depth;
}

static void
test_queue_dispatch(void **state)
{
	const char *j = "{\"serve\":{\"global_limit\":3,\"queue_max\":4,"
	    "\"tenants\":[{\"name\":\"a\",\"token\":\"aaaaaaaaaaaaaaaa\","
	    "\"max_concurrent\":1,\"max_queue\":3},{\"name\":\"b\","
	    "\"token\":\"bbbbbbbbbbbbbbbb\",\"max_concurrent\":2,"
	    "\"max_queue\":3}]}}";
	const char *why = "the service is shutting down";
	struct serve_tenants ts;
	struct serve_metrics m;
	struct serve_queue q = { 0 };
	struct fake_wait a[9], b[5];
	struct jobs_admission *adm;
	struct config c;
	char err[256];
	(void)state;
	assert_int_equal(config_parse(&c, j, strlen(j), "t", err, sizeof(err)),
	    0);
	/* serve's hook: no event base here, so grants start at once. */
	adm = jobs_admission_new(&c, JOBS_FRONT_SERVE,
	    &(struct jobs_admission_hooks){ serve_queue_granted, &q });
	assert_non_null(adm);
	serve_tenants_init(&ts, &c, adm);
	memset(&m, 0, sizeof(m));
	q.tenants = &ts;
	q.metrics = &m;
	assert_int_equal(serve_queue_init(&q), 0);
	qlog[0] = '\0';

	/* a1, b1, b2 fill the global limit of 3; then both tenants queue,
	 * a up to its max_queue of 3. */
	assert_int_equal(fake_admit(&q, &a[1], "a1", 1), 1);
	assert_int_equal(fake_admit(&q, &b[1], "b1", 2), 1);
	assert_int_equal(fake_admit(&q, &b[2], "b2", 2), 1);
	check_mirror(&q, 3, 0);
	assert_int_equal(fake_admit(&q, &a[2], "a2", 1), 0);
	assert_int_equal(fake_admit(&q, &b[3], "b3", 2), 0);
	assert_int_equal(fake_admit(&q, &a[3], "a3", 1), 0);
	assert_int_equal(fake_admit(&q, &a[4], "a4", 1), 0);
	assert_int_equal(fake_admit(&q, &a[5], "a5", 1), -EAGAIN);
	assert_true(jobs_admit_would_reject(adm, 1));
	check_mirror(&q, 3, 4);
	assert_string_equal(qlog, "");

	/* b1 ends: a2 is older but a is at its limit; b3 goes. */
	serve_queue_release(&q, 2);
	assert_string_equal(qlog, "+b3");
	check_mirror(&q, 3, 3);
	/* a1 ends: a2 goes, a3 and a4 stay behind it. */
	serve_queue_release(&q, 1);
	assert_string_equal(qlog, "+b3+a2");
	check_mirror(&q, 3, 2);
	assert_int_equal(tenant_count(&q, 1, true), 1);
	assert_int_equal(tenant_count(&q, 1, false), 2);

	/* a3's client leaves: out, nothing called; twice is nothing. */
	assert_true(serve_queue_withdraw(&q, &a[3].w));
	assert_int_equal(a[3].w.state, JOBS_WAIT_NONE);
	check_mirror(&q, 3, 1);
	assert_false(serve_queue_withdraw(&q, &a[3].w));
	check_mirror(&q, 3, 1);
	assert_string_equal(qlog, "+b3+a2");

	/* A new run of a queues behind a4, never ahead. */
	assert_int_equal(fake_admit(&q, &a[6], "a6", 1), 0);
	check_mirror(&q, 3, 2);
	/* a2 ends: a4 starts, fails and releases its slot (a session's
	 * work whose thread did not start): a6 starts from within. */
	a[4].release_on_start = true;
	serve_queue_release(&q, 1);
	assert_string_equal(qlog, "+b3+a2+a4+a6");
	check_mirror(&q, 3, 0);
	assert_int_equal(tenant_count(&q, 1, true), 1);

	/* Flush: everything queued is refused, oldest first, with why. */
	assert_int_equal(fake_admit(&q, &a[7], "a7", 1), 0);
	assert_int_equal(fake_admit(&q, &b[4], "b4", 2), 0);
	assert_int_equal(fake_admit(&q, &a[8], "a8", 1), 0);
	check_mirror(&q, 3, 3);
	serve_queue_flush(&q, why);
	assert_string_equal(qlog, "+b3+a2+a4+a6-a7-b4-a8");
	assert_ptr_equal(a[7].why, why);
	assert_ptr_equal(b[4].why, why);
	assert_ptr_equal(a[8].why, why);
	assert_int_equal(a[7].w.state, JOBS_WAIT_NONE);
	check_mirror(&q, 3, 0);
	assert_false(serve_queue_busy(&q));

	/* The last three end. */
	serve_queue_release(&q, 1);
	serve_queue_release(&q, 2);
	serve_queue_release(&q, 2);
	check_mirror(&q, 0, 0);
	assert_int_equal(tenant_count(&q, 1, true), 0);
	assert_int_equal(tenant_count(&q, 2, true), 0);
	assert_false(jobs_admit_would_reject(adm, 1));
	serve_queue_cleanup(&q);
	jobs_admission_free(adm);
}

static void
test_metrics(void **state)
{
	struct serve_metrics m = { .queue_depth = 2, .active = 1,
	    .pool_misses = 4 };
	char *t;
	(void)state;
	serve_metrics_observe(&m, RUNNER_OK, 200);
	serve_metrics_observe(&m, RUNNER_OK, 800);
	serve_metrics_observe(&m, RUNNER_TIMEOUT, 10000);
	serve_metrics_observe(&m, SERVE_STATUS_ERROR, 400000);
	serve_metrics_observe(&m, 99, 1);
	m.forbidden = 3;
	m.sessions_live = 2;
	m.sessions_started = 5;
	m.sessions_ended = 3;
	m.session_calls[RUNNER_OK] = 7;
	m.session_calls[RUNNER_OOM] = 1;
	t = serve_metrics_render(&m);
	assert_non_null(t);
	assert_non_null(strstr(t, "# TYPE cordon_runs_total counter\n"));
	assert_non_null(strstr(t, "\ncordon_runs_total{status=\"ok\"} 2\n"));
	assert_non_null(strstr(t, "\ncordon_runs_total{status=\"timeout\"} 1\n"));
	assert_non_null(strstr(t, "\ncordon_runs_total{status=\"error\"} 2\n"));
	assert_non_null(strstr(t, "\ncordon_runs_total{status=\"oom\"} 0\n"));
	assert_non_null(strstr(t, "\ncordon_run_latency_seconds_bucket{le=\"0.25\"} 2\n"));
	assert_non_null(strstr(t, "\ncordon_run_latency_seconds_bucket{le=\"1\"} 3\n"));
	assert_non_null(strstr(t, "\ncordon_run_latency_seconds_bucket{le=\"10\"} 4\n"));
	assert_non_null(strstr(t, "\ncordon_run_latency_seconds_bucket{le=\"300\"} 4\n"));
	assert_non_null(strstr(t, "\ncordon_run_latency_seconds_bucket{le=\"+Inf\"} 5\n"));
	assert_non_null(strstr(t, "\ncordon_run_latency_seconds_count 5\n"));
	assert_non_null(strstr(t, "\ncordon_run_latency_seconds_sum 411.001\n"));
	assert_non_null(strstr(t, "\ncordon_requests_refused_total"
	    "{reason=\"forbidden\"} 3\n"));
	assert_non_null(strstr(t, "\ncordon_queue_depth 2\n"));
	assert_non_null(strstr(t, "\ncordon_active_runs 1\n"));
	assert_non_null(strstr(t, "\ncordon_pool_size 0\n"));
	assert_non_null(strstr(t, "\ncordon_pool_misses_total 4\n"));
	assert_non_null(strstr(t, "\ncordon_sessions_live 2\n"));
	assert_non_null(strstr(t, "# TYPE cordon_sessions_started_total "
	    "counter\ncordon_sessions_started_total 5\n"));
	assert_non_null(strstr(t, "\ncordon_sessions_ended_total 3\n"));
	assert_non_null(strstr(t, "\ncordon_session_calls_total"
	    "{status=\"ok\"} 7\n"));
	assert_non_null(strstr(t, "\ncordon_session_calls_total"
	    "{status=\"oom\"} 1\n"));
	assert_non_null(strstr(t, "\ncordon_session_calls_total"
	    "{status=\"error\"} 0\n"));
	assert_int_equal(t[strlen(t) - 1], '\n');
	/* No pool kept: no per-pool lines. */
	assert_null(strstr(t, "cordon_pool_idle"));
	free(t);
	/* Each kept pool, by language and net mode; none for one not kept. */
	m.pools[0] = (struct serve_pool_figures){ .lang = "python",
	    .profile = "minimal", .kept = true, .idle = { 2, 1 }, .dormant = { false, true },
	    .starting = 1, .hits = 9, .misses = 3, .shrinks = 1 };
	m.pools[1] = (struct serve_pool_figures){ .lang = "bash" };
	m.pools[2] = (struct serve_pool_figures){ .lang = "node",
	    .profile = "node", .kept = true, .idle = { 0, 0 },
	    .dormant = { true, true }, .shrinks = 2 };
	/* python in another profile (pool_profiles): its own lines. */
	m.pools[RUNNER_POOLS_LANGS] = (struct serve_pool_figures){
	    .lang = "python", .profile = "data", .kept = true,
	    .idle = { 1, 0 }, .hits = 4 };
	t = serve_metrics_render(&m);
	assert_non_null(t);
	assert_non_null(strstr(t, "# TYPE cordon_pool_idle gauge\n"
	    "cordon_pool_idle{lang=\"python\",profile=\"minimal\","
	    "net=\"none\"} 2\n"
	    "cordon_pool_idle{lang=\"python\",profile=\"minimal\","
	    "net=\"proxy\"} 1\n"
	    "cordon_pool_idle{lang=\"node\",profile=\"node\",net=\"none\"} "
	    "0\n"));
	assert_non_null(strstr(t, "\ncordon_pool_idle{lang=\"python\","
	    "profile=\"data\",net=\"none\"} 1\n"));
	assert_non_null(strstr(t, "\ncordon_pool_dormant{lang=\"python\","
	    "profile=\"minimal\",net=\"none\"} 0\ncordon_pool_dormant"
	    "{lang=\"python\",profile=\"minimal\",net=\"proxy\"} 1\n"));
	assert_non_null(strstr(t, "\ncordon_pool_starting{lang=\"python\","
	    "profile=\"minimal\"} 1\n"));
	assert_non_null(strstr(t, "\ncordon_pool_lang_hits_total"
	    "{lang=\"python\",profile=\"minimal\"} 9\n"));
	assert_non_null(strstr(t, "\ncordon_pool_lang_hits_total"
	    "{lang=\"python\",profile=\"data\"} 4\n"));
	assert_non_null(strstr(t, "\ncordon_pool_lang_misses_total"
	    "{lang=\"python\",profile=\"minimal\"} 3\n"));
	assert_non_null(strstr(t, "\ncordon_pool_shrinks_total"
	    "{lang=\"node\",profile=\"node\"} 2\n"));
	assert_null(strstr(t, "bash"));
	free(t);
	/* A tenant's own view: none of it. */
	m.own = true;
	t = serve_metrics_render(&m);
	assert_non_null(t);
	assert_null(strstr(t, "cordon_pool_"));
	free(t);
}

static void
test_probe_schedule(void **state)
{
	struct config c;
	int64_t now = 1000000000000LL;
	char *env[] = { "A=1", "CORDON_CONFIG=/old", "B=2", NULL };
	char **e;
	(void)state;
	config_defaults(&c);
	c.serve.probe_interval_s = 3600;
	c.probe_max_age_s = 7200;
	/* No record: now at start-up, after the retry floor later. */
	assert_int_equal(serve_probe_delay(&c, -1, true, now, true), 0);
	assert_int_equal(serve_probe_delay(&c, -1, true, now, false),
	    SERVE_PROBE_RETRY_MS);
	/* A fresh record: the interval. */
	assert_int_equal(serve_probe_delay(&c, now, true, now, false), 3600000);
	/* A failed one: re-probed within minutes, not after the interval. */
	assert_int_equal(serve_probe_delay(&c, now, false, now, false),
	    SERVE_PROBE_FAIL_RETRY_MS);
	/* A record about to go stale: before it does. */
	assert_int_equal(serve_probe_delay(&c, now - 7000000, true, now, false),
	    200000 - SERVE_PROBE_MARGIN_MS);
	/* Stale already: at once at start-up, else after the floor. */
	assert_int_equal(serve_probe_delay(&c, now - 8000000, true, now, true), 0);
	assert_int_equal(serve_probe_delay(&c, now - 8000000, true, now, false),
	    SERVE_PROBE_RETRY_MS);

	e = serve_probe_env(env, "/etc/c.json");
	assert_non_null(e);
	assert_string_equal(e[0], "A=1");
	assert_string_equal(e[1], "B=2");
	assert_string_equal(e[2], "CORDON_CONFIG=/etc/c.json");
	assert_null(e[3]);
	serve_probe_env_free(e);
}

/* serve_probe_run's argv (--warm only for a service with a pool) and
 * outcome, with a stand-in executable that records what it was given. */
static void
test_probe_run_argv(void **state)
{
	char dir[] = "/tmp/cordon-probe-argv.XXXXXX", exe[96], log[96];
	char script[600], err[256], said[64], *text;
	size_t len;
	bool warn;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(exe, sizeof(exe), "%s/cordon", dir);
	snprintf(log, sizeof(log), "%s/argv", dir);
	snprintf(script, sizeof(script), "#!/bin/sh\necho \"$* $CORDON_CONFIG\" "
	    ">>%s\n[ \"$3\" = proxy ] && { echo 'control x failed' >&2; "
	    "echo 'more' >&2; exit 1; }\n[ \"$3\" = silent ] && exit 3\n"
	    "[ \"$4\" = --warm ] && printf 'left a\\n\\nleft b"
	    " and more than the rest of said holds\\n' >&2\nexit 0\n", log);
	assert_int_equal(util_write_file_atomic(exe, script, strlen(script),
	    0755), 0);
	assert_int_equal(serve_probe_run(exe, "/c.json", "none", false, said,
	    sizeof(said), &warn, err, sizeof(err)), 0);
	assert_string_equal(said, "");
	/* A pass's stderr is kept, its lines joined, cut at said's size. */
	assert_int_equal(serve_probe_run(exe, "/c.json", "none", true, said,
	    sizeof(said), &warn, err, sizeof(err)), 0);
	assert_string_equal(said, "left a; left b and more than the rest of "
	    "said holds");
	assert_int_equal(serve_probe_run(exe, "/c.json", "none", true, said,
	    24, &warn, err, sizeof(err)), 0);
	assert_string_equal(said, "left a; left b and more");
	assert_false(warn);
	assert_int_equal(serve_probe_run(exe, "/c.json", "proxy", true, said,
	    sizeof(said), &warn, err, sizeof(err)), -EPERM);
	/* A failure: the first line of its stderr, else its exit. */
	assert_string_equal(err, "probe --net proxy failed (exit 1): control x "
	    "failed");
	assert_string_equal(said, "");
	assert_int_equal(serve_probe_run(exe, "/c.json", "silent", false, said,
	    sizeof(said), &warn, err, sizeof(err)), -EPERM);
	assert_string_equal(err, "probe --net silent failed (exit 3)");
	assert_int_equal(util_read_file(log, 4096, &text, &len), 0);
	assert_string_equal(text, "probe --net none /c.json\n"
	    "probe --net none --warm /c.json\n"
	    "probe --net none --warm /c.json\n"
	    "probe --net proxy --warm /c.json\n"
	    "probe --net silent /c.json\n");
	free(text);
	assert_int_equal(util_rm_rf(dir), 0);
}

/* Which passing probe's stderr serve logs as a warning: one with a line
 * that starts RUNNER_PROBE_WARNING (cordon probe's mark), whatever the
 * words of its lines; a mark past said's cut still counts. */
static void
test_probe_run_warning(void **state)
{
	char dir[] = "/tmp/cordon-probe-warn.XXXXXX", exe[96];
	char err[256], said[512];
	bool warn;
	static const char script[] = "#!/bin/sh\ncase $3 in\n"
	    "marked) printf 'cordon probe: 1 leftover container(s) of this "
	    "probe found, removal asked: cordon-x\\n" RUNNER_PROBE_WARNING
	    "1 container(s) of this probe still there: cordon-x\\n' >&2 ;;\n"
	    "words) printf 'cordon probe: removed after 0 s\\ncordon probe: "
	    "failed, still there, not marked\\n' >&2 ;;\n"
	    "late) printf 'cordon probe: a first line past the cut\\n"
	    RUNNER_PROBE_WARNING "after it\\n' >&2 ;;\n"
	    "failing) echo '" RUNNER_PROBE_WARNING "x' >&2; exit 1 ;;\n"
	    "esac\nexit 0\n";

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(exe, sizeof(exe), "%s/cordon", dir);
	assert_int_equal(util_write_file_atomic(exe, script, strlen(script),
	    0755), 0);
	assert_int_equal(serve_probe_run(exe, "/c.json", "marked", false, said,
	    sizeof(said), &warn, err, sizeof(err)), 0);
	assert_true(warn);
	assert_string_equal(said, "cordon probe: 1 leftover container(s) of "
	    "this probe found, removal asked: cordon-x; cordon probe: warning: "
	    "1 container(s) of this probe still there: cordon-x");
	assert_int_equal(serve_probe_run(exe, "/c.json", "words", false, said,
	    sizeof(said), &warn, err, sizeof(err)), 0);
	assert_false(warn);
	assert_int_equal(serve_probe_run(exe, "/c.json", "late", false, said,
	    16, &warn, err, sizeof(err)), 0);
	assert_true(warn);
	assert_string_equal(said, "cordon probe: a");
	assert_int_equal(serve_probe_run(exe, "/c.json", "failing", false,
	    said, sizeof(said), &warn, err, sizeof(err)), -EPERM);
	assert_false(warn);
	assert_string_equal(said, "");
	assert_int_equal(util_rm_rf(dir), 0);
}

static void
test_listen(void **state)
{
	static const struct { const char *spec, *host; int port; } ok[] = {
		{ "127.0.0.1:8700", "127.0.0.1", 8700 },
		{ "[::1]:1", "::1", 1 },
		{ "localhost:65535", "localhost", 65535 },
	};
	static const char *const bad[] = {
		"127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536",
		":80", "::1:80", "[::1]", "[]:80", "1.2.3.4:8x", "[::1:80",
	};
	char host[64], dir[] = "/tmp/cordon-serve-test.XXXXXX", path[128];
	char err[256];
	uint16_t port;
	int fd, fd2, f;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(serve_listen_parse_addr(ok[i].spec, host,
		    sizeof(host), &port), 0);
		assert_string_equal(host, ok[i].host);
		assert_int_equal(port, ok[i].port);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (serve_listen_parse_addr(bad[i], host, sizeof(host),
		    &port) != -EINVAL)
			fail_msg("accepted '%s'", bad[i]);

	/* The unix socket: made with its directory; a live one is refused;
	 * a stale one replaced; a regular file never removed. */
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/sub/s.sock", dir);
	assert_int_equal(serve_listen_unix(path, &fd, err, sizeof(err)), 0);
	assert_int_equal(serve_listen_unix(path, &fd2, err, sizeof(err)),
	    -EADDRINUSE);
	close(fd);
	assert_int_equal(serve_listen_unix(path, &fd, err, sizeof(err)), 0);
	util_strlcpy(sa.sun_path, path, sizeof(sa.sun_path));
	f = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(connect(f, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(f);
	close(fd);
	unlink(path);
	assert_int_equal(util_write_file_atomic(path, "x", 1, 0644), 0);
	assert_int_equal(serve_listen_unix(path, &fd, err, sizeof(err)),
	    -EADDRINUSE);
	assert_int_equal(access(path, F_OK), 0);
	assert_int_equal(util_rm_rf(dir), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_req_ok, setup),
		cmocka_unit_test_setup(test_req_bad, setup),
		cmocka_unit_test_setup(test_req_oversize, setup),
		cmocka_unit_test_setup(test_req_scan, setup),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test_setup(test_stage, setup),
		cmocka_unit_test(test_tenants),
		cmocka_unit_test(test_queue_dispatch),
		cmocka_unit_test(test_metrics),
		cmocka_unit_test(test_probe_schedule),
		cmocka_unit_test(test_probe_run_argv),
		cmocka_unit_test(test_probe_run_warning),
		cmocka_unit_test(test_listen),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
