/*
 * cordon-proxy's control socket (run mode): a root-only unix stream socket
 * served on the daemon's loop, one JSON request per line and one answer
 * line each (the protocol is in proxy/ctl.h, the ops in ctlops.c).
 */
#ifndef CORDON_PROXY_CTLSRV_H
#define CORDON_PROXY_CTLSRV_H

#include <stddef.h>

struct event_base;
struct proxy_ctl_req;
struct proxy_ctlsrv;
struct proxy_server;

/* Concurrent control connections; more are closed at once. */
#define PROXY_CTLSRV_CONNS_MAX	64
/* A control connection silent this long is closed. */
#define PROXY_CTLSRV_IDLE_S	60

/*
 * Binds the control socket at path, to be called before privileges are
 * dropped: a stale socket at path is removed first, any other kind of file
 * there is refused (-EEXIST); the socket is created under umask 0177 and
 * set to mode 0600, so only its owner (root) can connect. Serves requests
 * for s on base from then on. Returns 0 and *out, or a negative errno
 * (logged with the path).
 */
int proxy_ctlsrv_new(struct proxy_server *s, struct event_base *base,
    const char *path, struct proxy_ctlsrv **out);
/* Closes every control connection and the socket, and removes the socket
 * file when it is still ours; accepts NULL. */
void proxy_ctlsrv_free(struct proxy_ctlsrv *cs);

/*
 * ctlops.c: the answer line to req (any op) for s, malloc'd, ending in
 * '\n' (caller frees); NULL only on ENOMEM. register, unregister, report,
 * policies, ping, as in proxy/README.md.
 */
char *proxy_ctlops_handle(struct proxy_server *s,
    const struct proxy_ctl_req *req);

#endif
