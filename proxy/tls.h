/*
 * TLS for inspected tunnels: the server side the sandbox's client talks to
 * (a leaf minted by ca.c for the tunnel's host, ALPN http/1.1 only, the
 * ClientHello bytes the SNI check already read replayed first), and the
 * client side towards upstream (SNI = host, full chain verification
 * against the system roots or --upstream-ca, hostname or IP verification,
 * ALPN http/1.1).
 */
#ifndef CORDON_PROXY_TLS_H
#define CORDON_PROXY_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

struct proxy_ca;
struct proxy_tls;

/* Takes ca (freed with the result; may be NULL until proxy_tls_set_ca).
 * upstream_ca: PEM file of the roots to trust upstream, NULL for the
 * system's bundle file ($SSL_CERT_FILE, else OpenSSL's default file),
 * read now. Returns 0 and *out, or a negative errno with a reason in
 * err. */
int proxy_tls_new(struct proxy_ca *ca, const char *upstream_ca,
    struct proxy_tls **out, char *err, size_t errlen);
void proxy_tls_free(struct proxy_tls *t);	/* accepts NULL */

/*
 * A server-side SSL for a client on fd, presenting host's leaf; the len
 * bytes at prefix (what was already read from fd: the ClientHello) are
 * read before fd. The SSL owns neither fd nor prefix (copied). NULL on
 * failure (no memory, or no leaf for host).
 */
SSL *proxy_tls_server(struct proxy_tls *t, const char *host, bool is_ip,
    int fd, const void *prefix, size_t len);

/* The same with the leaf given (the network child's, signed by the
 * parent for this CA's leaf key). */
SSL *proxy_tls_server_leaf(struct proxy_tls *t, X509 *leaf, int fd,
    const void *prefix, size_t len);
/* Replaces the CA (taken; the old one is freed). The network child
 * learns its parent's CA certificate after proxy_tls_new. */
void proxy_tls_set_ca(struct proxy_tls *t, struct proxy_ca *ca);

/* A client-side SSL towards host (SNI for a name; the certificate must
 * name host, DNS or IP). No BIO yet. NULL on failure. */
SSL *proxy_tls_client(struct proxy_tls *t, const char *host, bool is_ip);

/* The CA (for counters). */
struct proxy_ca *proxy_tls_ca(const struct proxy_tls *t);

#endif
