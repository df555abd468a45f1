/*
 * Parser tests: broken files with their exact FILE:LINE: messages (the
 * whole file rejected), warnings that still load, and the text format's
 * corners (comments, CRLF, NUL bytes, limits).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allowlist/allowlist.h"

#define OPTS	"options are raw, inspect, methods=, paths=, inject=)"

/* Joins every diagnostic's text with newlines (caller frees). */
static char *
diag_join(const struct allowlist_diag *diag)
{
	size_t len = 1;
	char *s;

	for (size_t i = 0; i < diag->count; i++)
		len += strlen(diag->items[i].text) + 1;
	s = calloc(1, len);
	assert_non_null(s);
	for (size_t i = 0; i < diag->count; i++) {
		strcat(s, diag->items[i].text);
		strcat(s, "\n");
	}
	return s;
}

/* Parses text (len bytes) as "t.list"; checks the result and the exact
 * diagnostics. */
static void
check_parse(const char *text, size_t len, int want_r, const char *want)
{
	struct allowlist_diag diag;
	struct allowlist_set *set = (void *)1;
	char *got;
	int r;

	allowlist_diag_init(&diag);
	r = allowlist_set_parse("t.list", text, len, &set, &diag);
	got = diag_join(&diag);
	if (r != want_r || strcmp(got, want) != 0)
		fail_msg("input '%.*s': got %d\n%s\nwant %d\n%s", (int)len,
		    text, r, got, want_r, want);
	if (r == 0)
		assert_non_null(set);
	else
		assert_null(set);
	free(got);
	allowlist_set_free(set);
	allowlist_diag_cleanup(&diag);
}

static const struct brow {
	const char *text;
	const char *diag;	/* every line, in order */
} broken[] = {
	{ "*\n",
	  "t.list:1: '*' alone would match every host; write '*.example.com' "
	  "for the subdomains of one domain\n" },
	{ "!*\n",
	  "t.list:1: '*' alone would match every host; write '*.example.com' "
	  "for the subdomains of one domain\n" },
	{ "ok.example\n*:443\n",
	  "t.list:2: '*' alone would match every host; write '*.example.com' "
	  "for the subdomains of one domain\n" },
	{ "foo.*.com\n",
	  "t.list:1: '*' is only allowed as a whole leading label, as in "
	  "'*.example.com': 'foo.*.com'\n" },
	{ "*example.com\n",
	  "t.list:1: '*' is only allowed as a whole leading label, as in "
	  "'*.example.com': '*example.com'\n" },
	{ "*.*.example.com\n",
	  "t.list:1: '*' is only allowed as a whole leading label, as in "
	  "'*.example.com': '*.*.example.com'\n" },
	{ "example.*\n",
	  "t.list:1: '*' is only allowed as a whole leading label, as in "
	  "'*.example.com': 'example.*'\n" },
	{ "*.com\n",
	  "t.list:1: '*.com' would allow every name under the public suffix "
	  "'com'\n" },
	{ "*.CO.UK:443\n",
	  "t.list:1: '*.co.uk' would allow every name under the public suffix "
	  "'co.uk'\n" },
	{ "*.github.io\n",
	  "t.list:1: '*.github.io' would allow every name under the public "
	  "suffix 'github.io'\n" },
	{ "*.internal\n",
	  "t.list:1: '*.internal' would allow every name under the public "
	  "suffix 'internal'\n" },
	{ "*.s3.amazonaws.com\n",
	  "t.list:1: '*.s3.amazonaws.com' would allow every name under the "
	  "public suffix 's3.amazonaws.com'\n" },
	{ "*.cloudfront.net\n",
	  "t.list:1: '*.cloudfront.net' would allow every name under the "
	  "public suffix 'cloudfront.net'\n" },
	{ "*.herokuapp.com\n",
	  "t.list:1: '*.herokuapp.com' would allow every name under the "
	  "public suffix 'herokuapp.com'\n" },
	{ "a..b\n", "t.list:1: empty label in 'a..b'\n" },
	{ ".example.com\n", "t.list:1: empty label in '.example.com'\n" },
	{ "*..example.com\n", "t.list:1: empty label in '.example.com'\n" },
	{ "example.com..\n", "t.list:1: empty label in 'example.com.'\n" },
	{ "a23456789012345678901234567890123456789012345678901234567890123"
	  "4.com\n",
	  "t.list:1: label 'a2345678901234567890123456789012345678901234567890"
	  "1234567890123" "4' is 64 bytes long, more than 63\n" },
	{ "exa_mple.com\n",
	  "t.list:1: invalid character '_' in 'exa_mple.com' (host names use "
	  "letters, digits and '-')\n" },
	{ "10.0.0.0/8\n",
	  "t.list:1: invalid character '/' in '10.0.0.0/8' (host names use "
	  "letters, digits and '-')\n" },
	{ "-a.com\n", "t.list:1: label '-a' starts or ends with '-'\n" },
	{ "a-.com\n", "t.list:1: label 'a-' starts or ends with '-'\n" },
	{ "b\xc3\xbc" "cher.de\n",
	  "t.list:1: non-ASCII byte in 'b\\xc3\\xbccher.de': write "
	  "internationalised names as punycode (xn--...)\n" },
	{ "host:0\n", "t.list:1: port 0 is out of range (1-65535)\n" },
	{ "host:65536\n", "t.list:1: port 65536 is out of range (1-65535)\n" },
	{ "host:99999999999999999999\n",
	  "t.list:1: port 99999999999999999999 is out of range (1-65535)\n" },
	{ "host:abc\n",
	  "t.list:1: malformed port 'abc' (ports are numbers from 1 to "
	  "65535)\n" },
	{ "host:-1\n",
	  "t.list:1: malformed port '-1' (ports are numbers from 1 to 65535)\n" },
	{ "host:0443\n", "t.list:1: malformed port '0443' (no leading zeros)\n" },
	{ "host:\n", "t.list:1: missing port after ':'\n" },
	{ "host:80,\n", "t.list:1: empty port in list '80,'\n" },
	{ "host:80,,443\n", "t.list:1: empty port in list '80,,443'\n" },
	{ ":443\n", "t.list:1: missing host before ':' in ':443'\n" },
	{ "host:80-90\n",
	  "t.list:1: malformed port '80-90' (ports are numbers from 1 to "
	  "65535)\n" },
	{ "example.com foo\n",
	  "t.list:1: unexpected 'foo' after the entry (one entry per line; "
	  "comments start with '#'; " OPTS "\n" },
	{ "example.com :443\n",
	  "t.list:1: unexpected ':443' after the entry (one entry per line; "
	  "comments start with '#'; " OPTS "\n" },
	{ "allow example.com\n",
	  "t.list:1: unexpected 'example.com' after the entry (one entry per "
	  "line; comments start with '#'; " OPTS "\n" },
	{ "https://example.com\n",
	  "t.list:1: 'https://example.com' looks like a URL: write the host "
	  "name only, with :PORT if needed\n" },
	{ "http://example.com:8080\n",
	  "t.list:1: 'http://example.com:8080' looks like a URL: write the "
	  "host name only, with :PORT if needed\n" },
	{ "!\n", "t.list:1: '!' must be followed by the entry to deny\n" },
	{ "!!x.com\n",
	  "t.list:1: invalid character '!' in '!x.com' (host names use "
	  "letters, digits and '-')\n" },
	{ "1.2.3\n", "t.list:1: '1.2.3' is not a valid IPv4 address\n" },
	{ "203.0.113.07\n",
	  "t.list:1: '203.0.113.07' is not a valid IPv4 address\n" },
	{ "*.0.113.7\n",
	  "t.list:1: wildcards apply to host names, not IP addresses: "
	  "'*.0.113.7'\n" },
	{ "2001:db8::g\n",
	  "t.list:1: invalid IPv6 address '2001:db8::g' (to add ports, write "
	  "[2001:db8::1]:443)\n" },
	{ "[2001:db8::1\n", "t.list:1: missing ']' in '[2001:db8::1'\n" },
	{ "[2001:db8::1]443\n",
	  "t.list:1: unexpected text after ']' in '[2001:db8::1]443' (write "
	  "[IPv6]:PORT)\n" },
	{ "[203.0.113.7]:443\n",
	  "t.list:1: invalid IPv6 address in '[203.0.113.7]:443'\n" },
	{ "[fe80::1%eth0]\n",
	  "t.list:1: invalid IPv6 address in '[fe80::1%eth0]'\n" },
	{ "[2001:db8::1]:0\n", "t.list:1: port 0 is out of range (1-65535)\n" },
	{ "exa\x01mple.com\n",
	  "t.list:1: invalid character 0x01 in 'exa\\x01mple.com'\n" },
	/* Several mistakes: every one, with its own line. */
	{ "# header\n"
	  "good.example\n"
	  "\n"
	  "  *.com   # too wide\n"
	  "a..b\n"
	  "ok.example:443\n"
	  "host:0\n",
	  "t.list:4: '*.com' would allow every name under the public suffix "
	  "'com'\n"
	  "t.list:5: empty label in 'a..b'\n"
	  "t.list:7: port 0 is out of range (1-65535)\n" },
};

static void
test_broken(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(broken) / sizeof(broken[0]); i++)
		check_parse(broken[i].text, strlen(broken[i].text), -EINVAL,
		    broken[i].diag);
}

static void
test_long_name(void **state)
{
	char text[400], want[200];

	(void)state;
	/* 254 bytes of labels: too long. 253 is fine. */
	memset(text, 'a', sizeof(text));
	for (size_t i = 50; i < 254; i += 51)
		text[i] = '.';
	memcpy(text + 254, "\n", 2);
	snprintf(want, sizeof(want),
	    "t.list:1: name is 254 bytes long, more than 253\n");
	check_parse(text, strlen(text), -EINVAL, want);
	memcpy(text + 253, "\n", 2);
	check_parse(text, strlen(text), 0, "");
	/* A 300-byte name. */
	memset(text, 'b', 300);
	for (size_t i = 50; i < 300; i += 51)
		text[i] = '.';
	memcpy(text + 300, "\n", 2);
	check_parse(text, strlen(text), -EINVAL,
	    "t.list:1: name is 300 bytes long, more than 253\n");
}

static void
test_nul_byte(void **state)
{
	static const char text[] = "ok.example\nexa\0mple.com\n";

	(void)state;
	check_parse(text, sizeof(text) - 1, -EINVAL,
	    "t.list:2: invalid character 0x00 in 'exa\\x00mple.com'\n");
}

#define PSL_AWS(line) \
	"t.list:" #line ": warning: '*.amazonaws.com' spans public suffixes " \
	"such as 's3.amazonaws.com': names registered under them are not " \
	"allowed by it (wildcard-crosses-public-suffix)\n"

static const struct wrow {
	const char *text;
	const char *diag;
} warned[] = {
	{ "example.com\nexample.com\n",
	  "t.list:2: warning: duplicate of line 1\n" },
	{ "Example.COM.\nexample.com:443,80\n",
	  "t.list:2: warning: duplicate of line 1\n" },
	{ "!x.example\n!X.example\n",
	  "t.list:2: warning: duplicate of line 1\n" },
	{ "2001:db8::1\n[2001:db8:0:0::1]:80,443\n",
	  "t.list:2: warning: duplicate of line 1\n" },
	{ "*.example.com\nwww.example.com\n",
	  "t.list:2: warning: already covered by '*.example.com' (line 1)\n" },
	{ "www.example.com:443\n*.example.com\n",
	  "t.list:1: warning: already covered by '*.example.com' (line 2)\n" },
	{ "*.example.com\n*.a.example.com:80\n",
	  "t.list:2: warning: already covered by '*.example.com' (line 1)\n" },
	{ "!*.example.com\n!a.example.com:22\n",
	  "t.list:2: warning: already covered by '!*.example.com' (line 1)\n" },
	{ "!x.example.com\nx.example.com\n",
	  "t.list:2: warning: never allowed: '!x.example.com' (line 1) "
	  "denies it\n" },
	{ "*.example.com:8443\n!*.example.com\n",
	  "t.list:1: warning: never allowed: '!*.example.com' (line 2) "
	  "denies it\n" },
	{ "a.b.example.com\n!*.example.com\n",
	  "t.list:1: warning: never allowed: '!*.example.com' (line 2) "
	  "denies it\n" },
	{ "host:443,443\n", "t.list:1: warning: port 443 is listed twice\n" },
	{ "*.example.com:1,2,3,4\nwww.example.com:3,2,1\n",
	  "t.list:2: warning: already covered by '*.example.com:1,2,3,4' "
	  "(line 1)\n" },
	{ "h.example:9,8,7\nh.example:7,8,9\n",
	  "t.list:2: warning: duplicate of line 1\n" },
	{ "h.example:9,8,7\nh.example:7,8\n", "" },
	/* Allow wildcards with public suffixes beneath: said once per
	 * base; "covered" only where the wildcard does not cross one. */
	{ "*.amazonaws.com\n", PSL_AWS(1) },
	{ "*.Amazonaws.com.:443\n*.amazonaws.com:8443\n", PSL_AWS(1) },
	{ "*.amazonaws.com\nec2.amazonaws.com\n", PSL_AWS(1)
	  "t.list:2: warning: already covered by '*.amazonaws.com' "
	  "(line 1)\n" },
	{ "*.amazonaws.com\n*.foo.amazonaws.com\n", PSL_AWS(1)
	  "t.list:2: warning: already covered by '*.amazonaws.com' "
	  "(line 1)\n" },
	{ "x.s3.amazonaws.com\n*.amazonaws.com\n", PSL_AWS(2) },
	{ "*.amazonaws.com\n*.x.s3.amazonaws.com\ns3.amazonaws.com\n"
	  "*.ec2.us-east-1.amazonaws.com\n", PSL_AWS(1) },
	{ "*.scw.cloud\n",
	  "t.list:1: warning: '*.scw.cloud' spans public suffixes such as "
	  "'k8s.scw.cloud': names registered under them are not allowed by "
	  "it (wildcard-crosses-public-suffix)\n" },
	{ "!*.amazonaws.com\n", "" },
	{ "*.x.s3.amazonaws.com\n", "" },
	{ "*.execute-api.us-east-1.amazonaws.com\n", "" },
	{ "*.xn--bcher-kva.example\n", "" },
	/* No warning: different ports, apex vs wildcard, partial deny. */
	{ "api.example.com:8443\n*.example.com\n", "" },
	{ "example.com\n*.example.com\n", "" },
	{ "x.example.com:80\nx.example.com:443\n", "" },
	{ "!x.example.com:80\nx.example.com\n", "" },
	{ "!example.com\n*.example.com\n", "" },
	{ "!*.example.com\nexample.com\n", "" },
	{ "*.example.com\nwww.example.com:8443\n", "" },
};

static void
test_warnings(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(warned) / sizeof(warned[0]); i++)
		check_parse(warned[i].text, strlen(warned[i].text), 0,
		    warned[i].diag);
}

static void
test_format_corners(void **state)
{
	static const char crlf[] = "a.example\r\n\r\n  b.example:80  \r\n"
	    "c.example";
	struct allowlist_set *set;
	const struct allowlist *al;
	struct allowlist_decision d;

	(void)state;
	check_parse("", 0, 0, "");
	check_parse("# only a comment\n\n   \n\t# another\n", 33, 0, "");
	check_parse("x.example#comment\n", 18, 0, "");
	check_parse("x.example\nbad..name", 19, -EINVAL,
	    "t.list:2: empty label in 'bad..name'\n");
	assert_int_equal(allowlist_set_parse("c.list", crlf, sizeof(crlf) - 1,
	    &set, NULL), 0);
	al = allowlist_set_policy(set, NULL);
	assert_int_equal(allowlist_entry_count(al), 3);
	assert_true(allowlist_match(al, "a.example", 443, &d));
	assert_true(allowlist_match(al, "b.example", 80, &d));
	assert_int_equal(d.line, 3);
	assert_string_equal(d.entry, "b.example:80");
	assert_true(allowlist_match(al, "c.example", 443, &d));
	assert_int_equal(d.line, 4);
	assert_int_equal(allowlist_set_count(set), 1);
	assert_string_equal(allowlist_set_name(set, 0), "default");
	assert_null(allowlist_set_name(set, 1));
	allowlist_set_free(set);
}

/* A UTF-8 byte-order mark opens the file: skipped, never read as the
 * first entry's non-ASCII bytes; anywhere else it is still an error. */
static void
test_bom(void **state)
{
	static const char text[] = "\xef\xbb\xbf" "a.example\r\nb.example\r\n";
	struct allowlist_set *set;
	struct allowlist_decision d;

	(void)state;
	check_parse(text, sizeof(text) - 1, 0, "");
	check_parse("\xef\xbb\xbf", 3, 0, "");
	check_parse("\xef\xbb\xbf# comment\n", 13, 0, "");
	check_parse("\xef\xbb\xbf" "*.example.com\n", 17, 0, "");
	assert_int_equal(allowlist_set_parse("b.list", text, sizeof(text) - 1,
	    &set, NULL), 0);
	assert_true(allowlist_match(allowlist_set_policy(set, NULL),
	    "a.example", 443, &d));
	assert_int_equal(d.line, 1);
	assert_string_equal(d.entry, "a.example");
	allowlist_set_free(set);
	/* Only at the start, and only once. */
	check_parse("a.example\n\xef\xbb\xbf" "b.example\n", 23, -EINVAL,
	    "t.list:2: a UTF-8 byte-order mark (U+FEFF) in "
	    "'\\xef\\xbb\\xbfb.example': it is allowed only at the start "
	    "of the file\n");
	check_parse("\xef\xbb\xbf\xef\xbb\xbf" "a\n", 8, -EINVAL,
	    "t.list:1: a UTF-8 byte-order mark (U+FEFF) in "
	    "'\\xef\\xbb\\xbfa': it is allowed only at the start of the "
	    "file\n");

}

static void
test_only_denies(void **state)
{
	/* Found by the fuzzer: a policy whose entries all lack ports has no
	 * port array; matching must not do arithmetic on it. */
	static const char text[] = "!cople\n!*.com\n";
	struct allowlist_set *set;
	struct allowlist_decision d;

	(void)state;
	assert_int_equal(allowlist_set_parse("t.list", text, sizeof(text) - 1,
	    &set, NULL), 0);
	assert_false(allowlist_match(allowlist_set_policy(set, NULL),
	    "x.com", 443, &d));
	assert_string_equal(d.reason, "denied-by-entry");
	assert_int_equal(d.line, 2);
	assert_false(allowlist_match(allowlist_set_policy(set, NULL),
	    "cople", 1, &d));
	assert_int_equal(d.line, 1);
	allowlist_set_free(set);
}

static void
test_limits(void **state)
{
	struct allowlist_diag diag;
	struct allowlist_set *set;
	char *text, ports[64 * 6 + 32];
	size_t off = 0;

	(void)state;
	/* 2000 bad lines: 1000 kept, the rest counted. */
	text = malloc(2000 * 5 + 1);
	assert_non_null(text);
	for (int i = 0; i < 2000; i++)
		memcpy(text + i * 5, "a..b\n", 5);
	allowlist_diag_init(&diag);
	assert_int_equal(allowlist_set_parse("t.list", text, 2000 * 5, &set,
	    &diag), -EINVAL);
	assert_null(set);
	assert_int_equal(diag.count, ALLOWLIST_DIAG_MAX);
	assert_int_equal(diag.errors, 2000);
	assert_int_equal(diag.dropped, 2000 - ALLOWLIST_DIAG_MAX);
	assert_string_equal(diag.items[999].text,
	    "t.list:1000: empty label in 'a..b'");
	assert_int_equal(diag.items[999].line, 1000);
	assert_false(diag.items[999].warning);
	assert_string_equal(diag.items[999].file, "t.list");
	assert_string_equal(diag.items[999].message, "empty label in 'a..b'");
	allowlist_diag_cleanup(&diag);
	assert_null(diag.items);
	free(text);

	/* 64 ports fit on one entry; 65 do not. */
	off = (size_t)snprintf(ports, sizeof(ports), "h.example:");
	for (int i = 1; i <= 64; i++)
		off += (size_t)snprintf(ports + off, sizeof(ports) - off,
		    "%s%d", i > 1 ? "," : "", 1000 + i);
	check_parse(ports, off, 0, "");
	snprintf(ports + off, sizeof(ports) - off, ",2000");
	check_parse(ports, strlen(ports), -EINVAL,
	    "t.list:1: more than 64 ports on one entry\n");
}

static void
test_chain_limit(void **state)
{
	char text[65 * 20];
	size_t off = 0;

	(void)state;
	for (int i = 1; i <= 65; i++)
		off += (size_t)snprintf(text + off, sizeof(text) - off,
		    "h.example:%d\n", i);
	check_parse(text, off, -EINVAL, "t.list:65: more than 64 entries for "
	    "the same host; list its ports on one line\n");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_broken),
		cmocka_unit_test(test_long_name),
		cmocka_unit_test(test_nul_byte),
		cmocka_unit_test(test_warnings),
		cmocka_unit_test(test_format_corners),
		cmocka_unit_test(test_bom),
		cmocka_unit_test(test_only_denies),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_chain_limit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
