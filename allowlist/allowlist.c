/*
 * One allowlist policy: its string pool, entries and the hash table of
 * names (exact names and wildcard bases share keys), and the suffix keys
 * of a name for the matcher (match.c): the request name and each of its
 * label suffixes are hashed once, so a lookup costs the same with ten
 * entries or a million.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "allowlist/internal.h"

struct allowlist *
al_policy_new(const char *name, const char *file)
{
	struct allowlist *al;

	if ((al = calloc(1, sizeof(*al))) == NULL)
		return NULL;
	al->name = strdup(name);
	al->file = strdup(file);
	al->all.nslots = al->wild.nslots = 16;
	al->all.slots = calloc(al->all.nslots, sizeof(struct al_slot));
	al->wild.slots = calloc(al->wild.nslots, sizeof(struct al_slot));
	if (al->name == NULL || al->file == NULL || al->all.slots == NULL ||
	    al->wild.slots == NULL) {
		al_policy_free(al);
		return NULL;
	}
	return al;
}

void
al_policy_free(struct allowlist *al)
{
	if (al == NULL)
		return;
	free(al->name);
	free(al->file);
	free(al->src);
	free(al->strs);
	free(al->entries);
	free(al->ports);
	free(al->keys);
	free(al->all.slots);
	free(al->wild.slots);
	free(al->insps);
	free(al->list);
	free(al->inspect);
	free(al->ptrs);
	for (size_t i = 0; al->values != NULL && i < al->ninsps; i++) {
		if (al->values[i] != NULL) {
			explicit_bzero(al->values[i], strlen(al->values[i]));
			free(al->values[i]);
		}
	}
	free(al->values);
	free(al);
}

size_t
allowlist_entry_count(const struct allowlist *al)
{
	return al != NULL ? al->nentries : 0;
}

size_t
allowlist_inspect_count(const struct allowlist *al)
{
	size_t n = 0;

	for (size_t i = 0; al != NULL && i < al->ninsps; i++)
		n += !al->insps[i].raw;	/* one record per entry */
	return n;
}

size_t
allowlist_raw_count(const struct allowlist *al)
{
	size_t n = 0;

	for (size_t i = 0; al != NULL && i < al->ninsps; i++)
		n += al->insps[i].raw;
	return n;
}

/* FNV-1a over the bytes from last to first, then a final mix for the low
 * bits. Hashing backwards lets the matcher get every suffix's hash from one
 * pass (see match_name). */
static inline uint64_t
hash_step(uint64_t h, unsigned char c)
{
	return (h ^ c) * 0x100000001b3ULL;
}

static inline uint64_t
hash_final(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

#define HASH_INIT	0xcbf29ce484222325ULL

uint64_t
al_hash(const char *s, size_t len)
{
	uint64_t h = HASH_INIT;

	while (len > 0)
		h = hash_step(h, (unsigned char)s[--len]);
	return hash_final(h);
}

int32_t
al_key_find(const struct allowlist *al, bool wild, const char *name,
    size_t len, uint64_t hash)
{
	const struct al_table *t = wild ? &al->wild : &al->all;
	size_t mask = t->nslots - 1;
	uint32_t high = (uint32_t)(hash >> 32);

	for (size_t i = hash & mask;; i = (i + 1) & mask) {
		const struct al_slot *s = &t->slots[i];
		const struct al_key *k;
		if (s->key == 0)
			return -1;
		if (s->hash != high)
			continue;
		k = &al->keys[s->key - 1];
		if (k->hash == hash && k->len == len &&
		    memcmp(al->strs + k->name, name, len) == 0)
			return (int32_t)(s->key - 1);
	}
}

static void
table_put(struct al_table *t, uint64_t hash, size_t k)
{
	size_t mask = t->nslots - 1, i = hash & mask;

	while (t->slots[i].key != 0)
		i = (i + 1) & mask;
	t->slots[i].key = (uint32_t)(k + 1);
	t->slots[i].hash = (uint32_t)(hash >> 32);
	t->used++;
}

/*
 * Asks for transparent huge pages on the 2 MiB-aligned part of a large,
 * not yet touched allocation. Big policies are random-access tables, and
 * TLB misses (costly under virtualisation) were the largest part of load
 * and lookup time. Advice only: failure changes nothing.
 */
static void
huge_advise(void *p, size_t len)
{
	const uintptr_t huge = 2u * 1024 * 1024;
	uintptr_t start = ((uintptr_t)p + huge - 1) & ~(huge - 1);
	uintptr_t end = ((uintptr_t)p + len) & ~(huge - 1);

	if (p != NULL && end > start)
		(void)madvise((void *)start, end - start, MADV_HUGEPAGE);
}

/* Rehashes t into n slots (n >= 2 * used, a power of two). */
static int
table_resize(const struct allowlist *al, struct al_table *t, size_t n)
{
	struct al_table nt = { .nslots = n };

	if ((nt.slots = calloc(n, sizeof(*nt.slots))) == NULL)
		return -ENOMEM;
	huge_advise(nt.slots, n * sizeof(*nt.slots));
	for (size_t i = 0; i < t->nslots; i++)
		if (t->slots[i].key != 0)
			table_put(&nt, al->keys[t->slots[i].key - 1].hash,
			    t->slots[i].key - 1);
	free(t->slots);
	*t = nt;
	return 0;
}

/* Makes room for one more key in t. */
static int
table_reserve(const struct allowlist *al, struct al_table *t)
{
	if ((t->used + 1) * 2 <= t->nslots)
		return 0;
	return table_resize(al, t, t->nslots * 2);
}

/* Returns p (an array of *cap elem-byte items, used of them in use)
 * grown to hold need more, or NULL (p untouched) when out of memory. */
static void *
array_grow(void *p, size_t *cap, size_t used, size_t need, size_t elem)
{
	size_t n = *cap != 0 ? *cap : 16;
	void *q;

	if (p != NULL && used + need <= *cap)
		return p;
	while (n < used + need)
		n *= 2;
	if ((q = realloc(p, n * elem)) == NULL)
		return NULL;
	*cap = n;
	return q;
}

void
al_policy_reserve(struct allowlist *al, size_t n, size_t bytes)
{
	size_t slots = al->all.nslots;
	void *p;

	/* Failures are ignored: the tables still grow on demand. */
	while (slots < (al->all.used + n) * 2)
		slots *= 2;
	if (slots != al->all.nslots)
		(void)table_resize(al, &al->all, slots);
	if (n == 0 || bytes == 0)
		return;
	if ((p = array_grow(al->keys, &al->keys_cap, al->nkeys, n,
	    sizeof(*al->keys))) != NULL) {
		al->keys = p;
		huge_advise(al->keys + al->nkeys,
		    (al->keys_cap - al->nkeys) * sizeof(*al->keys));
	}
	if ((p = array_grow(al->entries, &al->entries_cap, al->nentries, n,
	    sizeof(*al->entries))) != NULL) {
		al->entries = p;
		huge_advise(al->entries + al->nentries,
		    (al->entries_cap - al->nentries) * sizeof(*al->entries));
	}
	if ((p = array_grow(al->strs, &al->strs_cap, al->strs_len, bytes,
	    1)) != NULL) {
		al->strs = p;
		huge_advise(al->strs + al->strs_len,
		    al->strs_cap - al->strs_len);
	}
}

int64_t
al_str_add(struct allowlist *al, const char *s, size_t len)
{
	size_t off = al->strs_len;
	char *p;

	if (al->strs_len + len + 1 > UINT32_MAX)
		return -ENOMEM;
	if ((p = array_grow(al->strs, &al->strs_cap, al->strs_len, len + 1,
	    1)) == NULL)
		return -ENOMEM;
	al->strs = p;
	memcpy(al->strs + off, s, len);
	al->strs[off + len] = '\0';
	al->strs_len += len + 1;
	return (int64_t)off;
}

int32_t
al_key_add(struct allowlist *al, const char *name, size_t len)
{
	uint64_t hash = al_hash(name, len);
	int32_t k = al_key_find(al, false, name, len, hash);
	struct al_key *key;
	int64_t off;

	if (k >= 0)
		return k;
	assert(len <= AL_NAME_MAX);	/* checked by the parser */
	if (al->nkeys >= INT32_MAX - 1)
		return -ENOMEM;
	if (table_reserve(al, &al->all) < 0)
		return -ENOMEM;
	if ((key = array_grow(al->keys, &al->keys_cap, al->nkeys, 1,
	    sizeof(*al->keys))) == NULL)
		return -ENOMEM;
	al->keys = key;
	if ((off = al_str_add(al, name, len)) < 0)
		return -ENOMEM;
	key = &al->keys[al->nkeys];
	key->hash = hash;
	key->name = (uint32_t)off;
	key->len = (uint16_t)len;
	for (int j = 0; j < AL_KINDS; j++)
		key->head[j] = -1;
	key->in_wild = false;
	key->psl_check = false;
	table_put(&al->all, hash, al->nkeys);
	return (int32_t)al->nkeys++;
}

int
al_key_add_wild(struct allowlist *al, int32_t k)
{
	if (al->keys[k].in_wild)
		return 0;
	if (table_reserve(al, &al->wild) < 0)
		return -ENOMEM;
	table_put(&al->wild, al->keys[k].hash, (size_t)k);
	al->keys[k].in_wild = true;
	return 0;
}

bool
al_entry_has_port(const struct allowlist *al, const struct al_entry *e,
    unsigned port)
{
	const uint16_t *p;

	if (e->all_ports)
		return true;
	if (e->nports <= AL_PORTS_INLINE)
		return (e->ports & 0xffff) == port ||
		    (e->nports > 1 && e->ports >> 16 == port);
	p = al->ports + e->ports;	/* not NULL: e has ports there */
	for (size_t i = 0; i < e->nports; i++)
		if (p[i] == port)
			return true;
	return false;
}

bool
al_entry_ports_cover(const struct allowlist *al, const struct al_entry *outer,
    const struct al_entry *inner)
{
	if (outer->all_ports)
		return true;
	if (inner->all_ports)
		return false;
	for (size_t i = 0; i < inner->nports; i++)
		if (!al_entry_has_port(al, outer, al_entry_port(al, inner, i)))
			return false;
	return true;
}

size_t
al_suffix_keys(const struct allowlist *al, const char *s, size_t len,
    int32_t *exact, int32_t out[AL_LABELS_MAX])
{
	int32_t tmp[AL_LABELS_MAX];
	uint64_t hh = HASH_INIT;
	size_t ntmp = 0, n = 0;

	/* One backward pass: at each label start, the running hash is the
	 * hash of the suffix from there. The pass finds suffixes shortest
	 * first; they are returned longest first. */
	for (size_t i = len; i > 0; i--) {
		int32_t k;
		hh = hash_step(hh, (unsigned char)s[i - 1]);
		if (i == 1) {
			if (exact != NULL)
				*exact = al_key_find(al, false, s, len,
				    hash_final(hh));
		} else if (s[i - 2] == '.' && al->wild.used > 0 &&
		    ntmp < AL_LABELS_MAX && (k = al_key_find(al, true,
		    s + i - 1, len - i + 1, hash_final(hh))) >= 0) {
			tmp[ntmp++] = k;
		}
	}
	while (ntmp > 0)
		out[n++] = tmp[--ntmp];
	return n;
}
