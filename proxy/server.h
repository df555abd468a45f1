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
struct proxy_config;
struct dns;
struct event_base;
struct proxy_metrics;
struct proxy_server;

/* Creates the server and binds every --listen address (so it can run
 * before privileges are dropped); accepting starts with proxy_server_start.
 * cfg, dns, alog (may be NULL) and m (may be NULL) are borrowed and must
 * outlive the server. Returns 0 and *out, or a negative errno (bind
 * failures are logged with the address). */
int proxy_server_new(const struct proxy_config *cfg, struct event_base *base,
    struct dns *dns, struct accesslog *alog, struct proxy_metrics *m,
    struct proxy_server **out);
/* Closes every connection; accepts NULL. */
void proxy_server_free(struct proxy_server *s);

/* The bound address of listener i (port 0 resolved). */
int proxy_server_listen_addr(const struct proxy_server *s, size_t i,
    struct sockaddr_storage *ss, socklen_t *len);
/* Adds an address the proxy must never connect to, whatever
 * --allow-address says (e.g. the metrics listener: a request there would
 * loop). The listeners are added by proxy_server_new. */
int proxy_server_add_self(struct proxy_server *s, const struct sockaddr *sa);
/* Rereads the addresses of the local interfaces (refused as address-self
 * unless --allow-address opens them); done by proxy_server_new, every
 * --self-refresh once started, and by the daemon on SIGHUP. On failure the
 * previous set stays, the error is logged and returned. */
int proxy_server_refresh_self(struct proxy_server *s);

/* Installs a new allowlist set (takes ownership; the old one is freed
 * after the swap; requests in flight already decided). */
void proxy_server_set_allowlist(struct proxy_server *s,
    struct allowlist_set *set);

/* TLS inspection's contexts (borrowed; NULL: inspection unavailable). */
struct proxy_tls;
void proxy_server_set_tls(struct proxy_server *s, struct proxy_tls *tls);

/* Privilege separation: the network child's link to its parent (leaves,
 * secrets); NULL (the default) does both here, from the CA key and the
 * set's secret values. */
struct proxy_psep;
void proxy_server_set_psep(struct proxy_server *s, struct proxy_psep *p);

/* Run registry operations (ctlops.c), as the parent relays them: the
 * answer line of the control protocol (malloc'd; NULL only on ENOMEM). */
struct proxy_ctl_req;
char *proxy_server_run_add(struct proxy_server *s,
    const struct proxy_ctl_req *req);
/* The policy op (ctl.h): the run's policy from now on; its open
 * connections that the new policy denies are closed ("policy-changed").
 * Returns the answer line (caller frees). */
char *proxy_server_run_policy(struct proxy_server *s,
    const struct proxy_ctl_req *req);
char *proxy_server_run_report(struct proxy_server *s, const char *id,
    bool forget);

int proxy_server_start(struct proxy_server *s);
/* Stops accepting and closes idle connections; done(arg) is called once
 * no connection is left (possibly from inside this call). */
void proxy_server_drain(struct proxy_server *s, void (*done)(void *),
    void *arg);
size_t proxy_server_connections(const struct proxy_server *s);

#endif
