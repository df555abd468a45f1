/*
 * allowlist_url_parse: the URLs `cordon allowlist explain` accepts, by a
 * table of what each splits into (authority, the scheme's port, target),
 * and the ones it refuses with their messages.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "allowlist/allowlist.h"

static const struct {
	const char *url, *authority;
	long port;
	const char *target;
} good[] = {
	{ "https://example.com", "example.com", 443, "" },
	{ "https://example.com/", "example.com", 443, "/" },
	{ "https://example.com/path", "example.com", 443, "/path" },
	{ "http://example.com/path", "example.com", 80, "/path" },
	{ "HTTPS://Example.COM/A", "Example.COM", 443, "/A" },
	{ "Http://x.example:8080/a/b?q=1", "x.example:8080", 80,
	  "/a/b?q=1" },
	{ "https://x.example?q=1", "x.example", 443, "?q=1" },
	{ "https://x.example/a#frag", "x.example", 443, "/a" },
	{ "https://x.example#frag", "x.example", 443, "" },
	{ "https://[2001:db8::1]:8443/x", "[2001:db8::1]:8443", 443, "/x" },
	{ "https://[2001:db8::1]/", "[2001:db8::1]", 443, "/" },
	{ "http://203.0.113.7:81", "203.0.113.7:81", 80, "" },
	/* The authority is kept as written: the matcher judges it. */
	{ "https://x.example:/", "x.example:", 443, "/" },
	{ "https://x.example:99999", "x.example:99999", 443, "" },
	{ "https://bad..name/", "bad..name", 443, "/" },
	{ "https://a.example/b://c", "a.example", 443, "/b://c" },
};

static const struct {
	const char *url, *why;
} bad[] = {
	{ "example.com", "not a URL (SCHEME://HOST...)" },
	{ "example.com:443", "not a URL (SCHEME://HOST...)" },
	{ "", "not a URL (SCHEME://HOST...)" },
	{ "ftp://example.com/", "the scheme is not http or https" },
	{ "://example.com/", "the scheme is not http or https" },
	{ "httpss://example.com/", "the scheme is not http or https" },
	{ "htt://example.com/", "the scheme is not http or https" },
	{ " https://example.com/", "the scheme is not http or https" },
	{ "https:///path", "no host after the scheme" },
	{ "https://", "no host after the scheme" },
	{ "https://?q", "no host after the scheme" },
	{ "https://user:pw@example.com/", "user information (USER@) in the "
	  "URL: the proxy is asked for the host alone" },
	{ "https://@example.com", "user information (USER@) in the "
	  "URL: the proxy is asked for the host alone" },
};

static void
test_good(void **state)
{
	struct allowlist_url u;
	const char *why;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		int r = allowlist_url_parse(good[i].url, &u, &why);
		if (r != 0 || strcmp(u.authority, good[i].authority) != 0 ||
		    u.default_port != good[i].port ||
		    u.target_len != strlen(good[i].target) ||
		    memcmp(u.target, good[i].target, u.target_len) != 0)
			fail_msg("'%s': got %d '%s' %ld '%.*s' (%s)",
			    good[i].url, r, u.authority, u.default_port,
			    (int)u.target_len, u.target != NULL ? u.target :
			    "", why != NULL ? why : "");
		assert_null(why);
	}
}

static void
test_bad(void **state)
{
	struct allowlist_url u;
	const char *why;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&u, 'x', sizeof(u));
		int r = allowlist_url_parse(bad[i].url, &u, &why);
		if (r != -EINVAL || why == NULL ||
		    strcmp(why, bad[i].why) != 0)
			fail_msg("'%s': got %d '%s'", bad[i].url, r,
			    why != NULL ? why : "(null)");
		/* Nothing half-filled. */
		assert_int_equal(u.authority[0], '\0');
		assert_null(u.target);
		assert_int_equal(u.default_port, 0);
	}
	assert_int_equal(allowlist_url_parse(NULL, &u, NULL), -EINVAL);
}

static void
test_long(void **state)
{
	char url[400];
	struct allowlist_url u;
	const char *why;

	(void)state;
	/* The longest authority that fits, and one byte more. */
	memcpy(url, "https://", 8);
	memset(url + 8, 'a', sizeof(u.authority) - 1);
	strcpy(url + 8 + sizeof(u.authority) - 1, "/p");
	assert_int_equal(allowlist_url_parse(url, &u, &why), 0);
	assert_int_equal(strlen(u.authority), sizeof(u.authority) - 1);
	memset(url + 8, 'a', sizeof(u.authority));
	strcpy(url + 8 + sizeof(u.authority), "/p");
	assert_int_equal(allowlist_url_parse(url, &u, &why), -EINVAL);
	assert_string_equal(why, "the host and port are too long");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_long),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
