/*
 * The service's counters and their Prometheus text exposition. Updated and
 * rendered on the event loop's thread only; pure.
 */
#ifndef CORDON_SERVE_METRICS_H
#define CORDON_SERVE_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runner/runner.h"
#include "runner/pool_conf.h"

#define SERVE_METRICS_BUCKETS 10	/* latency buckets, +Inf excluded */
#define SERVE_STATUS_ERROR (RUNNER_SANDBOX_ERROR + 1)	/* no result */
#define SERVE_NSTATUS (SERVE_STATUS_ERROR + 1)

/* One warm pool's figures (set before rendering). */
struct serve_pool_figures {
	const char *lang;		/* "python", "bash", "node" */
	const char *profile;		/* the profile it is kept in */
	bool kept;			/* false: no such pool, no lines */
	int64_t idle[2];		/* per net mode (index runner_net) */
	bool dormant[2];		/* shrunk for want of runs */
	int64_t starting;
	uint64_t hits, misses, shrinks;
};

struct serve_metrics {
	uint64_t runs[SERVE_NSTATUS];	/* by runner status, + "error" */
	uint64_t rejected;		/* 429 */
	uint64_t unavailable;		/* 503 */
	uint64_t bad_requests;		/* 400, 401, 404, 405, 413 */
	uint64_t forbidden;		/* 403: a net or policy the tenant
					 * may not use */
	uint64_t hist[SERVE_METRICS_BUCKETS + 1];	/* cumulative at render */
	uint64_t count;
	double sum_s;
	int64_t queue_depth;
	int64_t active;
	int64_t pool_size;
	uint64_t pool_hits;
	uint64_t pool_misses;		/* runs started cold */
	struct serve_pool_figures pools[RUNNER_POOLS_MAX];
	int64_t sessions_live;		/* set before rendering */
	uint64_t sessions_started, sessions_ended;	/* likewise */
	uint64_t session_calls[SERVE_NSTATUS];	/* by status, + "error" */
	/* The service's connections (set before rendering; issue 39). */
	int64_t conns_unix, conns_tcp;
	uint64_t conns_refused_peer;	/* over max_connections_per_peer */
	uint64_t listener_full;		/* closed at once: its listener at
					 * its cap, none to make room */
	uint64_t evicted;		/* reading a head, closed to make room */
	uint64_t accept_errors;		/* EMFILE and others: paused */
	int64_t unsent_bytes;		/* replies not yet taken by sockets */
	bool own;			/* render one tenant's view: no pool
					 * and no connection lines */
};

/* Upper bounds of the latency buckets, in seconds. */
extern const double serve_metrics_bounds[SERVE_METRICS_BUCKETS];

/* Adds src's counters (not its gauges) into dst. */
void serve_metrics_add(struct serve_metrics *dst,
    const struct serve_metrics *src);

/* Counts a finished run: status is a runner_status or SERVE_STATUS_ERROR;
 * latency_ms from admission to reply. */
void serve_metrics_observe(struct serve_metrics *m, int status,
    int64_t latency_ms);

/* The text exposition (format 0.0.4), malloc'd, caller frees; NULL on
 * ENOMEM. With m->own, one tenant's view: its runs, refusals, latency,
 * queue, active runs and sessions, nothing of the pool or the
 * connections. */
char *serve_metrics_render(const struct serve_metrics *m);

#endif
