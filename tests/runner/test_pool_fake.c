/* Unit tests of the warm pool (runner/pool.c) and its use by runner_run,
 * against the fake docker CLI (tests/runner/fake-docker.sh): in mode "ok"
 * its `run` is `cat` (python waiting for its program on stdin is cat
 * waiting), `inspect --format={{.State.Status}}` says "running" for a
 * container it started (or "created" for $FAKE_START_DELAY seconds), and
 * every call lands in $FAKE_LOG, which is what these tests read: which
 * containers were started with which argv, and which were removed. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/config.h"
#include "common/util.h"
#include "runner/docker_argv.h"
#include "runner/pool.h"
#include "runner/pool_conf.h"
#include "runner/runner.h"
#include "fake_docker.h"
#include "fake_pool.h"

static struct fake_docker fk;
static struct runner_pool *live;	/* freed by teardown if a test failed */
static struct runner_pools *live_ps;	/* likewise */

static int
setup(void **state)
{
	(void)state;
	/* Only while no pool thread runs: it forks with this environment. */
	setenv("FAKE_MODE", "ok", 1);
	unsetenv("FAKE_START_DELAY");
	return fake_docker_setup(&fk);
}

static int
teardown(void **state)
{
	(void)state;
	runner_pool_free(live);
	live = NULL;
	runner_pools_free(live_ps);
	live_ps = NULL;
	unsetenv("FAKE_START_DELAY");
	unsetenv("FAKE_CREATE_DELAY");
	return fake_docker_teardown(&fk);
}

static struct runner_pool *
pool_new(int64_t size, int64_t max_age_s)
{
	struct runner_pool_opts o = { .size = size, .max_age_s = max_age_s,
	    .modes = { true, false } };
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

static size_t
count_runs(void)
{
	struct names *n = malloc(sizeof(*n));
	char *log = fake_docker_log(&fk);
	size_t c;

	assert_non_null(n);
	run_names(log, n);
	c = n->n;
	free(log);
	free(n);
	return c;
}

/* The `run` line that started NAME (copied; caller frees), or NULL. Fails
 * the test when more than one line started it. */
static char *
run_line(const char *log, const char *name)
{
	char want[96];
	const char *hit = NULL;
	size_t len;
	char *line;

	snprintf(want, sizeof(want), " --name %s ", name);
	for (const char *l = log; *l != '\0'; ) {
		const char *end = strchr(l, '\n');

		if (end == NULL)
			end = l + strlen(l);
		if (strncmp(l, "run ", 4) == 0) {
			const char *m = strstr(l, want);

			if (m != NULL && m < end) {
				assert_null(hit);	/* started once */
				hit = l;
			}
		}
		l = *end != '\0' ? end + 1 : end;
	}
	if (hit == NULL)
		return NULL;
	len = strcspn(hit, "\n");
	assert_non_null(line = malloc(len + 1));
	memcpy(line, hit, len);
	line[len] = '\0';
	return line;
}

/* A `run` line with the per-container values (the name, the owner pid,
 * deadline and session labels) blanked out; caller frees. */
static char *
normalize(const char *line)
{
	static const char *const vary[] = { "cordon.owner_pid=",
	    "cordon.deadline=", "cordon.session=" };
	char *copy = strdup(line), *out = calloc(1, strlen(line) + 64 * 4);
	char *tok, *save = NULL;
	bool after_name = false;

	assert_non_null(copy);
	assert_non_null(out);
	for (tok = strtok_r(copy, " ", &save); tok != NULL;
	    tok = strtok_r(NULL, " ", &save)) {
		const char *t = tok;

		if (after_name)
			t = "NAME";
		for (size_t i = 0; i < 3; i++)
			if (strncmp(tok, vary[i], strlen(vary[i])) == 0)
				t = vary[i];
		if (out[0] != '\0')
			strcat(out, " ");
		strcat(out, t);
		after_name = strcmp(tok, "--name") == 0;
	}
	free(copy);
	return out;
}

/* The value of label KEY= in a run line. */
static long long
label_value(const char *line, const char *key)
{
	const char *v = strstr(line, key);

	assert_non_null(v);
	return strtoll(v + strlen(key), NULL, 10);
}

static bool
removed_after(size_t off, const char *name)
{
	char *log = fake_docker_log(&fk);
	bool yes = strlen(log) >= off && fake_docker_removed(log + off, name);

	free(log);
	return yes;
}

static bool
in_names(const struct names *n, const char *name)
{
	for (size_t i = 0; i < n->n; i++)
		if (strcmp(n->v[i], name) == 0)
			return true;
	return false;
}

/* Polls until a start is in progress, or ms pass. */
static bool
starting_within(struct runner_pool *p, int64_t ms)
{
	int64_t end = time_mono_ms() + ms;

	while (stats(p).starting == 0) {
		if (time_mono_ms() >= end)
			return false;
		usleep(20000);
	}
	return true;
}

static int
run_code(struct runner_pool *pool, const char *code,
    struct runner_result *res)
{
	struct runner_request q = { .code = code, .code_len = strlen(code),
	    .pool = pool };
	char err[256];
	int rc = runner_run(&fk.cfg, &q, res, err, sizeof(err));

	if (rc < 0)
		fprintf(stderr, "runner_run: %s\n", err);
	return rc;
}

/* The pool fills to N for the kept mode only, and its containers are
 * started by the very argv of a cold run (the full hardening set) but
 * for the command, which is the holder; the job's python comes by one
 * `docker exec -i NAME` of the cold run's command, with no option. */
static void
test_fills_with_cold_argv(void **state)
{
	enum { N = 3 };
	struct runner_pool *pool;
	struct runner_pool_stats s;
	struct runner_result res;
	struct names *n = malloc(sizeof(*n));
	long long t0 = (long long)(time_wall_ms() / 1000);
	char *log, *cold, *cold_norm;

	(void)state;
	assert_non_null(n);
	pool = pool_new(N, 60);
	assert_int_equal(runner_pool_wait_full(pool, 10000), 0);
	s = stats(pool);
	assert_int_equal(s.idle[RUNNER_NET_NONE], N);
	assert_int_equal(s.idle[RUNNER_NET_PROXY], 0);
	assert_int_equal(s.starting, 0);
	assert_int_equal(s.failed, 0);
	assert_int_equal(s.started, N);
	assert_string_equal(s.last_error, "");

	/* A cold run, for the argv to compare with. */
	assert_int_equal(run_code(NULL, "print(1)\n", &res), 0);
	assert_false(res.warm);
	log = fake_docker_log(&fk);
	run_names(log, n);
	assert_int_equal(n->n, N + 1);
	assert_string_equal(n->v[N], res.container);
	assert_non_null(cold = run_line(log, res.container));
	assert_non_null(strstr(cold, " --read-only "));
	assert_non_null(strstr(cold, " --cap-drop=ALL "));
	assert_true(strlen(cold) > 5 && strcmp(cold + strlen(cold) - 5,
	    " -I -") == 0);
	cold_norm = normalize(cold);
	/* The holder instead of the job's "python3 -I -". */
	cold_norm[strlen(cold_norm) - 1] = '\0';
	strcat(cold_norm, "-c " DARGV_HOLDER);
	for (size_t i = 0; i < N; i++) {
		char *line = run_line(log, n->v[i]), *norm, want[128];

		assert_non_null(line);
		assert_string_not_equal(n->v[i], res.container);
		norm = normalize(line);
		assert_string_equal(norm, cold_norm);
		snprintf(want, sizeof(want), "\nexec -i %s python3 -I -\n",
		    n->v[i]);
		assert_non_null(strstr(log, want));
		assert_non_null(strstr(line, " cordon.session=pool "));
		/* `cordon gc` leaves it alone while it may idle for the
		 * max age and then run for the longest timeout. */
		assert_true(label_value(line, "cordon.deadline=") >=
		    t0 + 60 + fk.cfg.limits.max_timeout_s + 30);
		free(norm);
		free(line);
	}
	free(cold_norm);
	free(cold);
	free(log);
	runner_result_cleanup(&res);
	pool_free(pool);
	free(n);
}

/* Runs take warm containers (the code reaches the waiting `cat`), each
 * container serves one run only, and every one is removed after its run. */
static void
test_runs_take_each_once(void **state)
{
	enum { N = 2, RUNS = 2 * N + 2 };
	struct runner_pool *pool;
	struct runner_pool_stats s;
	char used[RUNS][RUNNER_NAME_MAX];
	uint64_t warm = 0;

	(void)state;
	pool = pool_new(N, 60);
	assert_int_equal(runner_pool_wait_full(pool, 10000), 0);
	for (int i = 0; i < RUNS; i++) {
		struct runner_result res;
		char code[64], *log, *line;
		size_t off;

		snprintf(code, sizeof(code), "print('run %d')\n", i);
		log = fake_docker_log(&fk);
		off = strlen(log);
		free(log);
		assert_int_equal(run_code(pool, code, &res), 0);
		if (i < N)
			assert_true(res.warm);
		warm += res.warm;
		assert_int_equal(res.status, RUNNER_OK);
		assert_int_equal(res.exit_code, 3);
		assert_string_equal(res.out, code);	/* fake echoes stdin */
		assert_string_equal(res.err, "to-stderr\n");
		for (int j = 0; j < i; j++)
			assert_string_not_equal(used[j], res.container);
		util_strlcpy(used[i], res.container, sizeof(used[i]));
		/* Removed after it: a cold run before it returns, a warm
		 * one's after its answer, by the pool. */
		if (!res.warm)
			assert_true(removed_after(off, res.container));
		for (int k = 0; k < 200 && !removed_after(off, res.container);
		    k++)
			usleep(50000);
		assert_true(removed_after(off, res.container));
		log = fake_docker_log(&fk);
		line = run_line(log, res.container);	/* started once */
		assert_non_null(line);
		/* A warm one was started before the run, a cold one by it. */
		if (res.warm)
			assert_true(strstr(log, line) < log + off);
		else
			assert_true(strstr(log, line) >= log + off);
		free(line);
		free(log);
		runner_result_cleanup(&res);
	}
	s = stats(pool);
	assert_true(warm >= N);
	assert_int_equal(s.hits, warm);
	assert_int_equal(s.misses, RUNS - warm);
	/* It refills after the takes. */
	assert_int_equal(runner_pool_wait_full(pool, 10000), 0);
	pool_free(pool);
}

/* --in and --out runs start cold (a miss) and leave the pool alone. */
static void
test_files_run_cold(void **state)
{
	struct runner_pool *pool;
	struct runner_pool_stats s;
	struct runner_request q = { .code = "x", .code_len = 1 };
	struct runner_result res;
	char in[160], out[160], err[256], *log, *line;

	(void)state;
	snprintf(in, sizeof(in), "%s/input.txt", fk.dir);
	snprintf(out, sizeof(out), "%s/out", fk.dir);
	assert_int_equal(util_write_file_atomic(in, "data", 4, 0644), 0);
	pool = pool_new(1, 60);
	assert_int_equal(runner_pool_wait_full(pool, 10000), 0);
	q.pool = pool;

	q.in[0] = in;
	q.nin = 1;
	assert_int_equal(runner_run(&fk.cfg, &q, &res, err, sizeof(err)), 0);
	assert_false(res.warm);
	assert_string_equal(res.out, "x");
	log = fake_docker_log(&fk);
	assert_non_null(line = run_line(log, res.container));
	assert_non_null(strstr(line, " --mount "));
	free(line);
	free(log);
	runner_result_cleanup(&res);
	s = stats(pool);
	assert_int_equal(s.misses, 1);
	assert_int_equal(s.hits, 0);
	assert_int_equal(s.idle[RUNNER_NET_NONE], 1);

	q.nin = 0;
	q.out_dir = out;
	assert_int_equal(runner_run(&fk.cfg, &q, &res, err, sizeof(err)), 0);
	assert_false(res.warm);
	assert_true(res.want_files);
	runner_result_cleanup(&res);
	s = stats(pool);
	assert_int_equal(s.misses, 2);
	assert_int_equal(s.hits, 0);
	assert_int_equal(s.idle[RUNNER_NET_NONE], 1);

	/* The pool was usable all along. */
	q.out_dir = NULL;
	assert_int_equal(runner_run(&fk.cfg, &q, &res, err, sizeof(err)), 0);
	assert_true(res.warm);
	runner_result_cleanup(&res);
	s = stats(pool);
	assert_int_equal(s.hits, 1);
	assert_int_equal(s.misses, 2);
	pool_free(pool);
}

/* Starts that take DELAY s: a run meanwhile starts cold at once. */
static void
test_empty_pool_does_not_wait(void **state)
{
	enum { DELAY_S = 3 };
	struct runner_pool *pool;
	struct runner_pool_stats s;
	struct runner_result res;
	struct names *n = malloc(sizeof(*n));
	char cold[RUNNER_NAME_MAX];
	const char *pooled;
	long long ready;
	char *log, *line;
	int64_t t0;

	(void)state;
	assert_non_null(n);
	setenv("FAKE_START_DELAY", "3", 1);
	pool = pool_new(1, 60);
	assert_true(starting_within(pool, 5000));
	t0 = time_mono_ms();
	assert_int_equal(run_code(pool, "print(2)\n", &res), 0);
	assert_true(time_mono_ms() - t0 < DELAY_S * 1000 / 2);
	assert_false(res.warm);
	assert_int_equal(res.status, RUNNER_OK);
	assert_string_equal(res.out, "print(2)\n");
	util_strlcpy(cold, res.container, sizeof(cold));
	runner_result_cleanup(&res);
	s = stats(pool);
	assert_int_equal(s.misses, 1);
	assert_int_equal(s.hits, 0);
	assert_int_equal(s.idle[RUNNER_NET_NONE], 0);
	/* The slow start does complete, and then serves a run. */
	assert_int_equal(runner_pool_wait_full(pool, 4 * DELAY_S * 1000), 0);
	ready = (long long)(time_wall_ms() / 1000);
	/* Its `cordon gc` deadline still covers the max age and the longest
	 * run counted from when it became ready, not from its `docker run`.
	 * (Which of the two run lines came first depends on scheduling.) */
	log = fake_docker_log(&fk);
	run_names(log, n);
	assert_int_equal(n->n, 2);
	assert_true(in_names(n, cold));
	pooled = n->v[strcmp(n->v[0], cold) == 0 ? 1 : 0];
	assert_non_null(line = run_line(log, pooled));
	assert_true(label_value(line, "cordon.deadline=") >=
	    ready + 60 + fk.cfg.limits.max_timeout_s + 30);
	free(line);
	free(log);
	free(n);
	assert_int_equal(run_code(pool, "print(3)\n", &res), 0);
	assert_true(res.warm);
	assert_string_equal(res.out, "print(3)\n");
	runner_result_cleanup(&res);
	pool_free(pool);
}

/* A start that hangs (never "running") neither delays runner_pool_free
 * nor survives a pause: both cut it short and remove its container. */
static void
test_slow_start_cut_by_pause_and_free(void **state)
{
	struct runner_pool *pool;
	struct runner_pool_stats s;
	struct names *n = malloc(sizeof(*n));
	int64_t t0;

	(void)state;
	assert_non_null(n);
	setenv("FAKE_START_DELAY", "60", 1);
	pool = pool_new(1, 60);
	assert_true(starting_within(pool, 5000));
	runner_pool_pause(pool, true);
	t0 = time_mono_ms();
	while (stats(pool).starting != 0 && time_mono_ms() - t0 < 5000)
		usleep(20000);
	s = stats(pool);
	assert_int_equal(s.starting, 0);
	assert_int_equal(s.idle[RUNNER_NET_NONE], 0);
	/* Cut short on purpose: not a failure, no error to report. */
	assert_int_equal(s.failed, 0);
	assert_string_equal(s.last_error, "");
	/* Its container is removed. (Cut early enough, the fake may not
	 * have logged its `run` line yet: at most one.) */
	logged_run_names(&fk, n);
	assert_true(n->n <= 1);
	assert_true(all_removed_within(&fk, n, 5000));

	runner_pool_pause(pool, false);
	assert_true(starting_within(pool, 5000));
	t0 = time_mono_ms();
	pool_free(pool);
	assert_true(time_mono_ms() - t0 < 5000);
	logged_run_names(&fk, n);
	assert_true(n->n <= 2);
	assert_true(all_removed_within(&fk, n, 0));
	free(n);
}

/* Issue 22: a start given up while its `docker run` is still inside the
 * create (the fake's "daemon" creates the container 0.5 s after `run`,
 * even if the CLI is killed meanwhile, and `rm` finds nothing before) is
 * removed once it exists: nothing appears after runner_pool_stop. */
static void
test_stop_during_create_leaves_nothing(void **state)
{
	struct runner_pool *pool;
	struct names *n = malloc(sizeof(*n));
	char marker[256];
	int64_t t0;

	(void)state;
	assert_non_null(n);
	setenv("FAKE_CREATE_DELAY", "0.5", 1);
	pool = pool_new(1, 60);
	assert_true(starting_within(pool, 5000));
	usleep(100000);			/* `run` spawned; no container yet */
	t0 = time_mono_ms();
	runner_pool_pause(pool, true);	/* what SIGTERM does first */
	runner_pool_stop(pool);
	assert_true(time_mono_ms() - t0 < 5000);
	assert_int_equal(stats(pool).aborted, 1);
	assert_int_equal(stats(pool).failed, 0);
	usleep(800000);			/* past any late create */
	logged_run_names(&fk, n);
	assert_int_equal(n->n, 1);
	snprintf(marker, sizeof(marker), "%s.%s", fk.log, n->v[0]);
	assert_int_equal(access(marker, F_OK), -1);	/* not left */
	assert_true(all_removed_within(&fk, n, 0));
	unsetenv("FAKE_CREATE_DELAY");
	pool_free(pool);
	free(n);
}

/* Idle containers older than the max age are removed and replaced. */
static void
test_max_age_replaces(void **state)
{
	enum { N = 2 };
	struct runner_pool *pool;
	struct runner_pool_stats s;
	struct names *first = malloc(sizeof(*first));
	struct names *now = malloc(sizeof(*now));
	size_t fresh = 0;
	int64_t t0;
	char *log;

	(void)state;
	assert_non_null(first);
	assert_non_null(now);
	t0 = time_mono_ms();
	pool = pool_new(N, 1);
	/* (With a 1 s max age the pool churns: idle may already be below
	 * N again by the time anything is read after this.) */
	assert_int_equal(runner_pool_wait_full(pool, 10000), 0);
	/* Not retired before its age passed the max: none is older than
	 * the pool. */
	while (stats(pool).retired == 0 && time_mono_ms() - t0 < 8000)
		usleep(20000);
	assert_true(stats(pool).retired > 0);
	assert_true(time_mono_ms() - t0 >= 1000);
	while (stats(pool).retired < N && time_mono_ms() - t0 < 8000)
		usleep(50000);
	assert_true(stats(pool).retired >= N);
	/* The first N started are the first retired (oldest first). */
	log = fake_docker_log(&fk);
	run_names(log, first);
	free(log);
	assert_true(first->n >= N);
	first->n = N;
	assert_true(all_removed_within(&fk, first, 5000));
	assert_int_equal(runner_pool_wait_full(pool, 10000), 0);
	s = stats(pool);
	assert_true(s.started >= 2 * N);
	assert_int_equal(s.failed, 0);
	log = fake_docker_log(&fk);
	run_names(log, now);
	free(log);
	for (size_t i = 0; i < now->n; i++)
		fresh += !in_names(first, now->v[i]);
	assert_true(fresh >= N);
	pool_free(pool);
	free(first);
	free(now);
}

/* Paused: the idle containers are removed, none is started (and none is
 * handed out); unpaused, it refills. */
static void
test_pause_empties_and_stops(void **state)
{
	enum { N = 2 };
	struct runner_pool *pool;
	struct runner_pool_stats s;
	struct runner_result res;
	struct names *n = malloc(sizeof(*n));
	size_t runs;
	int64_t t0;

	(void)state;
	assert_non_null(n);
	pool = pool_new(N, 60);
	assert_int_equal(runner_pool_wait_full(pool, 10000), 0);
	logged_run_names(&fk, n);
	assert_int_equal(n->n, N);

	runner_pool_pause(pool, true);
	t0 = time_mono_ms();
	while (stats(pool).idle[RUNNER_NET_NONE] != 0 &&
	    time_mono_ms() - t0 < 5000)
		usleep(20000);
	assert_int_equal(stats(pool).idle[RUNNER_NET_NONE], 0);
	assert_true(all_removed_within(&fk, n, 5000));
	assert_true(stats(pool).retired >= N);

	/* While paused, runs start cold (counted against the refill's
	 * starts only while they run)... */
	assert_int_equal(run_code(pool, "print(4)\n", &res), 0);
	assert_false(res.warm);
	runner_result_cleanup(&res);
	assert_int_equal(stats(pool).cold, 0);
	assert_true(stats(pool).misses >= 1);
	/* ... and the pool starts nothing. */
	runs = count_runs();
	sleep(2);
	assert_int_equal(count_runs(), runs);
	s = stats(pool);
	assert_int_equal(s.idle[RUNNER_NET_NONE], 0);
	assert_int_equal(s.starting, 0);

	runner_pool_pause(pool, false);
	assert_int_equal(runner_pool_wait_full(pool, 10000), 0);
	assert_int_equal(count_runs(), runs + N);
	pool_free(pool);
	free(n);
}

/* A pooled container whose CLI died is never handed out, and is
 * removed and replaced. */
static pid_t
cli_pid_of(const char *name)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	pid_t found = -1;

	assert_non_null(d);
	while (found < 0 && (de = readdir(d)) != NULL) {
		char path[300], *text = NULL;
		size_t len = 0;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
		if (util_read_file(path, 1 << 16, &text, &len) < 0)
			continue;
		/* NUL-separated argv: "...\0run\0-i\0--name\0NAME\0..." */
		for (size_t i = 0; i + 7 < len; i++) {
			if (memcmp(text + i, "--name", 7) == 0 &&
			    strcmp(text + i + 7, name) == 0 &&
			    memmem(text, len, "\0run\0", 5) != NULL) {
				found = (pid_t)strtol(de->d_name, NULL, 10);
				break;
			}
		}
		free(text);
	}
	closedir(d);
	return found;
}

static void
test_dead_container_replaced(void **state)
{
	struct runner_pool *pool;
	struct runner_result res;
	struct names *n = malloc(sizeof(*n));
	pid_t pid;
	int64_t t0;

	(void)state;
	assert_non_null(n);
	pool = pool_new(1, 60);
	assert_int_equal(runner_pool_wait_full(pool, 10000), 0);
	logged_run_names(&fk, n);
	assert_int_equal(n->n, 1);
	assert_true((pid = cli_pid_of(n->v[0])) > 0);
	assert_int_equal(kill(pid, SIGKILL), 0);
	usleep(100000);
	/* Not handed out, whether or not the pool has noticed yet. */
	assert_int_equal(run_code(pool, "print(5)\n", &res), 0);
	assert_string_not_equal(res.container, n->v[0]);
	assert_string_equal(res.out, "print(5)\n");
	runner_result_cleanup(&res);
	t0 = time_mono_ms();
	while (stats(pool).retired < 1 && time_mono_ms() - t0 < 5000)
		usleep(20000);
	assert_int_equal(stats(pool).retired, 1);
	assert_true(all_removed_within(&fk, n, 5000));
	assert_int_equal(runner_pool_wait_full(pool, 10000), 0);
	pool_free(pool);
	free(n);
}

/* runner_pool_free removes every idle container and leaves no child. */
static void
test_free_removes_idle(void **state)
{
	enum { N = 3 };
	struct runner_pool *pool;
	struct names *n = malloc(sizeof(*n));

	(void)state;
	assert_non_null(n);
	pool = pool_new(N, 60);
	assert_int_equal(runner_pool_wait_full(pool, 10000), 0);
	logged_run_names(&fk, n);
	assert_int_equal(n->n, N);
	pool_free(pool);
	assert_true(all_removed_within(&fk, n, 0));
	/* Every `docker run` CLI was killed and reaped. */
	errno = 0;
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
	free(n);
}

static void
test_bad_options(void **state)
{
	struct runner_pool_opts o = { .size = 0, .max_age_s = 60,
	    .modes = { true, false } };
	struct runner_pool *p = (struct runner_pool *)0x1;
	char err[256];

	(void)state;
	assert_int_equal(runner_pool_new(&fk.cfg, &o, &p, err, sizeof(err)),
	    -EINVAL);
	assert_null(p);
	o.size = POOL_MAX_SIZE + 1;
	assert_int_equal(runner_pool_new(&fk.cfg, &o, &p, err, sizeof(err)),
	    -EINVAL);
	o.size = 1;
	o.max_age_s = 0;
	assert_int_equal(runner_pool_new(&fk.cfg, &o, &p, err, sizeof(err)),
	    -EINVAL);
	runner_pool_free(NULL);
}

/* One python run in profile (NULL: the language's) through pool: 0 and
 * whether it was warm. */
static bool
run_in(const struct config *c, struct runner_pool *pool, const char *profile)
{
	struct runner_request q = { .code = "print(1)\n", .code_len = 9,
	    .pool = pool, .profile = profile };
	struct runner_result res;
	char err[256];
	bool warm;

	assert_int_equal(runner_run(c, &q, &res, err, sizeof(err)), 0);
	assert_int_equal(res.status, RUNNER_OK);
	warm = res.warm;
	runner_result_cleanup(&res);
	return warm;
}

/* *c: the fake's config, with profile data's image pinned (a pool of
 * python in profile data can start). */
static void
data_config(struct config *c)
{
	*c = fk.cfg;
	for (size_t i = 0; i < c->image.nprofiles; i++)
		if (strcmp(c->image.profiles[i].name, "data") == 0)
			snprintf(c->image.profiles[i].id,
			    sizeof(c->image.profiles[i].id), "sha256:%064d", 8);
}

/* Pools in other profiles (pool_profiles): python's own pool and one of
 * python in profile data, each found by the run's language and profile
 * (the own one also when its profile is named), each warm for its runs
 * only: a data run given python's own pool misses (another image). */
static void
test_pools_in_profiles(void **state)
{
	static struct config c;
	static const int64_t size[RUNNER_POOLS_LANGS] = { 1, 0, 0 };
	const struct config_pool_profile extra[] = {
		{ .profile = "data", .lang = CONFIG_LANG_PYTHON, .size = 1 },
	};
	struct runner_pool_opts o;
	struct runner_pool *own, *data;
	const char *lang = NULL, *profile = NULL;
	char err[256];

	(void)state;
	data_config(&c);
	runner_pool_conf_opts(&c, 0, &o);
	o.modes[RUNNER_NET_PROXY] = false;
	if (runner_pools_new(&c, size, extra, 1, &o, &live_ps, err,
	    sizeof(err)) < 0)
		fail_msg("runner_pools_new: %s", err);
	own = runner_pools_at(live_ps, 0, &lang, &profile);
	assert_non_null(own);
	assert_string_equal(lang, "python");
	assert_string_equal(profile, "minimal");
	data = runner_pools_at(live_ps, RUNNER_POOLS_LANGS, &lang, &profile);
	assert_non_null(data);
	assert_string_equal(lang, "python");
	assert_string_equal(profile, "data");
	assert_null(runner_pools_at(live_ps, 1, NULL, NULL));
	assert_null(runner_pools_at(live_ps, RUNNER_POOLS_MAX, NULL, NULL));
	assert_ptr_equal(runner_pools_get(live_ps, NULL, NULL), own);
	assert_ptr_equal(runner_pools_get(live_ps, "python", ""), own);
	assert_ptr_equal(runner_pools_get(live_ps, "python", "minimal"), own);
	assert_ptr_equal(runner_pools_get(live_ps, "python", "data"), data);
	assert_null(runner_pools_get(live_ps, "python", "node"));
	assert_null(runner_pools_get(live_ps, "bash", NULL));
	assert_null(runner_pools_get(live_ps, "bash", "data"));
	assert_null(runner_pools_get(live_ps, "ruby", NULL));
	assert_int_equal(runner_pool_wait_full(own, 10000), 0);
	assert_int_equal(runner_pool_wait_full(data, 10000), 0);
	assert_true(run_in(&c, data, "data"));
	assert_true(run_in(&c, own, NULL));
	assert_int_equal(runner_pool_wait_full(own, 10000), 0);
	assert_false(run_in(&c, own, "data"));	/* python's own: minimal */
	runner_pools_free(live_ps);
	live_ps = NULL;
	/* A profile that does not exist, or lacks the language: refused,
	 * nothing kept. */
	{
		const struct config_pool_profile bad[] = {
			{ .profile = "nosuch", .lang = CONFIG_LANG_PYTHON,
			  .size = 1 },
			{ .profile = "data", .lang = CONFIG_LANG_NODE,
			  .size = 1 },
		};
		struct runner_pools *ps = (struct runner_pools *)1;

		assert_int_equal(runner_pools_new(&c, size, bad, 1, &o, &ps,
		    err, sizeof(err)), -EINVAL);
		assert_null(ps);
		assert_non_null(strstr(err, "no python pool in profile "
		    "nosuch: "));
		ps = (struct runner_pools *)1;
		assert_int_equal(runner_pools_new(&c, size, bad + 1, 1, &o,
		    &ps, err, sizeof(err)), -EINVAL);
		assert_null(ps);
		assert_non_null(strstr(err, "no node pool in profile data: "));
	}
}

/* The starts limit holds for a set of pools together (runner_pools_new's
 * gate), not for each: two pools of 2, starts limited to 1 and each start
 * slow (1-2 s, FAKE_START_DELAY 1), never have more than one start in
 * flight between them (the gate's own count, sampled), and both still
 * fill: the places go round. */
static void
test_pools_share_starts(void **state)
{
	static struct config c;
	static const int64_t size[RUNNER_POOLS_LANGS] = { 2, 0, 0 };
	const struct config_pool_profile extra[] = {
		{ .profile = "data", .lang = CONFIG_LANG_PYTHON, .size = 2 },
	};
	struct runner_pool_opts o;
	struct runner_pool *pp[2];
	struct runner_pool_stats st[2];
	char err[256];
	int64_t most = 0, end;

	(void)state;
	data_config(&c);
	setenv("FAKE_START_DELAY", "1", 1);
	runner_pool_conf_opts(&c, 0, &o);
	o.modes[RUNNER_NET_PROXY] = false;
	o.max_starts = 1;
	if (runner_pools_new(&c, size, extra, 1, &o, &live_ps, err,
	    sizeof(err)) < 0)
		fail_msg("runner_pools_new: %s", err);
	pp[0] = runner_pools_at(live_ps, 0, NULL, NULL);
	pp[1] = runner_pools_at(live_ps, RUNNER_POOLS_LANGS, NULL, NULL);
	assert_non_null(pp[0]);
	assert_non_null(pp[1]);
	end = time_mono_ms() + 30000;
	for (;;) {
		int64_t now_starting = runner_pools_starting(live_ps);

		runner_pool_stats(pp[0], &st[0]);
		runner_pool_stats(pp[1], &st[1]);
		if (now_starting > most)
			most = now_starting;
		if (st[0].idle[RUNNER_NET_NONE] == 2 &&
		    st[1].idle[RUNNER_NET_NONE] == 2)
			break;
		if (time_mono_ms() > end)
			fail_msg("not full in 30 s: idle %lld and %lld",
			    (long long)st[0].idle[RUNNER_NET_NONE],
			    (long long)st[1].idle[RUNNER_NET_NONE]);
		(void)poll(NULL, 0, 20);
	}
	assert_int_equal(most, 1);
	runner_pools_free(live_ps);
	live_ps = NULL;
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_fills_with_cold_argv),
		T(test_pools_share_starts),
		T(test_runs_take_each_once),
		T(test_files_run_cold),
		T(test_empty_pool_does_not_wait),
		T(test_slow_start_cut_by_pause_and_free),
		T(test_stop_during_create_leaves_nothing),
		T(test_max_age_replaces),
		T(test_pause_empties_and_stops),
		T(test_dead_container_replaced),
		T(test_free_removes_idle),
		T(test_bad_options),
		T(test_pools_in_profiles),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
