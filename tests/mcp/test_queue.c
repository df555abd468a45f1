/*
 * The run_code calls' queue (mcp/queue.c) with a fake run: one at a time
 * on the worker (also when admitted at once), the tenth refused as busy,
 * a cancel drops a waiting call or stops the running one with no reply,
 * at the end the waiting calls run, after a signal they never do.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "common/config.h"
#include "jobs/admission.h"
#include "mcp/queue.h"

#define MAXLINES 64

struct fake {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t reader;		/* the test's thread */
	bool hold;			/* runs wait until released or cancelled */
	int running, max_running;
	int ran, stopped;		/* runs; of them, ended by their flag */
	bool on_reader;			/* a run ran on the test's thread */
	char ran_ids[MAXLINES][16];
	char *lines[MAXLINES];		/* emitted */
	int nlines, emitted;
};

/* msg is the call's id; the reply is "reply <id>". */
static int
fake_run(void *arg, const char *msg, size_t len, const atomic_int *cancel,
    char **reply)
{
	struct fake *f = arg;
	struct timespec ts;

	pthread_mutex_lock(&f->mu);
	if (pthread_equal(pthread_self(), f->reader))
		f->on_reader = true;
	snprintf(f->ran_ids[f->ran++ % MAXLINES], 16, "%.*s", (int)len, msg);
	if (++f->running > f->max_running)
		f->max_running = f->running;
	pthread_cond_broadcast(&f->cv);
	while (f->hold && *cancel == 0) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 5000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&f->cv, &f->mu, &ts);
	}
	if (*cancel != 0)
		f->stopped++;
	f->running--;
	pthread_mutex_unlock(&f->mu);
	if (asprintf(reply, "reply %.*s", (int)len, msg) < 0)
		return -12;
	return 0;
}

static void
fake_emit(void *arg, char *line)
{
	struct fake *f = arg;

	pthread_mutex_lock(&f->mu);
	if (f->nlines < MAXLINES)
		f->lines[f->nlines++] = line;
	else
		free(line);	/* test_cancel_races: only counted */
	f->emitted++;
	pthread_mutex_unlock(&f->mu);
}

/* Waits (at most 10 s) until the run of call id runs. */
static void
wait_running(struct fake *f, const char *id)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	pthread_mutex_lock(&f->mu);
	while (!(f->running == 1 && f->ran > 0 &&
	    strcmp(f->ran_ids[(f->ran - 1) % MAXLINES], id) == 0))
		assert_int_equal(pthread_cond_timedwait(&f->cv, &f->mu, &ts),
		    0);
	pthread_mutex_unlock(&f->mu);
}

static void
release(struct fake *f)
{
	pthread_mutex_lock(&f->mu);
	f->hold = false;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

static struct mcp_queue *
setup_stopped(struct fake *f, struct config *c)
{
	struct mcp_queue_ops ops = { .run = fake_run, .emit = fake_emit,
	    .arg = f };
	struct mcp_queue *q;

	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
	f->reader = pthread_self();
	f->hold = true;
	config_defaults(c);
	assert_int_equal(mcp_queue_new(c, &ops, &q), 0);
	return q;
}

static struct mcp_queue *
setup(struct fake *f, struct config *c)
{
	struct mcp_queue *q = setup_stopped(f, c);

	assert_int_equal(mcp_queue_start(q), 0);
	return q;
}

static void
call(struct mcp_queue *q, int id)
{
	char msg[16];

	snprintf(msg, sizeof(msg), "%d", id);
	mcp_queue_call(q, msg, strlen(msg), strdup(msg));
}

static void
teardown(struct fake *f, struct mcp_queue *q)
{
	mcp_queue_free(q);
	for (int i = 0; i < f->nlines; i++)
		free(f->lines[i]);
	pthread_cond_destroy(&f->cv);
	pthread_mutex_destroy(&f->mu);
}

/* One runs, JOBS_ADMIT_MCP_PENDING wait, the next is busy at once; then
 * they all run in order, one at a time, none on the reading thread. */
static void
test_busy(void **state)
{
	struct fake f;
	struct config c;
	struct mcp_queue *q = setup(&f, &c);
	char want[16];
	int n = JOBS_ADMIT_MCP_RUNNING + JOBS_ADMIT_MCP_PENDING;

	(void)state;
	assert_int_equal(n, 9);
	call(q, 1);
	wait_running(&f, "1");
	for (int i = 2; i <= n; i++)
		call(q, i);
	call(q, 10);
	pthread_mutex_lock(&f.mu);
	assert_int_equal(f.nlines, 1);
	assert_string_equal(f.lines[0], "{\"jsonrpc\":\"2.0\",\"id\":10,"
	    "\"error\":{\"code\":-32000,\"message\":\"Server busy: too many "
	    "run_code calls waiting\"}}\n");
	pthread_mutex_unlock(&f.mu);
	release(&f);
	mcp_queue_end(q);
	assert_int_equal(f.nlines, 1 + n);
	assert_int_equal(f.ran, n);
	for (int i = 1; i <= n; i++) {
		snprintf(want, sizeof(want), "reply %d", i);
		assert_string_equal(f.lines[i], want);
	}
	assert_int_equal(f.max_running, 1);
	assert_false(f.on_reader);
	teardown(&f, q);
}

/* A waiting call cancelled never runs and gets no reply; the running one
 * is stopped by its flag, with no reply; the others go on. */
static void
test_cancel(void **state)
{
	struct fake f;
	struct config c;
	struct mcp_queue *q = setup(&f, &c);

	(void)state;
	call(q, 1);
	wait_running(&f, "1");
	call(q, 2);
	call(q, 3);
	mcp_queue_cancel(q, "2");
	mcp_queue_cancel(q, "7");	/* unknown: ignored */
	mcp_queue_cancel(q, "1");
	wait_running(&f, "3");
	pthread_mutex_lock(&f.mu);
	assert_int_equal(f.nlines, 0);
	assert_int_equal(f.stopped, 1);
	pthread_mutex_unlock(&f.mu);
	release(&f);
	mcp_queue_end(q);
	assert_int_equal(f.ran, 2);
	assert_string_equal(f.ran_ids[1], "3");
	assert_int_equal(f.nlines, 1);
	assert_string_equal(f.lines[0], "reply 3");
	teardown(&f, q);
}

/* At the end (EOF) the waiting calls all run before it returns; a call
 * admitted at once with no worker busy runs too. */
static void
test_end_drains(void **state)
{
	struct fake f;
	struct config c;
	struct mcp_queue *q = setup(&f, &c);

	(void)state;
	call(q, 1);
	wait_running(&f, "1");
	for (int i = 2; i <= 5; i++)
		call(q, i);
	release(&f);
	mcp_queue_end(q);
	assert_int_equal(f.ran, 5);
	assert_int_equal(f.nlines, 5);
	assert_string_equal(f.lines[4], "reply 5");
	assert_int_equal(f.stopped, 0);
	teardown(&f, q);
}

/* After a signal the running call's flag is set and the waiting ones
 * are dropped: they never run and nothing is said of them. */
static void
test_signal_drops(void **state)
{
	struct fake f;
	struct config c;
	struct mcp_queue *q = setup(&f, &c);

	(void)state;
	call(q, 1);
	wait_running(&f, "1");
	for (int i = 2; i <= 5; i++)
		call(q, i);
	mcp_queue_signal(q);
	mcp_queue_end(q);
	assert_int_equal(f.ran, 1);
	assert_int_equal(f.stopped, 1);
	assert_int_equal(f.nlines, 1);
	assert_string_equal(f.lines[0], "reply 1");
	teardown(&f, q);
}

/* A call admitted (and one waiting) before a signal, not started yet, never
 * runs: the worker looks at the signal before it runs a call. */
static void
test_signal_before_start(void **state)
{
	struct fake f;
	struct config c;
	struct mcp_queue *q = setup_stopped(&f, &c);

	(void)state;
	call(q, 1);	/* admitted at once: the worker's to run */
	call(q, 2);
	mcp_queue_signal(q);
	assert_int_equal(mcp_queue_start(q), 0);
	mcp_queue_end(q);
	assert_int_equal(f.ran, 0);
	assert_int_equal(f.nlines, 0);
	teardown(&f, q);
}

/* Calls and cancels racing the worker's grants and starts: every call
 * ends, replied or dropped, and nothing is left held. */
static void
test_cancel_races(void **state)
{
	struct fake f;
	struct config c;
	struct mcp_queue *q = setup(&f, &c);
	char id[16];

	(void)state;
	release(&f);
	for (int i = 1; i <= 400; i++) {
		call(q, i);
		if (i % 2 == 0) {
			snprintf(id, sizeof(id), "%d", i - 1);
			mcp_queue_cancel(q, id);
		}
	}
	mcp_queue_end(q);
	assert_int_equal(f.max_running, 1);
	/* Each even call is answered (run, or busy); an odd one only if it
	 * ended before its cancel came. */
	assert_in_range(f.emitted, 200, 400);
	teardown(&f, q);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_busy),
		cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_end_drains),
		cmocka_unit_test(test_signal_drops),
		cmocka_unit_test(test_signal_before_start),
		cmocka_unit_test(test_cancel_races),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
