/*
 * What serve/conn.c (reading, deadlines, closing) and serve/conn_reply.c
 * (putting replies into the output) share about a connection: its state
 * and its fields. Nothing outside those two includes this.
 */
#ifndef CORDON_SERVE_CONN_INT_H
#define CORDON_SERVE_CONN_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "serve/conn.h"
#include "serve/http.h"

struct bufferevent;
struct event;
struct evbuffer_cb_entry;

#define CONN_BODY_READ (256 * 1024)	/* input buffered while reading */
#define CONN_HELD_READ 4096		/* pipelined bytes while held */
#define CONN_LINGER_MS 2000
#define CONN_LINGER_MAX (4u << 20)	/* bytes dropped before closing */
#define CONN_HEADERS 8
#define CONN_HEADER_BYTES 1024

enum conn_state {
	C_HEAD,		/* reading a head */
	C_BODY,		/* reading the body */
	C_HELD,		/* the owner works on it; nothing written yet */
	C_WRITE,	/* a reply is being written */
	C_LINGER,	/* write side shut; dropping input until EOF */
};

struct serve_conn {
	const struct serve_conn_cfg *cfg;
	void *tag;
	struct bufferevent *bev;	/* NULL once the socket is closed */
	struct event *timer;
	enum conn_state st;
	bool held;			/* between on_head/on_request and reply */
	bool idle;			/* no byte of the next head yet */
	bool keep_alive;
	bool body_unread;		/* answered before its body was read */
	bool streaming, started, ended;
	char *headbuf;
	struct serve_http_head head;
	char *body;
	size_t body_len, body_got;
	void *note;
	size_t note_n;
	/* The reply's own headers. */
	struct serve_http_field out_f[CONN_HEADERS + 2];
	size_t nout;
	char out_store[CONN_HEADER_BYTES];
	size_t out_used;
	/* Unsent reply bytes: counted in *unsent; the first uncounted bytes
	 * of the output were there before the account was set. */
	int64_t *unsent;
	size_t counted, uncounted;
	struct evbuffer_cb_entry *out_cb;
	size_t lingered;
	void (*gone_cb)(void *);
	void *gone_arg;
	void (*done_cb)(void *, bool);
	void *done_arg;
	void (*drain_cb)(void *);
	void *drain_arg;
};

/* Frees c's memory (its socket is closed already). */
void serve_conn_free(struct serve_conn *c);
/* Reports the reply dropped or written, once. */
void serve_conn_report(struct serve_conn *c, bool written);

#endif
