/*
 * A bounded cache of DNS answers for dns.c: name -> the addresses one
 * lookup returned, kept for the answer's TTL capped at DNSCACHE_TTL_MAX_S.
 * Only addresses are cached, never a decision: every caller classifies
 * what it gets back on every use. Negative answers (no such name, no data)
 * and failures are never stored. The clock is the caller's (now_ms on
 * every call), so tests drive expiry without sleeping.
 */
#ifndef CORDON_PROXY_DNSCACHE_H
#define CORDON_PROXY_DNSCACHE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define DNSCACHE_TTL_MAX_S	60	/* longest time an answer is reused */
#define DNSCACHE_MAX_ADDRS	16	/* addresses kept per name */
#define DNSCACHE_DEFAULT_MAX	1024	/* names (about 0.5 KiB each) */

struct dnscache;

/* A cache of at most max names (max >= 1). 0 and *out (caller frees with
 * proxy_dnscache_free), or -EINVAL, -ENOMEM. */
int proxy_dnscache_new(size_t max, struct dnscache **out);
/* Accepts NULL. */
void proxy_dnscache_free(struct dnscache *dc);

/* Copies the live answer for name (compared without case) into addrs (at
 * most cap, port 0, in the order stored) and returns how many; 0 when
 * there is none or it has expired at now_ms (it is then dropped). A hit
 * makes name the most recently used. */
size_t proxy_dnscache_get(struct dnscache *dc, const char *name,
    int64_t now_ms, struct sockaddr_storage *addrs, size_t cap);

/* Stores the n addresses (IPv4/IPv6 only; others skipped; at most
 * DNSCACHE_MAX_ADDRS) of a successful answer for name, valid for ttl_s
 * seconds from now_ms, capped at DNSCACHE_TTL_MAX_S. Replaces an older
 * answer for name. Nothing is stored (and any older answer is dropped)
 * when ttl_s <= 0 or no address is left: returns -ENOENT then. When full,
 * the least recently used name goes. 0, -ENOENT, -EINVAL (name empty or
 * longer than 255) or -ENOMEM. */
int proxy_dnscache_put(struct dnscache *dc, const char *name,
    const struct sockaddr_storage *addrs, size_t n, int ttl_s,
    int64_t now_ms);

/* Names held (expired ones included until they are met or evicted). */
size_t proxy_dnscache_count(const struct dnscache *dc);

#endif
