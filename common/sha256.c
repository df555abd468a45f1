/*
 * SHA-256 helpers over OpenSSL EVP (sha256.h): used for code_sha256 in run
 * results and audit lines, and for image input fingerprints.
 */
#include "common/sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <openssl/evp.h>

struct sha256_ctx {
	EVP_MD_CTX *md;
};

static void
hex_encode(const unsigned char *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

struct sha256_ctx *
sha256_new(void)
{
	struct sha256_ctx *c = OPENSSL_zalloc(sizeof(*c));

	if (c == NULL)
		return NULL;
	c->md = EVP_MD_CTX_new();
	if (c->md == NULL || EVP_DigestInit_ex(c->md, EVP_sha256(), NULL) != 1) {
		sha256_free(c);
		return NULL;
	}
	return c;
}

int
sha256_update(struct sha256_ctx *c, const void *data, size_t len)
{
	return EVP_DigestUpdate(c->md, data, len) == 1 ? 0 : -EIO;
}

int
sha256_final(struct sha256_ctx *c, char out[SHA256_HEX_LEN + 1])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	int rc = -EIO;

	out[0] = '\0';
	if (EVP_DigestFinal_ex(c->md, md, &n) == 1 && n == 32) {
		hex_encode(md, n, out);
		rc = 0;
	}
	sha256_free(c);
	return rc;
}

void
sha256_free(struct sha256_ctx *c)
{
	if (c == NULL)
		return;
	EVP_MD_CTX_free(c->md);
	OPENSSL_free(c);
}

int
sha256_hex(const void *data, size_t len, char out[SHA256_HEX_LEN + 1])
{
	struct sha256_ctx *c = sha256_new();

	out[0] = '\0';
	if (c == NULL)
		return -EIO;
	if (sha256_update(c, data, len) < 0) {
		sha256_free(c);
		return -EIO;
	}
	return sha256_final(c, out);
}

int
sha256_file_hex(const char *path, char out[SHA256_HEX_LEN + 1])
{
	char buf[65536];
	struct sha256_ctx *c = NULL;
	ssize_t n;
	int fd, rc = -EIO;

	out[0] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if ((c = sha256_new()) == NULL)
		goto bad;
	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			goto bad;
		}
		if (sha256_update(c, buf, (size_t)n) < 0)
			goto bad;
	}
	close(fd);
	return sha256_final(c, out);
bad:
	sha256_free(c);
	close(fd);
	return rc;
}
