/*
 * The warm pool under load, in one run: `cordon serve` with --pool 0, 2
 * and 4 (parallel refill, serve.pool_starts 0: one start per CPU) and 4
 * again with serve.pool_starts 1 (one start at a time: the refill before
 * parallel starts), each on a temporary unix socket. For 1, 2 and 8
 * closed-loop clients (each sends its next print(1) as soon as the last
 * answer came), batches of runs go to each service in turn, the order
 * reversed every round, so load drift hits all alike; each batch starts
 * with that service's pool full and idle. Prints, per clients x pool:
 * runs/s, median and p99 latency, the runs served warm and cold, and the
 * ratios against pool 0. Then, per pool, the refill after a burst: as
 * many runs at once as the pool holds (all warm), and the time from the
 * last answer until the pool is full again, REFILLS times interleaved.
 * Usage: bench_pool [CORDON [N [R]]] (N runs per figure, default 24, in R
 * batches, default 2).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "bench_svc.h"
#include "common/config.h"
#include "common/util.h"

#define MAX_N 400
#define NSVC 4
#define NK 3
#define REFILLS 3

static const int clients[NK] = { 1, 2, 8 };

struct svc_def {
	const char *name, *pool, *label;
	int size;
	int starts;			/* serve.pool_starts */
};

static const struct svc_def defs[NSVC] = {
	{ "p0", "0", "pool 0", 0, 0 },
	{ "p2", "2", "pool 2", 2, 0 },
	{ "p4", "4", "pool 4", 4, 0 },
	{ "p4s", "4", "pool 4, 1 start", 4, 1 },
};

/* A generous deadline: 8 clients' cold starts on 2 cores take seconds. */
static const char body[] = "{\"code\":\"print(1)\\n\",\"timeout_s\":120}";

struct cell {
	int64_t ms[MAX_N];
	int n, warm, failed;
	int64_t wall_ms;		/* sum of its batches' wall times */
};

static struct cell cells[NK][NSVC];

struct batch {
	const struct bench_svc *sv;
	struct cell *c;
	atomic_int left;		/* runs still to send */
	pthread_mutex_t mu;		/* c's n, ms, warm, failed */
};

/* One print(1) run: its wall ms (and *warm), or -1 when it did not come
 * back ok with "1". */
static int64_t
run_one(const struct bench_svc *sv, bool *warm)
{
	char resp[8192];
	int64_t t0 = time_mono_ms();
	int code = bench_svc_http(sv, "POST", "/v1/runs", body, resp,
	    sizeof(resp));
	int64_t ms = time_mono_ms() - t0;

	*warm = strstr(resp, "\"warm\":true") != NULL;
	if (code != 200 || strstr(resp, "\"status\":\"ok\"") == NULL ||
	    strstr(resp, "\"stdout\":\"1\\n\"") == NULL ||
	    (!*warm && strstr(resp, "\"warm\":false") == NULL)) {
		const char *b = strstr(resp, "\r\n\r\n");

		/* The whole result: its status and error say why (on a shared
		 * dockerd, another user's `cordon kill-all` gives sandbox_error). */
		fprintf(stderr, "bench_pool: %s run failed (HTTP %d): %.2000s\n",
		    sv->name, code, b != NULL ? b + 4 : resp);
		return -1;
	}
	return ms;
}

static void *
client_main(void *arg)
{
	struct batch *b = arg;

	while (atomic_fetch_sub(&b->left, 1) > 0) {
		bool warm;
		int64_t ms = run_one(b->sv, &warm);

		pthread_mutex_lock(&b->mu);
		if (ms < 0) {
			b->c->failed++;
		} else if (b->c->n < MAX_N) {
			b->c->ms[b->c->n++] = ms;
			b->c->warm += warm;
		}
		pthread_mutex_unlock(&b->mu);
	}
	return NULL;
}

/* k clients send runs runs to sv between them; counted in c. */
static int
batch_run(const struct bench_svc *sv, int k, int runs, struct cell *c)
{
	pthread_t th[8];
	struct batch b = { .sv = sv, .c = c };
	int64_t t0 = time_mono_ms();
	int started = 0;

	atomic_init(&b.left, runs);
	pthread_mutex_init(&b.mu, NULL);
	for (; started < k; started++)
		if (pthread_create(&th[started], NULL, client_main, &b) != 0)
			break;
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	c->wall_ms += time_mono_ms() - t0;
	pthread_mutex_destroy(&b.mu);
	return started == k && c->failed == 0 ? 0 : -1;
}

/* sv's /v1/health "pool" object, parsed (caller frees), or NULL. */
static cJSON *
pool_health(const struct bench_svc *sv)
{
	char resp[8192];
	const char *b;
	cJSON *o, *p;

	if (bench_svc_http(sv, "GET", "/v1/health", NULL, resp,
	    sizeof(resp)) != 200 || (b = strstr(resp, "\r\n\r\n")) == NULL ||
	    (o = cJSON_Parse(b + 4)) == NULL)
		return NULL;
	if ((p = cJSON_DetachItemFromObjectCaseSensitive(o, "pool")) == NULL) {
		cJSON_Delete(o);
		return NULL;
	}
	cJSON_Delete(o);
	return p;
}

static int64_t
num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : -1;
}

/* Waits (120 s at most) until sv's pool has size idle offline containers,
 * no start in flight and no removal pending: a batch starts from rest. */
static int
wait_rest(const struct bench_svc *sv, int size)
{
	for (int i = 0; i < 1200; i++) {
		cJSON *p = pool_health(sv);
		bool rest = p != NULL && num(p, "none") >= size &&
		    num(p, "starting") == 0 && num(p, "removing") == 0;

		cJSON_Delete(p);
		if (rest)
			return 0;
		usleep(100 * 1000);
	}
	fprintf(stderr, "bench_pool: the %s service did not come to rest in "
	    "120 s\n", sv->name);
	return -1;
}

/* One burst of size runs at once into sv's full pool, then the ms from
 * the last answer until it is full again (polled every 20 ms), or -1. */
static int64_t
refill_ms(const struct bench_svc *sv, int size)
{
	struct cell *c = calloc(1, sizeof(*c));
	int64_t t0, ms = -1;

	if (c == NULL || wait_rest(sv, size) < 0 ||
	    batch_run(sv, size, size, c) < 0)
		goto out;
	t0 = time_mono_ms();
	for (int i = 0; i < 6000 && ms < 0; i++) {
		cJSON *p = pool_health(sv);

		if (p != NULL && num(p, "none") >= size)
			ms = time_mono_ms() - t0;
		cJSON_Delete(p);
		if (ms < 0)
			usleep(20 * 1000);
	}
	if (c->warm != size)
		fprintf(stderr, "bench_pool: %s: %d of the burst's %d runs "
		    "warm\n", sv->name, c->warm, size);
out:
	free(c);
	return ms;
}

/* sv's pool.starts_max, or -1. */
static int64_t
serve_starts_max(const struct bench_svc *sv)
{
	cJSON *p = pool_health(sv);
	int64_t v = p != NULL ? num(p, "starts_max") : -1;

	cJSON_Delete(p);
	return v;
}

static double
rate(const struct cell *c)
{
	return c->wall_ms > 0 ? (double)c->n * 1000.0 / (double)c->wall_ms : 0;
}

static void
print_table(void)
{
	printf("%-7s %-16s %7s %7s %7s %9s   %-6s %-6s %-6s\n", "clients",
	    "service", "runs/s", "median", "p99", "warm/all", "x runs/s",
	    "x med", "x p99");
	for (int k = 0; k < NK; k++) {
		struct cell *base = &cells[k][0];
		double r0 = rate(base);
		int64_t m0 = bench_pct(base->ms, base->n, 50);
		int64_t q0 = bench_pct(base->ms, base->n, 99);

		for (int s = 0; s < NSVC; s++) {
			struct cell *c = &cells[k][s];
			int64_t m = bench_pct(c->ms, c->n, 50);
			int64_t q = bench_pct(c->ms, c->n, 99);

			printf("%-7d %-16s %7.2f %5lld ms %5lld ms %4d/%-4d",
			    clients[k], defs[s].label, rate(c), (long long)m,
			    (long long)q, c->warm, c->n);
			if (s == 0)
				printf("   (anchor)\n");
			else
				printf("   %5.2fx  %5.3fx %5.3fx\n", rate(c) / r0,
				    (double)m / (double)m0,
				    (double)q / (double)q0);
		}
	}
}

static void
print_pools(const struct bench_svc *sv)
{
	for (int s = 0; s < NSVC; s++) {
		int warm = 0, all = 0;
		cJSON *p = defs[s].size > 0 ? pool_health(&sv[s]) : NULL;

		for (int k = 0; k < NK; k++) {
			warm += cells[k][s].warm;
			all += cells[k][s].n;
		}
		printf("%-16s served %3d warm, %3d cold", defs[s].label, warm,
		    all - warm);
		if (p != NULL)
			printf("; pool: starts_max %lld, started %lld, failed "
			    "%lld, retired %lld", (long long)num(p, "starts_max"),
			    (long long)num(p, "started"),
			    (long long)num(p, "failed"),
			    (long long)num(p, "retired"));
		printf("\n");
		cJSON_Delete(p);
	}
}

/* Writes DIR/NAME.json: the benchmark's own audit log and serve limits,
 * with pool_starts. */
static int
write_config(const char *dir, const char *name, int starts, char *cfg,
    size_t len)
{
	char text[512];

	snprintf(cfg, len, "%s/%s.json", dir, name);
	snprintf(text, sizeof(text), "{\"audit_log\":\"%s/audit.log\","
	    "\"serve\":{\"global_limit\":8,\"queue_max\":64,"
	    "\"pool_starts\":%d}}", dir, starts);
	return util_write_file_atomic(cfg, text, strlen(text), 0644);
}

int
main(int argc, char **argv)
{
	const char *cordon = argc > 1 ? argv[1] : "./cordon";
	int n = argc > 2 ? atoi(argv[2]) : 24;
	int rounds = argc > 3 ? atoi(argv[3]) : 2, rc = 1;
	char dir[] = "/tmp/cordon-bench-pool.XXXXXX", cfg[160], cerr[256];
	struct bench_svc sv[NSVC];
	struct config c;
	int64_t t0 = time_mono_ms(), refill[NSVC][REFILLS];
	bool warm;

	if (n < 2 || n > MAX_N || rounds < 1 || rounds > n) {
		fprintf(stderr, "usage: bench_pool [CORDON [N (2..%d) [R "
		    "(1..N)]]]\n", MAX_N);
		return 2;
	}
	if (config_load(&c, NULL, cerr, sizeof(cerr)) < 0) {
		fprintf(stderr, "bench_pool: %s\n", cerr);
		return 2;
	}
	memset(sv, 0, sizeof(sv));
	if (mkdtemp(dir) == NULL)
		return 1;
	for (int s = 0; s < NSVC; s++) {
		sv[s].name = defs[s].name;
		if (write_config(dir, defs[s].name, defs[s].starts, cfg,
		    sizeof(cfg)) < 0 || bench_svc_start(&sv[s], cordon, dir,
		    cfg, defs[s].pool) < 0)
			goto out;
	}
	/* Warm the page cache, not measured. */
	for (int s = 0; s < NSVC; s++)
		if (wait_rest(&sv[s], defs[s].size) < 0 ||
		    run_one(&sv[s], &warm) < 0)
			goto out;
	printf("bench_pool: %d runs per figure in %d batches, %ld online CPUs, "
	    "limits.max_concurrent_runs %lld (host-wide), serve.global_limit "
	    "8\n", n, rounds, sysconf(_SC_NPROCESSORS_ONLN),
	    (long long)c.limits.max_concurrent_runs);
	fflush(stdout);
	for (int k = 0; k < NK; k++) {
		for (int r = 0; r < rounds; r++) {
			int runs = n / rounds + (r < n % rounds);

			for (int i = 0; i < NSVC; i++) {
				int s = r % 2 == 0 ? i : NSVC - 1 - i;

				if (wait_rest(&sv[s], defs[s].size) < 0 ||
				    batch_run(&sv[s], clients[k], runs,
				    &cells[k][s]) < 0)
					goto out;
			}
		}
	}
	for (int r = 0; r < REFILLS; r++)
		for (int i = 1; i < NSVC; i++) {
			int s = r % 2 == 0 ? i : NSVC - i;

			if ((refill[s][r] = refill_ms(&sv[s], defs[s].size)) < 0)
				goto out;
		}
	print_table();
	print_pools(sv);
	for (int s = 1; s < NSVC; s++) {
		printf("%-16s refill after a burst of %d warm runs: median %lld "
		    "ms (sorted: ", defs[s].label, defs[s].size,
		    (long long)bench_pct(refill[s], REFILLS, 50));
		for (int r = 0; r < REFILLS; r++)
			printf("%s%lld", r > 0 ? ", " : "",
			    (long long)refill[s][r]);
		printf(")\n");
	}
	printf("refill of 4, %lld starts at once / one at a time: %.2fx "
	    "(medians)\n", (long long)serve_starts_max(&sv[2]),
	    (double)bench_pct(refill[2], REFILLS, 50) /
	    (double)bench_pct(refill[3], REFILLS, 50));
	printf("each batch starts with its pool full; runs past it are served "
	    "from the refill or cold. x: against pool 0 with as many clients. "
	    "Wall time %lld s.\n", (long long)((time_mono_ms() - t0) / 1000));
	rc = 0;
out:
	for (int s = NSVC - 1; s >= 0; s--)
		bench_svc_stop(&sv[s]);
	(void)util_rm_rf(dir);
	return rc;
}
