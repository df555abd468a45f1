/*
 * The `docker run` argv for one job, built by a pure function from resolved
 * values: every hardening flag is fixed here, in one place, and nothing in
 * the spec can remove one. The code itself is never part of the argv.
 */
#ifndef CORDON_RUNNER_DOCKER_ARGV_H
#define CORDON_RUNNER_DOCKER_ARGV_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"

#define DARGV_MAX 96

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
	unsigned lang;			/* CONFIG_LANG_*; 0: python. bash and
					 * node read the job from stdin too
					 * (bash -s, node -), run directly,
					 * or execed by the prelude, or as
					 * the wrapper's child */
	const char *const *extra;	/* egress mode's options (netsetup: */
	size_t nextra;			/*   --dns, --env proxy vars), before */
					/*   the image; never hardening flags */
};

/* Fills a with the full `docker run` argv (a->v[0] is c->docker). Returns
 * 0 or a negative errno (-EINVAL for a spec field that is missing or would
 * break the argv, e.g. a comma in a mount path). Pure. */
int docker_run_argv(const struct config *c, const struct docker_spec *s,
    struct dargv *a);

#endif
