/*
 * Suggest tests: exact lines with the ports seen, wildcards for three or
 * more siblings only where the loader takes them without a warning
 * (never over a public suffix: *.github.io, *.co.uk, *.s3.amazonaws.com),
 * internal names and addresses left out, DNS-only names as comments, and
 * the whole output loading as an allowlist that allows exactly what was
 * denied.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "allowlist/suggest.h"

/* 10/8 is what the test's proxy refuses. */
static bool
internal10(const struct allowlist_host *h)
{
	return h->family == AF_INET && h->addr[0] == 10;
}

static char *
render(struct allowlist_suggest *s, bool wildcards, int *entries)
{
	char *out = NULL;

	*entries = allowlist_suggest_render(s, wildcards, internal10, "test",
	    &out);
	assert_true(*entries >= 0);
	assert_non_null(out);
	return out;
}

/* out loads with no error and no warning. */
static struct allowlist_set *
load(const char *out)
{
	struct allowlist_set *set = NULL;
	struct allowlist_diag diag;

	allowlist_diag_init(&diag);
	assert_int_equal(allowlist_set_parse("s.list", out, strlen(out), &set,
	    &diag), 0);
	for (size_t i = 0; i < diag.count; i++)
		print_error("%s\n", diag.items[i].text);
	assert_int_equal(diag.count, 0);
	allowlist_diag_cleanup(&diag);
	return set;
}

static bool
allows(const struct allowlist_set *set, const char *host, long port)
{
	return allowlist_match(allowlist_set_policy(set, "default"), host, port,
	    NULL);
}

static void
test_exact(void **state)
{
	struct allowlist_suggest *s = allowlist_suggest_new();
	struct allowlist_set *set;
	char *out;
	int n;

	(void)state;
	assert_int_equal(allowlist_suggest_add(s, "api.github.com", 443, 2,
	    "first\nsecond"), 0);
	assert_int_equal(allowlist_suggest_add(s, "API.GitHub.com.", 8443, 1,
	    NULL), 0);
	assert_int_equal(allowlist_suggest_add(s, "pypi.org", 8080, 1, NULL),
	    0);
	assert_int_equal(allowlist_suggest_add(s, "2001:db8::5", 443, 1, NULL),
	    0);
	assert_int_equal(allowlist_suggest_add(s, "10.1.2.3", 443, 1, NULL), 0);
	assert_int_equal(allowlist_suggest_add(s, "db.internal", 5432, 1, NULL),
	    0);
	assert_int_equal(allowlist_suggest_add(s, "localhost", 80, 1, NULL), 0);
	assert_int_equal(allowlist_suggest_add(s, "bad host!", 80, 1, NULL), 0);
	assert_int_equal(allowlist_suggest_add(s, "dns.example.net", 0, 3,
	    NULL), 0);
	out = render(s, false, &n);
	assert_int_equal(n, 3);
	assert_non_null(strstr(out, "\napi.github.com:443  # 2 denied, e.g. "
	    "first?second\n"));
	assert_non_null(strstr(out, "\n[2001:db8::5]:443  #"));
	assert_non_null(strstr(out, "\npypi.org:8080  #"));
	assert_non_null(strstr(out, "# not suggested: 10.1.2.3 (an internal "
	    "address"));
	assert_non_null(strstr(out, "# not suggested: db.internal (an internal "
	    "name"));
	assert_non_null(strstr(out, "# not suggested: localhost"));
	assert_non_null(strstr(out, "# not suggested: a host that is not "
	    "valid (bad host!)"));
	assert_non_null(strstr(out, "# dns.example.net: asked for only by "
	    "DNS"));
	set = load(out);
	/* Exactly the ports seen: not the default 80 and 443. */
	assert_false(allows(set, "pypi.org", 443));
	assert_true(allows(set, "pypi.org", 8080));
	assert_true(allows(set, "2001:db8::5", 443));
	assert_false(allows(set, "10.1.2.3", 443));
	assert_false(allows(set, "dns.example.net", 443));
	allowlist_set_free(set);
	free(out);
	allowlist_suggest_free(s);
}

static void
test_wildcards(void **state)
{
	static const char *const siblings[][3] = {
		{ "a.cdn.example.com", "b.cdn.example.com",
		  "c.cdn.example.com" },
		{ "x.github.io", "y.github.io", "z.github.io" },
		{ "a.co.uk", "b.co.uk", "c.co.uk" },
		{ "a.s3.amazonaws.com", "b.s3.amazonaws.com",
		  "c.s3.amazonaws.com" },
	};
	struct allowlist_suggest *s = allowlist_suggest_new();
	struct allowlist_set *set;
	char *out;
	int n;

	(void)state;
	for (size_t g = 0; g < 4; g++)
		for (size_t i = 0; i < 3; i++)
			assert_int_equal(allowlist_suggest_add(s,
			    siblings[g][i], i == 2 ? 8443 : 443, 1, NULL), 0);
	/* Two siblings are not enough. */
	assert_int_equal(allowlist_suggest_add(s, "one.two.example.org", 443,
	    1, NULL), 0);
	assert_int_equal(allowlist_suggest_add(s, "two.two.example.org", 443,
	    1, NULL), 0);
	out = render(s, true, &n);
	assert_non_null(strstr(out, "\n*.cdn.example.com:443,8443  # 3 denied "
	    "for 3 names: a.cdn.example.com b.cdn.example.com "
	    "c.cdn.example.com\n"));
	assert_null(strstr(out, "\n*.github.io"));
	assert_null(strstr(out, "\n*.co.uk"));
	assert_null(strstr(out, "\n*.s3.amazonaws.com"));
	assert_null(strstr(out, "\n*.two.example.org"));
	assert_non_null(strstr(out, "\nx.github.io:443"));
	assert_non_null(strstr(out, "\na.co.uk:443"));
	assert_non_null(strstr(out, "\nb.s3.amazonaws.com:443"));
	assert_non_null(strstr(out, "\none.two.example.org:443"));
	/* 1 wildcard + 3 * 3 exact + 2 exact. */
	assert_int_equal(n, 12);
	set = load(out);
	for (size_t g = 0; g < 4; g++)
		for (size_t i = 0; i < 3; i++)
			assert_true(allows(set, siblings[g][i],
			    i == 2 ? 8443 : 443));
	/* The wildcard does not take its parent, nor other suffixes. */
	assert_false(allows(set, "cdn.example.com", 443));
	assert_false(allows(set, "evil.github.io", 443));
	assert_false(allows(set, "d.co.uk", 443));
	allowlist_set_free(set);
	free(out);

	/* Without --wildcards: none. */
	out = render(s, false, &n);
	assert_null(strstr(out, "\n*."));
	assert_int_equal(n, 14);
	free(out);
	allowlist_suggest_free(s);
}

/* A wildcard takes names deeper below it, and a narrower wildcard: they
 * are not written again (the loader would warn that they are covered). */
static void
test_covered(void **state)
{
	static const char *const hosts[] = {
		"a.cdn.example.com", "b.cdn.example.com", "c.cdn.example.com",
		"x.deep.cdn.example.com",
		"p.a.cdn.example.com", "q.a.cdn.example.com",
		"r.a.cdn.example.com",
	};
	struct allowlist_suggest *s = allowlist_suggest_new();
	struct allowlist_set *set;
	char *out;
	int n;

	(void)state;
	for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++)
		assert_int_equal(allowlist_suggest_add(s, hosts[i], 443, 1,
		    NULL), 0);
	/* Port 22 for one deeper name: not covered, written exactly. */
	assert_int_equal(allowlist_suggest_add(s, "y.deep.cdn.example.com", 22,
	    1, NULL), 0);
	out = render(s, true, &n);
	assert_int_equal(n, 2);
	assert_non_null(strstr(out, "\n*.cdn.example.com:443  #"));
	assert_non_null(strstr(out, "# 3 names under a.cdn.example.com: "
	    "allowed by a wildcard above\n"));
	assert_non_null(strstr(out, "# x.deep.cdn.example.com: allowed by a "
	    "wildcard above\n"));
	assert_non_null(strstr(out, "\ny.deep.cdn.example.com:22  #"));
	set = load(out);	/* no warning */
	for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++)
		assert_true(allows(set, hosts[i], 443));
	assert_true(allows(set, "y.deep.cdn.example.com", 22));
	allowlist_set_free(set);
	free(out);
	allowlist_suggest_free(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact),
		cmocka_unit_test(test_wildcards),
		cmocka_unit_test(test_covered),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
