/*
 * The body of `POST /v1/runs`: strict parsing of the JSON request by the
 * one request schema, jobs/request.h (unknown fields, wrong types, bad
 * base64 and unsafe paths are refused; `policy` must be a policy name,
 * whether the tenant may use it is serve_tenant_check's), and the
 * staging of its `files` into a private temporary directory as --in inputs.
 * Parsing is pure; staging is the only part that touches the filesystem.
 */
#ifndef CORDON_SERVE_REQUEST_H
#define CORDON_SERVE_REQUEST_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "jobs/request.h"
#include "runner/runner.h"
#include "runner/stage.h"

/* Before a body is parsed (issue 39), with json_scan: a string that
 * decodes to contain U+0000 (cJSON would cut it there: code would run
 * truncated, its audit hash that of the prefix), and more JSON values or
 * nesting than a request of c's limits can hold (64 + 8 per file of
 * limits.in_max_files; depth 16), so that cJSON never builds them. 0, or
 * -EINVAL with a one-line reason naming the member. Pure. */
int serve_body_scan(const struct config *c, const char *body, size_t len,
    char *err, size_t errlen);

/* Parses body[0..len) against c's limits (serve_body_scan first, then
 * jobs_req_parse; jobs_req_cleanup frees). 0;
 * -EINVAL (answer 400) or
 * -EFBIG (answer 413: the body or the decoded files are over a cap) with a
 * one-line reason in err; or -ENOMEM. On failure *out is zeroed. */
int serve_req_parse(const struct config *c, const char *body, size_t len,
    struct jobs_req *out, char *err, size_t errlen);

/* Writes r's files under a new directory in tmp_dir (runner/stage.h; the
 * caller removes it with stage_dir_cleanup). 0 (st->nin == 0 when there
 * were none), -EINVAL (duplicate paths, too many top-level names) or
 * another negative errno, reason in err; on failure nothing is left. */
int serve_stage_files(const char *tmp_dir, const struct jobs_req *r,
    struct stage_dir *st, char *err, size_t errlen);

#endif
