/*
 * The Cordon egress CA at run time: loaded by the proxy before it drops
 * privileges, and the leaves it mints per inspected host, kept in a small
 * LRU list (a linear scan of at most PROXY_CA_CACHE_MAX names costs far
 * less than the handshake it serves). The X.509 building blocks here are
 * shared with ca_make.c, which makes the CA once (`--make-ca`, net up).
 */
#include "proxy/ca.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "proxy/ca_internal.h"

#define CA_RENEW_SECS	3600	/* re-mint a leaf with less left */

struct ca_leaf {
	TAILQ_ENTRY(ca_leaf) lru;	/* most recently used first */
	char *host;
	X509 *cert;
	int64_t not_after;
};

struct proxy_ca {
	X509 *cert;
	EVP_PKEY *key;
	EVP_PKEY *leaf_key;
	TAILQ_HEAD(ca_lru, ca_leaf) lru;
	size_t n, max;
	uint64_t minted, hits;
};

/* err gets what, then OpenSSL's first queued error (the queue is cleared). */
int
proxy_ca_fail(char *err, size_t errlen, int rc, const char *what)
{
	unsigned long e = ERR_get_error();
	char text[160] = "";

	if (e != 0)
		ERR_error_string_n(e, text, sizeof(text));
	ERR_clear_error();
	snprintf(err, errlen, "%s%s%s", what, text[0] ? ": " : "", text);
	return rc;
}

EVP_PKEY *
proxy_ca_key_new(void)
{
	return EVP_EC_gen("P-256");
}

static bool
ca_serial(X509 *x)
{
	unsigned char b[16];
	BIGNUM *bn;
	bool ok;

	if (RAND_bytes(b, sizeof(b)) != 1)
		return false;
	b[0] &= 0x7f;	/* positive, 127 bits of randomness */
	b[0] |= 0x40;	/* and never shortened */
	bn = BN_bin2bn(b, sizeof(b), NULL);
	ok = bn != NULL && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x))
	    != NULL;
	BN_free(bn);
	return ok;
}

/* Adds extension nid with value (v3 config syntax), issuer issuer. */
bool
proxy_ca_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *ext;
	bool ok;

	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	if (ext == NULL)
		return false;
	ok = X509_add_ext(x, ext, -1) == 1;
	X509_EXTENSION_free(ext);
	return ok;
}

/* A certificate for key, valid [now - back, now + secs), subject CN cn
 * (NULL: none). Issuer: itself when issuer is NULL. */
X509 *
proxy_ca_cert_new(EVP_PKEY *key, const char *cn, int64_t now, long back,
    long secs, X509 *issuer)
{
	X509 *x = X509_new();
	X509_NAME *name;

	if (x == NULL || X509_set_version(x, 2) != 1 || !ca_serial(x) ||
	    X509_time_adj_ex(X509_getm_notBefore(x), 0, -back,
	    &(time_t){ (time_t)now }) == NULL ||
	    X509_time_adj_ex(X509_getm_notAfter(x), 0, secs,
	    &(time_t){ (time_t)now }) == NULL ||
	    X509_set_pubkey(x, key) != 1)
		goto bad;
	name = X509_get_subject_name(x);
	if (cn != NULL && X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
	    (const unsigned char *)cn, -1, -1, 0) != 1)
		goto bad;
	if (issuer == NULL && (X509_NAME_add_entry_by_txt(name, "O",
	    MBSTRING_ASC, (const unsigned char *)"Cordon", -1, -1, 0) != 1 ||
	    X509_set_issuer_name(x, name) != 1))
		goto bad;
	if (issuer != NULL && X509_set_issuer_name(x,
	    X509_get_subject_name(issuer)) != 1)
		goto bad;
	return x;
bad:
	X509_free(x);
	return NULL;
}

X509 *
proxy_ca_read_cert(const char *path)
{
	FILE *f = fopen(path, "re");
	X509 *x;

	if (f == NULL)
		return NULL;
	x = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	return x;
}

EVP_PKEY *
proxy_ca_read_key(const char *path)
{
	FILE *f = fopen(path, "re");
	EVP_PKEY *k;

	if (f == NULL)
		return NULL;
	k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	fclose(f);
	return k;
}

int
proxy_ca_load(const char *cert, const char *key, size_t cache_max,
    struct proxy_ca **out, char *err, size_t errlen)
{
	struct proxy_ca *ca;

	*out = NULL;
	if (cache_max == 0) {
		snprintf(err, errlen, "leaf cache size 0");
		return -EINVAL;
	}
	ca = calloc(1, sizeof(*ca));
	if (ca == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ca->max = cache_max;
	TAILQ_INIT(&ca->lru);
	if ((ca->cert = proxy_ca_read_cert(cert)) == NULL) {
		proxy_ca_free(ca);
		return proxy_ca_fail(err, errlen, -EINVAL, cert);
	}
	if ((ca->key = proxy_ca_read_key(key)) == NULL) {
		proxy_ca_free(ca);
		return proxy_ca_fail(err, errlen, -EINVAL, key);
	}
	if (X509_check_private_key(ca->cert, ca->key) != 1) {
		proxy_ca_free(ca);
		return proxy_ca_fail(err, errlen, -EINVAL,
		    "the CA key does not match the CA certificate");
	}
	if (X509_check_ca(ca->cert) == 0) {
		proxy_ca_free(ca);
		return proxy_ca_fail(err, errlen, -EINVAL,
		    "the CA certificate is not a CA");
	}
	if ((ca->leaf_key = proxy_ca_key_new()) == NULL) {
		proxy_ca_free(ca);
		return proxy_ca_fail(err, errlen, -ENOMEM,
		    "making the leaf key");
	}
	*out = ca;
	return 0;
}

static void
ca_leaf_free(struct ca_leaf *l)
{
	if (l == NULL)
		return;
	X509_free(l->cert);
	free(l->host);
	free(l);
}

/* host's leaf in the cache, or NULL. */
static struct ca_leaf *
ca_leaf_find(struct proxy_ca *ca, const char *host)
{
	struct ca_leaf *l;

	TAILQ_FOREACH(l, &ca->lru, lru)
		if (strcmp(l->host, host) == 0)
			return l;
	return NULL;
}

/* A cache hit: l becomes the most recently used. Its cert. */
static X509 *
ca_leaf_hit(struct proxy_ca *ca, struct ca_leaf *l)
{
	TAILQ_REMOVE(&ca->lru, l, lru);
	TAILQ_INSERT_HEAD(&ca->lru, l, lru);
	ca->hits++;
	return l->cert;
}

/* Keeps x as host's leaf, most recently used: in place of l's (host's
 * entry, or NULL), or new, evicting the least recently used when the
 * cache is full. x, or NULL (x freed) when out of memory. */
static X509 *
ca_leaf_put(struct proxy_ca *ca, struct ca_leaf *l, const char *host,
    X509 *x, int64_t now_s)
{
	if (l != NULL) {	/* renewed in place */
		X509_free(l->cert);
		TAILQ_REMOVE(&ca->lru, l, lru);
	} else if ((l = calloc(1, sizeof(*l))) == NULL ||
	    (l->host = strdup(host)) == NULL) {
		free(l);
		X509_free(x);
		return NULL;
	} else if (ca->n >= ca->max) {
		struct ca_leaf *old = TAILQ_LAST(&ca->lru, ca_lru);
		TAILQ_REMOVE(&ca->lru, old, lru);
		ca_leaf_free(old);
	} else {
		ca->n++;
	}
	l->cert = x;
	l->not_after = now_s + PROXY_CA_LEAF_SECS;
	TAILQ_INSERT_HEAD(&ca->lru, l, lru);
	return x;
}

void
proxy_ca_free(struct proxy_ca *ca)
{
	struct ca_leaf *l;

	if (ca == NULL)
		return;
	while ((l = TAILQ_FIRST(&ca->lru)) != NULL) {
		TAILQ_REMOVE(&ca->lru, l, lru);
		ca_leaf_free(l);
	}
	X509_free(ca->cert);
	EVP_PKEY_free(ca->key);
	EVP_PKEY_free(ca->leaf_key);
	free(ca);
}

static X509 *
ca_mint(struct proxy_ca *ca, const char *host, bool is_ip, int64_t now)
{
	char san[300];
	X509 *x;
	/* A CN holds at most 64 characters; the SAN is what counts. */
	const char *cn = strlen(host) <= 64 ? host : NULL;

	if ((size_t)snprintf(san, sizeof(san), "%s:%s", is_ip ? "IP" : "DNS",
	    host) >= sizeof(san))
		return NULL;
	x = proxy_ca_cert_new(ca->leaf_key, cn, now, PROXY_CA_BACKDATE_SECS,
	    PROXY_CA_LEAF_SECS, ca->cert);
	if (x == NULL ||
	    !proxy_ca_ext(x, ca->cert, NID_subject_alt_name, san) ||
	    !proxy_ca_ext(x, ca->cert, NID_basic_constraints,
	    "critical,CA:FALSE") ||
	    !proxy_ca_ext(x, ca->cert, NID_key_usage,
	    "critical,digitalSignature") ||
	    !proxy_ca_ext(x, ca->cert, NID_ext_key_usage, "serverAuth") ||
	    !proxy_ca_ext(x, ca->cert, NID_authority_key_identifier,
	    "keyid:always") ||
	    X509_sign(x, ca->key, EVP_sha256()) <= 0) {
		X509_free(x);
		ERR_clear_error();
		return NULL;
	}
	return x;
}

X509 *
proxy_ca_leaf(struct proxy_ca *ca, const char *host, bool is_ip,
    int64_t now_s)
{
	struct ca_leaf *l = ca_leaf_find(ca, host);
	X509 *x;

	if (l != NULL && l->not_after - now_s > CA_RENEW_SECS)
		return ca_leaf_hit(ca, l);
	if ((x = ca_mint(ca, host, is_ip, now_s)) == NULL)
		return NULL;
	ca->minted++;
	return ca_leaf_put(ca, l, host, x, now_s);
}

EVP_PKEY *proxy_ca_leaf_key(const struct proxy_ca *ca) { return ca->leaf_key; }
X509 *proxy_ca_cert(const struct proxy_ca *ca) { return ca->cert; }
/* --- privilege separation: the parent signs, the child caches --------- */

int
proxy_ca_load_public(const char *pem, size_t len, size_t cache_max,
    struct proxy_ca **out, char *err, size_t errlen)
{
	struct proxy_ca *ca;
	BIO *b;

	*out = NULL;
	if (cache_max == 0 || len == 0 || len > INT_MAX) {
		snprintf(err, errlen, "no CA certificate");
		return -EINVAL;
	}
	if ((ca = calloc(1, sizeof(*ca))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ca->max = cache_max;
	TAILQ_INIT(&ca->lru);
	b = BIO_new_mem_buf(pem, (int)len);
	ca->cert = b != NULL ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
	BIO_free(b);
	if (ca->cert == NULL || X509_check_ca(ca->cert) == 0) {
		proxy_ca_free(ca);
		return proxy_ca_fail(err, errlen, -EINVAL,
		    "the CA certificate");
	}
	if ((ca->leaf_key = proxy_ca_key_new()) == NULL) {
		proxy_ca_free(ca);
		return proxy_ca_fail(err, errlen, -ENOMEM,
		    "making the leaf key");
	}
	*out = ca;
	return 0;
}

int
proxy_ca_cert_pem(const struct proxy_ca *ca, char **out, size_t *len)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *p;
	long n;

	*out = NULL;
	*len = 0;
	if (b == NULL || PEM_write_bio_X509(b, ca->cert) != 1 ||
	    (n = BIO_get_mem_data(b, &p)) <= 0 ||
	    (*out = malloc((size_t)n + 1)) == NULL) {
		BIO_free(b);
		ERR_clear_error();
		return -ENOMEM;
	}
	memcpy(*out, p, (size_t)n);
	(*out)[n] = '\0';
	*len = (size_t)n;
	BIO_free(b);
	return 0;
}

int
proxy_ca_leaf_pubkey(const struct proxy_ca *ca, unsigned char *out,
    size_t cap, size_t *len)
{
	unsigned char *p = out;
	int n = i2d_PUBKEY(ca->leaf_key, NULL);

	*len = 0;
	if (n <= 0 || (size_t)n > cap || i2d_PUBKEY(ca->leaf_key, &p) != n) {
		ERR_clear_error();
		return -ENOSPC;
	}
	*len = (size_t)n;
	return 0;
}

int
proxy_ca_sign(struct proxy_ca *ca, const char *host, bool is_ip,
    const unsigned char *pub, size_t publen, int64_t now,
    unsigned char **der, size_t *derlen)
{
	const unsigned char *p = pub;
	EVP_PKEY *key, *saved;
	X509 *x;
	int n;

	*der = NULL;
	*derlen = 0;
	if (ca->key == NULL || publen > INT_MAX)
		return -EPERM;
	key = d2i_PUBKEY(NULL, &p, (long)publen);
	if (key == NULL || p != pub + publen ||
	    EVP_PKEY_base_id(key) != EVP_PKEY_EC) {
		EVP_PKEY_free(key);
		ERR_clear_error();
		return -EINVAL;
	}
	/* ca_mint signs whatever ca->leaf_key is: lend it this key. */
	saved = ca->leaf_key;
	ca->leaf_key = key;
	x = ca_mint(ca, host, is_ip, now);
	ca->leaf_key = saved;
	EVP_PKEY_free(key);
	if (x == NULL)
		return -EINVAL;
	*der = NULL;
	n = i2d_X509(x, der);
	X509_free(x);
	if (n <= 0) {
		ERR_clear_error();
		return -ENOMEM;
	}
	ca->minted++;
	*derlen = (size_t)n;
	return 0;
}

X509 *
proxy_ca_leaf_cached(struct proxy_ca *ca, const char *host, int64_t now_s)
{
	struct ca_leaf *l = ca_leaf_find(ca, host);

	if (l == NULL || l->not_after - now_s <= CA_RENEW_SECS)
		return NULL;
	return ca_leaf_hit(ca, l);
}

X509 *
proxy_ca_leaf_store(struct proxy_ca *ca, const char *host,
    const unsigned char *der, size_t len, int64_t now_s)
{
	const unsigned char *p = der;
	X509 *x = len <= INT_MAX ? d2i_X509(NULL, &p, (long)len) : NULL;
	EVP_PKEY *pk = x != NULL ? X509_get0_pubkey(x) : NULL;

	/* What the parent sent must be a leaf for our key, issued by the
	 * CA: anything else would fail the handshake anyway. */
	if (x == NULL || p != der + len || pk == NULL ||
	    EVP_PKEY_eq(pk, ca->leaf_key) != 1 ||
	    X509_check_issued(ca->cert, x) != X509_V_OK) {
		X509_free(x);
		ERR_clear_error();
		return NULL;
	}
	return ca_leaf_put(ca, ca_leaf_find(ca, host), host, x, now_s);
}

bool
proxy_ca_has_key(const struct proxy_ca *ca)
{
	return ca->key != NULL;
}

uint64_t proxy_ca_minted(const struct proxy_ca *ca) { return ca->minted; }
uint64_t proxy_ca_hits(const struct proxy_ca *ca) { return ca->hits; }
size_t proxy_ca_cached(const struct proxy_ca *ca) { return ca->n; }
