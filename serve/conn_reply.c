/*
 * A connection's replies (conn.h): a whole one with Content-Length, an
 * error as one JSON line, or a chunked stream (start, chunks, end), each
 * head with the reply's own headers. Writing them out, the unsent-bytes
 * account and the deadlines are conn.c's.
 */
#include "serve/conn.h"
#include "serve/conn_int.h"

#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "common/json.h"

void
serve_conn_add_header(struct serve_conn *c, const char *name,
    const char *value)
{
	size_t nl = strlen(name) + 1, vl = strlen(value) + 1;
	char *p = c->out_store + c->out_used;

	if (c->nout == CONN_HEADERS || nl + vl > sizeof(c->out_store) -
	    c->out_used)
		return;
	memcpy(p, name, nl);
	memcpy(p + nl, value, vl);
	c->out_f[c->nout].name = p;
	c->out_f[c->nout].value = p + nl;
	c->nout++;
	c->out_used += nl + vl;
}

/* Common to every reply: the connection is the loop's again. NULL when
 * the client is gone (the connection is then freed, the reply reported
 * dropped), else the output to write into. */
static struct evbuffer *
reply_begin(struct serve_conn *c)
{
	c->held = false;
	c->gone_cb = NULL;
	if (c->bev == NULL) {
		serve_conn_report(c, false);
		serve_conn_free(c);
		return NULL;
	}
	/* Its body was never read: the connection cannot be reused. */
	if (c->st == C_HEAD && c->head.length > 0)
		c->body_unread = true;
	evtimer_del(c->timer);
	c->st = C_WRITE;
	return bufferevent_get_output(c->bev);
}

/* The head of a reply into out; false on ENOMEM. */
static bool
put_head(struct serve_conn *c, struct evbuffer *out, int code,
    const char *type, uint64_t len, bool chunked)
{
	char head[CONN_HEADER_BYTES + 512];
	size_t n = c->nout;
	int hl;

	c->out_f[n].name = "Content-Type";
	c->out_f[n].value = type;
	c->out_f[n + 1].name = "Cache-Control";
	c->out_f[n + 1].value = "no-store";
	hl = serve_http_response_head(head, sizeof(head), code,
	    serve_http_reason(code), c->out_f, n + 2, len, chunked,
	    c->keep_alive && !c->body_unread);
	return hl > 0 && evbuffer_add(out, head, (size_t)hl) == 0;
}

static void
free_body(const void *data, size_t len, void *arg)
{
	(void)len;
	(void)arg;
	free((void *)data);
}

void
serve_conn_reply_take(struct serve_conn *c, int code, const char *type,
    char *body, size_t len)
{
	struct evbuffer *out = reply_begin(c);

	if (out == NULL) {
		free(body);
		return;
	}
	if (!put_head(c, out, code, type, len, false) || (len > 0 &&
	    evbuffer_add_reference(out, body, len, free_body, NULL) < 0)) {
		free(body);
		serve_conn_close(c);
		return;
	}
	if (len == 0)
		free(body);
}

void
serve_conn_reply(struct serve_conn *c, int code, const char *type,
    const char *body, size_t len)
{
	struct evbuffer *out = reply_begin(c);

	if (out == NULL)
		return;
	if (!put_head(c, out, code, type, len, false) || (len > 0 &&
	    evbuffer_add(out, body, len) < 0))
		serve_conn_close(c);
}

void
serve_conn_reply_error(struct serve_conn *c, int code, const char *why)
{
	cJSON *o = cJSON_CreateObject();
	char *line = NULL;

	if (o != NULL && json_add_bytes(o, "error", why, strlen(why)) == 0)
		line = json_print_line(o);
	cJSON_Delete(o);
	if (line == NULL) {
		serve_conn_reply(c, 500, "application/json",
		    "{\"error\":\"out of memory\"}\n", 26);
		return;
	}
	serve_conn_reply_take(c, code, "application/json", line,
	    strlen(line));
}

void
serve_conn_stream_start(struct serve_conn *c, int code, const char *type)
{
	struct evbuffer *out;

	/* Still the owner's until stream_end. */
	if (c->bev == NULL) {
		c->started = true;
		return;
	}
	evtimer_del(c->timer);
	c->st = C_WRITE;
	c->streaming = true;
	c->started = true;
	out = bufferevent_get_output(c->bev);
	if (!put_head(c, out, code, type, 0, true))
		serve_conn_close(c);
}

void
serve_conn_stream_chunk(struct serve_conn *c, const char *data, size_t len)
{
	struct evbuffer *out;

	if (c->bev == NULL || len == 0)
		return;
	out = bufferevent_get_output(c->bev);
	if (evbuffer_add_printf(out, "%zx\r\n", len) < 0 ||
	    evbuffer_add(out, data, len) < 0 || evbuffer_add(out, "\r\n",
	    2) < 0)
		serve_conn_close(c);
}

void
serve_conn_stream_chunk_take(struct serve_conn *c, char *data, size_t len)
{
	struct evbuffer *out;

	if (c->bev == NULL || len == 0) {
		free(data);
		return;
	}
	out = bufferevent_get_output(c->bev);
	if (evbuffer_add_printf(out, "%zx\r\n", len) < 0 ||
	    evbuffer_add_reference(out, data, len, free_body, NULL) < 0) {
		free(data);
		serve_conn_close(c);
		return;
	}
	if (evbuffer_add(out, "\r\n", 2) < 0)
		serve_conn_close(c);
}

void
serve_conn_on_drain(struct serve_conn *c, void (*cb)(void *), void *arg)
{
	c->drain_cb = cb;
	c->drain_arg = arg;
}

bool
serve_conn_started(const struct serve_conn *c)
{
	return c->started;
}

void
serve_conn_stream_end(struct serve_conn *c)
{
	c->held = false;
	c->gone_cb = NULL;
	c->drain_cb = NULL;
	c->ended = true;
	if (c->bev == NULL) {
		serve_conn_report(c, false);
		serve_conn_free(c);
		return;
	}
	if (evbuffer_add(bufferevent_get_output(c->bev), "0\r\n\r\n", 5) < 0)
		serve_conn_close(c);
}
