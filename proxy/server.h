/*
 * The proxy server: listening sockets, client connections and the decision
 * pipeline for each request (parse, host checks, allowlist, one DNS lookup,
 * address classification, connect). Runs on one libevent loop.
 */
#ifndef CORDON_PROXY_SERVER_H
#define CORDON_PROXY_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

struct accesslog;
struct allowlist_set;
struct config;
struct dns;
struct event_base;
struct metrics;
struct server;

/* Creates the server and binds every --listen address (so it can run
 * before privileges are dropped); accepting starts with server_start.
 * cfg, dns, alog (may be NULL) and m (may be NULL) are borrowed and must
 * outlive the server. Returns 0 and *out, or a negative errno (bind
 * failures are logged with the address). */
int server_new(const struct config *cfg, struct event_base *base,
    struct dns *dns, struct accesslog *alog, struct metrics *m,
    struct server **out);
/* Closes every connection; accepts NULL. */
void server_free(struct server *s);

/* The bound address of listener i (port 0 resolved). */
int server_listen_addr(const struct server *s, size_t i,
    struct sockaddr_storage *ss, socklen_t *len);
/* Adds an address the proxy must never connect to (e.g. the metrics
 * listener). The listeners are added by server_new. */
int server_add_self(struct server *s, const struct sockaddr *sa);

/* Installs a new allowlist set (takes ownership; the old one is freed
 * after the swap; requests in flight already decided). */
void server_set_allowlist(struct server *s, struct allowlist_set *set);

int server_start(struct server *s);
/* Stops accepting and closes idle connections; done(arg) is called once
 * no connection is left (possibly from inside this call). */
void server_drain(struct server *s, void (*done)(void *), void *arg);
size_t server_connections(const struct server *s);

#endif
