/* Unit tests for probe_run with fake ops: a run that returns the good
 * observations passes and is recorded; a failing run fails, is recorded
 * and shows its stderr; an ops error is an error and records nothing; a
 * debug probe judges the debug runtime and records nothing. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "probe/probe.h"

extern char **environ;

static char *inside_good, *inspect_good;
static struct config cfg;
static char dir[] = "/tmp/cordon-probe-run-XXXXXX";

#define FAKE_IMAGE "sha256:" \
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* What the fake run returns, and what it saw. */
struct fake {
	int rc;				/* < 0: fail with this */
	const char *out, *err, *inspect;
	int calls;
	struct probe_job job;		/* the job it got (borrowed) */
	char session[64];
	bool marker_set, marker_in_code;
};

static char *
dup_or_null(const char *s)
{
	return s != NULL ? strdup(s) : NULL;
}

static int
fake_run(void *data, const struct probe_job *job, struct probe_outcome *out,
    char *err, size_t errlen)
{
	struct fake *f = data;

	f->calls++;
	f->job = *job;
	snprintf(f->session, sizeof(f->session), "%s", job->session);
	/* The host marker is in the environment while the run goes, and
	 * the program looks for exactly that variable. */
	for (char **e = environ; *e != NULL; e++) {
		char name[64];
		if (strncmp(*e, "CORDON_PROBE_MARKER_", 20) != 0)
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(*e, "="), *e);
		f->marker_set = true;
		f->marker_in_code = strstr(job->code, name) != NULL;
	}
	if (f->rc < 0) {
		snprintf(err, errlen, "docker exploded");
		return f->rc;
	}
	out->out = dup_or_null(f->out);
	out->out_len = f->out != NULL ? strlen(f->out) : 0;
	out->err = dup_or_null(f->err);
	out->err_len = f->err != NULL ? strlen(f->err) : 0;
	out->inspect = dup_or_null(f->inspect);
	out->inspect_len = f->inspect != NULL ? strlen(f->inspect) : 0;
	snprintf(out->container, sizeof(out->container), "cordon-fake");
	snprintf(out->image, sizeof(out->image), "%s", FAKE_IMAGE);
	out->warm = job->warm;
	if (job->debug)
		snprintf(out->debug_log, sizeof(out->debug_log), "/d/abc");
	out->run_status = f->out != NULL ? "ok" : "sandbox_error";
	return 0;
}

static const struct probe_ops fake_ops = { .run = fake_run };

static const struct probe_run_opts opts_none = { .mode = "none",
    .host_release = "6.18.44-test", .runtime_is_runsc = true };

static bool
any_marker_left(void)
{
	for (char **e = environ; *e != NULL; e++)
		if (strncmp(*e, "CORDON_PROBE_MARKER_", 20) == 0)
			return true;
	return false;
}

static int
setup(void **state)
{
	char path[512];
	const char *src = getenv("CORDON_SOURCE_ROOT");

	(void)state;
	config_defaults(&cfg);
	if (src == NULL || mkdtemp(dir) == NULL)
		return -1;
	snprintf(cfg.state_dir, sizeof(cfg.state_dir), "%s/state", dir);
	snprintf(path, sizeof(path), "%s/tests/probe/data/inside-good.json",
	    src);
	if (util_read_file(path, 1 << 20, &inside_good, NULL) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/tests/probe/data/inspect-good.json",
	    src);
	if (util_read_file(path, 1 << 20, &inspect_good, NULL) < 0)
		return -1;
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	free(inside_good);
	free(inspect_good);
	return util_rm_rf(dir);
}

static int
reset_state(void **state)
{
	(void)state;
	(void)util_rm_rf(cfg.state_dir);
	return 0;
}

static void
test_good_run_passes_and_is_recorded(void **state)
{
	struct fake f = { .out = inside_good, .inspect = inspect_good,
	    .err = "" };
	struct probe_run_opts o = opts_none;
	struct probe_report rep;
	char err[256], failed[256];
	int64_t at = 0;
	bool pass = false;
	cJSON *j, *j2;

	(void)state;
	o.warm = true;
	o.stack = "netstack";
	assert_int_equal(probe_run(&cfg, &o, &fake_ops, &f, &rep, &j, err,
	    sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_int_equal(f.calls, 1);
	assert_true(f.job.warm);
	assert_string_equal(f.job.mode, "none");
	assert_true(f.job.code_len > 0);
	assert_int_equal(strlen(f.session), 6 + 16);
	assert_int_equal(strncmp(f.session, "probe-", 6), 0);
	assert_true(f.marker_set);
	assert_true(f.marker_in_code);
	assert_false(any_marker_left());
	for (size_t i = 0; i < rep.ncontrols; i++)
		if (!rep.controls[i].pass)
			fail_msg("%s: %s", rep.controls[i].name,
			    rep.controls[i].observed);
	assert_true(rep.pass);
	assert_string_equal(rep.mode, "none");
	assert_true(rep.at_ms > 0);
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItem(j, "container")->valuestring,
	    "cordon-fake");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "warm")));
	assert_string_equal(cJSON_GetObjectItem(j, "run_status")->valuestring,
	    "ok");
	assert_null(cJSON_GetObjectItem(j, "probe_stderr"));
	/* The report says which network stack the runtime runs. */
	assert_string_equal(cJSON_GetObjectItem(j, "network_stack")->valuestring,
	    "netstack");
	cJSON_Delete(j);
	assert_int_equal(probe_state_read(&cfg, "none", &pass, &at, failed,
	    sizeof(failed)), 0);
	assert_true(pass);
	assert_int_equal(at, rep.at_ms);
	assert_int_equal(probe_state_check(&cfg, "none", NULL, time_wall_ms(), err,
	    sizeof(err)), 0);
	/* The record names the image the probe ran in: good for that one
	 * only. */
	assert_string_equal(rep.image, FAKE_IMAGE);
	assert_string_equal(cJSON_GetObjectItem(j2 = probe_report_to_json(&rep),
	    "image")->valuestring, FAKE_IMAGE);
	cJSON_Delete(j2);
	assert_int_equal(probe_state_check(&cfg, "none", FAKE_IMAGE,
	    time_wall_ms(), err, sizeof(err)), 0);
	assert_int_equal(probe_state_check(&cfg, "none", "sha256:other",
	    time_wall_ms(), err, sizeof(err)), -ESTALE);
}

static void
test_failing_run_fails_and_is_recorded(void **state)
{
	struct fake f = { .out = "Traceback (most recent call last)",
	    .err = "SyntaxError: it broke" };
	struct probe_report rep;
	char err[256], failed[256];
	int64_t at;
	bool pass = true;
	cJSON *j, *se;

	(void)state;
	cfg.require_probe = true;
	assert_int_equal(probe_run(&cfg, &opts_none, &fake_ops, &f, &rep, &j,
	    err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_false(rep.pass);
	assert_non_null(j);
	assert_false(cJSON_IsTrue(cJSON_GetObjectItem(j, "pass")));
	assert_false(cJSON_IsTrue(cJSON_GetObjectItem(j, "warm")));
	/* No stack given: said so, not guessed. */
	assert_string_equal(cJSON_GetObjectItem(j, "network_stack")->valuestring,
	    "unknown");
	se = cJSON_GetObjectItem(j, "probe_stderr");
	assert_true(cJSON_IsString(se));
	assert_non_null(strstr(se->valuestring, "it broke"));
	cJSON_Delete(j);
	assert_int_equal(probe_state_read(&cfg, "none", &pass, &at, failed,
	    sizeof(failed)), 0);
	assert_false(pass);
	assert_non_null(strstr(failed, "user"));
	assert_int_equal(probe_state_check(&cfg, "none", NULL, time_wall_ms(), err,
	    sizeof(err)), -EPERM);
	cfg.require_probe = false;
}

static void
test_ops_error_is_an_error(void **state)
{
	struct fake f = { .rc = -EIO };
	struct probe_report rep;
	char err[256], failed[256];
	int64_t at;
	bool pass;
	cJSON *j = (cJSON *)&f;

	(void)state;
	assert_int_equal(probe_run(&cfg, &opts_none, &fake_ops, &f, &rep, &j,
	    err, sizeof(err)), -EIO);
	assert_string_equal(err, "docker exploded");
	assert_null(j);
	assert_false(any_marker_left());
	assert_int_equal(probe_state_read(&cfg, "none", &pass, &at, failed,
	    sizeof(failed)), -ENOENT);
}

static void
test_bad_options(void **state)
{
	struct fake f = { .out = inside_good, .inspect = inspect_good };
	struct probe_run_opts o = opts_none;
	struct probe_report rep;
	char err[256];
	cJSON *j;

	(void)state;
	o.mode = "host";
	assert_int_equal(probe_run(&cfg, &o, &fake_ops, &f, &rep, &j, err,
	    sizeof(err)), -EINVAL);
	o.mode = "proxy";		/* without the proxy's URL */
	assert_int_equal(probe_run(&cfg, &o, &fake_ops, &f, &rep, &j, err,
	    sizeof(err)), -EINVAL);
	assert_int_equal(f.calls, 0);
	assert_null(j);
}

static void
test_unrecordable_result_warns(void **state)
{
	struct fake f = { .out = inside_good, .inspect = inspect_good };
	struct probe_report rep;
	char err[256], saved[sizeof(cfg.state_dir)], file[300];
	cJSON *j;

	(void)state;
	memcpy(saved, cfg.state_dir, sizeof(saved));
	/* A state dir below a regular file cannot be made. */
	snprintf(file, sizeof(file), "%s/file", dir);
	assert_int_equal(util_write_file_atomic(file, "x", 1, 0600), 0);
	snprintf(cfg.state_dir, sizeof(cfg.state_dir), "%s/file/state", dir);
	assert_int_equal(probe_run(&cfg, &opts_none, &fake_ops, &f, &rep, &j,
	    err, sizeof(err)), 0);
	memcpy(cfg.state_dir, saved, sizeof(saved));
	assert_non_null(strstr(err, "cannot record the result in "));
	assert_true(rep.pass);
	assert_non_null(j);
	cJSON_Delete(j);
}

/* The inspect view of the good run, its runtime replaced by rt. */
static char *
inspect_with_runtime(const char *rt)
{
	const char *key = "\"Runtime\": \"cordon-offline\"";
	const char *at = strstr(inspect_good, key);
	char *s;

	assert_non_null(at);
	assert_true(asprintf(&s, "%.*s\"Runtime\": \"%s\"%s",
	    (int)(at - inspect_good), inspect_good, rt,
	    at + strlen(key)) > 0);
	return s;
}

/* A debug probe: the same controls, against the debug runtime; the job
 * asks the runner for it; its report names the logs and is never
 * recorded (nor does it replace the record that is there). */
static void
test_debug_probe(void **state)
{
	struct fake f = { .out = inside_good, .err = "" };
	struct probe_run_opts o = opts_none;
	struct probe_report rep;
	char err[256], failed[256];
	char *insp = inspect_with_runtime("cordon-debug");
	int64_t at = 0;
	bool pass;
	cJSON *j;

	(void)state;
	o.debug = true;
	f.inspect = insp;
	assert_int_equal(probe_run(&cfg, &o, &fake_ops, &f, &rep, &j, err,
	    sizeof(err)), 0);
	assert_true(f.job.debug);
	for (size_t i = 0; i < rep.ncontrols; i++)
		if (!rep.controls[i].pass)
			fail_msg("%s: %s", rep.controls[i].name,
			    rep.controls[i].observed);
	assert_true(rep.pass);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "debug")));
	assert_string_equal(cJSON_GetObjectItem(j, "debug_log")->valuestring,
	    "/d/abc");
	cJSON_Delete(j);
	assert_int_equal(probe_state_read(&cfg, "none", &pass, &at, failed,
	    sizeof(failed)), -ENOENT);

	/* A container in the plain runtime does not pass as a debug one. */
	f.inspect = inspect_good;
	assert_int_equal(probe_run(&cfg, &o, &fake_ops, &f, &rep, &j, err,
	    sizeof(err)), 0);
	assert_false(rep.pass);
	for (size_t i = 0; i < rep.ncontrols; i++)
		if (strcmp(rep.controls[i].name, "gvisor_kernel") == 0)
			assert_false(rep.controls[i].pass);
	cJSON_Delete(j);
	assert_int_equal(probe_state_read(&cfg, "none", &pass, &at, failed,
	    sizeof(failed)), -ENOENT);

	/* A plain probe's record stays what it was. */
	o.debug = false;
	assert_int_equal(probe_run(&cfg, &o, &fake_ops, &f, &rep, &j, err,
	    sizeof(err)), 0);
	assert_false(cJSON_IsTrue(cJSON_GetObjectItem(j, "debug")));
	assert_null(cJSON_GetObjectItem(j, "debug_log"));
	cJSON_Delete(j);
	o.debug = true;
	f.inspect = inspect_good;	/* would fail as a debug probe */
	assert_int_equal(probe_run(&cfg, &o, &fake_ops, &f, &rep, &j, err,
	    sizeof(err)), 0);
	cJSON_Delete(j);
	assert_int_equal(probe_state_read(&cfg, "none", &pass, &at, failed,
	    sizeof(failed)), 0);
	assert_true(pass);
	free(insp);
}

static void
test_progress_line(void **state)
{
	struct probe_control ok = { .name = "rootfs_readonly", .pass = true };
	struct probe_control bad = { .name = "no_network", .pass = false };
	char buf[300], small[20];
	int n;

	(void)state;
	n = probe_progress_line(&ok, 9370, buf, sizeof(buf));
	assert_int_equal(n, (int)strlen(buf));
	assert_string_equal(buf, "cordon probe: rootfs_readonly ok (9.3 s)\n");
	snprintf(bad.observed, sizeof(bad.observed), "connect to 1.1.1.1:53 "
	    "succeeded");
	assert_true(probe_progress_line(&bad, 12050, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "cordon probe: no_network failed (12.0 s): "
	    "connect to 1.1.1.1:53 succeeded\n");
	/* A long observation is cut; the line stays one line. */
	memset(bad.observed, 'x', sizeof(bad.observed) - 1);
	bad.observed[sizeof(bad.observed) - 1] = '\0';
	assert_true(probe_progress_line(&bad, -5, buf, sizeof(buf)) > 0);
	assert_non_null(strstr(buf, "failed (0.0 s): xxx"));
	assert_true(strlen(buf) < 200);
	assert_ptr_equal(strchr(buf, '\n'), buf + strlen(buf) - 1);
	snprintf(bad.observed, sizeof(bad.observed), "a\nb\033[2Jc");
	assert_true(probe_progress_line(&bad, 0, buf, sizeof(buf)) > 0);
	assert_non_null(strstr(buf, "): a?b?[2Jc\n"));
	assert_int_equal(probe_progress_line(&ok, 1, small, sizeof(small)),
	    -ENOSPC);
	assert_string_equal(small, "");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_good_run_passes_and_is_recorded,
		    reset_state),
		cmocka_unit_test_setup(test_failing_run_fails_and_is_recorded,
		    reset_state),
		cmocka_unit_test_setup(test_ops_error_is_an_error, reset_state),
		cmocka_unit_test_setup(test_bad_options, reset_state),
		cmocka_unit_test_setup(test_unrecordable_result_warns,
		    reset_state),
		cmocka_unit_test_setup(test_debug_probe, reset_state),
		cmocka_unit_test(test_progress_line),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
