/*
 * Inspected tunnels, the client side (inspect_internal.h): once the SNI
 * check has passed, the tunnel's facts are kept, both sockets detached
 * from their bufferevents, a leaf for the host minted here or asked of
 * the parent (privilege separation), and the client's TLS started with
 * it over the ClientHello already read; then the requests inside
 * (inspect.c).
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "common/log.h"
#include "common/util.h"
#include "proxy/ca.h"
#include "proxy/conn.h"
#include "proxy/inspect_internal.h"
#include "proxy/metrics.h"
#include "proxy/psep.h"
#include "proxy/psmsg.h"
#include "proxy/tls.h"

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
	proxy_inspect_wait(c);
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
	proxy_conn_state_set(c, CONN_PARENT);
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
	c->wait_next = proxy_inspect_wait;
	if (c->state == CONN_TUNNEL)
		proxy_metrics_tunnels_add(proxy_conn_metrics(c), -1);
	proxy_conn_state_set(c, CONN_HEAD);
	in->spare_fd = inspect_detach(&c->up);
	in->cli_fd = inspect_detach(&c->cli);
	inspect_leaf(c);
}
