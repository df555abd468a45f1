/*
 * The one request schema of a run, as every front end takes it (issue 35):
 * `code`, `language` (alias `lang`), `profile`, `net` (alias `network`,
 * the MCP tool's name for it), `policy`, `timeout_s`, `max_output`, `keep`
 * and `files`, each checked the same way and refused with the same words
 * whether it came in a `POST /v1/runs` body or in `run_code`'s arguments.
 * What differs by front end is in struct jobs_req_rules: how `files`
 * contents are encoded (base64 over HTTP, text in MCP), what the caller
 * calls a member ("field" or "argument"), the list of members its own
 * schema advertises, and the members it reads itself (MCP's `session`).
 * Whether a policy goes with the net mode, and whether a tenant may use
 * either, stays with the front end: serve has tenant defaults, MCP not.
 * Pure: no I/O.
 */
#ifndef CORDON_JOBS_REQUEST_H
#define CORDON_JOBS_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/config.h"
#include "runner/runner.h"
#include "runner/stage.h"

struct jobs_req_rules {
	const char *whole;		/* "the body" or "the arguments" */
	const char *noun;		/* "field" or "argument" */
	const char *advertised;		/* "code, language, ...": named in
					 * the refusal of an unknown member */
	const char *const *extra;	/* NULL-terminated members the front
					 * end reads itself, or NULL */
	enum stage_content files;	/* how `files` contents are given */
};

/* A parsed request; everything is owned (jobs_req_cleanup frees). */
struct jobs_req {
	char *code;
	size_t code_len;
	bool has_net;			/* false: the front end's default */
	enum runner_net net;
	const char *net_key;		/* "net" or "network" when given */
	char policy[CONFIG_POLICY_MAX + 1];	/* "": the default policy */
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

/* Fills out from the JSON object root against c's limits and the front
 * end's rules. 0; -EINVAL (a bad request) or -EFBIG (the code or the
 * decoded files over a cap) with a one-line reason in err; or -ENOMEM.
 * On failure *out is zeroed. */
int jobs_req_parse(const struct config *c, const cJSON *root,
    const struct jobs_req_rules *rules, struct jobs_req *out, char *err,
    size_t errlen);
void jobs_req_cleanup(struct jobs_req *r);	/* accepts a zeroed one */

/* A parsed request as the runner takes it: r's files written under a new
 * directory of tmp_dir (PREFIX.XXXXXX, runner/stage.h) as --in inputs in
 * st, and out's members pointing into r and st (both must outlive the
 * run); jobs_run (jobs/run.h) adds what is the front end's own (cancel,
 * pool, session label, note, live output). 0, or -EINVAL (duplicate
 * paths, too many top-level names) or another negative errno with the
 * reason in err; nothing is left then.
 * The caller removes st with stage_dir_cleanup. */
int jobs_req_stage(const struct jobs_req *r, const char *tmp_dir,
    const char *prefix, struct stage_dir *st, struct runner_request *out,
    char *err, size_t errlen);

#endif
