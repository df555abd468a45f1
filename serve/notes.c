/*
 * What the service says on stderr (common/log.h, the proxy's format: one
 * line per event, "cordon: LEVEL: ..."): the start-up line, the warm
 * pool's fills and failures (its on_note, on the pool's threads), and the
 * shutdown summary. Never code, output, credentials or tokens: only
 * counts, container names, modes, and docker's or the prober's reasons.
 */
#include "serve/internal.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "runner/image.h"
#include "runner/pool.h"
#include "runner/runner.h"

void
serve_note_startup(const struct serve_server *s, int64_t pool)
{
	char image[IMAGE_ID_MAX], names[160] = "";
	size_t n = 0;

	if (image_pinned_id(s->c, image) < 0)
		snprintf(image, sizeof(image), "none pinned");
	/* Tenant 0 is the unix socket's own caller. */
	for (size_t i = 1; i < s->tenants.n && n < sizeof(names); i++)
		n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s",
		    i > 1 ? "," : "", s->tenants.t[i].name);
	log_info("cordon serve %s: socket %s, listen %s, pool %lld per net "
	    "mode, tenants %zu%s%s%s, image %s", CORDON_VERSION,
	    s->socket_path, s->listen[0] != '\0' ? s->listen : "none",
	    (long long)pool, s->tenants.n - 1, n > 0 ? " (" : "", names,
	    n > 0 ? ")" : "", image);
	log_info("connections: TCP at most %lld (%lld per address), unix "
	    "socket %lld of its own; descriptor limit %lld; deadlines: head "
	    "%lld s, body %lld s, a stalled reply %lld s", (long long)s->caps[0],
	    (long long)s->caps[1], (long long)s->caps[2], (long long)s->nofile,
	    (long long)s->c->serve.head_timeout_s,
	    (long long)s->c->serve.body_timeout_s,
	    (long long)s->c->serve.write_timeout_s);
}

void
serve_note_signal(struct serve_server *s, int sig)
{
	struct serve_metrics m;

	serve_queue_counts(&s->queue, SIZE_MAX, &m);
	if (s->draining) {
		log_info("signal %d again: cancelling %lld running run(s)", sig,
		    (long long)m.active);
		return;
	}
	if (s->pool != NULL)
		runner_pool_stats(s->pool, &s->pool_at_signal);
	log_info("signal %d: draining: %lld run(s) to finish, %lld queued "
	    "refused; no new runs; pool stopping", sig,
	    (long long)m.active, (long long)m.queue_depth);
}

void
serve_note_shutdown(struct serve_server *s)
{
	struct runner_pool_stats st = { 0 };
	const struct runner_pool_stats *a = &s->pool_at_signal;
	char names[256], err[256];
	uint64_t idle = 0, starts = 0;
	int left = 0, rc;

	/* Joins the pool's thread: its starts in flight are removed by name
	 * (container_abort), then every idle one. */
	if (s->pools != NULL)
		runner_pools_stop(s->pools);
	if (s->pool != NULL) {
		runner_pool_stats(s->pool, &st);
		idle = st.retired - a->retired;
		starts = st.aborted - a->aborted;
	}
	/* Nothing of ours may run now: what still carries our pid was left
	 * behind. Remove it, and say so. */
	rc = runner_gc_owner(s->c, (long)getpid(), &left, names,
	    sizeof(names), err, sizeof(err));
	if (rc < 0)
		log_warnx("shutdown: cannot look for leftover containers: %s",
		    err);
	else if (left > 0)
		log_warnx("shutdown: %d leftover container(s) of this service "
		    "found and removed: %s", left, names);
	log_info("shutdown: served %llu run(s) (%llu warm), removed %llu "
	    "pool container(s) (%llu idle, %llu start(s) in flight), "
	    "leftovers found %d%s", (unsigned long long)s->metrics.count,
	    (unsigned long long)s->metrics.pool_hits,
	    (unsigned long long)(idle + starts), (unsigned long long)idle,
	    (unsigned long long)starts, rc < 0 ? -1 : left,
	    st.rm_failed > 0 ? " (some removals failed: see above)" : "");
}
