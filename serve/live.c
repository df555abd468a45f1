/*
 * Live replies of the service (internal.h): `POST /v1/runs` with
 * `Accept: application/x-ndjson` is answered with chunked NDJSON events as
 * the run's output arrives (runner/stream.h), the result last. The run's
 * worker thread only queues events (bounded; it never blocks) and wakes
 * the loop with event_active; the loop moves them to the connection one
 * chunk at a time: the next chunk only once evhttp has written the last,
 * so a client that stops reading leaves the queue full (and later events
 * dropped and counted), never a growing output buffer. The 200 and its
 * headers go with the first event, so a run that cannot start still gets
 * its HTTP error status.
 */
#include "serve/internal.h"

#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "runner/stream.h"

#define LIVE_BATCH (64 * 1024)	/* bytes of events per chunk */

struct serve_live {
	struct evhttp_request *req;
	struct runner_stream *s;
	struct event *ev;		/* events were queued */
	bool started;			/* 200 and headers sent */
	bool inflight;			/* a chunk evhttp has not written */
};

bool
serve_live_wanted(struct evhttp_request *req)
{
	struct evkeyvalq *h = evhttp_request_get_input_headers(req);
	const char *a = evhttp_find_header(h, "Accept");

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
	struct evkeyvalq *h = evhttp_request_get_output_headers(l->req);

	evhttp_add_header(h, "Content-Type", "application/x-ndjson");
	evhttp_add_header(h, "Cache-Control", "no-store");
	evhttp_send_reply_start(l->req, 200, "OK");
	l->started = true;
}

/* Moves queued events into b, up to about max bytes; false on ENOMEM. */
static bool
live_take(struct serve_live *l, struct evbuffer *b, size_t max)
{
	struct runner_stream_event *e;
	char *line;
	bool ok = true;

	while (evbuffer_get_length(b) < max &&
	    runner_stream_pop(l->s, false, &e) == 1) {
		line = runner_stream_event_line(e);
		runner_stream_event_free(e);
		ok = ok && line != NULL && evbuffer_add(b, line,
		    strlen(line)) == 0;
		free(line);
	}
	return ok;
}

static void live_send(struct serve_live *l);

static void
live_written(struct evhttp_connection *evcon, void *arg)
{
	struct serve_live *l = arg;

	(void)evcon;
	l->inflight = false;
	live_send(l);
}

/* Sends the next chunk unless one is still being written or the client
 * is gone (then the events wait, or are dropped, in the bounded queue). */
static void
live_send(struct serve_live *l)
{
	struct evbuffer *b;

	if (l->inflight || evhttp_request_get_connection(l->req) == NULL ||
	    (b = evbuffer_new()) == NULL)
		return;
	(void)live_take(l, b, LIVE_BATCH);
	if (evbuffer_get_length(b) > 0) {
		if (!l->started)
			live_start(l);
		l->inflight = true;
		evhttp_send_reply_chunk_with_cb(l->req, b, live_written, l);
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
serve_live_new(struct event_base *base, struct evhttp_request *req)
{
	struct serve_live *l = calloc(1, sizeof(*l));

	if (l == NULL)
		return NULL;
	l->req = req;
	if ((l->ev = event_new(base, -1, 0, live_ready, l)) == NULL ||
	    (l->s = runner_stream_new(0, live_wake, l)) == NULL) {
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
	runner_stream_free(l->s);
	free(l);
}

struct runner_stream *
serve_live_stream(struct serve_live *l)
{
	return l->s;
}

bool
serve_live_started(const struct serve_live *l)
{
	return l->started;
}

void
serve_live_finish(struct serve_live *l, const struct runner_result *res,
    const char *err)
{
	struct evbuffer *b = evbuffer_new();
	char *line;

	if (evhttp_request_get_connection(l->req) == NULL || b == NULL) {
		/* Gone: this frees the request evhttp let go of. */
		if (l->started)
			evhttp_send_reply_end(l->req);
		else
			evhttp_send_reply(l->req, 499, "Client Closed Request",
			    NULL);
		if (b != NULL)
			evbuffer_free(b);
		return;
	}
	/* Whatever is queued (bounded), then the last event. */
	(void)live_take(l, b, SIZE_MAX);
	line = res != NULL ? runner_stream_result_line(res,
	    runner_stream_dropped(l->s)) : runner_stream_error_line(err);
	if (line == NULL)
		line = runner_stream_error_line("out of memory");
	if (line != NULL)
		(void)evbuffer_add(b, line, strlen(line));
	free(line);
	if (!l->started)
		live_start(l);
	/* Replaces live_written as the connection's write callback. */
	evhttp_send_reply_chunk(l->req, b);
	evhttp_send_reply_end(l->req);
	evbuffer_free(b);
}
