/*
 * Runner latency: `print(1)` through `cordon run` on the Engine API path
 * (config docker_api "auto") and on the CLI path ("never"), against a raw
 * `docker run --rm -i` with the same flags (the argv the runner builds),
 * run interleaved in one process (the order rotating) so all of them see
 * the same machine load; and the floor: the same raw `docker run` with
 * `true` as its command, no job and nothing on stdin, i.e. the sandbox's
 * own start and teardown. Prints median, p90 and p99 of each and the
 * ratios to raw docker run and to the floor. Then, when `cordon net up` state
 * is there, proxy-mode runs through runner_run: the median of the
 * register + unregister calls to the proxy beside the run's total.
 * Usage: bench_runner [CORDON [N]].
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdbool.h>
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

extern char **environ;

/* The environment with CORDON_CONFIG=path instead of the caller's. */
struct benv {
	char *v[512];
	char cfg[600];
};

static void
benv_init(struct benv *e, const char *path)
{
	size_t n = 0;

	snprintf(e->cfg, sizeof(e->cfg), "CORDON_CONFIG=%s", path);
	e->v[n++] = e->cfg;
	for (char **p = environ; *p != NULL && n < 510; p++)
		if (strncmp(*p, "CORDON_CONFIG=", 14) != 0)
			e->v[n++] = *p;
	e->v[n] = NULL;
}

/* A copy of the config file in use (or of {}) with docker_api set, at
 * path. 0 or -1. */
static int
config_variant(const char *api, const char *path)
{
	const char *src = getenv("CORDON_CONFIG");
	char *text = NULL, *out;
	size_t len;
	cJSON *o;
	int rc;

	if (src == NULL || *src == '\0')
		src = "/etc/cordon/cordon.json";
	if (util_read_file(src, 1 << 20, &text, &len) < 0)
		text = strdup("{}");
	o = cJSON_Parse(text != NULL ? text : "{}");
	free(text);
	if (o == NULL)
		return -1;
	cJSON_DeleteItemFromObject(o, "docker_api");
	cJSON_AddStringToObject(o, "docker_api", api);
	out = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (out == NULL)
		return -1;
	rc = util_write_file_atomic(path, out, strlen(out), 0600);
	free(out);
	return rc < 0 ? -1 : 0;
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* Runs argv with code on stdin (or nothing); returns wall ms or -1 on
 * failure. */
static int64_t
time_one(const char *const *argv, char *const *envp, bool feed)
{
	struct proc_opts o = { .argv = argv, .envp = (const char *const *)envp,
	    .stdin_data = feed ? code : "",
	    .stdin_len = feed ? strlen(code) : 0, .stdout_max = 65536,
	    .stderr_max = 65536 };
	struct proc_result r;
	int64_t ms;

	if (proc_run(&o, 60000, &r) < 0)
		return -1;
	ms = r.exit_code == 0 && !r.timed_out ? r.duration_ms : -1;
	if (ms < 0)
		fprintf(stderr, "bench_runner: %s failed (exit %d%s): "
		    "%.200s\n", argv[0], r.exit_code, r.timed_out ?
		    ", timed out" : "", cbuf_data(r.err));
	proc_result_cleanup(&r);
	return ms;
}

/* The runner's own argv for this config, plus --rm after "run"; and in
 * *floor the same up to the image, whose command is then `true`. */
static int
raw_argv(const struct config *c, struct dargv *out, struct dargv *floor)
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
	dargv_init(floor);
	for (size_t i = 0, cmd = 0; i < a.n; i++) {
		dargv_add(out, a.v[i]);
		if (cmd == 0)
			dargv_add(floor, a.v[i]);
		if (i == 1) {
			dargv_add(out, "--rm");
			dargv_add(floor, "--rm");
		}
		if (cmd == 0 && strcmp(a.v[i], id) == 0) {
			dargv_add(floor, "true");
			cmd = i;
		}
	}
	dargv_cleanup(&a);
	return out->error != 0 ? out->error : floor->error;
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
	static int64_t t[4][MAX_N];
	static const char *const names[4] = { "cordon api", "cordon cli",
	    "docker run", "floor: true" };
	static struct benv env_api, env_cli;
	char dir[] = "/tmp/cordon-bench-runner.XXXXXX", p_api[64], p_cli[64];
	struct config c;
	char err[256];
	int rc = 1;

	if (n < 2 || n > MAX_N || config_load(&c, NULL, err, sizeof(err)) < 0) {
		fprintf(stderr, "usage: bench_runner [CORDON [N<=200]] (%s)\n",
		    err);
		return 2;
	}
	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(p_api, sizeof(p_api), "%s/api.json", dir);
	snprintf(p_cli, sizeof(p_cli), "%s/cli.json", dir);
	if (config_variant("auto", p_api) < 0 ||
	    config_variant("never", p_cli) < 0) {
		fprintf(stderr, "bench_runner: cannot write the config "
		    "variants\n");
		goto done;
	}
	benv_init(&env_api, p_api);
	benv_init(&env_cli, p_cli);
	/* One warm-up of each, not counted; the order rotates, so none
	 * always follows another. */
	for (int i = -1; i < n; i++) {
		struct dargv raw, floor;
		int64_t v[4];
		if (raw_argv(&c, &raw, &floor) < 0) {
			fprintf(stderr, "bench_runner: no pinned image\n");
			goto done;
		}
		for (int k = 0; k < 4; k++) {
			int which = (i + 4 + k) % 4;
			v[which] = which == 2 ?
			    time_one((const char *const *)raw.v, NULL, true) :
			    which == 3 ? time_one((const char *const *)floor.v,
			    NULL, false) : time_one(cargv, which == 0 ?
			    env_api.v : env_cli.v, true);
		}
		dargv_cleanup(&raw);
		dargv_cleanup(&floor);
		if (v[0] < 0 || v[1] < 0 || v[2] < 0 || v[3] < 0)
			goto done;
		for (int k = 0; i >= 0 && k < 4; k++)
			t[k][i] = v[k];
	}
	for (int k = 0; k < 4; k++)
		report(names[k], t[k], n);
	for (int k = 0; k < 2; k++)
		printf("ratio %s / docker run: median %.3f  (p90: %.3f, p99: "
		    "%.3f; target <= 0.8)\n", names[k],
		    (double)t[k][n / 2] / (double)t[2][n / 2],
		    (double)pct(t[k], n, 90) / (double)pct(t[2], n, 90),
		    (double)pct(t[k], n, 99) / (double)pct(t[2], n, 99));
	printf("ratio cordon api / cordon cli: median %.3f\n",
	    (double)t[0][n / 2] / (double)t[1][n / 2]);
	/* What no client of the daemon can go below: a container that runs
	 * nothing. The 0.8x target is under it when this ratio is > 0.8. */
	printf("ratio floor (docker run true) / docker run: median %.3f; "
	    "cordon api / floor: median %.3f; 0.8x docker run = %lld ms, "
	    "floor %lld ms\n", (double)t[3][n / 2] / (double)t[2][n / 2],
	    (double)t[0][n / 2] / (double)t[3][n / 2],
	    (long long)(t[2][n / 2] * 8 / 10), (long long)t[3][n / 2]);
	rc = bench_proxy_mode(&c);
done:
	(void)util_rm_rf(dir);
	return rc;
}
