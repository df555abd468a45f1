/*
 * The service's parse workers (issue 39): a fixed set of threads that run
 * tasks the event loop must not (parsing and refusing request bodies),
 * each task's done callback then on the loop's thread.
 */
#ifndef CORDON_SERVE_WORK_H
#define CORDON_SERVE_WORK_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/queue.h>

struct event_base;
struct serve_work;

/* Embedded in the caller's own task, which owns it. */
struct serve_task {
	TAILQ_ENTRY(serve_task) link;
	void (*run)(struct serve_task *t);	/* on a worker thread */
	void (*done)(struct serve_task *t);	/* then on the loop */
};

/* nthreads threads with every signal blocked. 0 and *out, or a negative
 * errno. */
int serve_work_new(struct event_base *base, size_t nthreads,
    struct serve_work **out);
/* Loop thread: queues t (first come, first run). */
void serve_work_submit(struct serve_work *w, struct serve_task *t);
/* True while a task's done callback is still to come; accepts NULL. */
bool serve_work_busy(const struct serve_work *w);
/* Joins the threads (a task still queued is run first; done callbacks
 * not yet called are not called). Accepts NULL. */
void serve_work_free(struct serve_work *w);

#endif
