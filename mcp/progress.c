/*
 * Live output of a run_code call as MCP progress notifications
 * (internal.h): when the client gave params._meta.progressToken, each
 * output chunk becomes
 *   {"jsonrpc":"2.0","method":"notifications/progress","params":{
 *    "progressToken":T,"progress":N,"message":CHUNK,
 *    "_meta":{"cordon/stream":"stdout"|"stderr"|"dropped"}}}
 * with N the bytes of output so far (so it only grows). The runner's read
 * loop only queues chunks (jobs/stream.h: bounded, never blocks); a
 * thread of the call's own sends them through s->notify, whose write may
 * block on a client that does not read. Chunks the queue had no room for
 * are announced by a "dropped" notification.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "mcp/internal.h"
#include "jobs/stream.h"

struct mcp_progress {
	struct mcp_server *s;
	char *token;			/* printed exactly (mcp_id_print) */
	struct jobs_stream *q;
	pthread_t th;
	uint64_t progress;		/* bytes of output so far */
};

/* One notification line for ev; NULL on ENOMEM. */
static char *
progress_line(struct mcp_progress *p, const struct jobs_stream_event *ev)
{
	cJSON *o = cJSON_CreateObject(), *params, *meta, *tok;
	char msg[96], *text = NULL, *line = NULL;
	const char *stream = ev->kind == JOBS_STREAM_STDOUT ? "stdout" :
	    ev->kind == JOBS_STREAM_STDERR ? "stderr" : "dropped";
	size_t n;

	if (ev->kind == JOBS_STREAM_DROPPED) {
		snprintf(msg, sizeof(msg), "[cordon: %" PRIu64 " bytes of live "
		    "output dropped here]\n", ev->dropped);
		p->progress += ev->dropped;
	} else {
		p->progress += ev->len;
	}
	if (o == NULL || cJSON_AddStringToObject(o, "jsonrpc", "2.0") == NULL ||
	    cJSON_AddStringToObject(o, "method", "notifications/progress") ==
	    NULL || (params = cJSON_AddObjectToObject(o, "params")) == NULL ||
	    (tok = cJSON_CreateRaw(p->token)) == NULL)
		goto done;
	if (!cJSON_AddItemToObject(params, "progressToken", tok)) {
		cJSON_Delete(tok);
		goto done;
	}
	if (cJSON_AddNumberToObject(params, "progress",
	    (double)p->progress) == NULL ||
	    cJSON_AddStringToObject(params, "message", ev->kind ==
	    JOBS_STREAM_DROPPED ? msg : ev->data) == NULL ||
	    (meta = cJSON_AddObjectToObject(params, "_meta")) == NULL ||
	    cJSON_AddStringToObject(meta, "cordon/stream", stream) == NULL)
		goto done;
	if ((text = cJSON_PrintUnformatted(o)) == NULL)
		goto done;
	n = strlen(text);
	if ((line = malloc(n + 2)) != NULL) {
		memcpy(line, text, n);
		memcpy(line + n, "\n", 2);
	}
done:
	cJSON_free(text);
	cJSON_Delete(o);
	return line;
}

static void *
progress_main(void *arg)
{
	struct mcp_progress *p = arg;
	struct jobs_stream_event *ev;
	char *line;

	while (jobs_stream_pop(p->q, true, &ev) == 1) {
		if ((line = progress_line(p, ev)) != NULL)
			p->s->notify(p->s->notify_arg, line);
		jobs_stream_event_free(ev);
	}
	return NULL;
}

int
mcp_progress_start(struct mcp_server *s, const cJSON *token,
    struct mcp_progress **out)
{
	struct mcp_progress *p = calloc(1, sizeof(*p));
	int rc;

	*out = NULL;
	if (p == NULL)
		return -ENOMEM;
	p->s = s;
	if ((p->token = mcp_id_print(token)) == NULL ||
	    (p->q = jobs_stream_new(0, NULL, NULL)) == NULL) {
		rc = -ENOMEM;
		goto bad;
	}
	if ((rc = pthread_create(&p->th, NULL, progress_main, p)) != 0) {
		rc = -rc;
		goto bad;
	}
	*out = p;
	return 0;
bad:
	jobs_stream_free(p->q);
	free(p->token);
	free(p);
	return rc;
}

struct jobs_stream *
mcp_progress_stream(struct mcp_progress *p)
{
	return p->q;
}

uint64_t
mcp_progress_finish(struct mcp_progress *p)
{
	uint64_t dropped;

	jobs_stream_close(p->q);
	pthread_join(p->th, NULL);
	dropped = jobs_stream_dropped(p->q);
	jobs_stream_free(p->q);
	free(p->token);
	free(p);
	return dropped;
}
