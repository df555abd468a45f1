/*
 * Counters kept in one struct (single-threaded loop, no atomics needed) and
 * rendered on demand. Reasons are interned in a small fixed table; beyond it
 * they count as "other", so a hostile stream of reasons cannot grow memory.
 */
#include "proxy/metrics.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include "common/cbuf.h"
#include "common/prom.h"

#define METRICS_MAX_KEYS 48
#define METRICS_NBUCKETS 13

static const double metrics_bounds[METRICS_NBUCKETS] = {
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};

struct metrics_hist {
	uint64_t buckets[METRICS_NBUCKETS];	/* non-cumulative */
	uint64_t count;
	double sum;
};

struct metrics_key {
	char decision[16];
	char reason[48];
	uint64_t count;
};

struct proxy_metrics {
	struct metrics_key keys[METRICS_MAX_KEYS];
	size_t nkeys;
	uint64_t other;
	int64_t connections, tunnels;
	uint64_t bytes_up, bytes_down;
	uint64_t reload_ok, reload_failed;
	struct metrics_hist dns, connect;
	struct evhttp *http;
};

int
proxy_metrics_new(struct proxy_metrics **out)
{
	*out = calloc(1, sizeof(**out));
	return *out == NULL ? -ENOMEM : 0;
}

void
proxy_metrics_free(struct proxy_metrics *m)
{
	if (m == NULL)
		return;
	if (m->http != NULL)
		evhttp_free(m->http);
	free(m);
}

void
proxy_metrics_request(struct proxy_metrics *m, const char *decision,
    const char *reason)
{
	struct metrics_key *k;

	if (m == NULL)
		return;
	if (reason == NULL)
		reason = "none";
	for (size_t i = 0; i < m->nkeys; i++) {
		k = &m->keys[i];
		if (strcmp(k->decision, decision) == 0 &&
		    strcmp(k->reason, reason) == 0) {
			k->count++;
			return;
		}
	}
	if (m->nkeys == METRICS_MAX_KEYS || strlen(decision) >= 16 ||
	    strlen(reason) >= 48) {
		m->other++;
		return;
	}
	k = &m->keys[m->nkeys++];
	strcpy(k->decision, decision);
	strcpy(k->reason, reason);
	k->count = 1;
}

void
proxy_metrics_connections_add(struct proxy_metrics *m, int delta)
{
	if (m != NULL)
		m->connections += delta;
}

void
proxy_metrics_tunnels_add(struct proxy_metrics *m, int delta)
{
	if (m != NULL)
		m->tunnels += delta;
}

void
proxy_metrics_bytes_add(struct proxy_metrics *m, uint64_t up, uint64_t down)
{
	if (m == NULL)
		return;
	m->bytes_up += up;
	m->bytes_down += down;
}

static void
metrics_hist_observe(struct metrics_hist *h, int64_t ms)
{
	double s = (double)ms / 1000.0;

	for (int i = 0; i < METRICS_NBUCKETS; i++)
		if (s <= metrics_bounds[i]) {
			h->buckets[i]++;
			break;
		}
	h->count++;
	h->sum += s;
}

void
proxy_metrics_dns_observe(struct proxy_metrics *m, int64_t ms)
{
	if (m != NULL)
		metrics_hist_observe(&m->dns, ms);
}

void
proxy_metrics_connect_observe(struct proxy_metrics *m, int64_t ms)
{
	if (m != NULL)
		metrics_hist_observe(&m->connect, ms);
}

void
proxy_metrics_reload(struct proxy_metrics *m, int ok)
{
	if (m == NULL)
		return;
	if (ok)
		m->reload_ok++;
	else
		m->reload_failed++;
}

static void
metrics_render_hist(struct prom *p, const struct metrics_hist *h,
    const char *name, const char *help)
{
	uint64_t counts[METRICS_NBUCKETS + 1], below = 0;

	/* Observations above the last bound are not kept on their own: they
	 * are the rest of the count. */
	for (int i = 0; i < METRICS_NBUCKETS; i++) {
		counts[i] = h->buckets[i];
		below += h->buckets[i];
	}
	counts[METRICS_NBUCKETS] = h->count - below;
	prom_help_type(p, name, help, "histogram");
	prom_histogram(p, name, metrics_bounds, counts, METRICS_NBUCKETS,
	    h->sum, 6, h->count);
}

int
proxy_metrics_render(const struct proxy_metrics *m, struct cbuf *out)
{
	static const char *const req = "cordon_proxy_requests_total";
	static const char *const bytes = "cordon_proxy_bytes_total";
	static const char *const reloads = "cordon_proxy_reloads_total";
	struct prom p;

	prom_init(&p, out);
	prom_help_type(&p, req, "Requests by decision and reason.", "counter");
	for (size_t i = 0; i < m->nkeys; i++)
		prom_sample_u64(&p, req, (const char *[]){ "decision",
		    m->keys[i].decision, "reason", m->keys[i].reason, NULL },
		    m->keys[i].count);
	if (m->other > 0)
		prom_sample_u64(&p, req, (const char *[]){ "decision", "other",
		    "reason", "other", NULL }, m->other);
	prom_help_type(&p, "cordon_proxy_connections",
	    "Open client connections.", "gauge");
	prom_sample_i64(&p, "cordon_proxy_connections", NULL, m->connections);
	prom_help_type(&p, "cordon_proxy_tunnels", "Active CONNECT tunnels.",
	    "gauge");
	prom_sample_i64(&p, "cordon_proxy_tunnels", NULL, m->tunnels);
	prom_help_type(&p, bytes, "Bytes relayed.", "counter");
	prom_sample_u64(&p, bytes, (const char *[]){ "direction", "up", NULL },
	    m->bytes_up);
	prom_sample_u64(&p, bytes, (const char *[]){ "direction", "down",
	    NULL }, m->bytes_down);
	prom_help_type(&p, reloads, "Allowlist reloads.", "counter");
	prom_sample_u64(&p, reloads, (const char *[]){ "result", "ok", NULL },
	    m->reload_ok);
	prom_sample_u64(&p, reloads, (const char *[]){ "result", "failed",
	    NULL }, m->reload_failed);
	metrics_render_hist(&p, &m->dns, "cordon_proxy_dns_seconds",
	    "DNS lookup latency.");
	metrics_render_hist(&p, &m->connect, "cordon_proxy_connect_seconds",
	    "Upstream connect latency.");
	return p.error;
}

static void
metrics_http_cb(struct evhttp_request *req, void *arg)
{
	struct proxy_metrics *m = arg;
	struct evbuffer *body;
	struct cbuf *text;

	if (strcmp(evhttp_request_get_uri(req), "/metrics") != 0) {
		evhttp_send_error(req, HTTP_NOTFOUND, NULL);
		return;
	}
	text = cbuf_new(1024 * 1024);
	body = evbuffer_new();
	if (text == NULL || body == NULL ||
	    proxy_metrics_render(m, text) != 0 ||
	    evbuffer_add(body, cbuf_data(text), cbuf_len(text)) != 0) {
		evhttp_send_error(req, HTTP_INTERNAL, NULL);
		goto out;
	}
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", "text/plain; version=0.0.4");
	evhttp_send_reply(req, HTTP_OK, "OK", body);
out:
	if (body != NULL)
		evbuffer_free(body);
	cbuf_free(text);
}

int
proxy_metrics_listen_socket(struct sockaddr_storage *sa, socklen_t len)
{
	socklen_t sl = len;
	int fd, rc;

	fd = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0);
	if (fd < 0)
		return -errno;
	(void)evutil_make_listen_socket_reuseable(fd);
	if (bind(fd, (struct sockaddr *)sa, len) != 0 || listen(fd, 64) != 0 ||
	    getsockname(fd, (struct sockaddr *)sa, &sl) != 0) {
		rc = -errno;
		evutil_closesocket(fd);
		return rc;
	}
	return fd;
}

int
proxy_metrics_serve_fd(struct proxy_metrics *m, struct event_base *base,
    int fd)
{
	struct evhttp_bound_socket *bs;

	m->http = evhttp_new(base);
	if (m->http == NULL)
		return -ENOMEM;
	bs = evhttp_accept_socket_with_handle(m->http, fd);
	if (bs == NULL)
		return -ENOMEM;
	evhttp_set_allowed_methods(m->http, EVHTTP_REQ_GET);
	evhttp_set_timeout(m->http, 10);
	evhttp_set_gencb(m->http, metrics_http_cb, m);
	return 0;
}

int
proxy_metrics_serve(struct proxy_metrics *m, struct event_base *base,
    struct sockaddr_storage *sa, socklen_t len)
{
	struct evhttp_bound_socket *bs;
	evutil_socket_t fd;
	socklen_t sl = len;

	m->http = evhttp_new(base);
	if (m->http == NULL)
		return -ENOMEM;
	fd = proxy_metrics_listen_socket(sa, len);
	if (fd < 0)
		return (int)fd;
	(void)sl;
	bs = evhttp_accept_socket_with_handle(m->http, fd);
	if (bs == NULL) {
		evutil_closesocket(fd);
		return -ENOMEM;
	}
	evhttp_set_allowed_methods(m->http, EVHTTP_REQ_GET);
	evhttp_set_timeout(m->http, 10);
	evhttp_set_gencb(m->http, metrics_http_cb, m);
	return 0;
}
