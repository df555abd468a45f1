/*
 * Caller-supplied files (MCP `files`, the service's `files`) for a run: the
 * one check of a request's `files` array (names, counts, sizes, base64),
 * then staging under a fresh private directory, one --in path per
 * top-level name, all removed afterwards. One implementation, so the rules
 * for untrusted names and their error messages live in one place.
 */
#ifndef CORDON_RUNNER_STAGE_H
#define CORDON_RUNNER_STAGE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "common/config.h"
#include "runner/result.h"

#define STAGE_PATH_MAX 255		/* bytes of one `files` path */
#define STAGE_PATH_DEPTH 16		/* components of one `files` path */

/* One file: path is a safe relative path (stage_path_safe). Owned when it
 * comes from stage_files_parse (free with stage_files_free). */
struct stage_file {
	char *path;
	unsigned char *data;
	size_t len;
};

/* How an entry of `files` carries its bytes. */
enum stage_content {
	STAGE_CONTENT_TEXT,	/* "content": a JSON string, taken as is */
	STAGE_CONTENT_BASE64,	/* "content_b64": strict base64 */
};

/* True when path is a safe relative path for `files`: 1..STAGE_PATH_MAX
 * printable ASCII bytes without backslash, components separated by single
 * '/', none empty, "." or "..", at most STAGE_PATH_DEPTH of them. Pure. */
bool stage_path_safe(const char *path);

/* Strict RFC 4648 base64 (standard alphabet, '=' padding required, no
 * whitespace, no stray low bits). 0 and *out (caller frees; may be a
 * 1-byte buffer for an empty input), -EINVAL or -ENOMEM. Pure. */
int stage_base64_decode(const char *s, size_t len, unsigned char **out,
    size_t *outlen);

/* Checks a request's `files` array and copies it out: each entry an object
 * with exactly "path" (stage_path_safe) and the content key of how (text or
 * base64), at most c->limits.in_max_files entries and
 * c->limits.in_max_bytes bytes (decoded) in total. Returns 0 and *out, *n
 * (*out NULL when the array is empty; caller frees with stage_files_free);
 * -EINVAL (not an array, too many entries, a bad entry, path or base64) or
 * -EFBIG (over the byte cap) with a one-line reason starting "'files'" in
 * err; or -ENOMEM ("out of memory"). On failure *out is NULL and *n 0.
 * Pure: no I/O. */
int stage_files_parse(const struct config *c, const cJSON *files,
    enum stage_content how, struct stage_file **out, size_t *n, char *err,
    size_t errlen);

/* Frees what stage_files_parse returned; accepts NULL. */
void stage_files_free(struct stage_file *f, size_t n);

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
