/*
 * Prometheus metrics for cordon-proxy: request counters by decision and
 * reason, active connections and tunnels, bytes relayed, DNS and connect
 * latency histograms; rendered as text exposition format and served over
 * HTTP at /metrics on --metrics ADDR:PORT.
 */
#ifndef CORDON_PROXY_METRICS_H
#define CORDON_PROXY_METRICS_H

#include <stdint.h>
#include <sys/socket.h>

struct cbuf;
struct event_base;
struct metrics;

/* Returns 0 and *out (caller frees), or -ENOMEM. */
int metrics_new(struct metrics **out);
void metrics_free(struct metrics *m);	/* accepts NULL; stops serving */

/* decision and reason must be static or outlive m (string literals, or
 * reasons borrowed from an allowlist set are copied when first seen). */
void metrics_request(struct metrics *m, const char *decision,
    const char *reason);
void metrics_connections_add(struct metrics *m, int delta);
void metrics_tunnels_add(struct metrics *m, int delta);
void metrics_bytes_add(struct metrics *m, uint64_t up, uint64_t down);
void metrics_dns_observe(struct metrics *m, int64_t ms);
void metrics_connect_observe(struct metrics *m, int64_t ms);
void metrics_reload(struct metrics *m, int ok);

/* Appends the text exposition to out. 0, -ENOSPC or -ENOMEM. */
int metrics_render(const struct metrics *m, struct cbuf *out);

/* Serves GET /metrics on sa with evhttp on base. Writes the bound address
 * back into sa (port 0 picks one). 0 or a negative errno. */
int metrics_serve(struct metrics *m, struct event_base *base,
    struct sockaddr_storage *sa, socklen_t len);

#endif
