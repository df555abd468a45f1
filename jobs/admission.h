/*
 * Admission of a front end's work (issue 35): tenants with their tokens
 * and limits, the counters, one wait list in arrival order and the grants
 * of its slots. A piece of work runs at once when its tenant has nothing
 * queued and both its own limit and the global one have room; else it
 * waits, up to its tenant's max_queue; else it is refused, with nothing
 * counted. A freed slot goes to the oldest waiter whose tenant has room
 * (FIFO within a tenant; across tenants, the first that may go). One
 * lock; calls may come from any thread. It never calls out while holding
 * the lock, logs nothing and words nothing a client reads: the front ends
 * keep their texts, codes and metrics.
 */
#ifndef CORDON_JOBS_ADMISSION_H
#define CORDON_JOBS_ADMISSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include "common/config.h"
#include "jobs/pools.h"

#define JOBS_ADMIT_LOCAL 0		/* serve's unix-socket callers with no
					 * token; MCP's one owner */
#define JOBS_ADMIT_MCP_RUNNING 1	/* MCP: calls at once */
#define JOBS_ADMIT_MCP_PENDING 8	/* MCP: calls waiting */

enum jobs_wait_state {
	JOBS_WAIT_NONE,			/* not in the table (refused, out) */
	JOBS_WAIT_QUEUED,		/* waiting for a slot */
	JOBS_WAIT_GRANTED,		/* holds a slot, start() not yet called */
	JOBS_WAIT_ACTIVE,		/* holds a slot, started */
};

/* One piece of work waiting for (or holding) a slot of its tenant,
 * embedded in the caller's job. The caller sets tenant, start and refuse
 * before jobs_admit; the rest is the table's. */
struct jobs_wait {
	size_t tenant;
	/* Granted from the queue: counted active now; go. Called by
	 * jobs_admit_drain, unlocked. */
	void (*start)(struct jobs_wait *w);
	/* Refused while queued (jobs_admit_flush), with its why; out of the
	 * table and uncounted already. Called unlocked. */
	void (*refuse)(struct jobs_wait *w, const char *why);
	enum jobs_wait_state state;	/* the table's */
	TAILQ_ENTRY(jobs_wait) link;	/* the table's */
};

struct jobs_admission_hooks {
	/* Waiters were granted: called unlocked, on the thread that freed
	 * the slot; the owner then calls jobs_admit_drain on its own thread
	 * (or at once, when that is its thread). NULL: the owner drains when
	 * it likes. */
	void (*granted)(void *arg);
	void *arg;
};

struct jobs_admission;

/* The table of front end f. JOBS_FRONT_SERVE: tenant 0 is "local" (the
 * service's global_limit and queue_max), then one per configured tenant,
 * under global_limit. JOBS_FRONT_MCP: the one owner, "local",
 * JOBS_ADMIT_MCP_RUNNING at once and JOBS_ADMIT_MCP_PENDING waiting. c is
 * read here only; h (may be NULL) is copied. NULL on ENOMEM. */
struct jobs_admission *jobs_admission_new(const struct config *c,
    enum jobs_front f, const struct jobs_admission_hooks *h);
/* Accepts NULL. Nothing may wait or hold a slot any more. */
void jobs_admission_free(struct jobs_admission *a);

/* How many tenants (indexes 0 to that less one), and tenant t's name (NULL
 * for an index out of range); fixed at jobs_admission_new. */
size_t jobs_admission_tenants(const struct jobs_admission *a);
const char *jobs_admission_name(const struct jobs_admission *a, size_t t);
/* The tenant whose token is tok, compared in constant time over the full
 * length of every token; -EACCES when none (the local tenant has none). */
int jobs_admission_by_token(const struct jobs_admission *a, const char *tok);

/* Admits w for w->tenant: 1 when it holds a slot now (ACTIVE; the caller
 * goes on, start() is not called), 0 when it was queued (start() or
 * refuse() comes later, unless it is withdrawn), -EAGAIN when the tenant
 * is over its limit and its queue (nothing counted); -EINVAL for a tenant
 * out of range; -EBUSY when w is queued or granted already (it is left
 * as it was). On every refusal w's state is JOBS_WAIT_NONE. */
int jobs_admit(struct jobs_admission *a, struct jobs_wait *w);
/* True when a new piece of work of tenant t would get -EAGAIN now
 * (nothing counted): to refuse it before its body is read. */
bool jobs_admit_would_reject(struct jobs_admission *a, size_t t);
/* w leaves the table, uncounted, if it is queued or granted (a granted
 * slot goes to the next waiter): true, and w never starts. False when it
 * is active (started, or being started: it holds its slot until
 * released) or not in the table. */
bool jobs_admit_withdraw(struct jobs_admission *a, struct jobs_wait *w);
/* A piece of work of tenant t that held a slot ended: the slot goes to
 * the oldest waiter that may go (granted; the hook is called); true. A
 * release with no started slot of t held is a caller's bug: ignored, so
 * the counters stay whole, and false, for the caller to say so. */
bool jobs_admit_release(struct jobs_admission *a, size_t t);
/* Calls start() of each granted waiter, oldest grant first, unlocked; a
 * start() may call back into the table (release, admit, drain). */
void jobs_admit_drain(struct jobs_admission *a);
/* Refuses every queued waiter, oldest first, with why (granted ones still
 * start); a refuse() may call back into the table. Returns how many. */
size_t jobs_admit_flush(struct jobs_admission *a, const char *why);

struct jobs_admit_stats {
	int64_t active;			/* slots held (granted included) */
	int64_t queued;			/* waiting */
	int64_t granted;		/* of active, not yet started */
	int64_t max_concurrent;		/* the limit; the table's: global */
	int64_t max_queue;		/* the table's: tenant 0's */
};

/* Tenant t's counters and limits, or with SIZE_MAX the whole table's
 * (zeroes for an index out of range). */
void jobs_admit_stats(struct jobs_admission *a, size_t t,
    struct jobs_admit_stats *st);

#endif
