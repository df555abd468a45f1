/*
 * The run_code calls of `cordon mcp`: each takes a slot in the MCP front's
 * admission table and a cancel flag; the worker thread starts what the
 * table grants and runs it. A cancel that races a call's start is settled
 * by jobs_admit_withdraw: a withdrawn call never starts, else its flag
 * stops it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "common/log.h"
#include "jobs/admission.h"
#include "mcp/mcp.h"
#include "mcp/queue.h"

/* Calls with a cancel flag each: those running plus those waiting. */
#define MAX_CALLS (JOBS_ADMIT_MCP_RUNNING + JOBS_ADMIT_MCP_PENDING)

/* A tools/call request waiting or running. It holds its slot (its flag)
 * from queueing to its end, so cancelling one call never stops another. */
struct call {
	struct jobs_wait w;
	struct mcp_queue *q;
	char *msg;
	size_t len;
	char *id;		/* its id printed as JSON, any length */
	int slot;		/* its flag in q->cancel */
	int refs;		/* the queue's (until it ran or was dropped),
				 * and a cancel's in progress */
	bool cancelled;		/* notifications/cancelled named it */
	TAILQ_ENTRY(call) link;	/* in ready */
};

struct mcp_queue {
	struct mcp_queue_ops ops;
	struct jobs_admission *adm;	/* its own lock, taken after lock */
	atomic_int cancel[MAX_CALLS];	/* by slot; polled by the run */
	atomic_int stop;		/* a signal came */
	pthread_t worker;
	bool started;
	pthread_mutex_t lock;		/* guards the fields below */
	pthread_cond_t wake;
	struct call *calls[MAX_CALLS];	/* by slot: every call alive */
	TAILQ_HEAD(, call) ready;	/* admitted, for the worker to run */
	bool granted;			/* the worker must drain the table */
	bool closing;			/* no more calls will come */
};

static const char busy_text[] = "Server busy: too many run_code calls "
    "waiting";

/* Drops n references to c; the last one frees the call and its slot.
 * q->lock held. */
static void
call_put(struct mcp_queue *q, struct call *c, int n)
{
	if ((c->refs -= n) > 0)
		return;
	q->calls[c->slot] = NULL;
	free(c->msg);
	free(c->id);
	free(c);
}

static struct call *
call_of(struct jobs_wait *w)
{
	return (struct call *)(void *)((char *)w - offsetof(struct call, w));
}

/* The table granted c a slot (jobs_admit_drain, on the worker): it runs. */
static void
call_start(struct jobs_wait *w)
{
	struct call *c = call_of(w);
	struct mcp_queue *q = c->q;

	pthread_mutex_lock(&q->lock);
	TAILQ_INSERT_TAIL(&q->ready, c, link);
	pthread_cond_signal(&q->wake);
	pthread_mutex_unlock(&q->lock);
}

/* Flushed after a signal while waiting: dropped with no reply. */
static void
call_refuse(struct jobs_wait *w, const char *why)
{
	struct call *c = call_of(w);
	struct mcp_queue *q = c->q;

	(void)why;
	pthread_mutex_lock(&q->lock);
	call_put(q, c, 1);
	pthread_cond_signal(&q->wake);
	pthread_mutex_unlock(&q->lock);
}

/* The table's hook: a freed slot went to a waiting call, on whichever
 * thread freed it; the worker starts it (jobs_admit_drain). */
static void
on_granted(void *arg)
{
	struct mcp_queue *q = arg;

	pthread_mutex_lock(&q->lock);
	q->granted = true;
	pthread_cond_signal(&q->wake);
	pthread_mutex_unlock(&q->lock);
}

/* Runs one admitted call on the worker, unless it was cancelled or a
 * signal came, then frees its slot. A call cancelled while running gets no
 * reply (as the protocol asks). */
static void
call_run(struct mcp_queue *q, struct call *c)
{
	char *reply = NULL;
	bool skip, send;
	int rc = 0;

	pthread_mutex_lock(&q->lock);
	skip = c->cancelled || q->stop != 0;
	pthread_mutex_unlock(&q->lock);
	if (!skip) {
		rc = q->ops.run(q->ops.arg, c->msg, c->len,
		    &q->cancel[c->slot], &reply);
		if (rc < 0)
			reply = mcp_error_reply(c->id, MCP_INTERNAL_ERROR,
			    "Internal error: out of memory");
	}
	pthread_mutex_lock(&q->lock);
	send = !skip && !c->cancelled && (reply != NULL || rc < 0);
	call_put(q, c, 1);
	pthread_mutex_unlock(&q->lock);
	if (send)
		q->ops.emit(q->ops.arg, reply);
	else
		free(reply);
	/* After the reply: the next call starts once this one answered. */
	if (!jobs_admit_release(q->adm, JOBS_ADMIT_LOCAL))
		log_warnx("mcp: a call released a slot it did not hold");
}

/* q->lock held: no more calls will come, and none holds or waits for a
 * slot. */
static bool
worker_done(struct mcp_queue *q)
{
	struct jobs_admit_stats st;

	if (!q->closing)
		return false;
	jobs_admit_stats(q->adm, SIZE_MAX, &st);
	return st.active == 0 && st.queued == 0;
}

/* The worker: starts the granted calls and runs the admitted ones in order
 * until no more will come and none is left. */
static void *
worker_main(void *arg)
{
	struct mcp_queue *q = arg;
	struct call *c;

	pthread_mutex_lock(&q->lock);
	for (;;) {
		while (!q->granted && TAILQ_EMPTY(&q->ready) &&
		    !worker_done(q))
			pthread_cond_wait(&q->wake, &q->lock);
		if (q->granted) {
			q->granted = false;
			pthread_mutex_unlock(&q->lock);
			jobs_admit_drain(q->adm);	/* call_start each */
			pthread_mutex_lock(&q->lock);
			continue;
		}
		if ((c = TAILQ_FIRST(&q->ready)) == NULL)
			break;
		TAILQ_REMOVE(&q->ready, c, link);
		pthread_mutex_unlock(&q->lock);
		call_run(q, c);
		pthread_mutex_lock(&q->lock);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

int
mcp_queue_new(const struct config *c, const struct mcp_queue_ops *ops,
    struct mcp_queue **out)
{
	struct jobs_admission_hooks h = { .granted = on_granted };
	struct mcp_queue *q;

	*out = NULL;
	if ((q = calloc(1, sizeof(*q))) == NULL)
		return -ENOMEM;
	h.arg = q;
	if ((q->adm = jobs_admission_new(c, JOBS_FRONT_MCP, &h)) == NULL) {
		free(q);
		return -ENOMEM;
	}
	q->ops = *ops;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->wake, NULL);
	TAILQ_INIT(&q->ready);
	*out = q;
	return 0;
}

int
mcp_queue_start(struct mcp_queue *q)
{
	int rc = pthread_create(&q->worker, NULL, worker_main, q);

	q->started = rc == 0;
	return -rc;
}

void
mcp_queue_call(struct mcp_queue *q, const char *msg, size_t len, char *id)
{
	struct call *c = calloc(1, sizeof(*c));
	char *copy = malloc(len), *reply = NULL;
	int slot = -1, rc;

	/* Whole before it is in q->calls, where a cancel may look. */
	if (c != NULL && copy != NULL) {
		memcpy(copy, msg, len);
		*c = (struct call){ .w = { .tenant = JOBS_ADMIT_LOCAL,
		    .start = call_start, .refuse = call_refuse }, .q = q,
		    .msg = copy, .len = len, .id = id, .slot = -1,
		    .refs = 1 };
	}
	pthread_mutex_lock(&q->lock);
	for (int i = 0; i < MAX_CALLS && c != NULL && copy != NULL; i++)
		if (q->calls[i] == NULL) {
			slot = c->slot = i;
			/* A signal may have come in between. */
			q->cancel[slot] = q->stop != 0;
			q->calls[i] = c;
			break;
		}
	pthread_mutex_unlock(&q->lock);
	if (slot < 0) {
		q->ops.emit(q->ops.arg, c != NULL && copy != NULL ?
		    mcp_error_reply(id, -32000, busy_text) :
		    mcp_error_reply(id, MCP_INTERNAL_ERROR,
		    "Internal error: out of memory"));
		free(copy);
		free(c);
		free(id);
		return;
	}
	rc = jobs_admit(q->adm, &c->w);
	pthread_mutex_lock(&q->lock);
	if (rc == 1) {
		/* Admitted at once: still the worker's to run. */
		TAILQ_INSERT_TAIL(&q->ready, c, link);
		pthread_cond_signal(&q->wake);
	} else if (rc < 0) {
		reply = rc == -EAGAIN ? mcp_error_reply(c->id, -32000,
		    busy_text) : mcp_error_reply(c->id, MCP_INTERNAL_ERROR,
		    "Internal error");
		call_put(q, c, 1);
	}
	pthread_mutex_unlock(&q->lock);
	if (rc < 0)
		q->ops.emit(q->ops.arg, reply);
}

void
mcp_queue_cancel(struct mcp_queue *q, const char *id)
{
	struct call *c;
	bool out;

	for (int i = 0; i < MAX_CALLS; i++) {
		pthread_mutex_lock(&q->lock);
		c = q->calls[i];
		if (c == NULL || strcmp(c->id, id) != 0) {
			pthread_mutex_unlock(&q->lock);
			continue;
		}
		c->refs++;	/* the worker may end it meanwhile */
		c->cancelled = true;
		q->cancel[c->slot] = 1;
		pthread_mutex_unlock(&q->lock);
		/* Unlocked: withdrawing a grant calls on_granted. */
		out = jobs_admit_withdraw(q->adm, &c->w);
		pthread_mutex_lock(&q->lock);
		/* This cancel's, and when withdrawn the queue's too: it
		 * never starts. */
		call_put(q, c, out ? 2 : 1);
		pthread_mutex_unlock(&q->lock);
	}
}

void
mcp_queue_signal(struct mcp_queue *q)
{
	q->stop = 1;
	for (size_t i = 0; i < MAX_CALLS; i++)
		q->cancel[i] = 1;
}

void
mcp_queue_end(struct mcp_queue *q)
{
	if (q->stop != 0)
		jobs_admit_flush(q->adm, "signal");	/* call_refuse each */
	pthread_mutex_lock(&q->lock);
	q->closing = true;
	pthread_cond_signal(&q->wake);
	pthread_mutex_unlock(&q->lock);
	if (q->started)
		pthread_join(q->worker, NULL);
	q->started = false;
}

void
mcp_queue_free(struct mcp_queue *q)
{
	if (q == NULL)
		return;
	jobs_admission_free(q->adm);
	pthread_cond_destroy(&q->wake);
	pthread_mutex_destroy(&q->lock);
	free(q);
}
