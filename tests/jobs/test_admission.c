/* Unit tests for the admission table (jobs/admission.c): serve's tenants
 * and limits, the wait list's order (FIFO within a tenant, the first
 * tenant with room across them), withdraw, flush, grants that a hook
 * reports and a drain starts, callbacks that re-enter the table, MCP's
 * 1 + 8, and four threads at once that leave every counter at 0. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "jobs/admission.h"

#define TENANTS "{\"serve\":{\"global_limit\":3,\"queue_max\":4," \
	"\"tenants\":[{\"name\":\"a\",\"token\":\"aaaaaaaaaaaaaaaa\"," \
	"\"max_concurrent\":1,\"max_queue\":3},{\"name\":\"b\"," \
	"\"token\":\"bbbbbbbbbbbbbbbb\",\"max_concurrent\":2," \
	"\"max_queue\":3}]}}"

static void
parse(struct config *c, const char *j)
{
	char err[256];

	assert_int_equal(config_parse(c, j, strlen(j), "t", err, sizeof(err)),
	    0);
}

/* A fake piece of work: its starts and refusals go into a log. */
struct fake {
	struct jobs_wait w;
	const char *id;
	struct jobs_admission *a;
	bool release_on_start;		/* a start that fails and releases */
	struct fake *withdraw_on_refuse;	/* a refuse that re-enters */
	const char *why;
	int starts, refusals;
};

static char flog[256];

static void
log_add(char c, const char *id)
{
	size_t n = strlen(flog);

	snprintf(flog + n, sizeof(flog) - n, "%c%s", c, id);
}

static void
fake_start(struct jobs_wait *w)
{
	struct fake *f = (struct fake *)w;
	struct jobs_admit_stats st;

	/* Never called under the lock: this would deadlock. */
	jobs_admit_stats(f->a, w->tenant, &st);
	assert_int_equal(w->state, JOBS_WAIT_ACTIVE);
	f->starts++;
	log_add('+', f->id);
	if (f->release_on_start)
		jobs_admit_release(f->a, w->tenant);
}

static void
fake_refuse(struct jobs_wait *w, const char *why)
{
	struct fake *f = (struct fake *)w;

	assert_int_equal(w->state, JOBS_WAIT_NONE);
	f->why = why;
	f->refusals++;
	log_add('-', f->id);
	if (f->withdraw_on_refuse != NULL)
		assert_true(jobs_admit_withdraw(f->a,
		    &f->withdraw_on_refuse->w));
}

static int
admit(struct jobs_admission *a, struct fake *f, const char *id,
    size_t tenant)
{
	memset(f, 0, sizeof(*f));
	f->id = id;
	f->a = a;
	f->w.tenant = tenant;
	f->w.start = fake_start;
	f->w.refuse = fake_refuse;
	return jobs_admit(a, &f->w);
}

/* serve's hook on its loop: drain at once. arg points to the table's
 * pointer (the hook is given before the table exists). */
static void
drain_now(void *arg)
{
	jobs_admit_drain(*(struct jobs_admission **)arg);
}

/* A hook that only counts (the owner drains later, on its thread). */
static int hook_calls;

static void
hook_count(void *arg)
{
	(void)arg;
	hook_calls++;
}

static void
check(struct jobs_admission *a, size_t t, int64_t active, int64_t queued,
    int64_t granted)
{
	struct jobs_admit_stats st;

	jobs_admit_stats(a, t, &st);
	if (st.active != active || st.queued != queued ||
	    st.granted != granted)
		fail_msg("tenant %lld: active %lld queued %lld granted %lld, "
		    "not %lld %lld %lld", t == SIZE_MAX ? -1LL : (long long)t,
		    (long long)st.active, (long long)st.queued,
		    (long long)st.granted, (long long)active,
		    (long long)queued, (long long)granted);
}

static struct jobs_admission *
serve_table(struct config *c, const char *j,
    const struct jobs_admission_hooks *h)
{
	struct jobs_admission *a;

	parse(c, j);
	assert_non_null(a = jobs_admission_new(c, JOBS_FRONT_SERVE, h));
	return a;
}

/* Names, tokens and limits from the config (test_serve.c's tenants). */
static void
test_tenants(void **state)
{
	const char *j = "{\"serve\":{\"global_limit\":3,\"queue_max\":2,"
	    "\"tenants\":[{\"name\":\"a\",\"token\":\"aaaaaaaaaaaaaaaa\","
	    "\"max_concurrent\":1,\"max_queue\":0},{\"name\":\"b\","
	    "\"token\":\"bbbbbbbbbbbbbbbb\",\"max_concurrent\":3,"
	    "\"net\":\"proxy\"}]}}";
	struct jobs_admission *a;
	struct jobs_admit_stats st;
	struct fake f[8];
	struct config c;
	(void)state;
	a = serve_table(&c, j, NULL);
	flog[0] = '\0';
	assert_int_equal(jobs_admission_tenants(a), 3);
	assert_string_equal(jobs_admission_name(a, 0), "local");
	assert_string_equal(jobs_admission_name(a, 2), "b");
	assert_null(jobs_admission_name(a, 3));
	assert_int_equal(jobs_admission_by_token(a, "aaaaaaaaaaaaaaaa"), 1);
	assert_int_equal(jobs_admission_by_token(a, "bbbbbbbbbbbbbbbb"), 2);
	assert_int_equal(jobs_admission_by_token(a, "aaaaaaaaaaaaaaa"),
	    -EACCES);
	assert_int_equal(jobs_admission_by_token(a, "aaaaaaaaaaaaaaaaa"),
	    -EACCES);
	assert_int_equal(jobs_admission_by_token(a, ""), -EACCES);
	jobs_admit_stats(a, 0, &st);
	assert_int_equal(st.max_concurrent, 3);
	assert_int_equal(st.max_queue, 2);
	jobs_admit_stats(a, 2, &st);
	assert_int_equal(st.max_queue, 2);
	jobs_admit_stats(a, SIZE_MAX, &st);
	assert_int_equal(st.max_concurrent, 3);
	memset(&f[0], 0, sizeof(f[0]));
	f[0].w.tenant = 3;
	assert_int_equal(jobs_admit(a, &f[0].w), -EINVAL);

	/* a: one at a time, no queue. */
	assert_int_equal(admit(a, &f[0], "a1", 1), 1);
	assert_int_equal(admit(a, &f[1], "a2", 1), -EAGAIN);
	/* b: two more fill the global limit of 3, then it queues up to 2. */
	assert_int_equal(admit(a, &f[2], "b1", 2), 1);
	assert_int_equal(admit(a, &f[3], "b2", 2), 1);
	check(a, SIZE_MAX, 3, 0, 0);
	assert_int_equal(admit(a, &f[4], "b3", 2), 0);
	assert_int_equal(admit(a, &f[5], "b4", 2), 0);
	assert_int_equal(admit(a, &f[6], "b5", 2), -EAGAIN);
	assert_true(jobs_admit_would_reject(a, 2));
	/* a finishes: one of b's queued runs is granted (no hook: it waits
	 * for the owner's drain, holding its slot). */
	jobs_admit_release(a, 1);
	check(a, 2, 3, 1, 1);
	assert_string_equal(flog, "");
	jobs_admit_drain(a);
	assert_string_equal(flog, "+b3");
	check(a, 2, 3, 1, 0);
	/* All 3 slots are b's: a, with no queue, is refused; b may queue
	 * one more. */
	assert_true(jobs_admit_would_reject(a, 1));
	assert_false(jobs_admit_would_reject(a, 2));
	/* b1 ends: b4 is granted its slot at once. */
	jobs_admit_release(a, 2);
	check(a, SIZE_MAX, 3, 0, 1);
	jobs_admit_release(a, 2);
	check(a, SIZE_MAX, 2, 0, 1);
	jobs_admit_drain(a);
	assert_string_equal(flog, "+b3+b4");
	jobs_admit_release(a, 2);
	jobs_admit_release(a, 2);
	check(a, SIZE_MAX, 0, 0, 0);
	assert_int_equal(admit(a, &f[7], "b6", 2), 1);
	jobs_admit_release(a, 2);
	/* A release with nothing held changes nothing. */
	jobs_admit_release(a, 2);
	check(a, SIZE_MAX, 0, 0, 0);
	jobs_admission_free(a);
	jobs_admission_free(NULL);
}

/* would_reject counts nothing (test_serve.c's refusals). */
static void
test_would_reject(void **state)
{
	const char *j = "{\"serve\":{\"tenants\":[{\"name\":\"a\","
	    "\"token\":\"aaaaaaaaaaaaaaaa\",\"max_concurrent\":1,"
	    "\"max_queue\":1}]}}";
	struct jobs_admission *a;
	struct fake f[2];
	struct config c;
	(void)state;
	a = serve_table(&c, j, NULL);
	assert_false(jobs_admit_would_reject(a, 1));
	assert_int_equal(admit(a, &f[0], "a1", 1), 1);
	assert_false(jobs_admit_would_reject(a, 1));
	assert_int_equal(admit(a, &f[1], "a2", 1), 0);
	assert_true(jobs_admit_would_reject(a, 1));
	check(a, 1, 1, 1, 0);
	assert_true(jobs_admit_would_reject(a, 9));
	assert_true(jobs_admit_withdraw(a, &f[1].w));
	jobs_admit_release(a, 1);
	check(a, SIZE_MAX, 0, 0, 0);
	jobs_admission_free(a);
}

/* test_serve.c's test_queue_dispatch on the table, with serve's hook. */
static void
test_dispatch(void **state)
{
	const char *why = "the service is shutting down";
	static struct jobs_admission *a;
	struct jobs_admission_hooks h = { drain_now, &a };
	struct fake fa[9], fb[5];
	struct config c;
	(void)state;
	a = serve_table(&c, TENANTS, &h);
	flog[0] = '\0';

	/* a1, b1, b2 fill the global limit of 3; then both tenants queue,
	 * a up to its max_queue of 3. */
	assert_int_equal(admit(a, &fa[1], "a1", 1), 1);
	assert_int_equal(admit(a, &fb[1], "b1", 2), 1);
	assert_int_equal(admit(a, &fb[2], "b2", 2), 1);
	assert_int_equal(fa[1].w.state, JOBS_WAIT_ACTIVE);
	check(a, SIZE_MAX, 3, 0, 0);
	assert_int_equal(admit(a, &fa[2], "a2", 1), 0);
	assert_int_equal(admit(a, &fb[3], "b3", 2), 0);
	assert_int_equal(admit(a, &fa[3], "a3", 1), 0);
	assert_int_equal(admit(a, &fa[4], "a4", 1), 0);
	assert_int_equal(admit(a, &fa[5], "a5", 1), -EAGAIN);
	assert_int_equal(fa[2].w.state, JOBS_WAIT_QUEUED);
	assert_true(jobs_admit_would_reject(a, 1));
	check(a, SIZE_MAX, 3, 4, 0);
	assert_string_equal(flog, "");

	/* b1 ends: a2 is older but a is at its limit; b3 goes. */
	jobs_admit_release(a, 2);
	assert_string_equal(flog, "+b3");
	check(a, SIZE_MAX, 3, 3, 0);
	/* a1 ends: a2 goes, a3 and a4 stay behind it. */
	jobs_admit_release(a, 1);
	assert_string_equal(flog, "+b3+a2");
	check(a, SIZE_MAX, 3, 2, 0);
	check(a, 1, 1, 2, 0);

	/* a3's client leaves: out, nothing called; twice is nothing. */
	assert_true(jobs_admit_withdraw(a, &fa[3].w));
	assert_int_equal(fa[3].w.state, JOBS_WAIT_NONE);
	check(a, SIZE_MAX, 3, 1, 0);
	assert_false(jobs_admit_withdraw(a, &fa[3].w));
	check(a, SIZE_MAX, 3, 1, 0);
	/* An active one is not withdrawn: it holds its slot. */
	assert_false(jobs_admit_withdraw(a, &fa[2].w));
	check(a, SIZE_MAX, 3, 1, 0);
	assert_string_equal(flog, "+b3+a2");

	/* A new run of a queues behind a4, never ahead. */
	assert_int_equal(admit(a, &fa[6], "a6", 1), 0);
	check(a, SIZE_MAX, 3, 2, 0);
	/* a2 ends: a4 starts, fails and releases its slot (a session's
	 * work whose thread did not start): a6 starts from within. */
	fa[4].release_on_start = true;
	jobs_admit_release(a, 1);
	assert_string_equal(flog, "+b3+a2+a4+a6");
	check(a, SIZE_MAX, 3, 0, 0);
	check(a, 1, 1, 0, 0);

	/* Flush: everything queued is refused, oldest first, with why. */
	assert_int_equal(admit(a, &fa[7], "a7", 1), 0);
	assert_int_equal(admit(a, &fb[4], "b4", 2), 0);
	assert_int_equal(admit(a, &fa[8], "a8", 1), 0);
	check(a, SIZE_MAX, 3, 3, 0);
	assert_int_equal(jobs_admit_flush(a, why), 3);
	assert_string_equal(flog, "+b3+a2+a4+a6-a7-b4-a8");
	assert_ptr_equal(fa[7].why, why);
	assert_ptr_equal(fb[4].why, why);
	assert_ptr_equal(fa[8].why, why);
	assert_int_equal(fa[7].w.state, JOBS_WAIT_NONE);
	check(a, SIZE_MAX, 3, 0, 0);
	assert_int_equal(jobs_admit_flush(a, why), 0);

	/* The last three end. */
	jobs_admit_release(a, 1);
	jobs_admit_release(a, 2);
	jobs_admit_release(a, 2);
	check(a, SIZE_MAX, 0, 0, 0);
	check(a, 1, 0, 0, 0);
	check(a, 2, 0, 0, 0);
	assert_false(jobs_admit_would_reject(a, 1));
	for (size_t i = 1; i < 9; i++)
		assert_true(fa[i].starts + fa[i].refusals <= 1);
	jobs_admission_free(a);
}

/* A grant the owner has not started yet: its client leaves. The slot
 * goes to the next waiter, and the hook says so again. */
static void
test_withdraw_granted(void **state)
{
	struct jobs_admission *a;
	struct jobs_admission_hooks h = { hook_count, NULL };
	struct fake f[4];
	struct config c;
	(void)state;
	a = serve_table(&c, TENANTS, &h);
	flog[0] = '\0';
	hook_calls = 0;
	assert_int_equal(admit(a, &f[0], "a1", 1), 1);
	assert_int_equal(admit(a, &f[1], "a2", 1), 0);
	assert_int_equal(admit(a, &f[2], "a3", 1), 0);
	jobs_admit_release(a, 1);
	assert_int_equal(hook_calls, 1);
	assert_int_equal(f[1].w.state, JOBS_WAIT_GRANTED);
	check(a, 1, 1, 1, 1);
	/* Out, uncounted; a3 gets the slot. */
	assert_true(jobs_admit_withdraw(a, &f[1].w));
	assert_int_equal(f[1].w.state, JOBS_WAIT_NONE);
	assert_int_equal(hook_calls, 2);
	assert_int_equal(f[2].w.state, JOBS_WAIT_GRANTED);
	check(a, 1, 1, 0, 1);
	check(a, SIZE_MAX, 1, 0, 1);
	/* A flush leaves grants alone: they start. */
	assert_int_equal(jobs_admit_flush(a, "x"), 0);
	jobs_admit_drain(a);
	assert_string_equal(flog, "+a3");
	assert_int_equal(f[1].starts, 0);
	check(a, 1, 1, 0, 0);
	/* The last grant withdrawn frees its slot for nobody. */
	assert_int_equal(admit(a, &f[3], "a4", 1), 0);
	jobs_admit_release(a, 1);
	assert_int_equal(hook_calls, 3);
	assert_true(jobs_admit_withdraw(a, &f[3].w));
	assert_int_equal(hook_calls, 3);
	check(a, SIZE_MAX, 0, 0, 0);
	jobs_admit_drain(a);
	assert_string_equal(flog, "+a3");
	jobs_admission_free(a);
}

/* A refuse that re-enters the table (a session's dropped work that takes
 * its sibling out of the queue) and one that admits anew. */
static void
test_refuse_reenters(void **state)
{
	static struct jobs_admission *a;
	struct jobs_admission_hooks h = { drain_now, &a };
	struct fake f[5];
	struct config c;
	(void)state;
	a = serve_table(&c, TENANTS, &h);
	flog[0] = '\0';
	assert_int_equal(admit(a, &f[0], "a1", 1), 1);
	assert_int_equal(admit(a, &f[1], "a2", 1), 0);
	assert_int_equal(admit(a, &f[2], "a3", 1), 0);
	assert_int_equal(admit(a, &f[3], "a4", 1), 0);
	f[1].withdraw_on_refuse = &f[2];
	assert_int_equal(jobs_admit_flush(a, "stopped by kill-all"), 2);
	assert_string_equal(flog, "-a2-a4");
	assert_int_equal(f[2].refusals, 0);
	assert_int_equal(f[2].w.state, JOBS_WAIT_NONE);
	check(a, SIZE_MAX, 1, 0, 0);
	/* The table is whole: a release with a new waiter starts it. */
	assert_int_equal(admit(a, &f[4], "a5", 1), 0);
	jobs_admit_release(a, 1);
	assert_string_equal(flog, "-a2-a4+a5");
	jobs_admit_release(a, 1);
	check(a, SIZE_MAX, 0, 0, 0);
	jobs_admission_free(a);
}

/* MCP: one call at a time and 8 waiting; the 10th is refused. */
static void
test_mcp(void **state)
{
	struct jobs_admission *a;
	struct jobs_admit_stats st;
	struct fake f[10];
	struct config c;
	char id[10][4];
	(void)state;
	config_defaults(&c);
	assert_non_null(a = jobs_admission_new(&c, JOBS_FRONT_MCP, NULL));
	assert_int_equal(jobs_admission_tenants(a), 1);
	assert_int_equal(jobs_admission_by_token(a, "aaaaaaaaaaaaaaaa"),
	    -EACCES);
	jobs_admit_stats(a, SIZE_MAX, &st);
	assert_int_equal(st.max_concurrent, 1);
	assert_int_equal(st.max_queue, 8);
	flog[0] = '\0';
	for (int i = 0; i < 10; i++) {
		snprintf(id[i], sizeof(id[i]), "%d", i + 1);
		assert_int_equal(admit(a, &f[i], id[i], 0),
		    i == 0 ? 1 : i < 9 ? 0 : -EAGAIN);
	}
	check(a, 0, 1, 8, 0);
	assert_true(jobs_admit_would_reject(a, 0));
	/* A waiter admitted again is refused, and the table's list stays
	 * whole; a refused one is out (NONE), whatever it held before. */
	assert_int_equal(jobs_admit(a, &f[1].w), -EBUSY);
	assert_int_equal(f[1].w.state, JOBS_WAIT_QUEUED);
	check(a, 0, 1, 8, 0);
	f[9].w.state = JOBS_WAIT_ACTIVE;	/* a stale state, say */
	assert_int_equal(jobs_admit(a, &f[9].w), -EAGAIN);
	assert_int_equal(f[9].w.state, JOBS_WAIT_NONE);
	/* One at a time, in order. */
	for (int i = 1; i < 9; i++) {
		jobs_admit_release(a, 0);
		jobs_admit_drain(a);
		check(a, 0, 1, 8 - i, 0);
	}
	assert_string_equal(flog, "+2+3+4+5+6+7+8+9");
	assert_true(jobs_admit_release(a, 0));
	check(a, SIZE_MAX, 0, 0, 0);
	/* One release too many: said, and the counters stay whole. */
	assert_false(jobs_admit_release(a, 0));
	check(a, SIZE_MAX, 0, 0, 0);
	jobs_admission_free(a);
}

/* Four threads admit, withdraw and release at random, each start on
 * whichever thread's release granted it; the limits hold throughout and
 * every counter ends at 0. */
#define STRESS_THREADS 4
#define STRESS_SLOTS 6
#define STRESS_ROUNDS 20000

struct sfake {
	struct jobs_wait w;
	atomic_int started;
	bool in;			/* admitted, not yet released/out */
};

static struct jobs_admission *stress_a;
static atomic_int stress_bad, stress_starts, stress_releases;

static void
stress_drain(void *arg)
{
	(void)arg;
	jobs_admit_drain(stress_a);
}

static void
stress_start(struct jobs_wait *w)
{
	struct sfake *f = (struct sfake *)w;
	struct jobs_admit_stats st, all;

	jobs_admit_stats(stress_a, w->tenant, &st);
	jobs_admit_stats(stress_a, SIZE_MAX, &all);
	if (st.active > st.max_concurrent || all.active > all.max_concurrent)
		atomic_fetch_add(&stress_bad, 1);
	if (atomic_exchange(&f->started, 1) != 0)
		atomic_fetch_add(&stress_bad, 1);
	atomic_fetch_add(&stress_starts, 1);
}

static void
stress_refuse(struct jobs_wait *w, const char *why)
{
	(void)w;
	(void)why;
	atomic_fetch_add(&stress_bad, 1);
}

/* f's start may be running on another thread: wait for it. */
static void
stress_release(struct sfake *f)
{
	while (atomic_load(&f->started) == 0)
		sched_yield();
	jobs_admit_release(stress_a, f->w.tenant);
	atomic_fetch_add(&stress_releases, 1);
	f->in = false;
}

static void *
stress_thread(void *arg)
{
	struct sfake f[STRESS_SLOTS];
	unsigned seed = (unsigned)(uintptr_t)arg;

	memset(f, 0, sizeof(f));
	for (int r = 0; r < STRESS_ROUNDS; r++) {
		struct sfake *s = &f[rand_r(&seed) % STRESS_SLOTS];
		int rc;

		if (!s->in) {
			memset(&s->w, 0, sizeof(s->w));
			s->w.tenant = rand_r(&seed) % 3;
			s->w.start = stress_start;
			s->w.refuse = stress_refuse;
			atomic_store(&s->started, 0);
			rc = jobs_admit(stress_a, &s->w);
			if (rc == 1)
				atomic_store(&s->started, 1);
			s->in = rc >= 0;
		} else if (rand_r(&seed) % 3 == 0 &&
		    jobs_admit_withdraw(stress_a, &s->w)) {
			if (atomic_load(&s->started) != 0)
				atomic_fetch_add(&stress_bad, 1);
			s->in = false;
		} else if (atomic_load(&s->started) != 0) {
			stress_release(s);
		}
	}
	for (int i = 0; i < STRESS_SLOTS; i++)
		if (f[i].in && !jobs_admit_withdraw(stress_a, &f[i].w))
			stress_release(&f[i]);
	return NULL;
}

static void
test_stress(void **state)
{
	struct jobs_admission_hooks h = { stress_drain, NULL };
	pthread_t th[STRESS_THREADS];
	struct config c;
	(void)state;
	parse(&c, TENANTS);
	assert_non_null(stress_a = jobs_admission_new(&c, JOBS_FRONT_SERVE,
	    &h));
	for (uintptr_t i = 0; i < STRESS_THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, stress_thread,
		    (void *)(i + 1)), 0);
	for (int i = 0; i < STRESS_THREADS; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	jobs_admit_drain(stress_a);
	assert_int_equal(atomic_load(&stress_bad), 0);
	/* Many came from the queue, granted on another thread's release. */
	assert_true(atomic_load(&stress_starts) > 100);
	assert_true(atomic_load(&stress_releases) >= atomic_load(&stress_starts));
	check(stress_a, SIZE_MAX, 0, 0, 0);
	for (size_t t = 0; t < 3; t++)
		check(stress_a, t, 0, 0, 0);
	jobs_admission_free(stress_a);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tenants),
		cmocka_unit_test(test_would_reject),
		cmocka_unit_test(test_dispatch),
		cmocka_unit_test(test_withdraw_granted),
		cmocka_unit_test(test_refuse_reenters),
		cmocka_unit_test(test_mcp),
		cmocka_unit_test(test_stress),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
