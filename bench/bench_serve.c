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
#include <unistd.h>

#include <cjson/cJSON.h>

#include "bench_svc.h"
#include "common/config.h"
#include "common/proc.h"
#include "common/util.h"
#include "runner/docker_argv.h"
#include "runner/image.h"

#define MAX_N 200

/* A generous deadline: 8 concurrent cold starts on 2 cores take seconds. */
static const char body[] = "{\"code\":\"print(1)\\n\",\"timeout_s\":120}";
/* The warm runs' timing_ms, per step (runner_timing's order). */
#define NSTEP 7
static const char *const step_names[NSTEP] = { "stdin", "run", "exit", "cli",
    "inspect", "remove", "other" };
static int64_t steps[NSTEP][MAX_N];
static int nsteps;

static void
keep_timing(const char *resp, int64_t wall)
{
	const char *b = strstr(resp, "\r\n\r\n");
	cJSON *o = b != NULL ? cJSON_Parse(b + 4) : NULL;
	cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "timing_ms");

	if (t != NULL && nsteps < MAX_N) {
		/* other: the wall time no step accounts for (HTTP, the
		 * service's queue, taking the container, the JSON). */
		steps[NSTEP - 1][nsteps] = wall;
		for (int k = 0; k < NSTEP - 1; k++) {
			cJSON *v = cJSON_GetObjectItemCaseSensitive(t,
			    step_names[k]);

			steps[k][nsteps] = cJSON_IsNumber(v) ?
			    (int64_t)v->valuedouble : -1;
			if (steps[k][nsteps] > 0)
				steps[NSTEP - 1][nsteps] -= steps[k][nsteps];
		}
		nsteps++;
	}
	cJSON_Delete(o);
}

/* Wall ms of one print(1) run, or -1 when it did not return ok/"1" (or,
 * want_warm >= 0, was not warm/cold as asked). */
static int64_t
run_one(const struct bench_svc *sv, int want_warm)
{
	char resp[8192];
	int64_t t0 = time_mono_ms();
	int code = bench_svc_http(sv, "POST", "/v1/runs", body, resp,
	    sizeof(resp));
	int64_t ms = time_mono_ms() - t0;

	if (code != 200 || strstr(resp, "\"status\":\"ok\"") == NULL ||
	    strstr(resp, "\"stdout\":\"1\\n\"") == NULL ||
	    (want_warm == 1 && strstr(resp, "\"warm\":true") == NULL) ||
	    (want_warm == 0 && strstr(resp, "\"warm\":false") == NULL)) {
		fprintf(stderr, "bench_serve: %s run failed (HTTP %d): %.300s\n",
		    sv->name, code, resp);
		return -1;
	}
	if (want_warm == 1)
		keep_timing(resp, ms);
	return ms;
}

/* The `docker exec` floor: a sandbox started by the runner's own argv
 * (detached, python sleeping), and `docker exec -i NAME python3 -I -` of
 * the same program into it. */
static char exec_name[32];

static int
exec_start(const struct config *c)
{
	char id[IMAGE_ID_MAX], hex[17];
	struct docker_spec s = { .name = exec_name, .image_id = id,
	    .runtime = c->runtime_offline, .network = "none", .session = "",
	    .owner_pid = (long)getpid(), .memory = c->limits.memory_bytes,
	    .cpus = c->limits.cpus };
	struct dargv a, b;
	struct proc_result r;
	int rc;

	if (image_pinned_id(c, id) < 0 || util_random_hex(hex, 8) < 0)
		return -1;
	snprintf(exec_name, sizeof(exec_name), "cordon-%s", hex);
	s.deadline_epoch_s = time_wall_ms() / 1000 + 3600;
	if (docker_run_argv(c, &s, &a) < 0)
		return -1;
	/* docker run -d ... IMAGE python3 -c 'sleep' instead of -i ... -. */
	dargv_init(&b);
	for (size_t i = 0; i < a.n; i++) {
		if (i == 2) {
			dargv_add(&b, "-d");
			continue;
		}
		if (strcmp(a.v[i], id) == 0) {
			dargv_add(&b, id);
			break;
		}
		dargv_add(&b, a.v[i]);
	}
	dargv_add(&b, "python3");
	dargv_add(&b, "-c");
	dargv_add(&b, "import time; time.sleep(3600)");
	dargv_cleanup(&a);
	if (b.error != 0) {
		dargv_cleanup(&b);
		return -1;
	}
	{
		struct proc_opts o = { .argv = (const char *const *)b.v,
		    .stdout_max = 4096, .stderr_max = 4096 };

		rc = proc_run(&o, 60000, &r);
	}
	dargv_cleanup(&b);
	if (rc < 0 || r.exit_code != 0) {
		fprintf(stderr, "bench_serve: cannot start the exec sandbox: "
		    "%.300s\n", rc < 0 ? strerror(-rc) : cbuf_data(r.err));
		if (rc == 0)
			proc_result_cleanup(&r);
		return -1;
	}
	proc_result_cleanup(&r);
	return 0;
}

static int64_t
exec_one(const struct config *c)
{
	const char *av[] = { c->docker, "exec", "-i", exec_name, "python3",
	    "-I", "-", NULL };
	static const char code[] = "print(1)\n";
	struct proc_opts o = { .argv = av, .stdin_data = code,
	    .stdin_len = strlen(code), .stdout_max = 4096, .stderr_max = 4096 };
	struct proc_result r;
	int64_t ms;

	if (proc_run(&o, 60000, &r) < 0)
		return -1;
	ms = r.exit_code == 0 && strcmp(cbuf_data(r.out), "1\n") == 0 ?
	    r.duration_ms : -1;
	if (ms < 0)
		fprintf(stderr, "bench_serve: docker exec failed: %.300s\n",
		    cbuf_data(r.err));
	proc_result_cleanup(&r);
	return ms;
}

static void
exec_stop(const struct config *c)
{
	const char *av[] = { c->docker, "rm", "-f", exec_name, NULL };
	struct proc_opts o = { .argv = av, .stdout_max = 4096,
	    .stderr_max = 4096 };
	struct proc_result r;

	if (exec_name[0] != '\0' && proc_run(&o, 60000, &r) == 0)
		proc_result_cleanup(&r);
	exec_name[0] = '\0';
}

/* The pool's latest removal after an answer (ms), or -1. */
static int64_t
pool_remove_ms(const struct bench_svc *sv)
{
	char resp[4096];
	const char *q;
	long long v;

	if (bench_svc_http(sv, "GET", "/v1/health", NULL, resp,
	    sizeof(resp)) != 200 ||
	    (q = strstr(resp, "\"remove_ms_last\":")) == NULL ||
	    sscanf(q + 17, "%lld", &v) != 1)
		return -1;
	return v;
}

struct client {
	const struct bench_svc *sv;
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
throughput(const struct bench_svc *sv, int k, int n)
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

static void
print_latency(const char *what, int64_t *ms, int n)
{
	int64_t p90 = bench_pct(ms, n, 90), p99 = bench_pct(ms, n, 99);

	printf("%-22s median %4lld ms, p90 %4lld ms, p99 %4lld ms (n=%d)\n",
	    what, (long long)ms[n / 2], (long long)p90, (long long)p99, n);
}

static void
print_breakdown(void)
{
	printf("warm breakdown, medians of %d runs (ms; -1: not on the way "
	    "to the answer; run: stdin closed to the first output; exit: to "
	    "the exit status; cli: to the CLI's exit):\n ", nsteps);
	for (int k = 0; k < NSTEP && nsteps > 0; k++)
		printf(" %s %lld", step_names[k],
		    (long long)bench_pct(steps[k], nsteps, 50));
	printf("\n");
}

int
main(int argc, char **argv)
{
	const char *cordon = argc > 1 ? argv[1] : "./cordon";
	int n = argc > 2 ? atoi(argv[2]) : 10;
	int pool = argc > 3 ? atoi(argv[3]) : 2, rc = 1;
	char dir[] = "/tmp/cordon-bench-serve.XXXXXX", cfg[160], text[512];
	char pool_arg[16];
	int64_t cold[MAX_N], warm[MAX_N], ex[MAX_N], removal[MAX_N];
	struct bench_svc cs = { .name = "cold" }, ws = { .name = "warm" };
	double r[2][2];
	struct config c;
	char cerr[256];

	if (n < 2 || n > MAX_N || pool < 1 || pool > 64) {
		fprintf(stderr, "usage: bench_serve [CORDON [N (2..%d) [POOL "
		    "(1..64)]]]\n", MAX_N);
		return 2;
	}
	if (config_load(&c, NULL, cerr, sizeof(cerr)) < 0) {
		fprintf(stderr, "bench_serve: %s\n", cerr);
		return 2;
	}
	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(cfg, sizeof(cfg), "%s/cordon.json", dir);
	snprintf(text, sizeof(text), "{\"audit_log\":\"%s/audit.log\","
	    "\"serve\":{\"global_limit\":8,\"queue_max\":64}}", dir);
	snprintf(pool_arg, sizeof(pool_arg), "%d", pool);
	if (util_write_file_atomic(cfg, text, strlen(text), 0644) < 0 ||
	    bench_svc_start(&cs, cordon, dir, cfg, "0") < 0 ||
	    bench_svc_start(&ws, cordon, dir, cfg, pool_arg) < 0)
		goto out;
	/* Warm the page cache, not measured. */
	if (exec_start(&c) < 0 || exec_one(&c) < 0 || run_one(&cs, 0) < 0 ||
	    bench_svc_wait_pool(&ws, "none", pool, 120) < 0)
		goto out;
	for (int i = 0; i < n; i++) {
		/* Each run alone: no refill going on in the background. */
		if (bench_svc_wait_pool(&ws, "none", pool, 120) < 0 ||
		    (cold[i] = run_one(&cs, 0)) < 0 ||
		    bench_svc_wait_pool(&ws, "none", pool, 120) < 0 ||
		    (warm[i] = run_one(&ws, 1)) < 0 ||
		    bench_svc_wait_pool(&ws, "none", pool, 120) < 0 ||
		    (ex[i] = exec_one(&c)) < 0)
			goto out;
		/* The refill waited for the removal: this run's. */
		removal[i] = pool_remove_ms(&ws);
	}
	exec_stop(&c);
	for (int k = 0; k < 2; k++) {
		int clients = k == 0 ? 2 : 8;

		/* No refill in the background while the cold side runs. */
		if (bench_svc_wait_pool(&ws, "none", pool, 120) < 0 ||
		    (r[0][k] = throughput(&cs, clients, n)) < 0 ||
		    bench_svc_wait_pool(&ws, "none", pool, 120) < 0 ||
		    (r[1][k] = throughput(&ws, clients, n)) < 0)
			goto out;
	}
	print_latency("serve cold print(1)", cold, n);
	print_latency("serve warm print(1)", warm, n);
	print_latency("docker exec print(1)", ex, n);
	print_breakdown();
	printf("  off the answer's path: removal after the answer %lld ms "
	    "(median)\n", (long long)bench_pct(removal, n, 50));
	printf("serve warm/cold median ratio: %.3f (target <= 0.3; pool %d "
	    "per mode)\n", (double)warm[n / 2] / (double)cold[n / 2], pool);
	printf("serve warm/docker exec: median %.3f, p99 %.3f (target: median "
	    "<= 0.35 and <= 40 ms, p99 <= 100 ms)\n",
	    (double)warm[n / 2] / (double)ex[n / 2],
	    (double)bench_pct(warm, n, 99) / (double)bench_pct(ex, n, 99));
	printf("serve throughput, cold: %.2f runs/s with 2 clients, %.2f with "
	    "8 (%d runs each)\n", r[0][0], r[0][1], n);
	printf("serve throughput, pool %d: %.2f runs/s with 2 clients, %.2f "
	    "with 8 (%d runs each; runs past the pool start cold)\n", pool,
	    r[1][0], r[1][1], n);
	rc = 0;
out:
	exec_stop(&c);
	bench_svc_stop(&ws);
	bench_svc_stop(&cs);
	(void)util_rm_rf(dir);
	return rc;
}
