/*
 * Prometheus text for `GET /metrics` (metrics.h): runs by status, a
 * latency histogram, queue depth, active runs and the warm pool's figures.
 */
#include "serve/metrics.h"

#include <stdio.h>
#include <stdlib.h>

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

char *
serve_metrics_render(const struct serve_metrics *m)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	uint64_t cum = 0;

	if (f == NULL)
		return NULL;
	fprintf(f, "# HELP cordon_runs_total Runs finished, by status "
	    "(error: no result was produced).\n"
	    "# TYPE cordon_runs_total counter\n");
	for (int i = 0; i < SERVE_NSTATUS; i++)
		fprintf(f, "cordon_runs_total{status=\"%s\"} %llu\n",
		    status_label(i), (unsigned long long)m->runs[i]);
	fprintf(f, "# HELP cordon_requests_refused_total Requests refused "
	    "before running, by reason.\n"
	    "# TYPE cordon_requests_refused_total counter\n"
	    "cordon_requests_refused_total{reason=\"over_limit\"} %llu\n"
	    "cordon_requests_refused_total{reason=\"unavailable\"} %llu\n"
	    "cordon_requests_refused_total{reason=\"bad_request\"} %llu\n",
	    (unsigned long long)m->rejected,
	    (unsigned long long)m->unavailable,
	    (unsigned long long)m->bad_requests);
	fprintf(f, "# HELP cordon_run_latency_seconds Time from admission to "
	    "the reply of a run.\n"
	    "# TYPE cordon_run_latency_seconds histogram\n");
	for (size_t b = 0; b < SERVE_METRICS_BUCKETS; b++) {
		cum += m->hist[b];
		fprintf(f, "cordon_run_latency_seconds_bucket{le=\"%g\"} %llu\n",
		    serve_metrics_bounds[b], (unsigned long long)cum);
	}
	cum += m->hist[SERVE_METRICS_BUCKETS];
	fprintf(f, "cordon_run_latency_seconds_bucket{le=\"+Inf\"} %llu\n"
	    "cordon_run_latency_seconds_sum %.3f\n"
	    "cordon_run_latency_seconds_count %llu\n",
	    (unsigned long long)cum, m->sum_s, (unsigned long long)m->count);
	fprintf(f, "# HELP cordon_queue_depth Runs waiting for a slot.\n"
	    "# TYPE cordon_queue_depth gauge\n"
	    "cordon_queue_depth %lld\n"
	    "# HELP cordon_active_runs Runs executing now.\n"
	    "# TYPE cordon_active_runs gauge\n"
	    "cordon_active_runs %lld\n"
	    "# HELP cordon_pool_size Idle warm containers (0: pool disabled).\n"
	    "# TYPE cordon_pool_size gauge\n"
	    "cordon_pool_size %lld\n"
	    "# HELP cordon_pool_hits_total Runs served by a warm container.\n"
	    "# TYPE cordon_pool_hits_total counter\n"
	    "cordon_pool_hits_total %llu\n"
	    "# HELP cordon_pool_misses_total Runs started cold.\n"
	    "# TYPE cordon_pool_misses_total counter\n"
	    "cordon_pool_misses_total %llu\n",
	    (long long)m->queue_depth, (long long)m->active,
	    (long long)m->pool_size, (unsigned long long)m->pool_hits,
	    (unsigned long long)m->pool_misses);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}
