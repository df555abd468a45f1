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
/*
 * Privilege separation. The parent holds the CA with its key
 * (proxy_ca_load) and signs leaves for the network child, which holds the
 * CA certificate only (proxy_ca_load_public: from PEM text; its own leaf
 * key is made there) and caches the leaves it was sent.
 */
int proxy_ca_load_public(const char *pem, size_t len, size_t cache_max,
    struct proxy_ca **out, char *err, size_t errlen);
/* The CA certificate as PEM (malloc'd, NUL-terminated; caller frees). 0
 * or -ENOMEM. */
int proxy_ca_cert_pem(const struct proxy_ca *ca, char **out, size_t *len);
/* The leaf key's public half, DER SubjectPublicKeyInfo, into out (cap
 * bytes). 0 and *len, or -ENOSPC. */
int proxy_ca_leaf_pubkey(const struct proxy_ca *ca, unsigned char *out,
    size_t cap, size_t *len);
/* Parent: a leaf for host (as proxy_ca_leaf mints) over the EC public key
 * pub (DER SubjectPublicKeyInfo), signed by the CA: *der malloc'd
 * (OPENSSL_free), *derlen. 0, -EPERM (no CA key here), -EINVAL (not an EC
 * key, or an unusable host), -ENOMEM. */
int proxy_ca_sign(struct proxy_ca *ca, const char *host, bool is_ip,
    const unsigned char *pub, size_t publen, int64_t now,
    unsigned char **der, size_t *derlen);
/* Child: the cached leaf for host with more than an hour left (borrowed
 * as proxy_ca_leaf's), or NULL: ask the parent. */
X509 *proxy_ca_leaf_cached(struct proxy_ca *ca, const char *host,
    int64_t now_s);
/* Child: keeps the leaf the parent sent for host (DER), after checking
 * that it is for this CA's leaf key and issued by the CA. The certificate
 * (borrowed), or NULL. */
X509 *proxy_ca_leaf_store(struct proxy_ca *ca, const char *host,
    const unsigned char *der, size_t len, int64_t now_s);
/* True when the CA's private key is loaded (the parent's CA). */
bool proxy_ca_has_key(const struct proxy_ca *ca);
/* Leaves minted, and answered from the cache, so far. */
uint64_t proxy_ca_minted(const struct proxy_ca *ca);
uint64_t proxy_ca_hits(const struct proxy_ca *ca);
size_t proxy_ca_cached(const struct proxy_ca *ca);

#endif
