/*
 * Connections not yet admitted, counted per source address: a client
 * connection is pending from accept until its first request head is
 * accepted (its credential checked in run mode). The listener caps them
 * per address before it reads a byte (--source-max-pending), so one
 * sandbox that opens idle connections cannot fill the proxy's global
 * connection limit and starve the other runs. Pure: a fixed-size open
 * addressing table, no I/O, no allocation after creation.
 */
#ifndef CORDON_PROXY_PENDING_H
#define CORDON_PROXY_PENDING_H

#include <stddef.h>
#include <sys/socket.h>

struct proxy_pending;

/* A table for up to max addresses with pending connections at once (the
 * proxy's connection limit bounds it). 0 and *out, or -ENOMEM/-EINVAL. */
int proxy_pending_new(size_t max, struct proxy_pending **out);
void proxy_pending_free(struct proxy_pending *p);	/* accepts NULL */

/*
 * One more pending connection from sa (AF_INET or AF_INET6; an
 * IPv4-mapped IPv6 address counts as its IPv4 address), unless sa already
 * has limit of them (limit 0: no limit). Returns the count after adding
 * (1 or more), or 0 when refused: over the limit, the table full, or
 * another family.
 */
unsigned proxy_pending_add(struct proxy_pending *p, const struct sockaddr *sa,
    unsigned limit);
/* One pending connection from sa less (admitted, or closed). */
void proxy_pending_del(struct proxy_pending *p, const struct sockaddr *sa);
/* Pending connections from sa now. */
unsigned proxy_pending_count(const struct proxy_pending *p,
    const struct sockaddr *sa);
/* Addresses with at least one pending connection. */
size_t proxy_pending_addresses(const struct proxy_pending *p);

#endif
