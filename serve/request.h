/*
 * The body of `POST /v1/runs`: strict parsing of the JSON request by the
 * one request schema, jobs/request.h (unknown fields, wrong types, bad
 * base64 and unsafe paths are refused; `policy` must be a policy name,
 * whether the tenant may use it is serve_tenant_check's). Staging its
 * `files` as --in inputs is jobs_req_stage's.
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

#endif
