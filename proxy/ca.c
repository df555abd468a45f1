/*
 * The Cordon egress CA: made once by `cordon-proxy --make-ca DIR` (net up),
 * loaded by the proxy before it drops privileges, and the leaves it mints
 * per inspected host, kept in a small LRU list (a linear scan of at most
 * PROXY_CA_CACHE_MAX names costs far less than the handshake it serves).
 */
#include "proxy/ca.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#define CA_YEARS	10
#define CA_RENEW_SECS	3600	/* re-mint a leaf with less left */

struct ca_leaf {
	struct ca_leaf *prev, *next;	/* most recently used first */
	char *host;
	X509 *cert;
	int64_t not_after;
};

struct proxy_ca {
	X509 *cert;
	EVP_PKEY *key;
	EVP_PKEY *leaf_key;
	struct ca_leaf *head, *tail;
	size_t n, max;
	uint64_t minted, hits;
};

/* err gets what, then OpenSSL's first queued error (the queue is cleared). */
static int
ca_fail(char *err, size_t errlen, int rc, const char *what)
{
	unsigned long e = ERR_get_error();
	char text[160] = "";

	if (e != 0)
		ERR_error_string_n(e, text, sizeof(text));
	ERR_clear_error();
	snprintf(err, errlen, "%s%s%s", what, text[0] ? ": " : "", text);
	return rc;
}

static EVP_PKEY *
ca_key_new(void)
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
static bool
ca_ext(X509 *x, X509 *issuer, int nid, const char *value)
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
static X509 *
ca_cert_new(EVP_PKEY *key, const char *cn, int64_t now, long back,
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

/* Writes len bytes to path (mode), atomically through path.tmp. */
static int
ca_write_file(const char *path, const void *buf, size_t len, mode_t mode,
    bool excl)
{
	char tmp[4200];
	const char *p = buf;
	int fd, rc = 0;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return -ENAMETOOLONG;
	(void)unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			rc = w < 0 ? -errno : -EIO;
			break;
		}
		p += w;
		len -= (size_t)w;
	}
	if (rc == 0 && fchmod(fd, mode) != 0)
		rc = -errno;
	if (rc == 0 && fsync(fd) != 0)
		rc = -errno;
	if (close(fd) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && excl && link(tmp, path) != 0)
		rc = -errno;
	else if (rc == 0 && !excl && rename(tmp, path) != 0)
		rc = -errno;
	(void)unlink(tmp);
	return rc;
}

/* PEM of a key (private) or a certificate into a malloc'd buffer. */
static int
ca_pem(EVP_PKEY *key, X509 *cert, char **out, size_t *len)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *data;
	long n;
	int ok;

	*out = NULL;
	if (b == NULL)
		return -ENOMEM;
	ok = key != NULL ? PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0,
	    NULL, NULL) : PEM_write_bio_X509(b, cert);
	n = BIO_get_mem_data(b, &data);
	if (ok != 1 || n <= 0 || (*out = malloc((size_t)n)) == NULL) {
		BIO_free(b);
		return -ENOMEM;
	}
	memcpy(*out, data, (size_t)n);
	*len = (size_t)n;
	BIO_free(b);
	return 0;
}

static X509 *
ca_read_cert(const char *path)
{
	FILE *f = fopen(path, "re");
	X509 *x;

	if (f == NULL)
		return NULL;
	x = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	return x;
}

static EVP_PKEY *
ca_read_key(const char *path)
{
	FILE *f = fopen(path, "re");
	EVP_PKEY *k;

	if (f == NULL)
		return NULL;
	k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	fclose(f);
	return k;
}

/* A new key and self-signed CA certificate, written to kp and cp. */
static int
ca_create(const char *kp, const char *cp, char *err, size_t errlen)
{
	EVP_PKEY *key = ca_key_new();
	char cn[128], host[64] = "", *pem = NULL;
	X509 *x = NULL;
	size_t len = 0;
	int rc;

	if (key == NULL)
		return ca_fail(err, errlen, -ENOMEM, "making the CA key");
	(void)gethostname(host, sizeof(host) - 1);
	snprintf(cn, sizeof(cn), "Cordon egress CA%s%.48s", host[0] ? " " : "",
	    host);
	x = ca_cert_new(key, cn, (int64_t)time(NULL), 0,
	    CA_YEARS * 365L * 86400L, NULL);
	if (x == NULL || !ca_ext(x, x, NID_basic_constraints,
	    "critical,CA:TRUE,pathlen:0") || !ca_ext(x, x, NID_key_usage,
	    "critical,keyCertSign,cRLSign") || !ca_ext(x, x,
	    NID_subject_key_identifier, "hash") || !ca_ext(x, x,
	    NID_authority_key_identifier, "keyid:always") ||
	    X509_sign(x, key, EVP_sha256()) <= 0) {
		rc = ca_fail(err, errlen, -ENOMEM, "making the CA certificate");
		goto out;
	}
	/* The key first, exclusively: a concurrent maker loses here. */
	if ((rc = ca_pem(key, NULL, &pem, &len)) < 0 ||
	    (rc = ca_write_file(kp, pem, len, 0600, true)) < 0) {
		snprintf(err, errlen, "%s: %s", kp, strerror(-rc));
		goto out;
	}
	OPENSSL_clear_free(pem, len);
	pem = NULL;
	if ((rc = ca_pem(NULL, x, &pem, &len)) < 0 ||
	    (rc = ca_write_file(cp, pem, len, 0644, false)) < 0) {
		snprintf(err, errlen, "%s: %s", cp, strerror(-rc));
		(void)unlink(kp);
	}
out:
	if (pem != NULL)
		OPENSSL_clear_free(pem, len);
	X509_free(x);
	EVP_PKEY_free(key);
	return rc;
}

/* Reads a whole (small) file. */
static int
ca_slurp(const char *path, size_t max, char **out, size_t *len)
{
	FILE *f = fopen(path, "re");
	char *buf;
	size_t n;

	*out = NULL;
	if (f == NULL)
		return -errno;
	buf = malloc(max + 1);
	if (buf == NULL) {
		fclose(f);
		return -ENOMEM;
	}
	n = fread(buf, 1, max + 1, f);
	fclose(f);
	if (n > max) {
		free(buf);
		return -EFBIG;
	}
	*out = buf;
	*len = n;
	return 0;
}

static int
ca_bundle(const char *bp, const char *roots, const char *cp, bool *changed,
    char *err, size_t errlen)
{
	char *r = NULL, *c = NULL, *all, *old = NULL;
	size_t rl = 0, cl = 0, ol = 0;
	int rc;

	if ((rc = ca_slurp(roots, 16u << 20, &r, &rl)) < 0) {
		snprintf(err, errlen, "system roots %s: %s", roots,
		    strerror(-rc));
		return rc;
	}
	if ((rc = ca_slurp(cp, 1u << 20, &c, &cl)) < 0) {
		snprintf(err, errlen, "%s: %s", cp, strerror(-rc));
		free(r);
		return rc;
	}
	all = malloc(rl + cl + 2);
	if (all == NULL) {
		free(r);
		free(c);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	memcpy(all, r, rl);
	if (rl > 0 && r[rl - 1] != '\n')
		all[rl++] = '\n';
	memcpy(all + rl, c, cl);
	*changed = ca_slurp(bp, 32u << 20, &old, &ol) != 0 || ol != rl + cl ||
	    memcmp(old, all, ol) != 0;
	rc = *changed ? ca_write_file(bp, all, rl + cl, 0644, false) :
	    chmod(bp, 0644) == 0 ? 0 : -errno;
	if (rc < 0)
		snprintf(err, errlen, "%s: %s", bp, strerror(-rc));
	free(old);
	free(all);
	free(r);
	free(c);
	return rc;
}

int
proxy_ca_make(const char *dir, const char *roots, bool *created,
    bool *bundle_changed, char *err, size_t errlen)
{
	char kp[4096], cp[4096], bp[4096];
	bool changed = false;
	EVP_PKEY *key;
	X509 *x;
	int rc;

	if (created != NULL)
		*created = false;
	if (bundle_changed != NULL)
		*bundle_changed = false;
	if ((size_t)snprintf(kp, sizeof(kp), "%s/%s", dir, PROXY_CA_KEY) >=
	    sizeof(kp) - 8 || (size_t)snprintf(cp, sizeof(cp), "%s/%s", dir,
	    PROXY_CA_CERT) >= sizeof(cp) - 8 || (size_t)snprintf(bp,
	    sizeof(bp), "%s/%s", dir, PROXY_CA_BUNDLE) >= sizeof(bp) - 8) {
		snprintf(err, errlen, "%s: path too long", dir);
		return -ENAMETOOLONG;
	}
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return rc;
	}
	key = ca_read_key(kp);
	x = ca_read_cert(cp);
	ERR_clear_error();
	if (key != NULL && x != NULL) {
		bool match = X509_check_private_key(x, key) == 1;
		EVP_PKEY_free(key);
		X509_free(x);
		ERR_clear_error();
		if (!match) {
			snprintf(err, errlen, "%s does not match %s: remove "
			    "both to make a new CA", kp, cp);
			return -EINVAL;
		}
		/* The key stays root's and private whatever happened. */
		if (chmod(kp, 0600) != 0) {
			rc = -errno;
			snprintf(err, errlen, "%s: %s", kp, strerror(errno));
			return rc;
		}
	} else {
		EVP_PKEY_free(key);
		X509_free(x);
		if (access(kp, F_OK) == 0 || access(cp, F_OK) == 0) {
			snprintf(err, errlen, "%s: only one of %s and %s is "
			    "usable: remove both to make a new CA", dir,
			    PROXY_CA_KEY, PROXY_CA_CERT);
			return -EINVAL;
		}
		if ((rc = ca_create(kp, cp, err, errlen)) < 0)
			return rc;
		if (created != NULL)
			*created = true;
	}
	rc = ca_bundle(bp, roots, cp, &changed, err, errlen);
	if (bundle_changed != NULL)
		*bundle_changed = changed;
	return rc;
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
	if ((ca->cert = ca_read_cert(cert)) == NULL) {
		proxy_ca_free(ca);
		return ca_fail(err, errlen, -EINVAL, cert);
	}
	if ((ca->key = ca_read_key(key)) == NULL) {
		proxy_ca_free(ca);
		return ca_fail(err, errlen, -EINVAL, key);
	}
	if (X509_check_private_key(ca->cert, ca->key) != 1) {
		proxy_ca_free(ca);
		return ca_fail(err, errlen, -EINVAL,
		    "the CA key does not match the CA certificate");
	}
	if (X509_check_ca(ca->cert) == 0) {
		proxy_ca_free(ca);
		return ca_fail(err, errlen, -EINVAL,
		    "the CA certificate is not a CA");
	}
	if ((ca->leaf_key = ca_key_new()) == NULL) {
		proxy_ca_free(ca);
		return ca_fail(err, errlen, -ENOMEM, "making the leaf key");
	}
	*out = ca;
	return 0;
}

static void
ca_leaf_unlink(struct proxy_ca *ca, struct ca_leaf *l)
{
	if (l->prev != NULL)
		l->prev->next = l->next;
	else
		ca->head = l->next;
	if (l->next != NULL)
		l->next->prev = l->prev;
	else
		ca->tail = l->prev;
	l->prev = l->next = NULL;
	ca->n--;
}

static void
ca_leaf_push(struct proxy_ca *ca, struct ca_leaf *l)
{
	l->prev = NULL;
	l->next = ca->head;
	if (ca->head != NULL)
		ca->head->prev = l;
	ca->head = l;
	if (ca->tail == NULL)
		ca->tail = l;
	ca->n++;
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

void
proxy_ca_free(struct proxy_ca *ca)
{
	struct ca_leaf *l, *next;

	if (ca == NULL)
		return;
	for (l = ca->head; l != NULL; l = next) {
		next = l->next;
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
	x = ca_cert_new(ca->leaf_key, cn, now, PROXY_CA_BACKDATE_SECS,
	    PROXY_CA_LEAF_SECS, ca->cert);
	if (x == NULL || !ca_ext(x, ca->cert, NID_subject_alt_name, san) ||
	    !ca_ext(x, ca->cert, NID_basic_constraints, "critical,CA:FALSE") ||
	    !ca_ext(x, ca->cert, NID_key_usage,
	    "critical,digitalSignature") || !ca_ext(x, ca->cert,
	    NID_ext_key_usage, "serverAuth") || !ca_ext(x, ca->cert,
	    NID_authority_key_identifier, "keyid:always") ||
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
	struct ca_leaf *l;
	X509 *x;

	for (l = ca->head; l != NULL; l = l->next)
		if (strcmp(l->host, host) == 0)
			break;
	if (l != NULL && l->not_after - now_s > CA_RENEW_SECS) {
		ca_leaf_unlink(ca, l);
		ca_leaf_push(ca, l);
		ca->hits++;
		return l->cert;
	}
	if ((x = ca_mint(ca, host, is_ip, now_s)) == NULL)
		return NULL;
	ca->minted++;
	if (l != NULL) {	/* renewed in place */
		X509_free(l->cert);
		l->cert = x;
		l->not_after = now_s + PROXY_CA_LEAF_SECS;
		ca_leaf_unlink(ca, l);
		ca_leaf_push(ca, l);
		return x;
	}
	l = calloc(1, sizeof(*l));
	if (l == NULL || (l->host = strdup(host)) == NULL) {
		free(l);
		X509_free(x);
		return NULL;
	}
	l->cert = x;
	l->not_after = now_s + PROXY_CA_LEAF_SECS;
	if (ca->n >= ca->max) {
		struct ca_leaf *old = ca->tail;
		ca_leaf_unlink(ca, old);
		ca_leaf_free(old);
	}
	ca_leaf_push(ca, l);
	return x;
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
	b = BIO_new_mem_buf(pem, (int)len);
	ca->cert = b != NULL ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
	BIO_free(b);
	if (ca->cert == NULL || X509_check_ca(ca->cert) == 0) {
		proxy_ca_free(ca);
		return ca_fail(err, errlen, -EINVAL, "the CA certificate");
	}
	if ((ca->leaf_key = ca_key_new()) == NULL) {
		proxy_ca_free(ca);
		return ca_fail(err, errlen, -ENOMEM, "making the leaf key");
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
	struct ca_leaf *l;

	for (l = ca->head; l != NULL; l = l->next)
		if (strcmp(l->host, host) == 0)
			break;
	if (l == NULL || l->not_after - now_s <= CA_RENEW_SECS)
		return NULL;
	ca_leaf_unlink(ca, l);
	ca_leaf_push(ca, l);
	ca->hits++;
	return l->cert;
}

X509 *
proxy_ca_leaf_store(struct proxy_ca *ca, const char *host,
    const unsigned char *der, size_t len, int64_t now_s)
{
	const unsigned char *p = der;
	X509 *x = len <= INT_MAX ? d2i_X509(NULL, &p, (long)len) : NULL;
	EVP_PKEY *pk = x != NULL ? X509_get0_pubkey(x) : NULL;
	struct ca_leaf *l;

	/* What the parent sent must be a leaf for our key, issued by the
	 * CA: anything else would fail the handshake anyway. */
	if (x == NULL || p != der + len || pk == NULL ||
	    EVP_PKEY_eq(pk, ca->leaf_key) != 1 ||
	    X509_check_issued(ca->cert, x) != X509_V_OK) {
		X509_free(x);
		ERR_clear_error();
		return NULL;
	}
	for (l = ca->head; l != NULL; l = l->next)
		if (strcmp(l->host, host) == 0)
			break;
	if (l != NULL) {
		X509_free(l->cert);
		l->cert = x;
		l->not_after = now_s + PROXY_CA_LEAF_SECS;
		ca_leaf_unlink(ca, l);
		ca_leaf_push(ca, l);
		return x;
	}
	l = calloc(1, sizeof(*l));
	if (l == NULL || (l->host = strdup(host)) == NULL) {
		free(l);
		X509_free(x);
		return NULL;
	}
	l->cert = x;
	l->not_after = now_s + PROXY_CA_LEAF_SECS;
	if (ca->n >= ca->max) {
		struct ca_leaf *old = ca->tail;
		ca_leaf_unlink(ca, old);
		ca_leaf_free(old);
	}
	ca_leaf_push(ca, l);
	return x;
}

bool
proxy_ca_has_key(const struct proxy_ca *ca)
{
	return ca->key != NULL;
}

uint64_t proxy_ca_minted(const struct proxy_ca *ca) { return ca->minted; }
uint64_t proxy_ca_hits(const struct proxy_ca *ca) { return ca->hits; }
size_t proxy_ca_cached(const struct proxy_ca *ca) { return ca->n; }
