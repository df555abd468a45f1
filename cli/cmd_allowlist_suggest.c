/*
 * `cordon allowlist suggest [--log FILE ...] [--result RUN.json ...]
 * --policy NAME [--wildcards]`: allowlist lines that would allow what
 * policy NAME denied for not being on it (not-on-policy) or for the port
 * (port-not-allowed), from access logs and run results
 * (allowlist/suggest.h). Prints allowlist text; exits 0, or 2 on error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "allowlist/replay.h"
#include "allowlist/suggest.h"
#include "cli/cmd.h"
#include "common/json.h"
#include "proxy/addr.h"

#define SUGGEST_SOURCES_MAX	64
#define SUGGEST_RESULT_MAX	(64u << 20)

static void
suggest_usage(FILE *f)
{
	fprintf(f,
	    "usage: cordon allowlist suggest [--log FILE ...] "
	    "[--result RUN.json ...]\n"
	    "                                --policy NAME [--wildcards]\n"
	    "\n"
	    "Prints allowlist lines that would allow what policy NAME denied "
	    "as not on\n"
	    "the policy (not-on-policy) or on another port "
	    "(port-not-allowed), from\n"
	    "proxy access logs (--log; '-' for stdin) and run results "
	    "(--result, the\n"
	    "JSON `cordon run` prints). One exact host per line with the "
	    "ports seen and\n"
	    "a comment with the count and an example. Never an internal name "
	    "or\n"
	    "address, never a line `cordon allowlist check` rejects or warns "
	    "about.\n"
	    "--wildcards  three or more sibling names become one *.PARENT "
	    "line when\n"
	    "             that is valid (never over a public suffix)\n"
	    "Review the lines before adding them. Exit 0, or 2 on error.\n");
}

static bool
suggest_reason(const char *reason)
{
	static const char *const words[] = { "not-on-policy", "no-match",
	    "port-not-allowed" };

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		size_t n = strlen(words[i]);
		if (strncmp(reason, words[i], n) == 0 &&
		    (reason[n] == '\0' || reason[n] == ' '))
			return true;
	}
	return false;
}

static bool
suggest_internal(const struct allowlist_host *h)
{
	enum addr_class c = h->family == AF_INET ?
	    proxy_addr_classify_in((const struct in_addr *)(const void *)
	    h->addr) :
	    proxy_addr_classify_in6((const struct in6_addr *)(const void *)
	    h->addr);

	return c != ADDR_PUBLIC;
}

static int
suggest_log(struct allowlist_suggest *s, const char *path, const char *policy,
    uint64_t *denials)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	struct allowlist_replay_rec r;
	char *line = NULL, ex[400];
	const char *why;
	size_t cap = 0;
	ssize_t n;
	int rc = 0;

	if (f == NULL) {
		fprintf(stderr, "cordon allowlist suggest: %s: %s\n", path,
		    strerror(errno));
		return -1;
	}
	while (rc == 0 && (n = getline(&line, &cap, f)) >= 0) {
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			n--;
		if (n == 0)
			continue;
		rc = allowlist_replay_parse_line(line, (size_t)n, &r, &why);
		if (rc != REPLAY_LINE_RECORD) {
			rc = rc < 0 ? rc : 0;
			continue;
		}
		if (!r.was_allowed && strcmp(r.policy, policy) == 0 &&
		    suggest_reason(r.reason)) {
			snprintf(ex, sizeof(ex), "%s%s%s %s:%ld", r.time,
			    r.time[0] != '\0' ? " " : "",
			    r.method[0] != '\0' ? r.method : "request", r.host,
			    r.port);
			rc = allowlist_suggest_add(s, r.host, r.dns ? 0 :
			    r.port, 1, ex);
			(*denials)++;
		}
		allowlist_replay_rec_clear(&r);
	}
	free(line);
	if (f != stdin)
		fclose(f);
	if (rc < 0) {
		fprintf(stderr, "cordon allowlist suggest: %s: %s\n", path,
		    strerror(-rc));
		return -1;
	}
	return 0;
}

static int
suggest_result(struct allowlist_suggest *s, const char *path,
    const char *policy, uint64_t *denials)
{
	const cJSON *egress, *e;
	const char *pol = NULL;
	char err[256], ex[300];
	cJSON *o = NULL;
	int rc;

	if ((rc = json_parse_file(path, SUGGEST_RESULT_MAX, &o, err,
	    sizeof(err))) < 0) {
		fprintf(stderr, "cordon allowlist suggest: %s: %s\n", path,
		    err);
		return -1;
	}
	if (json_get_string(o, "policy", &pol) != 0 ||
	    json_get_array(o, "egress", &egress) != 0) {
		fprintf(stderr, "cordon allowlist suggest: %s: not a proxy-mode "
		    "run result (no \"policy\" string and \"egress\" list)\n",
		    path);
		cJSON_Delete(o);
		return -1;
	}
	if (strcmp(pol, policy) != 0) {
		fprintf(stderr, "cordon allowlist suggest: %s: run under policy "
		    "'%s', not '%s': skipped\n", path, pol, policy);
		cJSON_Delete(o);
		return 0;
	}
	cJSON_ArrayForEach(e, egress) {
		const char *host, *decision, *reason;
		int64_t port, count = 1;

		if (json_get_string(e, "host", &host) != 0 ||
		    json_get_string(e, "decision", &decision) != 0 ||
		    json_get_string(e, "reason", &reason) != 0 ||
		    json_get_int(e, "port", 0, 65535, &port) != 0 ||
		    (cJSON_GetObjectItemCaseSensitive(e, "count") != NULL &&
		    json_get_int(e, "count", 0, INT64_MAX, &count) != 0)) {
			fprintf(stderr, "cordon allowlist suggest: %s: an egress "
			    "entry without host, port, decision and reason: "
			    "skipped\n", path);
			continue;
		}
		if (strcmp(decision, "denied") != 0 || !suggest_reason(reason))
			continue;
		snprintf(ex, sizeof(ex), "run result %s", path);
		if (allowlist_suggest_add(s, host, port, (uint64_t)count,
		    ex) < 0) {
			cJSON_Delete(o);
			fprintf(stderr, "cordon allowlist suggest: out of "
			    "memory\n");
			return -1;
		}
		*denials += (uint64_t)count;
	}
	cJSON_Delete(o);
	return 0;
}

int
cmd_allowlist_suggest(int argc, char **argv)
{
	const char *logs[SUGGEST_SOURCES_MAX], *results[SUGGEST_SOURCES_MAX];
	const char *policy = NULL;
	size_t nlogs = 0, nresults = 0;
	bool wildcards = false;
	struct allowlist_suggest *s;
	uint64_t denials = 0;
	char header[300], *out = NULL;
	int rc = 0, entries;

	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "--help") == 0) {
			suggest_usage(stdout);
			return 0;
		}
	for (int i = 1; i < argc; i++) {
		bool more = i + 1 < argc;
		if (strcmp(argv[i], "--log") == 0 && more &&
		    nlogs < SUGGEST_SOURCES_MAX) {
			logs[nlogs++] = argv[++i];
		} else if (strcmp(argv[i], "--result") == 0 && more &&
		    nresults < SUGGEST_SOURCES_MAX) {
			results[nresults++] = argv[++i];
		} else if (strcmp(argv[i], "--policy") == 0 && more &&
		    policy == NULL) {
			policy = argv[++i];
		} else if (strcmp(argv[i], "--wildcards") == 0) {
			wildcards = true;
		} else {
			fprintf(stderr, "cordon allowlist suggest: bad argument "
			    "'%s'\n", argv[i]);
			suggest_usage(stderr);
			return 2;
		}
	}
	if (policy == NULL || nlogs + nresults == 0) {
		fprintf(stderr, "cordon allowlist suggest: %s\n", policy == NULL ?
		    "--policy NAME is required" :
		    "give at least one --log FILE or --result RUN.json");
		suggest_usage(stderr);
		return 2;
	}
	if ((s = allowlist_suggest_new()) == NULL) {
		fprintf(stderr, "cordon allowlist suggest: out of memory\n");
		return 2;
	}
	for (size_t i = 0; rc == 0 && i < nlogs; i++)
		rc = suggest_log(s, logs[i], policy, &denials);
	for (size_t i = 0; rc == 0 && i < nresults; i++)
		rc = suggest_result(s, results[i], policy, &denials);
	if (rc == 0) {
		snprintf(header, sizeof(header), "suggested for policy %s from "
		    "%llu denial(s); review before adding", policy,
		    (unsigned long long)denials);
		entries = allowlist_suggest_render(s, wildcards,
		    suggest_internal, header, &out);
		if (entries < 0) {
			fprintf(stderr, "cordon allowlist suggest: out of "
			    "memory\n");
			rc = -1;
		} else {
			fputs(out, stdout);
			fprintf(stderr, "cordon allowlist suggest: %d line(s) "
			    "suggested\n", entries);
		}
		free(out);
	}
	allowlist_suggest_free(s);
	return rc == 0 ? 0 : 2;
}
