/*
 * Pending connections per source address (pending.h): linear probing in a
 * power-of-two table at most half full, deletion by backward shift (no
 * tombstones, so a long-running proxy's probes never lengthen).
 */
#include "proxy/pending.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

struct pending_slot {
	struct in6_addr ip;	/* IPv4 as ::ffff:a.b.c.d */
	unsigned n;		/* 0: empty */
};

struct proxy_pending {
	struct pending_slot *slots;
	size_t mask;
	size_t used, max;
};

static bool
pending_ip(const struct sockaddr *sa, struct in6_addr *ip)
{
	if (sa == NULL)
		return false;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)sa;
		memset(ip, 0, sizeof(*ip));
		ip->s6_addr[10] = ip->s6_addr[11] = 0xff;
		memcpy(&ip->s6_addr[12], &sin->sin_addr, 4);
		return true;
	}
	if (sa->sa_family == AF_INET6) {
		*ip = ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
		return true;
	}
	return false;
}

/* FNV-1a: sources are few and not chosen to collide (a sandbox has one
 * address), and a chain is at most the table's load anyway. */
static size_t
pending_hash(const struct in6_addr *ip)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < 16; i++) {
		h ^= ip->s6_addr[i];
		h *= 1099511628211ull;
	}
	return (size_t)(h ^ h >> 29);
}

/* The slot holding ip, or the empty slot where it would go. */
static size_t
pending_find(const struct proxy_pending *p, const struct in6_addr *ip)
{
	size_t i = pending_hash(ip) & p->mask;

	while (p->slots[i].n != 0 &&
	    memcmp(&p->slots[i].ip, ip, sizeof(*ip)) != 0)
		i = (i + 1) & p->mask;
	return i;
}

int
proxy_pending_new(size_t max, struct proxy_pending **out)
{
	struct proxy_pending *p;
	size_t n = 16;

	*out = NULL;
	if (max == 0 || max > (SIZE_MAX / 4) / sizeof(struct pending_slot))
		return -EINVAL;
	while (n < 2 * max)
		n *= 2;
	if ((p = calloc(1, sizeof(*p))) == NULL)
		return -ENOMEM;
	if ((p->slots = calloc(n, sizeof(*p->slots))) == NULL) {
		free(p);
		return -ENOMEM;
	}
	p->mask = n - 1;
	p->max = max;
	*out = p;
	return 0;
}

void
proxy_pending_free(struct proxy_pending *p)
{
	if (p == NULL)
		return;
	free(p->slots);
	free(p);
}

unsigned
proxy_pending_add(struct proxy_pending *p, const struct sockaddr *sa,
    unsigned limit)
{
	struct in6_addr ip;
	size_t i;

	if (!pending_ip(sa, &ip))
		return 0;
	i = pending_find(p, &ip);
	if (p->slots[i].n != 0) {
		if (limit != 0 && p->slots[i].n >= limit)
			return 0;
		return ++p->slots[i].n;
	}
	if (p->used >= p->max)
		return 0;
	p->slots[i].ip = ip;
	p->slots[i].n = 1;
	p->used++;
	return 1;
}

void
proxy_pending_del(struct proxy_pending *p, const struct sockaddr *sa)
{
	struct in6_addr ip;
	size_t i, j, home;

	if (!pending_ip(sa, &ip))
		return;
	i = pending_find(p, &ip);
	if (p->slots[i].n == 0 || --p->slots[i].n > 0)
		return;
	p->used--;
	/* Backward shift: move later entries of the run into the hole
	 * when their home slot does not lie cyclically in (i, j]. */
	for (j = (i + 1) & p->mask; p->slots[j].n != 0; j = (j + 1) & p->mask) {
		home = pending_hash(&p->slots[j].ip) & p->mask;
		if (((j - home) & p->mask) >= ((j - i) & p->mask)) {
			p->slots[i] = p->slots[j];
			i = j;
		}
	}
	p->slots[i].n = 0;
}

unsigned
proxy_pending_count(const struct proxy_pending *p, const struct sockaddr *sa)
{
	struct in6_addr ip;

	if (!pending_ip(sa, &ip))
		return 0;
	return p->slots[pending_find(p, &ip)].n;
}

size_t
proxy_pending_addresses(const struct proxy_pending *p)
{
	return p->used;
}
