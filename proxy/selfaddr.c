/*
 * The proxy's own addresses (see selfaddr.h): the listeners' and the local
 * interfaces', as sorted arrays of 16-byte keys searched with bsearch.
 * The local set is rebuilt whole from getifaddrs and swapped in, so a
 * failed refresh leaves the previous one in place.
 */
#include "proxy/selfaddr.h"

#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* An address as IPv6 bytes; IPv4 as ::ffff:a.b.c.d, so that both spellings
 * of an IPv4 address are one key. */
struct self_key {
	uint8_t b[16];
};

struct proxy_selfaddr {
	struct self_key *listen;	/* sorted */
	size_t nlisten;
	struct self_key *local;		/* sorted, distinct */
	size_t nlocal;
	bool any4;			/* a listener on 0.0.0.0 or :: */
	bool any6;			/* a listener on :: */
};

static const uint8_t v4_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0xff, 0xff };

static bool
key_of(const struct sockaddr *sa, struct self_key *k)
{
	if (sa == NULL)
		return false;
	if (sa->sa_family == AF_INET) {
		memcpy(k->b, v4_prefix, sizeof(v4_prefix));
		memcpy(k->b + 12, &((const struct sockaddr_in *)sa)->sin_addr,
		    4);
		return true;
	}
	if (sa->sa_family == AF_INET6) {
		memcpy(k->b, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
		return true;
	}
	return false;
}

static bool
key_is_v4(const struct self_key *k)
{
	return memcmp(k->b, v4_prefix, sizeof(v4_prefix)) == 0;
}

static bool
key_is_zero(const struct self_key *k, size_t from)
{
	for (size_t i = from; i < 16; i++)
		if (k->b[i] != 0)
			return false;
	return true;
}

/* 127.0.0.0/8 or ::1: local whatever the interfaces say. */
static bool
key_is_loopback(const struct self_key *k)
{
	if (key_is_v4(k))
		return k->b[12] == 127;
	return memcmp(k->b, &in6addr_loopback, 16) == 0;
}

static int
key_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct self_key));
}

static bool
key_find(const struct self_key *arr, size_t n, const struct self_key *k)
{
	return n > 0 && bsearch(k, arr, n, sizeof(*arr), key_cmp) != NULL;
}

int
proxy_selfaddr_new(struct proxy_selfaddr **out)
{
	*out = calloc(1, sizeof(**out));
	return *out != NULL ? 0 : -ENOMEM;
}

void
proxy_selfaddr_free(struct proxy_selfaddr *s)
{
	if (s == NULL)
		return;
	free(s->listen);
	free(s->local);
	free(s);
}

int
proxy_selfaddr_add_listener(struct proxy_selfaddr *s,
    const struct sockaddr *sa)
{
	struct self_key k, *n;
	size_t i;

	if (!key_of(sa, &k))
		return -EAFNOSUPPORT;
	if (key_find(s->listen, s->nlisten, &k))
		return 0;
	n = realloc(s->listen, (s->nlisten + 1) * sizeof(*n));
	if (n == NULL)
		return -ENOMEM;
	s->listen = n;
	for (i = s->nlisten; i > 0 && key_cmp(&n[i - 1], &k) > 0; i--)
		n[i] = n[i - 1];
	n[i] = k;
	s->nlisten++;
	if (key_is_v4(&k) && key_is_zero(&k, 12))
		s->any4 = true;
	else if (key_is_zero(&k, 0))
		s->any4 = s->any6 = true;	/* :: takes IPv4 too */
	return 0;
}

int
proxy_selfaddr_set_local(struct proxy_selfaddr *s,
    const struct sockaddr *const *sa, size_t n)
{
	struct self_key *keys;
	size_t m = 0, kept = 0;

	keys = calloc(n > 0 ? n : 1, sizeof(*keys));
	if (keys == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (key_of(sa[i], &keys[m]))
			m++;
	qsort(keys, m, sizeof(*keys), key_cmp);
	for (size_t i = 0; i < m; i++)
		if (kept == 0 || key_cmp(&keys[kept - 1], &keys[i]) != 0)
			keys[kept++] = keys[i];
	free(s->local);
	s->local = keys;
	s->nlocal = kept;
	return 0;
}

int
proxy_selfaddr_refresh(struct proxy_selfaddr *s)
{
	struct ifaddrs *ifa, *i;
	const struct sockaddr **list;
	size_t n = 0;
	int rc;

	if (getifaddrs(&ifa) != 0)
		return -errno;
	for (i = ifa; i != NULL; i = i->ifa_next)
		n++;
	list = calloc(n > 0 ? n : 1, sizeof(*list));
	if (list == NULL) {
		freeifaddrs(ifa);
		return -ENOMEM;
	}
	n = 0;
	for (i = ifa; i != NULL; i = i->ifa_next)
		list[n++] = i->ifa_addr;	/* NULL and AF_PACKET skipped */
	rc = proxy_selfaddr_set_local(s, list, n);
	free(list);
	freeifaddrs(ifa);
	return rc;
}

enum proxy_self
proxy_selfaddr_match(const struct proxy_selfaddr *s, const struct sockaddr *sa)
{
	struct self_key k;
	bool local, any;

	if (!key_of(sa, &k))
		return PROXY_SELF_NONE;
	if (key_find(s->listen, s->nlisten, &k))
		return PROXY_SELF_LISTENER;
	local = key_find(s->local, s->nlocal, &k);
	any = key_is_v4(&k) ? s->any4 : s->any6;
	if (any && (local || key_is_loopback(&k)))
		return PROXY_SELF_LISTENER;
	return local ? PROXY_SELF_LOCAL : PROXY_SELF_NONE;
}

size_t
proxy_selfaddr_local_count(const struct proxy_selfaddr *s)
{
	return s->nlocal;
}
