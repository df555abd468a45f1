/*
 * SHA-256 through OpenSSL's EVP interface, as lowercase hex.
 */
#ifndef CORDON_COMMON_SHA256_H
#define CORDON_COMMON_SHA256_H

#include <stddef.h>

#define SHA256_HEX_LEN 64

struct sha256_ctx;

/* One-shot: writes 64 hex digits and a NUL into out. Returns 0 or -EIO. */
int sha256_hex(const void *data, size_t len, char out[SHA256_HEX_LEN + 1]);

/* Incremental. _new returns NULL on failure; _final writes hex and frees. */
struct sha256_ctx *sha256_new(void);
int sha256_update(struct sha256_ctx *c, const void *data, size_t len);
int sha256_final(struct sha256_ctx *c, char out[SHA256_HEX_LEN + 1]);
void sha256_free(struct sha256_ctx *c);	/* accepts NULL; for abandoning */

/* Hashes a whole file; 0, or a negative errno. */
int sha256_file_hex(const char *path, char out[SHA256_HEX_LEN + 1]);

#endif
