/*
 * The run_code calls of `cordon mcp`'s stdio transport: admitted by
 * jobs/admission (the MCP front: JOBS_ADMIT_MCP_RUNNING at once,
 * JOBS_ADMIT_MCP_PENDING waiting, the next refused as busy), run one at a
 * time on one worker thread, each with its own cancel flag. The transport
 * keeps reading (ping, notifications/cancelled) while a call runs.
 */
#ifndef CORDON_MCP_QUEUE_H
#define CORDON_MCP_QUEUE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/config.h"

struct mcp_queue_ops {
	/* Runs one call on the worker, polling cancel; *reply: the line to
	 * send (caller frees) or NULL for none. A negative errno: out of
	 * memory (the queue answers it). */
	int (*run)(void *arg, const char *msg, size_t len,
	    const atomic_int *cancel, char **reply);
	/* Writes a reply line and frees it; from any thread. */
	void (*emit)(void *arg, char *line);
	void *arg;
};

struct mcp_queue;

/* A queue with no worker yet; ops is copied, c read here only. -ENOMEM. */
int mcp_queue_new(const struct config *c, const struct mcp_queue_ops *ops,
    struct mcp_queue **out);
/* Starts the worker thread (it inherits the caller's signal mask). */
int mcp_queue_start(struct mcp_queue *q);
/* Queues a tools/call whose id (printed as JSON) is id; takes id. When
 * JOBS_ADMIT_MCP_PENDING calls wait already it answers -32000 "Server
 * busy: too many run_code calls waiting" at once. */
void mcp_queue_call(struct mcp_queue *q, const char *msg, size_t len,
    char *id);
/* notifications/cancelled: a waiting call with that id is dropped, one
 * running is stopped through its flag; neither gets a reply. An unknown
 * id is ignored. */
void mcp_queue_cancel(struct mcp_queue *q, const char *id);
/* From a signal handler (only atomics): every call's flag is set; calls
 * not yet started never run. */
void mcp_queue_signal(struct mcp_queue *q);
/* No more calls: after mcp_queue_signal the waiting ones are dropped with
 * no reply, else they all run; returns when none is left and the worker
 * has ended. */
void mcp_queue_end(struct mcp_queue *q);
/* Accepts NULL; after mcp_queue_end (or with no worker started). */
void mcp_queue_free(struct mcp_queue *q);

#endif
