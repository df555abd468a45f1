/*
 * cordon-proxy: the allowlisting egress proxy daemon. Parses and checks the
 * configuration, binds, drops privileges, then runs the libevent loop with
 * SIGHUP (reload the allowlist atomically, reopen the access log, reread
 * the local addresses), SIGUSR1 (reopen the access log only: logrotate)
 * and SIGTERM/SIGINT (stop accepting, drain, exit) handled on the loop.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <ares.h>
#include <event2/event.h>

#include "allowlist/allowlist.h"
#include "common/log.h"
#include "proxy/accesslog.h"
#include "proxy/ca.h"
#include "proxy/config.h"
#include "proxy/ctlsrv.h"
#include "proxy/dns.h"
#include "proxy/metrics.h"
#include "proxy/server.h"
#include "proxy/tls.h"

static struct proxy_config cfg;
static struct event_base *base;
static struct proxy_server *srv;
static struct accesslog *alog;
static struct proxy_metrics *metrics;
static struct proxy_ctlsrv *ctlsrv;
static struct proxy_tls *tls;
static struct event *grace_timer;
static int draining;

/* "N entries in policy P" (standalone) or "N policies: a, b" (run
 * mode), for the reload and --check lines. */
static void
describe_set(const struct allowlist_set *set, char *buf, size_t len)
{
	size_t n = allowlist_set_count(set), used;

	if (cfg.control == NULL) {
		snprintf(buf, len, "policy \"%s\" has %zu entries", cfg.policy,
		    allowlist_entry_count(allowlist_set_policy(set,
		    cfg.policy)));
		return;
	}
	used = (size_t)snprintf(buf, len, "%zu policies:", n);
	for (size_t i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s %s",
		    i > 0 ? "," : "", allowlist_set_name(set, i));
}

/* Loads the allowlist and its policy; logs every diagnostic. */
static int
load_allowlist(struct allowlist_set **out)
{
	struct allowlist_load_opts opts = { .secrets = cfg.secrets };
	struct allowlist_diag diag;
	struct allowlist_set *set = NULL;
	int rc;

	*out = NULL;
	allowlist_diag_init(&diag);
	rc = allowlist_set_load_opts(cfg.allowlist, &opts, &set, &diag);
	for (size_t i = 0; i < diag.count; i++)
		log_warnx("%s", diag.items[i].text);
	if (diag.dropped > 0)
		log_warnx("%s: %zu more diagnostics not shown", cfg.allowlist,
		    diag.dropped);
	allowlist_diag_cleanup(&diag);
	if (rc != 0) {
		log_warnx("%s: allowlist rejected (%s)", cfg.allowlist,
		    strerror(-rc));
		return rc;
	}
	/* Run mode: each run names its policy at register; --policy is not
	 * used, and the set need not have it. */
	if (cfg.control == NULL &&
	    allowlist_set_policy(set, cfg.policy) == NULL) {
		log_warnx("%s: no policy named \"%s\"", cfg.allowlist,
		    cfg.policy);
		allowlist_set_free(set);
		return -ENOENT;
	}
	*out = set;
	return 0;
}

/* After an outside rotation (logrotate renamed the file). */
static void
access_log_reopen(void)
{
	int rc = proxy_accesslog_reopen(alog);

	if (rc != 0) {
		errno = -rc;
		log_warn("reopen access log");
	}
}

static void
sigusr1_cb(evutil_socket_t sig, short what, void *arg)
{
	(void)sig;
	(void)what;
	(void)arg;
	log_info("SIGUSR1: reopening the access log");
	access_log_reopen();
}

static void
sighup_cb(evutil_socket_t sig, short what, void *arg)
{
	struct allowlist_set *set;
	char text[512];

	(void)sig;
	(void)what;
	(void)arg;
	log_info("SIGHUP: reloading %s", cfg.allowlist);
	if (load_allowlist(&set) != 0) {
		log_warnx("reload failed: keeping the previous allowlist");
		proxy_metrics_reload(metrics, 0);
	} else {
		describe_set(set, text, sizeof(text));
		proxy_server_set_allowlist(srv, set);
		proxy_metrics_reload(metrics, 1);
		log_info("reload ok: %s", text);
	}
	access_log_reopen();
	/* Addresses come and go (DHCP, docker networks): reread them now
	 * rather than at the next --self-refresh tick. */
	(void)proxy_server_refresh_self(srv);
}

static void
drained_cb(void *arg)
{
	(void)arg;
	log_info("drained: exiting");
	event_base_loopexit(base, NULL);
}

static void
grace_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	log_info("grace period over: closing %zu connections",
	    proxy_server_connections(srv));
	event_base_loopexit(base, NULL);
}

static void
sigterm_cb(evutil_socket_t sig, short what, void *arg)
{
	struct timeval tv = { .tv_sec = cfg.grace_ms / 1000,
	    .tv_usec = (cfg.grace_ms % 1000) * 1000 };

	(void)what;
	(void)arg;
	if (draining++) {
		log_info("signal %d again: exiting now", (int)sig);
		event_base_loopexit(base, NULL);
		return;
	}
	evtimer_add(grace_timer, &tv);
	log_info("signal %d: draining %zu connections", (int)sig,
	    proxy_server_connections(srv));
	proxy_server_drain(srv, drained_cb, NULL);
	/* Logged once the listeners are closed: tests rely on the order. */
	log_info("no longer accepting");
}

/* Many tunnels need many descriptors: take the hard limit. */
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

static int
lookup_user(const char *name, uid_t *uid, gid_t *gid)
{
	struct passwd *pw;

	errno = 0;
	pw = getpwnam(name);
	if (pw == NULL)
		return errno != 0 ? -errno : -ENOENT;
	*uid = pw->pw_uid;
	*gid = pw->pw_gid;
	return 0;
}

static void
drop_privileges(const char *name)
{
	uid_t uid;
	gid_t gid;

	if (lookup_user(name, &uid, &gid) != 0)
		fatalx("--user %s: no such user", name);
	/* Already that user (e.g. a service manager started us as it). */
	if (getuid() == uid && geteuid() == uid && getgid() == gid &&
	    getegid() == gid) {
		log_info("running as %s (uid %u) already", name, (unsigned)uid);
		return;
	}
	if (setgroups(1, &gid) != 0)
		fatal("setgroups");
	if (setgid(gid) != 0)
		fatal("setgid");
	if (setuid(uid) != 0)
		fatal("setuid");
	if (uid != 0 && setuid(0) == 0)
		fatalx("could regain root after dropping privileges");
	log_info("running as %s (uid %u, gid %u)", name, (unsigned)uid,
	    (unsigned)gid);
}

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

/* --make-ca DIR: the CA once, the bundle every time. */
static int
make_ca(void)
{
	char err[512];
	bool created = false, changed = false;
	int rc;

	rc = proxy_ca_make(cfg.make_ca, cfg.ca_roots != NULL ? cfg.ca_roots :
	    PROXY_CA_ROOTS, &created, &changed, err, sizeof(err));
	if (rc != 0) {
		log_warnx("--make-ca: %s", err);
		return 1;
	}
	log_info("%s the egress CA in %s (%s, %s), bundle %s %s", created ?
	    "made" : "kept", cfg.make_ca, PROXY_CA_KEY, PROXY_CA_CERT,
	    PROXY_CA_BUNDLE, changed ? "written" : "unchanged");
	/* One word on stdout for `cordon net up`'s list of changes. */
	printf("%s\n", created ? "made" : changed ? "bundle" : "kept");
	return 0;
}

/* TLS inspection's CA and contexts, loaded while still root. */
static int
load_tls(void)
{
	struct proxy_ca *ca = NULL;
	char err[512];

	if (cfg.ca_cert == NULL)
		return 0;
	if (proxy_ca_load(cfg.ca_cert, cfg.ca_key, PROXY_CA_CACHE_MAX, &ca,
	    err, sizeof(err)) != 0 || proxy_tls_new(ca, cfg.upstream_ca, &tls,
	    err, sizeof(err)) != 0) {
		log_warnx("TLS inspection: %s", err);
		return -EINVAL;
	}
	return 0;
}

/* Options, the allowlist, --user, --help and --check. Returns -1 to go
 * on with *set, or the exit status. */
static int
startup(int argc, char **argv, struct allowlist_set **set)
{
	char err[256], text[512];
	uid_t uid;
	gid_t gid;

	log_init("cordon-proxy", LOG_LEVEL_INFO);
	proxy_config_init(&cfg);
	if (proxy_config_parse(&cfg, argc, argv, err, sizeof(err)) != 0) {
		log_warnx("%s", err);
		fputs(proxy_config_usage(), stderr);
		return 1;
	}
	if (cfg.help) {
		fputs(proxy_config_usage(), stdout);
		return 0;
	}
	log_set_level((enum log_level)cfg.log_level);
	if (cfg.make_ca != NULL)
		return make_ca();
	if (cfg.no_sni_check)
		log_warnx("--insecure-no-sni-check: SNI check is off: tunnels "
		    "no longer compare the TLS server_name with the CONNECT "
		    "host (domain fronting passes)");
	if (load_allowlist(set) != 0)
		return 1;
	if (cfg.user != NULL && lookup_user(cfg.user, &uid, &gid) != 0) {
		log_warnx("--user %s: no such user", cfg.user);
		allowlist_set_free(*set);
		return 1;
	}
	if (load_tls() != 0) {
		allowlist_set_free(*set);
		return 1;
	}
	if (cfg.check) {
		describe_set(*set, text, sizeof(text));
		log_info("configuration OK: %s%s", text, tls != NULL ?
		    "; TLS inspection on" : "");
		allowlist_set_free(*set);
		proxy_tls_free(tls);
		return 0;
	}
	return -1;
}

/* The loop, with epoll's changelist: it folds the add/del pairs of one
 * callback (connection hand-overs) into at most one epoll_ctl. We never
 * dup() sockets, which is its one caveat. */
static struct event_base *
loop_new(void)
{
	struct event_config *ec = event_config_new();
	struct event_base *b;

	if (ec != NULL)
		event_config_set_flag(ec, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
	b = ec != NULL ? event_base_new_with_config(ec) : NULL;
	if (ec != NULL)
		event_config_free(ec);
	if (b == NULL)
		b = event_base_new();
	if (b == NULL)
		fatalx("event_base_new failed");
	return b;
}

/* Resolver, access log, metrics and listeners: everything that may need
 * privileges. Fatal on failure. */
static void
daemon_open(struct dns **dns)
{
	char text[64];
	int rc;

	rc = proxy_dns_new(base, cfg.resolvers[0] != '\0' ? cfg.resolvers :
	    NULL, cfg.dns_timeout_ms, dns);
	if (rc != 0)
		fatalx("resolver setup failed (%s)", strerror(-rc));
	if (cfg.access_log != NULL &&
	    (rc = proxy_accesslog_open(cfg.access_log, &alog)) != 0)
		fatalx("--access-log %s: %s", cfg.access_log, strerror(-rc));
	if (cfg.access_log_max > 0 && (rc = proxy_accesslog_set_rotate(alog,
	    cfg.access_log_max, cfg.access_log_keep)) != 0)
		fatalx("--access-log-max: %s", strerror(-rc));
	if (proxy_metrics_new(&metrics) != 0)
		fatalx("out of memory");
	if (proxy_server_new(&cfg, base, *dns, alog, metrics, &srv) != 0)
		fatalx("cannot listen");
	if (!cfg.has_metrics)
		return;
	rc = proxy_metrics_serve(metrics, base, &cfg.metrics.ss,
	    cfg.metrics.len);
	if (rc != 0)
		fatalx("--metrics: %s", strerror(-rc));
	if (proxy_server_add_self(srv, (struct sockaddr *)&cfg.metrics.ss) != 0)
		fatalx("out of memory");
	format_addr(&cfg.metrics.ss, text, sizeof(text));
	log_info("metrics on %s", text);
}

/* Run mode: the control socket, bound while still root. */
static void
control_open(void)
{
	if (cfg.control == NULL)
		return;
	if (proxy_ctlsrv_new(srv, base, cfg.control, &ctlsrv) != 0)
		fatalx("cannot open the control socket");
	log_info("run mode: control socket %s", cfg.control);
}

#define NSIGNALS 4

/* SIGHUP, SIGTERM, SIGINT, SIGUSR1 and the grace timer, on the loop. */
static void
signals_add(struct event *ev[NSIGNALS])
{
	ev[0] = evsignal_new(base, SIGHUP, sighup_cb, NULL);
	ev[1] = evsignal_new(base, SIGTERM, sigterm_cb, NULL);
	ev[2] = evsignal_new(base, SIGINT, sigterm_cb, NULL);
	ev[3] = evsignal_new(base, SIGUSR1, sigusr1_cb, NULL);
	grace_timer = evtimer_new(base, grace_cb, NULL);
	if (grace_timer == NULL)
		fatalx("signal setup failed");
	for (int i = 0; i < NSIGNALS; i++)
		if (ev[i] == NULL || event_add(ev[i], NULL) != 0)
			fatalx("signal setup failed");
}

static void
log_listening(void)
{
	struct sockaddr_storage ss;
	socklen_t len;
	char text[64];

	for (size_t i = 0; i < cfg.nlisten; i++) {
		if (proxy_server_listen_addr(srv, i, &ss, &len) == 0) {
			format_addr(&ss, text, sizeof(text));
			/* Tests and supervisors wait for this exact line. */
			log_info("listening on %s", text);
		}
	}
}

int
main(int argc, char **argv)
{
	struct event *ev[NSIGNALS] = { NULL };
	struct allowlist_set *set = NULL;
	struct dns *dns = NULL;
	int rc;

	rc = startup(argc, argv, &set);
	if (rc >= 0)
		return rc;
	signal(SIGPIPE, SIG_IGN);
	raise_nofile();
	if (ares_library_init(ARES_LIB_INIT_ALL) != ARES_SUCCESS)
		fatalx("c-ares initialisation failed");
	base = loop_new();
	daemon_open(&dns);
	control_open();
	if (cfg.user != NULL)
		drop_privileges(cfg.user);

	proxy_server_set_allowlist(srv, set);
	proxy_server_set_tls(srv, tls);
	if (tls != NULL)
		log_info("TLS inspection on (CA %s)", cfg.ca_cert);
	signals_add(ev);
	if (proxy_server_start(srv) != 0)
		fatalx("cannot accept");
	log_listening();

	event_base_dispatch(base);

	proxy_ctlsrv_free(ctlsrv);
	proxy_server_free(srv);
	proxy_tls_free(tls);
	proxy_dns_free(dns);
	proxy_metrics_free(metrics);
	proxy_accesslog_free(alog);
	for (int i = 0; i < NSIGNALS; i++)
		event_free(ev[i]);
	event_free(grace_timer);
	event_base_free(base);
	ares_library_cleanup();
	return 0;
}
