/*
 * The Cordon egress CA (TLS inspection): making it once (`cordon-proxy
 * --make-ca DIR`, called by `cordon net up`), loading it, and minting leaf
 * certificates per host on demand, cached with a bound (LRU). Leaves are
 * EC P-256 with SAN = the host (DNS name or IP address), valid 24 h,
 * backdated one hour; they all share one key made at load.
 */
#ifndef CORDON_PROXY_CA_H
#define CORDON_PROXY_CA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

struct proxy_ca;

#define PROXY_CA_KEY		"ca.key"
#define PROXY_CA_CERT		"ca.crt"
#define PROXY_CA_BUNDLE		"ca-bundle.pem"
#define PROXY_CA_ROOTS		"/etc/ssl/certs/ca-certificates.crt"
#define PROXY_CA_CACHE_MAX	256
#define PROXY_CA_LEAF_SECS	(24 * 3600)
#define PROXY_CA_BACKDATE_SECS	3600

/*
 * Makes the CA in dir once: dir (0755, created if missing), DIR/ca.key (EC
 * P-256, 0600) and DIR/ca.crt (self-signed, CA:TRUE pathlen 0, 10 years,
 * 0644). When both exist and the key matches the certificate they are
 * kept. DIR/ca-bundle.pem (roots, then ca.crt; 0644) is rewritten
 * (atomically) whenever its content would change, as the system roots
 * change. roots: PEM bundle of the system roots (PROXY_CA_ROOTS).
 * *created and *bundle_changed (may be NULL) say whether a new CA was
 * made and whether the bundle was written. Returns 0, or a negative errno
 * with a reason in err.
 */
int proxy_ca_make(const char *dir, const char *roots, bool *created,
    bool *bundle_changed, char *err, size_t errlen);

/*
 * Loads the CA certificate and key (PEM; the key must match) and makes the
 * leaf key. cache_max: leaves kept (1..). Returns 0 and *out (caller frees
 * with proxy_ca_free), or a negative errno with a reason in err.
 */
int proxy_ca_load(const char *cert, const char *key, size_t cache_max,
    struct proxy_ca **out, char *err, size_t errlen);
void proxy_ca_free(struct proxy_ca *ca);	/* accepts NULL */

/*
 * The leaf certificate for host (a normalised DNS name, or an IPv4/IPv6
 * literal without brackets when is_ip), from the cache or minted now (now_s:
 * wall clock, seconds). A cached leaf with less than an hour left is
 * minted again. Returns the certificate, borrowed until the next call (up
 * the reference to keep it), or NULL (no memory, or an unusable host).
 */
X509 *proxy_ca_leaf(struct proxy_ca *ca, const char *host, bool is_ip,
    int64_t now_s);
/* The key of every leaf (borrowed). */
EVP_PKEY *proxy_ca_leaf_key(const struct proxy_ca *ca);
/* The CA certificate (borrowed): leaves chain to it. */
X509 *proxy_ca_cert(const struct proxy_ca *ca);
/* Leaves minted, and answered from the cache, so far. */
uint64_t proxy_ca_minted(const struct proxy_ca *ca);
uint64_t proxy_ca_hits(const struct proxy_ca *ca);
size_t proxy_ca_cached(const struct proxy_ca *ca);

#endif
