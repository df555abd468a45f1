/*
 * cordon-proxy's network child (privilege separation): the process that
 * accepts sandboxes' connections and parses every byte they send. It is
 * exec'd by the parent (parent.c) with the listeners the parent bound, and
 * before it reads a byte of the network it reads what it needs from the
 * filesystem (resolver configuration, public suffix data, upstream roots),
 * enters an empty root, becomes the unprivileged user and sets
 * no_new_privs. It never sees the CA key or the secrets store: the parent
 * sends it the checked policy texts, its run registrations, leaves signed
 * for its own key, and a secret's value only for the request it goes into.
 */
#include "proxy/daemon.h"

#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ares.h>
#include <cjson/cJSON.h>
#include <event2/event.h>
#include <openssl/ssl.h>

#include "allowlist/allowlist.h"
#include "common/log.h"
#include "common/util.h"
#include "proxy/accesslog.h"
#include "proxy/ca.h"
#include "proxy/config.h"
#include "proxy/conn.h"
#include "proxy/ctl.h"
#include "proxy/dns.h"
#include "proxy/egress.h"
#include "proxy/imsg.h"
#include "proxy/metrics.h"
#include "proxy/psep.h"
#include "proxy/psmsg.h"
#include "proxy/runs.h"
#include "proxy/server.h"
#include "proxy/tls.h"

/* What the parent passed at exec. */
struct child_spec {
	int chan;		/* the SOCK_SEQPACKET to the parent */
	int alog;		/* the access log, or -1: none */
	uint64_t alog_size;
	int metrics;		/* the metrics listener, or -1 */
	int tfd, dnsu, dnst;	/* transparent, resolver (UDP, TCP); -1 */
	int lfd[CONFIG_MAX_LISTEN];
	size_t nlfd;
	long uid, gid;		/* -1: keep */
	char root[256];		/* "" : no chroot */
};

static struct proxy_config cfg;
static struct event_base *base;
static struct proxy_server *srv;
static struct accesslog *alog;
static struct proxy_metrics *metrics;
static struct proxy_tls *tls;
static struct dns *dns;
static struct proxy_chan *chan;
static struct proxy_psep *psep;
static struct event *grace_timer;
static bool draining, started;
static pid_t parent_pid;

/* --- the spec --------------------------------------------------------- */

static int
spec_num(const char *v, long lo, long hi, long *out)
{
	int64_t x;

	if (util_parse_i64(v, lo, hi, &x) != 0)
		return -EINVAL;
	*out = (long)x;
	return 0;
}

/* "chan=3;alog=4:SIZE;metrics=-1;listen=5,6;uid=65534;gid=65534;root=P" */
static int
spec_parse(const char *text, struct child_spec *sp)
{
	char *copy = strdup(text), *save = NULL, *kv;
	long v = 0;
	int rc = 0;

	memset(sp, 0, sizeof(*sp));
	sp->chan = sp->alog = sp->metrics = -1;
	sp->tfd = sp->dnsu = sp->dnst = -1;
	sp->uid = sp->gid = -1;
	if (copy == NULL)
		return -ENOMEM;
	for (kv = strtok_r(copy, ";", &save); kv != NULL && rc == 0;
	    kv = strtok_r(NULL, ";", &save)) {
		char *eq = strchr(kv, '='), *val;
		if (eq == NULL) {
			rc = -EINVAL;
			break;
		}
		*eq = '\0';
		val = eq + 1;
		if (strcmp(kv, "chan") == 0)
			rc = spec_num(val, 3, 1 << 20, &v), sp->chan = (int)v;
		else if (strcmp(kv, "alog") == 0) {
			char *colon = strchr(val, ':');
			int64_t size = 0;
			if (colon != NULL) {
				*colon = '\0';
				rc = util_parse_i64(colon + 1, 0, INT64_MAX,
				    &size);
			}
			if (rc == 0)
				rc = spec_num(val, -1, 1 << 20, &v);
			sp->alog = (int)v;
			sp->alog_size = (uint64_t)size;
		} else if (strcmp(kv, "metrics") == 0)
			rc = spec_num(val, -1, 1 << 20, &v), sp->metrics = (int)v;
		else if (strcmp(kv, "listen") == 0) {
			char *s2 = NULL, *f;
			for (f = strtok_r(val, ",", &s2); f != NULL && rc == 0;
			    f = strtok_r(NULL, ",", &s2)) {
				if (sp->nlfd >= CONFIG_MAX_LISTEN ||
				    (rc = spec_num(f, 3, 1 << 20, &v)) != 0) {
					rc = -EINVAL;
					break;
				}
				sp->lfd[sp->nlfd++] = (int)v;
			}
		} else if (strcmp(kv, "transparent") == 0)
			rc = spec_num(val, -1, 1 << 20, &v), sp->tfd = (int)v;
		else if (strcmp(kv, "dnsu") == 0)
			rc = spec_num(val, -1, 1 << 20, &v), sp->dnsu = (int)v;
		else if (strcmp(kv, "dnst") == 0)
			rc = spec_num(val, -1, 1 << 20, &v), sp->dnst = (int)v;
		else if (strcmp(kv, "uid") == 0)
			rc = spec_num(val, -1, 0x7fffffff, &sp->uid);
		else if (strcmp(kv, "gid") == 0)
			rc = spec_num(val, -1, 0x7fffffff, &sp->gid);
		else if (strcmp(kv, "root") == 0) {
			if (strlen(val) >= sizeof(sp->root))
				rc = -EINVAL;
			else
				snprintf(sp->root, sizeof(sp->root), "%s", val);
		} else
			rc = -EINVAL;
	}
	free(copy);
	if (rc == 0 && sp->chan < 0)
		rc = -EINVAL;
	return rc;
}

/* --- confinement -------------------------------------------------------- */

#if defined(__SANITIZE_ADDRESS__)
#define CHILD_ASAN	1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CHILD_ASAN	1
#endif
#endif

#ifdef CHILD_ASAN
/* AddressSanitizer builds only: LeakSanitizer reads /proc at exit, which
 * an empty root lacks. A procfs of the child's own (private mount
 * namespace, hidepid=invisible: no other user's processes) on ROOT/proc
 * (an empty directory made once). Release builds mount nothing. */
static void
child_asan_proc(const char *root)
{
	char path[300];

	snprintf(path, sizeof(path), "%s/proc", root);
	if (unshare(CLONE_NEWNS) != 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
	    (mkdir(path, 0555) != 0 && errno != EEXIST) ||
	    mount("proc", path, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
	    "hidepid=invisible") != 0)
		log_warn("ASan build: no /proc in the network child's root "
		    "(LeakSanitizer will fail at exit)");
}
#endif

/* The empty root, the user, no_new_privs; and death with the parent. */
static void
child_confine(const struct child_spec *sp)
{
#ifdef CHILD_ASAN
	if (sp->root[0] != '\0')
		child_asan_proc(sp->root);
#endif
	if (sp->root[0] != '\0' && (chroot(sp->root) != 0 || chdir("/") != 0))
		fatal("chroot %s", sp->root);
	if (sp->gid >= 0) {
		gid_t g = (gid_t)sp->gid;
		if (setgroups(1, &g) != 0 || setgid(g) != 0)
			fatal("setgid %ld", sp->gid);
	}
	if (sp->uid >= 0 && setuid((uid_t)sp->uid) != 0)
		fatal("setuid %ld", sp->uid);
	if (sp->uid > 0 && setuid(0) == 0)
		fatalx("could regain root after dropping privileges");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		fatal("no_new_privs");
	/* Changing credentials cleared it: die with the parent again (and
	 * if it is gone already, now). */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 ||
	    getppid() != parent_pid)
		fatalx("the parent is gone");
	log_info("network child: uid %ld, gid %ld, root %s, no_new_privs",
	    (long)getuid(), (long)getgid(), sp->root[0] ? sp->root :
	    "(unchanged: not root)");
}

/* --- messages from the parent ------------------------------------------ */

static void
child_send(uint32_t type, uint64_t id, const char *text)
{
	int rc = proxy_chan_send(chan, type, id, text, text != NULL ?
	    strlen(text) : 0, -1);

	if (rc != 0) {
		errno = -rc;
		log_warn("to the parent");
	}
}

static void
child_init(const struct proxy_imsg *m)
{
	cJSON *o = cJSON_ParseWithLength(m->data, m->len);
	const cJSON *pem = cJSON_GetObjectItemCaseSensitive(o, "ca_cert");
	struct proxy_ca *ca = NULL;
	char err[256];

	if (cJSON_IsString(pem) && tls != NULL) {
		if (proxy_ca_load_public(pem->valuestring,
		    strlen(pem->valuestring), PROXY_CA_CACHE_MAX, &ca, err,
		    sizeof(err)) != 0)
			fatalx("TLS inspection: %s", err);
		proxy_tls_set_ca(tls, ca);
		proxy_server_set_tls(srv, tls);
	}
	cJSON_Delete(o);
}

/* A new policy generation: the texts the parent checked, parsed again
 * here without the secrets' values. */
static void
child_gen(const struct proxy_imsg *m)
{
	struct allowlist_load_opts opts = { .secrets_unverified = true };
	struct allowlist_source *src = NULL;
	struct allowlist_diag diag;
	struct allowlist_set *set = NULL;
	cJSON *o = cJSON_ParseWithLength(m->data, m->len), *p;
	const cJSON *gen = cJSON_GetObjectItemCaseSensitive(o, "gen");
	const cJSON *pols = cJSON_GetObjectItemCaseSensitive(o, "policies");
	size_t n = 0;
	char *ack;
	int rc;

	if (!cJSON_IsNumber(gen) || !cJSON_IsArray(pols))
		fatalx("the parent sent a malformed policy generation");
	src = calloc((size_t)cJSON_GetArraySize(pols) + 1, sizeof(*src));
	if (src == NULL)
		fatalx("out of memory");
	cJSON_ArrayForEach(p, pols) {
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(p, "name");
		const cJSON *file = cJSON_GetObjectItemCaseSensitive(p, "file");
		const cJSON *text = cJSON_GetObjectItemCaseSensitive(p, "text");
		if (!cJSON_IsString(name) || !cJSON_IsString(file) ||
		    !cJSON_IsString(text))
			fatalx("the parent sent a malformed policy");
		src[n].name = name->valuestring;
		src[n].file = file->valuestring;
		src[n].text = text->valuestring;
		src[n].len = strlen(text->valuestring);
		n++;
	}
	allowlist_diag_init(&diag);
	rc = allowlist_set_parse_many(src, n, &opts, &set, &diag);
	for (size_t i = 0; rc != 0 && i < diag.count; i++)
		log_warnx("%s", diag.items[i].text);
	allowlist_diag_cleanup(&diag);
	free(src);
	if (rc != 0)
		fatalx("the parent's policies do not load here (%s)",
		    strerror(-rc));
	proxy_server_set_allowlist(srv, set);
	ack = proxy_psmsg_gen_ack_encode((uint64_t)gen->valuedouble);
	if (ack == NULL)
		fatalx("out of memory");
	child_send(PSMSG_GEN_ACK, 0, ack);
	free(ack);
	cJSON_Delete(o);
	if (!started) {
		if (proxy_server_start(srv) != 0)
			fatalx("cannot accept");
		started = true;
		child_send(PSMSG_READY, 0, "{}");
	}
}

static void
child_run_add(const struct proxy_imsg *m)
{
	struct proxy_ctl_req req;
	char err[256], *answer;

	if (proxy_ctl_parse(m->data, m->len, &req, err, sizeof(err)) != 0) {
		answer = proxy_ctl_error(err);
	} else {
		answer = proxy_server_run_add(srv, &req);
		explicit_bzero(req.token, sizeof(req.token));
	}
	child_send(PSMSG_RUN_ACK, m->id, answer != NULL ? answer :
	    "{\"ok\":false,\"error\":\"out of memory\"}\n");
	free(answer);
}

/* A live run's new policy: the child judges its open connections. */
static void
child_run_policy(const struct proxy_imsg *m)
{
	struct proxy_ctl_req req;
	char err[256], *answer;

	if (proxy_ctl_parse(m->data, m->len, &req, err, sizeof(err)) != 0 ||
	    req.op != PROXY_CTL_POLICY)
		answer = proxy_ctl_error(err[0] != '\0' ? err : "not a policy "
		    "request");
	else
		answer = proxy_server_run_policy(srv, &req);
	child_send(PSMSG_POLICY_ACK, m->id, answer != NULL ? answer :
	    "{\"ok\":false,\"error\":\"out of memory\"}\n");
	free(answer);
}

static void
child_run_del(const struct proxy_imsg *m)
{
	cJSON *o = cJSON_ParseWithLength(m->data, m->len);
	const cJSON *run = cJSON_GetObjectItemCaseSensitive(o, "run");
	const cJSON *forget = cJSON_GetObjectItemCaseSensitive(o, "forget");
	char *answer = NULL;

	if (cJSON_IsString(run) && cJSON_IsBool(forget))
		answer = proxy_server_run_report(srv, run->valuestring,
		    cJSON_IsTrue(forget));
	cJSON_Delete(o);
	child_send(PSMSG_REPORT, m->id, answer != NULL ? answer :
	    "{\"ok\":false,\"error\":\"out of memory\"}\n");
	free(answer);
}

static void
drained_cb(void *arg)
{
	(void)arg;
	log_info("network child drained: exiting");
	event_base_loopexit(base, NULL);
}

static void
child_drain(void)
{
	if (draining)
		return;
	draining = true;
	proxy_server_drain(srv, drained_cb, NULL);
	/* Logged once the listeners are closed: tests rely on the order. */
	log_info("no longer accepting");
}

static void
child_msg(void *arg, const struct proxy_imsg *m)
{
	(void)arg;
	if (m == NULL) {
		/* The parent is gone (PDEATHSIG will follow): stop. */
		log_warnx("network child: the parent closed the channel");
		_exit(1);
	}
	switch (m->type) {
	case PSMSG_INIT:
		child_init(m);
		break;
	case PSMSG_GEN:
		child_gen(m);
		break;
	case PSMSG_RUN_ADD:
		child_run_add(m);
		break;
	case PSMSG_RUN_DEL:
		child_run_del(m);
		break;
	case PSMSG_RUN_POLICY:
		child_run_policy(m);
		break;
	case PSMSG_LEAF:
	case PSMSG_SECRET:
	case PSMSG_NO_SECRET:
		(void)proxy_psep_answer(psep, m);
		break;
	case PSMSG_ALOG_FD:
		if (m->fd >= 0 && alog != NULL) {
			cJSON *o = cJSON_ParseWithLength(m->data, m->len);
			const cJSON *sz = cJSON_GetObjectItemCaseSensitive(o,
			    "size");
			proxy_accesslog_replace(alog, m->fd, cJSON_IsNumber(sz) ?
			    (uint64_t)sz->valuedouble : 0);
			cJSON_Delete(o);
			return;
		}
		break;
	case PSMSG_DRAIN:
		child_drain();
		break;
	case PSMSG_REFRESH:
		(void)proxy_server_refresh_self(srv);
		break;
	default:
		log_warnx("network child: unknown message %u from the parent",
		    m->type);
		break;
	}
	if (m->fd >= 0)
		close(m->fd);
}

static void
child_ask_rotate(void *arg)
{
	(void)arg;
	child_send(PSMSG_ROTATE, 0, "{}");
}

/* SIGTERM/SIGINT straight to the child (a process-group kill): as the
 * parent's DRAIN. */
static void
child_sigterm_cb(evutil_socket_t sig, short what, void *arg)
{
	(void)sig;
	(void)what;
	(void)arg;
	child_drain();
}

static struct event_base *
child_loop_new(void)
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

int
proxy_child_main(int argc, char **argv)
{
	struct child_spec sp;
	struct event *sig[2];
	char err[256];
	int rc;

	log_init("cordon-proxy", LOG_LEVEL_INFO);
	parent_pid = getppid();
	if (argc < 3 || spec_parse(argv[2], &sp) != 0)
		fatalx("network child: bad spec");
	/* The parent's own command line follows the spec. */
	argv[2] = argv[0];
	proxy_config_init(&cfg);
	if (proxy_config_parse(&cfg, argc - 2, argv + 2, err, sizeof(err)) != 0)
		fatalx("network child: %s", err);
	log_set_level((enum log_level)cfg.log_level);
	for (size_t i = 0; i < cfg.nlisten && i < sp.nlfd; i++)
		cfg.listen_fd[i] = sp.lfd[i];
	if (sp.nlfd != cfg.nlisten)
		fatalx("network child: %zu listeners for %zu --listen", sp.nlfd,
		    cfg.nlisten);
	cfg.transparent_fd = sp.tfd;
	cfg.dns_udp_fd = sp.dnsu;
	cfg.dns_tcp_fd = sp.dnst;
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGUSR1, SIG_IGN);
	if (ares_library_init(ARES_LIB_INIT_ALL) != ARES_SUCCESS)
		fatalx("c-ares initialisation failed");
	base = child_loop_new();
	/* Everything that reads the filesystem, before the empty root. */
	allowlist_preload();
	OPENSSL_init_ssl(0, NULL);
	if (cfg.ca_cert != NULL && proxy_tls_new(NULL, cfg.upstream_ca, &tls,
	    err, sizeof(err)) != 0)
		fatalx("TLS inspection: %s", err);
	if ((rc = proxy_dns_new(base, cfg.resolvers[0] != '\0' ? cfg.resolvers :
	    NULL, cfg.dns_timeout_ms, &dns)) != 0)
		fatalx("resolver setup failed (%s)", strerror(-rc));
	if (sp.alog >= 0 && proxy_accesslog_adopt(sp.alog, sp.alog_size,
	    cfg.access_log_max, cfg.access_log_max > 0 ? child_ask_rotate :
	    NULL, NULL, &alog) != 0)
		fatalx("out of memory");
	if (proxy_metrics_new(&metrics) != 0)
		fatalx("out of memory");
	if (proxy_server_new(&cfg, base, dns, alog, metrics, &srv) != 0)
		fatalx("cannot listen");
	if (sp.metrics >= 0) {
		if (proxy_metrics_serve_fd(metrics, base, sp.metrics) != 0)
			fatalx("--metrics: out of memory");
		if (proxy_server_add_self(srv, (struct sockaddr *)
		    &cfg.metrics.ss) != 0)
			fatalx("out of memory");
	}
	if (proxy_chan_new(base, sp.chan, child_msg, NULL, &chan) != 0 ||
	    proxy_psep_new(chan, &psep) != 0)
		fatalx("out of memory");
	proxy_server_set_psep(srv, psep);
	child_confine(&sp);
	sig[0] = evsignal_new(base, SIGTERM, child_sigterm_cb, NULL);
	sig[1] = evsignal_new(base, SIGINT, child_sigterm_cb, NULL);
	for (int i = 0; i < 2; i++)
		if (sig[i] == NULL || event_add(sig[i], NULL) != 0)
			fatalx("signal setup failed");
	(void)grace_timer;

	event_base_dispatch(base);

	proxy_server_free(srv);
	proxy_psep_free(psep);
	proxy_chan_free(chan);
	proxy_tls_free(tls);
	proxy_dns_free(dns);
	proxy_metrics_free(metrics);
	proxy_accesslog_free(alog);
	for (int i = 0; i < 2; i++)
		event_free(sig[i]);
	event_base_free(base);
	ares_library_cleanup();
	return 0;
}
