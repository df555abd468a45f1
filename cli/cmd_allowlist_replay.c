/*
 * `cordon allowlist replay [--log FILE ...] [--since DURATION] DIR`: the
 * requests of proxy access logs, decided again under the allowlists in
 * DIR (allowlist/replay.h), with every change grouped by policy, host and
 * port. Prints one JSON object; exits 0 when nothing changes, 1 when
 * something does, 2 on error (like diff).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "allowlist/replay.h"
#include "cli/cmd.h"
#include "common/json.h"
#include "common/util.h"

#define REPLAY_LOGS_MAX	64

static void
replay_usage(FILE *f)
{
	fprintf(f,
	    "usage: cordon allowlist replay [--log FILE ...] "
	    "[--since DURATION] FILE|DIR\n"
	    "\n"
	    "Decides every request of the proxy's access log again under the "
	    "allowlists\n"
	    "in FILE|DIR, as the proxy would, and prints the changes as JSON, "
	    "grouped by\n"
	    "policy, host and port: allowed->denied and denied->allowed, with "
	    "counts,\n"
	    "first and last time, and the rule that now decides.\n"
	    "--log FILE       an access log (JSON lines; '-' for stdin; "
	    "repeatable;\n"
	    "                 default stdin). Lines that are not access-log "
	    "lines are\n"
	    "                 skipped; malformed ones are counted and named by "
	    "line number.\n"
	    "--since DURATION only requests logged in the last DURATION "
	    "(30s, 15m, 2h, 7d)\n"
	    "Exit 0: nothing changes; 1: something changes; 2: usage error, "
	    "broken\n"
	    "allowlist or unreadable log.\n");
}

/* "90s", "15m", "2h", "7d" (a bare number is seconds) -> milliseconds. */
static int
parse_duration(const char *s, int64_t *ms)
{
	char *end;
	long long v;
	int64_t unit = 1000;

	if (s[0] < '0' || s[0] > '9')
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || v <= 0 || v > 3650LL * 86400)
		return -EINVAL;
	if (strcmp(end, "d") == 0)
		unit = 86400000;
	else if (strcmp(end, "h") == 0)
		unit = 3600000;
	else if (strcmp(end, "m") == 0)
		unit = 60000;
	else if (strcmp(end, "s") != 0 && *end != '\0')
		return -EINVAL;
	if (v > 3650LL * 86400000 / unit)
		return -EINVAL;
	*ms = v * unit;
	return 0;
}

static int
replay_file(struct allowlist_replay_stats *st, const struct allowlist_set *set,
    const char *path, const char *since)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	uint64_t lineno = 0;
	int rc = 0;

	if (f == NULL) {
		fprintf(stderr, "cordon allowlist replay: %s: %s\n", path,
		    strerror(errno));
		return -1;
	}
	while ((n = getline(&line, &cap, f)) >= 0) {
		if ((rc = allowlist_replay_feed(st, set, line, (size_t)n, ++lineno,
		    since)) < 0) {
			fprintf(stderr, "cordon allowlist replay: %s: %s\n",
			    path, strerror(-rc));
			break;
		}
	}
	if (rc == 0 && ferror(f)) {
		fprintf(stderr, "cordon allowlist replay: %s: read error\n",
		    path);
		rc = -1;
	}
	free(line);
	if (f != stdin)
		fclose(f);
	return rc < 0 ? -1 : 0;
}

static cJSON *
replay_report(const struct allowlist_replay_stats *st, const char *dir,
    const char *const *logs, size_t nlogs, const char *since)
{
	cJSON *o = cJSON_CreateObject(), *a, *x;

	if (o == NULL)
		return NULL;
	cJSON_AddStringToObject(o, "allowlist", dir);
	a = cJSON_AddArrayToObject(o, "logs");
	for (size_t i = 0; a != NULL && i < nlogs; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(logs[i]));
	if (since != NULL)
		cJSON_AddStringToObject(o, "since", since);
	cJSON_AddNumberToObject(o, "lines", (double)st->lines);
	cJSON_AddNumberToObject(o, "replayed", (double)st->replayed);
	cJSON_AddNumberToObject(o, "unchanged", (double)st->unchanged);
	cJSON_AddNumberToObject(o, "changed", (double)st->changed);
	if (since != NULL)
		cJSON_AddNumberToObject(o, "before_since", (double)st->too_old);
	x = cJSON_AddObjectToObject(o, "skipped");
	for (size_t i = 0; x != NULL && i < st->nskipped; i++)
		cJSON_AddNumberToObject(x, st->skipped[i].reason,
		    (double)st->skipped[i].count);
	cJSON_AddNumberToObject(o, "malformed", (double)st->malformed);
	a = cJSON_AddArrayToObject(o, "malformed_lines");
	for (size_t i = 0; a != NULL && i < st->malformed_kept; i++)
		cJSON_AddItemToArray(a,
		    cJSON_CreateNumber((double)st->malformed_lines[i]));
	a = cJSON_AddArrayToObject(o, "changes");
	for (size_t i = 0; a != NULL && i < st->nchanges; i++) {
		const struct allowlist_replay_change *c = &st->changes[i];
		cJSON *e = cJSON_CreateObject();
		if (e == NULL)
			break;
		cJSON_AddStringToObject(e, "policy", c->policy);
		cJSON_AddStringToObject(e, "host", c->host);
		cJSON_AddNumberToObject(e, "port", (double)c->port);
		cJSON_AddStringToObject(e, "from",
		    c->from_allowed ? "allowed" : "denied");
		cJSON_AddStringToObject(e, "to",
		    c->to_allowed ? "allowed" : "denied");
		cJSON_AddNumberToObject(e, "count", (double)c->count);
		if (c->first[0] != '\0') {
			cJSON_AddStringToObject(e, "first", c->first);
			cJSON_AddStringToObject(e, "last", c->last);
		}
		cJSON_AddStringToObject(e, "reason", c->reason);
		cJSON_AddStringToObject(e, "rule", c->rule);
		cJSON_AddItemToArray(a, e);
	}
	return o;
}

/* Loads path for replay (secret names are not looked up: replay never
 * needs their values). Prints the loader's errors. */
static struct allowlist_set *
replay_load(const char *who, const char *path)
{
	struct allowlist_load_opts lo = { .secrets_unverified = true };
	struct allowlist_set *set = NULL;
	struct allowlist_diag diag;
	int rc;

	allowlist_diag_init(&diag);
	rc = allowlist_set_load_opts(path, &lo, &set, &diag);
	for (size_t i = 0; i < diag.count; i++)
		if (!diag.items[i].warning || rc != 0)
			fprintf(stderr, "%s\n", diag.items[i].text);
	allowlist_diag_cleanup(&diag);
	if (rc != 0)
		fprintf(stderr, "%s: %s: not loaded (%s)\n", who, path,
		    strerror(-rc));
	return set;
}

int
cmd_allowlist_replay_log(const char *allowlist, const char *access_log,
    unsigned keep)
{
	struct allowlist_replay_stats st;
	struct allowlist_set *set;
	char path[PATH_MAX + 16];
	size_t to_allowed = 0, to_denied = 0;
	int rc = 0;

	if ((set = replay_load("cordon net reload --replay", allowlist)) ==
	    NULL)
		return -1;
	allowlist_replay_stats_init(&st);
	/* Rotated files first, oldest (highest number) first. */
	for (unsigned i = keep; rc == 0 && i >= 1; i--) {
		snprintf(path, sizeof(path), "%s.%u", access_log, i);
		if (access(path, F_OK) == 0)
			rc = replay_file(&st, set, path, NULL);
	}
	if (rc == 0 && access(access_log, F_OK) == 0)
		rc = replay_file(&st, set, access_log, NULL);
	if (rc == 0) {
		allowlist_replay_sort(&st);
		for (size_t i = 0; i < st.nchanges; i++) {
			const struct allowlist_replay_change *c =
			    &st.changes[i];
			if (c->to_allowed)
				to_allowed += c->count;
			else
				to_denied += c->count;
		}
		printf("replay of %s under %s: %llu request(s), %llu "
		    "change(s): %zu to allowed, %zu to denied; %llu "
		    "malformed line(s)\n", access_log, allowlist,
		    (unsigned long long)st.replayed,
		    (unsigned long long)st.changed, to_allowed, to_denied,
		    (unsigned long long)st.malformed);
		for (size_t i = 0; i < st.nchanges; i++) {
			const struct allowlist_replay_change *c =
			    &st.changes[i];
			printf("  %s %s:%ld %s->%s x%llu (%s)\n", c->policy,
			    c->host, c->port, c->from_allowed ? "allowed" :
			    "denied", c->to_allowed ? "allowed" : "denied",
			    (unsigned long long)c->count, c->rule);
		}
	}
	allowlist_replay_stats_free(&st);
	allowlist_set_free(set);
	return rc;
}

int
cmd_allowlist_replay(int argc, char **argv)
{
	const char *logs[REPLAY_LOGS_MAX], *dir = NULL, *since_arg = NULL;
	char since[32], *out;
	struct allowlist_set *set = NULL;
	struct allowlist_replay_stats st;
	size_t nlogs = 0;
	int64_t dur = 0;
	cJSON *rep;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "--help") == 0) {
			replay_usage(stdout);
			return 0;
		}
	}
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--log") == 0 && i + 1 < argc) {
			if (nlogs == REPLAY_LOGS_MAX) {
				fprintf(stderr, "cordon allowlist replay: at "
				    "most %d --log files\n", REPLAY_LOGS_MAX);
				return 2;
			}
			logs[nlogs++] = argv[++i];
		} else if (strcmp(argv[i], "--since") == 0 && i + 1 < argc &&
		    since_arg == NULL) {
			since_arg = argv[++i];
			if (parse_duration(since_arg, &dur) != 0) {
				fprintf(stderr, "cordon allowlist replay: "
				    "--since '%s': not a duration (30s, 15m, "
				    "2h, 7d; at most 3650d)\n", since_arg);
				return 2;
			}
		} else if (argv[i][0] == '-' && argv[i][1] != '\0') {
			fprintf(stderr, "cordon allowlist replay: bad option "
			    "'%s'\n", argv[i]);
			replay_usage(stderr);
			return 2;
		} else if (dir == NULL) {
			dir = argv[i];
		} else {
			replay_usage(stderr);
			return 2;
		}
	}
	if (dir == NULL) {
		replay_usage(stderr);
		return 2;
	}
	if (nlogs == 0) {
		if (isatty(STDIN_FILENO)) {
			fprintf(stderr, "cordon allowlist replay: no --log "
			    "FILE given and stdin is a terminal: give the "
			    "access log with --log FILE or on stdin\n");
			return 2;
		}
		logs[nlogs++] = "-";
	}
	if ((set = replay_load("cordon allowlist replay", dir)) == NULL)
		return 2;
	if (since_arg != NULL) {
		struct timeval tv;
		gettimeofday(&tv, NULL);
		time_format_utc((int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000 -
		    dur, since);
	}
	allowlist_replay_stats_init(&st);
	rc = 0;
	for (size_t i = 0; i < nlogs && rc == 0; i++)
		rc = replay_file(&st, set, logs[i],
		    since_arg != NULL ? since : NULL);
	if (rc == 0) {
		allowlist_replay_sort(&st);
		rep = replay_report(&st, dir, logs, nlogs,
		    since_arg != NULL ? since : NULL);
		out = rep != NULL ? json_print_line(rep) : NULL;
		if (out == NULL) {
			fprintf(stderr, "cordon allowlist replay: out of "
			    "memory\n");
			rc = -1;
		} else {
			fputs(out, stdout);
			free(out);
		}
		cJSON_Delete(rep);
	}
	rc = rc != 0 ? 2 : st.changed > 0 ? 1 : 0;
	allowlist_replay_stats_free(&st);
	allowlist_set_free(set);
	return rc;
}
