/*
 * Synthetic addresses (synth.h): one allocation per name, chained in two
 * hash tables (by name, by address offset in the block) that double as
 * names come, and in a least-recently-assigned list that picks the name
 * to evict. Every operation is O(1) on average.
 */
#include "proxy/synth.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#include "common/util.h"

#define SYNTH_SIZE	(1u << PROXY_SYNTH_BITS)
#define SYNTH_FIRST	1u			/* skip 198.18.0.0 */
#define SYNTH_LAST	(SYNTH_SIZE - 2)	/* and 198.19.255.255 */
#define SYNTH_BUCKETS_MIN 16

struct synth_entry {
	struct synth_entry *next_name, *next_addr;	/* bucket chains */
	TAILQ_ENTRY(synth_entry) lru;	/* first: the newest */
	uint32_t hash;
	uint32_t off;		/* offset in the block */
	char name[];
};

struct proxy_synth {
	struct synth_entry **by_name, **by_addr;
	size_t nbuckets;	/* of each table; a power of two */
	size_t max, count;
	uint32_t cursor;	/* the next offset to try */
	TAILQ_HEAD(synth_lru, synth_entry) lru;
};

int
proxy_synth_new(size_t max, struct proxy_synth **out)
{
	struct proxy_synth *s;

	*out = NULL;
	if (max == 0 || max > PROXY_SYNTH_MAX_MAX)
		return -EINVAL;
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return -ENOMEM;
	TAILQ_INIT(&s->lru);
	s->by_name = calloc(SYNTH_BUCKETS_MIN, sizeof(*s->by_name));
	s->by_addr = calloc(SYNTH_BUCKETS_MIN, sizeof(*s->by_addr));
	if (s->by_name == NULL || s->by_addr == NULL) {
		proxy_synth_free(s);
		return -ENOMEM;
	}
	s->nbuckets = SYNTH_BUCKETS_MIN;
	s->max = max;
	s->cursor = SYNTH_FIRST;
	*out = s;
	return 0;
}

void
proxy_synth_free(struct proxy_synth *s)
{
	struct synth_entry *e;

	if (s == NULL)
		return;
	while ((e = TAILQ_FIRST(&s->lru)) != NULL) {
		TAILQ_REMOVE(&s->lru, e, lru);
		free(e);
	}
	free(s->by_name);
	free(s->by_addr);
	free(s);
}

size_t
proxy_synth_count(const struct proxy_synth *s)
{
	return s->count;
}

bool
proxy_synth_in_block(const struct in_addr *addr)
{
	return (ntohl(addr->s_addr) >> PROXY_SYNTH_BITS) ==
	    (PROXY_SYNTH_NET >> PROXY_SYNTH_BITS);
}

static struct synth_entry **
synth_name_slot(const struct proxy_synth *s, const char *name, uint32_t hash)
{
	struct synth_entry **pp = &s->by_name[hash & (s->nbuckets - 1)];

	for (; *pp != NULL; pp = &(*pp)->next_name)
		if ((*pp)->hash == hash && strcasecmp((*pp)->name, name) == 0)
			break;
	return pp;
}

static struct synth_entry **
synth_addr_slot(const struct proxy_synth *s, uint32_t off)
{
	struct synth_entry **pp = &s->by_addr[off & (s->nbuckets - 1)];

	for (; *pp != NULL; pp = &(*pp)->next_addr)
		if ((*pp)->off == off)
			break;
	return pp;
}

/* Links e into both tables. */
static void
synth_link(struct proxy_synth *s, struct synth_entry *e)
{
	size_t m = s->nbuckets - 1;

	e->next_name = s->by_name[e->hash & m];
	s->by_name[e->hash & m] = e;
	e->next_addr = s->by_addr[e->off & m];
	s->by_addr[e->off & m] = e;
}

/* Doubles both tables once they hold more names than buckets (and can
 * still grow past max). A failed allocation keeps the old tables: longer
 * chains, nothing lost. */
static void
synth_grow(struct proxy_synth *s)
{
	size_t nb = s->nbuckets * 2;
	struct synth_entry **bn, **ba, *e;

	if (s->count < s->nbuckets || s->nbuckets >= s->max)
		return;
	bn = calloc(nb, sizeof(*bn));
	ba = calloc(nb, sizeof(*ba));
	if (bn == NULL || ba == NULL) {
		free(bn);
		free(ba);
		return;
	}
	free(s->by_name);
	free(s->by_addr);
	s->by_name = bn;
	s->by_addr = ba;
	s->nbuckets = nb;
	TAILQ_FOREACH(e, &s->lru, lru)
		synth_link(s, e);
}

/* Unlinks and frees the least recently assigned name. */
static void
synth_evict(struct proxy_synth *s)
{
	struct synth_entry *e = TAILQ_LAST(&s->lru, synth_lru), **pp;

	pp = synth_name_slot(s, e->name, e->hash);
	*pp = e->next_name;
	pp = synth_addr_slot(s, e->off);
	*pp = e->next_addr;
	TAILQ_REMOVE(&s->lru, e, lru);
	s->count--;
	free(e);
}

/* The next offset no name holds; advances the cursor past it. There is
 * one: count < max <= PROXY_SYNTH_MAX_MAX < the block's size. */
static uint32_t
synth_next_free(struct proxy_synth *s)
{
	for (;;) {
		uint32_t off = s->cursor;

		s->cursor = off == SYNTH_LAST ? SYNTH_FIRST : off + 1;
		if (*synth_addr_slot(s, off) == NULL)
			return off;
	}
}

int
proxy_synth_assign(struct proxy_synth *s, const char *name,
    struct in_addr *addr)
{
	size_t len = strlen(name);
	uint32_t hash = util_fnv1a_lower(name);
	struct synth_entry **slot, *e;

	addr->s_addr = 0;
	if (len == 0 || len > PROXY_SYNTH_NAME_MAX)
		return -EINVAL;
	slot = synth_name_slot(s, name, hash);
	if ((e = *slot) != NULL) {
		TAILQ_REMOVE(&s->lru, e, lru);
		TAILQ_INSERT_HEAD(&s->lru, e, lru);
	} else {
		if ((e = malloc(sizeof(*e) + len + 1)) == NULL)
			return -ENOMEM;
		if (s->count >= s->max)
			synth_evict(s);
		memcpy(e->name, name, len + 1);
		e->hash = hash;
		e->off = synth_next_free(s);
		synth_link(s, e);
		TAILQ_INSERT_HEAD(&s->lru, e, lru);
		s->count++;
		synth_grow(s);
	}
	addr->s_addr = htonl(PROXY_SYNTH_NET + e->off);
	return 0;
}

const char *
proxy_synth_name(const struct proxy_synth *s, const struct in_addr *addr)
{
	uint32_t a = ntohl(addr->s_addr), off = a - PROXY_SYNTH_NET;
	const struct synth_entry *e;

	if (!proxy_synth_in_block(addr))
		return NULL;
	e = *synth_addr_slot(s, off);
	return e != NULL ? e->name : NULL;
}
