/*
 * Internal to runner/session*.c: the session's state, shared by its
 * lifecycle (session.c), its calls (session_call.c), its process and pipes
 * (session_io.c) and its proxy-mode egress (session_egress.c). Nothing
 * else includes this.
 */
#ifndef CORDON_RUNNER_SESSION_INTERNAL_H
#define CORDON_RUNNER_SESSION_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "common/cbuf.h"
#include "common/config.h"
#include "netsetup/netsetup.h"
#include "proxy/cred.h"
#include "runner/image.h"
#include "runner/runner.h"
#include "runner/session.h"

struct runner_session {
	const struct config *c;		/* own: the caller's, at its profile */
	struct config *own;
	char name[RUNNER_NAME_MAX];
	char image[IMAGE_ID_MAX];
	char nonce[RUNNER_SESSION_NONCE_LEN + 1];
	char label[RUNNER_SESSION_MAX + 1];
	enum runner_net net;
	struct runner_limits lim;	/* memory, cpus of the container */
	pid_t pid;			/* `docker run -i`, its own group */
	int in_fd, out_fd, err_fd;
	int status;			/* wait status once reaped */
	bool reaped, ended, removed;
	bool rm_failed;			/* the removal at the end failed (the
					 * daemon was down): free tries again */
	struct cbuf *diag;		/* the tail of its stderr */
	unsigned char *buf;		/* the result stream, not yet used */
	size_t len, cap;
	uint64_t seq;			/* the last call's */
	int64_t start_ms;
	/* Net proxy: the endpoint, the container's egress settings (their
	 * argv points into na itself: never copied), the run's credential
	 * and where the proxy sees it from. */
	struct netsetup_endpoint ep;
	struct netsetup_run_args na;
	char token[PROXY_CRED_TOKEN_NEW_LEN + 1];
	char addr[NETSETUP_ADDR_MAX];
	char policy[CONFIG_POLICY_MAX + 1];
	bool registered;
	cJSON *last_report;		/* the unregister's, until a call's
					 * result takes it */
	char egress_error[128];
	char in_dir[PATH_MAX];		/* "" none: the staged --in copy,
					 * removed after the container */
};

/* Net proxy, before any container: egress up (netsetup_ready), the policy
 * known to the running proxy, the session's credential. 0 or a negative
 * errno with a reason in err. */
int runner_session_egress_admit(struct runner_session *s,
    const struct runner_session_opts *o, char *err, size_t errlen);

/* Net proxy, once the container runs and before anything is written to
 * it: the seal (which gives its address), then the registration for the
 * session's lifetime (o->max_lifetime_s). 0 or a negative errno with a
 * reason in err; the caller removes the container on failure. */
int runner_session_egress_register(struct runner_session *s,
    const struct runner_session_opts *o, int64_t deadline_ms, char *err,
    size_t errlen);

/* The driver's first input: (net proxy) the credential line for the
 * prelude, then the nonce line. 0 and *out (caller clears and frees), or
 * a negative errno. */
int runner_session_first_lines(struct runner_session *s, unsigned char **out,
    size_t *outlen);

/* Ends the proxy's registration, if any (the proxy closes what the
 * session still has open), keeping its last report for the call that
 * ended the session. Idempotent. */
void runner_session_egress_end(struct runner_session *s);

/* Net proxy, after a call: res->policy, and res->egress, the session's
 * egress so far (the last report when the call ended the session), or
 * res->egress_error saying why there is none. No-op offline. */
void runner_session_egress_report(struct runner_session *s,
    struct runner_result *res);

#define SESSION_REAP_MS 5000	/* `docker run` after the container */

/* What one exchange with the driver came to. */
struct runner_session_io {
	const unsigned char *out;	/* what is left to write */
	size_t out_len;
	size_t max_len;			/* per stream, for the parser */
	int64_t deadline;
	const atomic_int *cancel, *cancel_session;	/* may be NULL */
	struct runner_session_frame f;
};

/* session_io.c: the `docker run -i` process and its pipes. */
void runner_session_close_fd(int *fd);
/* Starts argv with three close-on-exec pipes, in its own process group;
 * s->pid and the pipe ends. 0 or a negative errno. */
int runner_session_spawn(struct runner_session *s, char *const *argv);
/* Waits for `docker run` until deadline_ms, then SIGKILLs its group and
 * waits for good. */
void runner_session_reap(struct runner_session *s, int64_t deadline_ms);
int runner_session_exit_code(const struct runner_session *s);	/* -1 */
void runner_session_drain_err(struct runner_session *s);	/* to diag */
/* Reads what the result stream has into s->buf (bounded by s->cap).
 * 1 read something, 0 nothing now, -EPIPE at EOF, -EPROTO past cap. */
int runner_session_read_out(struct runner_session *s);
/* Writes io's bytes and reads until one whole frame is in s->buf (then
 * io->f), the deadline (-ETIMEDOUT), the cancel (-EINTR), EOF on the
 * result stream (-EPIPE) or a stream that is not a frame (-EPROTO). */
int runner_session_exchange(struct runner_session *s,
    struct runner_session_io *io);
void runner_session_consume(struct runner_session *s, size_t n);
/* halt.h's drain: reads and drops both streams until both ended. */
int runner_session_drain(void *arg, int64_t until_ms);

#endif
