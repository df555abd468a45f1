/*
 * Service latency and throughput, warm pool against cold starts, in one
 * run: two `cordon serve` instances on temporary unix sockets, one with
 * --pool 0 and one with --pool P. Latency of `print(1)` through POST
 * /v1/runs is measured interleaved (a cold run, then a warm one once the
 * pool is full again), so load drift hits both alike; then runs/s with 2
 * and 8 concurrent clients against each. Prints medians, p90s and the
 * warm/cold ratio (target: warm median <= 0.3x cold). Usage:
 * bench_serve [CORDON [N [P]]] (N runs per figure, default 10; P default 2).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/proc.h"
#include "common/util.h"

#define MAX_N 200

struct svc {
	const char *name;
	char sock[108];
	struct proc *p;
};

/* A generous deadline: 8 concurrent cold starts on 2 cores take seconds. */
static const char body[] = "{\"code\":\"print(1)\\n\",\"timeout_s\":120}";
static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* One HTTP request over the socket; returns the status code or -1, and
 * the response in resp (NUL-terminated, truncated to len). */
static int
http(const struct svc *sv, const char *method, const char *path,
    const char *data, char *resp, size_t len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char req[512];
	size_t got = 0;
	ssize_t n;
	int fd, code = -1, rl;

	util_strlcpy(sa.sun_path, sv->sock, sizeof(sa.sun_path));
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		goto out;
	rl = snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\nHost: cordon\r\n"
	    "Content-Type: application/json\r\nContent-Length: %zu\r\n"
	    "Connection: close\r\n\r\n%s", method, path,
	    data != NULL ? strlen(data) : 0, data != NULL ? data : "");
	if (rl < 0 || (size_t)rl >= sizeof(req) ||
	    write(fd, req, (size_t)rl) != rl)
		goto out;
	while (got + 1 < len && (n = read(fd, resp + got, len - 1 - got)) > 0)
		got += (size_t)n;
	resp[got] = '\0';
	if (sscanf(resp, "HTTP/1.1 %d", &code) != 1)
		code = -1;
out:
	close(fd);
	return code;
}

/* Wall ms of one print(1) run, or -1 when it did not return ok/"1" (or,
 * want_warm >= 0, was not warm/cold as asked). */
static int64_t
run_one(const struct svc *sv, int want_warm)
{
	char resp[8192];
	int64_t t0 = time_mono_ms();
	int code = http(sv, "POST", "/v1/runs", body, resp, sizeof(resp));
	int64_t ms = time_mono_ms() - t0;

	if (code != 200 || strstr(resp, "\"status\":\"ok\"") == NULL ||
	    strstr(resp, "\"stdout\":\"1\\n\"") == NULL ||
	    (want_warm == 1 && strstr(resp, "\"warm\":true") == NULL) ||
	    (want_warm == 0 && strstr(resp, "\"warm\":false") == NULL)) {
		fprintf(stderr, "bench_serve: %s run failed (HTTP %d): %.300s\n",
		    sv->name, code, resp);
		return -1;
	}
	return ms;
}

/* Idle offline containers of sv's pool, or -1. */
static int
pool_idle(const struct svc *sv)
{
	char resp[4096];
	const char *q;
	int n;

	if (http(sv, "GET", "/v1/health", NULL, resp, sizeof(resp)) != 200 ||
	    (q = strstr(resp, "\"pool\":{")) == NULL ||
	    (q = strstr(q, "\"none\":")) == NULL || sscanf(q + 7, "%d", &n) != 1)
		return -1;
	return n;
}

static int
wait_pool(const struct svc *sv, int want)
{
	for (int i = 0; i < 1200; i++) {
		if (pool_idle(sv) >= want)
			return 0;
		usleep(100 * 1000);
	}
	fprintf(stderr, "bench_serve: the pool did not refill in 120 s\n");
	return -1;
}

struct client {
	const struct svc *sv;
	int runs;
	int failed;
};

static void *
client_main(void *arg)
{
	struct client *c = arg;

	for (int i = 0; i < c->runs; i++)
		if (run_one(c->sv, -1) < 0)
			c->failed++;
	return NULL;
}

/* k clients share n runs; returns runs/s or -1. */
static double
throughput(const struct svc *sv, int k, int n)
{
	pthread_t th[8];
	struct client cl[8];
	int64_t t0 = time_mono_ms(), ms;
	int failed = 0;

	for (int i = 0; i < k; i++) {
		cl[i] = (struct client){ .sv = sv, .runs = n / k + (i < n % k) };
		if (pthread_create(&th[i], NULL, client_main, &cl[i]) != 0)
			return -1;
	}
	for (int i = 0; i < k; i++) {
		pthread_join(th[i], NULL);
		failed += cl[i].failed;
	}
	ms = time_mono_ms() - t0;
	return failed > 0 || ms <= 0 ? -1 : (double)n * 1000.0 / (double)ms;
}

static int
svc_start(struct svc *sv, const char *cordon, const char *dir, const char *cfg,
    const char *pool)
{
	const char *av[] = { cordon, "serve", "--config", cfg, "--socket",
	    sv->sock, "--pool", pool, NULL };
	struct proc_opts o = { .argv = av, .stdout_max = 4096,
	    .stderr_max = 4096 };
	char resp[4096];

	snprintf(sv->sock, sizeof(sv->sock), "%s/%s.sock", dir, sv->name);
	if (proc_spawn(&o, &sv->p) < 0) {
		fprintf(stderr, "bench_serve: cannot start %s\n", cordon);
		return -1;
	}
	for (int i = 0; i < 100; i++) {
		if (http(sv, "GET", "/v1/health", NULL, resp, sizeof(resp)) ==
		    200)
			return 0;
		usleep(100 * 1000);
	}
	fprintf(stderr, "bench_serve: the %s service did not answer\n",
	    sv->name);
	return -1;
}

static void
svc_stop(struct svc *sv)
{
	if (sv->p == NULL)
		return;
	proc_kill(sv->p, SIGTERM);
	(void)proc_communicate(sv->p, time_mono_ms() + 60000, NULL);
	(void)proc_reap(sv->p, time_mono_ms() + 5000);
	proc_free(sv->p);
	sv->p = NULL;
}

static void
print_latency(const char *what, int64_t *ms, int n)
{
	qsort(ms, (size_t)n, sizeof(ms[0]), cmp_i64);
	printf("serve %s print(1): median %lld ms, p90 %lld ms (n=%d)\n", what,
	    (long long)ms[n / 2], (long long)ms[(n * 9 + 9) / 10 - 1], n);
}

int
main(int argc, char **argv)
{
	const char *cordon = argc > 1 ? argv[1] : "./cordon";
	int n = argc > 2 ? atoi(argv[2]) : 10;
	int pool = argc > 3 ? atoi(argv[3]) : 2, rc = 1;
	char dir[] = "/tmp/cordon-bench-serve.XXXXXX", cfg[160], text[512];
	char pool_arg[16];
	int64_t cold[MAX_N], warm[MAX_N];
	struct svc cs = { .name = "cold" }, ws = { .name = "warm" };
	double r[2][2];

	if (n < 2 || n > MAX_N || pool < 1 || pool > 64) {
		fprintf(stderr, "usage: bench_serve [CORDON [N (2..%d) [POOL "
		    "(1..64)]]]\n", MAX_N);
		return 2;
	}
	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(cfg, sizeof(cfg), "%s/cordon.json", dir);
	snprintf(text, sizeof(text), "{\"audit_log\":\"%s/audit.log\","
	    "\"serve\":{\"global_limit\":8,\"queue_max\":64}}", dir);
	snprintf(pool_arg, sizeof(pool_arg), "%d", pool);
	if (util_write_file_atomic(cfg, text, strlen(text), 0644) < 0 ||
	    svc_start(&cs, cordon, dir, cfg, "0") < 0 ||
	    svc_start(&ws, cordon, dir, cfg, pool_arg) < 0)
		goto out;
	/* Warm the page cache, not measured. */
	if (run_one(&cs, 0) < 0 || wait_pool(&ws, pool) < 0)
		goto out;
	for (int i = 0; i < n; i++) {
		/* Each run alone: no refill going on in the background. */
		if (wait_pool(&ws, pool) < 0 ||
		    (cold[i] = run_one(&cs, 0)) < 0 || wait_pool(&ws, pool) < 0 ||
		    (warm[i] = run_one(&ws, 1)) < 0)
			goto out;
	}
	for (int k = 0; k < 2; k++) {
		int clients = k == 0 ? 2 : 8;

		/* No refill in the background while the cold side runs. */
		if (wait_pool(&ws, pool) < 0 ||
		    (r[0][k] = throughput(&cs, clients, n)) < 0 ||
		    wait_pool(&ws, pool) < 0 ||
		    (r[1][k] = throughput(&ws, clients, n)) < 0)
			goto out;
	}
	print_latency("cold", cold, n);
	print_latency("warm", warm, n);
	printf("serve warm/cold median ratio: %.3f (target <= 0.3; pool %d "
	    "per mode)\n", (double)warm[n / 2] / (double)cold[n / 2], pool);
	printf("serve throughput, cold: %.2f runs/s with 2 clients, %.2f with "
	    "8 (%d runs each)\n", r[0][0], r[0][1], n);
	printf("serve throughput, pool %d: %.2f runs/s with 2 clients, %.2f "
	    "with 8 (%d runs each; runs past the pool start cold)\n", pool,
	    r[1][0], r[1][1], n);
	rc = 0;
out:
	svc_stop(&ws);
	svc_stop(&cs);
	(void)util_rm_rf(dir);
	return rc;
}
