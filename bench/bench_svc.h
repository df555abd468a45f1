/*
 * A `cordon serve` instance for the service benchmarks: started on a
 * temporary unix socket, spoken to with one-shot HTTP/1.1 requests,
 * stopped by SIGTERM. Also the nearest-rank percentile they print.
 */
#ifndef CORDON_BENCH_SVC_H
#define CORDON_BENCH_SVC_H

#include <stddef.h>
#include <stdint.h>

#include "common/proc.h"

struct bench_svc {
	const char *name;	/* for messages and the socket's name */
	char sock[108];
	struct proc *p;
};

/* One request over sv's socket: the HTTP status, or -1; the whole
 * response in resp (NUL-terminated, truncated to len). */
int bench_svc_http(const struct bench_svc *sv, const char *method,
    const char *path, const char *data, char *resp, size_t len);

/* `CORDON serve --config CFG --socket DIR/NAME.sock --pool POOL`, waited
 * for until /v1/health answers (10 s). 0, or -1 with a message. */
int bench_svc_start(struct bench_svc *sv, const char *cordon,
    const char *dir, const char *cfg, const char *pool);

/* SIGTERM, then waits for it to drain and exit (60 s). */
void bench_svc_stop(struct bench_svc *sv);

/* Idle containers of sv's python pool (its /v1/health "pool"): of mode
 * "none" or "proxy", or with NULL the smaller of both; -1 when health
 * does not say. */
int bench_svc_pool_idle(const struct bench_svc *sv, const char *mode);

/* Polls (100 ms) until bench_svc_pool_idle(sv, mode) >= want, for up to
 * secs seconds. 0, or -1 after saying so on stderr with the service's
 * health (a mode whose probe fails or is stale gets no containers). */
int bench_svc_wait_pool(const struct bench_svc *sv, const char *mode,
    int want, int secs);

/* Sorts v (n > 0) and returns its nearest-rank percentile pc (1..100). */
int64_t bench_pct(int64_t *v, int n, int pc);

#endif
