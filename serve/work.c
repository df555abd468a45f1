/*
 * A few worker threads for the CPU work the event loop must not do (issue
 * 39: a 16 MiB body of JSON took seconds of the loop to parse and refuse):
 * tasks run in order on the first free thread, and their done callbacks on
 * the loop. The threads take no signals (the loop's).
 */
#include "serve/work.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>

#include <event2/event.h>

struct serve_work {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	TAILQ_HEAD(, serve_task) todo, done;
	struct event *done_ev;
	pthread_t *threads;
	size_t nthreads;
	size_t pending;			/* submitted, done not yet called */
	bool stop;
};

static void *
work_main(void *arg)
{
	struct serve_work *w = arg;
	struct serve_task *t;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->stop && TAILQ_EMPTY(&w->todo))
			pthread_cond_wait(&w->cv, &w->mu);
		if ((t = TAILQ_FIRST(&w->todo)) == NULL)
			break;		/* stopping, nothing left */
		TAILQ_REMOVE(&w->todo, t, link);
		pthread_mutex_unlock(&w->mu);
		t->run(t);
		pthread_mutex_lock(&w->mu);
		TAILQ_INSERT_TAIL(&w->done, t, link);
		event_active(w->done_ev, 0, 0);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* On the loop: the done callbacks of what finished. */
static void
work_done(evutil_socket_t fd, short what, void *arg)
{
	struct serve_work *w = arg;
	struct serve_task *t;

	(void)fd;
	(void)what;
	for (;;) {
		pthread_mutex_lock(&w->mu);
		if ((t = TAILQ_FIRST(&w->done)) != NULL)
			TAILQ_REMOVE(&w->done, t, link);
		pthread_mutex_unlock(&w->mu);
		if (t == NULL)
			return;
		w->pending--;
		t->done(t);
	}
}

int
serve_work_new(struct event_base *base, size_t nthreads,
    struct serve_work **out)
{
	struct serve_work *w = calloc(1, sizeof(*w));
	sigset_t all, old;
	int rc = 0;

	*out = NULL;
	if (w == NULL)
		return -ENOMEM;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	TAILQ_INIT(&w->todo);
	TAILQ_INIT(&w->done);
	if ((w->done_ev = event_new(base, -1, 0, work_done, w)) == NULL ||
	    (w->threads = calloc(nthreads, sizeof(*w->threads))) == NULL) {
		serve_work_free(w);
		return -ENOMEM;
	}
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (; w->nthreads < nthreads; w->nthreads++)
		if ((rc = pthread_create(&w->threads[w->nthreads], NULL,
		    work_main, w)) != 0)
			break;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		serve_work_free(w);
		return -rc;
	}
	*out = w;
	return 0;
}

void
serve_work_submit(struct serve_work *w, struct serve_task *t)
{
	pthread_mutex_lock(&w->mu);
	TAILQ_INSERT_TAIL(&w->todo, t, link);
	w->pending++;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

bool
serve_work_busy(const struct serve_work *w)
{
	return w != NULL && w->pending > 0;
}

void
serve_work_free(struct serve_work *w)
{
	if (w == NULL)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	for (size_t i = 0; i < w->nthreads; i++)
		pthread_join(w->threads[i], NULL);
	free(w->threads);
	if (w->done_ev != NULL)
		event_free(w->done_ev);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	free(w);
}
