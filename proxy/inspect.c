/*
 * Inspected tunnels (allow entries with `inspect`): once the SNI check has
 * passed, the client's TLS is terminated with a leaf for the tunnel's host
 * (tls.c, ca.c), and every request on the kept-alive connection is parsed
 * with the strict parser (http.c), checked against the entry's methods and
 * paths (allowlist_inspect_check), given the injected header, and sent to
 * the address the CONNECT checked over a fresh verified TLS connection
 * (one request each, as forward.c does for plain HTTP, whose relay it
 * reuses for bodies and responses). Refusals answer inside the TLS session.
 * The client side (the leaf, the client's TLS) is inspect_tls.c's; here,
 * the requests inside, on request.c's pipeline.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
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
#include "proxy/inspect_internal.h"
#include "proxy/ca.h"
#include "proxy/metrics.h"
#include "proxy/psep.h"
#include "proxy/psmsg.h"
#include "proxy/tls.h"

/* The tunnel's fixed facts, for every request on it. */
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
	proxy_conn_state_set(c, CONN_CONNECTING);
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
/* The head for upstream: our Host, the injected header (value NULL:
 * none). False: refused (answered). */
static bool
inspect_rewrite(struct conn *c, const struct http_request *hr,
    const char *header, const char *value)
{
	struct conn_req *r = c->req;
	int rc;

	r->uphead = cbuf_new((size_t)proxy_conn_max_header(c) + 512 +
	    (value != NULL ? strlen(value) : 0));
	rc = r->uphead == NULL ? -ENOMEM : proxy_http_request_rewrite_origin(
	    hr, c->insp->authority, header, value, r->uphead);
	if (rc != 0) {
		proxy_conn_fail(c, rc == -ENOMEM ? 503 : rc == -ENOSPC ? 431 :
		    502, "error", rc == -ENOMEM ? "no-memory" : rc == -ENOSPC ?
		    "headers-too-large" : "inject-invalid");
		return false;
	}
	return true;
}

/* *secret (static or borrowed from the set: use it at once) gets the name
 * of a secret to ask the parent for, else stays NULL. */
static bool
inspect_setup(struct conn *c, const struct http_request *hr,
    const char **secret)
{
	struct inspect *in = c->insp;
	struct conn_req *r = c->req;
	const struct allowlist_inspect *opts = NULL;
	const char *why = NULL;
	char reason[96], *target;
	bool ok;

	*secret = NULL;
	snprintf(r->method, sizeof(r->method), "%.*s",
	    (int)(hr->method_len < sizeof(r->method) - 1 ? hr->method_len :
	    sizeof(r->method) - 1), hr->method);
	/* r->host: set by inspect_prepare, just before. */
	r->host_kind = in->kind;
	r->port = in->port;
	r->run = c->run;
	r->inspected = true;
	/* The tunnel's path: a CONNECT's, or a redirected ClientHello's. */
	r->via = c->transparent ? "tls" : "connect";
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
	r->body_left = hr->content_length > 0 ? hr->content_length : 0;
	r->body_chunked = hr->chunked;
	if (r->body_chunked)
		proxy_http_chunked_init(&r->req_chunk);
	r->req_done = !r->body_chunked && r->body_left == 0;
	/* A secret held by the parent: asked for, the head rewritten when
	 * it comes (inspect_secret_cb). */
	if (opts->inject_header != NULL && opts->inject_value == NULL &&
	    c->srv->psep != NULL) {
		*secret = opts->inject_secret;
		snprintf(in->inject_header, sizeof(in->inject_header), "%s",
		    opts->inject_header);
		return true;
	}
	return inspect_rewrite(c, hr, opts->inject_header, opts->inject_value);
}

/* The parent's answer to the secret question: the head (kept as text)
 * is parsed again and rewritten with the value, which is then wiped. */
static void
inspect_secret_cb(void *arg, const struct proxy_imsg *m)
{
	struct conn *c = arg;
	struct inspect *in = c->insp;
	struct http_request *hr = malloc(sizeof(*hr));
	char *value = NULL;
	bool ok;
	int rc;

	in->ask = 0;
	if (m != NULL && m->type == PSMSG_SECRET && m->len > 0 &&
	    memchr(m->data, '\0', m->len) == NULL)
		value = strndup(m->data, m->len);
	if (value == NULL || hr == NULL) {
		free(hr);
		free(value);
		/* Never sent without it: the entry says inject. */
		proxy_conn_fail(c, 502, "error", "inject-unavailable");
		return;
	}
	rc = proxy_http_request_parse(in->head, in->head_len,
	    (size_t)proxy_conn_max_header(c), hr);
	ok = rc > 0 && inspect_rewrite(c, hr, in->inject_header, value);
	explicit_bzero(value, strlen(value));
	explicit_bzero((void *)m->data, m->len);
	free(value);
	free(hr);
	free(in->head);
	in->head = NULL;
	if (rc <= 0) {
		proxy_conn_fail(c, 503, "error", "no-memory");
		return;
	}
	if (ok)
		inspect_connect(c);
}

/* Asks the parent for secret name for c's request (head: its rc bytes at
 * the input's front, copied, then drained). False: answered. */
static bool
inspect_secret_ask(struct conn *c, const char *name, size_t rc)
{
	struct evbuffer *ib = bufferevent_get_input(c->cli);
	struct inspect *in = c->insp;
	struct proxy_psmsg_secret_req q;
	const char *pol = proxy_run_policy(c);
	char *text;
	int err;

	memset(&q, 0, sizeof(q));
	snprintf(q.policy, sizeof(q.policy), "%s", pol != NULL ? pol :
	    "default");
	snprintf(q.host, sizeof(q.host), "%s", in->host);
	q.port = in->port;
	snprintf(q.name, sizeof(q.name), "%s", name);
	in->head = malloc(rc > 0 ? rc : 1);
	if (in->head == NULL || evbuffer_remove(ib, in->head, rc) !=
	    (int)rc || (text = proxy_psmsg_secret_req_encode(&q)) == NULL) {
		proxy_conn_fail(c, 503, "error", "no-memory");
		return false;
	}
	in->head_len = rc;
	err = proxy_psep_ask(c->srv->psep, PSMSG_SECRET_REQ, text,
	    strlen(text), inspect_secret_cb, c, &in->ask);
	free(text);
	if (err != 0) {
		proxy_conn_fail(c, 502, "error", "inject-unavailable");
		return false;
	}
	proxy_conn_state_set(c, CONN_PARENT);
	return true;
}

/* Before the head is judged: the log's fields of a request inside. */
static bool
inspect_prepare(struct conn *c)
{
	if (proxy_conn_req_str(&c->req->host, c->insp->host,
	    strlen(c->insp->host)) != 0) {
		proxy_conn_fail(c, 503, "error", "no-memory");
		return false;
	}
	c->req->port = c->insp->port;
	c->req->run = c->run;
	c->req->inspected = true;
	return true;
}

static bool
inspect_decide(struct conn *c, const struct http_request *hr,
    struct proxy_request_next *next)
{
	return inspect_setup(c, hr, &next->secret);
}

static void
inspect_go(struct conn *c, size_t head_len, struct proxy_request_next *next)
{
	if (next->secret != NULL) {
		(void)inspect_secret_ask(c, next->secret, head_len);
		return;
	}
	evbuffer_drain(bufferevent_get_input(c->cli), head_len);
	inspect_connect(c);
}

static void
inspect_failed(struct conn *c)
{
	if (c->nrequests == 1)
		log_debug("%s: client TLS with %s failed", c->client,
		    c->insp->host);
}

/* A request inside the tunnel: request.c's pipeline with these steps. */
static const struct proxy_request_path inspect_path = {
	.prepare = inspect_prepare,
	.decide = inspect_decide,
	.go = inspect_go,
	.failed = inspect_failed,
};

void
proxy_inspect_wait(struct conn *c)
{
	proxy_request_wait_path(c, &inspect_path);
}
