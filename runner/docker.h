/*
 * Small docker CLI calls the runner needs around `docker run`: remove by
 * name, inspect the end state, check the daemon's runtimes and images, and
 * list Cordon containers. Each is one argv run through proc.h with its own
 * deadline; nothing here prints.
 */
#ifndef CORDON_RUNNER_DOCKER_H
#define CORDON_RUNNER_DOCKER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "runner/result.h"

#define DOCKER_CALL_MS 15000	/* deadline for one small docker call */
#define DOCKER_PING_MS 3000	/* runner_daemon_check's /_ping */

struct docker_state {
	bool oom_killed;
	bool started;		/* StartedAt is set: the job's code ran */
	int exit_code;
	char id[72];		/* full container ID, "" when not given */
};

/* `docker rm -f NAME...` (at most 64 names). 0, -ENOENT when docker said
 * there was no such container, -EBUSY when a removal was already in
 * progress (it may still fail), or another negative errno; on each of
 * those err (may be NULL with errlen 0) gets docker's words: proc_call's
 * err, the first line of its stderr or how it ended; "" on 0. */
int docker_rm_force(const struct config *c, const char *const *names,
    size_t n, char *err, size_t errlen);

/* `docker kill NAME` (SIGKILL) within timeout_ms: 0 (killed, or not
 * running), -ENOENT (no such container) or another negative errno. */
int docker_kill(const struct config *c, const char *name, int64_t timeout_ms);

/* `docker inspect` of a container's State. 0 or -ENOENT / negative errno. */
int docker_inspect_state(const struct config *c, const char *name,
    struct docker_state *st);

/* Whether the container is running: 0; -EAGAIN while it does not exist
 * yet or is still "created"; -ECHILD when it already stopped; or another
 * negative errno. */
int docker_wait_running(const struct config *c, const char *name);

/* Parses the inspect line "OOMKilled ExitCode StartedAt [Id]". Pure. */
int docker_state_parse(const char *line, struct docker_state *st);

/* One runtime as `docker info --format '{{json .Runtimes}}'` lists it. */
struct docker_runtime {
	char path[PATH_MAX];	/* "" when it has none (or not a string) */
	char args[320];		/* its runtimeArgs strings, joined by
				 * spaces (cut at this size) */
};

/* Looks runtime name up in the JSON text of `docker info --format
 * '{{json .Runtimes}}'`: 0 with *rt filled; -ENOENT when there is no such
 * runtime (or its entry is not an object); -EBADMSG when the text is not a
 * JSON object; -E2BIG for a path longer than PATH_MAX. On failure *rt is
 * zeroed. Pure. */
int docker_runtime_parse(const char *json, size_t len, const char *name,
    struct docker_runtime *rt);

/* The network stack runsc runs with these runtimeArgs (as joined by
 * docker_runtime_parse): "host" (--network=host: the host kernel's stack
 * in Docker's netns), "none" (--network=none: loopback only) or
 * "netstack" (--network=sandbox or no --network: gVisor's own stack). The
 * last --network wins, as in runsc's flag parsing. Pure. */
const char *docker_runtime_stack(const char *args);

/* Decides whether gc removes a container from its labels: the deadline
 * (epoch s) has passed, or the owner pid is not alive. Missing or bad
 * labels count as expired. alive may be NULL (owner treated alive). Pure
 * apart from alive. */
bool docker_gc_match(const char *owner_pid, const char *deadline,
    int64_t now_s, bool (*alive)(long pid));

/* Why a docker call could not reach the daemon. */
enum docker_fault {
	DOCKER_FAULT_OTHER = 0,	/* anything else (or not about reaching it) */
	DOCKER_FAULT_DENIED,	/* permission denied on the daemon's socket */
	DOCKER_FAULT_DOWN,	/* no daemon there: not running */
};

/* Sorts the docker CLI's error text (its stderr, or its first line): the
 * permission error every client prints for a socket it may not use, the
 * "cannot connect ... is the daemon running" of a daemon that is not
 * there, or OTHER (also for NULL, and for a "permission denied" that is
 * not about dialling the daemon, e.g. a runtime's cgroup error). Pure. */
enum docker_fault docker_fault_text(const char *text);

/* Sorts the errno (either sign) of a stat, access or connect on the
 * daemon's socket: EACCES/EPERM DENIED, ENOENT/ECONNREFUSED DOWN. Pure. */
enum docker_fault docker_fault_errno(int rc);

/* Writes the one line a front end says for f into err:
 * "docker-unavailable: cannot reach docker: " and the cause and its fix
 * (DENIED: run as root or in the `docker` group; DOWN: start dockerd).
 * where names the socket or the CLI (NULL: "the Docker socket"); detail
 * (may be NULL; its first line only) is what showed it. Returns
 * -EHOSTUNREACH, what every such failure returns. Pure. */
int docker_fault_say(enum docker_fault f, const char *where,
    const char *detail, char *err, size_t errlen);

/* What a run or a session that cannot reach the daemon says first in its
 * error (and `cordon serve` in its 503's "code"): every such failure is
 * -EHOSTUNREACH. */
#define RUNNER_DOCKER_UNAVAILABLE "docker-unavailable"

/* Whether the daemon answers now, fast (DOCKER_PING_MS): with the default
 * CLI and daemon (dockerapi_default), a missing socket, a socket this
 * process may not use (permission denied: the line says run as root or
 * join the `docker` group), a refused connection or no answer to GET
 * /_ping is -EHOSTUNREACH with "docker-unavailable: ..." in err
 * (docker_fault_say); 0 otherwise (also when another daemon is
 * configured: the docker calls then say what is wrong, and their errors
 * are sorted the same way). runner_run, runner_session_start,
 * runner_probe and runner_gc call it before anything else asks the
 * daemon. */
int runner_daemon_check(const struct config *c, char *err, size_t errlen);

/* Only the permission part of runner_daemon_check, with no call to the
 * daemon (`cordon serve` asks it at start: a user who may not use the
 * socket could never run anything): -EHOSTUNREACH with the line in err,
 * or 0 (also with another daemon configured, or no socket). */
int runner_daemon_access(const struct config *c, char *err, size_t errlen);

/* Checks, from the daemon, that the configured runtime is registered and
 * the pinned image is present: 0, or -ENOENT/-EHOSTUNREACH with a reason.
 * runner_run calls it only to explain a failed start. */
int runner_preflight(const struct config *c, enum runner_net net, char *err,
    size_t errlen);

#endif
