/*
 * The access log: one JSON object per line per request, to a file (opened
 * for append, reopened on SIGHUP for rotation) or stdout. Diagnostics never
 * go here; they go to stderr through common/log.h.
 */
#ifndef CORDON_PROXY_ACCESSLOG_H
#define CORDON_PROXY_ACCESSLOG_H

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
};

/* path "-" is stdout. Returns 0 and *out (caller frees), or a negative
 * errno. */
int proxy_accesslog_open(const char *path, struct accesslog **out);
/* Reopens the file (after rotation); keeps the old one on failure.
 * Returns 0 or a negative errno. No-op for stdout. */
int proxy_accesslog_reopen(struct accesslog *al);
void proxy_accesslog_free(struct accesslog *al);	/* accepts NULL */

/* Formats e as one JSON line with a trailing newline into buf. Returns the
 * length, or -ENOSPC when it did not fit. Pure; exposed for tests. */
int proxy_accesslog_format(const struct accesslog_entry *e, char *buf,
    size_t len);
/* Writes one line; 0 or a negative errno (the caller logs and goes on). */
int proxy_accesslog_write(struct accesslog *al,
    const struct accesslog_entry *e);

#endif
