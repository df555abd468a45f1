/*
 * Plumbing of the service that needs no event loop: the listening unix
 * socket, the `--listen ADDR:PORT` parser, and worker threads that never
 * take the process's signals.
 */
#ifndef CORDON_SERVE_LISTEN_H
#define CORDON_SERVE_LISTEN_H

#include <stddef.h>
#include <stdint.h>

/* A listening, non-blocking, close-on-exec unix socket at path (mode
 * 0660; parent directories made 0755). A stale socket file is replaced; a
 * live one (something accepts on it) or a non-socket is -EADDRINUSE. 0 and
 * *fd (caller closes), or a negative errno with a reason in err. */
int serve_listen_unix(const char *path, int *fd, char *err,
    size_t errlen);

/* "ADDR:PORT" or "[V6ADDR]:PORT" into host (brackets removed) and port
 * (1..65535). 0 or -EINVAL. Pure. */
int serve_listen_parse_addr(const char *spec, char *host, size_t hostlen,
    uint16_t *port);

/* Starts fn(arg) on a detached thread with every signal blocked (signals
 * belong to the event loop). 0 or a negative errno. */
int serve_listen_thread_spawn(void *(*fn)(void *), void *arg);

#endif
