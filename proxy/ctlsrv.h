/*
 * cordon-proxy's control socket (run mode): a root-only unix stream socket
 * served on the daemon's loop, one JSON request per line and one answer
 * line each (the protocol is in proxy/ctl.h, the ops in ctlops.c).
 */
#ifndef CORDON_PROXY_CTLSRV_H
#define CORDON_PROXY_CTLSRV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct proxy_ctl_req;
struct proxy_ctlsrv;
struct proxy_server;

/* Concurrent control connections; more are closed at once. */
#define PROXY_CTLSRV_CONNS_MAX	64
/* A control connection silent this long is closed. */
#define PROXY_CTLSRV_IDLE_S	60

/*
 * One request whose answer comes later: the handler took it (set *later)
 * and answers with proxy_ctl_reply_send, which frees it. No further
 * request of that connection is read meanwhile.
 */
struct proxy_ctl_reply;

/*
 * The handler of each valid request: returns its answer line (malloc'd,
 * ending in '\n'; NULL is out of memory and closes the connection), or
 * sets *later, keeps reply and returns NULL.
 */
typedef char *(*proxy_ctlsrv_fn)(void *arg, const struct proxy_ctl_req *req,
    struct proxy_ctl_reply *reply, bool *later);

/*
 * Binds the control socket at path, to be called while root: a stale
 * socket at path is removed first, any other kind of file there is
 * refused (-EEXIST); the socket is created under umask 0177 and set to
 * mode 0600, so only its owner (root) can connect. Serves requests with
 * fn(arg, ...) on base from then on. Returns 0 and *out, or a negative
 * errno (logged with the path).
 */
int proxy_ctlsrv_new(struct event_base *base, const char *path,
    proxy_ctlsrv_fn fn, void *arg, struct proxy_ctlsrv **out);
/* Closes every control connection and the socket, and removes the socket
 * file when it is still ours; accepts NULL. Replies not yet sent then go
 * nowhere. */
void proxy_ctlsrv_free(struct proxy_ctlsrv *cs);
/* Queues answer (taken) for reply's connection, if it is still there,
 * and frees reply. */
void proxy_ctl_reply_send(struct proxy_ctl_reply *reply, char *answer);

/* ctlops.c: the answers the control protocol shares between the parent
 * and the network child (malloc'd lines, NULL only on ENOMEM). */
struct allowlist_set;
/* `unknown policy "x" (policies: a, b)` */
char *proxy_ctl_unknown_policy(const struct allowlist_set *set,
    const char *name);
/* {"ok":true,"policies":[...]} */
char *proxy_ctl_policies(const struct allowlist_set *set);
/* Registers req in rs when its policy is in set: NULL and *out, or the
 * error answer (unknown policy, already registered, deadline past,
 * registry full). */
struct proxy_runs;
struct proxy_run;
struct proxy_run_limits;
char *proxy_ctl_runs_add(struct proxy_runs *rs, const struct allowlist_set *set,
    const struct proxy_ctl_req *req, const struct proxy_run_limits *def,
    int64_t now, struct proxy_run **out);

#endif
