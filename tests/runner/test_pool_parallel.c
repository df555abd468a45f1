/* Unit tests of the warm pool's parallel refill (runner/pool.c,
 * runner_pool_opts.max_starts) against the fake docker CLI
 * (tests/runner/fake-docker.sh): with $FAKE_START_DELAY a started
 * container stays "created" that many seconds, so starts pile up in
 * flight and can be counted; with $FAKE_CREATE_DELAY the "daemon" creates
 * the container only that long after `run`, even if its CLI is killed
 * (issue 22). The call log says which containers were started and which
 * removed; the marker files say which still exist. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/config.h"
#include "common/util.h"
#include "runner/pool.h"
#include "runner/runner.h"
#include "fake_docker.h"
#include "fake_pool.h"

static struct fake_docker fk;
static struct runner_pool *live;	/* freed by teardown if a test failed */

static int
setup(void **state)
{
	(void)state;
	/* Only while no pool thread runs: it forks with this environment. */
	setenv("FAKE_MODE", "ok", 1);
	unsetenv("FAKE_START_DELAY");
	unsetenv("FAKE_CREATE_DELAY");
	return fake_docker_setup(&fk);
}

static int
teardown(void **state)
{
	(void)state;
	runner_pool_free(live);
	live = NULL;
	unsetenv("FAKE_START_DELAY");
	unsetenv("FAKE_CREATE_DELAY");
	return fake_docker_teardown(&fk);
}

static struct runner_pool *
pool_new(int64_t size, int64_t max_starts)
{
	struct runner_pool_opts o = { .size = size, .max_age_s = 60,
	    .max_starts = max_starts, .modes = { true, false } };
	struct runner_pool *p = NULL;
	char err[256];

	assert_int_equal(runner_pool_new(&fk.cfg, &o, &p, err, sizeof(err)),
	    0);
	assert_non_null(p);
	live = p;
	return p;
}

static void
pool_free(struct runner_pool *p)
{
	assert_ptr_equal(p, live);
	live = NULL;
	runner_pool_free(p);
}

static struct runner_pool_stats
stats(struct runner_pool *p)
{
	struct runner_pool_stats s;

	runner_pool_stats(p, &s);
	return s;
}

/* Polls until the log has want `run` lines (into n), or ms pass. */
static bool
runs_logged_within(struct names *n, size_t want, int64_t ms)
{
	int64_t end = time_mono_ms() + ms;

	for (;;) {
		logged_run_names(&fk, n);
		if (n->n >= want)
			return true;
		if (time_mono_ms() >= end)
			return false;
		usleep(20000);
	}
}

/* No marker of the fake's "daemon" is left for any name in n: none of
 * those containers exists. */
static bool
none_left(const struct names *n)
{
	char marker[256];

	for (size_t i = 0; i < n->n; i++) {
		snprintf(marker, sizeof(marker), "%s.%s", fk.log, n->v[i]);
		if (access(marker, F_OK) == 0)
			return false;
	}
	return true;
}

/* K starts are in flight at once: K `docker run`s are logged while none
 * of their containers is running yet, and no K+1st is begun while the
 * pool still has places free. Stopped, all K are removed. */
static void
test_k_starts_overlap(void **state)
{
	enum { SIZE = 5, K = 3 };
	struct runner_pool *pool;
	struct runner_pool_stats s;
	struct names *n = malloc(sizeof(*n));
	int64_t t0;

	(void)state;
	assert_non_null(n);
	setenv("FAKE_START_DELAY", "60", 1);	/* "created" for 60 s */
	pool = pool_new(SIZE, K);
	assert_int_equal(stats(pool).max_starts, K);
	assert_true(runs_logged_within(n, K, 5000));
	s = stats(pool);
	assert_int_equal(s.starting, K);
	assert_int_equal(s.idle[RUNNER_NET_NONE], 0);
	assert_int_equal(s.started, 0);
	/* Bounded by K, although SIZE - K places are free. */
	usleep(1500000);
	logged_run_names(&fk, n);
	assert_int_equal(n->n, K);
	assert_int_equal(stats(pool).starting, K);
	t0 = time_mono_ms();
	pool_free(pool);
	assert_true(time_mono_ms() - t0 < 10000);
	logged_run_names(&fk, n);
	assert_int_equal(n->n, K);
	assert_true(all_removed_within(&fk, n, 0));
	assert_true(none_left(n));
	free(n);
}

/* Fewer free places than max_starts: only as many starts as places. */
static void
test_starts_bounded_by_places(void **state)
{
	enum { SIZE = 2, K = 8 };
	struct runner_pool *pool;
	struct names *n = malloc(sizeof(*n));

	(void)state;
	assert_non_null(n);
	setenv("FAKE_START_DELAY", "60", 1);
	pool = pool_new(SIZE, K);
	assert_true(runs_logged_within(n, SIZE, 5000));
	usleep(1500000);
	logged_run_names(&fk, n);
	assert_int_equal(n->n, SIZE);
	assert_int_equal(stats(pool).starting, SIZE);
	pool_free(pool);
	assert_true(all_removed_within(&fk, n, 0));
	assert_true(none_left(n));
	free(n);
}

/* Parallel starts fill the pool, and refill it after takes, with every
 * start counted once and nothing failed. */
static void
test_parallel_fill_and_refill(void **state)
{
	enum { SIZE = 4, K = 4, TAKES = 3 };
	struct runner_pool *pool;
	struct runner_pool_stats s;
	struct names *n = malloc(sizeof(*n));

	(void)state;
	assert_non_null(n);
	pool = pool_new(SIZE, K);
	assert_int_equal(runner_pool_wait_full(pool, 10000), 0);
	s = stats(pool);
	assert_int_equal(s.started, SIZE);
	assert_int_equal(s.starting, 0);
	assert_int_equal(s.failed, 0);
	for (int i = 0; i < TAKES; i++) {
		struct runner_request q = { .code = "print(1)\n",
		    .code_len = 9, .pool = pool };
		struct runner_result res;
		char err[256];

		assert_int_equal(runner_run(&fk.cfg, &q, &res, err,
		    sizeof(err)), 0);
		assert_true(res.warm);
		assert_string_equal(res.out, "print(1)\n");
		runner_result_cleanup(&res);
	}
	assert_int_equal(runner_pool_wait_full(pool, 10000), 0);
	s = stats(pool);
	assert_int_equal(s.started, SIZE + TAKES);
	assert_int_equal(s.hits, TAKES);
	assert_int_equal(s.idle[RUNNER_NET_NONE], SIZE);
	logged_run_names(&fk, n);
	assert_int_equal(n->n, SIZE + TAKES);
	pool_free(pool);
	assert_true(all_removed_within(&fk, n, 0));
	assert_true(none_left(n));
	errno = 0;
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
	free(n);
}

/* Issue 22 with K starts in flight: each `docker run` is still inside the
 * create (the fake "daemon" creates the container 1 s after `run`, even
 * once the CLI is killed, and `rm` finds nothing before) when the pool is
 * paused and stopped, as SIGTERM does. Every one is given up (not a
 * failure), removed once it exists, and nothing is left afterwards. */
static void
test_stop_during_k_creates_leaves_nothing(void **state)
{
	enum { SIZE = 4, K = 4 };
	struct runner_pool *pool;
	struct runner_pool_stats s;
	struct names *n = malloc(sizeof(*n));
	int64_t t0;

	(void)state;
	assert_non_null(n);
	setenv("FAKE_CREATE_DELAY", "1", 1);
	setenv("FAKE_START_DELAY", "60", 1);
	pool = pool_new(SIZE, K);
	assert_true(runs_logged_within(n, K, 5000));
	assert_int_equal(stats(pool).starting, K);
	t0 = time_mono_ms();
	runner_pool_pause(pool, true);
	runner_pool_stop(pool);
	assert_true(time_mono_ms() - t0 < 10000);
	s = stats(pool);
	assert_int_equal(s.starting, 0);
	assert_int_equal(s.aborted, K);
	assert_int_equal(s.failed, 0);
	assert_int_equal(s.idle[RUNNER_NET_NONE], 0);
	usleep(1300000);		/* past any late create */
	logged_run_names(&fk, n);
	assert_int_equal(n->n, K);
	assert_true(all_removed_within(&fk, n, 0));
	assert_true(none_left(n));
	pool_free(pool);
	errno = 0;
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
	free(n);
}

/* Runs that missed the pool count against max_starts until they end:
 * with K of them in flight the refill starts nothing, and as they end it
 * starts again, never more than K minus those still in flight. */
static void
test_cold_runs_hold_the_refill(void **state)
{
	enum { SIZE = 4, K = 2 };
	struct runner_pool *pool;
	struct runner_pool_stats s;
	struct names *n = malloc(sizeof(*n));
	size_t before;
	int64_t t0;

	(void)state;
	assert_non_null(n);
	setenv("FAKE_START_DELAY", "60", 1);
	pool = pool_new(SIZE, K);
	/* Paused: whatever it had begun is given up, and it starts nothing
	 * while the cold runs are counted. */
	runner_pool_pause(pool, true);
	t0 = time_mono_ms();
	while (stats(pool).starting != 0 && time_mono_ms() - t0 < 10000)
		usleep(20000);
	assert_int_equal(stats(pool).starting, 0);
	for (int i = 0; i < K; i++)
		runner_pool_count_miss(pool);
	s = stats(pool);
	assert_int_equal(s.cold, K);
	assert_int_equal(s.misses, K);
	logged_run_names(&fk, n);
	before = n->n;
	runner_pool_pause(pool, false);
	usleep(1500000);
	logged_run_names(&fk, n);
	assert_int_equal(n->n, before);
	assert_int_equal(stats(pool).starting, 0);
	/* One ends: one start, and no second while the other runs. */
	runner_pool_cold_done(pool);
	assert_true(runs_logged_within(n, before + 1, 5000));
	usleep(1500000);
	logged_run_names(&fk, n);
	assert_int_equal(n->n, before + 1);
	assert_int_equal(stats(pool).starting, 1);
	/* Both ended: K starts at once again, and no more. */
	runner_pool_cold_done(pool);
	assert_true(runs_logged_within(n, before + K, 5000));
	usleep(1500000);
	logged_run_names(&fk, n);
	assert_int_equal(n->n, before + K);
	s = stats(pool);
	assert_int_equal(s.starting, K);
	assert_int_equal(s.cold, 0);
	pool_free(pool);
	logged_run_names(&fk, n);
	assert_true(all_removed_within(&fk, n, 0));
	assert_true(none_left(n));
	free(n);
}

/* RUNNER_POOL_SHRUNK notes seen, and the idle time the last one said
 * it waited; written on the pool's thread, checked on the test's. */
static int shrunk_notes;
static int64_t shrunk_ms;

static void
count_shrunk(void *arg, const struct runner_pool_note *n)
{
	(void)arg;
	if (n->ev == RUNNER_POOL_SHRUNK) {
		__atomic_store_n(&shrunk_ms, n->ms, __ATOMIC_SEQ_CST);
		__atomic_add_fetch(&shrunk_notes, 1, __ATOMIC_SEQ_CST);
	}
}

/* Polls (50 ms) until the mode's dormancy is want, or ms pass. */
static bool
dormant_within(struct runner_pool *p, bool want, int64_t ms)
{
	int64_t end = time_mono_ms() + ms;

	while (stats(p).dormant[RUNNER_NET_NONE] != want)
		if (time_mono_ms() >= end)
			return false;
		else
			usleep(50000);
	return true;
}

/* One run through the pool: whether it was warm. */
static bool
one_run(struct runner_pool *pool)
{
	struct runner_request q = { .code = "print(1)\n", .code_len = 9,
	    .pool = pool };
	struct runner_result res;
	char err[256];
	bool warm;

	assert_int_equal(runner_run(&fk.cfg, &q, &res, err, sizeof(err)), 0);
	assert_string_equal(res.out, "print(1)\n");
	warm = res.warm;
	runner_result_cleanup(&res);
	return warm;
}

/* idle_s: a full mode that no run asks for in idle_s shrinks to 0 (its
 * containers removed, one SHRUNK note, no start while dormant); a run
 * then starts cold and wakes it, and it refills; runs that keep asking
 * keep it. */
static void
test_idle_shrink_and_wake(void **state)
{
	struct runner_pool_opts o = { .size = 2, .max_age_s = 60,
	    .idle_s = 3, .modes = { true, false }, .on_note = count_shrunk };
	struct runner_pool *pool = NULL;
	struct runner_pool_stats s;
	struct names *n = malloc(sizeof(*n));
	char err[256];
	uint64_t started;
	int64_t t0;

	(void)state;
	assert_non_null(n);
	__atomic_store_n(&shrunk_notes, 0, __ATOMIC_SEQ_CST);
	assert_int_equal(runner_pool_new(&fk.cfg, &o, &pool, err,
	    sizeof(err)), 0);
	live = pool;
	assert_int_equal(runner_pool_wait_full(pool, 10000), 0);
	/* Runs that keep asking (every 300 ms or so, for 1.5 idle times)
	 * keep it warm: the clock restarts at each take. */
	for (t0 = time_mono_ms(); time_mono_ms() - t0 < 4500; ) {
		assert_true(one_run(pool));
		assert_false(stats(pool).dormant[RUNNER_NET_NONE]);
		assert_int_equal(runner_pool_wait_full(pool, 10000), 0);
		usleep(300000);
	}
	assert_int_equal(__atomic_load_n(&shrunk_notes, __ATOMIC_SEQ_CST), 0);
	/* Left alone: shrunk within idle_s and a tick or two, every idle
	 * container removed, none started while dormant. */
	assert_true(dormant_within(pool, true, 8000));
	s = stats(pool);
	assert_int_equal(s.idle[RUNNER_NET_NONE], 0);
	assert_int_equal(s.shrinks, 1);
	logged_run_names(&fk, n);
	assert_true(all_removed_within(&fk, n, 5000));
	started = s.started;
	assert_int_equal(runner_pool_wait_full(pool, 100), 0);	/* not
								 * waited for */
	usleep(1500000);
	s = stats(pool);
	assert_int_equal(s.started, started);
	assert_int_equal(s.starting, 0);
	assert_int_equal(s.idle[RUNNER_NET_NONE], 0);
	assert_int_equal(__atomic_load_n(&shrunk_notes, __ATOMIC_SEQ_CST), 1);
	assert_int_equal(__atomic_load_n(&shrunk_ms, __ATOMIC_SEQ_CST), 3000);
	/* A run asks: cold, and the mode wakes and refills. */
	assert_false(one_run(pool));
	assert_false(stats(pool).dormant[RUNNER_NET_NONE]);
	assert_int_equal(runner_pool_wait_full(pool, 10000), 0);
	s = stats(pool);
	assert_int_equal(s.idle[RUNNER_NET_NONE], 2);
	assert_int_equal(s.started, started + 2);
	assert_true(one_run(pool));
	/* Negative idle times are refused. */
	o.idle_s = -1;
	o.on_note = NULL;
	{
		struct runner_pool *q = (struct runner_pool *)0x1;

		assert_int_equal(runner_pool_new(&fk.cfg, &o, &q, err,
		    sizeof(err)), -EINVAL);
		assert_null(q);
	}
	pool_free(pool);
	free(n);
}

/* Polls (20 ms) until n starts are in flight, or ms pass. */
static bool
starting_within(struct runner_pool *p, int64_t n, int64_t ms)
{
	int64_t end = time_mono_ms() + ms;

	while (stats(p).starting != n)
		if (time_mono_ms() >= end)
			return false;
		else
			usleep(20000);
	return true;
}

/* A refill still starting when its mode shrinks is given up (cut short,
 * its container removed by name), not kept in the dormant mode and not
 * counted as the mode's fill: after the next wake the mode refills, and
 * the run after is warm, even where a start takes longer than the idle
 * time (here 3-4 s against 2 s). */
static void
test_shrink_gives_up_start_in_flight(void **state)
{
	struct runner_pool_opts o = { .size = 1, .max_age_s = 60,
	    .idle_s = 2, .modes = { true, false }, .on_note = count_shrunk };
	struct runner_pool *pool = NULL;
	struct runner_pool_stats s;
	struct names *n = malloc(sizeof(*n));
	char err[256];
	uint64_t aborted;

	(void)state;
	assert_non_null(n);
	__atomic_store_n(&shrunk_notes, 0, __ATOMIC_SEQ_CST);
	setenv("FAKE_START_DELAY", "4", 1);	/* "created" for 3-4 s */
	assert_int_equal(runner_pool_new(&fk.cfg, &o, &pool, err,
	    sizeof(err)), 0);
	live = pool;
	assert_int_equal(runner_pool_wait_full(pool, 15000), 0);
	/* A warm run; its refill begins (within a second: it waits for the
	 * run) and is still starting when the mode shrinks, 2 s after the
	 * take. */
	assert_true(one_run(pool));
	assert_true(starting_within(pool, 1, 1500));
	aborted = stats(pool).aborted;
	assert_true(dormant_within(pool, true, 2500));
	/* Given up and removed by name. */
	assert_true(starting_within(pool, 0, 8000));
	s = stats(pool);
	assert_true(s.dormant[RUNNER_NET_NONE]);
	assert_int_equal(s.idle[RUNNER_NET_NONE], 0);
	assert_int_equal(s.aborted, aborted + 1);
	logged_run_names(&fk, n);
	assert_true(all_removed_within(&fk, n, 5000));
	assert_int_equal(__atomic_load_n(&shrunk_notes, __ATOMIC_SEQ_CST), 1);
	assert_int_equal(__atomic_load_n(&shrunk_ms, __ATOMIC_SEQ_CST), 2000);
	/* A run wakes it: cold; the mode refills although its start takes
	 * longer than the idle time, and the next run is warm. */
	assert_false(one_run(pool));
	assert_false(stats(pool).dormant[RUNNER_NET_NONE]);
	assert_int_equal(runner_pool_wait_full(pool, 15000), 0);
	s = stats(pool);
	assert_false(s.dormant[RUNNER_NET_NONE]);
	assert_int_equal(s.idle[RUNNER_NET_NONE], 1);
	assert_true(one_run(pool));
	assert_int_equal(__atomic_load_n(&shrunk_notes, __ATOMIC_SEQ_CST), 1);
	pool_free(pool);
	free(n);
}

/* 0 is the online CPUs (capped); out of range is refused. */
static void
test_max_starts_option(void **state)
{
	struct runner_pool_opts o = { .size = 1, .max_age_s = 60,
	    .modes = { true, false } };
	struct runner_pool *p = (struct runner_pool *)0x1;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	char err[256];

	(void)state;
	p = pool_new(1, 0);
	assert_int_equal(stats(p).max_starts, cpus < 1 ? 1 :
	    cpus > POOL_STARTS_MAX ? POOL_STARTS_MAX : cpus);
	pool_free(p);
	p = (struct runner_pool *)0x1;
	o.max_starts = -1;
	assert_int_equal(runner_pool_new(&fk.cfg, &o, &p, err, sizeof(err)),
	    -EINVAL);
	assert_null(p);
	o.max_starts = POOL_STARTS_MAX + 1;
	assert_int_equal(runner_pool_new(&fk.cfg, &o, &p, err, sizeof(err)),
	    -EINVAL);
	assert_null(p);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_k_starts_overlap),
		T(test_starts_bounded_by_places),
		T(test_parallel_fill_and_refill),
		T(test_stop_during_k_creates_leaves_nothing),
		T(test_max_starts_option),
		T(test_cold_runs_hold_the_refill),
		T(test_idle_shrink_and_wake),
		T(test_shrink_gives_up_start_in_flight),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
