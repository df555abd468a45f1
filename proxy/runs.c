/*
 * The run registry: two chained hash tables over the same records, one by
 * run id, one by source address, sized from the cap when the registry is
 * made, so lookups stay O(1) for the few thousand runs the proxy holds.
 * Expiry walks every record once per tick (cheap at this size).
 */
#include "proxy/runs.h"
#include "proxy/synth.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "proxy/egress.h"

struct proxy_runs {
	size_t max, count;
	size_t nbuckets;		/* power of two */
	struct proxy_run **by_id;
	struct proxy_run **by_ip;
};

static size_t
runs_id_slot(const struct proxy_runs *rs, const char *id)
{
	return util_fnv1a(id, strlen(id)) & (rs->nbuckets - 1);
}

static size_t
runs_ip_slot(const struct proxy_runs *rs, const struct in6_addr *ip)
{
	return util_fnv1a(ip, sizeof(*ip)) & (rs->nbuckets - 1);
}

/* sa's address as IPv6, IPv4 mapped; false for another family. */
static bool
runs_ip_of(const struct sockaddr *sa, struct in6_addr *out)
{
	memset(out, 0, sizeof(*out));
	if (sa->sa_family == AF_INET) {
		out->s6_addr[10] = 0xff;
		out->s6_addr[11] = 0xff;
		memcpy(&out->s6_addr[12],
		    &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return true;
	}
	if (sa->sa_family == AF_INET6) {
		*out = ((const struct sockaddr_in6 *)sa)->sin6_addr;
		return true;
	}
	return false;
}

int
proxy_runs_new(size_t max, struct proxy_runs **out)
{
	struct proxy_runs *rs;
	size_t nb = 16;

	*out = NULL;
	if (max == 0 || max > 65536)
		return -EINVAL;
	while (nb < max)
		nb *= 2;
	rs = calloc(1, sizeof(*rs));
	if (rs == NULL)
		return -ENOMEM;
	rs->max = max;
	rs->nbuckets = nb;
	rs->by_id = calloc(nb, sizeof(*rs->by_id));
	rs->by_ip = calloc(nb, sizeof(*rs->by_ip));
	if (rs->by_id == NULL || rs->by_ip == NULL) {
		proxy_runs_free(rs);
		return -ENOMEM;
	}
	*out = rs;
	return 0;
}

static void
runs_run_free(struct proxy_run *r)
{
	proxy_egress_free(r->egress);
	proxy_synth_free(r->synth);
	/* The token is a secret: do not leave it in freed memory. */
	explicit_bzero(r->token, sizeof(r->token));
	free(r);
}

void
proxy_runs_free(struct proxy_runs *rs)
{
	struct proxy_run *r, *next;

	if (rs == NULL)
		return;
	for (size_t i = 0; rs->by_id != NULL && i < rs->nbuckets; i++)
		for (r = rs->by_id[i]; r != NULL; r = next) {
			next = r->id_next;
			runs_run_free(r);
		}
	free(rs->by_id);
	free(rs->by_ip);
	free(rs);
}

size_t
proxy_runs_count(const struct proxy_runs *rs)
{
	return rs->count;
}

struct proxy_run *
proxy_runs_find(const struct proxy_runs *rs, const char *id)
{
	struct proxy_run *r;

	for (r = rs->by_id[runs_id_slot(rs, id)]; r != NULL; r = r->id_next)
		if (strcmp(r->id, id) == 0)
			return r;
	return NULL;
}

static void
runs_limits(struct proxy_run_limits *lim, const struct proxy_ctl_req *req,
    const struct proxy_run_limits *def)
{
	*lim = *def;
	if (req->max_conns != PROXY_CTL_UNSET)
		lim->max_conns = (unsigned)req->max_conns;
	if (req->bytes_up != PROXY_CTL_UNSET)
		lim->bytes_up = (uint64_t)req->bytes_up;
	if (req->bytes_down != PROXY_CTL_UNSET)
		lim->bytes_down = (uint64_t)req->bytes_down;
	if (lim->max_conns == 0)
		lim->max_conns = 1;
}

int
proxy_runs_add(struct proxy_runs *rs, const struct proxy_ctl_req *req,
    const struct proxy_run_limits *def, int64_t now_ms,
    struct proxy_run **out)
{
	struct proxy_run *r;
	size_t slot;

	*out = NULL;
	if (req->op != PROXY_CTL_REGISTER || req->run[0] == '\0')
		return -EINVAL;
	if (proxy_runs_find(rs, req->run) != NULL)
		return -EEXIST;
	if (req->deadline_ms <= now_ms)
		return -ETIMEDOUT;
	if (rs->count >= rs->max)
		return -ENOSPC;
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return -ENOMEM;
	r->egress = proxy_egress_new(PROXY_EGRESS_DEFAULT_MAX);
	if (r->egress == NULL || !runs_ip_of((const struct sockaddr *)
	    &req->addr, &r->ip)) {
		int rc = r->egress == NULL ? -ENOMEM : -EINVAL;

		runs_run_free(r);
		return rc;
	}
	memcpy(r->id, req->run, sizeof(r->id));
	memcpy(r->addr_text, req->addr_text, sizeof(r->addr_text));
	memcpy(r->policy, req->policy, sizeof(r->policy));
	memcpy(r->token, req->token, sizeof(r->token));
	r->deadline_ms = req->deadline_ms;
	runs_limits(&r->lim, req, def);
	slot = runs_id_slot(rs, r->id);
	r->id_next = rs->by_id[slot];
	rs->by_id[slot] = r;
	slot = runs_ip_slot(rs, &r->ip);
	r->ip_next = rs->by_ip[slot];
	rs->by_ip[slot] = r;
	rs->count++;
	*out = r;
	return 0;
}

bool
proxy_run_expired(const struct proxy_run *r, int64_t now_ms)
{
	return r->expired || now_ms >= r->deadline_ms;
}

bool
proxy_run_addr_match(const struct proxy_run *r, const struct sockaddr *sa)
{
	struct in6_addr ip;

	return runs_ip_of(sa, &ip) && memcmp(&ip, &r->ip, sizeof(ip)) == 0;
}

bool
proxy_run_over_bytes(const struct proxy_run *r)
{
	return (r->lim.bytes_up > 0 && r->bytes_up > r->lim.bytes_up) ||
	    (r->lim.bytes_down > 0 && r->bytes_down > r->lim.bytes_down);
}

bool
proxy_runs_live_at(const struct proxy_runs *rs, const struct sockaddr *sa,
    int64_t now_ms)
{
	struct in6_addr ip;
	struct proxy_run *r;

	if (!runs_ip_of(sa, &ip))
		return false;
	for (r = rs->by_ip[runs_ip_slot(rs, &ip)]; r != NULL; r = r->ip_next)
		if (memcmp(&ip, &r->ip, sizeof(ip)) == 0 &&
		    !proxy_run_expired(r, now_ms))
			return true;
	return false;
}

struct proxy_run *
proxy_runs_at(const struct proxy_runs *rs, const struct sockaddr *sa,
    int64_t now_ms)
{
	struct proxy_run *r, *found = NULL;
	struct in6_addr ip;

	if (!runs_ip_of(sa, &ip))
		return NULL;
	for (r = rs->by_ip[runs_ip_slot(rs, &ip)]; r != NULL; r = r->ip_next) {
		if (memcmp(&ip, &r->ip, sizeof(ip)) != 0 ||
		    proxy_run_expired(r, now_ms))
			continue;
		if (found != NULL)
			return NULL;
		found = r;
	}
	return found;
}

/* Unlinks r from the chain starting at *head through the link at offset
 * next_off of each record. */
static void
runs_unlink(struct proxy_run **head, struct proxy_run *r, size_t next_off)
{
	struct proxy_run **pp = head;

	while (*pp != NULL && *pp != r)
		pp = (struct proxy_run **)((char *)*pp + next_off);
	if (*pp == r)
		*pp = *(struct proxy_run **)((char *)r + next_off);
}

void
proxy_runs_remove(struct proxy_runs *rs, struct proxy_run *r)
{
	runs_unlink(&rs->by_id[runs_id_slot(rs, r->id)], r,
	    offsetof(struct proxy_run, id_next));
	runs_unlink(&rs->by_ip[runs_ip_slot(rs, &r->ip)], r,
	    offsetof(struct proxy_run, ip_next));
	rs->count--;
	runs_run_free(r);
}

size_t
proxy_runs_tick(struct proxy_runs *rs, int64_t now_ms,
    void (*expired)(struct proxy_run *, void *),
    void (*forget)(struct proxy_run *, void *), void *arg)
{
	struct proxy_run *r, *next;
	size_t removed = 0;

	for (size_t i = 0; i < rs->nbuckets; i++) {
		for (r = rs->by_id[i]; r != NULL; r = next) {
			next = r->id_next;
			if (!r->expired && now_ms >= r->deadline_ms) {
				r->expired = true;
				r->forget_ms = now_ms + PROXY_RUNS_LINGER_MS;
				if (expired != NULL)
					expired(r, arg);
			} else if (r->expired && now_ms >= r->forget_ms) {
				if (forget != NULL)
					forget(r, arg);
				proxy_runs_remove(rs, r);
				removed++;
			}
		}
	}
	return removed;
}

void
proxy_runs_each(struct proxy_runs *rs, void (*fn)(struct proxy_run *, void *),
    void *arg)
{
	struct proxy_run *r, *next;

	for (size_t i = 0; i < rs->nbuckets; i++)
		for (r = rs->by_id[i]; r != NULL; r = next) {
			next = r->id_next;
			fn(r, arg);
		}
}
