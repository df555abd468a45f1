/* jobs_run (jobs/run.c), the one way a front end runs a parsed request,
 * with a fake run function: the files staged before it and removed after
 * it, the pool of the request's language and profile (warm pools on the
 * fake docker CLI), the front end's cancel, label, note and live output
 * passed through, and a staging error returned without a run. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "jobs/run.h"
#include "runner/pool.h"

#include "fake_docker.h"

static struct fake_docker fk;
static struct runner_pools *live_ps;	/* freed by teardown */

static const char *const extra_keys[] = { "session", NULL };
static const struct jobs_req_rules rules = {
	.whole = "the arguments", .noun = "argument",
	.advertised = "code, network, session", .extra = extra_keys,
	.files = STAGE_CONTENT_TEXT,
};

/* What the fake run function saw. */
struct seen {
	int calls;
	struct runner_request req;
	char in0[512];			/* the first --in input's path */
	char content[64];		/* and its file a's bytes */
	int rc;				/* what it returns */
};

static int
fake_run(const struct config *c, const struct runner_request *req,
    struct runner_result *res, char *err, size_t errlen, void *arg)
{
	struct seen *s = arg;
	char path[600], *text = NULL;
	size_t len;

	(void)c;
	s->calls++;
	s->req = *req;
	if (req->nin > 0) {
		snprintf(s->in0, sizeof(s->in0), "%s", req->in[0]);
		snprintf(path, sizeof(path), "%s", req->in[0]);
		if (util_read_file(path, 1024, &text, &len) == 0)
			snprintf(s->content, sizeof(s->content), "%.*s",
			    (int)len, text);
		free(text);
	}
	if (req->output != NULL)
		req->output(req->output_arg, 1, "out", 3);
	if (s->rc < 0) {
		snprintf(err, errlen, "the fake failed");
		return s->rc;
	}
	res->status = RUNNER_OK;
	res->exit_code = 3;
	return 0;
}

static void
note_fn(void *arg, const char *msg)
{
	(void)arg;
	(void)msg;
}

static void
parse(const char *text, struct jobs_req *r)
{
	cJSON *root = cJSON_Parse(text);
	char err[256];

	assert_non_null(root);
	if (jobs_req_parse(&fk.cfg, root, &rules, r, err, sizeof(err)) < 0)
		fail_msg("parse %s: %s", text, err);
	cJSON_Delete(root);
}

static int
setup(void **state)
{
	(void)state;
	setenv("FAKE_MODE", "ok", 1);
	return fake_docker_setup(&fk);
}

static int
teardown(void **state)
{
	(void)state;
	runner_pools_free(live_ps);
	live_ps = NULL;
	return fake_docker_teardown(&fk);
}

/* The files are staged as --in inputs while the run function runs, and
 * removed after it; the request's members reach it; its result is
 * returned. */
static void
test_staged_and_cleaned(void **state)
{
	struct jobs_req r;
	struct seen s = { 0 };
	const struct jobs_run_opts o = { .tmp_dir = fk.dir,
	    .prefix = "cordon-test", .run = fake_run, .run_arg = &s };
	struct runner_result res;
	struct stat sb;
	char err[256];
	bool ran = false;

	(void)state;
	parse("{\"code\":\"print(1)\",\"timeout_s\":7,\"files\":[{\"path\":"
	    "\"a\",\"content\":\"hello\"}]}", &r);
	assert_int_equal(jobs_run(&fk.cfg, &r, &o, &res, &ran, err,
	    sizeof(err)), 0);
	assert_true(ran);
	assert_int_equal(s.calls, 1);
	assert_int_equal(s.req.nin, 1);
	assert_non_null(strstr(s.in0, "/cordon-test."));
	assert_string_equal(s.content, "hello");
	assert_int_equal(s.req.timeout_s, 7);
	assert_string_equal(s.req.code, "print(1)");
	assert_int_equal(res.exit_code, 3);
	/* Removed, its directory too. */
	assert_int_not_equal(stat(s.in0, &sb), 0);
	*strrchr(s.in0, '/') = '\0';
	assert_int_not_equal(stat(s.in0, &sb), 0);
	/* No pool, cancel, label, note or output when the front end gives
	 * none. */
	assert_null(s.req.pool);
	assert_null(s.req.cancel);
	assert_null(s.req.session);
	assert_null(s.req.note);
	assert_null(s.req.output);
	runner_result_cleanup(&res);
	jobs_req_cleanup(&r);
}

/* The front end's cancel flag, label, note and live output reach the
 * run; its error and reason come back. */
static void
test_passed_through(void **state)
{
	struct jobs_req r;
	struct seen s = { .rc = -EIO };
	struct jobs_stream *q = jobs_stream_new(0, NULL, NULL);
	struct jobs_stream_event *ev;
	atomic_int cancel = 0;
	int note_arg;
	const struct jobs_run_opts o = { .tmp_dir = fk.dir,
	    .prefix = "cordon-test", .cancel = &cancel, .session = "tenant-a",
	    .note = note_fn, .note_arg = &note_arg, .stream = q,
	    .run = fake_run, .run_arg = &s };
	struct runner_result res;
	char err[256];
	bool ran = false;

	(void)state;
	assert_non_null(q);
	parse("{\"code\":\"1\"}", &r);
	assert_int_equal(jobs_run(&fk.cfg, &r, &o, &res, &ran, err,
	    sizeof(err)), -EIO);
	assert_true(ran);
	assert_string_equal(err, "the fake failed");
	assert_int_equal(s.req.nin, 0);
	assert_ptr_equal(s.req.cancel, &cancel);
	assert_non_null(s.req.session);
	assert_string_equal(s.req.session, "tenant-a");
	assert_ptr_equal(s.req.note, note_fn);
	assert_ptr_equal(s.req.note_arg, &note_arg);
	assert_ptr_equal(s.req.output, jobs_stream_output);
	assert_ptr_equal(s.req.output_arg, q);
	/* What the run wrote is in the front end's queue. */
	assert_int_equal(jobs_stream_pop(q, false, &ev), 1);
	assert_int_equal(ev->kind, JOBS_STREAM_STDOUT);
	assert_memory_equal(ev->data, "out", 3);
	jobs_stream_event_free(ev);
	runner_result_cleanup(&res);
	jobs_req_cleanup(&r);
	jobs_stream_free(q);
}

/* A staging error (a path given twice; a parent that is not there) is
 * returned with its reason, without a run, with nothing left. */
static void
test_stage_error(void **state)
{
	struct jobs_req r;
	struct seen s = { 0 };
	struct jobs_run_opts o = { .tmp_dir = fk.dir,
	    .prefix = "cordon-test", .run = fake_run, .run_arg = &s };
	struct runner_result res;
	char err[256], path[128];
	bool ran = true;

	(void)state;
	parse("{\"code\":\"1\",\"files\":[{\"path\":\"a\",\"content\":\"x\"},"
	    "{\"path\":\"a\",\"content\":\"y\"}]}", &r);
	assert_int_equal(jobs_run(&fk.cfg, &r, &o, &res, &ran, err,
	    sizeof(err)), -EINVAL);
	assert_false(ran);
	assert_int_equal(s.calls, 0);
	assert_true(err[0] != '\0');
	assert_int_equal(res.exit_code, -1);
	runner_result_cleanup(&res);
	jobs_req_cleanup(&r);

	parse("{\"code\":\"1\",\"files\":[{\"path\":\"a\",\"content\":"
	    "\"x\"}]}", &r);
	snprintf(path, sizeof(path), "%s/nosuch", fk.dir);
	o.tmp_dir = path;
	ran = true;
	assert_true(jobs_run(&fk.cfg, &r, &o, &res, &ran, err,
	    sizeof(err)) < 0);
	assert_false(ran);
	assert_int_equal(s.calls, 0);
	assert_true(err[0] != '\0');
	runner_result_cleanup(&res);
	jobs_req_cleanup(&r);
}

/* The pool of the request's language and profile: python's own pool,
 * python's in profile data, none for bash; none without pools. */
static void
test_pool_by_lang_profile(void **state)
{
	static struct config c;
	static const int64_t size[RUNNER_POOLS_LANGS] = { 1, 0, 0 };
	const struct config_pool_profile extra[] = {
		{ .profile = "data", .lang = CONFIG_LANG_PYTHON, .size = 1 },
	};
	static const struct {
		const char *body;
		int pool;		/* 0 own, 1 data, -1 none */
	} rows[] = {
		{ "{\"code\":\"1\"}", 0 },
		{ "{\"code\":\"1\",\"language\":\"python\",\"profile\":"
		  "\"data\"}", 1 },
		{ "{\"code\":\"1\",\"profile\":\"minimal\"}", 0 },
		{ "{\"code\":\"1\",\"language\":\"bash\"}", -1 },
	};
	struct runner_pool_opts po;
	struct runner_pool *want[2];
	char err[256];

	(void)state;
	c = fk.cfg;
	for (size_t i = 0; i < c.image.nprofiles; i++)
		if (strcmp(c.image.profiles[i].name, "data") == 0)
			snprintf(c.image.profiles[i].id,
			    sizeof(c.image.profiles[i].id), "sha256:%064d", 8);
	runner_pool_conf_opts(&c, 0, &po);
	po.modes[RUNNER_NET_PROXY] = false;
	if (runner_pools_new(&c, size, extra, 1, &po, &live_ps, err,
	    sizeof(err)) < 0)
		fail_msg("runner_pools_new: %s", err);
	want[0] = runner_pools_at(live_ps, 0, NULL, NULL);
	want[1] = runner_pools_at(live_ps, RUNNER_POOLS_LANGS, NULL, NULL);
	assert_non_null(want[0]);
	assert_non_null(want[1]);
	assert_ptr_not_equal(want[0], want[1]);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct jobs_req r;
		struct seen s = { 0 };
		struct jobs_run_opts o = { .tmp_dir = fk.dir,
		    .prefix = "cordon-test", .pools = live_ps,
		    .run = fake_run, .run_arg = &s };
		struct runner_result res;

		parse(rows[i].body, &r);
		assert_int_equal(jobs_run(&c, &r, &o, &res, NULL, err,
		    sizeof(err)), 0);
		if (s.req.pool != (rows[i].pool < 0 ? NULL :
		    want[rows[i].pool]))
			fail_msg("%s: not the pool %d", rows[i].body,
			    rows[i].pool);
		/* Without pools: cold. */
		s.req.pool = (struct runner_pool *)&s;
		o.pools = NULL;
		assert_int_equal(jobs_run(&c, &r, &o, &res, NULL, err,
		    sizeof(err)), 0);
		assert_null(s.req.pool);
		runner_result_cleanup(&res);
		jobs_req_cleanup(&r);
	}
	runner_pools_free(live_ps);
	live_ps = NULL;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_staged_and_cleaned),
		cmocka_unit_test(test_passed_through),
		cmocka_unit_test(test_stage_error),
		cmocka_unit_test(test_pool_by_lang_profile),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
