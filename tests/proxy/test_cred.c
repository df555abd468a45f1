/* Unit tests for per-run proxy credentials (proxy/cred.h). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

#include "proxy/cred.h"

#define TOK32 "0123456789abcdef0123456789abcdef"
#define TOK16 "0123456789abcdef"
#define HEX128 TOK32 TOK32 TOK32 TOK32
#define RUN64 "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"

/*
 * One case. When plain is set the value is scheme followed by base64 of
 * plain[0..plain_len) (plain_len 0: strlen) made by OpenSSL's encoder,
 * then suffix; otherwise the value is raw[0..raw_len) (raw_len 0:
 * strlen).
 */
static const struct cred_row {
	const char *name;
	const char *scheme;
	const char *plain;
	size_t plain_len;
	const char *suffix;
	const char *raw;
	size_t raw_len;
	int rc;
	const char *run;
	const char *token;
} cred_rows[] = {
	{ "valid", "Basic ", "run-1:" TOK32, 0, "", NULL, 0, 0,
	  "run-1", TOK32 },
	{ "lowercase scheme", "basic ", "r_2:" TOK32, 0, "", NULL, 0, 0,
	  "r_2", TOK32 },
	{ "uppercase scheme", "BASIC ", "R:" TOK16, 0, "", NULL, 0, 0,
	  "R", TOK16 },
	{ "extra spaces", "Basic    ", "r:" TOK32, 0, "", NULL, 0, 0,
	  "r", TOK32 },
	{ "longest run id and token", "Basic ", RUN64 ":" HEX128, 0, "",
	  NULL, 0, 0, RUN64, HEX128 },
	/* the split is at the first colon, so the token holds one */
	{ "second colon in token", "Basic ", "r:" TOK16 ":" TOK16, 0, "",
	  NULL, 0, PROXY_CRED_BAD_TOKEN, NULL, NULL },
	{ "no space", "Basic", "r:" TOK32, 0, "", NULL, 0,
	  PROXY_CRED_NOT_BASIC, NULL, NULL },
	{ "tab instead of space", "Basic\t", "r:" TOK32, 0, "", NULL, 0,
	  PROXY_CRED_NOT_BASIC, NULL, NULL },
	{ "leading space", " Basic ", "r:" TOK32, 0, "", NULL, 0,
	  PROXY_CRED_NOT_BASIC, NULL, NULL },
	{ "other scheme", "Bearer ", "r:" TOK32, 0, "", NULL, 0,
	  PROXY_CRED_NOT_BASIC, NULL, NULL },
	{ "empty", NULL, NULL, 0, NULL, "", 0, PROXY_CRED_NOT_BASIC,
	  NULL, NULL },
	{ "scheme only", NULL, NULL, 0, NULL, "Basic", 0,
	  PROXY_CRED_NOT_BASIC, NULL, NULL },
	{ "scheme and space only", NULL, NULL, 0, NULL, "Basic ", 0,
	  PROXY_CRED_BAD_BASE64, NULL, NULL },
	/* "r:0123456789abcdef0" is 19 bytes: base64 ends in "MA==" */
	{ "padding stripped", NULL, NULL, 0, NULL,
	  "Basic cjowMTIzNDU2Nzg5YWJjZGVmMA", 0, PROXY_CRED_BAD_BASE64,
	  NULL, NULL },
	{ "one pad of two", NULL, NULL, 0, NULL,
	  "Basic cjowMTIzNDU2Nzg5YWJjZGVmMA=", 0, PROXY_CRED_BAD_BASE64,
	  NULL, NULL },
	{ "with its padding", NULL, NULL, 0, NULL,
	  "Basic cjowMTIzNDU2Nzg5YWJjZGVmMA==", 0, 0, "r",
	  "0123456789abcdef0" },
	{ "three pads", NULL, NULL, 0, NULL,
	  "Basic cjowMTIzNDU2Nzg5YWJjZGVm====", 0, PROXY_CRED_BAD_BASE64,
	  NULL, NULL },
	/* "MB==" decodes like "MA==" but with a bit set under the pad */
	{ "non-canonical pad bits", NULL, NULL, 0, NULL,
	  "Basic cjowMTIzNDU2Nzg5YWJjZGVmMB==", 0, PROXY_CRED_BAD_BASE64,
	  NULL, NULL },
	{ "'=' in the middle", NULL, NULL, 0, NULL,
	  "Basic cjow=TIzNDU2Nzg5YWJjZGVmMA==", 0, PROXY_CRED_BAD_BASE64,
	  NULL, NULL },
	{ "base64url alphabet", NULL, NULL, 0, NULL,
	  "Basic cjow-TIzNDU2Nzg5YWJjZGVmMA==", 0, PROXY_CRED_BAD_BASE64,
	  NULL, NULL },
	{ "non-alphabet byte", NULL, NULL, 0, NULL,
	  "Basic cjow*TIzNDU2Nzg5YWJjZGVmMA==", 0, PROXY_CRED_BAD_BASE64,
	  NULL, NULL },
	{ "embedded space", NULL, NULL, 0, NULL,
	  "Basic cjow MTIzNDU2Nzg5YWJjZGVmMA==", 0, PROXY_CRED_BAD_BASE64,
	  NULL, NULL },
	{ "NUL inside the value", NULL, NULL, 0, NULL,
	  "Basic cjowMTIz\0DU2Nzg5YWJjZGVmMA==", 34, PROXY_CRED_BAD_BASE64,
	  NULL, NULL },
	{ "trailing garbage", "Basic ", "r:" TOK32, 0, "x", NULL, 0,
	  PROXY_CRED_BAD_BASE64, NULL, NULL },
	{ "trailing space", "Basic ", "r:" TOK32, 0, " ", NULL, 0,
	  PROXY_CRED_BAD_BASE64, NULL, NULL },
	{ "trailing CRLF", "Basic ", "r:" TOK32, 0, "\r\n", NULL, 0,
	  PROXY_CRED_BAD_BASE64, NULL, NULL },
	/* 36 bytes: no padding, so the extra block decodes (to NULs) */
	{ "trailing block", "Basic ", "ab:" TOK32 "0", 0, "AAAA", NULL, 0,
	  PROXY_CRED_BAD_TOKEN, NULL, NULL },
	{ "block after padding", "Basic ", "r:" TOK32, 0, "AAAA", NULL, 0,
	  PROXY_CRED_BAD_BASE64, NULL, NULL },
	{ "missing colon", "Basic ", "run" TOK32, 0, "", NULL, 0,
	  PROXY_CRED_NO_COLON, NULL, NULL },
	{ "colon first", "Basic ", ":" TOK32, 0, "", NULL, 0,
	  PROXY_CRED_BAD_RUN_ID, NULL, NULL },
	{ "empty token", "Basic ", "run:", 0, "", NULL, 0,
	  PROXY_CRED_BAD_TOKEN, NULL, NULL },
	{ "uppercase hex token", "Basic ", "run:0123456789ABCDEF", 0, "",
	  NULL, 0, PROXY_CRED_BAD_TOKEN, NULL, NULL },
	{ "non-hex token", "Basic ", "run:0123456789abcdeg", 0, "",
	  NULL, 0, PROXY_CRED_BAD_TOKEN, NULL, NULL },
	{ "token of 15", "Basic ", "run:0123456789abcde", 0, "", NULL, 0,
	  PROXY_CRED_BAD_TOKEN, NULL, NULL },
	{ "token of 129", "Basic ", "run:" HEX128 "0", 0, "", NULL, 0,
	  PROXY_CRED_BAD_TOKEN, NULL, NULL },
	{ "run id of 65", "Basic ", RUN64 "x:" TOK32, 0, "", NULL, 0,
	  PROXY_CRED_BAD_RUN_ID, NULL, NULL },
	{ "run id with '/'", "Basic ", "a/b:" TOK32, 0, "", NULL, 0,
	  PROXY_CRED_BAD_RUN_ID, NULL, NULL },
	{ "run id with '.'", "Basic ", "a.b:" TOK32, 0, "", NULL, 0,
	  PROXY_CRED_BAD_RUN_ID, NULL, NULL },
	{ "NUL in decoded run id", "Basic ", "ab\0c:" TOK32, 37, "", NULL,
	  0, PROXY_CRED_BAD_RUN_ID, NULL, NULL },
	{ "NUL in decoded token", "Basic ", "abc:" TOK16 "\0" TOK16, 37, "",
	  NULL, 0, PROXY_CRED_BAD_TOKEN, NULL, NULL },
};

/* Builds a row's value into buf; returns its length. */
static size_t
cred_value(const struct cred_row *r, char *buf, size_t buflen)
{
	size_t n, plen;

	if (r->plain == NULL) {
		n = r->raw_len ? r->raw_len : strlen(r->raw);
		assert_true(n < buflen);
		memcpy(buf, r->raw, n);
		return n;
	}
	plen = r->plain_len ? r->plain_len : strlen(r->plain);
	n = strlen(r->scheme);
	assert_true(n + (plen + 2) / 3 * 4 + strlen(r->suffix) < buflen);
	memcpy(buf, r->scheme, n);
	n += (size_t)EVP_EncodeBlock((unsigned char *)buf + n,
	    (const unsigned char *)r->plain, (int)plen);
	memcpy(buf + n, r->suffix, strlen(r->suffix));
	return n + strlen(r->suffix);
}

static void
test_cred_table(void **state)
{
	static const struct proxy_cred zero;
	char buf[1024];

	(void)state;
	for (size_t i = 0; i < sizeof(cred_rows) / sizeof(cred_rows[0]); i++) {
		const struct cred_row *r = &cred_rows[i];
		struct proxy_cred c;
		size_t n = cred_value(r, buf, sizeof(buf));
		int rc;

		memset(&c, 0xAA, sizeof(c));
		rc = proxy_cred_parse(buf, n, &c);
		if (rc != r->rc)
			fail_msg("%s: got %d (%s), want %d (%s)", r->name, rc,
			    proxy_cred_strerror(rc), r->rc,
			    proxy_cred_strerror(r->rc));
		if (rc != 0) {
			/* never half-filled */
			assert_memory_equal(&c, &zero, sizeof(c));
			continue;
		}
		assert_string_equal(c.run, r->run);
		assert_string_equal(c.token, r->token);
	}
}

/* The caps on the encoded and the decoded length. */
static void
test_cred_oversize(void **state)
{
	char buf[1024], plain[300];
	struct proxy_cred c;
	size_t n;

	(void)state;
	/* 404 base64 characters: refused before any decoding */
	memcpy(buf, "Basic ", 6);
	memset(buf + 6, 'A', 404);
	assert_int_equal(proxy_cred_parse(buf, 410, &c), PROXY_CRED_OVERSIZE);
	/* 400 are let through to decoding (and fail there for the cap) */
	assert_int_equal(proxy_cred_parse(buf, 406, &c), PROXY_CRED_OVERSIZE);
	/* 255 decoded bytes: a valid base64 text, a bad run id */
	memset(plain, 'a', sizeof(plain));
	plain[1] = ':';
	n = (size_t)EVP_EncodeBlock((unsigned char *)buf + 6,
	    (const unsigned char *)plain, 255);
	assert_int_equal(proxy_cred_parse(buf, 6 + n, &c),
	    PROXY_CRED_BAD_TOKEN);
	n = (size_t)EVP_EncodeBlock((unsigned char *)buf + 6,
	    (const unsigned char *)plain, 256);
	assert_int_equal(proxy_cred_parse(buf, 6 + n, &c),
	    PROXY_CRED_BAD_TOKEN);
	/* 258 decoded bytes (344 encoded, under the encoded cap) */
	n = (size_t)EVP_EncodeBlock((unsigned char *)buf + 6,
	    (const unsigned char *)plain, 258);
	assert_int_equal(n, 344);
	assert_int_equal(proxy_cred_parse(buf, 6 + n, &c),
	    PROXY_CRED_OVERSIZE);
	assert_string_equal(c.run, "");
}

static void
test_cred_strerror(void **state)
{
	(void)state;
	assert_string_equal(proxy_cred_strerror(0), "ok");
	assert_string_equal(proxy_cred_strerror(PROXY_CRED_NOT_BASIC),
	    "not-basic");
	assert_string_equal(proxy_cred_strerror(PROXY_CRED_BAD_BASE64),
	    "bad-base64");
	assert_string_equal(proxy_cred_strerror(PROXY_CRED_NO_COLON),
	    "no-colon");
	assert_string_equal(proxy_cred_strerror(PROXY_CRED_BAD_RUN_ID),
	    "bad-run-id");
	assert_string_equal(proxy_cred_strerror(PROXY_CRED_BAD_TOKEN),
	    "bad-token");
	assert_string_equal(proxy_cred_strerror(PROXY_CRED_OVERSIZE),
	    "oversize");
	assert_string_equal(proxy_cred_strerror(-99), "unknown");
	assert_string_equal(proxy_cred_strerror(1), "unknown");
}

static void
test_cred_token_equal(void **state)
{
	char big[PROXY_CRED_TOKEN_MAX + 2];

	(void)state;
	assert_true(proxy_cred_token_equal(TOK32, TOK32));
	assert_true(proxy_cred_token_equal(HEX128, HEX128));
	assert_true(proxy_cred_token_equal("", ""));
	assert_false(proxy_cred_token_equal(TOK32, TOK16));
	assert_false(proxy_cred_token_equal(TOK16, TOK32));
	/* same content up to the shorter length */
	assert_false(proxy_cred_token_equal(TOK16, TOK16 "0"));
	assert_false(proxy_cred_token_equal(TOK32,
	    "0123456789abcdef0123456789abcdee"));
	assert_false(proxy_cred_token_equal("a", "b"));
	assert_false(proxy_cred_token_equal(NULL, TOK32));
	assert_false(proxy_cred_token_equal(TOK32, NULL));
	assert_false(proxy_cred_token_equal(NULL, NULL));
	/* over the cap: never equal, even to itself */
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_false(proxy_cred_token_equal(big, big));
}

static void
test_cred_token_new(void **state)
{
	char a[PROXY_CRED_TOKEN_NEW_LEN + 1], b[PROXY_CRED_TOKEN_NEW_LEN + 1];
	char small[PROXY_CRED_TOKEN_NEW_LEN];

	(void)state;
	assert_int_equal(proxy_cred_token_new(a, sizeof(a)), 0);
	assert_int_equal(proxy_cred_token_new(b, sizeof(b)), 0);
	assert_int_equal(strlen(a), PROXY_CRED_TOKEN_NEW_LEN);
	assert_true(proxy_cred_token_valid(a, strlen(a)));
	assert_true(proxy_cred_token_valid(b, strlen(b)));
	assert_string_not_equal(a, b);
	assert_false(proxy_cred_token_equal(a, b));
	assert_int_equal(proxy_cred_token_new(small, sizeof(small)), -EINVAL);
	assert_int_equal(proxy_cred_token_new(NULL, 100), -EINVAL);
}

/* A new token in a header built the way clients build it parses back. */
static void
test_cred_round_trip(void **state)
{
	char tok[PROXY_CRED_TOKEN_NEW_LEN + 1], plain[160], buf[256];
	struct proxy_cred c;
	int n;

	(void)state;
	assert_int_equal(proxy_cred_token_new(tok, sizeof(tok)), 0);
	/* run ids of 1..64 characters cover every padding case */
	for (int len = 1; len <= PROXY_CRED_RUN_MAX; len++) {
		memcpy(plain, RUN64, (size_t)len);
		plain[len] = ':';
		memcpy(plain + len + 1, tok, sizeof(tok));
		memcpy(buf, "Basic ", 6);
		n = EVP_EncodeBlock((unsigned char *)buf + 6,
		    (unsigned char *)plain, (int)strlen(plain));
		assert_int_equal(proxy_cred_parse(buf, 6 + (size_t)n, &c), 0);
		assert_int_equal(strlen(c.run), len);
		assert_memory_equal(c.run, RUN64, (size_t)len);
		assert_true(proxy_cred_token_equal(c.token, tok));
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cred_table),
		cmocka_unit_test(test_cred_oversize),
		cmocka_unit_test(test_cred_strerror),
		cmocka_unit_test(test_cred_token_equal),
		cmocka_unit_test(test_cred_token_new),
		cmocka_unit_test(test_cred_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
