/*
 * cordon-proxy's control protocol: the runner registers a proxy-mode run
 * (its address, policy, credential and limits) before the run's code is
 * written, and unregisters it at the end to get the run's egress report.
 * One JSON object per line over a root-only unix socket. This file holds
 * the pure parts, shared by the daemon and the runner: request parsing and
 * formatting, and answer building. No I/O.
 */
#ifndef CORDON_PROXY_CTL_H
#define CORDON_PROXY_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cjson/cJSON.h>

#include "proxy/cred.h"

/*
 * Requests, one JSON object per line:
 *   {"op":"register","run":ID,"addr":IP,"policy":NAME,"token":HEX,
 *    "deadline_ms":N[,"max_conns":N][,"bytes_up":N][,"bytes_down":N]}
 *   {"op":"unregister","run":ID}    answer: the run's egress report
 *   {"op":"report","run":ID}        answer: the report so far
 *   {"op":"policies"}
 *   {"op":"ping"}
 *   {"op":"reload"}   answer: the new generation and its counts, or the
 *                     loader's FILE:LINE diagnostics (the old set stays)
 *   {"op":"policy","run":ID,"policy":NAME}   a live run's policy from now
 *                     on: new connections are judged under NAME at once,
 *                     open ones NAME denies are closed; answer:
 *                     {"ok":true,"policy":NAME,"was":OLD,"closed":[{"host",
 *                     "port","reason"}...]}
 * Rules (anything else is refused, nothing is ignored):
 *   - the line is at most PROXY_CTL_LINE_MAX bytes, with or without one
 *     final '\n'; no other control byte anywhere (so no raw newline, CR
 *     or NUL inside) except HTAB as whitespace;
 *   - one JSON object; "op" is a known name; every field the op needs is
 *     present; a field the op does not take is "unknown field"; a key
 *     given twice is "duplicate field" (cJSON would keep both, and which
 *     one wins must not depend on the reader);
 *   - run and token: the credential rules of proxy/cred.h;
 *   - addr: an IPv4 or IPv6 literal (inet_pton, no zone id, no brackets),
 *     stored in its canonical inet_ntop text. It is only a literal check:
 *     address policy is enforced elsewhere;
 *   - policy: 1-64 of [A-Za-z0-9._-], not starting with '.';
 *   - numbers are written as plain decimal digits (no sign, fraction or
 *     exponent: checked on the text, so "1.0" and "-0" are refused), at
 *     most PROXY_CTL_NUM_MAX = 2^53 - 1, the largest bound below which
 *     every integer is exactly one double (so 2^53 + 1 cannot be read as
 *     2^53): deadline_ms 1..2^53-1, max_conns 1..65535, bytes_up and
 *     bytes_down 0..2^53-1 (0 meaning unlimited). deadline_ms is
 *     wall-clock time in milliseconds since the epoch (CLOCK_REALTIME, as
 *     time_wall_ms()); the daemon refuses a deadline already past.
 */
#define PROXY_CTL_LINE_MAX	4096
#define PROXY_CTL_POLICY_MAX	64
#define PROXY_CTL_NUM_MAX	((int64_t)9007199254740991)	/* 2^53 - 1 */
#define PROXY_CTL_MAX_CONNS_MAX	65535
/* An optional number that was absent: the proxy's default applies. */
#define PROXY_CTL_UNSET		((int64_t)-1)

enum proxy_ctl_op {
	PROXY_CTL_NONE = 0,	/* a reset request */
	PROXY_CTL_REGISTER,
	PROXY_CTL_UNREGISTER,
	PROXY_CTL_REPORT,
	PROXY_CTL_POLICIES,
	PROXY_CTL_PING,
	PROXY_CTL_RELOAD,
	PROXY_CTL_POLICY,
};

/*
 * One request. Plain value, nothing to free. Fields an op does not take
 * are zero (strings empty) and the optional numbers PROXY_CTL_UNSET. A
 * request from proxy_ctl_parse starts from a zeroed struct, so two parses
 * of equivalent lines compare equal with memcmp.
 */
struct proxy_ctl_req {
	enum proxy_ctl_op op;
	char run[PROXY_CRED_RUN_MAX + 1];	/* all but policies, ping */
	/* register only */
	char addr_text[INET6_ADDRSTRLEN];	/* canonical text */
	struct sockaddr_storage addr;		/* AF_INET/AF_INET6, port 0 */
	char policy[PROXY_CTL_POLICY_MAX + 1];	/* register and policy */
	char token[PROXY_CRED_TOKEN_MAX + 1];
	int64_t deadline_ms;
	int64_t max_conns;	/* 1..65535 or PROXY_CTL_UNSET */
	int64_t bytes_up;	/* 0 = unlimited, or PROXY_CTL_UNSET */
	int64_t bytes_down;	/* 0 = unlimited, or PROXY_CTL_UNSET */
};

/* Resets req to the empty request (op NONE, optional numbers UNSET). */
void proxy_ctl_req_reset(struct proxy_ctl_req *req);

/* Name of op as written in "op" ("register", ...), or NULL for NONE or an
 * unknown value. Static storage. */
const char *proxy_ctl_op_name(enum proxy_ctl_op op);

/*
 * Parses one request line[0..len) (need not be NUL-terminated) under the
 * rules above. Returns 0 and fills *out, or: -EMSGSIZE (line too long),
 * -EBADMSG (not JSON, or a control byte; cJSON reports a failed
 * allocation the same way), -EINVAL (JSON but not a valid request). On
 * failure *out is reset and a one-line reason is written to err (when err
 * is not NULL and errlen > 0); the reason holds only printable ASCII.
 */
int proxy_ctl_parse(const char *line, size_t len, struct proxy_ctl_req *out,
    char *err, size_t errlen);

/*
 * Builds the request line for req (any op), ending in '\n', with the
 * fields the op takes (the others are not read); optional numbers are
 * written only when not PROXY_CTL_UNSET. addr is taken from addr_text
 * (the sockaddr is not read) and written in canonical text. Every field is
 * checked by the same rules as proxy_ctl_parse, so parse(format(req))
 * gives req back for any req that proxy_ctl_parse made. Returns a malloc'd
 * string (caller frees), or NULL with errno EINVAL (req breaks a rule, or
 * the line would pass PROXY_CTL_LINE_MAX) or ENOMEM.
 */
char *proxy_ctl_format(const struct proxy_ctl_req *req);

/*
 * Answer lines, each one JSON object ending in '\n' (caller frees):
 *   proxy_ctl_ok:    {"ok":true, <the members of payload>}
 *   proxy_ctl_error: {"ok":false,"error":MSG}
 * proxy_ctl_ok takes ownership of payload (NULL for none), which must be
 * an object without "ok" or "error" members; it is freed in every case.
 * msg's bytes are made valid UTF-8. NULL with errno EINVAL (bad payload)
 * or ENOMEM. Answers have no length cap (a report of 100 entries is a few
 * tens of kB): readers size their buffer accordingly.
 */
char *proxy_ctl_ok(cJSON *payload);
char *proxy_ctl_error(const char *msg);

#endif
