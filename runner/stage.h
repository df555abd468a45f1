/*
 * Staging caller-supplied files (MCP `files`, the service's `files`) for a
 * run: written under a fresh private directory, one --in path per
 * top-level name, all removed afterwards. One implementation, so the
 * rules for writing untrusted names to disk live in one place.
 */
#ifndef CORDON_RUNNER_STAGE_H
#define CORDON_RUNNER_STAGE_H

#include <limits.h>
#include <stddef.h>

#include "runner/runner.h"

/* One file: path must already be a safe relative path (no absolute, no
 * "..", "." or empty components: callers check with their own rules). */
struct stage_file {
	const char *path;
	const void *data;
	size_t len;
};

/* Files of one run; stage_dir_cleanup removes dir. */
struct stage_dir {
	char dir[PATH_MAX];		/* "" when nothing was created */
	char *in[RUNNER_MAX_IN];	/* dir/TOP for each top-level name */
	size_t nin;
};

/* Writes files under a new directory PARENT/PREFIX.XXXXXX (mode 0700).
 * Returns 0 (st->nin == 0 when n == 0), -EINVAL for a path given twice or
 * both as file and directory, or for more than RUNNER_MAX_IN top-level
 * names, or another negative errno; reason in err (prefixed "'files': "
 * for the caller's errors). On failure nothing is left on disk. Never
 * follows a symlink. */
int stage_write(const char *parent, const char *prefix,
    const struct stage_file *files, size_t n, struct stage_dir *st,
    char *err, size_t errlen);

/* Removes the directory and frees the paths; accepts a zeroed st. */
void stage_dir_cleanup(struct stage_dir *st);

#endif
