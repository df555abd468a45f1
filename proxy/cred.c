/*
 * Per-run proxy credentials (cred.h). The base64 decoder is our own rather
 * than EVP_DecodeBlock: that one skips leading and trailing whitespace,
 * counts padding as output bytes and accepts non-zero bits before the
 * padding, so making it strict would take as many checks as the decoder.
 */
#include "proxy/cred.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

/* Value of base64 character c, or -1 outside the standard alphabet ('='
 * included: padding is handled by the caller). */
static int
b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/*
 * Strict base64 decoding of in[0..n) into out (room for the decoded
 * length, which the caller computed). n is a non-zero multiple of 4 and
 * pad (0-2) trailing '=' have been counted. Returns the decoded length or
 * -1 for a character outside the alphabet, a '=' before the padding, or
 * non-zero bits under the padding.
 */
static int
b64_decode(const char *in, size_t n, size_t pad, unsigned char *out)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i += 4) {
		bool last = i + 4 == n;
		size_t keep = last ? 4 - pad : 4;
		uint32_t w = 0;

		for (size_t j = 0; j < 4; j++) {
			int v = j < keep ? b64_value((unsigned char)in[i + j]) : 0;
			if (v < 0)
				return -1;
			w = w << 6 | (uint32_t)v;
		}
		/* Bits not output must be zero: the low 8 of the group with
		 * one pad (the 2 low bits of the third character), the low
		 * 16 with two (the 4 low bits of the second). */
		if (last && ((pad == 1 && (w & 0xff) != 0) ||
		    (pad == 2 && (w & 0xffff) != 0)))
			return -1;
		out[o++] = (unsigned char)(w >> 16);
		if (keep > 2)
			out[o++] = (unsigned char)(w >> 8);
		if (keep > 3)
			out[o++] = (unsigned char)w;
	}
	return (int)o;
}

bool
proxy_cred_run_id_valid(const char *s, size_t len)
{
	if (len == 0 || len > PROXY_CRED_RUN_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '_' || c == '-'))
			return false;
	}
	return true;
}

bool
proxy_cred_token_valid(const char *s, size_t len)
{
	if (len < PROXY_CRED_TOKEN_MIN || len > PROXY_CRED_TOKEN_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
	}
	return true;
}

/* Checks the "Basic" 1*SP prefix; returns the offset of the base64 part or
 * 0 when the scheme is wrong. */
static size_t
cred_scheme(const char *v, size_t len)
{
	static const char basic[] = "basic";
	size_t i;

	if (len < 6)
		return 0;
	for (i = 0; i < 5; i++) {
		char c = v[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c != basic[i])
			return 0;
	}
	if (v[i] != ' ')
		return 0;
	while (i < len && v[i] == ' ')
		i++;
	return i;
}

static int
cred_parse(const char *value, size_t len, struct proxy_cred *out)
{
	unsigned char dec[PROXY_CRED_DECODED_MAX];
	const char *b64, *colon;
	size_t off, n, pad = 0, declen, runlen, toklen;
	int got, rc = 0;

	off = cred_scheme(value, len);
	if (off == 0)
		return PROXY_CRED_NOT_BASIC;
	b64 = value + off;
	n = len - off;
	if (n > PROXY_CRED_ENCODED_MAX)
		return PROXY_CRED_OVERSIZE;
	if (n == 0 || n % 4 != 0)
		return PROXY_CRED_BAD_BASE64;
	while (pad < 2 && b64[n - 1 - pad] == '=')
		pad++;
	declen = n / 4 * 3 - pad;
	if (declen > sizeof(dec))
		return PROXY_CRED_OVERSIZE;
	got = b64_decode(b64, n, pad, dec);
	if (got < 0 || (size_t)got != declen) {
		rc = PROXY_CRED_BAD_BASE64;
		goto out;
	}
	colon = memchr(dec, ':', declen);
	if (colon == NULL) {
		rc = PROXY_CRED_NO_COLON;
		goto out;
	}
	runlen = (size_t)((const unsigned char *)colon - dec);
	toklen = declen - runlen - 1;
	if (!proxy_cred_run_id_valid((const char *)dec, runlen))
		rc = PROXY_CRED_BAD_RUN_ID;
	else if (!proxy_cred_token_valid(colon + 1, toklen))
		rc = PROXY_CRED_BAD_TOKEN;
	else {
		memcpy(out->run, dec, runlen);
		memcpy(out->token, colon + 1, toklen);
	}
out:
	OPENSSL_cleanse(dec, sizeof(dec));
	return rc;
}

int
proxy_cred_parse(const char *value, size_t len, struct proxy_cred *out)
{
	int rc;

	memset(out, 0, sizeof(*out));
	if (value == NULL)
		return PROXY_CRED_NOT_BASIC;
	rc = cred_parse(value, len, out);
	if (rc != 0)
		OPENSSL_cleanse(out, sizeof(*out));
	return rc;
}

const char *
proxy_cred_strerror(int err)
{
	switch (err) {
	case 0:
		return "ok";
	case PROXY_CRED_NOT_BASIC:
		return "not-basic";
	case PROXY_CRED_BAD_BASE64:
		return "bad-base64";
	case PROXY_CRED_NO_COLON:
		return "no-colon";
	case PROXY_CRED_BAD_RUN_ID:
		return "bad-run-id";
	case PROXY_CRED_BAD_TOKEN:
		return "bad-token";
	case PROXY_CRED_OVERSIZE:
		return "oversize";
	default:
		return "unknown";
	}
}

bool
proxy_cred_token_equal(const char *a, const char *b)
{
	unsigned char ba[PROXY_CRED_TOKEN_MAX], bb[PROXY_CRED_TOKEN_MAX];
	size_t la, lb;
	int diff;
	bool equal;

	if (a == NULL || b == NULL)
		return false;
	la = strnlen(a, PROXY_CRED_TOKEN_MAX + 1);
	lb = strnlen(b, PROXY_CRED_TOKEN_MAX + 1);
	memset(ba, 0, sizeof(ba));
	memset(bb, 0, sizeof(bb));
	memcpy(ba, a, la < sizeof(ba) ? la : sizeof(ba));
	memcpy(bb, b, lb < sizeof(bb) ? lb : sizeof(bb));
	diff = CRYPTO_memcmp(ba, bb, sizeof(ba));
	/* Bitwise & on purpose: every part is evaluated. */
	equal = (diff == 0) & (la == lb) & (la <= PROXY_CRED_TOKEN_MAX);
	OPENSSL_cleanse(ba, sizeof(ba));
	OPENSSL_cleanse(bb, sizeof(bb));
	return equal;
}

int
proxy_cred_token_new(char *hex, size_t len)
{
	static const char digits[] = "0123456789abcdef";
	unsigned char raw[PROXY_CRED_TOKEN_NEW_LEN / 2];

	if (hex == NULL || len < PROXY_CRED_TOKEN_NEW_LEN + 1)
		return -EINVAL;
	if (RAND_bytes(raw, (int)sizeof(raw)) != 1) {
		hex[0] = '\0';
		return -EIO;
	}
	for (size_t i = 0; i < sizeof(raw); i++) {
		hex[2 * i] = digits[raw[i] >> 4];
		hex[2 * i + 1] = digits[raw[i] & 15];
	}
	hex[PROXY_CRED_TOKEN_NEW_LEN] = '\0';
	OPENSSL_cleanse(raw, sizeof(raw));
	return 0;
}
