/*
 * The two OpenSSL contexts of inspected tunnels, and a small filter BIO
 * that replays the bytes the SNI check already took from the client's
 * socket before reading the socket itself, so the handshake sees the
 * whole ClientHello.
 */
#include "proxy/tls.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "proxy/ca.h"

struct proxy_tls {
	struct proxy_ca *ca;
	SSL_CTX *srv;
	SSL_CTX *cli;
	BIO_METHOD *prefix;
};

/* ALPN: "http/1.1" only, in wire form. */
static const unsigned char tls_alpn[] = "\x08http/1.1";

/* --- the prefix BIO ------------------------------------------------------ */

struct tls_prefix {
	unsigned char *buf;
	size_t len, off;
};

static int
prefix_create(BIO *b)
{
	BIO_set_init(b, 1);
	return 1;
}

static int
prefix_destroy(BIO *b)
{
	struct tls_prefix *p = BIO_get_data(b);

	if (p != NULL) {
		free(p->buf);
		free(p);
		BIO_set_data(b, NULL);
	}
	return 1;
}

static int
prefix_read(BIO *b, char *out, int outl)
{
	struct tls_prefix *p = BIO_get_data(b);
	BIO *next = BIO_next(b);
	int n;

	BIO_clear_retry_flags(b);
	if (outl <= 0)
		return 0;
	if (p != NULL && p->off < p->len) {
		size_t k = p->len - p->off;
		if (k > (size_t)outl)
			k = (size_t)outl;
		memcpy(out, p->buf + p->off, k);
		p->off += k;
		return (int)k;
	}
	if (next == NULL)
		return 0;
	n = BIO_read(next, out, outl);
	BIO_copy_next_retry(b);
	return n;
}

static int
prefix_write(BIO *b, const char *in, int inl)
{
	BIO *next = BIO_next(b);
	int n;

	BIO_clear_retry_flags(b);
	if (next == NULL)
		return 0;
	n = BIO_write(next, in, inl);
	BIO_copy_next_retry(b);
	return n;
}

static long
prefix_ctrl(BIO *b, int cmd, long num, void *ptr)
{
	struct tls_prefix *p = BIO_get_data(b);
	BIO *next = BIO_next(b);
	long n;

	if (cmd == BIO_CTRL_PENDING) {
		n = next != NULL ? BIO_ctrl(next, cmd, num, ptr) : 0;
		return n + (p != NULL ? (long)(p->len - p->off) : 0);
	}
	return next != NULL ? BIO_ctrl(next, cmd, num, ptr) : 0;
}

/* --- contexts ------------------------------------------------------------ */

static int
tls_alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
    const unsigned char *in, unsigned int inlen, void *arg)
{
	unsigned char *sel;

	(void)ssl;
	(void)arg;
	/* Only HTTP/1.1 is spoken inside: anything else (h2 alone) gets no
	 * ALPN answer, and such a client gives up or falls back. */
	if (SSL_select_next_proto(&sel, outlen, tls_alpn, sizeof(tls_alpn) - 1,
	    in, inlen) != OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_NOACK;
	*out = sel;
	return SSL_TLSEXT_ERR_OK;
}

static int
tls_fail(char *err, size_t errlen, const char *what)
{
	unsigned long e = ERR_get_error();
	char text[160] = "";

	if (e != 0)
		ERR_error_string_n(e, text, sizeof(text));
	ERR_clear_error();
	snprintf(err, errlen, "%s%s%s", what, text[0] ? ": " : "", text);
	return -EINVAL;
}

int
proxy_tls_new(struct proxy_ca *ca, const char *upstream_ca,
    struct proxy_tls **out, char *err, size_t errlen)
{
	struct proxy_tls *t;
	int rc;

	*out = NULL;
	t = calloc(1, sizeof(*t));
	if (t == NULL) {
		proxy_ca_free(ca);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (upstream_ca == NULL) {
		/* The roots as one file, read now: the system's hashed
		 * directory is read lazily, at each verification, and the
		 * network child has no filesystem by then. */
		upstream_ca = getenv(X509_get_default_cert_file_env());
		if (upstream_ca == NULL)
			upstream_ca = X509_get_default_cert_file();
	}
	t->ca = ca;
	t->srv = SSL_CTX_new(TLS_server_method());
	t->cli = SSL_CTX_new(TLS_client_method());
	t->prefix = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_FILTER,
	    "cordon-prefix");
	if (t->srv == NULL || t->cli == NULL || t->prefix == NULL ||
	    BIO_meth_set_create(t->prefix, prefix_create) != 1 ||
	    BIO_meth_set_destroy(t->prefix, prefix_destroy) != 1 ||
	    BIO_meth_set_read(t->prefix, prefix_read) != 1 ||
	    BIO_meth_set_write(t->prefix, prefix_write) != 1 ||
	    BIO_meth_set_ctrl(t->prefix, prefix_ctrl) != 1) {
		rc = tls_fail(err, errlen, "TLS setup");
		goto bad;
	}
	SSL_CTX_set_min_proto_version(t->srv, TLS1_2_VERSION);
	SSL_CTX_set_min_proto_version(t->cli, TLS1_2_VERSION);
	SSL_CTX_set_options(t->srv, SSL_OP_NO_RENEGOTIATION |
	    SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE);
	SSL_CTX_set_options(t->cli, SSL_OP_NO_RENEGOTIATION |
	    SSL_OP_NO_COMPRESSION);
	/* The client's sessions are not resumed: every leaf is cheap. */
	SSL_CTX_set_session_cache_mode(t->srv, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_num_tickets(t->srv, 0);
	SSL_CTX_set_alpn_select_cb(t->srv, tls_alpn_select, NULL);
	/* Upstream: the whole chain and the name are verified. */
	SSL_CTX_set_verify(t->cli, SSL_VERIFY_PEER, NULL);
	if (SSL_CTX_set_alpn_protos(t->cli, tls_alpn, sizeof(tls_alpn) - 1)
	    != 0) {
		rc = tls_fail(err, errlen, "ALPN");
		goto bad;
	}
	if (SSL_CTX_load_verify_locations(t->cli, upstream_ca, NULL) != 1) {
		rc = tls_fail(err, errlen, upstream_ca);
		goto bad;
	}
	*out = t;
	return 0;
bad:
	proxy_tls_free(t);
	return rc;
}

void
proxy_tls_free(struct proxy_tls *t)
{
	if (t == NULL)
		return;
	SSL_CTX_free(t->srv);
	SSL_CTX_free(t->cli);
	BIO_meth_free(t->prefix);
	proxy_ca_free(t->ca);
	free(t);
}

struct proxy_ca *
proxy_tls_ca(const struct proxy_tls *t)
{
	return t->ca;
}

void
proxy_tls_set_ca(struct proxy_tls *t, struct proxy_ca *ca)
{
	proxy_ca_free(t->ca);
	t->ca = ca;
}

SSL *
proxy_tls_server(struct proxy_tls *t, const char *host, bool is_ip, int fd,
    const void *prefix, size_t len)
{
	X509 *leaf = t->ca != NULL ? proxy_ca_leaf(t->ca, host, is_ip,
	    (int64_t)time(NULL)) : NULL;

	return leaf != NULL ? proxy_tls_server_leaf(t, leaf, fd, prefix, len) :
	    NULL;
}

SSL *
proxy_tls_server_leaf(struct proxy_tls *t, X509 *leaf, int fd,
    const void *prefix, size_t len)
{
	struct tls_prefix *p = NULL;
	BIO *pb = NULL, *sb = NULL;
	SSL *ssl;

	if (leaf == NULL || (ssl = SSL_new(t->srv)) == NULL)
		return NULL;
	if (SSL_use_certificate(ssl, leaf) != 1 || SSL_use_PrivateKey(ssl,
	    proxy_ca_leaf_key(t->ca)) != 1 || SSL_add1_chain_cert(ssl,
	    proxy_ca_cert(t->ca)) != 1)
		goto bad;
	p = calloc(1, sizeof(*p));
	if (p == NULL || (len > 0 && (p->buf = malloc(len)) == NULL))
		goto bad;
	if (len > 0)
		memcpy(p->buf, prefix, len);
	p->len = len;
	pb = BIO_new(t->prefix);
	sb = BIO_new_socket(fd, BIO_NOCLOSE);
	if (pb == NULL || sb == NULL)
		goto bad;
	BIO_set_data(pb, p);
	p = NULL;
	BIO_push(pb, sb);
	sb = NULL;
	SSL_set_bio(ssl, pb, pb);
	SSL_set_accept_state(ssl);
	return ssl;
bad:
	if (p != NULL)
		free(p->buf);
	free(p);
	BIO_free(sb);
	BIO_free_all(pb);
	SSL_free(ssl);
	ERR_clear_error();
	return NULL;
}

SSL *
proxy_tls_client(struct proxy_tls *t, const char *host, bool is_ip)
{
	SSL *ssl = SSL_new(t->cli);
	X509_VERIFY_PARAM *vp;

	if (ssl == NULL)
		return NULL;
	vp = SSL_get0_param(ssl);
	if (is_ip) {
		/* No SNI for an address (RFC 6066); the certificate must
		 * carry it as an IP SAN. */
		if (X509_VERIFY_PARAM_set1_ip_asc(vp, host) != 1)
			goto bad;
	} else {
		X509_VERIFY_PARAM_set_hostflags(vp,
		    X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
		if (SSL_set_tlsext_host_name(ssl, host) != 1 ||
		    SSL_set1_host(ssl, host) != 1)
			goto bad;
	}
	SSL_set_connect_state(ssl);
	return ssl;
bad:
	SSL_free(ssl);
	ERR_clear_error();
	return NULL;
}
