/*
 * Files in and out of a run. --in paths are copied (never linked) into a
 * fresh per-run directory that is mounted read-only at /in; --out archives
 * are unpacked with the strict tar rules into the caller's directory.
 */
#ifndef CORDON_RUNNER_FILES_H
#define CORDON_RUNNER_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "runner/result.h"

/* Creates STATE_DIR/in/<name>.XXXXXX and copies each path into it under
 * its base name: regular files and directories only (symlinks and special
 * files refused, at any depth), at most limits.in_max_files entries and
 * limits.in_max_bytes bytes in total. On success dir holds the path; the
 * caller removes it with util_rm_rf. On failure nothing is left behind and
 * err says why. 0 or a negative errno. */
int files_stage_in(const struct config *c, const char *name,
    const char *const *paths, size_t n, char *dir, size_t dirlen, char *err,
    size_t errlen);

/* Unpacks the archive into out_dir (created if missing), entry by entry:
 * refused entries and those over limits.out_max_files/out_max_bytes are
 * listed in res->files with a reason and never written. Then the files
 * the wrapper reports it could not pack (the line after the archive, see
 * outwrap.h) are listed with their reason. A damaged or cut-short archive,
 * or a missing or malformed report, sets res->files_error. 0 or -ENOMEM /
 * a negative errno when out_dir cannot be opened. */
int files_unpack_out(const struct config *c, const void *tar, size_t len,
    const char *out_dir, struct runner_result *res);

/* Whether out_dir can take a run's --out files: creates it (and its
 * parents) when missing, as the run would, then needs a directory this
 * process may write into. 0, or a negative errno (-ENOTDIR for a file)
 * with a one-line reason in err. runner_run calls it before any
 * container starts. */
int runner_out_dir_check(const char *out_dir, char *err, size_t errlen);

#endif
