/*
 * Shared between the MCP protocol handler (mcp.c) and the run_code tool
 * (run_code.c); not for callers outside mcp/.
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
	mcp_policies_fn policies;	/* NULL: none to list */
	void *policies_arg;
	char session[RUNNER_SESSION_MAX + 1];	/* "" for none */
	char tmp_dir[PATH_MAX];
	bool initialized;		/* written once, before any call runs */
	char protocol[32];
	mcp_notify_fn notify;		/* NULL: no notifications */
	void *notify_arg;
};

/* mcp.c: ids (and progress tokens) are strings or integers; printed
 * exactly as JSON (caller frees; NULL on ENOMEM). */
bool mcp_id_valid(const cJSON *id);
char *mcp_id_print(const cJSON *id);

#define MCP_RUN_CODE_NAME "run_code"

/* The tool's definition for tools/list (caller frees); its `policy`
 * property lists the proxy's policies, asked now through s->policies.
 * NULL on ENOMEM. */
cJSON *mcp_run_code_tool(const struct mcp_server *s);

/* Runs the tool with the call's arguments (may be NULL when absent) and
 * returns the CallToolResult (caller frees): bad arguments and failed runs
 * are results with isError, as the protocol asks. The run watches cancel
 * (may be NULL). With a progress token (a valid id, or NULL) and
 * s->notify, its output goes out as progress notifications while it runs
 * (progress.c). NULL on ENOMEM. */
cJSON *mcp_run_code_call(struct mcp_server *s, const cJSON *arguments,
    const atomic_int *cancel, const cJSON *progress_token);

/* progress.c: notifications/progress carrying a call's output chunks,
 * sent by a thread of their own from a bounded queue (runner/stream.h),
 * so a client that stops reading never holds up the run. */
struct mcp_progress;
struct runner_stream;

/* 0 and *out, or -ENOMEM / a pthread error. */
int mcp_progress_start(struct mcp_server *s, const cJSON *token,
    struct mcp_progress **out);
/* The queue to give the runner (runner_request.output_arg). */
struct runner_stream *mcp_progress_stream(struct mcp_progress *p);
/* After the run: sends what is queued, then frees p. Returns the bytes of
 * output dropped from the notifications. */
uint64_t mcp_progress_finish(struct mcp_progress *p);

#endif
