/*
 * `cordon allowlist check|explain`: lint an allowlist file or policy
 * directory, and say which line allows or denies a HOST[:PORT]. Exit codes:
 * check 0 valid / 1 errors; explain 0 allow / 1 deny / 2 usage or broken
 * file.
 */
#include <stdio.h>
#include <string.h>

#include "allowlist/allowlist.h"
#include "cli/cmd.h"

#define EXPLAIN_DEFAULT_PORT	443

static void
allowlist_usage(FILE *f)
{
	fprintf(f,
	    "usage: cordon allowlist check FILE|DIR\n"
	    "       cordon allowlist explain FILE|DIR HOST[:PORT] "
	    "[--policy NAME]\n"
	    "\n"
	    "check    list every error and warning; exit 0 when valid, 1 "
	    "otherwise\n"
	    "explain  print 'allow' or 'deny' and the FILE:LINE that decided "
	    "(or\n"
	    "         'no entry matched'); port 443 when none is given; exit 0 "
	    "allow,\n"
	    "         1 deny, 2 usage error or broken file. A directory holds "
	    "NAME.list\n"
	    "         policies; 'default' is used without --policy.\n");
}

static void
allowlist_print_diag(const struct allowlist_diag *diag)
{
	for (size_t i = 0; i < diag->count; i++)
		fprintf(stderr, "%s\n", diag->items[i].text);
	if (diag->dropped > 0)
		fprintf(stderr, "... and %zu more\n", diag->dropped);
}

static int
allowlist_check(const char *path)
{
	struct allowlist_diag diag;
	struct allowlist_set *set;
	int r;

	allowlist_diag_init(&diag);
	r = allowlist_set_load(path, &set, &diag);
	allowlist_print_diag(&diag);
	if (r < 0) {
		fprintf(stderr, "%s: %zu error%s\n", path, diag.errors,
		    diag.errors == 1 ? "" : "s");
		allowlist_diag_cleanup(&diag);
		return 1;
	}
	printf("%s: ok", path);
	for (size_t i = 0; i < allowlist_set_count(set); i++) {
		const char *name = allowlist_set_name(set, i);
		size_t n = allowlist_entry_count(allowlist_set_policy(set,
		    name));
		printf("%s %s (%zu %s)", i == 0 ? "," : ";", name, n,
		    n == 1 ? "entry" : "entries");
	}
	if (diag.warnings > 0)
		printf(", %zu warning%s", diag.warnings,
		    diag.warnings == 1 ? "" : "s");
	printf("\n");
	allowlist_diag_cleanup(&diag);
	allowlist_set_free(set);
	return 0;
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

static int
allowlist_explain(const char *path, const char *authority, const char *policy)
{
	struct allowlist_decision d;
	struct allowlist_diag diag;
	struct allowlist_set *set;
	const struct allowlist *al;
	int r;

	allowlist_diag_init(&diag);
	r = allowlist_set_load(path, &set, &diag);
	allowlist_print_diag(&diag);
	allowlist_diag_cleanup(&diag);
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
	allowlist_match_authority(al, authority, EXPLAIN_DEFAULT_PORT, &d);
	allowlist_print_decision(&d, path, policy != NULL ? policy : "default");
	allowlist_set_free(set);
	return d.allowed ? 0 : 1;
}

int
cmd_allowlist(int argc, char **argv)
{
	const char *args[2], *policy = NULL;
	int nargs = 0;

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
	if (strcmp(argv[1], "check") == 0) {
		if (argc != 3) {
			allowlist_usage(stderr);
			return 2;
		}
		return allowlist_check(argv[2]);
	}
	if (strcmp(argv[1], "explain") != 0) {
		fprintf(stderr, "cordon allowlist: unknown command '%s'\n",
		    argv[1]);
		allowlist_usage(stderr);
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--policy") == 0 && i + 1 < argc &&
		    policy == NULL) {
			policy = argv[++i];
		} else if (strncmp(argv[i], "--policy=", 9) == 0 &&
		    policy == NULL) {
			policy = argv[i] + 9;
		} else if (argv[i][0] == '-' && argv[i][1] == '-') {
			fprintf(stderr, "cordon allowlist: bad option '%s'\n",
			    argv[i]);
			allowlist_usage(stderr);
			return 2;
		} else if (nargs < 2) {
			args[nargs++] = argv[i];
		} else {
			allowlist_usage(stderr);
			return 2;
		}
	}
	if (nargs != 2) {
		allowlist_usage(stderr);
		return 2;
	}
	return allowlist_explain(args[0], args[1], policy);
}
