/*
 * HTTP/1.1 to the docker daemon's Engine API over its unix socket, when the
 * default CLI and daemon are in use: the removal on every run's path, and
 * (runner/apirun.h) a whole cold run's create, attach, wait and start,
 * each a CLI process start saved. Anything unusual (another CLI binary,
 * DOCKER_HOST/DOCKER_CONTEXT set, no socket, config docker_api "never")
 * and callers use the CLI instead.
 */
#ifndef CORDON_RUNNER_DOCKERAPI_H
#define CORDON_RUNNER_DOCKERAPI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"

#define DOCKERAPI_SOCKET "/var/run/docker.sock"
#define DOCKERAPI_HEAD_MAX 16384	/* bytes of status line + headers */
#define DOCKERAPI_BODY_MAX (1u << 20)	/* bytes of a body we read */

/* True when the config names the default CLI ("docker") and no other
 * daemon is chosen by the environment (DOCKER_HOST, DOCKER_CONTEXT): the
 * daemon is the one on DOCKERAPI_SOCKET, whether it is up or not. */
bool dockerapi_default(const struct config *c);

/* True when the API socket may stand in for c->docker. */
bool dockerapi_usable(const struct config *c);

/* True when a cold run may go over the API: dockerapi_usable and config
 * docker_api is not "never". */
bool dockerapi_cold_usable(const struct config *c);

/* DELETE /containers/NAME?force=1 with a deadline: 0, -ENOENT (no such
 * container), -EBUSY (its removal already in progress: 409, which may
 * still fail), -ETIMEDOUT, or another negative errno. */
int dockerapi_rm_force(const char *sock, const char *name, int timeout_ms);

/* GET /_ping before timeout_ms: 0 when the daemon answered 200, -EIO
 * for another answer, or the connection's errno (-ENOENT: no socket,
 * -ECONNREFUSED: nobody listening, -ETIMEDOUT: no answer). */
int dockerapi_ping(const char *sock, int timeout_ms);

/* POST /containers/NAME/kill (SIGKILL), answered before timeout_ms: 0
 * (killed, or not running), -ENOENT (no such container), -EIO (another
 * answer) or the connection's errno (-ECONNREFUSED, -ETIMEDOUT, ...). */
int dockerapi_kill(const char *sock, const char *name, int timeout_ms);

/* Status code of an HTTP/1.x response's first line; -EBADMSG when it is
 * not one. Pure. */
int dockerapi_status(const char *buf, size_t len);

/* One parsed answer. body is de-chunked and NUL-terminated (owned; free
 * with dockerapi_resp_cleanup); head_len is where the body (or, for an
 * upgrade, the raw stream) starts in the bytes parsed. */
struct dockerapi_resp {
	int status;
	size_t head_len;
	char *body;
	size_t body_len;
};

#define DOCKERAPI_HEAD_ONLY 1	/* complete at the end of the headers
				 * (an attach: a raw stream follows) */

/* Parses buf[0..len) as one HTTP/1.x response; eof: the peer closed after
 * these bytes. Bodies by Content-Length, chunked, or (neither) up to eof;
 * none for 1xx, 204, 304. Returns 1 when complete (*out filled), 0 when
 * more bytes are needed (never with eof), -EBADMSG for a malformed answer
 * (or one cut short by eof), -E2BIG past DOCKERAPI_HEAD_MAX or max_body,
 * -ENOMEM. *out is zeroed unless 1. Pure. */
int dockerapi_response_parse(const char *buf, size_t len, bool eof,
    unsigned flags, size_t max_body, struct dockerapi_resp *out);

void dockerapi_resp_cleanup(struct dockerapi_resp *r);

/* The daemon's error text: the "message" of a JSON body, else the body's
 * first line, cut to fit msg (always NUL-terminated). Pure. */
void dockerapi_error_message(const struct dockerapi_resp *r, char *msg,
    size_t msglen);

/* A request's bytes: METHOD PATH, Host, a JSON body (NULL: none), and
 * `Connection: Upgrade`/`Upgrade: tcp` when upgrade. Caller frees *out.
 * 0, -EINVAL (path or method with bytes that do not belong there) or
 * -ENOMEM. Pure. */
int dockerapi_request_format(const char *method, const char *path,
    const char *body, bool upgrade, char **out, size_t *outlen);

/* A non-blocking, close-on-exec connection to sock: 0 and *fd, or a
 * negative errno. */
int dockerapi_connect(const char *sock, int *fd);

/* Writes all of buf before deadline_ms (monotonic): 0 or an errno. */
int dockerapi_send_all(int fd, const void *buf, size_t len,
    int64_t deadline_ms);

/* One request on its own connection, the answer read whole (max_body):
 * 0 and *out (any status), or -ETIMEDOUT, -ECONNREFUSED, -EBADMSG, ... */
int dockerapi_call(const char *sock, const char *method, const char *path,
    const char *body, int64_t deadline_ms, struct dockerapi_resp *out);

/* Container names and IDs are ours or docker's: [A-Za-z0-9_.-] only, so
 * one goes into a path as it is. */
bool dockerapi_name_ok(const char *name);

#endif
