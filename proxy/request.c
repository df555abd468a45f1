/*
 * Request heads: wait for one (against the header deadline), parse it,
 * check the method, scheme, host and port, prepare the head to send
 * upstream, then hold the client while upstream.c decides and connects.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "allowlist/allowlist.h"
#include "common/cbuf.h"
#include "proxy/config.h"
#include "proxy/conn.h"
#include "proxy/host.h"
#include "proxy/http.h"

static bool
request_method_refused(const struct http_request *hr)
{
	/* TRACE/TRACK reflect credentials back (cross-site tracing). */
	return (hr->method_len == 5 && memcmp(hr->method, "TRACE", 5) == 0) ||
	    (hr->method_len == 5 && memcmp(hr->method, "TRACK", 5) == 0);
}

bool
proxy_request_has_override(const struct http_request *hr)
{
	for (size_t i = 0; i < hr->nheaders; i++)
		if (allowlist_override_header(hr->headers[i].name,
		    hr->headers[i].name_len))
			return true;
	return false;
}

/* A transparent client's origin-form request (it never asked for a
 * proxy): the host is its Host header's, the port the one it connected
 * to (a Host naming another port is refused), and the head for upstream
 * is rewritten in origin form. False: refused (answered). */
static bool
request_transparent(struct conn *c, const struct http_request *hr,
    struct host_parsed *hp)
{
	const struct http_header *h = hr->host_header;
	struct conn_req *r = c->req;
	const char *name;
	char authority[HOST_NAME_MAXLEN + 16];
	size_t len;
	uint16_t port;
	int rc;

	r->port = c->orig_port;
	if (h == NULL) {
		proxy_conn_fail(c, 400, "error", "host-required");
		return false;
	}
	if (proxy_host_port_split(h->value, h->value_len, &name, &len, &port,
	    false) != 0 || proxy_host_parse(name, len, hp) != 0) {
		(void)proxy_conn_req_str(&r->host, h->value, h->value_len <
		    HOST_NAME_MAXLEN ? h->value_len : HOST_NAME_MAXLEN);
		proxy_conn_fail(c, 400, "error", "bad-host");
		return false;
	}
	if (proxy_conn_req_str(&r->host, hp->name, strlen(hp->name)) != 0) {
		proxy_conn_fail(c, 503, "error", "no-memory");
		return false;
	}
	r->host_kind = hp->kind;
	if (port != 0 && port != c->orig_port) {
		proxy_conn_fail(c, 400, "error", "host-mismatch");
		return false;
	}
	if (request_method_refused(hr)) {
		proxy_conn_fail(c, 405, "error", "method-not-allowed");
		return false;
	}
	r->override_header = proxy_request_has_override(hr);
	r->target = strndup(hr->target, hr->target_len);
	if (r->target == NULL || proxy_conn_req_path(r, r->target,
	    strlen(r->target)) != 0) {
		proxy_conn_fail(c, 503, "error", "no-memory");
		return false;
	}
	snprintf(authority, sizeof(authority), hp->kind == HOST_IPV6 ?
	    "[%s]:%u" : "%s:%u", hp->name, (unsigned)c->orig_port);
	r->uphead = cbuf_new((size_t)proxy_conn_max_header(c) + 256);
	rc = r->uphead == NULL ? -ENOMEM : proxy_http_request_rewrite_origin(
	    hr, authority, NULL, NULL, r->uphead);
	if (rc != 0) {
		proxy_conn_fail(c, rc == -ENOSPC ? 431 : rc == -ENOMEM ? 503 :
		    400, "error", rc == -ENOSPC ? "headers-too-large" :
		    rc == -ENOMEM ? "no-memory" : "malformed-request");
		return false;
	}
	r->body_left = hr->content_length > 0 ? hr->content_length : 0;
	r->body_chunked = hr->chunked;
	if (r->body_chunked)
		proxy_http_chunked_init(&r->req_chunk);
	r->req_done = !r->body_chunked && r->body_left == 0;
	return true;
}

/* Fills c->req from a parsed head; on refusal answers and returns false. */
static bool
request_setup(struct conn *c, const struct http_request *hr,
    struct host_parsed *hp)
{
	struct conn_req *r = c->req;
	int rc;

	snprintf(r->method, sizeof(r->method), "%.*s",
	    (int)(hr->method_len < sizeof(r->method) - 1 ? hr->method_len :
	    sizeof(r->method) - 1), hr->method);
	r->is_connect = hr->is_connect;
	r->is_head = hr->method_len == 4 && memcmp(hr->method, "HEAD", 4) == 0;
	r->keep_alive = hr->keep_alive;
	r->client_http10 = hr->version_minor == 0;
	r->via = c->transparent ? "http" : hr->is_connect ? "connect" :
	    "forward";
	/* Redirected, the request names its host in Host alone: a
	 * CONNECT or an absolute URI (which could name another port than
	 * the connection's) is refused. */
	if (c->transparent) {
		if (hr->form == HTTP_TARGET_ORIGIN)
			return request_transparent(c, hr, hp);
		r->port = c->orig_port;
		proxy_conn_fail(c, 400, "error", "origin-form-required");
		return false;
	}
	if (hr->form != HTTP_TARGET_AUTHORITY &&
	    hr->form != HTTP_TARGET_ABSOLUTE) {
		proxy_conn_fail(c, 400, "error", "origin-form");
		return false;
	}
	if (proxy_host_parse(hr->host, hr->host_len, hp) != 0) {
		/* The host as sent, for the log and the run's report (the
		 * access log and the report escape what is not text). */
		(void)proxy_conn_req_str(&r->host, hr->host, hr->host_len <
		    HOST_NAME_MAXLEN ? hr->host_len : HOST_NAME_MAXLEN);
		proxy_conn_fail(c, 400, "error", "bad-host");
		return false;
	}
	if (proxy_conn_req_str(&r->host, hp->name, strlen(hp->name)) != 0) {
		proxy_conn_fail(c, 503, "error", "no-memory");
		return false;
	}
	r->host_kind = hp->kind;
	r->port = hr->port;
	if (request_method_refused(hr)) {
		proxy_conn_fail(c, 405, "error", "method-not-allowed");
		return false;
	}
	if (hr->form == HTTP_TARGET_ABSOLUTE && (hr->scheme_len != 4 ||
	    strncasecmp(hr->scheme, "http", 4) != 0)) {
		proxy_conn_fail(c, 405, "error", "unsupported-scheme");
		return false;
	}
	if (r->port == 0) {
		proxy_conn_fail(c, 400, "error", "bad-port");
		return false;
	}
	if (hr->is_connect)
		return true;
	/* For an entry with `inspect` (upstream.c): the target as sent, and
	 * the path for the log. */
	r->override_header = proxy_request_has_override(hr);
	r->target = strndup(hr->path, hr->path_len);
	if (r->target == NULL || proxy_conn_req_path(r, r->target,
	    strlen(r->target)) != 0) {
		proxy_conn_fail(c, 503, "error", "no-memory");
		return false;
	}
	if (proxy_http_request_check_host(hr) != 0) {
		proxy_conn_fail(c, 400, "error", "host-mismatch");
		return false;
	}
	r->uphead = cbuf_new((size_t)proxy_conn_max_header(c) + 256);
	rc = r->uphead == NULL ? -ENOMEM : proxy_http_request_rewrite(hr,
	    r->uphead);
	if (rc == -ENOSPC) {
		proxy_conn_fail(c, 431, "error", "headers-too-large");
		return false;
	} else if (rc != 0) {
		proxy_conn_fail(c, rc == -ENOMEM ? 503 : 400, "error",
		    rc == -ENOMEM ? "no-memory" : "malformed-request");
		return false;
	}
	r->body_left = hr->content_length > 0 ? hr->content_length : 0;
	r->body_chunked = hr->chunked;
	if (r->body_chunked)
		proxy_http_chunked_init(&r->req_chunk);
	r->req_done = !r->body_chunked && r->body_left == 0;
	return true;
}

/* The forward path's decision: c->req filled, the run's admission. */
static bool
request_decide(struct conn *c, const struct http_request *hr,
    struct proxy_request_next *next)
{
	if (!request_setup(c, hr, &next->hp) || !proxy_run_admit(c, hr))
		return false;
	proxy_conn_admitted(c);
	return true;
}

static void
request_go(struct conn *c, size_t head_len, struct proxy_request_next *next)
{
	evbuffer_drain(bufferevent_get_input(c->cli), head_len);
	proxy_upstream_decide(c, &next->hp);
}

static const struct proxy_request_path request_forward = {
	.decide = request_decide,
	.go = request_go,
};

/* While resolving and connecting, the client stays readable (a hang-up
 * aborts the request; no epoll change on the hand-over) but what it sends
 * is only kept, up to a small bound, for the relay. */
static void
request_hold_read_cb(struct bufferevent *bev, void *arg)
{
	(void)bev;
	(void)arg;
}

static void
request_hold_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;

	(void)bev;
	if (what & BEV_EVENT_CONNECTED)
		return;		/* an inspected tunnel's handshake */
	if ((what & BEV_EVENT_EOF) && !(what & BEV_EVENT_ERROR)) {
		/* Maybe only a half-close after the request: the relay
		 * decides once it runs. */
		c->cli_eof = true;
		return;
	}
	proxy_conn_free(c);
}

static void
request_hold(struct conn *c)
{
	bufferevent_setwatermark(c->cli, EV_READ, 0, CONN_OUT_MAX);
	bufferevent_setcb(c->cli, request_hold_read_cb, NULL,
	    request_hold_event_cb, c);
}

static void
request_head_process(struct conn *c)
{
	const struct proxy_request_path *path = c->path;
	struct proxy_request_next next = { .secret = NULL };
	struct http_request *hr;
	int rc;

	if (proxy_conn_head_parse(c, &hr, &rc) <= 0)
		return;
	if (path->prepare != NULL && !path->prepare(c)) {
		free(hr);
		return;
	}
	if (rc == -EAGAIN || rc == -EMSGSIZE) {
		proxy_conn_fail(c, 431, "error", "headers-too-large");
	} else if (rc == -ENOMEM) {
		proxy_conn_fail(c, 503, "error", "no-memory");
	} else if (rc == -ERANGE) {
		proxy_conn_fail(c, 400, "error", "bad-port");
	} else if (rc < 0) {
		proxy_conn_fail(c, 400, "error", "malformed-request");
	} else if (path->decide(c, hr, &next)) {
		free(hr);
		request_hold(c);
		path->go(c, (size_t)rc, &next);
		return;
	}
	free(hr);
}

static void
request_head_read_cb(struct bufferevent *bev, void *arg)
{
	(void)bev;
	request_head_process(arg);
}

static void
request_head_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;

	(void)bev;
	if (what & BEV_EVENT_CONNECTED)
		return;		/* an inspected tunnel's handshake is done */
	if ((what & BEV_EVENT_EOF) && !(what & BEV_EVENT_ERROR) &&
	    evbuffer_get_length(bufferevent_get_input(c->cli)) > 0) {
		/* A partial head then EOF: nothing can complete it. */
		proxy_conn_fail(c, 400, "error", "malformed-request");
		return;
	}
	if ((what & BEV_EVENT_ERROR) && c->path->failed != NULL)
		c->path->failed(c);
	proxy_conn_free(c);
}

void
proxy_request_wait_path(struct conn *c, const struct proxy_request_path *path)
{
	c->path = path;
	proxy_conn_state_set(c, CONN_HEAD);
	c->head_scanned = 0;
	bufferevent_setwatermark(c->cli, EV_READ, 0,
	    c->srv->cfg->max_header);
	bufferevent_setwatermark(c->cli, EV_WRITE, 0, 0);
	bufferevent_setcb(c->cli, request_head_read_cb, NULL,
	    request_head_event_cb, c);
	/* A new socket bufferevent has writing enabled without its event
	 * added; enabling it again would add the event for an empty output,
	 * one epoll change and one wake-up for nothing per connection. */
	if (bufferevent_get_enabled(c->cli) & EV_WRITE)
		bufferevent_enable(c->cli, EV_READ);
	else
		bufferevent_enable(c->cli, EV_READ | EV_WRITE);
	proxy_conn_timer_arm(c, c->srv->cfg->header_timeout_ms);
	request_head_process(c);
}

void
proxy_request_wait(struct conn *c)
{
	proxy_request_wait_path(c, &request_forward);
}
