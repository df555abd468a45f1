/*
 * Live replies of the service (internal.h): `POST /v1/runs` with
 * `Accept: application/x-ndjson` is answered with chunked NDJSON events as
 * the run's output arrives (jobs/stream.h), the result last. The run's
 * worker thread only queues events (bounded; it never blocks) and wakes
 * the loop with event_active; the loop moves them to the connection one
 * chunk at a time: the next chunk only once the socket has taken the last
 * (backpressure: conn.c's on_drain), so a client that stops reading leaves
 * the queue full (and later events dropped and counted), never a growing
 * output buffer; what is written counts against the tenant's unsent bytes
 * and the connection's write deadline (issue 39). The 200 and its headers
 * go with the first event, so a run that cannot start still gets its HTTP
 * error status. The last line (the result, built on the run's worker)
 * is handed over without a copy.
 */
#include "serve/internal.h"

#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "jobs/stream.h"
#include "serve/conn.h"

#define LIVE_BATCH (64 * 1024)	/* bytes of events per chunk */

struct serve_live {
	struct serve_conn *c;
	struct jobs_stream *s;
	struct event *ev;		/* events were queued */
	bool inflight;			/* a chunk the socket has not taken */
};

bool
serve_live_wanted(struct serve_conn *c)
{
	const char *a = serve_conn_header(c, "Accept", NULL);

	return a != NULL && strstr(a, "application/x-ndjson") != NULL;
}

static void
live_wake(void *arg)
{
	struct serve_live *l = arg;

	event_active(l->ev, 0, 0);
}

static void
live_start(struct serve_live *l)
{
	if (!serve_conn_started(l->c))
		serve_conn_stream_start(l->c, 200, "application/x-ndjson");
}

/* Moves queued events into b, up to about max bytes; false on ENOMEM. */
static bool
live_take(struct serve_live *l, struct evbuffer *b, size_t max)
{
	struct jobs_stream_event *e;
	char *line;
	bool ok = true;

	while (evbuffer_get_length(b) < max &&
	    jobs_stream_pop(l->s, false, &e) == 1) {
		line = jobs_stream_event_line(e);
		jobs_stream_event_free(e);
		ok = ok && line != NULL && evbuffer_add(b, line,
		    strlen(line)) == 0;
		free(line);
	}
	return ok;
}

/* Writes what b holds as one chunk. */
static void
live_put(struct serve_live *l, struct evbuffer *b)
{
	size_t n = evbuffer_get_length(b);
	const char *p;

	if (n == 0)
		return;
	live_start(l);
	if ((p = (const char *)evbuffer_pullup(b, -1)) != NULL)
		serve_conn_stream_chunk(l->c, p, n);
}

static void live_send(struct serve_live *l);

static void
live_drained(void *arg)
{
	struct serve_live *l = arg;

	l->inflight = false;
	live_send(l);
}

/* Sends the next chunk unless one is still being written or the client
 * is gone (then the events wait, or are dropped, in the bounded queue). */
static void
live_send(struct serve_live *l)
{
	struct evbuffer *b;

	if (l->inflight || serve_conn_gone(l->c) ||
	    (b = evbuffer_new()) == NULL)
		return;
	(void)live_take(l, b, LIVE_BATCH);
	if (evbuffer_get_length(b) > 0) {
		l->inflight = true;
		serve_conn_on_drain(l->c, live_drained, l);
		live_put(l, b);
	}
	evbuffer_free(b);
}

static void
live_ready(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	live_send(arg);
}

struct serve_live *
serve_live_new(struct event_base *base, struct serve_conn *c)
{
	struct serve_live *l = calloc(1, sizeof(*l));

	if (l == NULL)
		return NULL;
	l->c = c;
	if ((l->ev = event_new(base, -1, 0, live_ready, l)) == NULL ||
	    (l->s = jobs_stream_new(0, live_wake, l)) == NULL) {
		serve_live_free(l);
		return NULL;
	}
	return l;
}

void
serve_live_free(struct serve_live *l)
{
	if (l == NULL)
		return;
	if (l->ev != NULL)
		event_free(l->ev);
	jobs_stream_free(l->s);
	free(l);
}

struct jobs_stream *
serve_live_stream(struct serve_live *l)
{
	return l->s;
}

bool
serve_live_started(const struct serve_live *l)
{
	return serve_conn_started(l->c);
}

void
serve_live_finish(struct serve_live *l, char *line)
{
	struct evbuffer *b;

	serve_conn_on_drain(l->c, NULL, NULL);
	if (serve_conn_gone(l->c)) {
		/* Gone: this frees the connection. */
		free(line);
		if (serve_conn_started(l->c))
			serve_conn_stream_end(l->c);
		else
			serve_conn_reply(l->c, 499, "application/json", NULL,
			    0);
		return;
	}
	/* Whatever is queued (bounded), then the last line, as is. */
	if ((b = evbuffer_new()) != NULL) {
		(void)live_take(l, b, SIZE_MAX);
		live_put(l, b);
		evbuffer_free(b);
	}
	if (line == NULL)
		line = jobs_stream_error_line("out of memory");
	live_start(l);
	if (line != NULL)
		serve_conn_stream_chunk_take(l->c, line, strlen(line));
	serve_conn_stream_end(l->c);
}
