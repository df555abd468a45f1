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

#include <sys/stat.h>
#include <unistd.h>

#include "common/proc.h"
#include "common/util.h"

#define ARGS_MAX	10

/* Every secret value here holds this: no output may. */
#define MARK	"sekrit"

extern char **environ;

/* Per-run files (secrets need mode 0600, which git does not keep); "@S@"
 * in a row's args, stdout and stderr stands for this directory. */
static char tmpdir[] = "/tmp/cordon-test-cli-XXXXXX";

#define INSPECT_WARNING \
	"inspect.list:5: warning: '*.example.org' (line 4) also covers this, " \
	"with other options; this entry's apply (not inspected)\n"
#define INSPECT_OK \
	"inspect.list: ok, default (4 entries, 3 inspected), 1 warning"
#define GH_INSPECT \
	"allow inspect.list:2: api.github.com:443\n" \
	"inspect: inspect methods=GET,POST paths=/repos/*,/user " \
	"inject=Authorization:github-token\n"
#define NOT_VERIFIED(req) \
	"cordon allowlist: @S@/locked.env: cannot read the secrets store " \
	"(Permission denied): secret names were not verified; run as root " \
	"to verify them" req "\n"

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
	/* What cordon-proxy refuses before the allowlist is asked, as it
	 * does: a name internal by its shape, an address that is not
	 * public (these are documentation addresses); then the allowlist's
	 * own view. */
	{ { "explain", "good.list", "example.com.evil.test:443" }, 1,
	  "deny example.com.evil.test (internal-name): a name cordon-proxy "
	  "refuses before any lookup, whatever the allowlist says\n"
	  "allowlist: deny no entry matched (no-match)\n", "", false },
	{ { "explain", "good.list", "203.0.113.7:22" }, 1,
	  "deny 203.0.113.7 (address-documentation): an address cordon-proxy "
	  "refuses whatever the allowlist says, unless started with "
	  "--allow-address 203.0.113.7\n"
	  "allowlist: deny good.list:6: 203.0.113.7 (port-not-allowed)\n", "",
	  false },
	{ { "explain", "good.list", "[2001:db8:0:0:0:0:0:2]:8443" }, 1,
	  "deny 2001:db8::2 (address-documentation): an address cordon-proxy "
	  "refuses whatever the allowlist says, unless started with "
	  "--allow-address 2001:db8::2\n"
	  "allowlist: allow good.list:7: [2001:db8::2]:8443\n", "", false },
	{ { "explain", "good.list", "0x7f.1:443" }, 1,
	  "deny 127.0.0.1 (address-loopback): an address cordon-proxy refuses "
	  "whatever the allowlist says, unless started with --allow-address "
	  "127.0.0.1\n"
	  "allowlist: deny no entry matched (no-match)\n", "", false },
	{ { "explain", "good.list", "a.0x" }, 1,
	  "deny no entry matched (invalid-host)\n", "", false },
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
	/* A URL: its host and port, the port from the scheme (it answered
	 * invalid-port before). */
	{ { "explain", "good.list", "https://example.com/path" }, 0,
	  "allow good.list:2: example.com\n", "", false },
	{ { "explain", "good.list", "HTTP://WWW.example.com/a?b#c" }, 0,
	  "allow good.list:3: *.example.com\n", "", false },
	{ { "explain", "good.list", "https://api.example.com:8443" }, 0,
	  "allow good.list:4: api.example.com:8443\n", "", false },
	{ { "explain", "good.list", "http://203.0.113.7:22/" }, 1,
	  "deny 203.0.113.7 (address-documentation): an address cordon-proxy "
	  "refuses whatever the allowlist says, unless started with "
	  "--allow-address 203.0.113.7\n"
	  "allowlist: deny good.list:6: 203.0.113.7 (port-not-allowed)\n", "",
	  false },
	{ { "explain", "good.list", "https://[2001:db8::2]:8443/x" }, 1,
	  "deny 2001:db8::2 (address-documentation): an address cordon-proxy "
	  "refuses whatever the allowlist says, unless started with "
	  "--allow-address 2001:db8::2\n"
	  "allowlist: allow good.list:7: [2001:db8::2]:8443\n", "", false },
	{ { "explain", "good.list", "https://example.com:0443/" }, 1,
	  "deny no entry matched (invalid-port)\n", "", false },
	{ { "explain", "good.list", "https://internal.example.com/" }, 1,
	  "deny good.list:5: !internal.example.com (denied-by-entry)\n", "",
	  false },
	{ { "explain", "good.list", "ftp://example.com/" }, 2, "",
	  "cordon allowlist: 'ftp://example.com/': the scheme is not http or "
	  "https\n", false },
	{ { "explain", "good.list", "https://u:p@example.com/" }, 2, "",
	  "cordon allowlist: 'https://u:p@example.com/': user information "
	  "(USER@) in the URL: the proxy is asked for the host alone\n",
	  false },
	{ { "explain", "good.list", "https:///x" }, 2, "",
	  "cordon allowlist: 'https:///x': no host after the scheme\n",
	  false },
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

/* Rows with a config file and maybe an unprivileged user. */
static const struct crow2 {
	struct crow c;
	const char *config;		/* CORDON_CONFIG in @S@ (NULL:
					   empty.json) */
	bool unpriv;			/* as a user who cannot read
					   @S@/locked.env */
} rows2[] = {
	/* Entry options and secrets. */
	{ { { "check", "inspect.list", "--secrets", "@S@/store.env" }, 0,
	  INSPECT_OK "\n", INSPECT_WARNING, false }, NULL, false },
	{ { { "check", "--secrets=@S@/sdir", "inspect.list" }, 0,
	  INSPECT_OK "\n", INSPECT_WARNING, false }, NULL, false },
	{ { { "check", "inspect.list" }, 0, INSPECT_OK "\n", INSPECT_WARNING,
	  false }, "cfg.json", false },
	{ { { "check", "inspect.list" }, 1, "", INSPECT_WARNING
	  "inspect.list:2: inject= names secret 'github-token' but no secrets "
	  "store is configured (config key egress_secrets)\n"
	  "inspect.list: 1 error\n", false }, NULL, false },
	{ { { "check", "inspect.list", "--secrets=" }, 1, "", INSPECT_WARNING
	  "inspect.list:2: inject= names secret 'github-token' but no secrets "
	  "store is configured (config key egress_secrets)\n"
	  "inspect.list: 1 error\n", false }, "cfg.json", false },
	{ { { "check", "inspect.list", "--secrets", "@S@/open.env" }, 1, "",
	  INSPECT_WARNING "@S@/open.env: mode 0644 gives group or other access: secrets must "
	  "be root-only (chmod go= @S@/open.env)\n"
	  "inspect.list: 1 error\n", false }, NULL, false },
	{ { { "check", "inspect.list", "--secrets", "@S@/nope" }, 1, "",
	  INSPECT_WARNING "@S@/nope: cannot read the secrets store: No such file or "
	  "directory\ninspect.list: 1 error\n", false }, NULL, false },
	{ { { "check", "missing-secret.list", "--secrets", "@S@/store.env" }, 1,
	  "", "missing-secret.list:1: no secret 'nope' in @S@/store.env\n"
	  "missing-secret.list: 1 error\n", false }, NULL, false },
	{ { { "check", "missing-secret.list", "--secrets", "@S@/sdir" }, 1,
	  "", "missing-secret.list:1: no secret 'nope' in @S@/sdir\n"
	  "missing-secret.list: 1 error\n", false }, NULL, false },
	{ { { "check", "inspect-broken.list", "--secrets", "@S@/store.env" }, 1,
	  "", "inspect-broken.list:1: methods are case-sensitive and upper "
	  "case: write 'GET', not 'get'\n"
	  "inspect-broken.list:2: deny entries take no options (they deny "
	  "every request to the host)\n"
	  "inspect-broken.list:3: 'paths=' needs 'inspect' on the same entry "
	  "(the proxy sees requests only in connections it inspects)\n"
	  "inspect-broken.list:4: path pattern '/a/../b' is not canonical: it "
	  "holds a dot segment ('.' or '..')\n"
	  "inspect-broken.list:5: inject= cannot set 'Host': it is a "
	  "hop-by-hop or message-framing header, which the proxy owns\n"
	  "inspect-broken.list: 5 errors\n", false }, NULL, false },
	/* A store this user cannot read: names not verified. */
	{ { { "check", "inspect.list", "--secrets", "@S@/locked.env" }, 0,
	  INSPECT_OK ", secret names not verified\n",
	  INSPECT_WARNING NOT_VERIFIED(""), false }, NULL, true },
	{ { { "check", "inspect.list", "--secrets", "@S@/locked.env",
	    "--require-secrets" }, 1,
	  INSPECT_OK ", secret names not verified\n",
	  INSPECT_WARNING NOT_VERIFIED(" (--require-secrets: this is an "
	  "error)"), false }, NULL, true },
	{ { { "check", "inspect-broken.list", "--secrets", "@S@/locked.env" }, 1,
	  "", "inspect-broken.list:1: methods are case-sensitive", true },
	  NULL, true },
	{ { { "check", "good.list", "--secrets", "@S@/locked.env",
	    "--require-secrets" }, 0, "good.list: ok, default (6 entries)\n",
	  "", false }, NULL, true },
	{ { { "explain", "inspect.list", "api.github.com", "--secrets",
	    "@S@/store.env" }, 0, GH_INSPECT
	  "inject: header 'Authorization' from secret 'github-token' (value "
	  "not shown)\n", INSPECT_WARNING, false }, NULL, false },
	{ { { "explain", "inspect.list", "api.github.com", "--method", "GET",
	    "--path", "/repos/a/b?x=1" }, 0, GH_INSPECT
	  "inject: header 'Authorization' from secret 'github-token' (value "
	  "not shown)\n"
	  "request GET /repos/a/b?x=1: allow (allowed-by-entry)\n",
	  INSPECT_WARNING, false }, "cfg.json", false },
	{ { { "explain", "inspect.list", "api.github.com", "--method=DELETE",
	    "--path=/user" }, 1, GH_INSPECT
	  "inject: header 'Authorization' from secret 'github-token' (value "
	  "not shown)\n"
	  "request DELETE /user: deny (method-not-allowed)\n",
	  INSPECT_WARNING, false }, "cfg.json", false },
	{ { { "explain", "inspect.list", "api.github.com", "--method", "GET",
	    "--path", "/orgs/x", "--secrets", "@S@/locked.env" }, 1,
	  GH_INSPECT "inject: header 'Authorization' from secret "
	  "'github-token' (value not shown; not verified)\n"
	  "request GET /orgs/x: deny (path-not-allowed)\n",
	  INSPECT_WARNING NOT_VERIFIED(""), false }, NULL, true },
	{ { { "explain", "inspect.list", "pypi.org:80", "--method", "GET",
	    "--path", "/simple/%2e%2e/admin" }, 1,
	  "allow inspect.list:3: pypi.org\n"
	  "inspect: inspect methods=GET paths=/simple/*\n"
	  "request GET /simple/%2e%2e/admin: deny (path-not-canonical)\n",
	  INSPECT_WARNING, false }, "cfg.json", false },
	{ { { "explain", "inspect.list", "a.b.example.org", "--method", "BREW",
	    "--path", "/pot" }, 0,
	  "allow inspect.list:4: *.example.org\n"
	  "inspect: inspect\n"
	  "request BREW /pot: allow (allowed-by-entry)\n",
	  INSPECT_WARNING, false }, "cfg.json", false },
	{ { { "explain", "inspect.list", "raw.example.org", "--method", "POST",
	    "--path", "/x" }, 0,
	  "allow inspect.list:5: raw.example.org\n"
	  "request POST /x: allow (not inspected: the tunnel passes any "
	  "request)\n", INSPECT_WARNING, false }, "cfg.json", false },
	{ { { "explain", "inspect.list", "evil.test", "--method", "GET",
	    "--path", "/" }, 1, "deny evil.test (internal-name): a name "
	  "cordon-proxy refuses before any lookup, whatever the allowlist "
	  "says\nallowlist: deny no entry matched (no-match)\n",
	  INSPECT_WARNING, false }, "cfg.json", false },
	{ { { "explain", "inspect.list", "evil.example.net", "--method", "GET",
	    "--path", "/" }, 1, "deny no entry matched (no-match)\n",
	  INSPECT_WARNING, false }, "cfg.json", false },
	{ { { "explain", "inspect.list", "api.github.com" }, 2, "",
	  INSPECT_WARNING "inspect.list:2: inject= names secret 'github-token' but no secrets "
	  "store is configured (config key egress_secrets)\n"
	  "cordon allowlist: cannot load inspect.list\n", false }, NULL, false },
	/* A URL gives --method its path (and its port). */
	{ { { "explain", "inspect.list", "http://pypi.org/simple/%2e%2e/admin",
	    "--method", "GET" }, 1,
	  "allow inspect.list:3: pypi.org\n"
	  "inspect: inspect methods=GET paths=/simple/*\n"
	  "request GET /simple/%2e%2e/admin: deny (path-not-canonical)\n",
	  INSPECT_WARNING, false }, "cfg.json", false },
	{ { { "explain", "inspect.list", "https://pypi.org/simple/x/?q#f",
	    "--method", "GET" }, 0,
	  "allow inspect.list:3: pypi.org\n"
	  "inspect: inspect methods=GET paths=/simple/*\n"
	  "request GET /simple/x/?q: allow (allowed-by-entry)\n",
	  INSPECT_WARNING, false }, "cfg.json", false },
	{ { { "explain", "inspect.list", "https://pypi.org", "--method",
	    "GET" }, 1,
	  "allow inspect.list:3: pypi.org\n"
	  "inspect: inspect methods=GET paths=/simple/*\n"
	  "request GET /: deny (path-not-allowed)\n",
	  INSPECT_WARNING, false }, "cfg.json", false },
	{ { { "explain", "inspect.list", "https://pypi.org", "--method",
	    "GET", "--path", "/simple/y/" }, 0,
	  "allow inspect.list:3: pypi.org\n"
	  "inspect: inspect methods=GET paths=/simple/*\n"
	  "request GET /simple/y/: allow (allowed-by-entry)\n",
	  INSPECT_WARNING, false }, "cfg.json", false },
	{ { { "explain", "good.list", "https://a.com/x", "--method", "GET",
	    "--path", "/y" }, 2, "",
	  "cordon allowlist: 'https://a.com/x' has a path: give --path or a "
	  "path in the URL, not both\n", false }, NULL, false },
	{ { { "explain", "good.list", "https://a.com/x", "--path", "/y" }, 2,
	  "", "cordon allowlist: --method and --path go together\n", false },
	  NULL, false },
	{ { { "explain", "good.list", "a.com", "--method", "GET" }, 2, "",
	  "cordon allowlist: --method and --path go together\n", false }, NULL, false },
	{ { { "explain", "good.list", "a.com", "--path", "/", "--path", "/x" },
	  2, "", "cordon allowlist: bad option '--path'\nusage:", true }, NULL, false },
	{ { { "check", "good.list", "--policy", "x" }, 2, "",
	  "cordon allowlist: bad option '--policy'\nusage:", true }, NULL, false },
	{ { { "check", "good.list", "--secrets" }, 2, "",
	  "cordon allowlist: bad option '--secrets'\nusage:", true }, NULL, false },
	{ { { "explain", "good.list", "a.com", "--require-secrets" }, 2, "",
	  "cordon allowlist: bad option '--require-secrets'\nusage:", true }, NULL, false },
	{ { { "check", "good.list" }, 1, "",
	  "cordon allowlist: @S@/bad.json: ", true }, "bad.json", false },
};

/* s with "@S@" replaced by tmpdir (caller frees). */
static char *
subst(const char *s)
{
	size_t n = 0, tl = strlen(tmpdir);
	const char *p;
	char *out, *o;

	if (s == NULL)
		return NULL;
	for (p = s; (p = strstr(p, "@S@")) != NULL; p += 3)
		n++;
	out = malloc(strlen(s) + n * tl + 1);
	assert_non_null(out);
	for (o = out; *s != '\0';) {
		if (strncmp(s, "@S@", 3) == 0) {
			memcpy(o, tmpdir, tl);
			o += tl;
			s += 3;
		} else {
			*o++ = *s++;
		}
	}
	*o = '\0';
	return out;
}

static void
put(const char *name, const char *text, unsigned mode)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	assert_int_equal(util_write_file_atomic(path, text, strlen(text),
	    0600), 0);
	assert_int_equal(chmod(path, mode), 0);
}

static int
setup(void **state)
{
	char path[512];

	(void)state;
	if (mkdtemp(tmpdir) == NULL || chmod(tmpdir, 0711) < 0)
		return -1;
	put("empty.json", "{}", 0644);
	put("bad.json", "{", 0644);
	snprintf(path, sizeof(path), "{\"egress_secrets\":\"%s/store.env\"}",
	    tmpdir);
	put("cfg.json", path, 0644);
	put("store.env", "# for the CLI tests\ngithub-token=Bearer " MARK
	    "-1\n", 0600);
	put("open.env", "github-token=Bearer " MARK "-2\n", 0644);
	/* Root reads anything: the test then runs as nobody. */
	put("locked.env", "github-token=Bearer " MARK "-3\n",
	    geteuid() == 0 ? 0600 : 0);
	snprintf(path, sizeof(path), "%s/sdir", tmpdir);
	if (util_mkdir_p(path, 0700) < 0)
		return -1;
	put("sdir/github-token", "Bearer " MARK "-4\n", 0600);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	return util_rm_rf(tmpdir);
}

static void
run_row(const char *cordon, const struct crow *r, const char *config,
    bool unpriv)
{
	const char *argv[ARGS_MAX + 8], *envp[512];
	char *args[ARGS_MAX] = { NULL }, *want_out, *want_err, cfg[600];
	struct proc_opts o = { .argv = argv, .envp = envp,
	    .cwd = ALLOWLIST_TEST_DATA, .stdout_max = 65536,
	    .stderr_max = 65536 };
	struct proc_result res;
	const char *out, *err;
	size_t n = 0, ne = 0;

	if (unpriv && geteuid() == 0) {
		argv[n++] = "setpriv";
		argv[n++] = "--reuid=65534";
		argv[n++] = "--regid=65534";
		argv[n++] = "--clear-groups";
	}
	argv[n++] = cordon;
	argv[n++] = "allowlist";
	for (size_t i = 0; i < ARGS_MAX && r->args[i] != NULL; i++)
		argv[n++] = args[i] = subst(r->args[i]);
	argv[n] = NULL;
	for (char **e = environ; *e != NULL && ne < 510; e++)
		if (strncmp(*e, "CORDON_CONFIG=", 14) != 0)
			envp[ne++] = *e;
	snprintf(cfg, sizeof(cfg), "CORDON_CONFIG=%s/%s", tmpdir,
	    config != NULL ? config : "empty.json");
	envp[ne++] = cfg;
	envp[ne] = NULL;
	want_out = subst(r->out);
	want_err = subst(r->err);
	assert_int_equal(proc_run(&o, 20000, &res), 0);
	out = cbuf_data(res.out);
	err = cbuf_data(res.err);
	if (strstr(out, MARK) != NULL || strstr(err, MARK) != NULL)
		fail_msg("a secret value was printed:\n%s\n%s", out, err);
	if (res.exit_code != r->code ||
	    (want_out != NULL && strcmp(out, want_out) != 0) ||
	    (r->err_prefix ? strncmp(err, want_err, strlen(want_err)) != 0 :
	    strcmp(err, want_err) != 0))
		fail_msg("cordon allowlist %s %s %s: exit %d (want %d)\n"
		    "stdout:\n%s\nwant:\n%s\nstderr:\n%s\nwant:\n%s",
		    r->args[0] ? r->args[0] : "",
		    r->args[0] && r->args[1] ? r->args[1] : "",
		    r->args[0] && r->args[1] && r->args[2] ? r->args[2] : "",
		    res.exit_code, r->code, out, want_out ? want_out : "(any)",
		    err, want_err);
	if (r->out == NULL) {	/* help: usage on stdout */
		static const char u[] = "usage: cordon allowlist check "
		    "FILE|DIR [--secrets PATH] [--require-secrets]\n"
		    "       cordon allowlist explain FILE|DIR HOST[:PORT]|URL "
		    "[--policy NAME]\n";
		assert_memory_equal(out, u, sizeof(u) - 1);
	}
	proc_result_cleanup(&res);
	for (size_t i = 0; i < ARGS_MAX; i++)
		free(args[i]);
	free(want_out);
	free(want_err);
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
		run_row(cordon, &rows[i], NULL, false);
	for (size_t i = 0; i < sizeof(rows2) / sizeof(rows2[0]); i++)
		run_row(cordon, &rows2[i].c, rows2[i].config, rows2[i].unpriv);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cli),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
