/*
 * `cordon allowlist check|explain`: lint an allowlist file or policy
 * directory (entry options and the secrets they name included), and say
 * which line allows or denies a HOST[:PORT], and, for an inspected entry,
 * a METHOD and PATH. Exit codes: check 0 valid / 1 errors; explain 0 allow
 * / 1 deny / 2 usage or broken file. No secret value is ever printed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <netinet/in.h>
#include <sys/socket.h>

#include "allowlist/allowlist.h"
#include "cli/cmd.h"
#include "common/config.h"
#include "proxy/addr.h"

#define EXPLAIN_DEFAULT_PORT	443

static void
allowlist_usage(FILE *f)
{
	fprintf(f,
	    "usage: cordon allowlist check FILE|DIR [--secrets PATH] "
	    "[--require-secrets]\n"
	    "       cordon allowlist explain FILE|DIR HOST[:PORT]|URL "
	    "[--policy NAME]\n"
	    "                [--method METHOD --path PATH] [--secrets PATH]\n"
	    "       cordon allowlist replay [--log FILE ...] [--since DURATION] "
	    "FILE|DIR\n"
	    "       cordon allowlist suggest [--log FILE ...] "
	    "[--result RUN.json ...]\n"
	    "                --policy NAME [--wildcards]\n"
	    "\n"
	    "check    list every error and warning; exit 0 when valid, 1 "
	    "otherwise\n"
	    "explain  print 'allow' or 'deny' and the FILE:LINE that decided "
	    "(or\n"
	    "         'no entry matched'); port 443 when none is given; exit 0 "
	    "allow,\n"
	    "         1 deny, 2 usage error or broken file. A URL\n"
	    "         (http[s]://HOST[:PORT]/PATH) gives the port from its "
	    "scheme\n"
	    "         (80 or 443) and, with --method, the path. A directory "
	    "holds\n"
	    "         NAME.list policies; 'default' is used without --policy. "
	    "With\n"
	    "         --method and --path, also whether the deciding entry "
	    "lets that\n"
	    "         request through.\n"
	    "--secrets PATH  the secrets store inject= names refer to "
	    "(default: config\n"
	    "         egress_secrets; '' for none). When it cannot be read "
	    "(not root),\n"
	    "         secret names are not verified: a warning, or with "
	    "--require-secrets\n"
	    "         an error.\n"
	    "replay   decide the requests of an access log again under FILE|DIR "
	    "and\n"
	    "         print what changes (see cordon allowlist replay --help)\n"
	    "suggest  allowlist lines for what a policy denied (see cordon "
	    "allowlist\n"
	    "         suggest --help)\n");
}

static void
allowlist_print_diag(const struct allowlist_diag *diag)
{
	for (size_t i = 0; i < diag->count; i++)
		fprintf(stderr, "%s\n", diag->items[i].text);
	if (diag->dropped > 0)
		fprintf(stderr, "... and %zu more\n", diag->dropped);
}

/* What the command line said about secrets. */
struct secrets_arg {
	const char *path;	/* --secrets, or NULL: from the config */
	bool require;		/* --require-secrets */
	char cfg[256];		/* the config's egress_secrets */
};

/*
 * Fills o for loading: the store from --secrets or the config. When the
 * store exists but this user may not read it, secret names are not
 * verified (o->secrets_unverified), and *unverified says so. Returns 0,
 * or -1 after printing why (a broken config).
 */
static int
allowlist_secrets(struct secrets_arg *sa, struct allowlist_load_opts *o,
    bool *unverified)
{
	struct config c;
	char err[512];

	*unverified = false;
	o->secrets = sa->path;
	o->secrets_unverified = false;
	if (o->secrets == NULL) {
		if (config_load(&c, NULL, err, sizeof(err)) < 0) {
			fprintf(stderr, "cordon allowlist: %s (the secrets store "
			    "comes from egress_secrets; or give --secrets "
			    "PATH)\n", err);
			return -1;
		}
		snprintf(sa->cfg, sizeof(sa->cfg), "%s", c.egress_secrets);
		o->secrets = sa->cfg;
	}
	if (o->secrets[0] != '\0' && faccessat(AT_FDCWD, o->secrets, R_OK,
	    AT_EACCESS) < 0 && (errno == EACCES || errno == EPERM)) {
		o->secrets_unverified = true;
		*unverified = true;
	}
	return 0;
}

static void
allowlist_unverified_note(const char *secrets, bool require)
{
	fprintf(stderr, "cordon allowlist: %s: cannot read the secrets store "
	    "(%s): secret names were not verified; run as root to verify "
	    "them%s\n", secrets, strerror(EACCES), require ?
	    " (--require-secrets: this is an error)" : "");
}

static int
allowlist_check(const char *path, struct secrets_arg *sa)
{
	struct allowlist_load_opts o = { 0 };
	struct allowlist_diag diag;
	struct allowlist_set *set;
	bool unverified;
	int r;

	if (allowlist_secrets(sa, &o, &unverified) < 0)
		return 1;
	allowlist_diag_init(&diag);
	r = allowlist_set_load_opts(path, &o, &set, &diag);
	allowlist_print_diag(&diag);
	if (unverified && (set == NULL || allowlist_set_inject_count(set) > 0))
		allowlist_unverified_note(o.secrets, sa->require);
	if (r < 0) {
		fprintf(stderr, "%s: %zu error%s\n", path, diag.errors,
		    diag.errors == 1 ? "" : "s");
		allowlist_diag_cleanup(&diag);
		return 1;
	}
	printf("%s: ok", path);
	for (size_t i = 0; i < allowlist_set_count(set); i++) {
		const char *name = allowlist_set_name(set, i);
		const struct allowlist *al = allowlist_set_policy(set, name);
		size_t n = allowlist_entry_count(al);
		size_t k = allowlist_inspect_count(al);
		printf("%s %s (%zu %s", i == 0 ? "," : ";", name, n,
		    n == 1 ? "entry" : "entries");
		if (k > 0)
			printf(", %zu inspected", k);
		if ((k = allowlist_raw_count(al)) > 0)
			printf(", %zu raw", k);
		printf(")");
	}
	if (diag.warnings > 0)
		printf(", %zu warning%s", diag.warnings,
		    diag.warnings == 1 ? "" : "s");
	if (unverified && (set == NULL || allowlist_set_inject_count(set) > 0))
		printf(", secret names not verified");
	printf("\n");
	r = unverified && sa->require && (set == NULL || allowlist_set_inject_count(set) > 0);
	allowlist_diag_cleanup(&diag);
	allowlist_set_free(set);
	return r;
}

static void
allowlist_print_decision(const struct allowlist_decision *d,
    const char *path, const char *policy)
{
	fputs(d->allowed ? "allow" : "deny", stdout);
	if (d->entry != NULL)
		printf(" %s:%u: %s", d->file, d->line, d->entry);
	else
		printf(" no entry matched");
	if (strcmp(d->reason, "no-policy") == 0)
		printf(" (no-policy: %s has no policy '%s')", path, policy);
	else if (!d->allowed)
		printf(" (%s)", d->reason);
	printf("\n");
}

/* The deciding entry's options, and the request's fate when asked. Never
 * prints inject_value. Returns whether the request (if any) passes. */
static bool
allowlist_print_inspect(const struct allowlist_decision *d,
    const char *method, const char *target, bool unverified)
{
	const struct allowlist_inspect *in = d->inspect;
	const char *why;
	bool ok;

	if (d->raw)
		printf("raw: tunnels to it may carry any bytes, not only TLS\n");
	if (in == NULL) {
		if (method != NULL)
			printf("request %s %s: allow (not inspected: the "
			    "tunnel passes any request)\n", method, target);
		return true;
	}
	printf("inspect: %s\n", in->text);
	if (in->inject_header != NULL)
		printf("inject: header '%s' from secret '%s' (value not "
		    "shown%s)\n", in->inject_header, in->inject_secret,
		    unverified ? "; not verified" : "");
	if (method == NULL)
		return true;
	ok = allowlist_inspect_check(in, method, target, &why);
	printf("request %s %s: %s", method, target, ok ? "allow" : "deny");
	printf(" (%s)\n", why);
	return ok;
}

/* What cordon-proxy refuses before it asks the allowlist, in its order:
 * a name internal by its shape, then an IP literal that is not public
 * (the address classes are the proxy's own, proxy/addr.c). Prints the
 * refusal and returns true; false when the allowlist decides. d holds the
 * allowlist's decision (a host or port it cannot parse is its answer). */
static bool
explain_refused_first(const char *authority, const struct allowlist_decision *d)
{
	struct allowlist_host h;
	const char *end;
	char host[300];
	enum addr_class cls;
	size_t n;

	if (strcmp(d->reason, "invalid-host") == 0 ||
	    strcmp(d->reason, "invalid-port") == 0 ||
	    strcmp(d->reason, "no-policy") == 0)
		return false;
	end = authority[0] == '[' ? strchr(authority, ']') + 1 :
	    authority + strcspn(authority, ":");
	n = (size_t)(end - authority);
	if (n >= sizeof(host))
		return false;
	memcpy(host, authority, n);
	host[n] = '\0';
	if (allowlist_host_parse(host, &h) != 0)
		return false;
	if (h.family == 0 && allowlist_host_internal(h.text)) {
		printf("deny %s (internal-name): a name cordon-proxy refuses "
		    "before any lookup, whatever the allowlist says\n", h.text);
		return true;
	}
	if (h.family == 0)
		return false;
	cls = h.family == AF_INET ?
	    proxy_addr_classify_in((const struct in_addr *)(void *)h.addr) :
	    proxy_addr_classify_in6((const struct in6_addr *)(void *)h.addr);
	if (cls == ADDR_PUBLIC)
		return false;
	printf("deny %s (address-%s): an address cordon-proxy refuses "
	    "whatever the allowlist says, unless started with "
	    "--allow-address %s\n", h.text, proxy_addr_class_name(cls),
	    h.text);
	return true;
}

static int
allowlist_explain(const char *path, const char *authority, long default_port,
    const char *policy, const char *method, const char *target,
    struct secrets_arg *sa)
{
	struct allowlist_load_opts o = { 0 };
	struct allowlist_decision d;
	struct allowlist_diag diag;
	struct allowlist_set *set;
	const struct allowlist *al;
	bool unverified, ok;
	int r;

	if (allowlist_secrets(sa, &o, &unverified) < 0)
		return 2;
	allowlist_diag_init(&diag);
	r = allowlist_set_load_opts(path, &o, &set, &diag);
	allowlist_print_diag(&diag);
	allowlist_diag_cleanup(&diag);
	if (unverified && (set == NULL || allowlist_set_inject_count(set) > 0))
		allowlist_unverified_note(o.secrets, false);
	if (r < 0) {
		fprintf(stderr, "cordon allowlist: cannot load %s\n", path);
		return 2;
	}
	al = allowlist_set_policy(set, policy);
	if (al == NULL && policy != NULL) {
		fprintf(stderr, "cordon allowlist: %s has no policy '%s' "
		    "(policies:", path, policy);
		for (size_t i = 0; i < allowlist_set_count(set); i++)
			fprintf(stderr, " %s", allowlist_set_name(set, i));
		fprintf(stderr, ")\n");
		allowlist_set_free(set);
		return 2;
	}
	allowlist_match_authority(al, authority, default_port, &d);
	if (explain_refused_first(authority, &d)) {
		/* The allowlist's own view, for the editor. */
		fputs("allowlist: ", stdout);
		allowlist_print_decision(&d, path, policy != NULL ? policy :
		    "default");
		allowlist_set_free(set);
		return 1;
	}
	allowlist_print_decision(&d, path, policy != NULL ? policy : "default");
	ok = d.allowed;
	if (ok)
		ok = allowlist_print_inspect(&d, method, target, unverified);
	allowlist_set_free(set);
	return ok ? 0 : 1;
}

/* explain for a URL: its authority, the scheme's port, and its path and
 * query as the request target when --method is given (--path then only
 * when the URL has no path of its own). */
static int
allowlist_explain_url(const char *path, const char *url, const char *policy,
    const char *method, const char *target, struct secrets_arg *sa)
{
	struct allowlist_url u;
	const char *why;
	char *t = NULL;
	int r;

	if (allowlist_url_parse(url, &u, &why) < 0) {
		fprintf(stderr, "cordon allowlist: '%s': %s\n", url, why);
		return 2;
	}
	if (target != NULL && u.target_len > 0) {
		fprintf(stderr, "cordon allowlist: '%s' has a path: give "
		    "--path or a path in the URL, not both\n", url);
		return 2;
	}
	if (method != NULL && target == NULL) {
		t = u.target_len > 0 ? strndup(u.target, u.target_len) :
		    strdup("/");
		if (t == NULL) {
			fprintf(stderr, "cordon allowlist: %s\n",
			    strerror(ENOMEM));
			return 2;
		}
		target = t;
	}
	r = allowlist_explain(path, u.authority, u.default_port, policy,
	    method, target, sa);
	free(t);
	return r;
}

/* "--name VALUE" or "--name=VALUE" at argv[*i]: true with *out set (once
 * only); *bad set when the value is missing or repeated. */
static bool
allowlist_opt(int argc, char **argv, int *i, const char *name,
    const char **out, bool *bad)
{
	size_t n = strlen(name);

	if (strncmp(argv[*i], name, n) != 0)
		return false;
	if (argv[*i][n] == '=') {
		if (*out != NULL)
			*bad = true;
		*out = argv[*i] + n + 1;
		return true;
	}
	if (argv[*i][n] != '\0')
		return false;
	if (*out != NULL || *i + 1 >= argc) {
		*bad = true;
		return true;
	}
	*out = argv[++*i];
	return true;
}

int
cmd_allowlist(int argc, char **argv)
{
	const char *args[2], *policy = NULL, *method = NULL, *target = NULL;
	struct secrets_arg sa = { .path = NULL };
	bool check, bad = false;
	int nargs = 0;

	if (argc >= 2 && strcmp(argv[1], "replay") == 0)
		return cmd_allowlist_replay(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "suggest") == 0)
		return cmd_allowlist_suggest(argc - 1, argv + 1);
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "--help") == 0) {
			allowlist_usage(stdout);
			return 0;
		}
	}
	if (argc < 2) {
		allowlist_usage(stderr);
		return 2;
	}
	check = strcmp(argv[1], "check") == 0;
	if (!check && strcmp(argv[1], "explain") != 0) {
		fprintf(stderr, "cordon allowlist: unknown command '%s'\n",
		    argv[1]);
		allowlist_usage(stderr);
		return 2;
	}
	for (int i = 2; i < argc && !bad; i++) {
		const char *arg = argv[i];
		if (allowlist_opt(argc, argv, &i, "--secrets", &sa.path,
		    &bad) || (!check && (allowlist_opt(argc, argv, &i,
		    "--policy", &policy, &bad) || allowlist_opt(argc, argv,
		    &i, "--method", &method, &bad) || allowlist_opt(argc, argv,
		    &i, "--path", &target, &bad)))) {
			;
		} else if (check && strcmp(arg, "--require-secrets") == 0) {
			sa.require = true;
		} else if (arg[0] == '-' && arg[1] == '-') {
			bad = true;
		} else if (nargs < (check ? 1 : 2)) {
			args[nargs++] = arg;
		} else {
			allowlist_usage(stderr);
			return 2;
		}
		if (bad) {
			fprintf(stderr, "cordon allowlist: bad option '%s'\n",
			    arg);
			allowlist_usage(stderr);
			return 2;
		}
	}
	if (nargs != (check ? 1 : 2)) {
		allowlist_usage(stderr);
		return 2;
	}
	/* A URL may give the path that goes with --method. */
	if ((method == NULL) != (target == NULL) && (method == NULL ||
	    check || strstr(args[1], "://") == NULL)) {
		fprintf(stderr, "cordon allowlist: --method and --path go "
		    "together\n");
		return 2;
	}
	if (check)
		return allowlist_check(args[0], &sa);
	if (strstr(args[1], "://") != NULL)
		return allowlist_explain_url(args[0], args[1], policy, method,
		    target, &sa);
	return allowlist_explain(args[0], args[1], EXPLAIN_DEFAULT_PORT,
	    policy, method, target, &sa);
}
