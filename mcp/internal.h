/*
 * Shared between the MCP protocol handler (mcp.c) and the run_code tool
 * (run_code.c); not for callers outside mcp/.
 */
#ifndef CORDON_MCP_INTERNAL_H
#define CORDON_MCP_INTERNAL_H

#include <limits.h>
#include <stdbool.h>

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
};

#define MCP_RUN_CODE_NAME "run_code"

/* The tool's definition for tools/list (caller frees); its `policy`
 * property lists the proxy's policies, asked now through s->policies.
 * NULL on ENOMEM. */
cJSON *mcp_run_code_tool(const struct mcp_server *s);

/* Runs the tool with the call's arguments (may be NULL when absent) and
 * returns the CallToolResult (caller frees): bad arguments and failed runs
 * are results with isError, as the protocol asks. The run watches cancel
 * (may be NULL). NULL on ENOMEM. */
cJSON *mcp_run_code_call(struct mcp_server *s, const cJSON *arguments,
    const atomic_int *cancel);

#endif
