/*
 * The HTTP/JSON service behind `cordon serve`: its own HTTP/1.1 layer
 * (serve/http.c, conn.c, accept.c) on a unix socket (and optionally TCP,
 * where a bearer token is required), runs executed on
 * worker threads with per-tenant and global limits, a kill switch, and a
 * graceful stop on SIGTERM/SIGINT, and a scheduled probe per net mode.
 * The library never exits; it says what it does through common/log.h
 * (serve/notes.c): start-up, pool fills and failures, probes, kill-all,
 * resume, and a shutdown summary.
 */
#ifndef CORDON_SERVE_SERVER_H
#define CORDON_SERVE_SERVER_H

#include <stddef.h>

#include "common/config.h"

struct serve_server_opts {
	const struct config *config;	/* borrowed; must outlive the server */
	const char *socket;		/* NULL: config serve.socket */
	const char *listen;		/* NULL: config serve.listen ("" none) */
	const char *tmp_dir;		/* staged files; NULL: $TMPDIR or /tmp */
	const char *probe_exe;		/* `cordon` for the scheduled probe;
					 * NULL: no scheduled probe */
	int64_t pool;			/* warm containers per net mode; -1:
					 * config serve.pool; 0: no pool */
};

struct serve_server;

/* Creates the event loop and binds the listeners. 0 and *out (caller frees
 * with serve_server_free), or a negative errno with a reason in err. */
int serve_server_new(const struct serve_server_opts *opts,
    struct serve_server **out, char *err, size_t errlen);

/* Serves until SIGTERM or SIGINT; then stops accepting, refuses queued
 * runs, stops refilling the pool, lets running ones finish (a second
 * signal cancels them); once none is left, stops the pool (its start in
 * flight removed by name, then its idle containers), removes whatever
 * still carries this process's owner label (a leftover, logged) and logs
 * the summary. 0, or a negative errno if the loop failed. */
int serve_server_run(struct serve_server *s);

/* Unlinks the socket and frees; accepts NULL. Call only after
 * serve_server_run returned (no run may be in flight). */
void serve_server_free(struct serve_server *s);

#endif
