/*
 * A finished run's output into its result (runner.c's last step, shared
 * by the CLI and the Engine API paths). Internal to the runner.
 */
#ifndef CORDON_RUNNER_COLLECT_H
#define CORDON_RUNNER_COLLECT_H

#include <stddef.h>

#include "common/cbuf.h"
#include "common/config.h"
#include "runner/result.h"

/* Moves the kept bytes of out and errb (the container's streams, stdout
 * capped to hold the --out archive too) into res: out_truncated,
 * err_truncated, out, err; with out_dir (nonce: the wrapper's), the
 * archive split off and unpacked into it (res->files, files_error), the
 * job's own streams re-kept at max bytes as keep says. 0 or -ENOMEM. */
int runner_collect(const struct config *c, const char *out_dir,
    const char *nonce, size_t max, enum cbuf_keep keep, struct cbuf *out,
    struct cbuf *errb, struct runner_result *res);

#endif
