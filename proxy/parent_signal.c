/*
 * cordon-proxy's parent: what its signals and timers do (parent.h). SIGHUP
 * reloads; SIGUSR1 reopens the access log; SIGTERM (or SIGINT) drains the
 * network child, which has the grace period to finish, and a second one
 * exits at once; the tick expires the run registry. Each callback's arg
 * is the parent.
 */
#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include <event2/event.h>

#include "common/log.h"
#include "common/util.h"
#include "proxy/accesslog.h"
#include "proxy/imsg.h"
#include "proxy/parent.h"
#include "proxy/psmsg.h"
#include "proxy/runs.h"

void
proxy_parent_on_sighup(evutil_socket_t sig, short what, void *arg)
{
	struct parent *p = arg;

	(void)sig;
	(void)what;
	log_info("SIGHUP: reloading %s", p->cfg.allowlist);
	proxy_parent_reload(p, NULL);
}

void
proxy_parent_on_sigusr1(evutil_socket_t sig, short what, void *arg)
{
	struct parent *p = arg;
	int rc;

	(void)sig;
	(void)what;
	log_info("SIGUSR1: reopening the access log");
	if (p->alog != NULL && (rc = proxy_accesslog_reopen(p->alog)) != 0) {
		errno = -rc;
		log_warn("reopen access log");
		return;
	}
	proxy_parent_alog_to_child(p);
}

void
proxy_parent_on_grace(evutil_socket_t fd, short what, void *arg)
{
	struct parent *p = arg;

	(void)fd;
	(void)what;
	log_info("grace period over: stopping the network child");
	if (p->pid > 0)
		(void)kill(p->pid, SIGKILL);
	event_base_loopexit(p->base, NULL);
}

void
proxy_parent_on_sigterm(evutil_socket_t sig, short what, void *arg)
{
	struct parent *p = arg;
	struct timeval tv = { .tv_sec = p->cfg.grace_ms / 1000,
	    .tv_usec = (p->cfg.grace_ms % 1000) * 1000 };

	(void)what;
	if (p->draining) {
		log_info("signal %d again: exiting now", (int)sig);
		if (p->pid > 0)
			(void)kill(p->pid, SIGKILL);
		event_base_loopexit(p->base, NULL);
		return;
	}
	p->draining = true;
	log_info("signal %d: draining", (int)sig);
	evtimer_del(p->respawn);
	/* The child's copies are the only listeners left: once it closes
	 * them (it says "no longer accepting"), connects are refused. */
	for (size_t i = 0; i < p->cfg.nlisten; i++)
		if (p->lfd[i] >= 0) {
			close(p->lfd[i]);
			p->lfd[i] = -1;
		}
	if (p->tfd >= 0) {
		close(p->tfd);
		p->tfd = -1;
	}
	if (p->pid == 0 || p->chan == NULL ||
	    proxy_chan_send(p->chan, PSMSG_DRAIN, 0, "{}", 2, -1) != 0) {
		if (p->pid > 0)
			(void)kill(p->pid, SIGTERM);
		else
			event_base_loopexit(p->base, NULL);
	}
	evtimer_add(p->grace, &tv);
}

void
proxy_parent_on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct parent *p = arg;

	(void)fd;
	(void)what;
	if (p->runs != NULL && proxy_runs_tick(p->runs, time_wall_ms(), NULL,
	    NULL, NULL) > 0)
		proxy_parent_state_save(p);
}
