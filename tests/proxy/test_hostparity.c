/*
 * One host parser (issue: two parsers disagreed): for every host of a
 * table, `cordon allowlist explain FILE HOST:PORT` and a live cordon-proxy
 * given the same FILE must give the same answer. The proxy's answer is the
 * X-Cordon-Error of its refusal (400 bad-host is explain's invalid-host,
 * 403 not-on-policy is explain's no-match), or "allow" when the request got
 * past the policy (a 200, or a 502 from the stub resolver's NXDOMAIN).
 * The public addresses on the list are asked for only on ports the list
 * does not allow, so the proxy never connects outside loopback; loopback
 * rows use 127.0.0.3 (127.0.0.1 is the proxy's own listener, which it
 * names address-self, a fact explain cannot know). Explain's answer is
 * "allow" or the reason in parentheses on its first line.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cbuf.h"
#include "common/proc.h"
#include "common/util.h"
#include "proxy_fixture.h"

static const char list_text[] =
    "example.com\n"
    "*.example.org\n"
    "!deny.example.org\n"
    "api.example.net:8443\n"
    "EXAMPLE.info.\n"
    "xn--bcher-kva.example\n"
    "a-b.example.com\n"
    "93.184.216.34:8443\n"
    "[2606:2800:220:1::1]:8443\n"
    "10.0.0.5\n"
    "169.254.169.254\n"
    "localhost:3000\n"
    "metadata.google.internal\n"
    "*.user.github.io\n";

/* Hosts as a client writes them in a CONNECT (port appended). */
static const struct {
	const char *host;
	unsigned port;
} rows[] = {
	/* names on the list, in every spelling */
	{ "example.com", 443 }, { "EXAMPLE.COM", 443 }, { "example.com.", 443 },
	{ "Example.Com.", 80 }, { "example.com", 8443 },
	{ "a.example.org", 443 }, { "a.b.c.example.org", 443 },
	{ "example.org", 443 }, { "deny.example.org", 443 },
	{ "x.deny.example.org", 443 }, { "api.example.net", 8443 },
	{ "api.example.net", 443 }, { "example.info", 443 },
	{ "xn--bcher-kva.example", 443 }, { "a-b.example.com", 443 },
	{ "a.user.github.io", 443 }, { "user.github.io", 443 },
	{ "github.io", 443 },
	/* names off the list, and names that are not names */
	{ "example.net", 443 }, { "evilexample.com", 443 },
	{ "example.com.evil.net", 443 }, { "-a.example.com", 443 },
	{ "a-.example.com", 443 }, { "a..example.com", 443 },
	{ "_dmarc.example.com", 443 }, { "under_score.example.org", 443 },
	{ "a%2eexample.com", 443 }, { "a.0x", 443 }, { "a.0x1g", 443 },
	{ "1.2.3.4a", 443 }, { "foo.1e", 443 }, { "3com.com", 443 },
	{ "x.", 443 }, { "example.com..", 443 },
	/* internal by their shape */
	{ "localhost", 3000 }, { "LOCALHOST.", 3000 }, { "a.localhost", 443 },
	{ "metadata.google.internal", 443 }, { "intranet", 443 },
	{ "printer.local", 443 }, { "router.home.arpa", 443 },
	{ "x.onion", 443 }, { "evil.test", 443 },
	/* IPv4 literals in every inet_aton form */
	{ "93.184.216.34", 443 }, { "93.184.216.34", 80 },
	{ "1572395042", 443 }, { "0x5db8d822", 443 },
	{ "93.184.55330", 443 }, { "0135.0270.0330.042", 443 },
	{ "93.184.216.034", 443 }, { "93.184.216.08", 443 },
	{ "93.184.216.256", 443 }, { "1.2.3.4.5", 443 }, { "1.2.3", 443 },
	{ "10.0.0.5", 443 }, { "10.5", 443 }, { "167772165", 443 },
	{ "127.0.0.3", 443 }, { "127.3", 443 }, { "0x7f.3", 443 },
	{ "0", 443 }, { "0.0.0.0", 443 },
	{ "169.254.169.254", 443 }, { "2852039166", 80 },
	{ "0xA9FEA9FE", 80 }, { "0251.0376.0251.0376", 80 },
	{ "169.254.43518", 80 }, { "100.64.0.1", 443 },
	{ "192.168.1.1", 443 }, { "224.0.0.1", 443 },
	{ "255.255.255.255", 443 }, { "203.0.113.7", 443 },
	/* IPv6 literals */
	{ "[2606:2800:220:1::1]", 443 },
	{ "[2606:2800:0220:0001:0:0:0:1]", 443 },
	{ "[::ffff:127.0.0.3]", 443 }, { "[::]", 443 },
	{ "[::ffff:169.254.169.254]", 443 }, { "[::ffff:a9fe:a9fe]", 443 },
	{ "[::ffff:93.184.216.34]", 443 }, { "[fd00:ec2::254]", 443 },
	{ "[fe80::1]", 443 }, { "[64:ff9b::a9fe:a9fe]", 443 },
	{ "[2002:a9fe:a9fe::]", 443 }, { "[fe80::1%25eth0]", 443 },
	{ "[2001:db8::1", 443 }, { "[1.2.3.4]", 443 }, { "[]", 443 },
};

static char dir[] = "/tmp/cordon-hostparity-XXXXXX";
static char listpath[300], cfgpath[300];

/* Explain's answer: "allow", or the reason in parentheses on its first
 * line (the proxy's own refusal comes first when it has one). */
static void
explain(const char *authority, char *out, size_t len)
{
	const char *root = getenv("CORDON_BUILD_ROOT");
	char bin[512], cfgenv[400], *nl, *open, *close;
	const char *argv[] = { bin, "allowlist", "explain", listpath,
	    authority, "--secrets", "", NULL };
	const char *envp[] = { cfgenv, "PATH=/usr/bin:/bin", NULL };
	struct proc_opts o = { .argv = argv, .envp = envp,
	    .stdout_max = 8192, .stderr_max = 8192 };
	struct proc_result res;
	const char *text;

	assert_non_null(root);
	snprintf(bin, sizeof(bin), "%s/cordon", root);
	snprintf(cfgenv, sizeof(cfgenv), "CORDON_CONFIG=%s", cfgpath);
	assert_int_equal(proc_run(&o, 20000, &res), 0);
	text = cbuf_data(res.out);
	if (res.exit_code != 0 && res.exit_code != 1)
		fail_msg("explain %s: exit %d\n%s%s", authority, res.exit_code,
		    text, cbuf_data(res.err));
	if (strncmp(text, "allow ", 6) == 0 && res.exit_code == 0) {
		snprintf(out, len, "allow");
	} else {
		nl = strchr(text, '\n');
		open = strchr(text, '(');
		close = open != NULL ? strchr(open, ')') : NULL;
		if (res.exit_code != 1 || open == NULL || close == NULL ||
		    (nl != NULL && open > nl))
			fail_msg("explain %s: exit %d, cannot read:\n%s",
			    authority, res.exit_code, text);
		snprintf(out, len, "%.*s", (int)(close - open - 1), open + 1);
	}
	proc_result_cleanup(&res);
}

/* The proxy's answer, in explain's words. */
static void
proxy_answer(struct px *p, const char *authority, char *out, size_t len)
{
	static const char *const policy_reasons[] = { "denied-by-entry",
	    "port-not-allowed", "wildcard-crosses-public-suffix",
	    "internal-name" };
	char head[8192], reason[128] = "";
	const char *h;
	int st, fd;

	fd = px_connect(p, authority, &st, head, sizeof(head));
	if (fd >= 0)
		close(fd);
	h = strstr(head, "X-Cordon-Error: ");
	if (h != NULL)
		snprintf(reason, sizeof(reason), "%.*s", (int)strcspn(h + 16,
		    "\r\n"), h + 16);
	if (st == 200 || (st == 502 && strncmp(reason, "dns-", 4) == 0)) {
		snprintf(out, len, "allow");
	} else if (st == 400 && (strcmp(reason, "bad-host") == 0 ||
	    strcmp(reason, "malformed-request") == 0)) {
		/* malformed-request: an authority the request line's
		 * parser cannot split ("[2001:db8::1:443"). */
		snprintf(out, len, "invalid-host");
	} else if (st == 400 && strcmp(reason, "bad-port") == 0) {
		snprintf(out, len, "invalid-port");
	} else if (st == 403 && strncmp(reason, "not-on-policy ", 14) == 0) {
		snprintf(out, len, "no-match");
	} else if (st == 403 && strncmp(reason, "address-", 8) == 0) {
		snprintf(out, len, "%s", reason);
	} else {
		for (size_t i = 0; i < sizeof(policy_reasons) /
		    sizeof(policy_reasons[0]); i++)
			if (st == 403 && strcmp(reason, policy_reasons[i]) == 0) {
				snprintf(out, len, "%s", reason);
				return;
			}
		fail_msg("CONNECT %s: unexpected answer %d:\n%s", authority, st,
		    head);
	}
}

static void
test_same_answer(void **state)
{
	char authority[300], a[128], b[128];
	unsigned allowed = 0, refused = 0, bad = 0;
	struct px p;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(listpath, sizeof(listpath), "%s/allow.list", dir);
	snprintf(cfgpath, sizeof(cfgpath), "%s/config.json", dir);
	f = fopen(cfgpath, "w");
	assert_non_null(f);
	fputs("{}", f);
	fclose(f);
	f = fopen(listpath, "w");
	assert_non_null(f);
	fputs(list_text, f);
	fclose(f);
	assert_true(sizeof(rows) / sizeof(rows[0]) >= 50);
	assert_int_equal(px_start(&p, list_text, NULL), 0);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		snprintf(authority, sizeof(authority), "%s:%u", rows[i].host,
		    rows[i].port);
		explain(authority, a, sizeof(a));
		proxy_answer(&p, authority, b, sizeof(b));
		if (strcmp(a, b) != 0) {
			fprintf(stderr, "DIFFER %s: explain %s, proxy %s\n",
			    authority, a, b);
			bad++;
		} else if (strcmp(a, "allow") == 0) {
			allowed++;
		} else {
			refused++;
		}
	}
	fprintf(stderr, "%zu hosts: %u allowed by both, %u refused by both "
	    "with the same reason, %u differ\n", sizeof(rows) / sizeof(rows[0]),
	    allowed, refused, bad);
	assert_int_equal(bad, 0);
	/* The table exercises both answers. */
	assert_true(allowed >= 10);
	assert_true(refused >= 30);
	assert_int_equal(px_stop(&p), 0);
	(void)util_rm_rf(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_answer),
	};

	return cmocka_run_group_tests(tests, fx_group_setup, fx_group_teardown);
}
