/*
 * The run_code tool's calls: the strict check of a call's arguments (the
 * one request schema of jobs/request.h; `files` checked by runner/stage.h,
 * as for the service), the run through jobs_run (jobs/run.h: `files`
 * staged into a fresh temporary directory as --in inputs and removed
 * afterwards; a named session's call, sessions.c, the same way), and the
 * CallToolResult that carries the runner's JSON as labelled untrusted
 * data. Its definition (tools/list) is run_code_tool.c's.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "jobs/request.h"
#include "jobs/run.h"
#include "jobs/sessions.h"
#include "mcp/internal.h"
#include "runner/stage.h"
#include "jobs/stream.h"

/* A call's arguments: the one request schema (jobs/request.h, `files` as
 * text; MCP advertises `network` for `net`), and MCP's own `session`. */
struct call {
	struct jobs_req j;
	const char *session;		/* NULL, or the agent's session name */
};

static const char *const mcp_extra_keys[] = { "session", NULL };

static const struct jobs_req_rules mcp_rules = {
	.whole = "the arguments",
	.noun = "argument",
	.advertised = "code, language, profile, network, policy, timeout_s, "
	    "keep, files, session",
	.extra = mcp_extra_keys,
	.files = STAGE_CONTENT_TEXT,
};


/* Fills k from the arguments by the one request schema, then what only
 * MCP has: no tenant default, so a policy needs network proxy named in the
 * call; and `session`. On success the caller frees k->j (jobs_req_cleanup).
 * -EINVAL or -EFBIG with the reason in err, or -ENOMEM. */
static int
parse_call(const struct config *c, const cJSON *args, struct call *k,
    char *err, size_t errlen)
{
	int rc;

	memset(k, 0, sizeof(*k));
	if (args == NULL) {
		snprintf(err, errlen, "missing argument 'code'");
		return -EINVAL;
	}
	if ((rc = jobs_req_parse(c, args, &mcp_rules, &k->j, err,
	    errlen)) < 0)
		return rc;
	rc = -EINVAL;
	if (k->j.policy[0] != '\0' && k->j.net != RUNNER_NET_PROXY) {
		snprintf(err, errlen, "'policy' needs %s \"proxy\" (this "
		    "call's %s is \"none\")", k->j.net_key != NULL ?
		    k->j.net_key : "network", k->j.net_key != NULL ?
		    k->j.net_key : "network");
		goto fail;
	}
	rc = json_get_string(args, "session", &k->session);
	if (rc == -EINVAL || (rc == 0 && !mcp_session_name_valid(k->session))) {
		snprintf(err, errlen, "'session' must be a name of 1-%d of "
		    "[A-Za-z0-9._-]", MCP_SESSION_NAME_MAX);
		rc = -EINVAL;
		goto fail;
	}
	if (k->session != NULL && strcmp(k->j.lang, "python") != 0) {
		snprintf(err, errlen, "a session runs Python ('language' "
		    "python)");
		rc = -EINVAL;
		goto fail;
	}
	return 0;
fail:
	jobs_req_cleanup(&k->j);
	k->session = NULL;
	return rc;
}

/* {content: [text blocks], isError}; data may be NULL. */
static cJSON *
tool_result(bool is_error, const char *text, const char *data)
{
	cJSON *r = cJSON_CreateObject(), *content = NULL, *block;
	const char *texts[2] = { text, data };
	bool ok = r != NULL &&
	    (content = cJSON_AddArrayToObject(r, "content")) != NULL;

	for (size_t i = 0; ok && i < 2 && texts[i] != NULL; i++) {
		if ((block = cJSON_CreateObject()) == NULL ||
		    !cJSON_AddItemToArray(content, block)) {
			cJSON_Delete(block);
			ok = false;
			break;
		}
		ok = cJSON_AddStringToObject(block, "type", "text") != NULL &&
		    cJSON_AddStringToObject(block, "text", texts[i]) != NULL;
	}
	ok = ok && cJSON_AddBoolToObject(r, "isError", is_error) != NULL;
	if (!ok) {
		cJSON_Delete(r);
		return NULL;
	}
	return r;
}

static cJSON *
invalid_arguments(const char *why)
{
	char text[640];

	snprintf(text, sizeof(text), "Invalid arguments for " MCP_RUN_CODE_NAME
	    ": %s", why);
	return tool_result(true, text, NULL);
}

/* The result of a finished run: the runner's JSON as structuredContent
 * (validated by clients against outputSchema), and for clients older than
 * 2025-06-18 the label, then the same JSON serialized, as text blocks. A
 * run is a failure when its status is not ok or the program exited
 * non-zero. */
struct session_info {
	const char *name;		/* NULL: not a session's call */
	bool is_new, ended;
	char before[JOBS_SESSION_WHY_MAX];	/* why the name's previous
						 * session ended, or "" */
};

static cJSON *
run_result(const struct runner_result *res, uint64_t stream_dropped,
    const struct session_info *si)
{
	cJSON *o = runner_result_to_json(res), *r = NULL;
	char *json;

	/* As in the streamed results of `cordon run` and the service. */
	if (o != NULL && stream_dropped > 0 && cJSON_AddNumberToObject(o,
	    "stream_dropped", (double)stream_dropped) == NULL) {
		cJSON_Delete(o);
		o = NULL;
	}
	if (o != NULL && si->name != NULL && (cJSON_AddStringToObject(o,
	    "session", si->name) == NULL || cJSON_AddBoolToObject(o,
	    "session_new", si->is_new) == NULL || cJSON_AddBoolToObject(o,
	    "session_ended", si->ended) == NULL)) {
		cJSON_Delete(o);
		o = NULL;
	}
	/* Made valid UTF-8: a why may quote docker's stderr. */
	if (o != NULL && si->name != NULL && si->is_new &&
	    si->before[0] != '\0' && json_add_bytes(o,
	    "session_previous_end", si->before, strlen(si->before)) < 0) {
		cJSON_Delete(o);
		o = NULL;
	}
	json = o != NULL ? cJSON_PrintUnformatted(o) : NULL;

	if (json == NULL || (r = tool_result(res->status != RUNNER_OK ||
	    res->exit_code != 0, MCP_UNTRUSTED_LABEL, json)) == NULL)
		goto done;
	if (!cJSON_AddItemToObject(r, "structuredContent", o)) {
		cJSON_Delete(r);
		r = NULL;
		goto done;
	}
	o = NULL;
done:
	cJSON_free(json);
	cJSON_Delete(o);
	return r;
}

static cJSON *
run_failed(const char *why)
{
	char text[640];
	char *clean = json_utf8_sanitize(why, strlen(why), NULL);

	snprintf(text, sizeof(text), "Cordon could not run the code: %s",
	    clean != NULL ? clean : "out of memory");
	free(clean);
	return tool_result(true, text, NULL);
}

/* A named session's call as jobs_run's run function: its request staged,
 * labelled and with the cancel flag like a run's, no pool, no note. */
struct session_call {
	struct mcp_server *s;
	struct session_info *si;
};

static int
session_run(const struct config *c, const struct runner_request *req,
    struct runner_result *res, char *err, size_t errlen, void *arg)
{
	struct session_call *sc = arg;
	struct mcp_server *s = sc->s;

	return mcp_sessions_call(s->sessions, c, sc->si->name,
	    s->session[0] != '\0' ? s->session : "mcp", req, res,
	    &sc->si->is_new, &sc->si->ended, sc->si->before,
	    sizeof(sc->si->before), err, errlen);
}

cJSON *
mcp_run_code_call(struct mcp_server *s, const cJSON *arguments,
    const atomic_int *cancel, const cJSON *progress_token)
{
	struct runner_result res;
	struct mcp_progress *prog = NULL;
	struct session_info si = { 0 };
	struct session_call sc = { .s = s, .si = &si };
	struct jobs_run_opts o = { .tmp_dir = s->tmp_dir,
	    .prefix = "cordon-mcp", .cancel = cancel,
	    .session = s->session[0] != '\0' ? s->session : NULL };
	uint64_t dropped = 0;
	struct call k;
	char err[512] = "";
	bool ran;
	cJSON *r;
	int rc;

	if ((rc = parse_call(s->config, arguments, &k, err, sizeof(err))) < 0)
		return rc == -ENOMEM ? NULL : invalid_arguments(err);
	if (k.session != NULL) {
		/* A session's call: no live output (the driver sends its
		 * result at the end). */
		si.name = k.session;
		o.run = session_run;
		o.run_arg = &sc;
	} else {
		o.run = s->run;
		o.run_arg = s->run_arg;
		o.pools = s->pools != NULL ? *s->pools : NULL;
		o.note = s->note;
		o.note_arg = s->note_arg;
	}
	/* Progress is a courtesy: without memory or a thread for it the
	 * call still runs. Nothing is sent before the run's output. */
	if (progress_token != NULL && s->notify != NULL && k.session == NULL &&
	    mcp_progress_start(s, progress_token, &prog) == 0)
		o.stream = mcp_progress_stream(prog);
	rc = jobs_run(s->config, &k.j, &o, &res, &ran, err, sizeof(err));
	if (prog != NULL)
		dropped = mcp_progress_finish(prog);
	if (rc < 0 && !ran)
		r = rc == -EINVAL ? invalid_arguments(err) : run_failed(err);
	else if (rc < 0)
		r = run_failed(err[0] != '\0' ? err : strerror(-rc));
	else
		r = run_result(&res, dropped, &si);
	runner_result_cleanup(&res);
	jobs_req_cleanup(&k.j);
	return r;
}
