/*
 * Sessions against single runs, in one `cordon serve --pool P` on a
 * temporary unix socket: how long POST /v1/sessions takes (a container
 * started and its driver ready), how long a call in a session takes, and a
 * warm run (POST /v1/runs with a pooled container, each once the pool is
 * full again), all `print(1)`, interleaved. Prints medians, p90s and the
 * call/warm-run ratio (target: a call <= 0.5x a warm run). With PROFILE
 * the sessions run in that image profile (e.g. data; the pool's warm runs
 * stay in the default one). Usage: bench_sessions [CORDON [N [P
 * [PROFILE]]]] (N per figure, default 10; P default 2).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_svc.h"
#include "common/proc.h"
#include "common/util.h"

#define MAX_N 200

static const char body[] = "{\"code\":\"print(1)\\n\",\"timeout_s\":120}";

/* Wall ms of one request whose reply must carry want; -1 otherwise. */
static int64_t
timed(const struct bench_svc *sv, const char *method, const char *path,
    const char *data, int want_code, const char *want, char *resp,
    size_t len)
{
	int64_t t0 = time_mono_ms();
	int code = bench_svc_http(sv, method, path, data, resp, len);
	int64_t ms = time_mono_ms() - t0;

	if (code != want_code || strstr(resp, want) == NULL) {
		fprintf(stderr, "bench_sessions: %s %s: HTTP %d: %.300s\n",
		    method, path, code, resp);
		return -1;
	}
	return ms;
}

/* The session id in a create reply, into id (24 bytes). */
static int
session_id(const char *resp, char *id)
{
	const char *q = strstr(resp, "\"id\":\"");

	if (q == NULL || sscanf(q + 6, "%23[a-z0-9_]", id) != 1)
		return -1;
	return 0;
}

static void
print_latency(const char *what, int64_t *ms, int n)
{
	int64_t p90 = bench_pct(ms, n, 90);	/* sorts ms */

	printf("sessions %s: median %lld ms, p90 %lld ms (n=%d)\n", what,
	    (long long)ms[n / 2], (long long)p90, n);
}

int
main(int argc, char **argv)
{
	const char *cordon = argc > 1 ? argv[1] : "./cordon";
	int n = argc > 2 ? atoi(argv[2]) : 10;
	int pool = argc > 3 ? atoi(argv[3]) : 2, rc = 1;
	const char *profile = argc > 4 ? argv[4] : NULL;
	char dir[] = "/tmp/cordon-bench-sessions.XXXXXX", cfg[160], text[512];
	char create_body[96] = "{}";
	char pool_arg[16], resp[8192], id[24], path[96];
	int64_t create[MAX_N], call[MAX_N], warm[MAX_N];
	struct bench_svc sv = { .name = "pool" };

	if (n < 2 || n > MAX_N || pool < 1 || pool > 64 || (profile != NULL &&
	    (strlen(profile) > 32 || strspn(profile,
	    "abcdefghijklmnopqrstuvwxyz0123456789_-") != strlen(profile)))) {
		fprintf(stderr, "usage: bench_sessions [CORDON [N (2..%d) [POOL "
		    "(1..64) [PROFILE]]]]\n", MAX_N);
		return 2;
	}
	if (profile != NULL)
		snprintf(create_body, sizeof(create_body), "{\"profile\":"
		    "\"%s\"}", profile);
	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(cfg, sizeof(cfg), "%s/cordon.json", dir);
	snprintf(text, sizeof(text), "{\"audit_log\":\"%s/audit.log\","
	    "\"serve\":{\"sessions_per_tenant\":4}}", dir);
	snprintf(pool_arg, sizeof(pool_arg), "%d", pool);
	if (util_write_file_atomic(cfg, text, strlen(text), 0644) < 0 ||
	    bench_svc_start(&sv, cordon, dir, cfg, pool_arg) < 0 ||
	    bench_svc_wait_pool(&sv, "none", pool, 120) < 0)
		goto out;
	for (int i = 0; i < n; i++) {
		/* Each alone: the pool is full, no refill in the background. */
		if ((create[i] = timed(&sv, "POST", "/v1/sessions",
		    create_body, 201, "\"id\":", resp, sizeof(resp))) < 0 ||
		    session_id(resp, id) < 0)
			goto out;
		snprintf(path, sizeof(path), "/v1/sessions/%s/runs", id);
		/* The first call pays for nothing the others do not. */
		if (timed(&sv, "POST", path, body, 200, "\"stdout\":\"1\\n\"",
		    resp, sizeof(resp)) < 0 ||
		    (call[i] = timed(&sv, "POST", path, body, 200,
		    "\"stdout\":\"1\\n\"", resp, sizeof(resp))) < 0)
			goto out;
		snprintf(path, sizeof(path), "/v1/sessions/%s", id);
		if (timed(&sv, "DELETE", path, NULL, 200, "ended", resp,
		    sizeof(resp)) < 0 ||
		    bench_svc_wait_pool(&sv, "none", pool, 120) < 0 ||
		    (warm[i] = timed(&sv, "POST", "/v1/runs", body, 200,
		    "\"warm\":true", resp, sizeof(resp))) < 0 ||
		    bench_svc_wait_pool(&sv, "none", pool, 120) < 0)
			goto out;
	}
	if (profile != NULL)
		printf("sessions in profile %s\n", profile);
	print_latency("create (container + driver ready)", create, n);
	print_latency("call print(1) in a session", call, n);
	print_latency("warm run print(1) (pool)", warm, n);
	printf("sessions call/warm-run median ratio: %.3f (target <= 0.5)\n",
	    (double)call[n / 2] / (double)warm[n / 2]);
	rc = 0;
out:
	bench_svc_stop(&sv);
	(void)util_rm_rf(dir);
	return rc;
}
