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
#include "proxy/ca.h"
#include "proxy/metrics.h"
#include "proxy/psep.h"
#include "proxy/psmsg.h"
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
	/* Waiting for the parent (privilege separation): its question's id
	 * (cancelled when c goes), and meanwhile the client's socket and the
	 * ClientHello already read (for the leaf), or a copy of the request
	 * head (for the secret). */
	uint64_t ask;
	int cli_fd;
	unsigned char *pre;
	size_t pre_len;
	char *head;
	size_t head_len;
	char inject_header[ALLOWLIST_HEADER_MAX + 1];
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
	if (in != NULL) {
		proxy_psep_cancel(c->srv->psep, in->ask);
		if (in->cli_fd >= 0)
			close(in->cli_fd);
		free(in->pre);
		free(in->head);
	}
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

/* The leaf is in hand: TLS with the client, the ClientHello the SNI check
 * read replayed first. */
static void
inspect_tls_start(struct conn *c, X509 *leaf)
{
	struct inspect *in = c->insp;
	struct conn_req *r = c->req;
	struct bufferevent *bev;
	int fd = in->cli_fd;
	SSL *ssl;

	in->cli_fd = -1;
	ssl = leaf != NULL ? proxy_tls_server_leaf(c->srv->tls, leaf, fd,
	    in->pre, in->pre_len) : NULL;
	free(in->pre);
	in->pre = NULL;
	bev = ssl == NULL ? NULL : bufferevent_openssl_socket_new(
	    proxy_conn_base(c), fd, ssl, BUFFEREVENT_SSL_ACCEPTING,
	    BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	if (bev == NULL) {
		if (ssl != NULL)
			SSL_free(ssl);
		close(fd);
		snprintf(r->reason, sizeof(r->reason), "%s", leaf == NULL ?
		    "inspect-no-leaf" : "inspect-failed");
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

/* The parent's answer to the leaf question (m NULL: no parent). */
static void
inspect_leaf_cb(void *arg, const struct proxy_imsg *m)
{
	struct conn *c = arg;
	struct inspect *in = c->insp;
	X509 *leaf = NULL;

	in->ask = 0;
	if (m != NULL && m->type == PSMSG_LEAF && m->len > 0)
		leaf = proxy_ca_leaf_store(proxy_tls_ca(c->srv->tls), in->host,
		    m->data, m->len, (int64_t)time(NULL));
	if (leaf == NULL)
		log_warnx("%s: no leaf for %s from the parent", c->client,
		    in->host);
	inspect_tls_start(c, leaf);
}

/* The leaf for the tunnel's host: cached, minted here (no parent: the CA
 * key is ours), or asked of the parent (inspect_tls_start follows). */
static void
inspect_leaf(struct conn *c)
{
	struct inspect *in = c->insp;
	struct proxy_ca *ca = proxy_tls_ca(c->srv->tls);
	struct proxy_psmsg_leaf_req q;
	int64_t now = (int64_t)time(NULL);
	X509 *leaf;
	char *text;
	int rc;

	if (ca == NULL) {
		inspect_tls_start(c, NULL);
		return;
	}
	if (c->srv->psep == NULL) {
		inspect_tls_start(c, proxy_ca_leaf(ca, in->host,
		    in->kind != HOST_NAME, now));
		return;
	}
	if ((leaf = proxy_ca_leaf_cached(ca, in->host, now)) != NULL) {
		inspect_tls_start(c, leaf);
		return;
	}
	memset(&q, 0, sizeof(q));
	snprintf(q.host, sizeof(q.host), "%s", in->host);
	q.is_ip = in->kind != HOST_NAME;
	q.port = in->port;
	if (proxy_ca_leaf_pubkey(ca, q.key, sizeof(q.key), &q.keylen) != 0 ||
	    (text = proxy_psmsg_leaf_req_encode(&q)) == NULL) {
		inspect_tls_start(c, NULL);
		return;
	}
	rc = proxy_psep_ask(c->srv->psep, PSMSG_LEAF_REQ, text, strlen(text),
	    inspect_leaf_cb, c, &in->ask);
	free(text);
	if (rc != 0) {
		inspect_tls_start(c, NULL);
		return;
	}
	/* Nothing to time meanwhile: the parent answers or the child
	 * dies with it. */
	c->state = CONN_RESOLVING;
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
	struct inspect *in;
	unsigned char *pre = NULL;

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
	in->cli_fd = -1;
	memcpy(&in->addr, &r->addrs[r->next_addr - 1], sizeof(in->addr));
	in->addrlen = in->addr.ss_family == AF_INET ?
	    sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	snprintf(in->host, sizeof(in->host), "%s", r->host);
	in->kind = r->host_kind;
	in->port = r->port;
	inspect_authority(in);
	if (n > 0)
		evbuffer_remove(cin, pre, n);
	in->pre = pre;
	in->pre_len = n;
	c->insp = in;
	c->on_free = inspect_on_free;
	c->wait_next = inspect_wait;
	if (c->state == CONN_TUNNEL)
		proxy_metrics_tunnels_add(proxy_conn_metrics(c), -1);
	c->state = CONN_HEAD;
	in->spare_fd = inspect_detach(&c->up);
	in->cli_fd = inspect_detach(&c->cli);
	inspect_leaf(c);
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
	/* r->host: set by inspect_head_process, the one caller. */
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
	c->state = CONN_RESOLVING;
	return true;
}

static void
inspect_head_process(struct conn *c)
{
	struct evbuffer *ib = bufferevent_get_input(c->cli);
	struct http_request *hr;
	const char *secret = NULL;
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
	else if (inspect_setup(c, hr, &secret)) {
		free(hr);
		bufferevent_setwatermark(c->cli, EV_READ, 0, CONN_OUT_MAX);
		bufferevent_setcb(c->cli, inspect_hold_read_cb, NULL,
		    inspect_hold_event_cb, c);
		if (secret != NULL) {
			(void)inspect_secret_ask(c, secret, (size_t)rc);
			return;
		}
		evbuffer_drain(ib, (size_t)rc);
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
