/*
 * The warm pool: per net mode, N containers started ahead of time by the
 * same `docker run -i` hardening as a cold run (container.h), but running
 * a holder (DARGV_HOLDER) instead of the job; egress ones sealed; then,
 * per container, one `docker exec -i` of the job's command line (python,
 * or the egress prelude that waits for the run's credential line: a
 * pooled container holds none, and learns its address at the seal),
 * already waiting for its program on stdin. The job is that exec: its
 * exit is one process's, not the sandbox's teardown (measured: ~10 ms
 * instead of ~75 ms from the last output to the exit status), and it
 * inherits every control from the container (user, capabilities,
 * no-new-privileges, rlimits, cgroup, network). A run takes one
 * (runner_request.pool), registers it with the proxy (egress), writes its
 * credential line and code, and from then on it is a cold run: same
 * deadline, caps, end-state inspection and removal (the exec's exit code
 * is the job's, from the daemon). A taken container is always removed
 * after its run: a pooled container never serves a second run. A
 * background thread refills the pool, up to max_starts starts at once
 * (each on a thread of its own), and replaces a container that died,
 * outlived the max age, or was started from an image no longer pinned.
 * The pool never makes a run wait: an empty pool means a cold start.
 */
#ifndef CORDON_RUNNER_POOL_H
#define CORDON_RUNNER_POOL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "common/proc.h"
#include "netsetup/netsetup.h"
#include "runner/image.h"
#include "runner/result.h"

#define POOL_MAX_SIZE 64	/* idle containers per mode */
#define POOL_STARTS_MAX 16	/* starts in flight at once, at most */

/* What the pool tells its owner (runner_pool_opts.on_note), so that the
 * service can log it: the pool itself never prints. */
enum runner_pool_event {
	RUNNER_POOL_READY,	/* a container is idle */
	RUNNER_POOL_FULL,	/* ... and the mode is full again, the first
				 * time since start-up, a failure or a pause */
	RUNNER_POOL_FAILED,	/* a start failed (why); retried later */
	RUNNER_POOL_ABORTED,	/* a start given up (pause, stop) and its
				 * container removed by name (why: outcome) */
	RUNNER_POOL_RETIRED,	/* an idle one removed unused (why) */
	RUNNER_POOL_RM_FAILED,	/* a removal failed (why): it may be left */
	RUNNER_POOL_DAEMON_DOWN,	/* dockerd does not answer (why): no
					 * start is tried until it does */
	RUNNER_POOL_DAEMON_UP,	/* ... it answers again: refilling */
	RUNNER_POOL_SHRUNK,	/* no run asked for the mode for idle_s
				 * since it was full: its idle containers
				 * are removed and none is started until a
				 * run asks again (that run starts cold) */
};

struct runner_pool_note {
	enum runner_pool_event ev;
	enum runner_net net;
	const char *name;	/* the container */
	const char *why;	/* "" or a reason (docker's words) */
	int64_t ms;		/* READY, FULL, FAILED: the start's duration;
				 * SHRUNK: the idle time (idle_s) */
	int64_t idle, size;	/* idle containers of net now, and the goal */
	unsigned lang;		/* the pool's language, CONFIG_LANG_* */
	const char *profile;	/* NULL, or the profile of a pool kept in
				 * one its language does not run in by
				 * default (opts profile_label) */
};

/* Starts in flight shared by several pools (runner_pools_new gives its
 * pools one): their sum, with their cold runs in flight (runs that missed
 * a pool and start their own), stays within max, as one pool's own do
 * within its max_starts. The places go round: a pool that could not get
 * one is marked waiting, and a pool not marked leaves a freed place to
 * the waiting ones; a waiting pool looks again every 100 ms. Set up by
 * runner_pool_gate_init; it must outlive its pools (at most 64). */
struct runner_pool_gate {
	atomic_llong starting;
	atomic_llong cold;
	atomic_ullong waiting;		/* bit per pool (its gate_bit) */
	atomic_uint npools;		/* bits handed out */
	int64_t max;
};

/* g for max_starts as runner_pool_opts.max_starts (0: the online CPUs,
 * capped at POOL_STARTS_MAX), none in flight. */
void runner_pool_gate_init(struct runner_pool_gate *g, int64_t max_starts);

/* Starts in flight through g now (tests). */
int64_t runner_pool_gate_starting(struct runner_pool_gate *g);

struct runner_pool_opts {
	int64_t size;		/* idle containers per net mode, 1..64 */
	int64_t max_age_s;	/* replace an idle one older than this */
	/* Shrink a mode to 0 when no run has asked for it (runner_pool_take)
	 * for this long since it was last full, until one asks again; 0:
	 * never. */
	int64_t idle_s;
	bool modes[2];		/* which modes to keep (index runner_net) */
	/* Starts in flight at once, 0..POOL_STARTS_MAX (0: the online CPUs,
	 * capped at POOL_STARTS_MAX); never more than the free places. */
	int64_t max_starts;
	/* NULL, or a gate shared with other pools: starts in flight counted
	 * across them all too (runner_pool_gate). */
	struct runner_pool_gate *gate;
	const char *session;	/* container label; NULL: "pool" */
	/* The language its exec waits in (CONFIG_LANG_*; 0: python): the
	 * job's command line for it, as a cold run's (docker_exec_argv).
	 * The config given to runner_pool_new must be at a profile that
	 * offers it (config_profile_use): its image and probe records are
	 * the pool's. */
	unsigned lang;
	/* NULL, or the profile named in the pool's notes: a pool of lang in
	 * a profile other than lang's default (runner_pools_new). */
	const char *profile_label;
	bool skip_probe_check;	/* only `cordon probe --warm`: keep the
				 * pool even while no probe passes */
	/* NULL, or called on one of the pool's threads (its own, or a
	 * start's: several at once), without its lock, for each event; n is
	 * valid during the call only. */
	void (*on_note)(void *arg, const struct runner_pool_note *n);
	void *note_arg;
};

struct runner_pool_stats {
	int64_t idle[2];	/* ready now, per mode */
	bool dormant[2];	/* shrunk for want of runs (idle_s) */
	uint64_t shrinks;	/* times a mode was shrunk so */
	int64_t starting;	/* being started */
	int64_t max_starts;	/* at most this many at once, cold runs
				 * in flight included */
	int64_t cold;		/* runs that missed, in flight */
	uint64_t hits;		/* runs given a warm container */
	uint64_t misses;	/* runs that asked and started cold */
	uint64_t started;	/* containers made ready */
	uint64_t failed;	/* starts that failed */
	uint64_t retired;	/* idle ones removed unused (age, death,
				 * image change, probe, pause) */
	uint64_t aborted;	/* starts given up (pause, stop), their
				 * containers removed by name */
	uint64_t rm_failed;	/* removals that failed */
	int64_t removing;	/* warm runs' containers being removed after
				 * their answer (runner_pool_remove_later) */
	int64_t remove_ms_last;	/* the latest such removal's duration, or -1 */
	char last_error[160];	/* "" or the latest start failure */
};

/* One taken container: the caller owns p (the `docker run` CLI of the
 * container's holder, stdin held) and x (`docker exec -i` of the job's
 * python, already waiting for its program: stdin held), and must remove
 * the container by name when done. */
struct pool_entry {
	struct proc *p;
	struct proc *x;
	char name[RUNNER_NAME_MAX];
	char image[IMAGE_ID_MAX];
	int64_t born_ms;		/* monotonic */
	uint64_t memory;
	double cpus;
	struct netsetup_endpoint ep;	/* egress: the proxy it was sealed to */
	char addr[NETSETUP_ADDR_MAX];	/* egress: its address there, learned
					 * by the seal; a run registers it */
};

/* Starts the refill thread. 0 and *out, or a negative errno with a
 * reason. c must outlive the pool. */
int runner_pool_new(const struct config *c, const struct runner_pool_opts *o,
    struct runner_pool **out, char *err, size_t errlen);

/* The language of p's containers (CONFIG_LANG_*, never 0). */
unsigned runner_pool_lang(const struct runner_pool *p);

/* Paused: every idle container is removed and none is started (kill-all,
 * shutdown) until unpaused. Returns at once; the thread does the work. */
void runner_pool_pause(struct runner_pool *p, bool paused);

/* Waits (up to timeout_ms) until each kept mode has its N idle containers
 * (a mode shrunk for want of runs is not waited for); 0, or -ETIMEDOUT.
 * For tests and benchmarks. */
int runner_pool_wait_full(struct runner_pool *p, int64_t timeout_ms);

void runner_pool_stats(struct runner_pool *p, struct runner_pool_stats *s);

/* Stops the thread: every start in flight is given up (its container
 * removed by name once `docker run` created it, container_abort; their
 * threads joined), every idle container is removed, and then the thread
 * is joined. Returns when no
 * container of the pool is left; the stats stay readable. Idempotent. */
void runner_pool_stop(struct runner_pool *p);

/* runner_pool_stop, then frees. Accepts NULL. */
void runner_pool_free(struct runner_pool *p);

/* For runner_run, proxy mode: the egress endpoint the pool's thread last
 * found ready (netsetup_ready, which it repeats every POOL_NET_CHECK_MS
 * while proxy mode is kept: its idle containers are retired as soon as
 * a check fails), into *ep, when that check passed at most
 * POOL_NET_FRESH_MS ago; -ENOENT otherwise (the run checks for itself). */
int runner_pool_egress(struct runner_pool *p, struct netsetup_endpoint *ep);

/* For runner_run: hands out the oldest idle container of the mode that
 * matches (image, memory, cpus, egress endpoint) and is still waiting,
 * and counts a hit; -ENOENT at once when there is none. Never blocks on a
 * start. A taken entry is out of the pool for good. Every call is a run
 * asking for the mode: it restarts the mode's idle clock (idle_s), and
 * wakes a mode shrunk for want of runs (the refill begins). */
int runner_pool_take(struct runner_pool *p, enum runner_net net,
    const char *image, const struct runner_limits *lim,
    const struct netsetup_endpoint *ep, struct pool_entry *out);

/* For runner_run: a warm run has ended (its container is removed); the
 * refill waits for those in flight, POOL_DEFER_MS at most. */
void runner_pool_run_done(struct runner_pool *p);

/* For runner_run, once a warm run's result is complete: removes its
 * container (by name) on a thread of its own, then frees x and holder
 * (the CLIs: killed and reaped), releases *slot (taken over: *slot then
 * holds none) and counts the run done (runner_pool_run_done). So the
 * answer does not wait for the sandbox's teardown. 0, or a negative errno
 * when no thread could be started (nothing taken over: remove it
 * yourself). runner_pool_stop waits for these removals. */
struct runner_slot;
int runner_pool_remove_later(struct runner_pool *p, const char *name,
    struct proc *x, struct proc *holder, struct runner_slot *slot);

/* For runner_run: a run that could not use the pool and starts its own
 * container. Until runner_pool_cold_done it counts against max_starts:
 * the refill starts a container only while fewer than max_starts
 * sandboxes (its starts and the cold runs) are being started, so under
 * load it does not slow the runs that clients are waiting on. */
void runner_pool_count_miss(struct runner_pool *p);
/* For runner_run: a run counted by runner_pool_count_miss has ended. */
void runner_pool_cold_done(struct runner_pool *p);

#endif
