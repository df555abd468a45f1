/*
 * Sessions: one hardened container (the same `docker run` argv, probe rule
 * and removal as a run: container.h, docker_argv.h) whose python is a
 * fixed driver program (runner_session_program) that runs calls one after
 * another in one interpreter, so that variables and /tmp persist. The
 * code of each call goes to the driver on stdin, never on argv.
 *
 * Trust: the user code runs in the driver's worker, a child process that
 * holds neither the session's nonce nor the driver's result stream (the
 * driver forks it before the nonce arrives and gives each call its own
 * pipes and status socket: session_driver.c). So no code writes a result
 * frame: every frame must carry the session's nonce and the call's
 * sequence number, its lengths are checked against the caps, and a byte
 * on the result stream outside a frame (gVisor lets the code reopen the
 * driver's stdout through /proc, but not learn the nonce), or a frame that
 * does not parse, ends the session (sandbox_error), so a desynchronised
 * stream is never read as a later call's result. A call's status comes
 * only from the worker process. What code can still do is change the
 * interpreter that later calls run in (its functions, modules, threads:
 * that is a session's state), so a later call's output and exit code are
 * only as trustworthy as the calls before it.
 *
 * A call that does not end normally (timeout, OOM, the caller's cancel,
 * the driver gone, a framing error) ends the session: the container is
 * removed. Not thread-safe: one call at a time per session (the caller
 * serialises).
 */
#ifndef CORDON_RUNNER_SESSION_H
#define CORDON_RUNNER_SESSION_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "runner/runner.h"

#define RUNNER_SESSION_NONCE_LEN 32	/* hex characters */
#define RUNNER_SESSION_HDR_MAX 200	/* a frame's header line, '\n' incl. */

/* The driver program (session_driver.c), NUL-terminated; caller frees.
 * NULL when out of memory. */
char *runner_session_program(void);

struct runner_session;

struct runner_session_opts {
	enum runner_net net;
	const char *policy;		/* net proxy: the egress policy (NULL:
					 * egress_default_policy); must be
					 * NULL for net none */
	const char *profile;		/* the image profile (NULL: the
					 * config's current one); it must
					 * offer python */
	const char *label;		/* cordon.session label and audit; NULL:
					 * "session" ([A-Za-z0-9._-], <= 64) */
	int64_t max_lifetime_s;		/* the label deadline for `cordon gc`;
					 * 0: 3600 */
	const char *const *in;		/* host paths copied in, read-only at
					 * /in for the session's life, as a
					 * run's --in (files_stage_in) */
	size_t nin;			/* <= RUNNER_MAX_IN */
	const atomic_int *cancel;	/* may be NULL: stops the start */
};

/* Starts a session's container and waits for its driver's ready frame
 * (at most limits.timeout_s), in a host-wide run slot held only while it
 * starts. Refuses, as runner_run does, without a pinned image or a
 * passing probe record (of the session's profile and net mode).
 *
 * Net proxy: as a proxy-mode run (runner.c), the policy must exist in the
 * running proxy, the container is sealed and registered with the proxy
 * (one run identity, the container's name, with one token, for the whole
 * session: its deadline is max_lifetime_s) before anything is written to
 * it, and the credential reaches the driver as the first line of its
 * stdin through the egress prelude. The registration ends with the
 * session (runner_session_end).
 *
 * 0 and *out (runner_session_free), or a negative errno with a one-line
 * reason in err; nothing is left running or registered on failure. */
int runner_session_start(const struct config *c,
    const struct runner_session_opts *o, struct runner_session **out,
    char *err, size_t errlen);

/* Runs req->code (and req->timeout_s, max_output, keep, cancel; other
 * fields are ignored) in the session, in a host-wide run slot. In net
 * proxy mode res->egress is the proxy's report of the session's egress so
 * far (every call's, not only this one's) and res->policy its policy.
 * Returns 0
 * with a result (res->status: ok, output_truncated, or timeout, oom,
 * closed_early, sandbox_error, which also end the session; an exception
 * is status ok, exit_code 1, the traceback in stderr; SystemExit(N) is
 * exit_code N), or a negative errno with a reason in err: -EINVAL for a
 * bad request, -ESHUTDOWN when the session had already ended, -EBUSY (no
 * slot). res is released with runner_result_cleanup. */
int runner_session_call(struct runner_session *s,
    const struct runner_request *req, struct runner_result *res, char *err,
    size_t errlen);

/* True once the session's container is gone (or being removed). */
bool runner_session_ended(const struct runner_session *s);

/* Between calls, without blocking: true when the session's container is
 * gone without a call noticing it (its `docker run` exited or closed the
 * result stream: dockerd stopped or restarted, the container removed or
 * killed from outside), with why in why. The session is not ended here:
 * the caller ends it (runner_session_end or _free). Not during a call. */
bool runner_session_gone(struct runner_session *s, char *why, size_t len);
/* The container's name (cordon-<hex>). */
const char *runner_session_container(const struct runner_session *s);
/* Milliseconds its start took (docker run to the ready frame). */
int64_t runner_session_start_ms(const struct runner_session *s);
/* Its net mode, profile name and (net proxy) policy. */
enum runner_net runner_session_net(const struct runner_session *s);
const char *runner_session_profile(const struct runner_session *s);
const char *runner_session_policy(const struct runner_session *s);

/*
 * Net proxy: asks the proxy to judge the session's egress under policy
 * from now on (the control socket's policy op): new connections at once,
 * open ones the new policy denies are closed. *answer gets the proxy's
 * answer ({"ok":true,"policy","was","closed":[...]}, caller deletes).
 * Does not change runner_session_policy: the caller does, with
 * runner_session_policy_set, where no call of the session runs. 0, -EINVAL
 * (not a proxy-mode session), -ESRCH (not registered), or the control
 * call's error with err.
 */
int runner_session_policy_change(struct runner_session *s,
    const char *policy, cJSON **answer, char *err, size_t errlen);
void runner_session_policy_set(struct runner_session *s, const char *policy);

/* Removes the container (if not yet) and kills and reaps `docker run`.
 * Idempotent. */
void runner_session_end(struct runner_session *s);

/* runner_session_end, then frees. A removal that failed (dockerd down) is
 * tried again every 250 ms for up to 60 s first: call it where blocking
 * that long is harmless (serve frees on a thread of its own). Accepts
 * NULL. */
void runner_session_free(struct runner_session *s);

/* One frame of the driver's result stream, as parsed from buf. */
enum runner_session_kind {
	RUNNER_SESSION_READY = 0,	/* the driver started (seq 0) */
	RUNNER_SESSION_OK,		/* the code ran to its end */
	RUNNER_SESSION_EXC,		/* it raised (traceback on stderr) */
	RUNNER_SESSION_EXIT,		/* it raised SystemExit */
};

struct runner_session_frame {
	uint64_t seq;
	enum runner_session_kind kind;
	int exit_code;			/* 0..255 */
	size_t out_off, out_len;	/* kept stdout: buf[out_off..+len) */
	uint64_t out_seen;		/* bytes the code wrote to stdout */
	size_t err_off, err_len;
	uint64_t err_seen;
	size_t total;			/* bytes of buf the frame takes */
};

/* Parses the frame at the start of buf[0..len):
 *   "\0CSF1 NONCE SEQ KIND EXIT OUT_LEN OUT_SEEN ERR_LEN ERR_SEEN\n"
 * then OUT_LEN bytes of stdout and ERR_LEN of stderr. NONCE must be
 * nonce (RUNNER_SESSION_NONCE_LEN hex), KIND ready|ok|exc|exit, numbers
 * canonical decimal, EXIT <= 255, each *_LEN <= max_len and <= its
 * *_SEEN. 0 (*f filled), -EAGAIN when buf is a proper prefix of a frame
 * (read more), or -EPROTO when it is not a frame. Pure. */
int runner_session_frame_parse(const void *buf, size_t len,
    const char *nonce, size_t max_len, struct runner_session_frame *f);

/* The driver's request header "SEQ CODE_LEN HEAD TAIL\n" into out. The
 * number of bytes written (without NUL), or -ENOSPC. Pure. */
int runner_session_call_header(char *out, size_t outlen, uint64_t seq,
    size_t code_len, size_t head, size_t tail);

#endif
