/*
 * The `docker run` argv for one job, built by a pure function from resolved
 * values: every hardening flag is fixed here, in one place, and nothing in
 * the spec can remove one. The code itself is never part of the argv.
 */
#ifndef CORDON_RUNNER_DOCKER_ARGV_H
#define CORDON_RUNNER_DOCKER_ARGV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"

#define DARGV_MAX 96
#define DOCKER_CA_BUNDLE "/etc/cordon/ca-bundle.pem"

/* A NULL-terminated argv whose strings it owns. */
struct dargv {
	char *v[DARGV_MAX + 1];
	size_t n;
	int error;			/* first error (-ENOMEM, -E2BIG) */
};

void dargv_init(struct dargv *a);
void dargv_add(struct dargv *a, const char *s);
void dargv_addf(struct dargv *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void dargv_cleanup(struct dargv *a);

/* Everything that varies per run, already clamped by the runner. */
struct docker_spec {
	const char *name;		/* cordon-<hex> */
	const char *image_id;		/* sha256:... */
	const char *runtime;		/* registered runsc runtime */
	const char *network;		/* "none" or the egress network */
	const char *session;		/* label value; "" when none */
	long owner_pid;
	int64_t deadline_epoch_s;
	uint64_t memory;
	double cpus;
	const char *in_dir;		/* host dir mounted read-only at /in */
	const char *wrapper;		/* NULL: python3 -I -; else the --out
					 * wrapper program text (fixed) */
	uint64_t wrapper_cap;		/* per-stream cap the wrapper forwards */
	const char *prelude;		/* NULL; or (proxy mode) a program run
					 * first as python3 -I -c PRELUDE, with
					 * the usual arguments after it, which
					 * it execs (runner/egress.h) */
	const char *ca_bundle;		/* proxy mode: host path of the CA
					 * bundle (system roots + the egress
					 * CA), mounted read-only at
					 * DOCKER_CA_BUNDLE with the CA env
					 * variables pointing at it; or NULL */
	const char *resolv_conf;	/* proxy mode: host path of the
					 * sandbox's resolv.conf (the proxy's
					 * resolver on the gateway), mounted
					 * read-only at /etc/resolv.conf over
					 * Docker's; or NULL */
	unsigned lang;			/* CONFIG_LANG_*; 0: python. bash and
					 * node read the job from stdin too
					 * (bash -s, node -), run directly,
					 * or execed by the prelude, or as
					 * the wrapper's child */
	const char *const *extra;	/* egress mode's options (netsetup: */
	size_t nextra;			/*   --dns, --env proxy vars), before */
					/*   the image; never hardening flags */
	bool holder;			/* warm pool: the container's own
					 * process is DARGV_HOLDER, and the job
					 * comes by docker_exec_argv */
};

/* A warm container's own process: waits until its stdin (the pool's
 * `docker run -i`) closes, so it ends with its runner, and holds the
 * sandbox up for the one `docker exec` that runs the job. The job can
 * kill it: this runsc does not shield pid 1 from a job's signals as Linux
 * shields an init (measured, also with no handler installed). That ends
 * the sandbox, and the run is a sandbox_error (runner.c). */
#define DARGV_HOLDER "import sys; sys.stdin.buffer.read()"

/* The job's whole environment (NULL-terminated): nothing from the host. */
extern const char *const docker_job_env[];
/* Proxy mode: the variables the usual clients read their CA bundle path
 * from, each set to DOCKER_CA_BUNDLE (NULL-terminated). */
extern const char *const docker_ca_env[];

/* 0, or -EINVAL for a spec field that is missing or would break the argv
 * (docker_run_argv checks it first). Pure. */
int docker_spec_check(const struct config *c, const struct docker_spec *s);

/* The container's command, as docker_run_argv ends (after the image): the
 * holder, or the job's command line. 0 or a negative errno. Pure. */
int docker_cmd_argv(const struct docker_spec *s, struct dargv *a);

/* Fills a with the full `docker run` argv (a->v[0] is c->docker). Returns
 * 0 or a negative errno (-EINVAL for a spec field that is missing or would
 * break the argv, e.g. a comma in a mount path). Pure. */
int docker_run_argv(const struct config *c, const struct docker_spec *s,
    struct dargv *a);

/* For a container started with s->holder: `docker exec -i NAME` and the
 * job's command line as docker_run_argv would have ended it (python3 -I,
 * the prelude, the wrapper or -). exec adds no option: the process gets
 * the container's user, capabilities, no-new-privileges, rlimits, cgroup,
 * network, environment and working directory. Pure. */
int docker_exec_argv(const struct config *c, const struct docker_spec *s,
    struct dargv *a);

#endif
