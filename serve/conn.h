/*
 * The service's network layer (issue 39): connections (conn.c) and the
 * listeners that accept them (accept.c). Loop thread only.
 *
 * A connection reads one request head under a deadline and hands it to its
 * owner before a byte of the body is read (on_head): the owner answers at
 * once (a refusal: 401, 413, 429...; the connection then closes, its body
 * never read) or asks for the body, which is read under its own deadline
 * into one buffer of its declared size (on_request). From on_request until
 * it replies, the owner holds the connection; a client that hangs up
 * meanwhile is reported (on_gone) and its socket closed at once. A reply,
 * whole or streamed in chunks, is written with a stall deadline: one that
 * makes no progress for write_ms is dropped with its connection. Its bytes
 * not yet taken by the socket are counted where the owner says (a
 * tenant's counter). on_done reports every reply exactly once: written, or
 * dropped (hang-up, stall, error).
 *
 * The listeners cap connections per listener (at the cap the oldest
 * connection still reading a head makes room, else the new one is closed)
 * and per peer address (TCP), and on EMFILE (or another accept failure)
 * close a spare descriptor to accept and close what waits, pause
 * accepting, and log once per interval.
 */
#ifndef CORDON_SERVE_CONN_H
#define CORDON_SERVE_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "serve/http.h"

struct event_base;
struct serve_conn;

/* The owner's, shared by a listener's connections (it outlives them). */
struct serve_conn_cfg {
	struct event_base *base;
	int64_t head_ms;	/* a head, from the start or the last reply */
	int64_t body_ms;	/* a body, from the end of its head */
	int64_t write_ms;	/* a reply with no progress that long: dropped */
	bool tcp;
	/* The head is in (serve_conn_method, _path, _header, _length):
	 * true to read the body and then call on_request; false once the
	 * owner has answered (serve_conn_reply). */
	bool (*on_head)(struct serve_conn *c, void *arg);
	void (*on_request)(struct serve_conn *c, void *arg);
	void *arg;
	/* The socket was closed (its descriptor is free again). */
	void (*on_closed)(void *tag, void *closed_arg);
	void *closed_arg;
};

/* Takes the connected, non-blocking socket fd. 0 and *out, or -ENOMEM (fd
 * is then closed). tag goes back to cfg->on_closed. */
int serve_conn_new(const struct serve_conn_cfg *cfg, int fd, void *tag,
    struct serve_conn **out);
/* Closes the socket now (shutdown of the service); a connection its owner
 * holds is reported gone and freed when the owner replies. */
void serve_conn_close(struct serve_conn *c);

/* The request. */
enum serve_http_method serve_conn_method(const struct serve_conn *c);
const char *serve_conn_path(const struct serve_conn *c);
/* A header's first value (NULL when absent); *count (may be NULL) how
 * often it was sent. */
const char *serve_conn_header(const struct serve_conn *c, const char *name,
    size_t *count);
uint64_t serve_conn_length(const struct serve_conn *c);	/* declared */
/* The body (on_request on): NUL-terminated, len bytes. */
const char *serve_conn_body(const struct serve_conn *c, size_t *len);
bool serve_conn_tcp(const struct serve_conn *c);
/* Still reading a head: not yet past its token, or idle between requests
 * (what a listener at its cap may close to make room). */
bool serve_conn_reading_head(const struct serve_conn *c);
/* The owner's note about this request (from on_head to the reply). */
void serve_conn_set_note(struct serve_conn *c, void *p, size_t n);
void *serve_conn_note(const struct serve_conn *c, size_t *n);

/* Unsent bytes of what is written from now on are counted in *unsent
 * (added when queued, taken off as the socket takes them or when the
 * connection closes). */
void serve_conn_account(struct serve_conn *c, int64_t *unsent);
/* The client hung up while the owner holds the connection: cb(arg) once. */
void serve_conn_on_gone(struct serve_conn *c, void (*cb)(void *), void *arg);
bool serve_conn_gone(const struct serve_conn *c);
/* cb(arg, written) once the reply is written out or dropped. */
void serve_conn_on_done(struct serve_conn *c, void (*cb)(void *, bool),
    void *arg);

/* The reply. Each hands the connection back: the owner must not touch it
 * afterwards. A header added is copied (at most 8, 1 KiB in all; more is
 * dropped). */
void serve_conn_add_header(struct serve_conn *c, const char *name,
    const char *value);
/* Copies body[0..len). */
void serve_conn_reply(struct serve_conn *c, int code, const char *type,
    const char *body, size_t len);
/* Takes body (malloc'd; freed once written or dropped): no copy. */
void serve_conn_reply_take(struct serve_conn *c, int code, const char *type,
    char *body, size_t len);
/* {"error": why} (why made valid UTF-8). */
void serve_conn_reply_error(struct serve_conn *c, int code, const char *why);

/* A chunked reply: start, chunks (copied; each only once on_drain said the
 * last went out, for backpressure), end (hands the connection back). */
void serve_conn_stream_start(struct serve_conn *c, int code,
    const char *type);
void serve_conn_stream_chunk(struct serve_conn *c, const char *data,
    size_t len);
/* The same, taking data (malloc'd): no copy. */
void serve_conn_stream_chunk_take(struct serve_conn *c, char *data,
    size_t len);
/* cb(arg) each time the output was written out (streams only). */
void serve_conn_on_drain(struct serve_conn *c, void (*cb)(void *),
    void *arg);
bool serve_conn_started(const struct serve_conn *c);
void serve_conn_stream_end(struct serve_conn *c);

/* accept.c: the listeners. */
struct serve_accept;

struct serve_accept_opts {
	struct event_base *base;
	struct serve_conn_cfg conn;	/* tcp and on_closed are set here */
	int64_t tcp_max;		/* TCP connections at once */
	int64_t peer_max;		/* ... from one address */
	int64_t unix_max;		/* unix-socket connections at once */
	int64_t pause_ms;		/* accepting paused after EMFILE */
	int64_t log_ms;			/* one warning per kind per interval */
};

struct serve_accept_stats {
	int64_t conns[2];		/* [0] unix, [1] TCP, open now */
	uint64_t refused_peer;		/* closed at once: per-peer cap */
	uint64_t full;			/* a connection found its listener at
					 * its cap */
	uint64_t evicted;		/* ... and one reading a head made
					 * room (else the new one was closed) */
	uint64_t accept_errors;		/* EMFILE, ENFILE, ENOBUFS... */
	uint64_t shed;			/* accepted and closed in a pause */
};

/* 0 and *out, or -ENOMEM. */
int serve_accept_new(const struct serve_accept_opts *o,
    struct serve_accept **out);
/* Accepts on the listening socket fd (taken; closed by stop or free). 0,
 * or -ENOMEM. */
int serve_accept_listen(struct serve_accept *a, int fd, bool tcp);
/* Closes the listening sockets (connections stay). */
void serve_accept_stop(struct serve_accept *a);
void serve_accept_stats(const struct serve_accept *a,
    struct serve_accept_stats *st);
/* Closes every connection and listener; accepts NULL. */
void serve_accept_free(struct serve_accept *a);

#endif
