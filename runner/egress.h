/*
 * Egress per run, the runner's side (internal to the runner): a client of
 * cordon-proxy's control socket (proxy/ctl.h: one JSON request line, one
 * answer line), the register/unregister calls a proxy-mode run makes, and
 * how the run's credential reaches the sandbox: first line of its stdin,
 * read by a fixed prelude program that puts it into HTTP(S)_PROXY and then
 * execs the job's usual python command line.
 */
#ifndef CORDON_RUNNER_EGRESS_H
#define CORDON_RUNNER_EGRESS_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "netsetup/netsetup.h"

#define RUNNER_EGRESS_CALL_MS 2000		/* one call, connect to answer */
#define RUNNER_EGRESS_ANSWER_MAX (1u << 20)	/* bytes of one answer line */
#define RUNNER_EGRESS_CRED_LEN 256		/* the credential line, '\n'
						 * included: always this long */

/*
 * The prelude, run as `python3 -I -c PRELUDE ARGS...`: reads exactly
 * RUNNER_EGRESS_CRED_LEN bytes of fd 0 (no buffering, so the rest of
 * stdin stays for the job), sets HTTP_PROXY, HTTPS_PROXY, http_proxy and
 * https_proxy to that line without its padding, and execs
 * `python3 -I ARGS...`, or ARGS itself when ARGS[0] is an absolute path
 * (a bash or node job: docker_argv.h). When those bytes are not one
 * credential line (EOF first, a '\n' before the last byte or none there,
 * a space inside the URL) it exits 1 with a message.
 */
extern const char runner_egress_prelude[];

/*
 * Sends line (one request ending in '\n') to the control socket at path
 * and reads one answer line, all within timeout_ms. Returns 0 with
 * *answer (the parsed object; caller deletes) when its "ok" is true;
 * else *answer is NULL and a reason is in err: -EREMOTEIO (the proxy's
 * "error" text), -ETIMEDOUT, -EMSGSIZE (answer over
 * RUNNER_EGRESS_ANSWER_MAX), -EBADMSG (not an object with a boolean
 * "ok"), -ECONNRESET (closed before a whole line), -ENETDOWN (no socket
 * at path), -ECONNREFUSED (nobody listens), or another negative errno.
 */
int runner_egress_call(const char *path, const char *line,
    int64_t timeout_ms, cJSON **answer, char *err, size_t errlen);

/* "policies" at path: *out is the JSON array of names (caller deletes). */
int runner_egress_policies_at(const char *path, cJSON **out, char *err,
    size_t errlen);

/* 0 when the proxy at path has policy, else -EINVAL with err
 * 'unknown egress policy "x" (policies: a, b)', or the call's error. */
int runner_egress_policy_check(const char *path, const char *policy,
    char *err, size_t errlen);

/* What a run registers. */
struct runner_egress_reg {
	const char *run;		/* the container name */
	const char *addr;		/* its IPv4 address, from the seal */
	const char *policy;
	const char *token;
	int64_t deadline_ms;		/* wall clock, epoch ms */
	int64_t max_conns;
	uint64_t bytes_up, bytes_down;	/* 0: unlimited */
};

/* register; 0 or the call's error (err never holds the token). */
int runner_egress_register(const char *path,
    const struct runner_egress_reg *reg, char *err, size_t errlen);

/* unregister: *report is the answer without "ok" ({"egress":[...],
 * "allowed":N,"denied":N,...}; caller deletes), or NULL on error. */
int runner_egress_unregister(const char *path, const char *run,
    cJSON **report, char *err, size_t errlen);

/* report: the same report so far, the run staying registered (a session
 * after each call). */
int runner_egress_report(const char *path, const char *run,
    cJSON **report, char *err, size_t errlen);

/* The credential line, "http://RUN:TOKEN@GATEWAY:PORT", spaces up to
 * RUNNER_EGRESS_CRED_LEN - 1 bytes, then '\n', into buf (len must exceed
 * RUNNER_EGRESS_CRED_LEN). Pure. 0, -EINVAL (run or token breaks
 * proxy/cred.h's rules) or -ENOSPC (buf too small, or a URL that does
 * not fit: cannot happen within proxy/cred.h's and netsetup.h's limits). */
int runner_egress_cred_line(char *buf, size_t len, const char *run,
    const char *token, const struct netsetup_endpoint *ep);

/*
 * A container's whole stdin: cred (NULL: none; a line ending in '\n'),
 * then, when nonce is not NULL, the nonce and '\n' (the --out wrapper's
 * first line), then the code. Pure. 0 and *out (malloc'd, caller frees
 * after clearing it: it may hold a credential) with *outlen, or -ENOMEM.
 */
int runner_egress_stdin(const char *cred, const char *nonce,
    const void *code, size_t code_len, unsigned char **out, size_t *outlen);

/* The egress policies the running proxy has (asked over its control
 * socket): *out is a JSON array of names (caller cJSON_Deletes). 0, or
 * -ENETDOWN/-ECONNREFUSED/... with a reason in err. */
int runner_egress_policies(const struct config *c, cJSON **out, char *err,
    size_t errlen);

#endif
