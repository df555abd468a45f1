/*
 * Offline against proxy mode, cold and warm, side by side in one run:
 * `print(1)` through `cordon run` and `cordon run --net proxy` (cold), and
 * through one `cordon serve --pool P` (warm, both modes pooled), the four
 * interleaved with the order rotating, each run alone (the pool full, no
 * refill in the background). Prints medians and p90s, the proxy/offline
 * ratios against issue 36's targets, and each path's median per phase
 * (timing_ms; other: the wall time no phase accounts for). Needs `cordon
 * net up`: without it, it says so and measures nothing. Two anchors run
 * in the same rounds: a raw `docker run --rm -i` of `python3 -I -` with
 * the runner's own flags for each mode (proxy: the egress network and
 * runtime, --dns, the CA bundle and resolv.conf mounts; no prelude, no
 * seal, no registration: only what Docker and runsc cost), and their
 * ratio, the floor under Cordon's. A mode whose
 * probe record is stale (or would be before the end) is probed first, as
 * the pool keeps no containers of such a mode.
 * Usage: bench_netmodes [CORDON [N [P]]] (N default 10, P default 2).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "bench_svc.h"
#include "common/config.h"
#include "common/proc.h"
#include "common/util.h"
#include "netsetup/netsetup.h"
#include "probe/probe.h"
#include "runner/docker_argv.h"
#include "runner/image.h"

#define MAX_N 100
#define NPATH 6
#define NCORDON 4		/* the paths through Cordon (with phases) */
#define NPHASE 13

enum { COLD_OFF, COLD_PX, WARM_OFF, WARM_PX, RAW_OFF, RAW_PX };

static const char *const path_names[NPATH] = { "cold offline",
    "cold proxy", "warm offline", "warm proxy", "raw offline",
    "raw proxy" };
/* timing_ms's names in the order of a run; "other" last (computed). */
static const char *const phase_names[NPHASE] = { "admit", "start", "seal",
    "register", "stdin", "run", "exit", "cli", "inspect", "remove",
    "unregister", "stop", "other" };
static const char code[] = "print(1)\n";
static const char body_off[] = "{\"code\":\"print(1)\\n\",\"timeout_s\":120}";
static const char body_px[] = "{\"code\":\"print(1)\\n\",\"timeout_s\":120,"
    "\"net\":\"proxy\"}";

static int64_t wall[NPATH][MAX_N];
static int64_t phase[NPATH][NPHASE][MAX_N];

extern char **environ;

/* The environment with CORDON_CONFIG=path instead of the caller's. */
static char *envv[512];
static char env_cfg[600];

static void
env_init(const char *path)
{
	size_t n = 0;

	snprintf(env_cfg, sizeof(env_cfg), "CORDON_CONFIG=%s", path);
	envv[n++] = env_cfg;
	for (char **p = environ; *p != NULL && n < 510; p++)
		if (strncmp(*p, "CORDON_CONFIG=", 14) != 0)
			envv[n++] = *p;
	envv[n] = NULL;
}

/* A copy of the config file in use (or of {}) with its audit log in dir,
 * at path. 0 or -1. */
static int
config_copy(const char *dir, const char *path)
{
	const char *src = getenv("CORDON_CONFIG");
	char *text = NULL, *out, log[200];
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
	snprintf(log, sizeof(log), "%s/audit.log", dir);
	cJSON_DeleteItemFromObject(o, "audit_log");
	cJSON_AddStringToObject(o, "audit_log", log);
	out = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (out == NULL)
		return -1;
	rc = util_write_file_atomic(path, out, strlen(out), 0600);
	free(out);
	return rc < 0 ? -1 : 0;
}

/* Keeps a result's phases (k: path, i: run); -1 for a missing phase. */
static int
keep_phases(int k, int i, const char *json, int64_t ms, int want_warm)
{
	cJSON *o = cJSON_Parse(json), *t, *v;
	int64_t other = ms;
	int rc = -1;

	t = cJSON_GetObjectItemCaseSensitive(o, "timing_ms");
	v = cJSON_GetObjectItemCaseSensitive(o, "warm");
	if (t == NULL || (want_warm >= 0 && cJSON_IsTrue(v) != want_warm))
		goto out;
	for (int p = 0; p < NPHASE - 1; p++) {
		v = cJSON_GetObjectItemCaseSensitive(t, phase_names[p]);
		phase[k][p][i] = cJSON_IsNumber(v) ? (int64_t)v->valuedouble :
		    -1;
		if (phase[k][p][i] > 0)
			other -= phase[k][p][i];
	}
	phase[k][NPHASE - 1][i] = other;
	rc = 0;
out:
	cJSON_Delete(o);
	return rc;
}

static bool
result_ok(const char *json)
{
	return strstr(json, "\"status\":\"ok\"") != NULL &&
	    strstr(json, "\"stdout\":\"1\\n\"") != NULL;
}

/* One cold `cordon run` (proxy: --net proxy): wall ms, or -1. */
static int64_t
cold_one(const char *cordon, bool proxy, int k, int i)
{
	const char *av[] = { cordon, "run", "--net", proxy ? "proxy" : "none",
	    NULL };
	struct proc_opts o = { .argv = av, .envp = (const char *const *)envv,
	    .stdin_data = code, .stdin_len = strlen(code),
	    .stdout_max = 1 << 20, .stderr_max = 65536 };
	struct proc_result r;
	int64_t ms = -1;

	if (proc_run(&o, 120000, &r) < 0)
		return -1;
	if (r.exit_code == 0 && result_ok(cbuf_data(r.out)) &&
	    keep_phases(k, i, cbuf_data(r.out), r.duration_ms, 0) == 0)
		ms = r.duration_ms;
	else
		fprintf(stderr, "bench_netmodes: %s run failed (exit %d): "
		    "%.300s %.300s\n", path_names[k], r.exit_code,
		    cbuf_data(r.out), cbuf_data(r.err));
	proc_result_cleanup(&r);
	return ms;
}

/* One warm run through the service: wall ms, or -1. */
static int64_t
warm_one(const struct bench_svc *sv, bool proxy, int k, int i)
{
	static char resp[1 << 16];
	int64_t t0 = time_mono_ms(), ms;
	int code_ = bench_svc_http(sv, "POST", "/v1/runs", proxy ? body_px :
	    body_off, resp, sizeof(resp));
	const char *b = strstr(resp, "\r\n\r\n");

	ms = time_mono_ms() - t0;
	if (code_ != 200 || b == NULL || !result_ok(b) ||
	    keep_phases(k, i, b + 4, ms, 1) < 0) {
		fprintf(stderr, "bench_netmodes: %s run failed (HTTP %d, or "
		    "not warm): %.400s\n", path_names[k], code_, resp);
		return -1;
	}
	return ms;
}

/* Each mode's probe record passes and will for the whole benchmark
 * (margin_s more): else `cordon probe --net MODE` first, as the pool
 * keeps no containers of a mode whose record is stale. 0 or -1. */
static int
probes_refresh(const char *cordon, const struct config *c, int64_t margin_s)
{
	static const char *const modes[] = { "none", "proxy" };
	char err[512];

	for (size_t m = 0; m < 2; m++) {
		int64_t later = time_wall_ms() + margin_s * 1000;
		const char *av[] = { cordon, "probe", "--net", modes[m], NULL };
		struct proc_opts o = { .argv = av,
		    .envp = (const char *const *)envv, .stdout_max = 1 << 20,
		    .stderr_max = 1 << 20 };
		struct proc_result r;
		int rc;

		if (probe_state_check(c, modes[m], NULL, later, err,
		    sizeof(err)) == 0)
			continue;
		fprintf(stderr, "bench_netmodes: running 'cordon probe --net "
		    "%s' first (in %llds: %s)\n", modes[m],
		    (long long)margin_s, err);
		if (proc_run(&o, 600000, &r) < 0) {
			fprintf(stderr, "bench_netmodes: cannot run %s\n",
			    cordon);
			return -1;
		}
		rc = r.exit_code;
		if (rc != 0)
			fprintf(stderr, "bench_netmodes: 'cordon probe --net %s' "
			    "failed (exit %d): %s%s\n", modes[m], rc,
			    cbuf_data(r.out), cbuf_data(r.err));
		proc_result_cleanup(&r);
		if (rc != 0)
			return -1;
	}
	return 0;
}

/* One raw `docker run --rm -i` of print(1) with the runner's flags for
 * the mode (proxy: its egress options, mounts and runtime; no prelude):
 * wall ms, or -1. */
static int64_t
raw_one(const struct config *c, bool proxy)
{
	struct netsetup_endpoint ep;
	struct netsetup_run_args na;
	char id[IMAGE_ID_MAX], hex[17], name[32], err[512];
	struct docker_spec s = { .name = name, .image_id = id,
	    .runtime = c->runtime_offline, .network = "none", .session = "",
	    .owner_pid = (long)getpid(), .memory = c->limits.memory_bytes,
	    .cpus = c->limits.cpus };
	struct dargv a, rm;
	struct proc_opts o = { .stdin_data = code, .stdin_len = strlen(code),
	    .stdout_max = 65536, .stderr_max = 65536 };
	struct proc_result r;
	int64_t ms = -1;

	if (image_pinned_id(c, id) < 0 || util_random_hex(hex, 8) < 0)
		return -1;
	snprintf(name, sizeof(name), "cordon-%s", hex);
	s.deadline_epoch_s = time_wall_ms() / 1000 + 300;
	if (proxy) {
		if (netsetup_endpoint_load(c, &ep, err, sizeof(err)) < 0 ||
		    netsetup_run_args(c, &ep, &na) < 0)
			return -1;
		s.runtime = na.runtime;
		s.network = na.network;
		s.extra = na.argv;
		s.nextra = na.argc;
		s.ca_bundle = na.ca_bundle;
		s.resolv_conf = na.resolv_conf;
	}
	if (docker_run_argv(c, &s, &a) < 0)
		return -1;
	/* --rm after "run", as the runner's removal after the answer. */
	dargv_init(&rm);
	for (size_t i = 0; i < a.n; i++) {
		dargv_add(&rm, a.v[i]);
		if (i == 1)
			dargv_add(&rm, "--rm");
	}
	if (rm.error == 0) {
		o.argv = (const char *const *)rm.v;
		if (proc_run(&o, 60000, &r) == 0) {
			if (r.exit_code == 0 && !r.timed_out &&
			    strcmp(cbuf_data(r.out), "1\n") == 0)
				ms = r.duration_ms;
			else
				fprintf(stderr, "bench_netmodes: raw docker "
				    "run (exit %d): %.200s\n", r.exit_code,
				    cbuf_data(r.err));
			proc_result_cleanup(&r);
		}
	}
	dargv_cleanup(&rm);
	dargv_cleanup(&a);
	return ms;
}

static int64_t
med(int64_t *v, int n)
{
	int64_t c[MAX_N];

	memcpy(c, v, (size_t)n * sizeof(*v));
	return bench_pct(c, n, 50);
}

static void
print_results(int n, int pool)
{
	int64_t m[NPATH];

	for (int k = 0; k < NPATH; k++) {
		int64_t c[MAX_N];

		memcpy(c, wall[k], (size_t)n * sizeof(*c));
		m[k] = bench_pct(c, n, 50);
		printf("%-13s print(1): median %5lld ms, p90 %5lld ms (n=%d)\n",
		    path_names[k], (long long)m[k],
		    (long long)bench_pct(c, n, 90), n);
	}
	printf("proxy/offline cold: median ratio %.3fx (target <= 1.15x)\n",
	    (double)m[COLD_PX] / (double)m[COLD_OFF]);
	printf("proxy/offline warm: median ratio %.3fx (target <= 1.5x); "
	    "warm proxy %lld ms (target <= 60 ms; pool %d per mode)\n",
	    (double)m[WARM_PX] / (double)m[WARM_OFF], (long long)m[WARM_PX],
	    pool);
	printf("raw docker run, proxy/offline: median ratio %.3fx (Docker's "
	    "and runsc's own: the floor under cold's); cold/raw: offline "
	    "%.3fx, proxy %.3fx\n", (double)m[RAW_PX] / (double)m[RAW_OFF],
	    (double)m[COLD_OFF] / (double)m[RAW_OFF],
	    (double)m[COLD_PX] / (double)m[RAW_PX]);
	printf("per phase, medians (ms; -1: not on the way to the answer):\n");
	printf("  %-11s", "phase");
	for (int k = 0; k < NCORDON; k++)
		printf(" %13s", path_names[k]);
	printf("\n");
	for (int p = 0; p < NPHASE; p++) {
		printf("  %-11s", phase_names[p]);
		for (int k = 0; k < NCORDON; k++)
			printf(" %13lld", (long long)med(phase[k][p], n));
		printf("\n");
	}
}

/* One round: the six paths, the order rotated by i; each run alone. */
static int
round_one(const char *cordon, const struct config *c,
    const struct bench_svc *sv, int pool, int i, int slot)
{
	for (int j = 0; j < NPATH; j++) {
		int k = (i + j) % NPATH;
		int64_t ms;

		if (bench_svc_wait_pool(sv, NULL, pool, 180) < 0)
			return -1;
		if (k == RAW_OFF || k == RAW_PX)
			ms = raw_one(c, k == RAW_PX);
		else if (k == COLD_OFF || k == COLD_PX)
			ms = cold_one(cordon, k == COLD_PX, k, slot);
		else
			ms = warm_one(sv, k == WARM_PX, k, slot);
		if (ms < 0)
			return -1;
		wall[k][slot] = ms;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	const char *cordon = argc > 1 ? argv[1] : "./cordon";
	int n = argc > 2 ? atoi(argv[2]) : 10;
	int pool = argc > 3 ? atoi(argv[3]) : 2, rc = 1;
	char dir[] = "/tmp/cordon-bench-netmodes.XXXXXX", cfg[160];
	char pool_arg[16], err[512];
	struct bench_svc sv = { .name = "pool" };
	struct config c;

	if (n < 2 || n > MAX_N || pool < 1 || pool > 8) {
		fprintf(stderr, "usage: bench_netmodes [CORDON [N (2..%d) "
		    "[POOL (1..8)]]]\n", MAX_N);
		return 2;
	}
	if (config_load(&c, NULL, err, sizeof(err)) < 0) {
		fprintf(stderr, "bench_netmodes: %s\n", err);
		return 2;
	}
	if (netsetup_ready(&c, NULL, err, sizeof(err)) < 0) {
		printf("bench_netmodes: skipped, nothing measured: the egress "
		    "network is not up (%s)\n", err);
		return 0;
	}
	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(cfg, sizeof(cfg), "%s/cordon.json", dir);
	snprintf(pool_arg, sizeof(pool_arg), "%d", pool);
	env_init(cfg);
	/* About 7 s per round of six runs at worst, plus the start. */
	if (config_copy(dir, cfg) < 0 ||
	    probes_refresh(cordon, &c, 60 + 7 * (int64_t)n) < 0 ||
	    bench_svc_start(&sv, cordon, dir, cfg, pool_arg) < 0)
		goto out;
	/* One of each first, not counted (page cache, the proxy's first
	 * connection). */
	if (round_one(cordon, &c, &sv, pool, 0, 0) < 0)
		goto out;
	for (int i = 0; i < n; i++)
		if (round_one(cordon, &c, &sv, pool, i, i) < 0)
			goto out;
	print_results(n, pool);
	rc = 0;
out:
	bench_svc_stop(&sv);
	(void)util_rm_rf(dir);
	return rc;
}
