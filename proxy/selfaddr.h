/*
 * The proxy's own addresses, which it does not connect to: those of its
 * listeners (never: a request there loops back into the proxy) and every
 * address of every local interface (the host's public address, docker0,
 * loopback aliases: host services bound to 0.0.0.0 answer on them and the
 * bridge firewall does not cover them), unless --allow-address opens one.
 * The local set is read with getifaddrs and replaced whole on refresh; a
 * check is a binary search in a sorted array of 16-byte keys (IPv4 as
 * ::ffff:a.b.c.d), so the cost per candidate address stays small.
 */
#ifndef CORDON_PROXY_SELFADDR_H
#define CORDON_PROXY_SELFADDR_H

#include <stddef.h>
#include <sys/socket.h>

enum proxy_self {
	PROXY_SELF_NONE = 0,	/* not one of ours */
	PROXY_SELF_LOCAL,	/* a local interface's; an exception opens it */
	PROXY_SELF_LISTENER,	/* where the proxy accepts; never opened */
};

struct proxy_selfaddr;

/* An empty set. 0 and *out (caller frees), or -ENOMEM. */
int proxy_selfaddr_new(struct proxy_selfaddr **out);
void proxy_selfaddr_free(struct proxy_selfaddr *s);	/* accepts NULL */

/* Adds a listener's address (AF_INET/AF_INET6; the port is ignored, as
 * any port there is the host's). An unspecified one (0.0.0.0, or :: which
 * also takes IPv4) listens on every local address: each local address of
 * those families, and every loopback address, is then a listener's too.
 * 0, -EAFNOSUPPORT or -ENOMEM. */
int proxy_selfaddr_add_listener(struct proxy_selfaddr *s,
    const struct sockaddr *sa);

/* Replaces the local set with the n addresses in sa (families other than
 * AF_INET/AF_INET6 and NULL entries are skipped; duplicates kept once).
 * Pure: the second half of a refresh, and what tests call. On -ENOMEM the
 * old set stays. */
int proxy_selfaddr_set_local(struct proxy_selfaddr *s,
    const struct sockaddr *const *sa, size_t n);

/* Reads every interface address with getifaddrs and replaces the local
 * set (proxy_selfaddr_set_local). On failure the old set stays and a
 * negative errno is returned. */
int proxy_selfaddr_refresh(struct proxy_selfaddr *s);

/* Whose sa is (port ignored). */
enum proxy_self proxy_selfaddr_match(const struct proxy_selfaddr *s,
    const struct sockaddr *sa);

/* The number of distinct local addresses now known. */
size_t proxy_selfaddr_local_count(const struct proxy_selfaddr *s);

#endif
