/*
 * One client connection of the service (conn.h): the head under its
 * deadline and handed over before the body, the body into one buffer of
 * its declared size under its own deadline, the reply's unsent bytes
 * counted and its stall deadline, keep-alive, and a lingering close (the
 * write side shut, what still comes in read and dropped for a moment, so
 * that the client reads its answer rather than a reset). How a reply is
 * put into the output, whole or chunked, is conn_reply.c's.
 */
#include "serve/conn.h"
#include "serve/conn_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "common/json.h"
#include "common/util.h"

static void conn_read(struct serve_conn *c);
static void conn_linger(struct serve_conn *c);

static void
timer_set(struct serve_conn *c, int64_t ms)
{
	struct timeval tv = { .tv_sec = ms / 1000,
	    .tv_usec = (ms % 1000) * 1000 };

	evtimer_add(c->timer, &tv);
}

void
serve_conn_free(struct serve_conn *c)
{
	if (c->timer != NULL)
		event_free(c->timer);
	free(c->headbuf);
	free(c->body);
	free(c);
}

void
serve_conn_report(struct serve_conn *c, bool written)
{
	void (*cb)(void *, bool) = c->done_cb;

	c->done_cb = NULL;
	if (cb != NULL)
		cb(c->done_arg, written);
}

/* Closes the socket. A held connection stays until its owner replies
 * (and hears that the client is gone); any other is freed, its reply
 * reported dropped. */
void
serve_conn_close(struct serve_conn *c)
{
	void (*gone)(void *) = c->gone_cb;

	if (c->bev != NULL) {
		if (c->unsent != NULL)
			*c->unsent -= (int64_t)c->counted;
		c->counted = 0;
		evbuffer_remove_cb_entry(bufferevent_get_output(c->bev),
		    c->out_cb);
		bufferevent_free(c->bev);
		c->bev = NULL;
		evtimer_del(c->timer);
		c->cfg->on_closed(c->tag, c->cfg->closed_arg);
	}
	if (c->held) {
		c->gone_cb = NULL;
		if (gone != NULL)
			gone(c->gone_arg);
		return;
	}
	serve_conn_report(c, false);
	serve_conn_free(c);
}

/* Output accounting: bytes queued and taken by the socket, in order. */
static void
out_cb(struct evbuffer *b, const struct evbuffer_cb_info *info, void *arg)
{
	struct serve_conn *c = arg;
	size_t del = info->n_deleted, skip;

	(void)b;
	if (c->unsent == NULL)
		return;
	skip = del < c->uncounted ? del : c->uncounted;
	c->uncounted -= skip;
	del -= skip;
	if (del > c->counted)
		del = c->counted;
	c->counted = c->counted - del + info->n_added;
	*c->unsent += (int64_t)info->n_added - (int64_t)del;
}

/* Writes a complete answer of ours (no owner involved) and closes. */
static void
conn_fail(struct serve_conn *c, int code, const char *why)
{
	char head[256], body[512];
	int n, hl;

	n = snprintf(body, sizeof(body), "{\"error\":\"%s\"}\n", why);
	hl = serve_http_response_head(head, sizeof(head), code,
	    serve_http_reason(code), (const struct serve_http_field[]){
	    { "Content-Type", "application/json" },
	    { "Cache-Control", "no-store" } }, 2, (uint64_t)n, false, false);
	c->keep_alive = false;
	c->st = C_WRITE;
	evtimer_del(c->timer);
	if (hl < 0 || evbuffer_add(bufferevent_get_output(c->bev), head,
	    (size_t)hl) < 0 || evbuffer_add(bufferevent_get_output(c->bev),
	    body, (size_t)n) < 0)
		serve_conn_close(c);
}

/* Back to reading the next head (keep-alive). */
static void
conn_reset(struct serve_conn *c)
{
	free(c->headbuf);
	free(c->body);
	c->headbuf = NULL;
	c->body = NULL;
	c->body_len = c->body_got = 0;
	c->note = NULL;
	c->note_n = 0;
	c->nout = 0;
	c->out_used = 0;
	c->unsent = NULL;
	c->counted = c->uncounted = 0;
	c->streaming = c->started = c->ended = false;
	c->body_unread = false;
	c->gone_cb = NULL;
	c->drain_cb = NULL;
	c->st = C_HEAD;
	c->idle = true;
	bufferevent_setwatermark(c->bev, EV_READ, 0, SERVE_HTTP_HEAD_MAX);
	bufferevent_enable(c->bev, EV_READ);
	timer_set(c, c->cfg->head_ms);
	conn_read(c);
}

static void
conn_dispatch(struct serve_conn *c)
{
	c->st = C_HELD;
	c->held = true;
	evtimer_del(c->timer);
	/* Only a hang-up (or pipelined bytes) is expected now. */
	bufferevent_setwatermark(c->bev, EV_READ, 0, CONN_HELD_READ);
	c->cfg->on_request(c, c->cfg->arg);
}

/* Moves body bytes from the input; dispatches once all are in. */
static void
body_take(struct serve_conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->bev);
	size_t want = c->body_len - c->body_got;
	int n;

	if (want > 0 && evbuffer_get_length(in) > 0) {
		n = evbuffer_remove(in, c->body + c->body_got, want);
		if (n > 0)
			c->body_got += (size_t)n;
	}
	if (c->body_got == c->body_len) {
		c->body[c->body_len] = '\0';
		conn_dispatch(c);
	}
}

/* The head is parsed: ask the owner, then read the body or not. */
static void
head_done(struct serve_conn *c)
{
	static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
	struct evbuffer *in = bufferevent_get_input(c->bev);

	c->keep_alive = c->head.keep_alive;
	c->held = true;
	/* false: it answered, and c may be gone already. */
	if (!c->cfg->on_head(c, c->cfg->arg))
		return;
	c->held = false;
	if ((c->body = malloc(c->head.length + 1)) == NULL) {
		conn_fail(c, 500, "out of memory");
		return;
	}
	c->body_len = c->head.length;
	c->st = C_BODY;
	timer_set(c, c->cfg->body_ms);
	bufferevent_setwatermark(c->bev, EV_READ, 0, CONN_BODY_READ);
	if (c->head.expect_continue && c->body_len > 0 &&
	    evbuffer_get_length(in) == 0)
		(void)evbuffer_add(bufferevent_get_output(c->bev), cont,
		    sizeof(cont) - 1);
	body_take(c);
}

/* A head: bytes up to its empty line, at most SERVE_HTTP_HEAD_MAX. */
static void
head_take(struct serve_conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->bev);
	size_t len, hl;
	const char *why, *p;
	unsigned char ch;
	int rc;

	/* Empty lines before a request line are allowed (RFC 9112 2.2). */
	while (evbuffer_copyout(in, &ch, 1) == 1 && (ch == '\r' || ch == '\n'))
		evbuffer_drain(in, 1);
	if ((len = evbuffer_get_length(in)) == 0)
		return;
	c->idle = false;
	if (len > SERVE_HTTP_HEAD_MAX)
		len = SERVE_HTTP_HEAD_MAX;
	if ((p = (const char *)evbuffer_pullup(in, (ev_ssize_t)len)) == NULL) {
		conn_fail(c, 500, "out of memory");
		return;
	}
	if ((hl = serve_http_head_len(p, len)) == 0) {
		if (len == SERVE_HTTP_HEAD_MAX)
			conn_fail(c, 431, "the request head is over 16384 bytes");
		return;
	}
	if ((c->headbuf = malloc(hl + 1)) == NULL) {
		conn_fail(c, 500, "out of memory");
		return;
	}
	memcpy(c->headbuf, p, hl);
	c->headbuf[hl] = '\0';
	evbuffer_drain(in, hl);
	if ((rc = serve_http_head_parse(c->headbuf, hl, &c->head, &why)) != 0) {
		conn_fail(c, rc, why);
		return;
	}
	head_done(c);
}

static void
conn_read(struct serve_conn *c)
{
	struct evbuffer *in;

	switch (c->st) {
	case C_HEAD:
		head_take(c);
		break;
	case C_BODY:
		body_take(c);
		break;
	case C_LINGER:
		in = bufferevent_get_input(c->bev);
		c->lingered += evbuffer_get_length(in);
		evbuffer_drain(in, evbuffer_get_length(in));
		if (c->lingered > CONN_LINGER_MAX)
			serve_conn_close(c);
		break;
	case C_HELD:
	case C_WRITE:
		/* Pipelined: read after the reply (the watermark stops
		 * reading meanwhile). */
		break;
	}
}

static void
read_cb(struct bufferevent *bev, void *arg)
{
	(void)bev;
	conn_read(arg);
}

/* The output is empty: the reply went out (or, streaming, a chunk). */
static void
write_cb(struct bufferevent *bev, void *arg)
{
	struct serve_conn *c = arg;

	(void)bev;
	if (c->st != C_WRITE)
		return;
	if (c->streaming && !c->ended) {
		if (c->drain_cb != NULL)
			c->drain_cb(c->drain_arg);
		return;
	}
	serve_conn_report(c, true);
	if (c->bev == NULL)
		return;
	if (c->keep_alive && !c->body_unread)
		conn_reset(c);
	else
		conn_linger(c);
}

static void
event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct serve_conn *c = arg;

	(void)bev;
	/* EOF, an error, or the write stall deadline: the connection is
	 * over (a half-close after the request counts as a hang-up). */
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
		serve_conn_close(c);
}

static void
timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct serve_conn *c = arg;
	char why[96];

	(void)fd;
	(void)what;
	if (c->st == C_HEAD && !c->idle) {
		snprintf(why, sizeof(why), "the request head did not arrive "
		    "within %lld s", (long long)(c->cfg->head_ms / 1000));
		conn_fail(c, 408, why);
	} else if (c->st == C_BODY) {
		snprintf(why, sizeof(why), "the request body did not arrive "
		    "within %lld s", (long long)(c->cfg->body_ms / 1000));
		conn_fail(c, 408, why);
	} else {
		serve_conn_close(c);	/* idle, or lingering */
	}
}

static void
conn_linger(struct serve_conn *c)
{
	c->st = C_LINGER;
	c->lingered = 0;
	(void)shutdown(bufferevent_getfd(c->bev), SHUT_WR);
	bufferevent_setwatermark(c->bev, EV_READ, 0, CONN_BODY_READ);
	bufferevent_enable(c->bev, EV_READ);
	timer_set(c, CONN_LINGER_MS);
	conn_read(c);
}

int
serve_conn_new(const struct serve_conn_cfg *cfg, int fd, void *tag,
    struct serve_conn **out)
{
	struct serve_conn *c = calloc(1, sizeof(*c));
	struct timeval wt = { .tv_sec = cfg->write_ms / 1000,
	    .tv_usec = (cfg->write_ms % 1000) * 1000 };

	*out = NULL;
	if (c == NULL || (c->timer = evtimer_new(cfg->base, timer_cb, c)) ==
	    NULL || (c->bev = bufferevent_socket_new(cfg->base, fd,
	    BEV_OPT_CLOSE_ON_FREE)) == NULL) {
		if (c != NULL && c->timer != NULL)
			event_free(c->timer);
		free(c);
		close(fd);
		return -ENOMEM;
	}
	c->cfg = cfg;
	c->tag = tag;
	if ((c->out_cb = evbuffer_add_cb(bufferevent_get_output(c->bev),
	    out_cb, c)) == NULL) {
		bufferevent_free(c->bev);
		event_free(c->timer);
		free(c);
		return -ENOMEM;
	}
	bufferevent_setcb(c->bev, read_cb, write_cb, event_cb, c);
	bufferevent_set_timeouts(c->bev, NULL, &wt);
	c->st = C_HEAD;
	c->idle = true;
	bufferevent_setwatermark(c->bev, EV_READ, 0, SERVE_HTTP_HEAD_MAX);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	timer_set(c, cfg->head_ms);
	*out = c;
	return 0;
}

enum serve_http_method
serve_conn_method(const struct serve_conn *c)
{
	return c->head.method;
}

const char *
serve_conn_path(const struct serve_conn *c)
{
	return c->head.path != NULL ? c->head.path : "";
}

const char *
serve_conn_header(const struct serve_conn *c, const char *name,
    size_t *count)
{
	return serve_http_field(&c->head, name, count);
}

uint64_t
serve_conn_length(const struct serve_conn *c)
{
	return c->head.length;
}

const char *
serve_conn_body(const struct serve_conn *c, size_t *len)
{
	*len = c->body_len;
	return c->body != NULL ? c->body : "";
}

bool
serve_conn_tcp(const struct serve_conn *c)
{
	return c->cfg->tcp;
}

bool
serve_conn_reading_head(const struct serve_conn *c)
{
	return c->bev != NULL && c->st == C_HEAD && !c->held;
}

void
serve_conn_set_note(struct serve_conn *c, void *p, size_t n)
{
	c->note = p;
	c->note_n = n;
}

void *
serve_conn_note(const struct serve_conn *c, size_t *n)
{
	*n = c->note_n;
	return c->note;
}

void
serve_conn_account(struct serve_conn *c, int64_t *unsent)
{
	if (c->unsent != NULL && c->bev != NULL)
		*c->unsent -= (int64_t)c->counted;
	c->unsent = unsent;
	c->counted = 0;
	c->uncounted = c->bev != NULL ?
	    evbuffer_get_length(bufferevent_get_output(c->bev)) : 0;
}

void
serve_conn_on_gone(struct serve_conn *c, void (*cb)(void *), void *arg)
{
	c->gone_cb = cb;
	c->gone_arg = arg;
}

bool
serve_conn_gone(const struct serve_conn *c)
{
	return c->bev == NULL;
}

void
serve_conn_on_done(struct serve_conn *c, void (*cb)(void *, bool),
    void *arg)
{
	c->done_cb = cb;
	c->done_arg = arg;
}
