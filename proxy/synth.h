/*
 * Synthetic addresses of one run's closed resolver: a bounded two-way map
 * name <-> IPv4 address in 198.18.0.0/15 (RFC 2544's benchmarking block,
 * never routed on the Internet). The resolver answers an allowed name with
 * its address; the transparent listener maps the address a sandbox
 * connects to back to the name. Pure data structure: no I/O, no clock.
 *
 * - The same name keeps its address while it stays in the map.
 * - At most max names (PROXY_SYNTH_DEFAULT_MAX): a new name when full
 *   evicts the least recently assigned one (LRU by proxy_synth_assign
 *   only; reverse lookups do not refresh a name, see dnsresolve.h for why
 *   that makes a handed-out address outlive its TTL).
 * - Addresses are handed out in order through the block (198.18.0.1 to
 *   198.19.255.254), skipping those in use, and wrap around: an evicted
 *   name's address is not handed out again before 131,070 more
 *   assignments.
 * - Each run has its own map, so runs reuse the same addresses: the
 *   listener knows the run from the connection's source address.
 */
#ifndef CORDON_PROXY_SYNTH_H
#define CORDON_PROXY_SYNTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#define PROXY_SYNTH_NET		0xc6120000u	/* 198.18.0.0, host order */
#define PROXY_SYNTH_BITS	17		/* a /15: 131,072 addresses */
#define PROXY_SYNTH_DEFAULT_MAX	4096		/* names per run */
#define PROXY_SYNTH_MAX_MAX	65536		/* largest max accepted */
#define PROXY_SYNTH_NAME_MAX	255		/* bytes of a name */

struct proxy_synth;

/* A map of at most max names (1..PROXY_SYNTH_MAX_MAX). 0 and *out
 * (caller frees with proxy_synth_free), or -EINVAL, -ENOMEM. About 0.1
 * KiB empty, plus about 80 bytes and the name per name held. */
int proxy_synth_new(size_t max, struct proxy_synth **out);
/* Accepts NULL. */
void proxy_synth_free(struct proxy_synth *s);

/*
 * The address of name (ASCII case ignored; pass names already normalised,
 * as proxy_dnsmsg_query.name is): the one it has, or the next free one,
 * evicting the least recently assigned name when the map is full. Makes
 * name the most recently assigned. 0 and *addr (network order), -EINVAL
 * (name empty or over PROXY_SYNTH_NAME_MAX bytes) or -ENOMEM (*addr is
 * then zero and the map unchanged).
 */
int proxy_synth_assign(struct proxy_synth *s, const char *name,
    struct in_addr *addr);

/* The name that holds addr (network order), or NULL. Borrowed: valid
 * until the next proxy_synth_assign or proxy_synth_free. Changes nothing
 * (no LRU refresh). */
const char *proxy_synth_name(const struct proxy_synth *s,
    const struct in_addr *addr);

/* True when addr (network order) is in 198.18.0.0/15. */
bool proxy_synth_in_block(const struct in_addr *addr);

/* Names held. */
size_t proxy_synth_count(const struct proxy_synth *s);

#endif
