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
struct proxy_metrics;

/* Returns 0 and *out (caller frees), or -ENOMEM. */
int proxy_metrics_new(struct proxy_metrics **out);
/* Accepts NULL; stops serving. */
void proxy_metrics_free(struct proxy_metrics *m);

/* decision and reason must be static or outlive m (string literals, or
 * reasons borrowed from an allowlist set are copied when first seen). */
void proxy_metrics_request(struct proxy_metrics *m, const char *decision,
    const char *reason);
void proxy_metrics_connections_add(struct proxy_metrics *m, int delta);
void proxy_metrics_tunnels_add(struct proxy_metrics *m, int delta);
void proxy_metrics_bytes_add(struct proxy_metrics *m, uint64_t up,
    uint64_t down);
void proxy_metrics_dns_observe(struct proxy_metrics *m, int64_t ms);
void proxy_metrics_connect_observe(struct proxy_metrics *m, int64_t ms);
void proxy_metrics_reload(struct proxy_metrics *m, int ok);

/* Appends the text exposition to out. 0, -ENOSPC or -ENOMEM. */
int proxy_metrics_render(const struct proxy_metrics *m, struct cbuf *out);

/* Serves GET /metrics on sa with evhttp on base. Writes the bound address
 * back into sa (port 0 picks one). 0 or a negative errno. */
int proxy_metrics_serve(struct proxy_metrics *m, struct event_base *base,
    struct sockaddr_storage *sa, socklen_t len);
/* The metrics listener's socket, bound to sa (sa gets the bound port):
 * the descriptor, or a negative errno. */
int proxy_metrics_listen_socket(struct sockaddr_storage *sa, socklen_t len);
/* Serves /metrics on fd, a listening socket (the parent bound it). 0 or
 * -ENOMEM. */
int proxy_metrics_serve_fd(struct proxy_metrics *m, struct event_base *base,
    int fd);

#endif
