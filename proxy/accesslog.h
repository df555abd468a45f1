/*
 * The access log: one JSON object per line per request, to a file (opened
 * for append, reopened on SIGUSR1 or SIGHUP after an outside rotation such
 * as logrotate's, and optionally rotated by size by the proxy itself) or
 * stdout. Diagnostics never go here; they go to stderr through
 * common/log.h.
 */
#ifndef CORDON_PROXY_ACCESSLOG_H
#define CORDON_PROXY_ACCESSLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct accesslog;

/* One request. Strings may be NULL (written as null); numbers < 0 are
 * written as null. */
struct accesslog_entry {
	int64_t time_ms;	/* wall clock at request start */
	const char *client;	/* "ADDR:PORT" */
	const char *run;	/* run mode: the run id, else NULL */
	const char *method;
	const char *host;
	long port;
	const char *decision;	/* "allow", "deny", "error" */
	const char *reason;
	const char *policy;	/* the policy name used, or NULL */
	const char *address;	/* "ADDR:PORT" connected to */
	int status;
	uint64_t bytes_up;	/* client -> upstream */
	uint64_t bytes_down;	/* upstream -> client */
	int64_t duration_ms;
	int64_t dns_ms;
	int64_t connect_ms;
	const char *sni;	/* CONNECT: the ClientHello's server_name */
	const char *via;	/* the path (egress.h's words), or NULL */
	/* TLS inspection: the request was checked against an entry's
	 * options ("inspected": true, and "path" when set: query stripped);
	 * both are left out of other lines. */
	bool inspected;
	const char *path;
};

/* path "-" is stdout. Returns 0 and *out (caller frees), or a negative
 * errno. */
int proxy_accesslog_open(const char *path, struct accesslog **out);
/* Reopens the file (after rotation); keeps the old one on failure.
 * Returns 0 or a negative errno. No-op for stdout. */
int proxy_accesslog_reopen(struct accesslog *al);
void proxy_accesslog_free(struct accesslog *al);	/* accepts NULL */

#define PROXY_ACCESSLOG_KEEP_MAX 1000

/* Rotation by size: after a line takes the file to max bytes or more, the
 * file becomes PATH.1 (PATH.1 becomes PATH.2, ..., PATH.keep is dropped)
 * and a new PATH is opened, between two lines, so no line is split or
 * lost. max 0: never (the default). A rotation that fails (say the
 * directory is not writable by --user) is logged once and not tried again
 * until the next reopen; lines keep going to the open file. Only for a
 * file: -EINVAL for stdout, for keep outside 1..PROXY_ACCESSLOG_KEEP_MAX
 * or a path too long for its suffixes. */
int proxy_accesslog_set_rotate(struct accesslog *al, uint64_t max,
    unsigned keep);

/*
 * Privilege separation: the parent owns the file (opens, reopens,
 * rotates: proxy_accesslog_rotate; hands a duplicate of its descriptor
 * with the file's size to the child: proxy_accesslog_dup), the network
 * child writes to a descriptor it was given (proxy_accesslog_adopt; fd 1
 * is stdout) and, once a line takes it past max bytes (0: never), calls
 * ask_rotate(arg) once, until proxy_accesslog_replace gives it the new
 * file. Lines go on into the old one meanwhile: nothing is lost.
 */
int proxy_accesslog_adopt(int fd, uint64_t size, uint64_t max,
    void (*ask_rotate)(void *), void *arg, struct accesslog **out);
void proxy_accesslog_replace(struct accesslog *al, int fd, uint64_t size);
/* Rotates now (PATH -> PATH.1 ...; needs set_rotate's keep). 0 or a
 * negative errno (logged). */
int proxy_accesslog_rotate(struct accesslog *al);
/* A close-on-exec duplicate of the open file's descriptor and its size;
 * -EINVAL for stdout. */
int proxy_accesslog_dup(const struct accesslog *al, uint64_t *size);
bool proxy_accesslog_is_stdout(const struct accesslog *al);

/* Formats e as one JSON line with a trailing newline into buf. Returns the
 * length, or -ENOSPC when it did not fit. Pure; exposed for tests. */
int proxy_accesslog_format(const struct accesslog_entry *e, char *buf,
    size_t len);
/* Writes one line; 0 or a negative errno (the caller logs and goes on). */
int proxy_accesslog_write(struct accesslog *al,
    const struct accesslog_entry *e);

#endif
