/*
 * The live output queue (stream.h): a mutex-protected FIFO with a byte
 * bound, a condition variable for a blocking consumer, and the NDJSON
 * encoding of its events.
 */
#include "jobs/stream.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

#define EVENT_COST 64	/* counted per event besides its data */

struct jobs_stream {
	pthread_mutex_t lock;
	pthread_cond_t more;
	struct jobs_stream_event *head, *tail;
	size_t bytes, max;		/* queued cost, bound */
	uint64_t dropped;		/* in all */
	uint64_t pending;		/* dropped since the last notice */
	bool closed;
	void (*notify)(void *);
	void *notify_arg;
};

struct jobs_stream *
jobs_stream_new(size_t max_bytes, void (*notify)(void *), void *notify_arg)
{
	struct jobs_stream *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	if (pthread_mutex_init(&s->lock, NULL) != 0) {
		free(s);
		return NULL;
	}
	if (pthread_cond_init(&s->more, NULL) != 0) {
		pthread_mutex_destroy(&s->lock);
		free(s);
		return NULL;
	}
	s->max = max_bytes > 0 ? max_bytes : JOBS_STREAM_MAX;
	s->notify = notify;
	s->notify_arg = notify_arg;
	return s;
}

void
jobs_stream_event_free(struct jobs_stream_event *ev)
{
	if (ev == NULL)
		return;
	free(ev->data);
	free(ev);
}

void
jobs_stream_free(struct jobs_stream *s)
{
	struct jobs_stream_event *ev;

	if (s == NULL)
		return;
	while ((ev = s->head) != NULL) {
		s->head = ev->next;
		jobs_stream_event_free(ev);
	}
	pthread_cond_destroy(&s->more);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static size_t
event_cost(const struct jobs_stream_event *ev)
{
	return ev->len + EVENT_COST;
}

/* Appends ev; s->lock held. */
static void
enqueue(struct jobs_stream *s, struct jobs_stream_event *ev)
{
	ev->next = NULL;
	if (s->tail != NULL)
		s->tail->next = ev;
	else
		s->head = ev;
	s->tail = ev;
	s->bytes += event_cost(ev);
}

/* Queues ev (and first the notice of what was dropped before it), or
 * drops it when it does not fit. Takes ev. */
static void
stream_push(struct jobs_stream *s, struct jobs_stream_event *ev,
    uint64_t raw)
{
	struct jobs_stream_event *notice = NULL;
	bool queued = false;

	pthread_mutex_lock(&s->lock);
	if (s->pending > 0)
		notice = calloc(1, sizeof(*notice));
	if (!s->closed && (s->pending == 0 || notice != NULL) &&
	    s->bytes + event_cost(ev) + EVENT_COST <= s->max) {
		if (notice != NULL) {
			notice->kind = JOBS_STREAM_DROPPED;
			notice->dropped = s->pending;
			enqueue(s, notice);
			notice = NULL;
			s->pending = 0;
		}
		enqueue(s, ev);
		ev = NULL;
		queued = true;
		pthread_cond_signal(&s->more);
	} else if (!s->closed) {
		s->dropped += raw;
		s->pending += raw;
	}
	pthread_mutex_unlock(&s->lock);
	free(notice);
	jobs_stream_event_free(ev);
	if (queued && s->notify != NULL)
		s->notify(s->notify_arg);
}

void
jobs_stream_output(void *arg, int stream, const void *data, size_t len)
{
	struct jobs_stream *s = arg;
	struct jobs_stream_event *ev;
	char *shrunk;

	if ((stream != 1 && stream != 2) || len == 0)
		return;
	if ((ev = calloc(1, sizeof(*ev))) == NULL ||
	    (ev->data = json_utf8_sanitize(data, len, &ev->len)) == NULL) {
		/* Out of memory: counted like a full queue. */
		free(ev);
		pthread_mutex_lock(&s->lock);
		s->dropped += len;
		s->pending += len;
		pthread_mutex_unlock(&s->lock);
		return;
	}
	/* The sanitizer allocates for the worst case (3 bytes a byte). */
	if ((shrunk = realloc(ev->data, ev->len + 1)) != NULL)
		ev->data = shrunk;
	ev->kind = stream == 1 ? JOBS_STREAM_STDOUT : JOBS_STREAM_STDERR;
	stream_push(s, ev, len);
}

void
jobs_stream_close(struct jobs_stream *s)
{
	struct jobs_stream_event *notice = calloc(1, sizeof(*notice));

	pthread_mutex_lock(&s->lock);
	/* A gap at the end is announced too (past the bound: one small
	 * event, and nothing follows it). */
	if (s->pending > 0 && notice != NULL) {
		notice->kind = JOBS_STREAM_DROPPED;
		notice->dropped = s->pending;
		enqueue(s, notice);
		notice = NULL;
		s->pending = 0;
	}
	s->closed = true;
	pthread_cond_broadcast(&s->more);
	pthread_mutex_unlock(&s->lock);
	free(notice);
	if (s->notify != NULL)
		s->notify(s->notify_arg);
}

int
jobs_stream_pop(struct jobs_stream *s, bool wait,
    struct jobs_stream_event **ev)
{
	pthread_mutex_lock(&s->lock);
	while (wait && s->head == NULL && !s->closed)
		pthread_cond_wait(&s->more, &s->lock);
	*ev = s->head;
	if (*ev != NULL) {
		s->head = (*ev)->next;
		if (s->head == NULL)
			s->tail = NULL;
		s->bytes -= event_cost(*ev);
		(*ev)->next = NULL;
	}
	pthread_mutex_unlock(&s->lock);
	return *ev != NULL;
}

uint64_t
jobs_stream_dropped(struct jobs_stream *s)
{
	uint64_t n;

	pthread_mutex_lock(&s->lock);
	n = s->dropped;
	pthread_mutex_unlock(&s->lock);
	return n;
}

/* o as one line (and frees o); NULL on ENOMEM. */
static char *
line_of(cJSON *o)
{
	char *line = o != NULL ? json_print_line(o) : NULL;

	cJSON_Delete(o);
	return line;
}

char *
jobs_stream_event_line(const struct jobs_stream_event *ev)
{
	cJSON *o = cJSON_CreateObject();

	if (o == NULL)
		return NULL;
	if (ev->kind == JOBS_STREAM_DROPPED) {
		if (cJSON_AddStringToObject(o, "event", "dropped") == NULL ||
		    cJSON_AddNumberToObject(o, "bytes",
		    (double)ev->dropped) == NULL)
			goto nomem;
		return line_of(o);
	}
	if (cJSON_AddStringToObject(o, "event", ev->kind ==
	    JOBS_STREAM_STDOUT ? "stdout" : "stderr") == NULL ||
	    cJSON_AddStringToObject(o, "data", ev->data) == NULL)
		goto nomem;
	return line_of(o);
nomem:
	cJSON_Delete(o);
	return NULL;
}

char *
jobs_stream_result_line(const struct runner_result *res, uint64_t dropped)
{
	cJSON *r = runner_result_to_json(res), *o = cJSON_CreateObject(), *it;

	if (r == NULL || o == NULL ||
	    cJSON_AddStringToObject(o, "event", "result") == NULL)
		goto nomem;
	/* "event" first, then the result's fields in their order. */
	while ((it = cJSON_DetachItemViaPointer(r, r->child)) != NULL) {
		/* Adding copies the key before it frees the item's own. */
		if (!cJSON_AddItemToObject(o, it->string, it)) {
			cJSON_Delete(it);
			goto nomem;
		}
	}
	if (dropped > 0 && cJSON_AddNumberToObject(o, "stream_dropped",
	    (double)dropped) == NULL)
		goto nomem;
	cJSON_Delete(r);
	return line_of(o);
nomem:
	cJSON_Delete(r);
	cJSON_Delete(o);
	return NULL;
}

char *
jobs_stream_error_line(const char *why)
{
	cJSON *o = cJSON_CreateObject();

	if (o == NULL || cJSON_AddStringToObject(o, "event", "error") ==
	    NULL || json_add_bytes(o, "error", why, strlen(why)) < 0) {
		cJSON_Delete(o);
		return NULL;
	}
	return line_of(o);
}
