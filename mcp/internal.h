/*
 * Shared between the MCP protocol handler (mcp.c) and the run_code tool
 * (run_code_tool.c: its definition; run_code.c: its calls); not for
 * callers outside mcp/.
 */
#ifndef CORDON_MCP_INTERNAL_H
#define CORDON_MCP_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "mcp/mcp.h"

struct mcp_server {
	const struct config *config;
	mcp_run_fn run;
	void *run_arg;
	struct runner_pools *const *pools;	/* NULL: none */
	void (*note)(void *note_arg, const char *msg);
	void *note_arg;
	mcp_policies_fn policies;	/* NULL: none to list */
	void *policies_arg;
	char session[RUNNER_SESSION_MAX + 1];	/* "" for none */
	char tmp_dir[PATH_MAX];
	bool initialized;		/* written once, before any call runs */
	char protocol[32];
	mcp_notify_fn notify;		/* NULL: no notifications */
	void *notify_arg;
	struct mcp_sessions *sessions;	/* run_code's named sessions */
};

/* mcp.c: ids (and progress tokens) are strings or integers; printed
 * exactly as JSON (caller frees; NULL on ENOMEM). */
bool mcp_id_valid(const cJSON *id);
char *mcp_id_print(const cJSON *id);

#define MCP_RUN_CODE_NAME "run_code"

/* run_code_tool.c: the tool's definition for tools/list (caller frees); its `policy`
 * property lists the proxy's policies, asked now through s->policies.
 * NULL on ENOMEM. */
cJSON *mcp_run_code_tool(const struct mcp_server *s);

/* run_code.c: runs the tool with the call's arguments (may be NULL when absent) and
 * returns the CallToolResult (caller frees): bad arguments and failed runs
 * are results with isError, as the protocol asks. The run watches cancel
 * (may be NULL). With a progress token (a valid id, or NULL) and
 * s->notify, its output goes out as progress notifications while it runs
 * (progress.c). NULL on ENOMEM. */
cJSON *mcp_run_code_call(struct mcp_server *s, const cJSON *arguments,
    const atomic_int *cancel, const cJSON *progress_token);

/* progress.c: notifications/progress carrying a call's output chunks,
 * sent by a thread of their own from a bounded queue (jobs/stream.h),
 * so a client that stops reading never holds up the run. */
struct mcp_progress;
struct jobs_stream;

/* 0 and *out, or -ENOMEM / a pthread error. */
int mcp_progress_start(struct mcp_server *s, const cJSON *token,
    struct mcp_progress **out);
/* The queue to give the runner (runner_request.output_arg). */
struct jobs_stream *mcp_progress_stream(struct mcp_progress *p);
/* After the run: sends what is queued, then frees p. Returns the bytes of
 * output dropped from the notifications. */
uint64_t mcp_progress_finish(struct mcp_progress *p);

/* sessions.c: run_code's `session`: named sessions of this connection
 * (runner/session.h), ended by mcp_sessions_free. */
#define MCP_SESSION_NAME_MAX 64	/* [A-Za-z0-9._-] */
#define MCP_SESSIONS_MAX 64
struct mcp_sessions;

bool mcp_session_name_valid(const char *name);
/* At most max (<= MCP_SESSIONS_MAX) sessions at once; one unused for
 * idle_s (0: no limit) or older than life_s ends (a thread looks every
 * second). NULL on ENOMEM or when no thread can be made. */
struct mcp_sessions *mcp_sessions_new(size_t max, int64_t idle_s,
    int64_t life_s);
/* Ends every session (removes its container). Accepts NULL. */
void mcp_sessions_free(struct mcp_sessions *t);
/* Runs req in session name, starting it first when there is none
 * (*is_new; its container labelled label; before gets why the name's
 * previous session ended, cut to beforelen, or "" when the table does not
 * remember one). The runner_session_call contract; a call that ends its
 * session (*ended) drops the name, so the next call with it starts
 * afresh. -EBUSY while another call runs in it, -EAGAIN when a new one
 * would pass the limit, or the start's error. */
int mcp_sessions_call(struct mcp_sessions *t, const struct config *c,
    const char *name, const char *label, const struct runner_request *req,
    struct runner_result *res, bool *is_new, bool *ended, char *before,
    size_t beforelen, char *err, size_t errlen);

/* jsonrpc.c: one reply line, taking ownership of payload (the result or
 * error object); id NULL is a null id. NULL on ENOMEM. */
char *mcp_rpc_reply_line(const cJSON *id, const char *key, cJSON *payload);
char *mcp_rpc_error_line(const cJSON *id, int code, const char *message);
/* The whole message as one JSON value with nothing after it, or NULL;
 * *nul: a string in it held U+0000 (*nul_in_id: the id's). */
cJSON *mcp_rpc_parse_whole(const char *msg, size_t len, bool *nul,
    bool *nul_in_id);

#endif
