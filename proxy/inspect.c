/*
 * Inspected tunnels (allow entries with `inspect`): once the SNI check has
 * passed, the client's TLS is terminated with a leaf for the tunnel's host
 * (tls.c, ca.c), and every request on the kept-alive connection is parsed
 * with the strict parser (http.c), checked against the entry's methods and
 * paths (allowlist_inspect_check), given the injected header, and sent to
 * the address the CONNECT checked over a fresh verified TLS connection
 * (one request each, as forward.c does for plain HTTP, whose relay it
 * reuses for bodies and responses). Refusals answer inside the TLS session.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "allowlist/allowlist.h"
#include "common/cbuf.h"
#include "common/log.h"
#include "common/util.h"
#include "proxy/conn.h"
#include "proxy/host.h"
#include "proxy/http.h"
#include "proxy/metrics.h"
#include "proxy/tls.h"

/* The tunnel's fixed facts, for every request on it. */
struct inspect {
	struct sockaddr_storage addr;	/* the address the CONNECT checked */
	socklen_t addrlen;
	int spare_fd;		/* the CONNECT's socket, for the first request */
	char host[HOST_NAME_MAXLEN + 1];
	enum host_kind kind;
	uint16_t port;
	char authority[HOST_NAME_MAXLEN + 16];	/* for the Host header */
};

static void inspect_wait(struct conn *c);

/* --- the client side ----------------------------------------------------- */

static void
inspect_on_free(struct conn *c)
{
	struct inspect *in = c->insp;

	/* A close_notify once everything went: a client reading to EOF
	 * then sees a clean end. Best effort, never blocks. */
	if (c->cli != NULL && evbuffer_get_length(bufferevent_get_output(
	    c->cli)) == 0) {
		SSL *ssl = bufferevent_openssl_get_ssl(c->cli);
		if (ssl != NULL && SSL_is_init_finished(ssl))
			(void)SSL_shutdown(ssl);
		ERR_clear_error();
	}
	if (in != NULL && in->spare_fd >= 0)
		close(in->spare_fd);
	free(in);
	c->insp = NULL;
}

/* Takes the socket out of a plain bufferevent and frees it. */
static int
inspect_detach(struct bufferevent **bev)
{
	int fd = (int)bufferevent_getfd(*bev);

	bufferevent_setfd(*bev, -1);
	bufferevent_free(*bev);
	*bev = NULL;
	return fd;
}

static void
inspect_authority(struct inspect *in)
{
	size_t n;

	if (in->kind == HOST_IPV6)
		n = (size_t)snprintf(in->authority, sizeof(in->authority),
		    "[%s]", in->host);
	else
		n = (size_t)snprintf(in->authority, sizeof(in->authority),
		    "%s", in->host);
	if (in->port != 443 && n < sizeof(in->authority))
		snprintf(in->authority + n, sizeof(in->authority) - n, ":%u",
		    (unsigned)in->port);
}

/* The SNI check passed on a tunnel to an inspected entry: c->cli holds the
 * ClientHello (unread), c->up the socket connected to the checked
 * address. */
void
proxy_inspect_begin(struct conn *c)
{
	struct conn_req *r = c->req;
	struct evbuffer *cin = bufferevent_get_input(c->cli);
	size_t n = evbuffer_get_length(cin);
	struct bufferevent *bev;
	struct inspect *in;
	unsigned char *pre = NULL;
	SSL *ssl;
	int fd;

	in = calloc(1, sizeof(*in));
	if (in == NULL || (n > 0 && (pre = malloc(n)) == NULL) ||
	    evbuffer_get_length(bufferevent_get_output(c->cli)) > 0 ||
	    r->next_addr == 0) {
		/* No memory, or the 200 still queued (the client cannot have
		 * read it and sent a ClientHello): give up. */
		free(in);
		free(pre);
		snprintf(r->reason, sizeof(r->reason), "inspect-failed");
		proxy_conn_free(c);
		return;
	}
	in->spare_fd = -1;
	memcpy(&in->addr, &r->addrs[r->next_addr - 1], sizeof(in->addr));
	in->addrlen = in->addr.ss_family == AF_INET ?
	    sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	snprintf(in->host, sizeof(in->host), "%s", r->host);
	in->kind = r->host_kind;
	in->port = r->port;
	inspect_authority(in);
	if (n > 0)
		evbuffer_remove(cin, pre, n);
	c->insp = in;
	c->on_free = inspect_on_free;
	c->wait_next = inspect_wait;
	if (c->state == CONN_TUNNEL)
		proxy_metrics_tunnels_add(proxy_conn_metrics(c), -1);
	c->state = CONN_HEAD;
	in->spare_fd = inspect_detach(&c->up);
	fd = inspect_detach(&c->cli);
	ssl = proxy_tls_server(c->srv->tls, in->host, in->kind != HOST_NAME,
	    fd, pre, n);
	free(pre);
	bev = ssl == NULL ? NULL : bufferevent_openssl_socket_new(
	    proxy_conn_base(c), fd, ssl, BUFFEREVENT_SSL_ACCEPTING,
	    BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	if (bev == NULL) {
		if (ssl != NULL)
			SSL_free(ssl);
		close(fd);
		snprintf(r->reason, sizeof(r->reason), "inspect-failed");
		proxy_conn_free(c);
		return;
	}
	bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	c->cli = bev;
	/* The CONNECT itself: logged now, each request inside on its own. */
	r->inspected = true;
	proxy_conn_request_done(c);
	inspect_wait(c);
}

/* --- a request inside ---------------------------------------------------- */

static void
inspect_hold_read_cb(struct bufferevent *bev, void *arg)
{
	(void)bev;
	(void)arg;
}

static void
inspect_hold_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;

	(void)bev;
	if (what & BEV_EVENT_CONNECTED)
		return;
	if ((what & BEV_EVENT_EOF) && !(what & BEV_EVENT_ERROR)) {
		c->cli_eof = true;
		return;
	}
	proxy_conn_free(c);
}

static void
inspect_up_timeout(struct conn *c)
{
	proxy_conn_fail(c, 504, "error", "connect-timeout");
}

static void
inspect_up_ready(struct conn *c)
{
	struct conn_req *r = c->req;
	int one = 1;

	event_del(&c->timer);
	r->connect_ms = time_mono_ms() - r->attempt_ms;
	proxy_conn_format_addr((struct sockaddr *)&c->insp->addr, r->address,
	    sizeof(r->address));
	(void)setsockopt(bufferevent_getfd(c->up), IPPROTO_TCP, TCP_NODELAY,
	    &one, sizeof(one));
	r->decision = "allow";
	proxy_forward_start(c);
}

static void
inspect_up_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;
	SSL *ssl = bufferevent_openssl_get_ssl(bev);
	unsigned long e = bufferevent_get_openssl_error(bev);
	int err = EVUTIL_SOCKET_ERROR();
	long vr = ssl != NULL ? SSL_get_verify_result(ssl) : X509_V_OK;

	if (what & BEV_EVENT_CONNECTED) {
		inspect_up_ready(c);
		return;
	}
	ERR_clear_error();
	if (e == 0 && vr == X509_V_OK && (what & BEV_EVENT_ERROR) &&
	    err == ECONNREFUSED) {
		proxy_conn_fail(c, 502, "error", "upstream-refused");
		return;
	}
	/* The name is the client's request; the cause is upstream's. */
	log_debug("%s: upstream TLS with %s:%u failed: %s", c->client,
	    c->insp->host, c->insp->port, vr != X509_V_OK ?
	    X509_verify_cert_error_string(vr) : e != 0 ?
	    ERR_reason_error_string(e) : "closed during the handshake");
	proxy_conn_fail(c, 502, "error", "upstream-tls");
}

/* A verified TLS connection to the checked address: the CONNECT's socket
 * for the first request, a new one after. */
static void
inspect_connect(struct conn *c)
{
	struct inspect *in = c->insp;
	struct conn_req *r = c->req;
	struct bufferevent *up;
	SSL *ssl;
	int fd = in->spare_fd;

	in->spare_fd = -1;
	ssl = proxy_tls_client(c->srv->tls, in->host, in->kind != HOST_NAME);
	up = ssl == NULL ? NULL : bufferevent_openssl_socket_new(
	    proxy_conn_base(c), fd, ssl, BUFFEREVENT_SSL_CONNECTING,
	    BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	if (up == NULL) {
		if (ssl != NULL)
			SSL_free(ssl);
		if (fd >= 0)
			close(fd);
		proxy_conn_fail(c, 503, "error", "no-memory");
		return;
	}
	bufferevent_openssl_set_allow_dirty_shutdown(up, 1);
	bufferevent_setcb(up, NULL, NULL, inspect_up_event_cb, c);
	c->up = up;
	r->attempt_ms = time_mono_ms();
	c->state = CONN_CONNECTING;
	c->connect_timeout = inspect_up_timeout;
	proxy_conn_timer_arm(c, c->srv->cfg->connect_timeout_ms);
	if (fd < 0 && bufferevent_socket_connect(up,
	    (struct sockaddr *)&in->addr, (int)in->addrlen) != 0) {
		proxy_conn_fail(c, 502, "error", "upstream-unreachable");
		return;
	}
	bufferevent_enable(up, EV_READ | EV_WRITE);
}

/* The Host header, if any, must name the tunnel's host and port: inside
 * one TLS session to a CDN, another Host would reach another site. */
static bool
inspect_host_ok(const struct inspect *in, const struct http_request *hr)
{
	const struct http_header *h = hr->host_header;
	struct host_parsed hp;
	const char *name;
	size_t len;
	uint16_t port;

	if (h == NULL)
		return true;
	if (proxy_host_port_split(h->value, h->value_len, &name, &len, &port,
	    false) != 0 || proxy_host_parse(name, len, &hp) != 0)
		return false;
	return strcmp(hp.name, in->host) == 0 &&
	    (port == 0 ? in->port == 443 : port == in->port);
}

/* The request's record and checks; on refusal answers (c lingers) and
 * returns false. */
static bool
inspect_setup(struct conn *c, const struct http_request *hr)
{
	struct inspect *in = c->insp;
	struct conn_req *r = c->req;
	const struct allowlist_inspect *opts = NULL;
	const char *why = NULL;
	char reason[96], *target;
	bool ok;
	int rc;

	snprintf(r->method, sizeof(r->method), "%.*s",
	    (int)(hr->method_len < sizeof(r->method) - 1 ? hr->method_len :
	    sizeof(r->method) - 1), hr->method);
	/* r->host: set by inspect_head_process, the one caller. */
	r->host_kind = in->kind;
	r->port = in->port;
	r->run = c->run;
	r->inspected = true;
	r->is_head = hr->method_len == 4 && memcmp(hr->method, "HEAD", 4) == 0;
	r->keep_alive = hr->keep_alive;
	r->client_http10 = hr->version_minor == 0;
	if (hr->form == HTTP_TARGET_ORIGIN && proxy_conn_req_path(r,
	    hr->target, hr->target_len) != 0) {
		proxy_conn_fail(c, 503, "error", "no-memory");
		return false;
	}
	if (hr->is_connect || hr->method_len >= sizeof(r->method) - 1 ||
	    (hr->method_len == 5 && (memcmp(hr->method, "TRACE", 5) == 0 ||
	    memcmp(hr->method, "TRACK", 5) == 0))) {
		proxy_conn_fail(c, 405, "deny", "method-not-allowed");
		return false;
	}
	if (!inspect_host_ok(in, hr)) {
		proxy_conn_fail(c, 403, "deny", "host-mismatch");
		return false;
	}
	/* The entry as the policy is now (a reload may have changed it). */
	if (!proxy_policy_decide(c, in->host, in->port, reason,
	    sizeof(reason), &opts, NULL)) {
		proxy_conn_fail(c, 403, "deny", reason);
		return false;
	}
	if (opts == NULL) {
		proxy_conn_fail(c, 403, "deny", "inspect-removed");
		return false;
	}
	if (allowlist_inspect_bounded(opts) && proxy_request_has_override(hr)) {
		proxy_conn_fail(c, 403, "deny", "override-header");
		return false;
	}
	target = strndup(hr->target, hr->target_len);
	if (target == NULL) {
		proxy_conn_fail(c, 503, "error", "no-memory");
		return false;
	}
	ok = hr->form == HTTP_TARGET_ORIGIN &&
	    allowlist_inspect_check(opts, r->method, target, &why);
	free(target);
	if (!ok) {
		proxy_conn_fail(c, 403, "deny", why != NULL ? why :
		    "path-not-canonical");
		return false;
	}
	snprintf(r->reason, sizeof(r->reason), "%s", why);
	r->uphead = cbuf_new((size_t)proxy_conn_max_header(c) + 512 +
	    (opts->inject_value != NULL ? strlen(opts->inject_value) : 0));
	rc = r->uphead == NULL ? -ENOMEM : proxy_http_request_rewrite_origin(
	    hr, in->authority, opts->inject_header, opts->inject_value,
	    r->uphead);
	if (rc != 0) {
		proxy_conn_fail(c, rc == -ENOMEM ? 503 : rc == -ENOSPC ? 431 :
		    502, "error", rc == -ENOMEM ? "no-memory" : rc == -ENOSPC ?
		    "headers-too-large" : "inject-invalid");
		return false;
	}
	r->body_left = hr->content_length > 0 ? hr->content_length : 0;
	r->body_chunked = hr->chunked;
	if (r->body_chunked)
		proxy_http_chunked_init(&r->req_chunk);
	r->req_done = !r->body_chunked && r->body_left == 0;
	return true;
}

static void
inspect_head_process(struct conn *c)
{
	struct evbuffer *ib = bufferevent_get_input(c->cli);
	struct http_request *hr;
	int rc;

	if (proxy_conn_head_parse(c, &hr, &rc) <= 0)
		return;
	if (proxy_conn_req_str(&c->req->host, c->insp->host,
	    strlen(c->insp->host)) != 0) {
		free(hr);
		proxy_conn_fail(c, 503, "error", "no-memory");
		return;
	}
	c->req->port = c->insp->port;
	c->req->run = c->run;
	c->req->inspected = true;
	if (rc == -EAGAIN || rc == -EMSGSIZE)
		proxy_conn_fail(c, 431, "error", "headers-too-large");
	else if (rc == -ENOMEM)
		proxy_conn_fail(c, 503, "error", "no-memory");
	else if (rc < 0)
		proxy_conn_fail(c, 400, "error", "malformed-request");
	else if (inspect_setup(c, hr)) {
		evbuffer_drain(ib, (size_t)rc);
		bufferevent_setwatermark(c->cli, EV_READ, 0, CONN_OUT_MAX);
		bufferevent_setcb(c->cli, inspect_hold_read_cb, NULL,
		    inspect_hold_event_cb, c);
		free(hr);
		inspect_connect(c);
		return;
	}
	free(hr);
}

static void
inspect_head_read_cb(struct bufferevent *bev, void *arg)
{
	(void)bev;
	inspect_head_process(arg);
}

static void
inspect_head_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;

	(void)bev;
	if (what & BEV_EVENT_CONNECTED)
		return;	/* the handshake is done */
	if ((what & BEV_EVENT_EOF) && !(what & BEV_EVENT_ERROR) &&
	    evbuffer_get_length(bufferevent_get_input(c->cli)) > 0) {
		proxy_conn_fail(c, 400, "error", "malformed-request");
		return;
	}
	if ((what & BEV_EVENT_ERROR) && c->nrequests == 1)
		log_debug("%s: client TLS with %s failed", c->client,
		    c->insp->host);
	proxy_conn_free(c);
}

/* Waits for (the next) request head inside the tunnel. */
static void
inspect_wait(struct conn *c)
{
	c->state = CONN_HEAD;
	c->head_scanned = 0;
	bufferevent_setwatermark(c->cli, EV_READ, 0, c->srv->cfg->max_header);
	bufferevent_setwatermark(c->cli, EV_WRITE, 0, 0);
	bufferevent_setcb(c->cli, inspect_head_read_cb, NULL,
	    inspect_head_event_cb, c);
	bufferevent_enable(c->cli, EV_READ | EV_WRITE);
	proxy_conn_timer_arm(c, c->srv->cfg->header_timeout_ms);
	inspect_head_process(c);
}
