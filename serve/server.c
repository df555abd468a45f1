/*
 * The service's lifecycle (server.h): the event loop, its listeners (the
 * unix socket, optionally TCP), the scheduled prober, the warm pool, and
 * the graceful stop on SIGTERM/SIGINT. Requests go to the route table
 * (routes.c), runs to the queue (queue.c); everything but the sandbox runs
 * on the loop's thread.
 */
#include "serve/server.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/http.h>
#include <event2/thread.h>

#include "common/log.h"
#include "common/util.h"
#include "runner/pool.h"
#include "runner/runner.h"
#include "serve/internal.h"
#include "serve/listen.h"
#include "serve/probe_sched.h"

static bool threads_ready;

/* Ends the loop once draining and nothing is left to run or to write. A
 * reply whose connection failed never reports completion: after the last
 * run, wait at most 2 s for the writes. */
static void
server_maybe_exit(void *arg)
{
	struct serve_server *s = arg;
	struct timeval grace = { 2, 0 };

	if (!s->draining || serve_queue_busy(&s->queue) ||
	    serve_sessions_busy(&s->sessions) ||
	    serve_prober_busy(s->prober))
		return;
	event_base_loopexit(s->base, s->queue.sending == 0 ? NULL : &grace);
}

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct serve_server *s = arg;

	(void)what;
	serve_note_signal(s, (int)sig);
	if (s->draining) {
		/* A second signal: do not wait for the deadlines. */
		serve_queue_cancel(&s->queue);
		return;
	}
	s->draining = true;
	serve_prober_stop(s->prober);
	/* Idle warm containers go now; serve_server_free waits for the
	 * last. */
	if (s->pool != NULL)
		runner_pool_pause(s->pool, true);
	for (size_t i = 0; i < s->nlis; i++)
		if (s->lis[i].bound != NULL) {
			evhttp_del_accept_socket(s->lis[i].http, s->lis[i].bound);
			s->lis[i].bound = NULL;
		}
	if (s->socket_path[0] != '\0')
		(void)unlink(s->socket_path);
	s->socket_path[0] = '\0';
	serve_queue_flush(&s->queue, "the service is shutting down");
	serve_sessions_end_all(&s->sessions, "the service is stopping");
	server_maybe_exit(s);
}

static int
listener_init(struct serve_server *s, struct serve_listener *l, bool tcp,
    char *err, size_t errlen)
{
	int64_t t = s->c->limits.max_timeout_s + 60;

	l->s = s;
	l->tcp = tcp;
	if ((l->http = evhttp_new(s->base)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	evhttp_set_max_body_size(l->http, (ev_ssize_t)s->c->serve.body_max_bytes);
	/* Over the cap: read and drop the rest of the body before closing,
	 * so the client gets its 413 instead of a reset mid-upload. */
	evhttp_set_flags(l->http, EVHTTP_SERVER_LINGERING_CLOSE);
	evhttp_set_max_headers_size(l->http, 16384);
	/* Never time out a client that waits for a long run. */
	evhttp_set_timeout(l->http, t > INT_MAX ? INT_MAX : (int)t);
	evhttp_set_allowed_methods(l->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST |
	    EVHTTP_REQ_DELETE);
	evhttp_set_gencb(l->http, serve_routes_handle, l);
	return 0;
}

static int
bind_tcp(struct serve_server *s, struct serve_listener *l, const char *spec,
    char *err, size_t errlen)
{
	char host[128];
	uint16_t port;

	if (s->c->serve.ntenants == 0) {
		snprintf(err, errlen, "--listen needs tenants with tokens "
		    "(serve.tenants in the config)");
		return -EINVAL;
	}
	if (serve_listen_parse_addr(spec, host, sizeof(host), &port) < 0) {
		snprintf(err, errlen, "bad listen address '%.64s' (ADDR:PORT)",
		    spec);
		return -EINVAL;
	}
	if ((l->bound = evhttp_bind_socket_with_handle(l->http, host,
	    port)) == NULL) {
		snprintf(err, errlen, "cannot listen on %.64s", spec);
		return -EADDRNOTAVAIL;
	}
	return 0;
}

static int
server_pool_start(struct serve_server *s,
    const struct serve_server_opts *opts, char *err, size_t errlen)
{
	struct runner_pool_opts po = {
		.size = opts->pool >= 0 ? opts->pool : s->c->serve.pool,
		.max_age_s = s->c->serve.pool_max_age_s,
		.max_starts = s->c->serve.pool_starts,
		.modes = { true, true },
		.on_note = serve_note_pool, .note_arg = s,
	};

	if (po.size == 0)
		return 0;
	return runner_pool_new(s->c, &po, &s->pool, err, errlen);
}

/* What a predecessor that did not stop cleanly (SIGKILL, a crash, the
 * host's OOM killer) left behind: its pool's and its sessions' containers
 * carry its pid, which no process has any more. The same sweep as
 * `cordon gc` (expired or orphaned, anyone's), before this service starts
 * any container, said in the log. A daemon that cannot be asked is only
 * a warning: runs say so themselves. */
static void
server_cleanup_left(struct serve_server *s)
{
	char names[512], err[256];
	int removed = 0;

	if (runner_gc_names(s->c, &removed, names, sizeof(names), err,
	    sizeof(err)) < 0)
		log_warnx("start-up sweep failed: %s", err);
	else if (removed > 0)
		log_warnx("start-up sweep removed %d container(s) left by a "
		    "service or run that is gone (owner not running, or past "
		    "its deadline), as `cordon gc` would: %s", removed, names);
	else
		log_info("start-up sweep: no container left by a service or "
		    "run that is gone");
}

/* The unix socket (always) and the TCP address (when tcp is not ""). */
static int
server_listen(struct serve_server *s, const char *sock, const char *tcp,
    char *err, size_t errlen)
{
	int fd = -1, rc;

	if ((rc = listener_init(s, &s->lis[0], false, err, errlen)) < 0)
		return rc;
	s->nlis = 1;
	if ((rc = serve_listen_unix(sock, &fd, err, errlen)) < 0)
		return rc;
	util_strlcpy(s->socket_path, sock, sizeof(s->socket_path));
	if ((s->lis[0].bound = evhttp_accept_socket_with_handle(s->lis[0].http,
	    fd)) == NULL) {
		close(fd);
		snprintf(err, errlen, "cannot accept on %.200s", sock);
		return -ENOMEM;
	}
	if (tcp[0] == '\0')
		return 0;
	util_strlcpy(s->listen, tcp, sizeof(s->listen));
	if ((rc = listener_init(s, &s->lis[1], true, err, errlen)) < 0)
		return rc;
	s->nlis = 2;
	return bind_tcp(s, &s->lis[1], tcp, err, errlen);
}

int
serve_server_new(const struct serve_server_opts *opts,
    struct serve_server **out, char *err, size_t errlen)
{
	const struct config *c = opts->config;
	const char *sock = opts->socket != NULL ? opts->socket : c->serve.socket;
	const char *tcp = opts->listen != NULL ? opts->listen : c->serve.listen;
	const char *tmp = opts->tmp_dir != NULL ? opts->tmp_dir :
	    getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp";
	struct serve_server *s;
	int rc;

	*out = NULL;
	if (!threads_ready) {
		if (evthread_use_pthreads() < 0) {
			snprintf(err, errlen, "libevent has no thread support");
			return -ENOSYS;
		}
		threads_ready = true;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	s->c = c;
	serve_tenants_init(&s->tenants, c);
	if (!util_strlcpy(s->tmp_dir, tmp, sizeof(s->tmp_dir))) {
		snprintf(err, errlen, "temporary directory path too long");
		rc = -ENAMETOOLONG;
		goto bad;
	}
	if ((s->base = event_base_new()) == NULL) {
		snprintf(err, errlen, "cannot create the event loop");
		rc = -ENOMEM;
		goto bad;
	}
	s->queue = (struct serve_queue){ .base = s->base, .c = c,
	    .tenants = &s->tenants, .metrics = &s->metrics,
	    .tmp_dir = s->tmp_dir, .on_idle = server_maybe_exit, .arg = s };
	serve_queue_init(&s->queue);
	s->sessions = (struct serve_sessions){ .base = s->base, .c = c,
	    .tenants = &s->tenants, .metrics = &s->metrics,
	    .tmp_dir = s->tmp_dir, .on_idle = server_maybe_exit, .arg = s };
	if (serve_sessions_init(&s->sessions) < 0) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto bad;
	}
	if ((rc = server_listen(s, sock, tcp, err, errlen)) < 0)
		goto bad;
	if ((s->sig_ev[0] = evsignal_new(s->base, SIGTERM, on_signal, s)) ==
	    NULL || (s->sig_ev[1] = evsignal_new(s->base, SIGINT, on_signal,
	    s)) == NULL || evsignal_add(s->sig_ev[0], NULL) < 0 ||
	    evsignal_add(s->sig_ev[1], NULL) < 0) {
		snprintf(err, errlen, "cannot watch signals");
		rc = -ENOMEM;
		goto bad;
	}
	if (opts->probe_exe != NULL && (rc = serve_prober_new(s->base, c,
	    opts->probe_exe, server_maybe_exit, s, &s->prober, err,
	    errlen)) < 0)
		goto bad;
	server_cleanup_left(s);
	if ((rc = server_pool_start(s, opts, err, errlen)) < 0)
		goto bad;
	s->queue.pool = s->pool;
	/* Probe the path pooled runs take. */
	serve_prober_set_warm(s->prober, s->pool != NULL);
	serve_note_startup(s, s->pool != NULL ? (opts->pool >= 0 ? opts->pool :
	    c->serve.pool) : 0);
	*out = s;
	return 0;
bad:
	serve_server_free(s);
	return rc;
}

int
serve_server_run(struct serve_server *s)
{
	int rc = event_base_dispatch(s->base) < 0 ? -EIO : 0;

	/* Only then exit: the pool is stopped and everything of ours gone
	 * (or reported). */
	serve_note_shutdown(s);
	return rc;
}

void
serve_server_free(struct serve_server *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < 2; i++)
		if (s->sig_ev[i] != NULL)
			event_free(s->sig_ev[i]);
	serve_prober_free(s->prober);
	serve_sessions_cleanup(&s->sessions);
	runner_pool_free(s->pool);
	for (size_t i = 0; i < s->nlis; i++)
		if (s->lis[i].http != NULL)
			evhttp_free(s->lis[i].http);
	if (s->socket_path[0] != '\0')
		(void)unlink(s->socket_path);
	if (s->base != NULL)
		event_base_free(s->base);
	free(s);
}
