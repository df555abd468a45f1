/*
 * A run's egress report: every destination a proxy-mode run tried, whether
 * it was allowed, how often, and the bytes moved. Built by the daemon as
 * connections are decided and closed, returned to the runner by the
 * control protocol's unregister/report. Pure data structure: no I/O.
 *
 * Not thread-safe: the caller serialises every call on one report (the
 * daemon runs on one event loop).
 */
#ifndef CORDON_PROXY_EGRESS_H
#define CORDON_PROXY_EGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* Hosts are kept to this many bytes (cut at a UTF-8 boundary), reasons to
 * PROXY_EGRESS_REASON_MAX. */
#define PROXY_EGRESS_HOST_MAX	255
#define PROXY_EGRESS_REASON_MAX	63
/* The path an attempt took (proxy_egress_note_via), cut to this. */
#define PROXY_EGRESS_VIA_MAX	15
/* The largest max accepted by proxy_egress_new (lookups are linear). */
#define PROXY_EGRESS_MAX_LIMIT	10000
/* The entry cap the daemon uses per run. */
#define PROXY_EGRESS_DEFAULT_MAX 100

struct proxy_egress;

/*
 * What became of one attempt, in the access log's terms: the policy let
 * it through ("allow"), the policy refused it ("deny"), or it failed for
 * another reason before an answer came (DNS, connect, upstream, the
 * client gone: "error"). DENIED and ALLOWED are 0 and 1 on purpose.
 */
enum proxy_egress_decision {
	PROXY_EGRESS_DENIED = 0,
	PROXY_EGRESS_ALLOWED = 1,
	PROXY_EGRESS_ERROR = 2,
};

/* The decision for an access log word: "allow", "deny", anything else
 * (NULL, "error") is an error. Pure. */
enum proxy_egress_decision proxy_egress_decision_of(const char *word);

/*
 * Creates an empty report holding at most max distinct entries
 * (0..PROXY_EGRESS_MAX_LIMIT). Entries are allocated as they come.
 * Returns NULL with errno EINVAL or ENOMEM. Free with proxy_egress_free.
 */
struct proxy_egress *proxy_egress_new(size_t max);
/* Frees e; NULL is fine. */
void proxy_egress_free(struct proxy_egress *e);

/*
 * Notes one attempt to reach host:port and the decision. Entries are keyed
 * by (host, port, decision), host compared ASCII-case-insensitively (and
 * stored lowercased, cut to PROXY_EGRESS_HOST_MAX bytes), kept in the
 * order of their first attempt, and count their attempts. reason (NULL
 * for none; cut to PROXY_EGRESS_REASON_MAX bytes) and status (the HTTP
 * status the client got, 0 for none) are those of the entry's FIRST
 * attempt: an entry never changes except for its counters.
 * When the attempt needs a new entry and max entries exist, it is dropped:
 * the report is marked truncated and counts the dropped attempt. Every
 * attempt, kept or dropped, counts in the "allowed"/"denied"/"errors"
 * totals.
 * Returns 0, -ENOSPC when dropped, -ENOMEM when an entry could not be
 * allocated (then also dropped, as above), -EINVAL for a NULL or empty
 * host or a decision out of range (not counted).
 */
int proxy_egress_note(struct proxy_egress *e, const char *host, uint16_t port,
    enum proxy_egress_decision decision, const char *reason, int status);

/*
 * The same, for callers that note an attempt when it ENDS: first is when
 * it started (any clock, the same for every call on e). Entries are kept
 * in order of first (equal values in the order noted), and an entry noted
 * again with an earlier first takes that attempt's reason and status, so
 * the report reads in order of first attempt whatever order attempts end
 * in. Use either this or proxy_egress_note on one report, not both.
 */
int proxy_egress_note_at(struct proxy_egress *e, const char *host,
    uint16_t port, enum proxy_egress_decision decision, const char *reason,
    int status, int64_t first);

/*
 * The same, with the path the attempt took: entries are then keyed by
 * (host, port, decision, via) and carry "via" in the report. The daemon's
 * words: "connect" (a CONNECT tunnel through the proxy port), "forward"
 * (a plain-HTTP request through it), "proxy" (refused on the proxy port
 * before its request line was read), "tls", "http", "raw" (transparent:
 * decided by the ClientHello's server name, the Host header, the name
 * the resolver gave the address), "dns" (the closed resolver, port 53:
 * its entries are keyed by reason too, so one per name and outcome). via
 * NULL is proxy_egress_note_at.
 */
int proxy_egress_note_via(struct proxy_egress *e, const char *host,
    uint16_t port, const char *via, enum proxy_egress_decision decision,
    const char *reason, int status, int64_t first);
/*
 * Adds bytes sent (up, client to upstream) and received (down) to the
 * allowed entry for host:port (same host matching). Counters saturate at
 * UINT64_MAX. Returns 0, or -ENOENT when there is no such entry (never
 * noted, or dropped by truncation): the bytes are not kept.
 */
int proxy_egress_bytes(struct proxy_egress *e, const char *host,
    uint16_t port, uint64_t up, uint64_t down);
/* The same for the entry noted with via (proxy_egress_note_via). */
int proxy_egress_bytes_via(struct proxy_egress *e, const char *host,
    uint16_t port, const char *via, uint64_t up, uint64_t down);

/*
 * The report as a new JSON object (caller frees with cJSON_Delete), NULL
 * on ENOMEM:
 *   {"egress":[{"host":H,"port":N,
 *               "decision":"allowed"|"denied"|"error",
 *               "reason":R,"status":N,"count":N,"bytes_up":N,
 *               "bytes_down":N[,"via":V]}, ...],
 *    "egress_truncated":true, "egress_dropped":N,   (only when cut)
 *    "allowed":N, "denied":N, "errors":N}            (attempt totals)
 * reason is "" when none. Strings are valid UTF-8 (bytes that are not are
 * replaced by U+FFFD).
 */
cJSON *proxy_egress_to_json(const struct proxy_egress *e);

#endif
