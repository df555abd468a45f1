/*
 * Absolute-form HTTP forwarding: the rewritten head and the request body
 * (Content-Length or chunked, scanned so the next pipelined request is not
 * sent upstream) go to a fresh upstream connection carrying this request
 * only; the response head is re-framed for the client (hop-by-hop headers
 * dropped) and its body relayed, so the client connection can be kept
 * alive and its next request checked on its own.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "common/cbuf.h"
#include "common/util.h"
#include "proxy/conn.h"
#include "proxy/http.h"

static void forward_cli_read_cb(struct bufferevent *bev, void *arg);
static void forward_up_read_cb(struct bufferevent *bev, void *arg);
static void forward_cli_event_cb(struct bufferevent *bev, short what,
    void *arg);
static void forward_up_event_cb(struct bufferevent *bev, short what,
    void *arg);

/* Moves up to n bytes of src to dst; counts them. */
static int
forward_move(struct evbuffer *src, struct evbuffer *dst, size_t n,
    uint64_t *count)
{
	int moved = evbuffer_remove_buffer(src, dst, n);

	if (moved < 0)
		return -ENOMEM;
	*count += (uint64_t)moved;
	return 0;
}

/* Scans the first contiguous piece of src as chunked body and moves the
 * bytes that belong to the body. Returns bytes moved, or -EINVAL/-ENOMEM. */
static ssize_t
forward_chunked(struct http_chunk_state *st, struct evbuffer *src,
    struct evbuffer *dst, bool *done, uint64_t *count)
{
	struct evbuffer_iovec v;
	ssize_t k;

	if (evbuffer_peek(src, -1, NULL, &v, 1) < 1)
		return 0;
	k = proxy_http_chunked_scan(st, v.iov_base, v.iov_len, done);
	if (k < 0)
		return k;
	if (k > 0 && forward_move(src, dst, (size_t)k, count) != 0)
		return -ENOMEM;
	return k;
}

static void
forward_up_write_cb(struct bufferevent *up, void *arg)
{
	struct conn *c = arg;

	/* Upstream drained: read more request body. */
	bufferevent_setcb(up, forward_up_read_cb, NULL, forward_up_event_cb, c);
	bufferevent_setwatermark(up, EV_WRITE, 0, 0);
	if (!c->req->req_done)
		bufferevent_enable(c->cli, EV_READ);
}

static void
forward_cli_write_cb(struct bufferevent *cli, void *arg)
{
	struct conn *c = arg;

	/* Client drained: read more response. */
	bufferevent_setcb(cli, forward_cli_read_cb, NULL, forward_cli_event_cb,
	    c);
	bufferevent_setwatermark(cli, EV_WRITE, 0, 0);
	if (c->up != NULL && !c->up_eof)
		bufferevent_enable(c->up, EV_READ);
}

/* Request body, client -> upstream. Returns false when c is gone. */
static bool
forward_body(struct conn *c)
{
	struct conn_req *r = c->req;
	struct evbuffer *in = bufferevent_get_input(c->cli);
	struct evbuffer *out = bufferevent_get_output(c->up);
	size_t len;
	ssize_t k;

	while (!r->req_done && (len = evbuffer_get_length(in)) > 0) {
		if (evbuffer_get_length(out) >= CONN_OUT_MAX) {
			bufferevent_disable(c->cli, EV_READ);
			bufferevent_setwatermark(c->up, EV_WRITE,
			    CONN_OUT_MAX / 2, 0);
			bufferevent_setcb(c->up, forward_up_read_cb,
			    forward_up_write_cb, forward_up_event_cb, c);
			return true;
		}
		if (!r->body_chunked) {
			size_t n = (uint64_t)r->body_left < len ?
			    (size_t)r->body_left : len;
			if (forward_move(in, out, n, &r->bytes_up) != 0)
				goto nomem;
			r->body_left -= (int64_t)n;
			r->req_done = r->body_left == 0;
			continue;
		}
		k = forward_chunked(&r->req_chunk, in, out, &r->req_done,
		    &r->bytes_up);
		if (k == -ENOMEM)
			goto nomem;
		if (k < 0) {
			if (!r->resp_started)
				proxy_conn_fail(c, 400, "error",
				    "malformed-body");
			else
				proxy_conn_free(c);
			return false;
		}
		if (k == 0 && !r->req_done)
			break;
	}
	if (r->req_done)
		bufferevent_disable(c->cli, EV_READ);
	return true;
nomem:
	proxy_conn_fail(c, 503, "error", "no-memory");
	return false;
}

/* The exchange is over when the response is, and the request too unless
 * the connection closes anyway. Returns false when c left CONN_FORWARD. */
static bool
forward_maybe_finish(struct conn *c)
{
	struct conn_req *r = c->req;

	if (!r->resp_done || (!r->req_done && !r->close_client))
		return true;
	if (r->close_client)
		proxy_conn_close_when_flushed(c);
	else
		proxy_conn_next_request(c);
	return false;
}

static int
forward_response_head(struct conn *c, struct evbuffer *in, struct evbuffer *out)
{
	struct conn_req *r = c->req;
	struct http_response *resp;
	size_t len = evbuffer_get_length(in);
	size_t max = (size_t)proxy_conn_max_header(c);
	const char *buf;
	int rc;

	if (len > max)
		len = max;
	resp = malloc(sizeof(*resp));
	buf = resp == NULL ? NULL : (const char *)evbuffer_pullup(in,
	    (ssize_t)len);
	if (buf == NULL) {
		free(resp);
		return -ENOMEM;
	}
	rc = proxy_http_response_parse(buf, len, max, r->is_head, resp);
	if (rc == -EAGAIN && len >= max)
		rc = -EMSGSIZE;
	if (rc < 0) {
		free(resp);
		return rc;
	}
	if (resp->status >= 200 || resp->status == 101) {
		r->status = resp->status;
		r->resp_head_done = true;
		r->resp_body = resp->status == 101 ? HTTP_BODY_CLOSE :
		    resp->body;
		r->resp_left = resp->content_length;
		proxy_http_chunked_init(&r->resp_chunk);
		r->close_client = r->close_client || !r->keep_alive ||
		    r->resp_body == HTTP_BODY_CLOSE || !r->req_done ||
		    proxy_conn_draining(c) || c->cli_eof;
	}
	size_t before = evbuffer_get_length(out);
	evbuffer_add_printf(out, "HTTP/1.1 %d %.*s\r\n", resp->status,
	    (int)resp->reason_len, resp->reason);
	for (size_t i = 0; i < resp->nheaders; i++) {
		const struct http_header *h = &resp->headers[i];
		if (proxy_http_header_is_hop_by_hop(h->name, h->name_len))
			continue;
		evbuffer_add_printf(out, "%.*s: %.*s\r\n", (int)h->name_len,
		    h->name, (int)h->value_len, h->value);
	}
	if (r->resp_head_done && r->close_client)
		evbuffer_add(out, "Connection: close\r\n", 19);
	else if (r->resp_head_done && r->client_http10)
		evbuffer_add(out, "Connection: keep-alive\r\n", 24);
	evbuffer_add(out, "\r\n", 2);
	r->bytes_down += evbuffer_get_length(out) - before;
	r->resp_started = true;
	if (r->resp_head_done && r->resp_body == HTTP_BODY_NONE)
		r->resp_done = true;
	free(resp);
	evbuffer_drain(in, (size_t)rc);
	return 0;
}

/* Response, upstream -> client. Returns false when c left CONN_FORWARD. */
static bool
forward_response(struct conn *c)
{
	struct conn_req *r = c->req;
	struct evbuffer *in = bufferevent_get_input(c->up);
	struct evbuffer *out = bufferevent_get_output(c->cli);
	size_t len;
	ssize_t k;
	int rc;

	while (!r->resp_done && (len = evbuffer_get_length(in)) > 0) {
		if (!r->resp_head_done) {
			rc = forward_response_head(c, in, out);
			if (rc == -EAGAIN)
				return true;
			if (rc < 0) {
				if (!r->resp_started)
					proxy_conn_fail(c, 502, "error",
					    rc == -ENOMEM ? "no-memory" :
					    "bad-response");
				else
					proxy_conn_free(c);
				return false;
			}
			continue;
		}
		if (evbuffer_get_length(out) >= CONN_OUT_MAX) {
			bufferevent_disable(c->up, EV_READ);
			bufferevent_setwatermark(c->cli, EV_WRITE,
			    CONN_OUT_MAX / 2, 0);
			bufferevent_setcb(c->cli, forward_cli_read_cb,
			    forward_cli_write_cb, forward_cli_event_cb, c);
			return true;
		}
		switch (r->resp_body) {
		case HTTP_BODY_LENGTH: {
			size_t n = (uint64_t)r->resp_left < len ?
			    (size_t)r->resp_left : len;
			if (forward_move(in, out, n, &r->bytes_down) != 0)
				goto fail;
			r->resp_left -= (int64_t)n;
			r->resp_done = r->resp_left == 0;
			break;
		}
		case HTTP_BODY_CHUNKED:
			k = forward_chunked(&r->resp_chunk, in, out,
			    &r->resp_done, &r->bytes_down);
			if (k < 0 || (k == 0 && !r->resp_done))
				goto fail;
			break;
		default:
			if (forward_move(in, out, len, &r->bytes_down) != 0)
				goto fail;
			break;
		}
	}
	if (r->resp_done && evbuffer_get_length(in) > 0)
		r->close_client = true;	/* junk after the response */
	return forward_maybe_finish(c);
fail:
	proxy_conn_free(c);
	return false;
}

static void
forward_cli_read_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	(void)bev;
	c->last_active_ms = time_mono_ms();
	if (forward_body(c) && proxy_run_account(c))
		(void)forward_maybe_finish(c);
}

static void
forward_up_read_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	(void)bev;
	c->last_active_ms = time_mono_ms();
	/* Still forwarding: count the bytes against the run (closes it
	 * when over its byte limit). */
	if (forward_response(c))
		(void)proxy_run_account(c);
}

static void
forward_cli_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;

	(void)bev;
	if ((what & BEV_EVENT_EOF) && !(what & BEV_EVENT_ERROR) &&
	    c->req->req_done) {
		/* Half-close after a complete request: still answer it. */
		c->cli_eof = true;
		c->req->close_client = true;
		return;
	}
	proxy_conn_free(c);
}

static void
forward_up_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;
	struct conn_req *r = c->req;

	(void)bev;
	if (what & BEV_EVENT_EOF) {
		c->up_eof = true;
		if (evbuffer_get_length(bufferevent_get_input(c->up)) > 0 &&
		    !forward_response(c))
			return;
		if (r->resp_head_done && r->resp_body == HTTP_BODY_CLOSE) {
			r->resp_done = true;
			r->close_client = true;
			(void)forward_maybe_finish(c);
			return;
		}
	}
	if (!r->resp_started)
		proxy_conn_fail(c, 502, "error", (what & BEV_EVENT_EOF) ?
		    "upstream-closed" : "upstream-error");
	else
		proxy_conn_close_when_flushed(c);	/* truncated response */
}

void
proxy_forward_start(struct conn *c)
{
	struct conn_req *r = c->req;

	proxy_conn_state_set(c, CONN_FORWARD);
	c->last_active_ms = time_mono_ms();
	if (evbuffer_add(bufferevent_get_output(c->up), cbuf_data(r->uphead),
	    cbuf_len(r->uphead)) != 0) {
		proxy_conn_fail(c, 503, "error", "no-memory");
		return;
	}
	r->bytes_up += cbuf_len(r->uphead);
	cbuf_free(r->uphead);
	r->uphead = NULL;
	bufferevent_set_max_single_read(c->cli, CONN_READ_MAX);
	bufferevent_set_max_single_read(c->up, CONN_READ_MAX);
	bufferevent_setwatermark(c->cli, EV_READ, 0, 0);
	bufferevent_setcb(c->cli, forward_cli_read_cb, NULL,
	    forward_cli_event_cb, c);
	bufferevent_setcb(c->up, forward_up_read_cb, NULL, forward_up_event_cb,
	    c);
	bufferevent_enable(c->up, EV_READ | EV_WRITE);
	bufferevent_enable(c->cli, EV_WRITE);
	if (!r->req_done)
		bufferevent_enable(c->cli, EV_READ);
	event_del(&c->timer);
	proxy_conn_timer_arm(c, proxy_conn_idle_timeout_ms(c));
	if (!forward_body(c))
		return;
	(void)forward_maybe_finish(c);
}
