/*
 * Starting, sealing and removing one sandbox container: the steps that a
 * cold run (runner.c) and the warm pool (pool.c) share, so that a pooled
 * container is started by exactly the same `docker run` argv as a cold
 * one. Internal to the runner.
 */
#ifndef CORDON_RUNNER_CONTAINER_H
#define CORDON_RUNNER_CONTAINER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "common/proc.h"
#include "netsetup/netsetup.h"
#include "runner/docker_argv.h"
#include "runner/runner.h"

#define CONTAINER_GC_GRACE_S 30	/* label deadline = run deadline + this */

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
	const void *input;			/* stdin, then closed; */
	size_t input_len;			/*   ignored with hold */
	bool hold;				/* keep stdin open (warm pool) */
	size_t stdout_max, stderr_max;
};

/* The docker_spec for s (pure; pointers borrowed from s and c). */
void container_spec(const struct config *c, const struct container_start *s,
    struct docker_spec *out);

/* Spawns `docker run -i ...` for s. 0 and *out, or a negative errno. */
int container_spawn(const struct config *c, const struct container_start *s,
    struct proc **out);

/* `docker rm -f NAME`: through the API socket when that is the configured
 * daemon (saves a CLI start), else the CLI. 0, -ENOENT or an errno. */
int container_remove(const struct config *c, const char *name);

/* Polls until the container runs: 0; -ETIMEDOUT at deadline_ms (monotonic
 * clock); stop(arg)'s negative errno as soon as it returns one (stop may
 * be NULL); or docker_wait_running's error. */
int container_wait_running(const struct config *c, const char *name,
    int64_t deadline_ms, int (*stop)(void *), void *arg);

/* Egress mode: waits until the container runs (until deadline_ms on the
 * monotonic clock), then seals its network namespace; addr
 * (NETSETUP_ADDR_MAX bytes) receives its address on the egress network.
 * 0 or an errno with a reason in err. */
int container_seal(const struct config *c, const struct netsetup_endpoint *ep,
    const char *name, int64_t deadline_ms, char *addr, char *err,
    size_t errlen);

#endif
