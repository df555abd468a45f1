/*
 * The DNS answer cache (dnscache.h): a chained hash table over one
 * allocation per name, and a least-recently-used list that decides which
 * name goes when the table is full. Expired answers are dropped when met.
 */
#include "proxy/dnscache.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#include "common/util.h"

#define DNSCACHE_NAME_MAX	255

/* An address as DNS gives it: no port, no scope. */
union dnscache_addr {
	struct sockaddr sa;
	struct sockaddr_in v4;
	struct sockaddr_in6 v6;
};

struct dnscache_entry {
	struct dnscache_entry *hnext;	/* bucket chain */
	TAILQ_ENTRY(dnscache_entry) lru;	/* first: the newest */
	uint32_t hash;
	int64_t expires_ms;
	size_t n;
	union dnscache_addr addrs[DNSCACHE_MAX_ADDRS];
	char name[];
};

struct dnscache {
	struct dnscache_entry **buckets;
	size_t nbuckets;	/* a power of two */
	size_t max, count;
	TAILQ_HEAD(dnscache_lru, dnscache_entry) lru;
};

int
proxy_dnscache_new(size_t max, struct dnscache **out)
{
	struct dnscache *dc;
	size_t nb = 16;

	*out = NULL;
	if (max == 0 || max > (1u << 20))
		return -EINVAL;
	while (nb < max)
		nb <<= 1;
	dc = calloc(1, sizeof(*dc));
	if (dc == NULL)
		return -ENOMEM;
	dc->buckets = calloc(nb, sizeof(*dc->buckets));
	if (dc->buckets == NULL) {
		free(dc);
		return -ENOMEM;
	}
	dc->nbuckets = nb;
	dc->max = max;
	TAILQ_INIT(&dc->lru);
	*out = dc;
	return 0;
}

void
proxy_dnscache_free(struct dnscache *dc)
{
	struct dnscache_entry *e;

	if (dc == NULL)
		return;
	while ((e = TAILQ_FIRST(&dc->lru)) != NULL) {
		TAILQ_REMOVE(&dc->lru, e, lru);
		free(e);
	}
	free(dc->buckets);
	free(dc);
}

size_t
proxy_dnscache_count(const struct dnscache *dc)
{
	return dc->count;
}

/* The bucket slot that points at name's entry (or the chain's end). */
static struct dnscache_entry **
dnscache_slot(struct dnscache *dc, const char *name, uint32_t hash)
{
	struct dnscache_entry **pp = &dc->buckets[hash & (dc->nbuckets - 1)];

	for (; *pp != NULL; pp = &(*pp)->hnext)
		if ((*pp)->hash == hash && strcasecmp((*pp)->name, name) == 0)
			break;
	return pp;
}

static void
dnscache_drop(struct dnscache *dc, struct dnscache_entry *e)
{
	struct dnscache_entry **pp = &dc->buckets[e->hash &
	    (dc->nbuckets - 1)];

	while (*pp != NULL && *pp != e)
		pp = &(*pp)->hnext;
	if (*pp != NULL)
		*pp = e->hnext;
	TAILQ_REMOVE(&dc->lru, e, lru);
	dc->count--;
	free(e);
}

size_t
proxy_dnscache_get(struct dnscache *dc, const char *name, int64_t now_ms,
    struct sockaddr_storage *addrs, size_t cap)
{
	uint32_t hash = util_fnv1a_lower(name);
	struct dnscache_entry **slot = dnscache_slot(dc, name, hash), *e;
	size_t n;

	if ((e = *slot) == NULL)
		return 0;
	if (now_ms >= e->expires_ms) {
		dnscache_drop(dc, e);
		return 0;
	}
	n = e->n < cap ? e->n : cap;
	for (size_t i = 0; i < n; i++) {
		memset(&addrs[i], 0, sizeof(addrs[i]));
		memcpy(&addrs[i], &e->addrs[i], e->addrs[i].sa.sa_family ==
		    AF_INET ? sizeof(e->addrs[i].v4) : sizeof(e->addrs[i].v6));
	}
	TAILQ_REMOVE(&dc->lru, e, lru);
	TAILQ_INSERT_HEAD(&dc->lru, e, lru);
	return n;
}

/* Evicts the least recently used name. */
static void
dnscache_evict(struct dnscache *dc)
{
	struct dnscache_entry *e = TAILQ_LAST(&dc->lru, dnscache_lru);

	if (e != NULL)
		dnscache_drop(dc, e);
}

int
proxy_dnscache_put(struct dnscache *dc, const char *name,
    const struct sockaddr_storage *addrs, size_t n, int ttl_s,
    int64_t now_ms)
{
	size_t len = strlen(name), k = 0;
	uint32_t hash = util_fnv1a_lower(name);
	struct dnscache_entry **slot, *e;
	union dnscache_addr a[DNSCACHE_MAX_ADDRS];

	if (len == 0 || len > DNSCACHE_NAME_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n && k < DNSCACHE_MAX_ADDRS; i++) {
		memset(&a[k], 0, sizeof(a[k]));
		if (addrs[i].ss_family == AF_INET) {
			a[k].v4.sin_family = AF_INET;
			a[k++].v4.sin_addr =
			    ((const struct sockaddr_in *)&addrs[i])->sin_addr;
		} else if (addrs[i].ss_family == AF_INET6) {
			a[k].v6.sin6_family = AF_INET6;
			a[k++].v6.sin6_addr =
			    ((const struct sockaddr_in6 *)&addrs[i])->sin6_addr;
		}
	}
	slot = dnscache_slot(dc, name, hash);
	if (ttl_s <= 0 || k == 0) {
		/* Not cacheable: nor is an older answer for the name. */
		if (*slot != NULL)
			dnscache_drop(dc, *slot);
		return -ENOENT;
	}
	if (ttl_s > DNSCACHE_TTL_MAX_S)
		ttl_s = DNSCACHE_TTL_MAX_S;
	if ((e = *slot) == NULL) {
		if (dc->count >= dc->max) {
			dnscache_evict(dc);
			slot = dnscache_slot(dc, name, hash);
		}
		e = calloc(1, sizeof(*e) + len + 1);
		if (e == NULL)
			return -ENOMEM;
		memcpy(e->name, name, len + 1);
		e->hash = hash;
		*slot = e;
		dc->count++;
	} else {
		TAILQ_REMOVE(&dc->lru, e, lru);
	}
	TAILQ_INSERT_HEAD(&dc->lru, e, lru);
	memcpy(e->addrs, a, k * sizeof(a[0]));
	e->n = k;
	e->expires_ms = now_ms + (int64_t)ttl_s * 1000;
	return 0;
}
