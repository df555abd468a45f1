/*
 * The proxy's sockets before they are listened on by anyone: a listening
 * TCP socket and a bound UDP socket for an address of the config. Shared
 * by the privileged parent (which binds before dropping privileges), the
 * listeners (server.c) and the resolver (dnsd.c) when they bind their own.
 */
#ifndef CORDON_PROXY_SOCK_H
#define CORDON_PROXY_SOCK_H

struct proxy_config_addr;

/* A listening TCP socket bound to a (a->ss gets the bound port, for port
 * 0): non-blocking, close-on-exec, SO_REUSEADDR, TCP_NODELAY inherited by
 * accepted sockets. The descriptor, or a negative errno. */
int proxy_sock_listen_tcp(struct proxy_config_addr *a);

/* A bound UDP socket (the resolver's): non-blocking, close-on-exec, a
 * receive buffer for a burst of queries; a->ss gets the bound port. The
 * descriptor, or a negative errno. */
int proxy_sock_bind_udp(struct proxy_config_addr *a);

#endif
