/*
 * `cordon allowlist check|explain` driven from outside: the built binary
 * is run (argv, no shell) in tests/allowlist/data and its exit code, stdout
 * and stderr are compared exactly.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/proc.h"

#define ARGS_MAX	8

#define PSL_WARNING \
	"psl.list:2: warning: '*.amazonaws.com' spans public suffixes such " \
	"as 's3.amazonaws.com': names registered under them are not allowed " \
	"by it (wildcard-crosses-public-suffix)\n"

static const struct crow {
	const char *args[ARGS_MAX];	/* after "cordon allowlist" */
	int code;
	const char *out;		/* exact stdout */
	const char *err;		/* exact stderr, or a prefix: */
	bool err_prefix;
} rows[] = {
	{ { "check", "good.list" }, 0,
	  "good.list: ok, default (6 entries)\n", "", false },
	{ { "check", "warn.list" }, 0,
	  "warn.list: ok, default (3 entries), 2 warnings\n",
	  "warn.list:3: warning: already covered by '*.example.com' (line 2)\n"
	  "warn.list:4: warning: duplicate of line 1\n", false },
	{ { "check", "broken.list" }, 1, "",
	  "broken.list:3: '*' alone would match every host; write "
	  "'*.example.com' for the subdomains of one domain\n"
	  "broken.list:4: '*.co.uk' would allow every name under the public "
	  "suffix 'co.uk'\n"
	  "broken.list:5: port 65536 is out of range (1-65535)\n"
	  "broken.list: 3 errors\n", false },
	{ { "check", "policies" }, 0,
	  "policies: ok, default (2 entries); strict (1 entry), 1 warning\n",
	  "policies: warning: skipping 'README.txt' (policies are NAME.list "
	  "files)\n", false },
	{ { "check", "nodefault" }, 0, "nodefault: ok, team (1 entry)\n", "",
	  false },
	{ { "check", "missing.list" }, 1, "",
	  "missing.list: cannot read: No such file or directory\n"
	  "missing.list: 1 error\n", false },
	{ { "check" }, 2, "", "usage: cordon allowlist check", true },
	{ { "check", "a", "b" }, 2, "", "usage: cordon allowlist check", true },
	{ { "explain", "good.list", "example.com" }, 0,
	  "allow good.list:2: example.com\n", "", false },
	{ { "explain", "good.list", "WWW.Example.com.:80" }, 0,
	  "allow good.list:3: *.example.com\n", "", false },
	{ { "explain", "good.list", "api.example.com:8443" }, 0,
	  "allow good.list:4: api.example.com:8443\n", "", false },
	{ { "explain", "good.list", "internal.example.com" }, 1,
	  "deny good.list:5: !internal.example.com (denied-by-entry)\n", "",
	  false },
	{ { "explain", "good.list", "evilexample.com" }, 1,
	  "deny no entry matched (no-match)\n", "", false },
	{ { "explain", "good.list", "example.com.evil.test:443" }, 1,
	  "deny no entry matched (no-match)\n", "", false },
	{ { "explain", "good.list", "203.0.113.7:22" }, 1,
	  "deny good.list:6: 203.0.113.7 (port-not-allowed)\n", "", false },
	{ { "explain", "good.list", "[2001:db8:0:0:0:0:0:2]:8443" }, 0,
	  "allow good.list:7: [2001:db8::2]:8443\n", "", false },
	{ { "check", "psl.list" }, 0,
	  "psl.list: ok, default (1 entry), 1 warning\n", PSL_WARNING, false },
	{ { "explain", "psl.list", "ec2.amazonaws.com" }, 0,
	  "allow psl.list:2: *.amazonaws.com\n", PSL_WARNING, false },
	{ { "explain", "psl.list", "attacker-bucket.s3.amazonaws.com" }, 1,
	  "deny psl.list:2: *.amazonaws.com (wildcard-crosses-public-suffix)\n",
	  PSL_WARNING, false },
	{ { "explain", "good.list", "a..b" }, 1,
	  "deny no entry matched (invalid-host)\n", "", false },
	{ { "explain", "good.list", "example.com:0" }, 1,
	  "deny no entry matched (invalid-port)\n", "", false },
	{ { "explain", "good.list", "example.com:abc" }, 1,
	  "deny no entry matched (invalid-port)\n", "", false },
	/* The proxy answers CONNECT example.com:00443 with 400 bad-port. */
	{ { "explain", "good.list", "example.com:00443" }, 1,
	  "deny no entry matched (invalid-port)\n", "", false },
	{ { "explain", "good.list", "example.com:0443" }, 1,
	  "deny no entry matched (invalid-port)\n", "", false },
	{ { "explain", "broken.list", "example.com" }, 2, "",
	  "broken.list:3: '*' alone would match every host; write "
	  "'*.example.com' for the subdomains of one domain\n"
	  "broken.list:4: '*.co.uk' would allow every name under the public "
	  "suffix 'co.uk'\n"
	  "broken.list:5: port 65536 is out of range (1-65535)\n"
	  "cordon allowlist: cannot load broken.list\n", false },
	{ { "explain", "missing.list", "example.com" }, 2, "",
	  "missing.list: cannot read: No such file or directory\n"
	  "cordon allowlist: cannot load missing.list\n", false },
	{ { "explain", "policies", "www.example.com" }, 0,
	  "allow policies/default.list:2: *.example.com\n",
	  "policies: warning: skipping 'README.txt' (policies are NAME.list "
	  "files)\n", false },
	{ { "explain", "policies", "api.example.com:80", "--policy",
	    "strict" }, 1,
	  "deny policies/strict.list:1: api.example.com:443 "
	  "(port-not-allowed)\n",
	  "policies: warning: skipping 'README.txt' (policies are NAME.list "
	  "files)\n", false },
	{ { "explain", "--policy=strict", "policies", "api.example.com" }, 0,
	  "allow policies/strict.list:1: api.example.com:443\n",
	  "policies: warning: skipping 'README.txt' (policies are NAME.list "
	  "files)\n", false },
	{ { "explain", "nodefault", "team.example.com" }, 1,
	  "deny no entry matched (no-policy: nodefault has no policy "
	  "'default')\n", "", false },
	{ { "explain", "nodefault", "team.example.com", "--policy", "team" },
	  0, "allow nodefault/team.list:1: team.example.com\n", "", false },
	{ { "explain", "nodefault", "team.example.com", "--policy", "nope" },
	  2, "", "cordon allowlist: nodefault has no policy 'nope' "
	  "(policies: team)\n", false },
	{ { "explain", "good.list", "x.com", "--policy", "other" }, 2, "",
	  "cordon allowlist: good.list has no policy 'other' (policies: "
	  "default)\n", false },
	{ { "explain", "good.list" }, 2, "", "usage: cordon allowlist", true },
	{ { "explain", "good.list", "a.com", "b.com" }, 2, "",
	  "usage: cordon allowlist", true },
	{ { "explain", "good.list", "a.com", "--policy" }, 2, "",
	  "cordon allowlist: bad option '--policy'\n", true },
	{ { "explain", "good.list", "a.com", "--bogus" }, 2, "",
	  "cordon allowlist: bad option '--bogus'\nusage:", true },
	{ { "--help" }, 0, NULL, "", false },
	{ { "explain", "-h" }, 0, NULL, "", false },
	{ { "frob" }, 2, "",
	  "cordon allowlist: unknown command 'frob'\nusage:", true },
	{ { NULL }, 2, "", "usage: cordon allowlist check", true },
};

static void
run_row(const char *cordon, const struct crow *r)
{
	const char *argv[ARGS_MAX + 3] = { cordon, "allowlist" };
	struct proc_opts o = { .argv = argv, .cwd = ALLOWLIST_TEST_DATA,
	    .stdout_max = 65536, .stderr_max = 65536 };
	struct proc_result res;
	const char *out, *err;
	size_t n = 2;

	for (size_t i = 0; i < ARGS_MAX && r->args[i] != NULL; i++)
		argv[n++] = r->args[i];
	argv[n] = NULL;
	assert_int_equal(proc_run(&o, 20000, &res), 0);
	out = cbuf_data(res.out);
	err = cbuf_data(res.err);
	if (res.exit_code != r->code ||
	    (r->out != NULL && strcmp(out, r->out) != 0) ||
	    (r->err_prefix ? strncmp(err, r->err, strlen(r->err)) != 0 :
	    strcmp(err, r->err) != 0))
		fail_msg("cordon allowlist %s %s %s: exit %d (want %d)\n"
		    "stdout:\n%s\nwant:\n%s\nstderr:\n%s\nwant:\n%s",
		    r->args[0] ? r->args[0] : "",
		    r->args[0] && r->args[1] ? r->args[1] : "",
		    r->args[0] && r->args[1] && r->args[2] ? r->args[2] : "",
		    res.exit_code, r->code, out, r->out ? r->out : "(any)",
		    err, r->err);
	if (r->out == NULL) {	/* help: usage on stdout */
		static const char u[] = "usage: cordon allowlist check "
		    "FILE|DIR\n       cordon allowlist explain FILE|DIR "
		    "HOST[:PORT] [--policy NAME]\n";
		assert_memory_equal(out, u, sizeof(u) - 1);
	}
	proc_result_cleanup(&res);
}

static void
test_cli(void **state)
{
	const char *root = getenv("CORDON_BUILD_ROOT");
	char cordon[4096];

	(void)state;
	assert_non_null(root);
	snprintf(cordon, sizeof(cordon), "%s/cordon", root);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		run_row(cordon, &rows[i]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cli),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
