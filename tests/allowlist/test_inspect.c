/*
 * Entry options (inspect, methods=, paths=, inject=): their grammar with
 * exact FILE:LINE messages, what the matcher hands the proxy, the
 * canonical-path check for requests, and the secrets store (file and
 * directory, root-only, values never in a diagnostic).
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
#include <sys/stat.h>
#include <unistd.h>

#include "allowlist/allowlist.h"
#include "common/util.h"
#include "tmpdir.h"

/* Every secret value in these tests holds this, so a leak is seen. */
#define MARK	"sekrit"


/* Writes tmpdir/name with len bytes of text and mode; returns the path
 * in out. */
static void
put(const char *name, const char *text, size_t len, unsigned mode,
    char *out, size_t outlen)
{
	snprintf(out, outlen, "%s/%s", tmpdir, name);
	assert_int_equal(util_write_file_atomic(out, text, len, 0600), 0);
	assert_int_equal(chmod(out, mode), 0);
}

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

/* Parses text as "t.list" with opts; checks the return, the exact
 * diagnostics, and that no diagnostic holds a secret value. The set is
 * returned in *out when wanted, else freed. */
static void
check_opts(const char *text, const struct allowlist_load_opts *opts,
    int want_r, const char *want, struct allowlist_set **out)
{
	struct allowlist_diag diag;
	struct allowlist_set *set = (void *)1;
	char *got;
	int r;

	allowlist_diag_init(&diag);
	r = allowlist_set_parse_opts("t.list", text, strlen(text), opts, &set,
	    &diag);
	got = diag_join(&diag);
	if (r != want_r || strcmp(got, want) != 0)
		fail_msg("input '%s': got %d\n%s\nwant %d\n%s", text, r, got,
		    want_r, want);
	if (strstr(got, MARK) != NULL)
		fail_msg("a secret value is in a diagnostic:\n%s", got);
	if (r == 0)
		assert_non_null(set);
	else
		assert_null(set);
	free(got);
	allowlist_diag_cleanup(&diag);
	if (out != NULL)
		*out = set;
	else
		allowlist_set_free(set);
}

#define OPTS_HELP	"options are raw, inspect, methods=, paths=, inject="

static const struct brow {
	const char *text;
	const char *diag;
} broken[] = {
	{ "a.example methods=GET\n",
	  "t.list:1: 'methods=' needs 'inspect' on the same entry (the proxy "
	  "sees requests only in connections it inspects)\n" },
	{ "a.example paths=/x inject=X-Key:k\n",
	  "t.list:1: 'paths=' needs 'inspect' on the same entry (the proxy "
	  "sees requests only in connections it inspects)\n" },
	{ "a.example inspect inspect\n",
	  "t.list:1: option 'inspect' is given twice\n" },
	{ "a.example inspect methods=GET methods=POST\n",
	  "t.list:1: option 'methods=' is given twice\n" },
	{ "a.example inspect paths=/a paths=/b\n",
	  "t.list:1: option 'paths=' is given twice\n" },
	{ "a.example inspect inject=A:k inject=B:k\n",
	  "t.list:1: option 'inject=' is given twice\n" },
	{ "a.example inspect methods=\n",
	  "t.list:1: methods= has an empty list\n" },
	{ "a.example inspect paths=\n",
	  "t.list:1: paths= has an empty list\n" },
	{ "a.example inspect methods=GET,\n",
	  "t.list:1: empty item in the methods= list 'GET,'\n" },
	{ "a.example inspect methods=GET,,POST\n",
	  "t.list:1: empty item in the methods= list 'GET,,POST'\n" },
	{ "a.example inspect methods=get\n",
	  "t.list:1: methods are case-sensitive and upper case: write 'GET', "
	  "not 'get'\n" },
	{ "a.example inspect methods=Post\n",
	  "t.list:1: methods are case-sensitive and upper case: write 'POST', "
	  "not 'Post'\n" },
	{ "a.example inspect methods=G*T\n",
	  "t.list:1: 'G*T' is not a method name (upper-case letters, and '-' "
	  "inside, as in 'GET')\n" },
	{ "a.example inspect methods=-GET\n",
	  "t.list:1: '-GET' is not a method name (upper-case letters, and '-' "
	  "inside, as in 'GET')\n" },
	{ "a.example inspect methods=GET1\n",
	  "t.list:1: 'GET1' is not a method name (upper-case letters, and '-' "
	  "inside, as in 'GET')\n" },
	{ "a.example inspect methods=GET,GET\n",
	  "t.list:1: method 'GET' is listed twice\n" },
	{ "a.example inspect methods=CONNECT\n",
	  "t.list:1: CONNECT cannot be allowed in an inspected connection (it "
	  "would open a tunnel that is not inspected)\n" },
	{ "a.example inspect methods=ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFG\n",
	  "t.list:1: method 'ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFG' is longer than "
	  "32 bytes\n" },
	{ "a.example inspect paths=simple/*\n",
	  "t.list:1: path pattern 'simple/*' must start with '/'\n" },
	{ "a.example inspect paths=*\n",
	  "t.list:1: path pattern '*' must start with '/'\n" },
	{ "a.example inspect paths=/a?b=1\n",
	  "t.list:1: path pattern '/a?b=1' holds a query ('?'): queries are "
	  "ignored, write the path only\n" },
	{ "a.example inspect paths=/a*/b\n",
	  "t.list:1: '*' is only allowed as the last character of a path "
	  "pattern: '/a*/b'\n" },
	{ "a.example inspect paths=/a**\n",
	  "t.list:1: '*' is only allowed as the last character of a path "
	  "pattern: '/a**'\n" },
	{ "a.example inspect paths=/a/../b\n",
	  "t.list:1: path pattern '/a/../b' is not canonical: it holds a dot "
	  "segment ('.' or '..')\n" },
	{ "a.example inspect paths=/a/./*\n",
	  "t.list:1: path pattern '/a/./*' is not canonical: it holds a dot "
	  "segment ('.' or '..')\n" },
	{ "a.example inspect paths=/a/..\n",
	  "t.list:1: path pattern '/a/..' is not canonical: it holds a dot "
	  "segment ('.' or '..')\n" },
	{ "a.example inspect paths=/a/..;x/b\n",
	  "t.list:1: path pattern '/a/..;x/b' is not canonical: it holds "
	  "';'\n" },
	{ "a.example inspect paths=/a/;x/b\n",
	  "t.list:1: path pattern '/a/;x/b' is not canonical: it holds "
	  "';'\n" },
	{ "a.example inspect paths=/x;v=1\n",
	  "t.list:1: path pattern '/x;v=1' is not canonical: it holds "
	  "';'\n" },
	{ "a.example inspect paths=/a%3bx\n",
	  "t.list:1: path pattern '/a%3bx' is not canonical: it holds a "
	  "percent-encoded ';'\n" },
	{ "a.example inspect paths=/a/%c0%ae/*\n",
	  "t.list:1: path pattern '/a/%c0%ae/*' is not canonical: it holds "
	  "percent-encoded bytes that are not UTF-8 (or an overlong "
	  "form)\n" },
	/* raw: no other option, and never with inspect. */
	{ "a.example:22 raw inspect\n",
	  "t.list:1: 'raw' and 'inspect' exclude each other ('raw' passes "
	  "any bytes without looking at them; 'inspect' terminates TLS and "
	  "checks every request)\n" },
	{ "a.example:22 raw methods=GET\n",
	  "t.list:1: 'methods=' needs 'inspect' on the same entry (the proxy "
	  "sees requests only in connections it inspects)\n" },
	{ "a.example:22 raw raw\n",
	  "t.list:1: option 'raw' is given twice\n" },
	{ "!a.example:22 raw\n",
	  "t.list:1: deny entries take no options (they deny every request "
	  "to the host)\n" },
	{ "a.example:22 raw\na.example:22\n",
	  "t.list:2: conflicts with line 1: a port of this host is on both "
	  "lines, with different options (only line 1 could decide); give "
	  "each port one set of options\n" },
	{ "a.example inspect paths=//a\n",
	  "t.list:1: path pattern '//a' is not canonical: it holds '//'\n" },
	{ "a.example inspect paths=/a//*\n",
	  "t.list:1: path pattern '/a//*' is not canonical: it holds '//'\n" },
	{ "a.example inspect paths=/a%2fb\n",
	  "t.list:1: path pattern '/a%2fb' is not canonical: it holds a "
	  "percent-encoded '.', '/', '\\' or NUL\n" },
	{ "a.example inspect paths=/a%2E\n",
	  "t.list:1: path pattern '/a%2E' is not canonical: it holds a "
	  "percent-encoded '.', '/', '\\' or NUL\n" },
	{ "a.example inspect paths=/a%zz\n",
	  "t.list:1: path pattern '/a%zz' is not canonical: it holds a "
	  "malformed '%' escape\n" },
	{ "a.example inspect paths=/a%4*\n",
	  "t.list:1: path pattern '/a%4*' is not canonical: it holds a "
	  "malformed '%' escape\n" },
	{ "a.example inspect paths=/a\\b\n",
	  "t.list:1: path pattern '/a\\b' is not canonical: it holds a "
	  "backslash\n" },
	{ "a.example inspect paths=/\xc3\xa9\n",
	  "t.list:1: path pattern '/\\xc3\\xa9' is not canonical: it holds a "
	  "space, a control or a non-ASCII byte\n" },
	{ "a.example inspect paths=/a,/a\n",
	  "t.list:1: path pattern '/a' is listed twice\n" },
	{ "a.example inspect inject=Authorization\n",
	  "t.list:1: inject= takes HEADER:SECRET (a header name and the name "
	  "of a secret in the secrets store): 'Authorization'\n" },
	{ "a.example inspect inject=:k\n",
	  "t.list:1: inject= takes HEADER:SECRET (a header name and the name "
	  "of a secret in the secrets store): ':k'\n" },
	{ "a.example inspect inject=X-Key:\n",
	  "t.list:1: inject= takes HEADER:SECRET (a header name and the name "
	  "of a secret in the secrets store): 'X-Key:'\n" },
	{ "a.example inspect inject=X(y):k\n",
	  "t.list:1: 'X(y)' is not a header name (RFC 9110 token "
	  "characters)\n" },
	{ "a.example inspect inject=X-Key:../etc/shadow\n",
	  "t.list:1: '../etc/shadow' is not a secret name (1-64 letters, "
	  "digits, '.', '_' or '-', not starting with '.')\n" },
	{ "a.example inspect inject=X-Key:.hidden\n",
	  "t.list:1: '.hidden' is not a secret name (1-64 letters, digits, "
	  "'.', '_' or '-', not starting with '.')\n" },
	{ "a.example inspect inject=X-Key:a:b\n",
	  "t.list:1: 'a:b' is not a secret name (1-64 letters, digits, '.', "
	  "'_' or '-', not starting with '.')\n" },
	{ "a.example inspect foo=bar\n",
	  "t.list:1: unknown option 'foo=' (" OPTS_HELP ")\n" },
	{ "a.example inspect method=GET\n",
	  "t.list:1: unknown option 'method=' (" OPTS_HELP ")\n" },
	{ "a.example inspect=yes\n",
	  "t.list:1: unknown option 'inspect=' (" OPTS_HELP ")\n" },
	{ "a.example INSPECT\n",
	  "t.list:1: unexpected 'INSPECT' after the entry (one entry per line; "
	  "comments start with '#'; " OPTS_HELP ")\n" },
	{ "!a.example inspect\n",
	  "t.list:1: deny entries take no options (they deny every request to "
	  "the host)\n" },
	{ "!*.a.example methods=GET\n",
	  "t.list:1: deny entries take no options (they deny every request to "
	  "the host)\n" },
	{ "a.example inspect\na.example\n",
	  "t.list:2: conflicts with line 1: a port of this host is on both "
	  "lines, with different options (only line 1 could decide); give "
	  "each port one set of options\n" },
	{ "a.example:443 inspect\na.example:80,443 inspect methods=GET\n",
	  "t.list:2: conflicts with line 1: a port of this host is on both "
	  "lines, with different options (only line 1 could decide); give "
	  "each port one set of options\n" },
	{ "*.a.example inspect paths=/x\n*.a.example:443 inspect\n",
	  "t.list:2: conflicts with line 1: a port of this host is on both "
	  "lines, with different options (only line 1 could decide); give "
	  "each port one set of options\n" },
	{ "a.example inspect inject=X-Key:k\n",
	  "t.list:1: inject= names secret 'k' but no secrets store is "
	  "configured (config key egress_secrets)\n" },
	{ "a.example inspect methods=get\nbad..name inspect\n",
	  "t.list:1: methods are case-sensitive and upper case: write 'GET', "
	  "not 'get'\n"
	  "t.list:2: empty label in 'bad..name'\n" },
};

static void
test_broken(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(broken) / sizeof(broken[0]); i++)
		check_opts(broken[i].text, NULL, -EINVAL, broken[i].diag, NULL);
}

static void
test_reserved_headers(void **state)
{
	static const char *const names[] = { "Host", "host", "Content-Length",
	    "Transfer-Encoding", "Connection", "Upgrade", "TE", "te",
	    "Trailer", "Keep-Alive", "Proxy-Authorization",
	    "proxy-connection", "Proxy-X" };
	char text[256], want[512];

	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(text, sizeof(text), "a.example inspect inject=%s:k\n",
		    names[i]);
		snprintf(want, sizeof(want), "t.list:1: inject= cannot set "
		    "'%s': it is a hop-by-hop or message-framing header, which "
		    "the proxy owns\n", names[i]);
		check_opts(text, NULL, -EINVAL, want, NULL);
	}
	/* Near misses are ordinary headers. */
	check_opts("a.example inspect inject=Hosts:k\n"
	    "b.example inspect inject=Proxy:k\n"
	    "c.example inspect inject=X-Te:k\n",
	    &(struct allowlist_load_opts){ .secrets_unverified = true }, 0, "",
	    NULL);
}

static const struct wrow {
	const char *text;
	const char *diag;
} warned[] = {
	{ "a.example inspect methods=GET\na.example inspect methods=GET\n",
	  "t.list:2: warning: duplicate of line 1\n" },
	{ "a.example inspect methods=GET,POST paths=/b,/a\n"
	  "a.example  inspect  paths=/a,/b  methods=POST,GET\n",
	  "t.list:2: warning: duplicate of line 1\n" },
	{ "*.example.com inspect\nwww.example.com\n",
	  "t.list:2: warning: '*.example.com' (line 1) also covers this, with "
	  "other options; this entry's apply (not inspected)\n" },
	{ "*.example.com\nwww.example.com inspect methods=GET\n",
	  "t.list:2: warning: '*.example.com' (line 1) also covers this, with "
	  "other options; this entry's apply (inspected)\n" },
	{ "*.example.com inspect\n*.a.example.com inspect methods=GET\n",
	  "t.list:2: warning: '*.example.com' (line 1) also covers this, with "
	  "other options; this entry's apply (inspected)\n" },
	{ "*.example.com inspect\nwww.example.com inspect\n",
	  "t.list:2: warning: already covered by '*.example.com' (line 1)\n" },
	{ "a.example inspect\n!a.example\n",
	  "t.list:1: warning: never allowed: '!a.example' (line 2) denies it\n" },
	/* No warning: different ports, options that are valid corners. */
	{ "a.example:443 inspect\na.example:8443\n", "" },
	{ "a.example:443 inspect methods=GET\na.example:80 inspect\n", "" },
	{ "a.example inspect paths=/a/.*,/.well-known/*,/,/*,/x%c3%a9 "
	  "methods=GET,HEAD,VERSION-CONTROL\n", "" },
	{ "a.example inspect paths=/a%41,/a/..*,/a/~b/*\n", "" },
	{ "a.example\tinspect\t# comment methods=bogus\n", "" },
	{ "[2001:db8::1]:443 inspect methods=GET\n203.0.113.7 inspect\n", "" },
};

static void
test_warnings(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(warned) / sizeof(warned[0]); i++)
		check_opts(warned[i].text, NULL, 0, warned[i].diag, NULL);
}

static void
test_limits(void **state)
{
	char text[ALLOWLIST_PATTERN_MAX * 2 + 256], want[4096];
	size_t off;

	(void)state;
	off = (size_t)snprintf(text, sizeof(text), "a.example inspect "
	    "methods=");
	for (int i = 0; i < ALLOWLIST_METHODS_MAX; i++)
		off += (size_t)snprintf(text + off, sizeof(text) - off, "%sM%c",
		    i > 0 ? "," : "", 'A' + i);
	check_opts(text, NULL, 0, "", NULL);
	snprintf(text + off, sizeof(text) - off, ",MZ");
	check_opts(text, NULL, -EINVAL, "t.list:1: more than 16 items in "
	    "methods=\n", NULL);

	off = (size_t)snprintf(text, sizeof(text), "a.example inspect paths=");
	for (int i = 0; i < ALLOWLIST_PATHS_MAX; i++)
		off += (size_t)snprintf(text + off, sizeof(text) - off, "%s/%d",
		    i > 0 ? "," : "", i);
	check_opts(text, NULL, 0, "", NULL);
	snprintf(text + off, sizeof(text) - off, ",/x");
	check_opts(text, NULL, -EINVAL, "t.list:1: more than 64 items in "
	    "paths=\n", NULL);

	off = (size_t)snprintf(text, sizeof(text), "a.example inspect paths=/");
	memset(text + off, 'a', ALLOWLIST_PATTERN_MAX - 1);
	text[off + ALLOWLIST_PATTERN_MAX - 1] = '\0';
	check_opts(text, NULL, 0, "", NULL);
	strcat(text, "a");
	snprintf(want, sizeof(want), "t.list:1: path pattern '/%.100s...' is "
	    "longer than 1024 bytes\n", text + off);
	check_opts(text, NULL, -EINVAL, want, NULL);
}

/* A policy with every kind of entry, and what the matcher hands on. */
static void
test_decisions(void **state)
{
	static const char store[] = "# tokens\ngithub-token=Bearer "
	    MARK "-1\nother=" MARK "-2\n";
	static const char text[] =
	    "api.github.com:443  inspect  methods=POST,GET  "
	    "paths=/user,/repos/*  inject=Authorization:github-token\n"
	    "pypi.org inspect methods=GET paths=/simple/*\n"
	    "*.example.com inspect\n"
	    "www.example.com\n"
	    "plain.example\n"
	    "api.github.com:8443\n";
	struct allowlist_load_opts o = { 0 };
	struct allowlist_decision d;
	const struct allowlist *al;
	struct allowlist_set *set;
	char path[512];

	(void)state;
	put("store", store, sizeof(store) - 1, 0600, path, sizeof(path));
	o.secrets = path;
	check_opts(text, &o, 0, "t.list:4: warning: '*.example.com' (line 3) "
	    "also covers this, with other options; this entry's apply (not "
	    "inspected)\n", &set);
	al = allowlist_set_policy(set, NULL);

	assert_true(allowlist_match(al, "API.github.com.", 443, &d));
	assert_int_equal(d.line, 1);
	assert_non_null(d.inspect);
	assert_int_equal(d.inspect->nmethods, 2);
	assert_string_equal(d.inspect->methods[0], "GET");
	assert_string_equal(d.inspect->methods[1], "POST");
	assert_int_equal(d.inspect->npaths, 2);
	assert_string_equal(d.inspect->paths[0], "/repos/*");
	assert_string_equal(d.inspect->paths[1], "/user");
	assert_string_equal(d.inspect->inject_header, "Authorization");
	assert_string_equal(d.inspect->inject_secret, "github-token");
	assert_string_equal(d.inspect->inject_value, "Bearer " MARK "-1");
	assert_string_equal(d.inspect->text, "inspect methods=GET,POST "
	    "paths=/repos/*,/user inject=Authorization:github-token");
	assert_string_equal(d.entry, "api.github.com:443");

	/* Another entry for the same host, other port: a raw tunnel. */
	assert_true(allowlist_match(al, "api.github.com", 8443, &d));
	assert_int_equal(d.line, 6);
	assert_null(d.inspect);
	assert_false(allowlist_match(al, "api.github.com", 80, &d));
	assert_null(d.inspect);

	assert_true(allowlist_match(al, "pypi.org", 80, &d));
	assert_non_null(d.inspect);
	assert_int_equal(d.inspect->nmethods, 1);
	assert_int_equal(d.inspect->npaths, 1);
	assert_null(d.inspect->inject_header);
	assert_null(d.inspect->inject_secret);
	assert_null(d.inspect->inject_value);

	assert_true(allowlist_match(al, "x.y.example.com", 443, &d));
	assert_int_equal(d.line, 3);
	assert_non_null(d.inspect);
	assert_int_equal(d.inspect->nmethods, 0);
	assert_null(d.inspect->methods);
	assert_int_equal(d.inspect->npaths, 0);
	assert_null(d.inspect->paths);
	assert_string_equal(d.inspect->text, "inspect");

	/* The exact entry decides before the wildcard: not inspected. */
	assert_true(allowlist_match(al, "www.example.com", 443, &d));
	assert_int_equal(d.line, 4);
	assert_null(d.inspect);
	assert_true(allowlist_match(al, "plain.example", 443, &d));
	assert_null(d.inspect);
	/* Denials never carry options. */
	d.inspect = (void *)1;
	assert_false(allowlist_match(al, "example.com", 443, &d));
	assert_null(d.inspect);
	d.inspect = (void *)1;
	assert_false(allowlist_match(NULL, "pypi.org", 443, &d));
	assert_null(d.inspect);
	allowlist_set_free(set);

	/* The plain loaders leave options alone when there is no inject=. */
	assert_int_equal(allowlist_set_parse("t.list", "pypi.org inspect\n",
	    17, &set, NULL), 0);
	assert_true(allowlist_match(allowlist_set_policy(set, NULL),
	    "pypi.org", 443, &d));
	assert_non_null(d.inspect);
	allowlist_set_free(set);
}

static const struct allowlist_inspect any = { 0 };
static const char *const m_get_post[] = { "GET", "POST" };
static const char *const p_simple[] = { "/simple/*", "/user", "/" };
static const struct allowlist_inspect some = { .methods = m_get_post,
	.nmethods = 2, .paths = p_simple, .npaths = 3 };

static const struct irow {
	const struct allowlist_inspect *in;
	const char *method, *target;
	const char *reason;
} irows[] = {
	{ &some, "GET", "/simple/x", "allowed-by-entry" },
	{ &some, "POST", "/simple/x/y/z.whl", "allowed-by-entry" },
	{ &some, "GET", "/simple/", "allowed-by-entry" },
	{ &some, "GET", "/simple", "path-not-allowed" },
	{ &some, "GET", "/simplex", "path-not-allowed" },
	{ &some, "GET", "/user", "allowed-by-entry" },
	{ &some, "GET", "/user/", "path-not-allowed" },
	{ &some, "GET", "/users", "path-not-allowed" },
	{ &some, "GET", "/", "allowed-by-entry" },
	{ &some, "GET", "/?q=1", "allowed-by-entry" },
	{ &some, "GET", "/admin", "path-not-allowed" },
	/* The query is ignored, whatever it holds. */
	{ &some, "GET", "/user?x=1", "allowed-by-entry" },
	{ &some, "GET", "/user?x=/../admin&y=%2f", "allowed-by-entry" },
	{ &some, "GET", "/user?", "allowed-by-entry" },
	{ &some, "GET", "/admin?/user", "path-not-allowed" },
	{ &some, "GET", "/simple/x;v=1", "path-not-canonical" },
	{ &some, "GET", "/simple/x%3bv=1", "path-not-canonical" },
	{ &some, "GET", "/simple/x%3Bv=1", "path-not-canonical" },
	{ &some, "GET", "/simple/a;x/../../admin", "path-not-canonical" },
	/* Percent-encoded bytes above 0x7f: well-formed UTF-8 only. */
	{ &some, "GET", "/simple/caf%c3%a9", "allowed-by-entry" },
	{ &some, "GET", "/simple/%e2%82%ac", "allowed-by-entry" },
	{ &some, "GET", "/simple/%F0%9F%98%80", "allowed-by-entry" },
	{ &some, "GET", "/simple/%c0%ae%c0%ae/x", "path-not-canonical" },
	{ &some, "GET", "/simple/%c0%af", "path-not-canonical" },
	{ &some, "GET", "/simple/%c1%bf", "path-not-canonical" },
	{ &some, "GET", "/simple/%e0%80%ae", "path-not-canonical" },
	{ &some, "GET", "/simple/%f0%80%80%ae", "path-not-canonical" },
	{ &some, "GET", "/simple/%ed%a0%80", "path-not-canonical" },
	{ &some, "GET", "/simple/%f4%90%80%80", "path-not-canonical" },
	{ &some, "GET", "/simple/%f5%80%80%80", "path-not-canonical" },
	{ &some, "GET", "/simple/%80", "path-not-canonical" },
	{ &some, "GET", "/simple/%c3", "path-not-canonical" },
	{ &some, "GET", "/simple/%c3a", "path-not-canonical" },
	{ &some, "GET", "/simple/%c3%41", "path-not-canonical" },
	{ &some, "GET", "/simple/%e2%82", "path-not-canonical" },
	{ &some, "GET", "/simple/%c3%a", "path-not-canonical" },
	{ &some, "GET", "/simple/%ff", "path-not-canonical" },
	{ &some, "GET", "/simple/.hidden", "allowed-by-entry" },
	{ &some, "GET", "/simple/...", "allowed-by-entry" },
	{ &some, "GET", "/simple/a%41b", "allowed-by-entry" },
	{ &some, "GET", "/simple/a%20b", "allowed-by-entry" },
	/* Methods: exact and case-sensitive. */
	{ &some, "DELETE", "/user", "method-not-allowed" },
	{ &some, "get", "/user", "method-not-allowed" },
	{ &some, "GETX", "/user", "method-not-allowed" },
	{ &some, "", "/user", "method-not-allowed" },
	{ &some, NULL, "/user", "method-not-allowed" },
	{ &some, "DELETE", "/../x", "method-not-allowed" },
	/* Not canonical: refused before any pattern is tried. */
	{ &some, "GET", "/simple/../admin", "path-not-canonical" },
	{ &some, "GET", "/simple/%2e%2e/x", "path-not-canonical" },
	{ &some, "GET", "/simple/%2E%2e/x", "path-not-canonical" },
	{ &some, "GET", "/simple/.%2e/x", "path-not-canonical" },
	{ &some, "GET", "/simple/..", "path-not-canonical" },
	{ &some, "GET", "/simple/.", "path-not-canonical" },
	{ &some, "GET", "/simple/./x", "path-not-canonical" },
	{ &some, "GET", "/simple/..;/admin", "path-not-canonical" },
	{ &some, "GET", "/simple/;x/admin", "path-not-canonical" },
	{ &some, "GET", "/simple/;x", "path-not-canonical" },
	{ &some, "GET", "//x", "path-not-canonical" },
	{ &some, "GET", "/simple//x", "path-not-canonical" },
	{ &some, "GET", "/a%2fb", "path-not-canonical" },
	{ &some, "GET", "/simple/a%2Fb", "path-not-canonical" },
	{ &some, "GET", "/simple/a%5cb", "path-not-canonical" },
	{ &some, "GET", "/simple/a%00", "path-not-canonical" },
	{ &some, "GET", "/simple/a%", "path-not-canonical" },
	{ &some, "GET", "/simple/a%4", "path-not-canonical" },
	{ &some, "GET", "/simple/a%4?x", "path-not-canonical" },
	{ &some, "GET", "/simple/a%g1", "path-not-canonical" },
	{ &some, "GET", "/simple\\x", "path-not-canonical" },
	{ &some, "GET", "/simple/\\..\\admin", "path-not-canonical" },
	{ &some, "GET", "/simple/a b", "path-not-canonical" },
	{ &some, "GET", "/simple/a\tb", "path-not-canonical" },
	{ &some, "GET", "/simple/\x80", "path-not-canonical" },
	{ &some, "GET", "/simple/x#frag", "path-not-canonical" },
	{ &some, "GET", "http://pypi.org/simple/x", "path-not-canonical" },
	{ &some, "GET", "HTTPS://pypi.org/user", "path-not-canonical" },
	{ &some, "GET", "pypi.org:443", "path-not-canonical" },
	{ &some, "GET", "", "path-not-canonical" },
	{ &some, "GET", "*", "path-not-canonical" },
	{ &some, "GET", "?x", "path-not-canonical" },
	{ &some, "GET", NULL, "path-not-canonical" },
	/* Any method and path: the form is still checked. */
	{ &any, "BREW", "/anything/at/all", "allowed-by-entry" },
	{ &any, "OPTIONS", "*", "path-not-canonical" },
	{ &any, "CONNECT", "pypi.org:443", "path-not-canonical" },
	{ &any, "GET", "/a/../b", "path-not-canonical" },
	{ &any, "", "/", "method-not-allowed" },
	{ NULL, "GET", "/", "path-not-allowed" },
};

static void
test_check(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(irows) / sizeof(irows[0]); i++) {
		const struct irow *r = &irows[i];
		const char *why = NULL;
		bool ok = allowlist_inspect_check(r->in, r->method, r->target,
		    &why);
		if (why == NULL || strcmp(why, r->reason) != 0 ||
		    ok != (strcmp(r->reason, "allowed-by-entry") == 0))
			fail_msg("row %zu: %s %s: got %d %s, want %s", i,
			    r->method ? r->method : "(null)",
			    r->target ? r->target : "(null)", ok,
			    why ? why : "(null)", r->reason);
		/* reason is optional */
		assert_int_equal(allowlist_inspect_check(r->in, r->method,
		    r->target, NULL), ok);
	}
}

/* Patterns loaded from a file check like hand-built ones. */
static void
test_check_loaded(void **state)
{
	static const char text[] = "a.example inspect methods=GET "
	    "paths=/v1/models,/v1/files/*,/a/.*\n";
	struct allowlist_decision d;
	struct allowlist_set *set;
	const char *why;

	(void)state;
	check_opts(text, NULL, 0, "", &set);
	assert_true(allowlist_match(allowlist_set_policy(set, NULL),
	    "a.example", 443, &d));
	assert_true(allowlist_inspect_check(d.inspect, "GET", "/v1/models",
	    &why));
	assert_true(allowlist_inspect_check(d.inspect, "GET",
	    "/v1/files/f-1?purpose=x", &why));
	assert_true(allowlist_inspect_check(d.inspect, "GET", "/a/.env", &why));
	assert_false(allowlist_inspect_check(d.inspect, "GET", "/a/..", &why));
	assert_string_equal(why, "path-not-canonical");
	assert_false(allowlist_inspect_check(d.inspect, "GET",
	    "/v1/models/x", &why));
	assert_string_equal(why, "path-not-allowed");
	assert_false(allowlist_inspect_check(d.inspect, "POST", "/v1/models",
	    &why));
	assert_string_equal(why, "method-not-allowed");
	allowlist_set_free(set);
}

/* `raw`: the deciding entry says so in the decision, never with inspect
 * options; a wildcard's raw does not leak onto an exact entry without
 * it; check counts raw entries apart from inspected ones. */
static void
test_raw(void **state)
{
	static const char text[] = "git.example:22 raw\n"
	    "*.db.example:5432 raw\n"
	    "api.db.example:5432\n"
	    "web.example inspect\n";
	const struct allowlist *al;
	struct allowlist_decision d;
	struct allowlist_set *set;

	(void)state;
	check_opts(text, NULL, 0, "t.list:3: warning: '*.db.example:5432' "
	    "(line 2) also covers this, with other options; this entry's "
	    "apply (not inspected)\n", &set);
	al = allowlist_set_policy(set, NULL);
	assert_true(allowlist_match(al, "git.example", 22, &d));
	assert_true(d.raw);
	assert_null(d.inspect);
	assert_false(allowlist_match(al, "git.example", 443, &d));
	assert_false(d.raw);
	assert_true(allowlist_match(al, "x.db.example", 5432, &d));
	assert_true(d.raw);
	assert_true(allowlist_match(al, "api.db.example", 5432, &d));
	assert_false(d.raw);
	assert_true(allowlist_match(al, "web.example", 443, &d));
	assert_false(d.raw);
	assert_non_null(d.inspect);
	assert_false(allowlist_match(al, "other.example", 22, &d));
	assert_false(d.raw);
	assert_int_equal(allowlist_raw_count(al), 2);
	assert_int_equal(allowlist_inspect_count(al), 1);
	allowlist_set_free(set);
}

/* The override headers: one row each, any case; near misses are not. */
static void
test_override_headers(void **state)
{
	static const struct {
		const char *name;
		bool override;
	} rows[] = {
		{ "X-HTTP-Method-Override", true },
		{ "x-http-method-override", true },
		{ "X-HTTP-Method", true },
		{ "X-Method-Override", true },
		{ "X-Original-URL", true },
		{ "x-original-url", true },
		{ "X-Rewrite-URL", true },
		{ "X-Original-Method", true },
		{ "X-HTTP-Method-Overrid", false },
		{ "X-HTTP-Method-Override2", false },
		{ "X-Original", false },
		{ "X-Forwarded-For", false },
		{ "Authorization", false },
		{ "", false },
	};
	struct allowlist_inspect bounded = { .npaths = 1 }, open = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		if (allowlist_override_header(rows[i].name,
		    strlen(rows[i].name)) != rows[i].override)
			fail_msg("row %zu: %s: want %d", i, rows[i].name,
			    rows[i].override);
	/* The length is the caller's: a prefix of a name is judged as
	 * itself ("X-HTTP-Method" is one, "X-HTTP" is not). */
	assert_true(allowlist_override_header("X-HTTP-Method-Override", 13));
	assert_false(allowlist_override_header("X-HTTP-Method-Override", 6));
	assert_true(allowlist_inspect_bounded(&bounded));
	bounded.npaths = 0;
	bounded.nmethods = 2;
	assert_true(allowlist_inspect_bounded(&bounded));
	assert_false(allowlist_inspect_bounded(&open));
	assert_false(allowlist_inspect_bounded(NULL));
}

/* Secrets file: every mistake at SECRETS:LINE, never quoting a value. */
static void
test_secrets_file(void **state)
{
	static const struct {
		const char *store;
		const char *diag;	/* after "PATH:" */
	} rows[] = {
		{ "k=\n", "1: secret 'k': its value is empty" },
		{ "x=1\nBearer " MARK "\n", "2: not a NAME=VALUE line (or a "
		  "'#' comment)" },
		{ "Bearer " MARK "=x\n", "1: the text before '=' is not a "
		  "secret name (1-64 letters, digits, '.', '_' or '-', not "
		  "starting with '.', nothing before it)" },
		{ " k=" MARK "\n", "1: the text before '=' is not a secret "
		  "name (1-64 letters, digits, '.', '_' or '-', not starting "
		  "with '.', nothing before it)" },
		{ "k=" MARK "\n\nk=" MARK "2\n", "3: secret 'k' is defined "
		  "again (first on line 1)" },
		{ "k= " MARK "\n", "1: secret 'k': its value starts or ends "
		  "with a space or tab" },
		{ "k=" MARK "\t\n", "1: secret 'k': its value starts or ends "
		  "with a space or tab" },
		{ "k=" MARK "\rX\n", "1: secret 'k': its value holds a CR or "
		  "LF (which would end the header)" },
		{ "k=" MARK "\x01\n", "1: secret 'k': its value holds a "
		  "control byte" },
		{ "k=" MARK "\x7f\n", "1: secret 'k': its value holds a "
		  "control byte" },
	};
	char path[512], want[1024];

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct allowlist_load_opts o = { 0 };
		put("s.env", rows[i].store, strlen(rows[i].store), 0600, path,
		    sizeof(path));
		o.secrets = path;
		snprintf(want, sizeof(want), "%s:%s\n", path, rows[i].diag);
		check_opts("a.example inspect inject=X-Key:k\n", &o, -EINVAL,
		    want, NULL);
	}
}

/* Values: NUL inside, CRLF endings, tabs inside, the 8 KiB limit. */
static void
test_secrets_values(void **state)
{
	struct allowlist_load_opts o = { 0 };
	struct allowlist_decision d;
	struct allowlist_set *set;
	char path[512], want[1024], *big;
	static const char nul[] = "k=" MARK "\0x\n";
	static const char crlf[] = "k=" MARK "\tA b\r\nj=#not a comment\r\n";

	(void)state;
	o.secrets = path;
	put("nul.env", nul, sizeof(nul) - 1, 0600, path, sizeof(path));
	snprintf(want, sizeof(want), "%s:1: secret 'k': its value holds a NUL "
	    "byte\n", path);
	check_opts("a.example inspect inject=X-Key:k\n", &o, -EINVAL, want,
	    NULL);

	put("crlf.env", crlf, sizeof(crlf) - 1, 0600, path, sizeof(path));
	check_opts("a.example inspect inject=X-Key:k\n"
	    "b.example inspect inject=X-Other:j\n", &o, 0, "", &set);
	assert_true(allowlist_match(allowlist_set_policy(set, NULL),
	    "a.example", 443, &d));
	assert_string_equal(d.inspect->inject_value, MARK "\tA b");
	assert_true(allowlist_match(allowlist_set_policy(set, NULL),
	    "b.example", 443, &d));
	assert_string_equal(d.inspect->inject_value, "#not a comment");
	allowlist_set_free(set);

	big = malloc(ALLOWLIST_SECRET_MAX + 16);
	assert_non_null(big);
	memcpy(big, "k=", 2);
	memset(big + 2, 'x', ALLOWLIST_SECRET_MAX);
	memcpy(big + 2, MARK, strlen(MARK));
	put("big.env", big, ALLOWLIST_SECRET_MAX + 2, 0600, path,
	    sizeof(path));
	check_opts("a.example inspect inject=X-Key:k\n", &o, 0, "", NULL);
	big[ALLOWLIST_SECRET_MAX + 2] = 'x';
	put("big.env", big, ALLOWLIST_SECRET_MAX + 3, 0600, path,
	    sizeof(path));
	snprintf(want, sizeof(want), "%s:1: secret 'k': its value is longer "
	    "than 8192 bytes\n", path);
	check_opts("a.example inspect inject=X-Key:k\n", &o, -EINVAL, want,
	    NULL);
	free(big);
}

/* Directory store: one file per secret, read on demand. */
static void
test_secrets_dir(void **state)
{
	struct allowlist_load_opts o = { 0 };
	struct allowlist_decision d;
	struct allowlist_set *set;
	char dir[256], path[512], want[4096], *big;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/sdir", tmpdir);
	assert_int_equal(util_mkdir_p(dir, 0700), 0);
	o.secrets = dir;
	put("sdir/github-token", "Bearer " MARK "\n", 14, 0600, path,
	    sizeof(path));
	put("sdir/crlf", MARK "\r\n", 8, 0400, path, sizeof(path));
	put("sdir/plain", MARK, 6, 0600, path, sizeof(path));
	check_opts("a.example inspect inject=Authorization:github-token\n"
	    "b.example inspect inject=X-A:crlf\n"
	    "c.example inspect inject=X-B:plain\n"
	    "d.example inspect inject=X-C:plain\n", &o, 0, "", &set);
	assert_true(allowlist_match(allowlist_set_policy(set, NULL),
	    "a.example", 443, &d));
	assert_string_equal(d.inspect->inject_value, "Bearer " MARK);
	assert_true(allowlist_match(allowlist_set_policy(set, NULL),
	    "b.example", 443, &d));
	assert_string_equal(d.inspect->inject_value, MARK);
	assert_true(allowlist_match(allowlist_set_policy(set, NULL),
	    "d.example", 443, &d));
	assert_string_equal(d.inspect->inject_value, MARK);
	allowlist_set_free(set);

	/* Bad files, each at the line of the entry naming it. */
	put("sdir/two-lines", MARK "\n\n", 8, 0600, path, sizeof(path));
	put("sdir/empty", "\n", 1, 0600, path, sizeof(path));
	put("sdir/open", MARK, 6, 0640, path, sizeof(path));
	snprintf(path, sizeof(path), "%s/sdir/subdir", tmpdir);
	assert_int_equal(util_mkdir_p(path, 0700), 0);
	big = malloc(ALLOWLIST_SECRET_MAX + 2);
	assert_non_null(big);
	memset(big, 'x', ALLOWLIST_SECRET_MAX + 2);
	big[ALLOWLIST_SECRET_MAX] = '\r';
	big[ALLOWLIST_SECRET_MAX + 1] = '\n';
	put("sdir/max", big, ALLOWLIST_SECRET_MAX + 2, 0600, path,
	    sizeof(path));
	big[ALLOWLIST_SECRET_MAX] = 'x';
	put("sdir/big", big, ALLOWLIST_SECRET_MAX + 2, 0600, path,
	    sizeof(path));
	free(big);
	snprintf(want, sizeof(want),
	    "t.list:1: secret 'two-lines' in %s: its value holds a CR or LF "
	    "(which would end the header)\n"
	    "t.list:2: secret 'empty' in %s: its value is empty\n"
	    "t.list:3: secret 'open': %s/open: mode 0640 gives group or other "
	    "access: secrets must be root-only (chmod go= %s/open)\n"
	    "t.list:4: secret 'subdir': %s/subdir is not a regular file\n"
	    "t.list:5: secret 'big' in %s: its value is longer than 8192 "
	    "bytes\n"
	    "t.list:6: no secret 'missing' in %s\n",
	    dir, dir, dir, dir, dir, dir, dir);
	check_opts("a.example inspect inject=X-A:two-lines\n"
	    "b.example inspect inject=X-A:empty\n"
	    "c.example inspect inject=X-A:open\n"
	    "d.example inspect inject=X-A:subdir\n"
	    "e.example inspect inject=X-A:big\n"
	    "f.example inspect inject=X-A:missing\n"
	    "g.example inspect inject=X-A:max\n", &o, -EINVAL, want, NULL);
}

/* The store itself: root-only, a file or a directory, read only when an
 * inject= needs it, reported once. */
static void
test_secrets_store(void **state)
{
	struct allowlist_load_opts o = { 0 };
	struct allowlist_diag diag;
	struct allowlist_set *set;
	char path[512], want[2048], list[512];
	static const char two[] = "a.example inspect inject=X-A:k\n"
	    "b.example inspect inject=X-A:k\n";

	(void)state;
	o.secrets = path;
	put("open.env", "k=" MARK "\n", 9, 0644, path, sizeof(path));
	snprintf(want, sizeof(want), "%s: mode 0644 gives group or other "
	    "access: secrets must be root-only (chmod go= %s)\n", path, path);
	check_opts(two, &o, -EINVAL, want, NULL);
	put("grp.env", "k=" MARK "\n", 9, 0604, path, sizeof(path));
	snprintf(want, sizeof(want), "%s: mode 0604 gives group or other "
	    "access: secrets must be root-only (chmod go= %s)\n", path, path);
	check_opts(two, &o, -EINVAL, want, NULL);

	snprintf(path, sizeof(path), "%s/opendir", tmpdir);
	assert_int_equal(util_mkdir_p(path, 0700), 0);
	assert_int_equal(chmod(path, 0750), 0);
	snprintf(want, sizeof(want), "%s: mode 0750 gives group or other "
	    "access: secrets must be root-only (chmod go= %s)\n", path, path);
	check_opts(two, &o, -EINVAL, want, NULL);

	snprintf(path, sizeof(path), "%s/nowhere", tmpdir);
	snprintf(want, sizeof(want), "%s: cannot read the secrets store: No "
	    "such file or directory\n", path);
	check_opts(two, &o, -EINVAL, want, NULL);
	/* Without inject= the store is not read at all. */
	check_opts("a.example inspect methods=GET\n", &o, 0, "", NULL);
	/* Not checked either: the caller said so (cordon allowlist check). */
	o.secrets_unverified = true;
	check_opts(two, &o, 0, "", &set);
	{
		struct allowlist_decision d;
		assert_true(allowlist_match(allowlist_set_policy(set, NULL),
		    "a.example", 443, &d));
		assert_string_equal(d.inspect->inject_secret, "k");
		assert_null(d.inspect->inject_value);
	}
	allowlist_set_free(set);
	o.secrets_unverified = false;

	snprintf(path, sizeof(path), "/dev/null");
	check_opts(two, &o, -EINVAL, "/dev/null: the secrets store is not a "
	    "regular file or a directory\n", NULL);

	/* A policy directory: the store's error once, for every file. */
	snprintf(list, sizeof(list), "%s/pols", tmpdir);
	assert_int_equal(util_mkdir_p(list, 0700), 0);
	put("pols/a.list", two, sizeof(two) - 1, 0600, path, sizeof(path));
	put("pols/b.list", two, sizeof(two) - 1, 0600, path, sizeof(path));
	put("open.env", "k=" MARK "\n", 9, 0644, path, sizeof(path));
	allowlist_diag_init(&diag);
	assert_int_equal(allowlist_set_load_opts(list, &o, &set, &diag),
	    -EINVAL);
	assert_null(set);
	assert_int_equal(diag.errors, 1);
	allowlist_diag_cleanup(&diag);
	assert_int_equal(chmod(path, 0600), 0);
	allowlist_diag_init(&diag);
	assert_int_equal(allowlist_set_load_opts(list, &o, &set, &diag), 0);
	assert_int_equal(diag.count, 0);
	assert_int_equal(allowlist_set_count(set), 2);
	allowlist_set_free(set);
	allowlist_diag_cleanup(&diag);
}

/* Owned by someone else: refused (needs root to make such a file). */
static void
test_secrets_owner(void **state)
{
	struct allowlist_load_opts o = { 0 };
	char path[512], want[1024];

	(void)state;
	if (geteuid() != 0)
		skip();
	put("other.env", "k=" MARK "\n", 9, 0600, path, sizeof(path));
	assert_int_equal(chown(path, 65534, 65534), 0);
	o.secrets = path;
	snprintf(want, sizeof(want), "%s: owned by uid 65534: secrets must be "
	    "owned by root (or by uid 0, which loads them)\n", path);
	check_opts("a.example inspect inject=X-A:k\n", &o, -EINVAL, want,
	    NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_broken),
		cmocka_unit_test(test_reserved_headers),
		cmocka_unit_test(test_warnings),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_decisions),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_check_loaded),
		cmocka_unit_test(test_raw),
		cmocka_unit_test(test_override_headers),
		cmocka_unit_test(test_secrets_file),
		cmocka_unit_test(test_secrets_values),
		cmocka_unit_test(test_secrets_dir),
		cmocka_unit_test(test_secrets_store),
		cmocka_unit_test(test_secrets_owner),
	};
	return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
