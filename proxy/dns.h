/*
 * Asynchronous A + AAAA resolution with c-ares driven by a libevent loop.
 * One lookup per request, no search domains and no hosts file, so the
 * addresses a caller checks are exactly what the name servers said once.
 * Answers with addresses are reused for their TTL, at most 60 s
 * (dnscache.h); negative answers and failures are never reused. A cached
 * answer is only addresses: the caller classifies them on every use.
 */
#ifndef CORDON_PROXY_DNS_H
#define CORDON_PROXY_DNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct event_base;
struct dns;
struct dns_query;

#define DNS_MAX_ADDRS 16

struct dns_result {
	int error;		/* 0, -ENOENT (no such name / no data),
				 * -ETIMEDOUT, -EIO (any other failure) */
	size_t n;		/* addresses, in the order received */
	struct sockaddr_storage addrs[DNS_MAX_ADDRS];
	int64_t elapsed_ms;
	bool cached;		/* from the answer cache */
	bool nodata;		/* -ENOENT: the name exists, without an A or
				   AAAA (else there is no such name) */
};

/* res is only valid during the call. */
typedef void (*dns_cb)(const struct dns_result *res, void *arg);

/* Creates a resolver on base. servers_csv is NULL (use /etc/resolv.conf) or
 * a c-ares server list ("127.0.0.1:5353,[::1]:53"). timeout_ms bounds each
 * lookup as a whole. Returns 0 and *out (caller frees with
 * proxy_dns_free), or a negative errno (-EINVAL for a bad server list). */
int proxy_dns_new(struct event_base *base, const char *servers_csv,
    int timeout_ms, struct dns **out);
/* Pending callbacks are not called. Accepts NULL. */
void proxy_dns_free(struct dns *d);

/* Tests: the clock of the answer cache (ms, any origin; NULL: the
 * monotonic clock). Lookup deadlines keep the monotonic clock. */
void proxy_dns_set_clock(struct dns *d, int64_t (*now_ms)(void *),
    void *arg);
/* Names held in the answer cache. */
size_t proxy_dns_cached(const struct dns *d);

/* Starts a lookup of name (absolute: no search domains). cb is called
 * exactly once, later, from the loop, unless proxy_dns_cancel is called first.
 * Returns the query (owned by the resolver) or NULL on ENOMEM. */
struct dns_query *proxy_dns_resolve(struct dns *d, const char *name, dns_cb cb,
    void *arg);
/* The callback will not be called; the query is freed by the resolver. */
void proxy_dns_cancel(struct dns_query *q);

#endif
