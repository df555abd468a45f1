/*
 * Scheduled probes for `cordon serve` (probe_sched.h). The probe runs in a
 * child `cordon probe` so it shares nothing with the service's runs and
 * records its result exactly as the CLI does.
 */
#include "serve/probe_sched.h"

#include <errno.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "common/cbuf.h"
#include "common/log.h"
#include "common/proc.h"
#include "common/util.h"
#include "netsetup/netsetup.h"
#include "probe/probe.h"
#include "runner/probe_ops.h"
#include "serve/listen.h"

struct serve_prober {
	const struct config *c;
	char exe[4096];
	struct event *timer, *done_ev;
	void (*on_idle)(void *);
	void *arg;
	bool busy, first, stopped;
	bool warm;			/* probe with --warm; set on the loop
					 * thread while no round runs */
	int rc[2];			/* [RUNNER_NET_NONE], [RUNNER_NET_PROXY] */
	char err[2][384];
	char note[2][400];		/* last outcome, for /v1/health */
	char said[2][1024];		/* a passing probe's stderr: room for
					 * docker's words and the names */
	bool warn[2];			/*   with a RUNNER_PROBE_WARNING line */
};

int64_t
serve_probe_delay(const struct config *c, int64_t at_ms, bool pass,
    int64_t now_ms, bool first)
{
	int64_t interval = c->serve.probe_interval_s * 1000, stale, d;
	int64_t floor = first ? 0 : SERVE_PROBE_RETRY_MS;

	if (at_ms < 0)
		return floor;
	stale = at_ms + c->probe_max_age_s * 1000 - SERVE_PROBE_MARGIN_MS;
	d = stale - now_ms;
	if (d > interval)
		d = interval;
	if (!pass && d > SERVE_PROBE_FAIL_RETRY_MS)
		d = SERVE_PROBE_FAIL_RETRY_MS;
	return d < floor ? floor : d;
}

void
serve_probe_env_free(char **env)
{
	if (env == NULL)
		return;
	for (size_t i = 0; env[i] != NULL; i++)
		free(env[i]);
	free(env);
}

char **
serve_probe_env(char *const *env, const char *config_path)
{
	size_t n = 0, k = 0;
	char **out;

	while (env != NULL && env[n] != NULL)
		n++;
	if ((out = calloc(n + 2, sizeof(*out))) == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (strncmp(env[i], "CORDON_CONFIG=", 14) == 0)
			continue;
		if ((out[k++] = strdup(env[i])) == NULL)
			goto bad;
	}
	if (asprintf(&out[k], "CORDON_CONFIG=%s", config_path) < 0) {
		out[k] = NULL;
		goto bad;
	}
	return out;
bad:
	serve_probe_env_free(out);
	return NULL;
}

/* The stderr of a probe that passed, its lines joined by "; ", cut to
 * len: what it said about its leftovers (cmd_probe's probe_sweep).
 * *warn: one of its lines, kept or past the cut, starts
 * RUNNER_PROBE_WARNING. */
static void
probe_said(const struct cbuf *e, char *said, size_t len, bool *warn)
{
	const size_t wl = strlen(RUNNER_PROBE_WARNING);
	const char *t = cbuf_data(e), *nl;
	size_t n = 0, l;

	said[0] = '\0';
	*warn = false;
	while (t != NULL && *t != '\0') {
		nl = strchr(t, '\n');
		l = nl != NULL ? (size_t)(nl - t) : strlen(t);
		if (l >= wl && strncmp(t, RUNNER_PROBE_WARNING, wl) == 0)
			*warn = true;
		if (l > 0 && n + 1 < len)
			n += (size_t)snprintf(said + n, len - n, "%s%.*s",
			    n > 0 ? "; " : "", (int)l, t);
		if (n >= len)
			n = len - 1;
		t = nl != NULL ? nl + 1 : NULL;
	}
}

int
serve_probe_run(const char *exe, const char *config_path, const char *mode,
    bool warm, char *said, size_t saidlen, bool *warn, char *err,
    size_t errlen)
{
	extern char **environ;
	const char *argv[] = { exe, "probe", "--net", mode,
	    warm ? "--warm" : NULL, NULL };
	char **env = serve_probe_env(environ, config_path);
	struct cbuf *e = NULL;
	struct proc_opts o = { .argv = argv, .stdout_max = 1 << 20,
	    .stderr_max = 4096, .stderr_out = &e };
	char why[320];
	const char *t;
	int rc, status;

	said[0] = '\0';
	*warn = false;
	if (env == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	o.envp = (const char *const *)env;
	rc = proc_call(&o, SERVE_PROBE_TIMEOUT_MS, NULL, &status, why,
	    sizeof(why));
	serve_probe_env_free(env);
	if (rc == 0) {
		probe_said(e, said, saidlen, warn);
	} else if (rc == -EIO) {
		/* why: the first line of its stderr; with none, proc_call's
		 * words for how it ended, which the status already says (a
		 * signal as 128 + N). */
		t = cbuf_data(e);
		if (t[0] != '\0' && t[0] != '\n')
			snprintf(err, errlen, "probe --net %s failed (exit %d): "
			    "%s", mode, status, why);
		else
			snprintf(err, errlen, "probe --net %s failed (exit %d)",
			    mode, status);
		rc = -EPERM;
	} else if (rc == -ETIMEDOUT) {
		snprintf(err, errlen, "the probe took longer than %d s",
		    SERVE_PROBE_TIMEOUT_MS / 1000);
	} else {
		snprintf(err, errlen, "%s", why);	/* cannot run EXE */
	}
	cbuf_free(e);
	return rc;
}

static void *
probe_thread(void *arg)
{
	struct serve_prober *p = arg;
	const struct config *c = p->c;
	struct netsetup_endpoint ep;

	p->rc[0] = serve_probe_run(p->exe, c->path, "none", p->warm,
	    p->said[0], sizeof(p->said[0]), &p->warn[0], p->err[0],
	    sizeof(p->err[0]));
	/* Proxy runs are refused anyway while egress is down. */
	p->rc[1] = netsetup_ready(c, &ep, p->err[1], sizeof(p->err[1]));
	if (p->rc[1] == 0)
		p->rc[1] = serve_probe_run(p->exe, c->path, "proxy", p->warm,
		    p->said[1], sizeof(p->said[1]), &p->warn[1], p->err[1],
		    sizeof(p->err[1]));
	else {
		p->rc[1] = 1;	/* not probed */
		p->said[1][0] = '\0';
		p->warn[1] = false;
	}
	event_active(p->done_ev, 0, 0);
	return NULL;
}

/* Arms the timer for the mode "none" record (proxy follows it). */
static void
probe_arm(struct serve_prober *p)
{
	const struct config *c = p->c;
	char failed[256];
	bool pass = true;
	int64_t at = -1, ms;
	struct timeval tv;

	if (probe_state_read(c, "none", &pass, &at, failed, sizeof(failed)) < 0)
		at = -1;
	ms = serve_probe_delay(c, at, pass, time_wall_ms(), p->first);
	p->first = false;
	tv.tv_sec = (time_t)(ms / 1000);
	tv.tv_usec = (suseconds_t)(ms % 1000 * 1000);
	evtimer_add(p->timer, &tv);
}

static void
probe_done(evutil_socket_t fd, short what, void *arg)
{
	struct serve_prober *p = arg;
	static const char *const mode[2] = { "none", "proxy" };

	(void)fd;
	(void)what;
	p->busy = false;
	for (int i = 0; i < 2; i++) {
		char note[sizeof(p->note[0])];

		snprintf(note, sizeof(note), "%s%s", p->rc[i] == 0 ? "pass" :
		    p->rc[i] > 0 ? "not probed: " : "fail: ",
		    p->rc[i] == 0 ? "" : p->err[i]);
		memcpy(p->note[i], note, sizeof(note));
		if (p->rc[i] < 0)
			log_warnx("scheduled probe --net %s: %s (runs in this "
			    "mode are refused until a probe passes)", mode[i],
			    p->err[i]);
		else
			log_info("scheduled probe --net %s: %s", mode[i], note);
		/* What it said as it passed: its leftovers, if any; a
		 * warning when it marked a line as one (a leftover still
		 * there, its removal failed, or it could not look). */
		if (p->rc[i] == 0 && p->said[i][0] != '\0') {
			if (p->warn[i])
				log_warnx("scheduled probe --net %s said: %s",
				    mode[i], p->said[i]);
			else
				log_info("scheduled probe --net %s said: %s",
				    mode[i], p->said[i]);
		}
	}
	if (!p->stopped)
		probe_arm(p);
	p->on_idle(p->arg);
}

static void
probe_fire(evutil_socket_t fd, short what, void *arg)
{
	struct serve_prober *p = arg;

	(void)fd;
	(void)what;
	if (p->busy || p->stopped)
		return;
	p->busy = true;
	if (serve_listen_thread_spawn(probe_thread, p) < 0) {
		p->busy = false;
		log_warnx("cannot start the scheduled probe's thread");
		probe_arm(p);
	}
}

void
serve_prober_set_warm(struct serve_prober *p, bool warm)
{
	if (p != NULL)
		p->warm = warm;
}

int
serve_prober_new(struct event_base *base, const struct config *c,
    const char *exe, void (*on_idle)(void *), void *arg,
    struct serve_prober **out, char *err, size_t errlen)
{
	struct serve_prober *p = calloc(1, sizeof(*p));

	*out = NULL;
	if (p == NULL || !util_strlcpy(p->exe, exe, sizeof(p->exe))) {
		snprintf(err, errlen, p == NULL ? "out of memory" :
		    "probe executable path too long");
		free(p);
		return p == NULL ? -ENOMEM : -ENAMETOOLONG;
	}
	p->c = c;
	p->on_idle = on_idle;
	p->arg = arg;
	p->first = true;
	strcpy(p->note[0], "not run yet (the recorded probe stands)");
	strcpy(p->note[1], p->note[0]);
	if ((p->timer = evtimer_new(base, probe_fire, p)) == NULL ||
	    (p->done_ev = event_new(base, -1, 0, probe_done, p)) == NULL) {
		snprintf(err, errlen, "out of memory");
		serve_prober_free(p);
		return -ENOMEM;
	}
	probe_arm(p);
	*out = p;
	return 0;
}

void
serve_prober_stop(struct serve_prober *p)
{
	if (p == NULL)
		return;
	p->stopped = true;
	evtimer_del(p->timer);
}

void
serve_prober_kick(struct serve_prober *p)
{
	struct timeval now = { 0, 0 };

	if (p == NULL || p->busy || p->stopped)
		return;
	evtimer_del(p->timer);
	evtimer_add(p->timer, &now);
}

bool
serve_prober_busy(const struct serve_prober *p)
{
	return p != NULL && p->busy;
}

const char *
serve_prober_note(const struct serve_prober *p, enum runner_net mode)
{
	return p == NULL ? "not scheduled" : p->note[mode == RUNNER_NET_PROXY];
}

void
serve_prober_free(struct serve_prober *p)
{
	if (p == NULL)
		return;
	if (p->timer != NULL)
		event_free(p->timer);
	if (p->done_ev != NULL)
		event_free(p->done_ev);
	free(p);
}
