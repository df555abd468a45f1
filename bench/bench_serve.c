/*
 * Service throughput: starts `cordon serve` on a temporary unix socket and
 * measures `print(1)` through POST /v1/runs: cold latency one at a time
 * (median, p90), then runs/s with 2 and 8 concurrent clients. The warm pool
 * is not implemented yet, so there is no warm figure. Usage:
 * bench_serve [CORDON [N]] (N runs per measurement, default 10).
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

static char sock_path[108];
static const char body[] = "{\"code\":\"print(1)\\n\"}";

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* One HTTP request over the socket; returns the status code or -1, and
 * the response in resp (NUL-terminated, truncated to len). */
static int
http(const char *method, const char *path, const char *data, char *resp,
    size_t len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char req[512];
	size_t got = 0;
	ssize_t n;
	int fd, code = -1, rl;

	util_strlcpy(sa.sun_path, sock_path, sizeof(sa.sun_path));
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

/* Wall ms of one print(1) run, or -1 when it did not return ok/"1". */
static int64_t
run_one(void)
{
	char resp[8192];
	int64_t t0 = time_mono_ms();
	int code = http("POST", "/v1/runs", body, resp, sizeof(resp));

	if (code != 200 || strstr(resp, "\"status\":\"ok\"") == NULL ||
	    strstr(resp, "\"stdout\":\"1\\n\"") == NULL) {
		fprintf(stderr, "bench_serve: run failed (HTTP %d): %.300s\n",
		    code, resp);
		return -1;
	}
	return time_mono_ms() - t0;
}

struct client {
	int runs;
	int failed;
};

static void *
client_main(void *arg)
{
	struct client *c = arg;

	for (int i = 0; i < c->runs; i++)
		if (run_one() < 0)
			c->failed++;
	return NULL;
}

/* k clients share n runs; returns runs/s or -1. */
static double
throughput(int k, int n)
{
	pthread_t th[8];
	struct client cl[8];
	int64_t t0 = time_mono_ms(), ms;
	int failed = 0;

	for (int i = 0; i < k; i++) {
		cl[i] = (struct client){ .runs = n / k + (i < n % k) };
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

int
main(int argc, char **argv)
{
	const char *cordon = argc > 1 ? argv[1] : "./cordon";
	int n = argc > 2 ? atoi(argv[2]) : 10, rc = 1, ok = 0;
	char dir[] = "/tmp/cordon-bench-serve.XXXXXX", cfg[160], text[512];
	char resp[4096];
	int64_t ms[MAX_N];
	struct proc *p = NULL;
	double r2, r8;

	if (n < 2 || n > MAX_N) {
		fprintf(stderr, "usage: bench_serve [CORDON [N (2..%d)]]\n",
		    MAX_N);
		return 2;
	}
	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(sock_path, sizeof(sock_path), "%s/serve.sock", dir);
	snprintf(cfg, sizeof(cfg), "%s/cordon.json", dir);
	snprintf(text, sizeof(text), "{\"audit_log\":\"%s/audit.log\","
	    "\"serve\":{\"global_limit\":8,\"queue_max\":64}}", dir);
	if (util_write_file_atomic(cfg, text, strlen(text), 0644) < 0)
		goto out;
	{
		const char *av[] = { cordon, "serve", "--config", cfg,
		    "--socket", sock_path, NULL };
		struct proc_opts o = { .argv = av, .stdout_max = 4096,
		    .stderr_max = 4096 };
		if (proc_spawn(&o, &p) < 0) {
			fprintf(stderr, "bench_serve: cannot start %s\n", cordon);
			goto out;
		}
	}
	for (int i = 0; i < 100 && !ok; i++) {
		ok = http("GET", "/v1/health", NULL, resp, sizeof(resp)) == 200;
		if (!ok)
			usleep(100 * 1000);
	}
	if (!ok) {
		fprintf(stderr, "bench_serve: the service did not answer\n");
		goto out;
	}
	if (run_one() < 0)		/* warm the page cache, not measured */
		goto out;
	for (int i = 0; i < n; i++)
		if ((ms[i] = run_one()) < 0)
			goto out;
	qsort(ms, (size_t)n, sizeof(ms[0]), cmp_i64);
	r2 = throughput(2, n);
	r8 = throughput(8, n);
	if (r2 < 0 || r8 < 0)
		goto out;
	printf("serve cold print(1): median %lld ms, p90 %lld ms (n=%d)\n",
	    (long long)ms[n / 2], (long long)ms[(n * 9 + 9) / 10 - 1], n);
	printf("serve warm print(1): n/a (the warm pool is not implemented)\n");
	printf("serve throughput: %.2f runs/s with 2 clients, %.2f runs/s "
	    "with 8 clients (%d runs each)\n", r2, r8, n);
	rc = 0;
out:
	if (p != NULL) {
		proc_kill(p, SIGTERM);
		(void)proc_communicate(p, time_mono_ms() + 60000, NULL);
		(void)proc_reap(p, time_mono_ms() + 5000);
		proc_free(p);
	}
	(void)util_rm_rf(dir);
	return rc;
}
