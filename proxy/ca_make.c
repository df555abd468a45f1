/*
 * Making the Cordon egress CA on disk: `cordon-proxy --make-ca DIR`, run
 * once by `cordon net up` as root. A key and a self-signed certificate,
 * each written atomically with its mode, and the bundle (the system's
 * roots plus this CA) that proxy-mode containers trust. Apart from ca.c,
 * which loads the CA and mints leaves at run time: this never runs in
 * the proxy that serves connections.
 */
#include "proxy/ca.h"

#include <errno.h>
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

#include "proxy/ca_internal.h"

#define CA_YEARS	10

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

/* A new key and self-signed CA certificate, written to kp and cp. */
static int
ca_create(const char *kp, const char *cp, char *err, size_t errlen)
{
	EVP_PKEY *key = proxy_ca_key_new();
	char cn[128], host[64] = "", *pem = NULL;
	X509 *x = NULL;
	size_t len = 0;
	int rc;

	if (key == NULL)
		return proxy_ca_fail(err, errlen, -ENOMEM, "making the CA key");
	(void)gethostname(host, sizeof(host) - 1);
	snprintf(cn, sizeof(cn), "Cordon egress CA%s%.48s", host[0] ? " " : "",
	    host);
	x = proxy_ca_cert_new(key, cn, (int64_t)time(NULL), 0,
	    CA_YEARS * 365L * 86400L, NULL);
	if (x == NULL || !proxy_ca_ext(x, x, NID_basic_constraints,
	    "critical,CA:TRUE,pathlen:0") || !proxy_ca_ext(x, x, NID_key_usage,
	    "critical,keyCertSign,cRLSign") || !proxy_ca_ext(x, x,
	    NID_subject_key_identifier, "hash") || !proxy_ca_ext(x, x,
	    NID_authority_key_identifier, "keyid:always") ||
	    X509_sign(x, key, EVP_sha256()) <= 0) {
		rc = proxy_ca_fail(err, errlen, -ENOMEM,
		    "making the CA certificate");
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
	key = proxy_ca_read_key(kp);
	x = proxy_ca_read_cert(cp);
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
