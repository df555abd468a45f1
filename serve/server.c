/*
 * The service's lifecycle (server.h): the event loop, its listeners (the
 * unix socket, optionally TCP; accept.c and conn.c) with their connection
 * caps derived from the descriptor limit, the parse workers, the scheduled
 * prober, the warm pool, SIGHUP ignored (logged), and the graceful stop on
 * SIGTERM/SIGINT. Requests go to the route table (routes.c), runs to the
 * queue (queue.c); everything but the sandbox and body parsing runs on the
 * loop's thread.
 */
#include "serve/server.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/thread.h>
#include <event2/util.h>

#include "common/log.h"
#include "common/util.h"
#include "jobs/pools.h"
#include "runner/pool.h"
#include "runner/pool_conf.h"
#include "runner/runner.h"
#include "serve/conn.h"
#include "serve/internal.h"
#include "serve/listen.h"
#include "serve/probe_sched.h"
#include "serve/work.h"

#define PARSE_THREADS 2		/* bodies parsed at once, off the loop */
#define ACCEPT_PAUSE_MS 250	/* after EMFILE */
#define ACCEPT_LOG_MS 10000	/* one warning per kind per interval */
#define DRAIN_GRACE_MS 2000	/* replies still going out at the stop */
#define DRAIN_TICK_MS 100

static bool threads_ready;

/* Reply bytes not yet taken by the sockets, and replies still being
 * written. */
static int64_t
server_pending(const struct serve_server *s)
{
	int64_t n = s->queue.sending + s->sessions.sending;

	for (size_t i = 0; i < s->tenants.n; i++)
		n += s->tenants.t[i].unsent > 0 ? s->tenants.t[i].unsent : 0;
	return n;
}

/* Ends the loop once draining and nothing is left to run, as soon as the
 * replies are out, or at most DRAIN_GRACE_MS later (their count is exact:
 * a dropped one counts as done; issue 39). Called on every run's, session
 * work's or parse's end, and every DRAIN_TICK_MS while draining. */
static void
server_maybe_exit(void *arg)
{
	struct serve_server *s = arg;
	int64_t now = time_mono_ms();

	if (!s->draining || serve_queue_busy(&s->queue) ||
	    serve_sessions_busy(&s->sessions) ||
	    serve_prober_busy(s->prober) || serve_work_busy(s->work)) {
		s->idle_ms = 0;
		return;
	}
	if (s->idle_ms == 0)
		s->idle_ms = now;
	if (server_pending(s) == 0 || now - s->idle_ms >= DRAIN_GRACE_MS)
		event_base_loopexit(s->base, NULL);
}

static void
drain_tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	server_maybe_exit(arg);
}

/* SIGHUP: nothing to reload (issue 39: it used to kill the service at
 * once, leaving its runs to outlive their deadlines until `cordon gc`). */
static void
on_hup(evutil_socket_t sig, short what, void *arg)
{
	(void)sig;
	(void)what;
	(void)arg;
	log_info("SIGHUP ignored: the configuration is read at start-up "
	    "only; restart the service to change it");
}

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct serve_server *s = arg;
	struct timeval tick = { 0, DRAIN_TICK_MS * 1000 };

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
	runner_pools_pause(s->pools, true);
	serve_accept_stop(s->acc);
	if (s->socket_path[0] != '\0')
		(void)unlink(s->socket_path);
	s->socket_path[0] = '\0';
	serve_queue_flush(&s->queue, "the service is shutting down");
	serve_sessions_end_all(&s->sessions, "the service is stopping");
	if ((s->drain_ev = event_new(s->base, -1, EV_PERSIST, drain_tick,
	    s)) != NULL)
		event_add(s->drain_ev, &tick);
	server_maybe_exit(s);
}

/* The descriptor budget (issue 39): the soft limit raised to the hard
 * one; the unix socket's own share and the runs' (64, and 8 per run slot,
 * warm container and session the config allows) are kept out of the TCP
 * cap, so that TCP clients can never take what the operator needs to reach
 * health and kill-all. s->caps: TCP, per peer, unix. */
static void
server_caps(struct serve_server *s, int64_t pool)
{
	const struct config_serve *cs = &s->c->serve;
	struct rlimit rl = { 0, 0 };
	int64_t reserve, avail, tcp, ux;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
		(void)getrlimit(RLIMIT_NOFILE, &rl);
	}
	s->nofile = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (1 << 20) ?
	    1 << 20 : (int64_t)rl.rlim_cur;
	reserve = 64 + 8 * (cs->global_limit + 2 * pool +
	    cs->sessions_per_tenant * (int64_t)(cs->ntenants + 1));
	ux = s->nofile / 4 < cs->unix_connections ? s->nofile / 4 :
	    cs->unix_connections;
	ux = ux < 4 ? 4 : ux;
	avail = s->nofile - reserve - ux;
	tcp = cs->max_connections > 0 ? cs->max_connections : avail / 2;
	if (cs->max_connections == 0 && tcp > 16384)
		tcp = 16384;
	if (tcp > avail) {
		log_warnx("serve.max_connections %lld is more than the "
		    "descriptor limit allows (nofile %lld, of which %lld are "
		    "kept for runs and sessions and %lld for the unix socket): "
		    "TCP connections capped at %lld; raise LimitNOFILE",
		    (long long)tcp, (long long)s->nofile, (long long)reserve,
		    (long long)ux, (long long)(avail > 1 ? avail : 1));
		tcp = avail;
	}
	s->caps[0] = tcp < 1 ? 1 : tcp;
	s->caps[1] = cs->max_connections_per_peer;
	s->caps[2] = ux;
}

static int
server_accept_new(struct serve_server *s, char *err, size_t errlen)
{
	const struct config_serve *cs = &s->c->serve;
	struct serve_accept_opts o = {
		.base = s->base,
		.conn = {
			.base = s->base,
			.head_ms = cs->head_timeout_s * 1000,
			.body_ms = cs->body_timeout_s * 1000,
			.write_ms = cs->write_timeout_s * 1000,
			.on_head = serve_routes_head,
			.on_request = serve_routes_request,
			.arg = s,
		},
		.tcp_max = s->caps[0], .peer_max = s->caps[1],
		.unix_max = s->caps[2],
		.pause_ms = ACCEPT_PAUSE_MS, .log_ms = ACCEPT_LOG_MS,
	};

	if (serve_accept_new(&o, &s->acc) < 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

static int
bind_tcp(struct serve_server *s, const char *spec, char *err, size_t errlen)
{
	struct evutil_addrinfo hints = { .ai_socktype = SOCK_STREAM,
	    .ai_flags = EVUTIL_AI_NUMERICHOST | EVUTIL_AI_PASSIVE }, *ai = NULL;
	char host[128], port_s[8];
	uint16_t port;
	int fd = -1, one = 1;

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
	snprintf(port_s, sizeof(port_s), "%u", port);
	if (evutil_getaddrinfo(host, port_s, &hints, &ai) != 0 ||
	    (fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0)) < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR,
	    &one, sizeof(one)) < 0 || bind(fd, ai->ai_addr,
	    (socklen_t)ai->ai_addrlen) < 0 || listen(fd, 511) < 0) {
		snprintf(err, errlen, "cannot listen on %.64s", spec);
		if (fd >= 0)
			close(fd);
		if (ai != NULL)
			evutil_freeaddrinfo(ai);
		return -EADDRNOTAVAIL;
	}
	evutil_freeaddrinfo(ai);
	if (serve_accept_listen(s->acc, fd, true) < 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

static int
server_pool_start(struct serve_server *s,
    const struct serve_server_opts *opts, char *err, size_t errlen)
{
	int rc;

	if ((rc = jobs_pools_start(s->c, JOBS_FRONT_SERVE, opts->pool,
	    &s->pools, err, errlen)) < 0)
		return rc;
	s->pool = runner_pools_get(s->pools, "python", NULL);
	return 0;
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

	if ((rc = server_accept_new(s, err, errlen)) < 0)
		return rc;
	if ((rc = serve_listen_unix(sock, &fd, err, errlen)) < 0)
		return rc;
	util_strlcpy(s->socket_path, sock, sizeof(s->socket_path));
	if (serve_accept_listen(s->acc, fd, false) < 0) {
		snprintf(err, errlen, "cannot accept on %.200s", sock);
		return -ENOMEM;
	}
	if (tcp[0] == '\0')
		return 0;
	util_strlcpy(s->listen, tcp, sizeof(s->listen));
	return bind_tcp(s, tcp, err, errlen);
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
	/* Its hook starts grants on the loop (serve_queue_granted). */
	if ((s->adm = jobs_admission_new(c, JOBS_FRONT_SERVE,
	    &(struct jobs_admission_hooks){ serve_queue_granted,
	    &s->queue })) == NULL) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto bad;
	}
	serve_tenants_init(&s->tenants, c, s->adm);
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
	if ((rc = serve_work_new(s->base, PARSE_THREADS, &s->work)) < 0) {
		snprintf(err, errlen, "cannot start the parse workers: %s",
		    strerror(-rc));
		goto bad;
	}
	s->queue = (struct serve_queue){ .base = s->base, .c = c,
	    .tenants = &s->tenants, .metrics = &s->metrics,
	    .tmetrics = s->tmetrics, .tmp_dir = s->tmp_dir,
	    .on_idle = server_maybe_exit, .arg = s };
	if (serve_queue_init(&s->queue) < 0) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto bad;
	}
	s->sessions = (struct serve_sessions){ .base = s->base, .c = c,
	    .tenants = &s->tenants, .metrics = &s->metrics,
	    .tmetrics = s->tmetrics, .tmp_dir = s->tmp_dir,
	    .queue = &s->queue, .work = s->work,
	    .on_idle = server_maybe_exit, .arg = s };
	if (serve_sessions_init(&s->sessions) < 0) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto bad;
	}
	server_caps(s, jobs_pools_total(c, JOBS_FRONT_SERVE, opts->pool));
	if ((rc = server_listen(s, sock, tcp, err, errlen)) < 0)
		goto bad;
	if ((s->sig_ev[0] = evsignal_new(s->base, SIGTERM, on_signal, s)) ==
	    NULL || (s->sig_ev[1] = evsignal_new(s->base, SIGINT, on_signal,
	    s)) == NULL || (s->sig_ev[2] = evsignal_new(s->base, SIGHUP,
	    on_hup, s)) == NULL || evsignal_add(s->sig_ev[0], NULL) < 0 ||
	    evsignal_add(s->sig_ev[1], NULL) < 0 ||
	    evsignal_add(s->sig_ev[2], NULL) < 0) {
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
	s->queue.pools = s->pools;
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
	int rc;

	s->queue.loop = pthread_self();
	rc = event_base_dispatch(s->base) < 0 ? -EIO : 0;

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
	/* First: a reply dropped here reports back into what follows. */
	serve_accept_free(s->acc);
	s->acc = NULL;
	for (size_t i = 0; i < 3; i++)
		if (s->sig_ev[i] != NULL)
			event_free(s->sig_ev[i]);
	if (s->drain_ev != NULL)
		event_free(s->drain_ev);
	serve_work_free(s->work);
	serve_prober_free(s->prober);
	serve_sessions_cleanup(&s->sessions);
	serve_queue_cleanup(&s->queue);
	runner_pools_free(s->pools);
	if (s->socket_path[0] != '\0')
		(void)unlink(s->socket_path);
	if (s->base != NULL)
		event_base_free(s->base);
	jobs_admission_free(s->adm);
	free(s);
}
