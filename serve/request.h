/*
 * The body of `POST /v1/runs`: strict parsing of the JSON request (unknown
 * fields, wrong types, bad base64 and unsafe paths are refused; `files`
 * is checked by runner/stage.h, as for MCP; `policy` must be a policy
 * name, whether the tenant may use it is serve_tenant_check's), and the
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
#include "runner/runner.h"
#include "runner/stage.h"

/* A parsed request; everything is owned (serve_req_cleanup frees). */
struct serve_req {
	char *code;
	size_t code_len;
	bool has_net;			/* false: the tenant's default */
	enum runner_net net;
	char policy[CONFIG_POLICY_MAX + 1];	/* "": egress_default_policy */
	int64_t timeout_s;		/* 0: the config default */
	uint64_t max_output;		/* 0: the config default */
	const char *keep;		/* NULL (both) or a static "head",
					 * "tail", "both" */
	const char *lang;		/* static "python", "bash", "node" */
	const char *lang_key;		/* "language" or "lang" when given */
	char profile[CONFIG_PROFILE_MAX + 1];	/* "": the language's */
	struct stage_file *files;	/* decoded (stage_files_parse) */
	size_t nfiles;
};

/* Before a body is parsed (issue 39), with json_scan: a string that
 * decodes to contain U+0000 (cJSON would cut it there: code would run
 * truncated, its audit hash that of the prefix), and more JSON values or
 * nesting than a request of c's limits can hold (64 + 8 per file of
 * limits.in_max_files; depth 16), so that cJSON never builds them. 0, or
 * -EINVAL with a one-line reason naming the member. Pure. */
int serve_body_scan(const struct config *c, const char *body, size_t len,
    char *err, size_t errlen);

/* Parses body[0..len) against c's limits (serve_body_scan first). 0;
 * -EINVAL (answer 400) or
 * -EFBIG (answer 413: the body or the decoded files are over a cap) with a
 * one-line reason in err; or -ENOMEM. On failure *out is zeroed. */
int serve_req_parse(const struct config *c, const char *body, size_t len,
    struct serve_req *out, char *err, size_t errlen);
void serve_req_cleanup(struct serve_req *r);	/* accepts a zeroed one */

/* Writes r's files under a new directory in tmp_dir (runner/stage.h; the
 * caller removes it with stage_dir_cleanup). 0 (st->nin == 0 when there
 * were none), -EINVAL (duplicate paths, too many top-level names) or
 * another negative errno, reason in err; on failure nothing is left. */
int serve_stage_files(const char *tmp_dir, const struct serve_req *r,
    struct stage_dir *st, char *err, size_t errlen);

#endif
