/*
 * The proxy as `net up` starts it: its argv (recorded in net.json, so a
 * changed configuration restarts it), its environment, a `--check` of the
 * configuration first, then the supervisor (a systemd unit where systemd
 * runs, else the pid-file supervisor), and a wait until it listens.
 */
#include "netsetup/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"

#define PROXY_WAIT_MS 8000

/* Appends a string to a JSON array: 0 or -ENOMEM (a is unchanged). */
static int
argv_add(cJSON *a, const char *s)
{
	cJSON *v = cJSON_CreateString(s);

	if (v == NULL)
		return -ENOMEM;
	if (!cJSON_AddItemToArray(a, v)) {
		cJSON_Delete(v);
		return -ENOMEM;
	}
	return 0;
}

int
netsetup_proxy_argv(const struct netsetup_params *p,
    const struct netsetup_up_opts *o, cJSON **out)
{
	char listen[40], control[NETSETUP_CONTROL_MAX], cert[340], key[340],
	    pending[16], state[400], tlisten[40], dlisten[40], alog[400],
	    amax[24], akeep[16];
	cJSON *a;
	int rc;

	*out = NULL;
	if (o->proxy_bin == NULL || o->allowlist == NULL ||
	    (o->nproxy_args > 0 && o->proxy_args == NULL) ||
	    netsetup_control_path(p, control, sizeof(control)) < 0)
		return -EINVAL;
	if ((a = cJSON_CreateArray()) == NULL)
		return -ENOMEM;
	snprintf(listen, sizeof(listen), "%s:%d", p->gateway, p->port);
	snprintf(tlisten, sizeof(tlisten), "%s:%d", p->gateway, p->tport);
	snprintf(dlisten, sizeof(dlisten), "%s:%d", p->gateway, p->dns_port);
	snprintf(cert, sizeof(cert), "%s/ca.crt", p->ca_dir);
	snprintf(key, sizeof(key), "%s/ca.key", p->ca_dir);
	snprintf(pending, sizeof(pending), "%d", o->source_max_pending);
	netsetup_state_path(p, "proxy-runs.state", state, sizeof(state));
	/* The access log in a file of its own (replay and suggest read it),
	 * rotated by the proxy itself. */
	if (o->access_log != NULL)
		snprintf(alog, sizeof(alog), "%s", o->access_log);
	else
		netsetup_state_path(p, "access.log", alog, sizeof(alog));
	snprintf(amax, sizeof(amax), "%llu",
	    (unsigned long long)o->access_log_max);
	snprintf(akeep, sizeof(akeep), "%d", o->access_log_keep > 0 ?
	    o->access_log_keep : 5);
	/* The proxy binds (all three listeners: its parent, as root, for
	 * port 53) and loads its allowlist first, then drops to the proxy
	 * user itself: neither file needs to be readable by it. */
	if ((rc = argv_add(a, o->proxy_bin)) < 0 ||
	    (rc = argv_add(a, "--listen")) < 0 ||
	    (rc = argv_add(a, listen)) < 0 ||
	    /* Where the host's nat rules send every other TCP connection
	     * and every DNS query of a sandbox (fw.c). */
	    (rc = argv_add(a, "--transparent")) < 0 ||
	    (rc = argv_add(a, tlisten)) < 0 ||
	    (rc = argv_add(a, "--dns-listen")) < 0 ||
	    (rc = argv_add(a, dlisten)) < 0 ||
	    (rc = argv_add(a, "--allowlist")) < 0 ||
	    (rc = argv_add(a, o->allowlist)) < 0 ||
	    (rc = argv_add(a, "--access-log")) < 0 ||
	    (rc = argv_add(a, alog)) < 0 ||
	    (o->access_log_max > 0 && ((rc = argv_add(a,
	    "--access-log-max")) < 0 || (rc = argv_add(a, amax)) < 0 ||
	    (rc = argv_add(a, "--access-log-keep")) < 0 ||
	    (rc = argv_add(a, akeep)) < 0)) ||
	    (rc = argv_add(a, "--control")) < 0 ||
	    (rc = argv_add(a, control)) < 0 ||
	    /* The run registry, for a restarted proxy (root only). */
	    (rc = argv_add(a, "--state")) < 0 ||
	    (rc = argv_add(a, state)) < 0 ||
	    (rc = argv_add(a, "--user")) < 0 ||
	    (rc = argv_add(a, p->proxy_user)) < 0 ||
	    /* TLS inspection: the egress CA (netsetup_proxy_up makes it)
	     * and the secrets that inject= options name. */
	    (rc = argv_add(a, "--ca-cert")) < 0 ||
	    (rc = argv_add(a, cert)) < 0 ||
	    (rc = argv_add(a, "--ca-key")) < 0 ||
	    (rc = argv_add(a, key)) < 0 ||
	    /* Fairness before the credential (per sandbox address). */
	    (rc = argv_add(a, "--source-max-pending")) < 0 ||
	    (rc = argv_add(a, pending)) < 0 ||
	    (o->secrets != NULL && ((rc = argv_add(a, "--secrets")) < 0 ||
	    (rc = argv_add(a, o->secrets)) < 0)))
		goto bad;
	for (size_t i = 0; i < o->nproxy_args; i++)
		if ((rc = argv_add(a, o->proxy_args[i])) < 0)
			goto bad;
	*out = a;
	return 0;
bad:
	cJSON_Delete(a);
	return rc;
}

/* argv pointers into a JSON array of strings; caller frees the array. */
static const char **
argv_from_json(const cJSON *a, const char *extra)
{
	int n = cJSON_GetArraySize(a), i = 0;
	const char **v = calloc((size_t)n + 2, sizeof(*v));
	const cJSON *s;

	if (v == NULL)
		return NULL;
	cJSON_ArrayForEach(s, a)
		v[i++] = cJSON_IsString(s) ? s->valuestring : "";
	if (extra != NULL)
		v[i++] = extra;
	v[i] = NULL;
	return v;
}

static void
log_tail(const struct netsetup_params *p, char *buf, size_t len)
{
	char path[400], *text = NULL;
	size_t n = 0;
	const char *s;

	buf[0] = '\0';
	netsetup_state_path(p, "proxy.log", path, sizeof(path));
	if (util_read_file(path, 4u << 20, &text, &n) < 0)
		return;
	while (n > 0 && text[n - 1] == '\n')
		text[--n] = '\0';
	s = n > 300 ? text + n - 300 : text;
	snprintf(buf, len, "%s", s);
	for (char *c = buf; *c; c++)
		if (*c == '\n')
			*c = '|';
	free(text);
}

/* The proxy's environment: a fixed PATH and the sanitizer options (for
 * instrumented builds), nothing else of the caller's. */
static void
proxy_env(const char **env, char buf[4][512])
{
	static const char *const keep[] = {
		"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS",
	};
	size_t n = 0;

	env[n++] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:"
	    "/sbin:/bin";
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
		const char *v = getenv(keep[i]);
		if (v != NULL && (size_t)snprintf(buf[i], 512, "%s=%s",
		    keep[i], v) < 512)
			env[n++] = buf[i];
	}
	env[n] = NULL;
}

/* Stops what must not stay: a pid-file supervisor running another
 * configuration (or any, under systemd) and a proxy left without its
 * supervisor. 1 when the right one already runs, 0 to start one, or a
 * negative errno. */
static int
proxy_stop_old(const cJSON *recorded, const cJSON *want, bool systemd,
    const char *pidp, const char *cpidp, struct cbuf *changes, char *err,
    size_t errlen)
{
	pid_t sup = 0;
	int rc;

	if (!systemd && nssuper_alive(pidp, &sup) == 0) {
		if (recorded != NULL && cJSON_Compare(recorded, want, true))
			return 1;
		if ((rc = nssuper_stop(pidp, cpidp, 10000)) < 0 &&
		    rc != -ESRCH) {
			snprintf(err, errlen, "cannot stop the old proxy");
			return rc;
		}
		netsetup_note(changes, "stopped proxy supervisor %ld "
		    "(configuration changed)", (long)sup);
	} else if (nssuper_stop(pidp, cpidp, 2000) == 0) {
		/* A proxy left without its supervisor would hold the port;
		 * under systemd, a pid-file supervisor is a leftover. */
		netsetup_note(changes, "stopped a leftover proxy");
	}
	return 0;
}

/* Runs the proxy with --check appended (argv has room for it). */
static int
proxy_check(const char **argv, size_t argc, const char *bin, char *err,
    size_t errlen)
{
	char why[300];
	int rc;

	argv[argc] = "--check";
	argv[argc + 1] = NULL;
	rc = netsetup_exec(argv, NULL, NULL, NULL, err, errlen);
	argv[argc] = NULL;
	if (rc == 0)
		return 0;
	snprintf(why, sizeof(why), "%s", err);
	snprintf(err, errlen, "%s --check refused the configuration: %s", bin,
	    why);
	return rc == -EIO ? -EINVAL : rc;
}

/* The egress CA, once (`cordon-proxy --make-ca`: the key-making stays
 * in the proxy, which links OpenSSL's TLS side; netsetup only runs it),
 * and its bundle, refreshed from the system roots every time. */
static int
proxy_make_ca(const struct netsetup_params *p, const char *bin,
    struct cbuf *changes, char *err, size_t errlen)
{
	const char *argv[] = { bin, "--make-ca", p->ca_dir, NULL };
	char why[300], *out = NULL;
	int rc;

	rc = netsetup_exec(argv, NULL, &out, NULL, err, errlen);
	if (rc < 0) {
		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "cannot make the egress CA in %s: %s",
		    p->ca_dir, why);
		free(out);
		return rc;
	}
	/* "made", "bundle" (the roots changed) or "kept": only changes are
	 * listed, so a second `net up` says nothing changed. */
	if (out != NULL && strncmp(out, "made", 4) == 0)
		netsetup_note(changes, "made the egress CA in %s", p->ca_dir);
	else if (out != NULL && strncmp(out, "bundle", 6) == 0)
		netsetup_note(changes, "rewrote %s/ca-bundle.pem (system roots "
		    "changed)", p->ca_dir);
	free(out);
	return 0;
}

/* True once the proxy's control socket exists. */
static bool
proxy_control_bound(const struct netsetup_params *p)
{
	char path[NETSETUP_CONTROL_MAX];
	struct stat st;

	return netsetup_control_path(p, path, sizeof(path)) == 0 &&
	    stat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

/* Whether the transparent listener and both DNS sockets are bound. */
static bool
proxy_others_bound(const struct netsetup_params *p)
{
	return nssuper_bound(p->gateway, p->tport, false) &&
	    nssuper_bound(p->gateway, p->dns_port, true) &&
	    nssuper_bound(p->gateway, p->dns_port, false);
}

/* Waits until the proxy accepts on gateway:port, its transparent and DNS
 * sockets are bound and its control socket is: the proxy listens first,
 * and a connect succeeds as soon as it does, so the port alone does not
 * mean a run can register yet (seen under load: `net up` returned before
 * control.sock existed). */
static int
proxy_wait(const struct netsetup_params *p, bool systemd, const char *pidp,
    const char *logp, char *err, size_t errlen)
{
	int64_t until = time_mono_ms() + PROXY_WAIT_MS;
	char tail[400];
	pid_t sup = 0;

	while (!nssuper_port_open(p->gateway, p->port, 200) ||
	    !proxy_others_bound(p) || !proxy_control_bound(p)) {
		if (time_mono_ms() >= until ||
		    (!systemd && nssuper_alive(pidp, &sup) < 0)) {
			log_tail(p, tail, sizeof(tail));
			snprintf(err, errlen, "the proxy is not listening on "
			    "%s:%d (transparent %d, DNS %d) with its control "
			    "socket (log %s: %s)", p->gateway, p->port, p->tport,
			    p->dns_port, logp, tail);
			return -ECONNREFUSED;
		}
		(void)usleep(100000);
	}
	return 0;
}

int
netsetup_proxy_up(const struct netsetup_params *p,
    const struct netsetup_up_opts *o, const cJSON *recorded,
    const cJSON *want, struct cbuf *changes, char *err, size_t errlen)
{
	char pidp[400], cpidp[400], logp[400], envbuf[4][512];
	const char **argv, *env[8];
	bool systemd = sdunit_booted();
	struct nssuper_spec spec;
	pid_t sup = 0;
	int rc;

	netsetup_state_path(p, "supervisor.pid", pidp, sizeof(pidp));
	netsetup_state_path(p, "proxy.pid", cpidp, sizeof(cpidp));
	netsetup_state_path(p, "proxy.log", logp, sizeof(logp));
	if ((rc = proxy_make_ca(p, o->proxy_bin, changes, err, errlen)) < 0)
		return rc;
	rc = proxy_stop_old(recorded, want, systemd, pidp, cpidp, changes, err,
	    errlen);
	if (rc < 0)
		return rc;
	if (rc == 1)
		return proxy_wait(p, systemd, pidp, logp, err, errlen);
	if ((argv = argv_from_json(want, NULL)) == NULL)
		return -ENOMEM;
	rc = proxy_check(argv, (size_t)cJSON_GetArraySize(want), o->proxy_bin,
	    err, errlen);
	if (rc < 0) {
		free(argv);
		return rc;
	}
	proxy_env(env, envbuf);
	spec = (struct nssuper_spec){ argv, env, p->proxy_user, logp, pidp,
	    cpidp };
	if (systemd) {
		rc = sdunit_start(p, &spec, changes, err, errlen);
		free(argv);
		return rc < 0 ? rc : proxy_wait(p, systemd, pidp, logp, err,
		    errlen);
	}
	rc = nssuper_start(&spec, &sup, err, errlen);
	free(argv);
	if (rc < 0)
		return rc;
	netsetup_note(changes, "started proxy supervisor %ld: cordon-proxy as "
	    "%s on %s:%d (transparent %d, DNS %d), allowlist %s, log %s",
	    (long)sup, p->proxy_user, p->gateway, p->port, p->tport,
	    p->dns_port, o->allowlist, logp);
	return proxy_wait(p, systemd, pidp, logp, err, errlen);
}
