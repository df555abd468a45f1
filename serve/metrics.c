/*
 * Prometheus text for `GET /metrics` (metrics.h): runs by status, a
 * latency histogram, queue depth, active runs and the warm pool's figures.
 */
#include "serve/metrics.h"

#include "common/cbuf.h"
#include "common/prom.h"

/* The text is a few KiB: a bound far above it, never reached. */
#define SERVE_METRICS_TEXT_MAX	(64 * 1024)

const double serve_metrics_bounds[SERVE_METRICS_BUCKETS] = {
	0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300,
};

void
serve_metrics_observe(struct serve_metrics *m, int status, int64_t latency_ms)
{
	double s = (double)latency_ms / 1000.0;
	size_t b = 0;

	if (status < 0 || status >= SERVE_NSTATUS)
		status = SERVE_STATUS_ERROR;
	m->runs[status]++;
	while (b < SERVE_METRICS_BUCKETS && s > serve_metrics_bounds[b])
		b++;
	m->hist[b]++;
	m->count++;
	m->sum_s += s;
}

static const char *
status_label(int i)
{
	return i == SERVE_STATUS_ERROR ? "error" :
	    runner_status_name((enum runner_status)i);
}

void
serve_metrics_add(struct serve_metrics *dst, const struct serve_metrics *src)
{
	for (int i = 0; i < SERVE_NSTATUS; i++) {
		dst->runs[i] += src->runs[i];
		dst->session_calls[i] += src->session_calls[i];
	}
	for (int i = 0; i <= SERVE_METRICS_BUCKETS; i++)
		dst->hist[i] += src->hist[i];
	dst->rejected += src->rejected;
	dst->unavailable += src->unavailable;
	dst->bad_requests += src->bad_requests;
	dst->forbidden += src->forbidden;
	dst->count += src->count;
	dst->sum_s += src->sum_s;
	dst->pool_hits += src->pool_hits;
	dst->pool_misses += src->pool_misses;
}

/* The service's connections (issue 39). */
static void
render_conns(struct prom *p, const struct serve_metrics *m)
{
	static const char *const conns = "cordon_connections";
	static const char *const refused = "cordon_connections_refused_total";

	prom_help_type(p, conns, "Client connections open now, by listener.",
	    "gauge");
	prom_sample_i64(p, conns, (const char *[]){ "listener", "unix", NULL },
	    m->conns_unix);
	prom_sample_i64(p, conns, (const char *[]){ "listener", "tcp", NULL },
	    m->conns_tcp);
	prom_help_type(p, refused, "Connections closed at once or not "
	    "accepted, by reason.", "counter");
	prom_sample_u64(p, refused, (const char *[]){ "reason", "per_peer",
	    NULL }, m->conns_refused_peer);
	prom_sample_u64(p, refused, (const char *[]){ "reason",
	    "listener_full", NULL }, m->listener_full);
	prom_help_type(p, "cordon_connections_evicted_total", "Connections "
	    "still reading a head closed to make room at a listener's cap.",
	    "counter");
	prom_sample_u64(p, "cordon_connections_evicted_total", NULL,
	    m->evicted);
	prom_help_type(p, "cordon_accept_errors_total", "Failed accepts "
	    "(EMFILE...): accepting paused each time.", "counter");
	prom_sample_u64(p, "cordon_accept_errors_total", NULL,
	    m->accept_errors);
	prom_help_type(p, "cordon_reply_unsent_bytes", "Reply bytes their "
	    "clients have not read yet.", "gauge");
	prom_sample_i64(p, "cordon_reply_unsent_bytes", NULL, m->unsent_bytes);
}

/* Each kept pool, labelled by its language (and net mode). */
static void
render_pools(struct prom *p, const struct serve_metrics *m)
{
	static const char *const idle = "cordon_pool_idle";
	static const char *const dormant = "cordon_pool_dormant";
	static const char *const starting = "cordon_pool_starting";
	static const char *const hits = "cordon_pool_lang_hits_total";
	static const char *const misses = "cordon_pool_lang_misses_total";
	static const char *const shrinks = "cordon_pool_shrinks_total";
	const struct serve_pool_figures *f;
	bool any = false;

	for (int i = 0; i < RUNNER_POOLS_MAX; i++)
		any = any || m->pools[i].kept;
	if (!any)
		return;
	prom_help_type(p, idle, "Idle warm containers, by pool language, "
	    "profile and net mode.", "gauge");
	for (f = m->pools; f < m->pools + RUNNER_POOLS_MAX; f++)
		for (int k = 0; f->kept && k < 2; k++)
			prom_sample_i64(p, idle, (const char *[]){ "lang",
			    f->lang, "profile", f->profile, "net",
			    runner_net_name((enum runner_net)k), NULL }, f->idle[k]);
	prom_help_type(p, dormant, "1: the pool's mode is shrunk to 0 for "
	    "want of runs (pool_idle_s) until a run asks for it.", "gauge");
	for (f = m->pools; f < m->pools + RUNNER_POOLS_MAX; f++)
		for (int k = 0; f->kept && k < 2; k++)
			prom_sample_i64(p, dormant, (const char *[]){ "lang",
			    f->lang, "profile", f->profile, "net",
			    runner_net_name((enum runner_net)k), NULL }, f->dormant[k] ? 1 : 0);
	prom_help_type(p, starting, "Warm containers being started, by pool "
	    "language and profile.", "gauge");
	for (f = m->pools; f < m->pools + RUNNER_POOLS_MAX; f++)
		if (f->kept)
			prom_sample_i64(p, starting, (const char *[]){ "lang",
			    f->lang, "profile", f->profile, NULL }, f->starting);
	prom_help_type(p, hits, "Runs given a warm container, by pool "
	    "language and profile.", "counter");
	for (f = m->pools; f < m->pools + RUNNER_POOLS_MAX; f++)
		if (f->kept)
			prom_sample_u64(p, hits, (const char *[]){ "lang",
			    f->lang, "profile", f->profile, NULL }, f->hits);
	prom_help_type(p, misses, "Runs that asked a pool and started cold, "
	    "by pool language and profile.", "counter");
	for (f = m->pools; f < m->pools + RUNNER_POOLS_MAX; f++)
		if (f->kept)
			prom_sample_u64(p, misses, (const char *[]){ "lang",
			    f->lang, "profile", f->profile, NULL }, f->misses);
	prom_help_type(p, shrinks, "Times a pool's mode was shrunk to 0 for "
	    "want of runs, by pool language and profile.", "counter");
	for (f = m->pools; f < m->pools + RUNNER_POOLS_MAX; f++)
		if (f->kept)
			prom_sample_u64(p, shrinks, (const char *[]){ "lang",
			    f->lang, "profile", f->profile, NULL }, f->shrinks);
}

/* The histogram and the gauges and counters after it. */
static void
render_latency_and_pool(struct prom *p, const struct serve_metrics *m)
{
	static const char *const lat = "cordon_run_latency_seconds";

	prom_help_type(p, lat, "Time from admission to the reply of a run.",
	    "histogram");
	prom_histogram(p, lat, serve_metrics_bounds, m->hist,
	    SERVE_METRICS_BUCKETS, m->sum_s, 3, m->count);
	prom_help_type(p, "cordon_queue_depth", "Runs waiting for a slot.",
	    "gauge");
	prom_sample_i64(p, "cordon_queue_depth", NULL, m->queue_depth);
	prom_help_type(p, "cordon_active_runs", "Runs, session starts and "
	    "session calls executing now.", "gauge");
	prom_sample_i64(p, "cordon_active_runs", NULL, m->active);
	if (m->own) {
		prom_help_type(p, "cordon_reply_unsent_bytes", "Reply bytes "
		    "their clients have not read yet.", "gauge");
		prom_sample_i64(p, "cordon_reply_unsent_bytes", NULL,
		    m->unsent_bytes);
		return;
	}
	prom_help_type(p, "cordon_pool_size",
	    "Idle warm containers of every pool (0: none kept).", "gauge");
	prom_sample_i64(p, "cordon_pool_size", NULL, m->pool_size);
	prom_help_type(p, "cordon_pool_hits_total",
	    "Runs served by a warm container.", "counter");
	prom_sample_u64(p, "cordon_pool_hits_total", NULL, m->pool_hits);
	prom_help_type(p, "cordon_pool_misses_total", "Runs started cold.",
	    "counter");
	prom_sample_u64(p, "cordon_pool_misses_total", NULL, m->pool_misses);
	render_pools(p, m);
}

/* Sessions: the live gauge, starts and ends, and calls by status. */
static void
render_sessions(struct prom *p, const struct serve_metrics *m)
{
	static const char *const calls = "cordon_session_calls_total";

	prom_help_type(p, "cordon_sessions_live", "Sessions that exist now "
	    "(starting, idle or in a call).", "gauge");
	prom_sample_i64(p, "cordon_sessions_live", NULL, m->sessions_live);
	prom_help_type(p, "cordon_sessions_started_total",
	    "Sessions whose container started.", "counter");
	prom_sample_u64(p, "cordon_sessions_started_total", NULL,
	    m->sessions_started);
	prom_help_type(p, "cordon_sessions_ended_total",
	    "Sessions ended, for any reason.", "counter");
	prom_sample_u64(p, "cordon_sessions_ended_total", NULL,
	    m->sessions_ended);
	prom_help_type(p, calls, "Calls in sessions, by status (error: no "
	    "result was produced).", "counter");
	for (int i = 0; i < SERVE_NSTATUS; i++)
		prom_sample_u64(p, calls, (const char *[]){ "status",
		    status_label(i), NULL }, m->session_calls[i]);
}

char *
serve_metrics_render(const struct serve_metrics *m)
{
	static const char *const runs = "cordon_runs_total";
	static const char *const refused = "cordon_requests_refused_total";
	struct cbuf *b = cbuf_new(SERVE_METRICS_TEXT_MAX);
	struct prom p;
	char *text;

	if (b == NULL)
		return NULL;
	prom_init(&p, b);
	prom_help_type(&p, runs, "Runs finished, by status (error: no result "
	    "was produced).", "counter");
	for (int i = 0; i < SERVE_NSTATUS; i++)
		prom_sample_u64(&p, runs, (const char *[]){ "status",
		    status_label(i), NULL }, m->runs[i]);
	prom_help_type(&p, refused, "Requests refused before running, by "
	    "reason.", "counter");
	prom_sample_u64(&p, refused, (const char *[]){ "reason", "over_limit",
	    NULL }, m->rejected);
	prom_sample_u64(&p, refused, (const char *[]){ "reason", "unavailable",
	    NULL }, m->unavailable);
	prom_sample_u64(&p, refused, (const char *[]){ "reason", "bad_request",
	    NULL }, m->bad_requests);
	prom_sample_u64(&p, refused, (const char *[]){ "reason", "forbidden",
	    NULL }, m->forbidden);
	render_latency_and_pool(&p, m);
	render_sessions(&p, m);
	if (!m->own)
		render_conns(&p, m);
	text = p.error == 0 ? cbuf_steal(b, NULL) : NULL;
	cbuf_free(b);
	return text;
}
