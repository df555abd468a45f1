/*
 * Per-run proxy credentials: parsing a Proxy-Authorization header value
 * ("Basic " base64(RUNID ":" TOKEN)), comparing tokens in constant time,
 * and making new tokens. Pure functions apart from the random source; no
 * allocation.
 */
#ifndef CORDON_PROXY_CRED_H
#define CORDON_PROXY_CRED_H

#include <stdbool.h>
#include <stddef.h>

/*
 * The rules, in one place:
 *   value    = "Basic" 1*SP b64          scheme case-insensitive; SP only
 *   b64      = standard alphabet (A-Z a-z 0-9 + /), length a multiple of 4,
 *              '=' only as the last one or two characters, and the unused
 *              bits before the padding zero (the one canonical encoding of
 *              the bytes); no whitespace, NUL or anything after it
 *   decoded  = RUNID ":" TOKEN           split at the FIRST colon
 *   RUNID    = 1-64 of [A-Za-z0-9_-]
 *   TOKEN    = 16-128 of [0-9a-f]        lowercase hex only
 * The b64 part is refused as oversize over PROXY_CRED_ENCODED_MAX
 * characters, and so is a decoded length over PROXY_CRED_DECODED_MAX
 * (computed from the encoded length, before decoding).
 * The HTTP parser has already removed the whitespace around the value.
 */
#define PROXY_CRED_RUN_MAX	64
#define PROXY_CRED_TOKEN_MIN	16
#define PROXY_CRED_TOKEN_MAX	128
#define PROXY_CRED_DECODED_MAX	256
#define PROXY_CRED_ENCODED_MAX	400
/* proxy_cred_token_new: 32 random bytes as 64 hex digits. */
#define PROXY_CRED_TOKEN_NEW_LEN 64

/* A parsed credential: two NUL-terminated strings. Plain value. */
struct proxy_cred {
	char run[PROXY_CRED_RUN_MAX + 1];
	char token[PROXY_CRED_TOKEN_MAX + 1];
};

/*
 * Failure classes of proxy_cred_parse. These are NOT errno values (a
 * caller maps them all to 407); they are distinct so logs and tests can
 * tell them apart. Stable; add new ones at the end.
 */
enum proxy_cred_error {
	PROXY_CRED_NOT_BASIC = -1,	/* no "Basic" scheme + SP */
	PROXY_CRED_BAD_BASE64 = -2,	/* empty, bad alphabet or padding */
	PROXY_CRED_NO_COLON = -3,	/* decoded text has no ':' */
	PROXY_CRED_BAD_RUN_ID = -4,
	PROXY_CRED_BAD_TOKEN = -5,
	PROXY_CRED_OVERSIZE = -6,	/* encoded or decoded cap passed */
};

/*
 * Parses value[0..len) (not NUL-terminated; may contain NUL bytes, which
 * are refused). Returns 0 and fills *out, or a proxy_cred_error; on
 * failure *out is zeroed.
 */
int proxy_cred_parse(const char *value, size_t len, struct proxy_cred *out);

/* Short reason for a proxy_cred_parse result: "ok", "not-basic",
 * "bad-base64", "no-colon", "bad-run-id", "bad-token", "oversize", or
 * "unknown". Static storage. */
const char *proxy_cred_strerror(int err);

/* The run id and token rules above, for s[0..len). */
bool proxy_cred_run_id_valid(const char *s, size_t len);
bool proxy_cred_token_valid(const char *s, size_t len);

/*
 * True when the NUL-terminated tokens a and b are equal. The time taken
 * depends on the lengths (which are not secret: tokens are made with a
 * fixed length) but not on the content: both are copied into zeroed
 * PROXY_CRED_TOKEN_MAX buffers compared with CRYPTO_memcmp, and the
 * length check has no early exit. NULL, or a string longer than
 * PROXY_CRED_TOKEN_MAX, is never equal to anything.
 */
bool proxy_cred_token_equal(const char *a, const char *b);

/*
 * Writes a new token, 32 bytes from OpenSSL's RAND_bytes as 64 lowercase
 * hex digits plus NUL, to hex (len bytes, at least
 * PROXY_CRED_TOKEN_NEW_LEN + 1). Returns 0, -EINVAL when len is too
 * small, or -EIO when the random generator fails (hex is then "").
 */
int proxy_cred_token_new(char *hex, size_t len);

#endif
