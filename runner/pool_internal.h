/*
 * Private to the warm pool's two files: pool.c (its thread: starts,
 * retirements, stop) and pool_take.c (what runs and the service call:
 * take, stats, waits). One mutex, mu, guards everything below but the
 * fields marked thread-only.
 */
#ifndef CORDON_RUNNER_POOL_INTERNAL_H
#define CORDON_RUNNER_POOL_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "runner/pool.h"

#define POOL_START_MS 60000	/* a start that takes longer failed */
#define POOL_TICK_MS 1000	/* re-check ages and liveness this often */
#define POOL_NET_CHECK_MS 10000	/* re-check the egress network */
#define POOL_NET_FRESH_MS (POOL_NET_CHECK_MS + 2 * POOL_TICK_MS)
				/* a run relies on a check this recent */
#define POOL_DEFER_MS 1000	/* a refill waits this long at most for
				 * warm runs in flight to finish */
#define POOL_BACKOFF_MIN_MS 1000
#define POOL_BACKOFF_MAX_MS 30000

/* One start in flight, on a thread of its own (pool.c): the pool's thread
 * fills in m, image and ep, the worker sets done (under mu) when its
 * start is counted, noted and, given up, removed. */
struct pool_worker {
	struct runner_pool *p;
	pthread_t t;
	int m;
	char image[IMAGE_ID_MAX];
	struct netsetup_endpoint ep;	/* egress: the proxy to seal to */
	bool busy;			/* a thread was started: join it */
	bool done;			/* ... and it has finished */
};

/* An idle container on its way out, with why. */
struct pool_victim {
	struct pool_entry e;
	int m;
	const char *why;
};

struct runner_pool {
	const struct config *c;
	struct runner_pool_opts o;
	char session[RUNNER_SESSION_MAX + 1];
	struct runner_limits lim;	/* the defaults: what a pooled
					 * container is started with */
	pthread_mutex_t mu;
	pthread_cond_t cv;		/* thread wake-up; state changes */
	pthread_t thread;
	bool thread_up, stop, paused, joined;
	bool closing;			/* runner_pool_stop began: no new start */
	struct pool_entry idle[2][POOL_MAX_SIZE];	/* oldest first */
	size_t nidle[2];
	int64_t starting;		/* starts in flight, all modes */
	int64_t starting_m[2];		/* ... per mode */
	int64_t max_starts;		/* at most this many at once */
	unsigned gate_bit;		/* o.gate's bit for this pool */
	bool gate_blocked;		/* the gate refused the last start */
	struct pool_worker workers[POOL_STARTS_MAX];
	int64_t inflight;		/* warm runs not finished yet (their
					 * containers not removed yet) */
	int64_t cold;			/* runs that missed and started their
					 * own container, not finished yet:
					 * they count against max_starts */
	int64_t removing;		/* removals after a run's answer */
	int64_t remove_ms_last;		/* the latest one's duration */
	int64_t last_take_ms;
	uint64_t hits, misses, started, failed, retired, aborted, rm_failed;
	char last_error[160];
	int64_t next_try_ms[2], backoff_ms[2];
	bool filled[2];			/* FULL was noted since the last
					 * failure or pause */
	/* The idle clock (opts idle_s): the mode's last take, and when it
	 * first became full since the pool began or the mode was woken (0:
	 * not yet). A refill does not restart it; only a take does. */
	int64_t asked_ms[2], full_ms[2];
	bool dormant[2];		/* shrunk: no start until a take */
	uint64_t shrinks;
		/* Thread-only: the egress network as last checked. */
	bool net_ok;
	bool daemon_down;		/* thread-only: runner_daemon_check
					 * failed at the last look */
	int64_t net_checked_ms;
	struct netsetup_endpoint net_ep;
	/* Under mu: the last egress check that passed, for runs
	 * (runner_pool_egress); 0: none, or the last one failed. */
	int64_t net_ok_ms;
	struct netsetup_endpoint net_ok_ep;
	struct pool_victim victims[2 * POOL_MAX_SIZE];	/* idle ones */
};

/* Waits (not under mu) until no runner_pool_remove_later is pending, up
 * to timeout_ms. */
void runner_pool_wait_removals(struct runner_pool *p, int64_t timeout_ms);

/* Under mu: waits on cv for at most ms. */
void runner_pool_cond_wait(struct runner_pool *p, int64_t ms);

bool runner_pool_ep_equal(const struct netsetup_endpoint *a,
    const struct netsetup_endpoint *b);

/* pool_start.c: tells the owner (on_note) what happened to a container
 * of mode m (not under mu). */
void runner_pool_note(struct runner_pool *p, enum runner_pool_event ev,
    int m, const char *name, const char *why, int64_t ms);
/* Removes e's container by name, even while its `docker run` may still be
 * creating it, and frees its CLIs (not under mu); a failed removal is
 * counted and noted. The removal's result (-ENOENT: nothing spawned or
 * nothing there). */
int runner_pool_entry_destroy(struct runner_pool *p, int m,
    struct pool_entry *e);
/* One start for mode m (egress: sealed to ep), on a worker thread, not
 * under mu: started, counted, noted; kept, or removed by name. */
void runner_pool_start_one(struct runner_pool *p, int m, const char *image,
    const struct netsetup_endpoint *ep);

#endif
