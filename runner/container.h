/*
 * Starting, sealing and removing one sandbox container: the steps that a
 * cold run (runner.c) and the warm pool (pool.c) share, so that a pooled
 * container is started by exactly the same `docker run` argv as a cold
 * one. Internal to the runner.
 */
#ifndef CORDON_RUNNER_CONTAINER_H
#define CORDON_RUNNER_CONTAINER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "common/proc.h"
#include "netsetup/netsetup.h"
#include "runner/docker_argv.h"
#include "runner/result.h"

#define CONTAINER_GC_GRACE_S 30	/* label deadline = run deadline + this */
#define CONTAINER_ABORT_MS 10000	/* container_abort: how long a
					 * `docker run` may take to create */
#define CONTAINER_BUSY_MS 10000	/* container_remove: how long a
					 * removal already in progress is
					 * asked about again */
#define CONTAINER_PATIENT_MS 60000	/* container_abort_patient: how
					 * long a removal waits for dockerd
					 * to be back */

/* What varies between the containers the runner starts. */
struct container_start {
	const char *name;			/* cordon-<hex> */
	const char *image;			/* pinned image ID */
	const char *session;			/* label value; NULL: "" */
	const struct runner_limits *lim;	/* memory, cpus */
	const struct netsetup_run_args *na;	/* NULL: offline */
	const char *runtime;			/* NULL: the mode's; else
						 * its debug twin */
	int64_t label_deadline_s;		/* epoch s, for `cordon gc` */
	const char *in_dir;			/* NULL or mounted at /in */
	bool out_wrapper;			/* --out: the wrapper program */
	unsigned lang;				/* CONFIG_LANG_*; 0: python
						 * (the warm pool's) */
	const void *input;			/* stdin, then closed; */
	size_t input_len;			/*   ignored with hold */
	bool hold;				/* keep stdin open (warm pool) */
	bool holder;				/* warm pool: the container runs
						 * DARGV_HOLDER; the job comes by
						 * container_exec_spawn */
	size_t stdout_max, stderr_max;
	enum cbuf_keep stdout_keep, stderr_keep;
	bool stop_at_cap;			/* proc_opts': --keep head */
};

/* The docker_spec for s (pure; pointers borrowed from s and c). */
void container_spec(const struct config *c, const struct container_start *s,
    struct docker_spec *out);

/* Spawns `docker run -i ...` for s. 0 and *out, or a negative errno. */
int container_spawn(const struct config *c, const struct container_start *s,
    struct proc **out);

/* Spawns `docker exec -i NAME` of the job's command (docker_exec_argv)
 * into a container started with s->holder, with s's stdin and caps (a
 * warm pool's entry: s->hold). 0 and *out, or a negative errno. */
int container_exec_spawn(const struct config *c,
    const struct container_start *s, struct proc **out);

struct apirun;				/* runner/apirun.h */

#define CONTAINER_API_ABORT_MS 2000	/* container_api_abort: how long a
					 * create cut short may still come */

/* A cold run's container over the Engine API (apirun.h): the same spec
 * as container_spawn's argv, created, attached, waited for and started
 * before deadline_ms. *out is the session whenever one was made (also on
 * failure: container_api_abort uses it; caller apirun_frees). 0 or
 * apirun_start's result (-ETIMEDOUT, -EINTR, -EIO with the daemon's
 * answer in err, ...). */
int container_api_start(const struct config *c,
    const struct container_start *s, int64_t deadline_ms,
    const atomic_int *cancel, struct apirun **out, char *err, size_t errlen);

/* Removes NAME of an API session a (may be NULL) that did not end by
 * itself; a create cut short before its answer is looked for again
 * until CONTAINER_API_ABORT_MS. 0, -ENOENT or the removal's errno. */
int container_api_abort(const struct config *c, const char *name,
    const struct apirun *a);

/* `docker rm -f NAME`: through the API socket when that is the configured
 * daemon (saves a CLI start), else the CLI. A removal already in progress
 * is asked about again for up to CONTAINER_BUSY_MS. 0, -ENOENT, -EBUSY
 * (still in progress then) or another negative errno. */
int container_remove(const struct config *c, const char *name);

/* Removes the container NAME that cli (its `docker run`, not yet reaped)
 * may still be creating, then kills and reaps cli. Killing `docker run`
 * does not cancel its create request: the daemon creates the container
 * anyway, after a removal that found nothing (issue 22). So while the
 * removal finds nothing and cli still runs, it is retried (every 20 ms,
 * until deadline_ms on the monotonic clock), and so is a removal that
 * failed (every 200 ms: a daemon busy with the sandbox's teardown; not
 * when runner_daemon_check says it is down: then at once); only then is
 * cli killed, and a removal that found nothing tried once more.
 * 0 (removed), -ENOENT (never created: cli exited first, or was still
 * hung in its create at the deadline), or the last removal's errno. */
int container_abort(const struct config *c, const char *name,
    struct proc *cli, int64_t deadline_ms);

/* container_abort with CONTAINER_ABORT_MS, then, if the removal failed
 * (not -ENOENT: dockerd down or failing), again every 500 ms once
 * runner_daemon_check passes, until CONTAINER_PATIENT_MS after the call:
 * for threads no answer waits on (the warm pool's), so that a container
 * that died with dockerd is not left behind when it comes back. */
int container_abort_patient(const struct config *c, const char *name,
    struct proc *cli);

/* Polls until the container runs (over the Engine API when
 * dockerapi_usable, every 20 ms; else `docker inspect`, every 50 ms): 0;
 * -ETIMEDOUT at deadline_ms (monotonic clock); stop(arg)'s negative errno
 * as soon as it returns one (stop may be NULL); -ECHILD when it is
 * neither created nor running; or the inspect's error. */
int container_wait_running(const struct config *c, const char *name,
    int64_t deadline_ms, int (*stop)(void *), void *arg);

/* Egress mode: waits until the container runs (until deadline_ms on the
 * monotonic clock), then seals its network namespace; addr
 * (NETSETUP_ADDR_MAX bytes) receives its address on the egress network;
 * *running_at (may be NULL) when it was seen running (monotonic ms), 0
 * if it was not. 0 or an errno with a reason in err. */
int container_seal(const struct config *c, const struct netsetup_endpoint *ep,
    const char *name, int64_t deadline_ms, char *addr, int64_t *running_at,
    char *err, size_t errlen);
/* container_seal, with stop as container_wait_running's (its negative
 * errno ends the wait: that is the result). With the Engine API usable
 * (dockerapi_usable) the wait polls it and the answer that says running
 * is the one sealed from: no `docker inspect` process at all. */
int container_seal_until(const struct config *c,
    const struct netsetup_endpoint *ep, const char *name, int64_t deadline_ms,
    int (*stop)(void *), void *arg, char *addr, int64_t *running_at,
    char *err, size_t errlen);

/* Egress mode, a container whose start the Engine API answered: its state
 * read over the API (no `docker inspect` process), then sealed as
 * container_seal does (netsetup_sandbox_seal_view). 0 or an errno with a
 * reason in err. */
int container_api_seal(const struct config *c,
    const struct netsetup_endpoint *ep, const char *name, int64_t deadline_ms,
    char *addr, char *err, size_t errlen);

#endif
