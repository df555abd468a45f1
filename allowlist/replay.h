/*
 * Replay: re-decide the requests of a proxy access log (proxy/accesslog.c,
 * one JSON object per line) under another policy set, and group what
 * would change. The question every allowlist edit raises: what would it
 * break, or open, for the traffic we actually have?
 *
 * Which lines are replayed. Only the ones whose outcome the allowlist
 * decided:
 *   - "decision":"allow" (the policy let the request through);
 *   - "decision":"error" with a network reason (dns-*, connect-*,
 *     upstream-*, idle-timeout, client-closed...): the policy allowed it,
 *     then the network failed;
 *   - "decision":"deny" with a policy reason: not-on-policy, no-match,
 *     port-not-allowed, denied-by-entry, wildcard-crosses-public-suffix,
 *     no-policy, invalid-host, invalid-port, and for an inspected request
 *     method-not-allowed and path-not-allowed.
 * Every other line is skipped and counted by its reason: denials that no
 * allowlist edit changes (internal addresses, credentials, limits, TLS
 * checks), and lines that are not access-log lines (a supervisor's log
 * mixes both). A line that is not a JSON object, or an access-log line
 * whose host, port or decision is missing or mistyped, is malformed:
 * counted and named by its line number, never fatal.
 *
 * How a line is decided again: DNS queries (method "DNS") by
 * allowlist_match_any_port, as the closed resolver does; other requests
 * by allowlist_match on host and port, and when the line was inspected
 * and the new deciding entry has options, by allowlist_inspect_check on
 * its method and path. The policy is the line's "policy" ("default" when
 * null). Pure apart from allocation; no I/O.
 */
#ifndef CORDON_ALLOWLIST_REPLAY_H
#define CORDON_ALLOWLIST_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allowlist/allowlist.h"

#define REPLAY_MALFORMED_KEPT	100	/* line numbers kept; rest counted */
#define REPLAY_LINE_MAX		(64u * 1024)	/* longer lines: malformed */

/* One replayable line. Strings point into the record's own storage. */
struct allowlist_replay_rec {
	char time[32];		/* as logged ("" when absent) */
	char policy[ALLOWLIST_NAME_MAX + 1];
	char host[256];
	long port;
	char method[ALLOWLIST_METHOD_MAX + 1];	/* "" when absent */
	char *path;		/* malloc'd; NULL unless inspected */
	bool inspected;
	bool dns;		/* method "DNS": any port decides */
	bool was_allowed;	/* the logged policy verdict */
	char reason[64];	/* the logged reason ("" when absent) */
};

enum allowlist_replay_kind {
	REPLAY_LINE_RECORD = 0,	/* *rec filled: replay it */
	REPLAY_LINE_SKIP,	/* not an allowlist decision: *why says which */
	REPLAY_LINE_MALFORMED,	/* *why says what is wrong */
};

/*
 * Parses line[0..len) (any bytes, need not be NUL-terminated). On
 * REPLAY_LINE_RECORD the caller frees with allowlist_replay_rec_clear.
 * *why points to a static string or into rec->reason; for SKIP it is the
 * reason counted ("not-access-log", "address-blocked"...). -ENOMEM on
 * allocation failure.
 */
int allowlist_replay_parse_line(const char *line, size_t len,
    struct allowlist_replay_rec *rec, const char **why);
void allowlist_replay_rec_clear(struct allowlist_replay_rec *rec);

/* The verdict under the new set. rule: "FILE:LINE: ENTRY" of the deciding
 * entry, or the reason alone when no entry decided. */
struct allowlist_replay_verdict {
	bool allowed;
	const char *reason;	/* static, from the matcher */
	char rule[512];
};

void allowlist_replay_decide(const struct allowlist_set *set,
    const struct allowlist_replay_rec *rec, struct allowlist_replay_verdict *v);

/* Grouped changes: one group per (policy, host, port, from, to, rule). */
struct allowlist_replay_change {
	char *policy, *host, *rule, *reason;
	long port;
	bool from_allowed, to_allowed;
	uint64_t count;
	char first[32], last[32];	/* min and max logged time */
};

struct allowlist_replay_stats {
	uint64_t lines;		/* lines read (empty ones included) */
	uint64_t replayed;	/* records decided again */
	uint64_t unchanged;
	uint64_t changed;
	uint64_t too_old;	/* records before --since */
	uint64_t malformed;
	uint64_t malformed_lines[REPLAY_MALFORMED_KEPT];
	size_t malformed_kept;
	/* Skipped, per reason. */
	struct { char *reason; uint64_t count; } *skipped;
	size_t nskipped;
	struct allowlist_replay_change *changes;
	size_t nchanges, capchanges;
};

void allowlist_replay_stats_init(struct allowlist_replay_stats *st);
void allowlist_replay_stats_free(struct allowlist_replay_stats *st);

/*
 * Feeds one line (line number lineno, 1-based) through parse, decide and
 * grouping. since: skip records whose time sorts before it (an ISO 8601
 * UTC time as the log writes it), or NULL. 0 or -ENOMEM.
 */
int allowlist_replay_feed(struct allowlist_replay_stats *st,
    const struct allowlist_set *set, const char *line, size_t len, uint64_t lineno, const char *since);

/* Sorts the changes (policy, host, port, from) for a stable report. */
void allowlist_replay_sort(struct allowlist_replay_stats *st);

#endif
