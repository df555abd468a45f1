/* Unit tests of the image a run uses, against the fake docker CLI: the run
 * resolves the pinned image once, when it is admitted, so a re-pin while
 * it waits for a slot does not change it (runs in flight keep their
 * image); and a probe record made in another image does not let a run
 * through (a new image ID invalidates the records). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/util.h"
#include "probe/probe.h"
#include "runner/runner.h"
#include "runner/slot.h"
#define FAKE_DOCKER_SUITE "ok"
#include "fake_docker.h"

#define IMG_A "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define IMG_B "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

/* Pins id the way `cordon image build` records it. */
static void
pin(const char *id)
{
	char path[300], text[400];

	snprintf(path, sizeof(path), "%s/image.json", fk.cfg.state_dir);
	snprintf(text, sizeof(text), "{\"id\":\"%s\",\"inputs\":\"ff\","
	    "\"name\":\"cordon-sandbox:ff\",\"built_at\":"
	    "\"2026-12-01T04:29:59.297Z\"}\n", id);
	assert_int_equal(util_mkdir_p(fk.cfg.state_dir, 0755), 0);
	assert_int_equal(util_write_file_atomic(path, text, strlen(text),
	    0644), 0);
}

struct bg {
	struct config c;
	struct runner_request q;
	struct runner_result res;
	char err[256];
	int rc;
};

static void *
bg_run(void *arg)
{
	struct bg *b = arg;

	b->rc = runner_run(&b->c, &b->q, &b->res, b->err, sizeof(b->err));
	return NULL;
}

static void
test_admitted_run_keeps_its_image(void **state)
{
	struct bg b = { .q = { .code = "print(1)\n", .code_len = 9 } };
	struct runner_slot held;
	char err[256], *log;
	pthread_t th;

	(void)state;
	b.c = fk.cfg;
	b.c.image.id[0] = '\0';		/* the recorded pin counts */
	b.c.limits.max_concurrent_runs = 1;
	b.c.limits.queue_timeout_s = 20;
	pin(IMG_A);
	unlink(fk.log);
	assert_int_equal(runner_slot_acquire(&b.c, NULL, &held, err,
	    sizeof(err)), 0);
	assert_int_equal(pthread_create(&th, NULL, bg_run, &b), 0);
	/* Admission (image, checks) takes microseconds; then it waits for
	 * the slot we hold. Re-pin meanwhile, then let it go. */
	(void)poll(NULL, 0, 300);
	log = fake_docker_log(&fk);
	assert_string_equal(log, "");	/* no container yet */
	free(log);
	pin(IMG_B);
	runner_slot_release(&held);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(b.rc, 0);
	assert_string_equal(b.res.image, IMG_A);
	assert_true(b.res.queue_ms >= 250);
	log = fake_docker_log(&fk);
	assert_non_null(strstr(log, " " IMG_A " "));
	assert_null(strstr(log, IMG_B));
	free(log);
	runner_result_cleanup(&b.res);
	/* The next run takes the new pin. */
	assert_int_equal(runner_run(&b.c, &b.q, &b.res, err, sizeof(err)), 0);
	assert_string_equal(b.res.image, IMG_B);
	runner_result_cleanup(&b.res);
}

static void
test_probe_record_of_another_image(void **state)
{
	struct runner_request q = { .code = "x", .code_len = 1 };
	struct probe_report rep = { .mode = "none", .pass = true };
	struct runner_result res;
	struct config c = fk.cfg;
	char err[256], *log;

	(void)state;
	c.image.id[0] = '\0';
	c.require_probe = true;
	c.probe_auto = false;
	rep.at_ms = time_wall_ms();
	snprintf(rep.image, sizeof(rep.image), "%s", IMG_A);
	assert_int_equal(probe_state_write(&c, &rep), 0);
	pin(IMG_A);
	assert_int_equal(runner_run(&c, &q, &res, err, sizeof(err)), 0);
	assert_string_equal(res.image, IMG_A);
	runner_result_cleanup(&res);
	/* Re-pinned: the record proves nothing about B. */
	pin(IMG_B);
	unlink(fk.log);
	assert_int_equal(runner_run(&c, &q, &res, err, sizeof(err)), -ESTALE);
	assert_string_equal(err, "the latest probe for --net none ran in image "
	    "sha256:aaaaaaaaaaaa, not the pinned sha256:bbbbbbbbbbbb: run "
	    "'cordon probe --net none'");
	log = fake_docker_log(&fk);
	assert_string_equal(log, "");	/* docker never called */
	free(log);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_admitted_run_keeps_its_image),
		cmocka_unit_test(test_probe_record_of_another_image),
	};
	return cmocka_run_group_tests(tests, fake_suite_setup,
	    fake_suite_teardown);
}
