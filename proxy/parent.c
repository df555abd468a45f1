/*
 * cordon-proxy's privileged parent: checks the configuration, loads the
 * allowlist with its secrets and the egress CA with its key, binds the
 * listeners and the control socket while root, then runs the network
 * child (child.c) with only the listeners, and restarts it with backoff
 * when it dies, giving the new one the policies and every live run, so a
 * crash of the process that parses sandboxes' bytes costs the runs their
 * open connections, not their registration. SIGHUP reloads (the parent
 * parses; the child gets the checked texts), SIGUSR1 reopens the access
 * log, SIGTERM drains the child, then exits (the signals' handlers:
 * parent_signal.c).
 */
#include "proxy/parent.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>

#include "allowlist/allowlist.h"
#include "common/log.h"
#include "common/util.h"
#include "proxy/accesslog.h"
#include "proxy/ca.h"
#include "proxy/ctlsrv.h"
#include "proxy/daemon.h"
#include "proxy/imsg.h"
#include "proxy/metrics.h"
#include "proxy/parent.h"
#include "proxy/psmsg.h"
#include "proxy/runs.h"
#include "proxy/sock.h"

#define BACKOFF_MIN_MS	100
#define BACKOFF_MAX_MS	10000
#define STABLE_MS	30000	/* a child that lived this long resets it */
#define TICK_MS		1000	/* the registry's expiry */
/* Descriptors in the child: the channel, the access log, the metrics
 * listener, then the listeners. */
#define CHILD_FD_CHAN	3
#define CHILD_FD_ALOG	4
#define CHILD_FD_METRICS 5
#define CHILD_FD_LISTEN	6	/* .. 6 + CONFIG_MAX_LISTEN - 1 */
#define CHILD_FD_TRANSPARENT (CHILD_FD_LISTEN + CONFIG_MAX_LISTEN)
#define CHILD_FD_DNS_UDP (CHILD_FD_TRANSPARENT + 1)
#define CHILD_FD_DNS_TCP (CHILD_FD_TRANSPARENT + 2)
/* The network child's root: empty, root's, read-only. */
#define PARENT_ROOT	"/run/cordon-proxy-root"

static struct parent P;

static void
format_addr(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)ss;
		inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a));
		snprintf(buf, len, "[%s]:%u", a, ntohs(s6->sin6_port));
	} else {
		const struct sockaddr_in *s4 = (const void *)ss;
		inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a));
		snprintf(buf, len, "%s:%u", a, ntohs(s4->sin_port));
	}
}

/* --- the network child ------------------------------------------------- */

static void parent_spawn(void);

/* In the forked child: its descriptors at fixed numbers, then exec. */
static void
spawn_exec(int chan, int alog, const char *spec)
{
	int from[8 + CONFIG_MAX_LISTEN], to[8 + CONFIG_MAX_LISTEN], n = 0;
	const char **argv;
	sigset_t all;

	from[n] = chan, to[n++] = CHILD_FD_CHAN;
	from[n] = alog, to[n++] = CHILD_FD_ALOG;
	from[n] = P.metrics_fd, to[n++] = CHILD_FD_METRICS;
	for (size_t i = 0; i < P.cfg.nlisten; i++)
		from[n] = P.lfd[i], to[n++] = CHILD_FD_LISTEN + (int)i;
	from[n] = P.tfd, to[n++] = CHILD_FD_TRANSPARENT;
	from[n] = P.dns_udp, to[n++] = CHILD_FD_DNS_UDP;
	from[n] = P.dns_tcp, to[n++] = CHILD_FD_DNS_TCP;
	/* Out of the way first, so no dup2 below overwrites another. */
	for (int k = 0; k < n; k++)
		if (from[k] >= 0 && (from[k] = fcntl(from[k], F_DUPFD, 100)) < 0)
			_exit(126);
	for (int k = 0; k < n; k++) {
		if (from[k] < 0)
			continue;
		if (dup2(from[k], to[k]) < 0)
			_exit(126);
		close(from[k]);
	}
	argv = calloc((size_t)P.argc + 3, sizeof(*argv));
	if (argv == NULL)
		_exit(126);
	argv[0] = P.argv[0];
	argv[1] = "--network-child";
	argv[2] = spec;
	for (int i = 1; i < P.argc; i++)
		argv[i + 2] = P.argv[i];
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	for (int s = 1; s < NSIG; s++)
		signal(s, SIG_DFL);
	execv("/proc/self/exe", (char *const *)argv);
	_exit(127);
}

static void
parent_spawn(void)
{
	char spec[512], lst[128] = "";
	uint64_t asize = 0;
	int sv[2], alog = -1;
	size_t used = 0;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
		log_warn("socketpair");
		goto retry;
	}
	if (P.alog != NULL)
		alog = proxy_accesslog_is_stdout(P.alog) ? STDOUT_FILENO :
		    proxy_accesslog_dup(P.alog, &asize);
	for (size_t i = 0; i < P.cfg.nlisten && used < sizeof(lst); i++)
		used += (size_t)snprintf(lst + used, sizeof(lst) - used, "%s%zu",
		    i > 0 ? "," : "", CHILD_FD_LISTEN + i);
	snprintf(spec, sizeof(spec), "chan=%d;alog=%d:%llu;metrics=%d;"
	    "listen=%s;transparent=%d;dnsu=%d;dnst=%d;uid=%ld;gid=%ld;root=%s",
	    CHILD_FD_CHAN, alog >= 0 ? CHILD_FD_ALOG : -1,
	    (unsigned long long)asize, P.metrics_fd >= 0 ? CHILD_FD_METRICS :
	    -1, lst, P.tfd >= 0 ? CHILD_FD_TRANSPARENT : -1, P.dns_udp >= 0 ?
	    CHILD_FD_DNS_UDP : -1, P.dns_tcp >= 0 ? CHILD_FD_DNS_TCP : -1,
	    P.uid, P.gid, P.root);
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		close(sv[0]);
		spawn_exec(sv[1], alog, spec);
	}
	close(sv[1]);
	if (alog >= 0 && alog != STDOUT_FILENO)
		close(alog);
	if (pid < 0) {
		log_warn("fork");
		close(sv[0]);
		goto retry;
	}
	P.pid = pid;
	P.started_ms = time_mono_ms();
	P.ready = false;
	if (proxy_chan_new(P.base, sv[0], proxy_parent_child_msg, &P, &P.chan) != 0)
		fatalx("out of memory");
	if (proxy_parent_child_greet(&P) != 0)
		log_warnx("network child %ld: could not send its start",
		    (long)pid);
	log_info("network child %ld started", (long)pid);
	return;
retry:
	{
		struct timeval tv = { 1, 0 };
		evtimer_add(P.respawn, &tv);
	}
}

static void
respawn_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	if (!P.draining && P.pid == 0)
		parent_spawn();
}

/* The child ended (reaped): a restart with backoff, or the end of a
 * drain. */
static void
child_ended(int status)
{
	struct timeval tv;
	int64_t lived = time_mono_ms() - P.started_ms;

	if (WIFSIGNALED(status))
		log_warnx("network child %ld killed by signal %d", (long)P.pid,
		    WTERMSIG(status));
	else if (!P.draining || WEXITSTATUS(status) != 0)
		log_warnx("network child %ld exited with %d", (long)P.pid,
		    WEXITSTATUS(status));
	P.pid = 0;
	proxy_chan_free(P.chan);
	P.chan = NULL;
	P.ready = false;
	if (P.draining) {
		event_base_loopexit(P.base, NULL);
		return;
	}
	proxy_parent_child_lost(&P);
	P.restarts++;
	if (lived >= STABLE_MS)
		P.backoff_ms = BACKOFF_MIN_MS;
	tv.tv_sec = P.backoff_ms / 1000;
	tv.tv_usec = (P.backoff_ms % 1000) * 1000;
	log_info("restarting the network child in %d ms (restart %u)",
	    P.backoff_ms, P.restarts);
	P.backoff_ms = P.backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS :
	    P.backoff_ms * 2;
	evtimer_add(P.respawn, &tv);
}

static void
sigchld_cb(evutil_socket_t sig, short what, void *arg)
{
	int status;
	pid_t pid;

	(void)sig;
	(void)what;
	(void)arg;
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
		if (pid == P.pid)
			child_ended(status);
}

/* The channel said the child is gone (it may not be reaped yet): make
 * sure it is, so the restart follows. */
static void
stray_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	if (P.pid > 0 && P.pid == (pid_t)(intptr_t)arg) {
		log_warnx("network child %ld closed its channel but did not "
		    "exit: killed", (long)P.pid);
		(void)kill(P.pid, SIGKILL);
	}
}

void
proxy_parent_child_lost_channel(void)
{
	struct timeval tv = { 2, 0 };

	/* It is exiting (a crash, a drain, a signal to the whole group):
	 * its reaping restarts it. One that closed the channel and stays
	 * is killed, so a restart always follows. */
	if (P.pid <= 0)
		return;
	if (P.stray != NULL)
		event_free(P.stray);
	P.stray = evtimer_new(P.base, stray_cb, (void *)(intptr_t)P.pid);
	if (P.stray == NULL || evtimer_add(P.stray, &tv) != 0)
		(void)kill(P.pid, SIGKILL);
}

/* --- start ----------------------------------------------------------------- */

static int
lookup_user(const char *name, long *uid, long *gid)
{
	struct passwd *pw;

	errno = 0;
	pw = getpwnam(name);
	if (pw == NULL)
		return errno != 0 ? -errno : -ENOENT;
	*uid = (long)pw->pw_uid;
	*gid = (long)pw->pw_gid;
	return 0;
}

/* --make-ca DIR: the CA once, the bundle every time. */
static int
make_ca(void)
{
	char err[512];
	bool created = false, changed = false;

	if (proxy_ca_make(P.cfg.make_ca, P.cfg.ca_roots != NULL ?
	    P.cfg.ca_roots : PROXY_CA_ROOTS, &created, &changed, err,
	    sizeof(err)) != 0) {
		log_warnx("--make-ca: %s", err);
		return 1;
	}
	log_info("%s the egress CA in %s (%s, %s), bundle %s %s", created ?
	    "made" : "kept", P.cfg.make_ca, PROXY_CA_KEY, PROXY_CA_CERT,
	    PROXY_CA_BUNDLE, changed ? "written" : "unchanged");
	/* One word on stdout for `cordon net up`'s list of changes. */
	printf("%s\n", created ? "made" : changed ? "bundle" : "kept");
	return 0;
}

/* Options, the allowlist, the user, the CA, --help and --check. -1 to go
 * on, or the exit status. */
static int
startup(int argc, char **argv)
{
	char err[512];

	log_init("cordon-proxy", LOG_LEVEL_INFO);
	proxy_config_init(&P.cfg);
	if (proxy_config_parse(&P.cfg, argc, argv, err, sizeof(err)) != 0) {
		log_warnx("%s", err);
		fputs(proxy_config_usage(), stderr);
		return 1;
	}
	if (P.cfg.help) {
		fputs(proxy_config_usage(), stdout);
		return 0;
	}
	log_set_level((enum log_level)P.cfg.log_level);
	if (P.cfg.make_ca != NULL)
		return make_ca();
	if (P.cfg.no_sni_check)
		log_warnx("--insecure-no-sni-check: SNI check is off: tunnels "
		    "no longer compare the TLS server_name with the CONNECT "
		    "host (domain fronting passes)");
	if (proxy_parent_load(&P, &P.set, NULL, 0) != 0)
		return 1;
	P.uid = P.gid = -1;
	if (P.cfg.user != NULL && lookup_user(P.cfg.user, &P.uid, &P.gid) != 0) {
		log_warnx("--user %s: no such user", P.cfg.user);
		return 1;
	}
	/* Root never parses sandboxes' bytes: nobody unless told. */
	if (P.cfg.user == NULL && geteuid() == 0 &&
	    lookup_user("nobody", &P.uid, &P.gid) != 0) {
		log_warnx("no user 'nobody' for the network child: give --user");
		return 1;
	}
	if (P.cfg.ca_cert != NULL && proxy_ca_load(P.cfg.ca_cert,
	    P.cfg.ca_key, 1, &P.ca, err, sizeof(err)) != 0) {
		log_warnx("TLS inspection: %s", err);
		return 1;
	}
	if (P.cfg.check) {
		log_info("configuration OK: %zu policies%s",
		    allowlist_set_count(P.set), P.ca != NULL ?
		    "; TLS inspection on" : "");
		return 0;
	}
	return -1;
}

/* Listeners, metrics, the access log, the control socket, the empty root:
 * everything that needs root. Fatal on failure. */
static void
open_all(void)
{
	char text[64];
	int rc;

	for (size_t i = 0; i < P.cfg.nlisten; i++) {
		format_addr(&P.cfg.listen[i].ss, text, sizeof(text));
		if ((P.lfd[i] = proxy_sock_listen_tcp(&P.cfg.listen[i])) < 0)
			fatalx("listen on %s: %s", text, strerror(-P.lfd[i]));
	}
	P.metrics_fd = -1;
	if (P.cfg.has_metrics && (P.metrics_fd = proxy_metrics_listen_socket(
	    &P.cfg.metrics.ss, P.cfg.metrics.len)) < 0)
		fatalx("--metrics: %s", strerror(-P.metrics_fd));
	P.tfd = P.dns_udp = P.dns_tcp = -1;
	if (P.cfg.has_transparent && (P.tfd = proxy_sock_listen_tcp(
	    &P.cfg.transparent)) < 0)
		fatalx("--transparent: %s", strerror(-P.tfd));
	if (P.cfg.has_dns_listen) {
		/* One port for both: the TCP listener picks it (port 0 in
		 * tests), the UDP socket takes the same. */
		if ((P.dns_tcp = proxy_sock_listen_tcp(
		    &P.cfg.dns_listen)) < 0)
			fatalx("--dns-listen (tcp): %s", strerror(-P.dns_tcp));
		if ((P.dns_udp = proxy_sock_bind_udp(
		    &P.cfg.dns_listen)) < 0)
			fatalx("--dns-listen (udp): %s", strerror(-P.dns_udp));
	}
	if (P.cfg.access_log != NULL) {
		if ((rc = proxy_accesslog_open(P.cfg.access_log, &P.alog)) != 0)
			fatalx("--access-log %s: %s", P.cfg.access_log,
			    strerror(-rc));
		if (P.cfg.access_log_max > 0 && (rc = proxy_accesslog_set_rotate(
		    P.alog, P.cfg.access_log_max, P.cfg.access_log_keep)) != 0)
			fatalx("--access-log-max: %s", strerror(-rc));
	}
	if (P.cfg.control != NULL) {
		if (proxy_runs_new(PROXY_RUNS_MAX, &P.runs) != 0)
			fatalx("out of memory");
		if (proxy_ctlsrv_new(P.base, P.cfg.control, proxy_parent_ctl, &P,
		    &P.ctl) != 0)
			fatalx("cannot open the control socket");
		log_info("run mode: control socket %s", P.cfg.control);
		if (proxy_parent_state_load(&P) != 0)
			log_warnx("%s: starting with no runs", P.cfg.state);
	}
	if (geteuid() == 0) {
		struct stat st;
		/* One empty, read-only directory for every proxy on the host,
		 * made once and never removed (nothing to leak when a parent
		 * is killed). */
		snprintf(P.root, sizeof(P.root), "%s", PARENT_ROOT);
		if (mkdir(P.root, 0555) != 0 && errno != EEXIST)
			fatal("mkdir %s", P.root);
		if (lstat(P.root, &st) != 0 || !S_ISDIR(st.st_mode) ||
		    st.st_uid != 0 || (st.st_mode & 0222) != 0)
			fatalx("%s: not a directory owned by root and read-only",
			    P.root);
	}
}

void
proxy_parent_announce(void)
{
	char text[64];

	if (P.announced)
		return;
	P.announced = true;
	if (P.ca != NULL)
		log_info("TLS inspection on (CA %s)", P.cfg.ca_cert);
	/* Before the listeners: who waits for "listening on" finds it. */
	if (P.cfg.has_metrics) {
		format_addr(&P.cfg.metrics.ss, text, sizeof(text));
		log_info("metrics on %s", text);
	}
	if (P.cfg.has_transparent) {
		format_addr(&P.cfg.transparent.ss, text, sizeof(text));
		log_info("transparent on %s", text);
	}
	if (P.cfg.has_dns_listen) {
		format_addr(&P.cfg.dns_listen.ss, text, sizeof(text));
		log_info("dns on %s", text);
	}
	for (size_t i = 0; i < P.cfg.nlisten; i++) {
		format_addr(&P.cfg.listen[i].ss, text, sizeof(text));
		/* Tests and supervisors wait for this exact line. */
		log_info("listening on %s", text);
	}
}

static void
raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
			log_warn("setrlimit(RLIMIT_NOFILE)");
	}
}

int
proxy_parent_main(int argc, char **argv)
{
	static const int sigs[] = { SIGHUP, SIGTERM, SIGINT, SIGUSR1, SIGCHLD };
	static event_callback_fn const cbs[] = { proxy_parent_on_sighup, proxy_parent_on_sigterm,
	    proxy_parent_on_sigterm, proxy_parent_on_sigusr1, sigchld_cb };
	struct event *ev[5];
	int rc;

	P.argc = argc;
	P.argv = argv;
	P.backoff_ms = BACKOFF_MIN_MS;
	P.gen = 1;
	rc = startup(argc, argv);
	if (rc >= 0) {
		allowlist_set_free(P.set);
		proxy_ca_free(P.ca);
		return rc;
	}
	signal(SIGPIPE, SIG_IGN);
	raise_nofile();
	if ((P.base = event_base_new()) == NULL)
		fatalx("event_base_new failed");
	P.respawn = evtimer_new(P.base, respawn_cb, NULL);
	P.grace = evtimer_new(P.base, proxy_parent_on_grace, &P);
	P.tick = event_new(P.base, -1, EV_PERSIST, proxy_parent_on_tick, &P);
	{
		struct timeval tv = { TICK_MS / 1000, (TICK_MS % 1000) * 1000 };
		if (P.respawn == NULL || P.grace == NULL || P.tick == NULL ||
		    event_add(P.tick, &tv) != 0)
			fatalx("out of memory");
	}
	for (int i = 0; i < 5; i++)
		if ((ev[i] = evsignal_new(P.base, sigs[i], cbs[i], &P)) ==
		    NULL || event_add(ev[i], NULL) != 0)
			fatalx("signal setup failed");
	open_all();
	parent_spawn();

	event_base_dispatch(P.base);

	if (P.pid > 0) {
		(void)kill(P.pid, SIGKILL);
		(void)waitpid(P.pid, NULL, 0);
	}
	proxy_chan_free(P.chan);
	proxy_ctlsrv_free(P.ctl);
	proxy_runs_free(P.runs);
	allowlist_set_free(P.set);
	proxy_ca_free(P.ca);
	proxy_accesslog_free(P.alog);

	for (int i = 0; i < 5; i++)
		event_free(ev[i]);
	event_free(P.respawn);
	event_free(P.grace);
	if (P.stray != NULL)
		event_free(P.stray);
	event_free(P.tick);
	event_base_free(P.base);
	return 0;
}
