/*
 * Runner latency: `print(1)` through `cordon run` against a raw `docker
 * run --rm -i` with the same flags (the argv the runner builds), run
 * interleaved in one process so both see the same machine load. Prints
 * median and p90 of each and the ratio. Then, when `cordon net up` state
 * is there, proxy-mode runs through runner_run: the median of the
 * register + unregister calls to the proxy beside the run's total.
 * Usage: bench_runner [CORDON [N]].
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/proc.h"
#include "common/util.h"
#include "netsetup/netsetup.h"
#include "runner/docker_argv.h"
#include "runner/image.h"
#include "runner/runner.h"

#define MAX_N 200
#define PROXY_N 20

static const char code[] = "print(1)\n";

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* Runs argv with code on stdin; returns wall ms or -1 on failure. */
static int64_t
time_one(const char *const *argv)
{
	struct proc_opts o = { .argv = argv, .stdin_data = code,
	    .stdin_len = strlen(code), .stdout_max = 65536,
	    .stderr_max = 65536 };
	struct proc_result r;
	int64_t ms;

	if (proc_run(&o, 60000, &r) < 0)
		return -1;
	ms = r.exit_code == 0 && !r.timed_out ? r.duration_ms : -1;
	if (ms < 0)
		fprintf(stderr, "bench_runner: %s failed: %.200s\n", argv[0],
		    cbuf_data(r.err));
	proc_result_cleanup(&r);
	return ms;
}

/* The runner's own argv for this config, plus --rm after "run". */
static int
raw_argv(const struct config *c, struct dargv *out)
{
	char id[IMAGE_ID_MAX], hex[17], name[32];
	struct docker_spec s = { .name = name, .image_id = id,
	    .runtime = c->runtime_offline, .network = "none", .session = "",
	    .owner_pid = (long)getpid(), .memory = c->limits.memory_bytes,
	    .cpus = c->limits.cpus };
	struct dargv a;
	int rc;

	if ((rc = image_pinned_id(c, id)) < 0 ||
	    (rc = util_random_hex(hex, 8)) < 0)
		return rc;
	snprintf(name, sizeof(name), "cordon-%s", hex);
	s.deadline_epoch_s = time_wall_ms() / 1000 + 300;
	if ((rc = docker_run_argv(c, &s, &a)) < 0)
		return rc;
	dargv_init(out);
	for (size_t i = 0; i < a.n; i++) {
		dargv_add(out, a.v[i]);
		if (i == 1)
			dargv_add(out, "--rm");
	}
	dargv_cleanup(&a);
	return out->error;
}

/* Nearest-rank percentile pc of the sorted v. */
static int64_t
pct(const int64_t *v, int n, int pc)
{
	int k = (n * pc + 99) / 100;

	return v[k < 1 ? 0 : k - 1];
}

static void
report(const char *what, int64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_i64);
	printf("%-12s n=%d median %lld ms  p90 %lld ms  p99 %lld ms  min %lld  "
	    "max %lld\n", what, n, (long long)v[n / 2],
	    (long long)pct(v, n, 90), (long long)pct(v, n, 99),
	    (long long)v[0], (long long)v[n - 1]);
}

/* Proxy-mode print(1) runs in-process: the egress control calls' cost
 * (register + unregister) next to the whole run. Never a made-up figure:
 * without the egress network it says it skipped. */
static int
bench_proxy_mode(const struct config *c)
{
	static int64_t ctl[PROXY_N], total[PROXY_N];
	struct runner_request q = { .code = code, .code_len = strlen(code),
	    .net = RUNNER_NET_PROXY, .session = "bench" };
	struct runner_result res;
	char err[512];

	if (netsetup_ready(c, NULL, err, sizeof(err)) < 0) {
		printf("proxy mode: skipped: egress network not up (%s)\n", err);
		return 0;
	}
	for (int i = -1; i < PROXY_N; i++) {
		if (runner_run(c, &q, &res, err, sizeof(err)) < 0) {
			fprintf(stderr, "bench_runner: proxy-mode run: %s\n", err);
			return 1;
		}
		if (res.status != RUNNER_OK || res.egress == NULL) {
			fprintf(stderr, "bench_runner: proxy-mode run: status %s, "
			    "egress %s\n", runner_status_name(res.status),
			    res.egress != NULL ? "ok" : res.egress_error);
			runner_result_cleanup(&res);
			return 1;
		}
		if (i >= 0) {
			ctl[i] = res.egress_register_ms +
			    res.egress_unregister_ms;
			total[i] = res.duration_ms;
		}
		runner_result_cleanup(&res);
	}
	report("proxy run", total, PROXY_N);
	report("reg+unreg", ctl, PROXY_N);
	return 0;
}

int
main(int argc, char **argv)
{
	const char *cordon = argc > 1 ? argv[1] : "cordon";
	int n = argc > 2 ? atoi(argv[2]) : 15;
	const char *cargv[] = { cordon, "run", NULL };
	static int64_t tc[MAX_N], tr[MAX_N];
	struct config c;
	char err[256];

	if (n < 2 || n > MAX_N || config_load(&c, NULL, err, sizeof(err)) < 0) {
		fprintf(stderr, "usage: bench_runner [CORDON [N<=200]] (%s)\n",
		    err);
		return 2;
	}
	/* One warm-up of each, not counted. */
	for (int i = -1; i < n; i++) {
		struct dargv raw;
		int64_t a, b;
		if (raw_argv(&c, &raw) < 0) {
			fprintf(stderr, "bench_runner: no pinned image\n");
			return 1;
		}
		/* Alternate which goes first, so neither always follows. */
		if (i % 2 == 0) {
			a = time_one(cargv);
			b = time_one((const char *const *)raw.v);
		} else {
			b = time_one((const char *const *)raw.v);
			a = time_one(cargv);
		}
		dargv_cleanup(&raw);
		if (a < 0 || b < 0)
			return 1;
		if (i >= 0) {
			tc[i] = a;
			tr[i] = b;
		}
	}
	report("cordon run", tc, n);
	report("docker run", tr, n);
	printf("ratio (median cordon / raw): %.3f  (p90: %.3f, p99: %.3f; "
	    "target <= 0.8)\n", (double)tc[n / 2] / (double)tr[n / 2],
	    (double)pct(tc, n, 90) / (double)pct(tr, n, 90),
	    (double)pct(tc, n, 99) / (double)pct(tr, n, 99));
	return bench_proxy_mode(&c);
}
