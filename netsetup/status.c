/*
 * `cordon net status` as a library, and the runner's readiness check on
 * top of it: the Docker network, the firewall of both families (filter
 * and nat), the sandbox's resolv.conf and the proxy with its three
 * listeners as they are, with one drift line per problem. A status that could
 * not be built whole (ENOMEM) is an error, never a shorter drift list.
 */
#include "netsetup/internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/stat.h>

#include "common/util.h"

static int
status_network(const struct netsetup_params *p, cJSON *root, cJSON *drift)
{
	cJSON *o = cJSON_AddObjectToObject(root, "network"), *net = NULL;
	char why[512], err[256];
	int rc;

	if (o == NULL ||
	    cJSON_AddStringToObject(o, "name", p->network) == NULL ||
	    cJSON_AddStringToObject(o, "bridge", p->bridge) == NULL ||
	    cJSON_AddStringToObject(o, "subnet", p->subnet) == NULL ||
	    cJSON_AddStringToObject(o, "gateway", p->gateway) == NULL)
		return -ENOMEM;
	rc = dnet_inspect(p, &net, err, sizeof(err));
	if (cJSON_AddBoolToObject(o, "present", rc == 0) == NULL) {
		cJSON_Delete(net);
		return -ENOMEM;
	}
	if (rc == -ENOENT)
		return netsetup_drift(drift, "network missing");
	if (rc < 0)
		return netsetup_drift(drift, "network: cannot inspect: %s",
		    err);
	rc = 0;
	if (cJSON_AddBoolToObject(o, "created_by_cordon", dnet_ours(net)) ==
	    NULL || cJSON_AddNumberToObject(o, "containers",
	    dnet_containers(net)) == NULL)
		rc = -ENOMEM;
	else if (dnet_check(net, p, why, sizeof(why)) > 0)
		rc = cJSON_AddStringToObject(o, "wrong", why) == NULL ?
		    -ENOMEM : netsetup_drift(drift, "network wrong: %s", why);
	cJSON_Delete(net);
	return rc;
}

/* A pid, or null when not running. */
static int
add_pid(cJSON *o, const char *key, bool ok, pid_t pid)
{
	if (ok)
		return cJSON_AddNumberToObject(o, key, pid) != NULL ? 0 :
		    -ENOMEM;
	return cJSON_AddNullToObject(o, key) != NULL ? 0 : -ENOMEM;
}

/* The allowlist the last `up` recorded, if any. */
static int
add_allowlist(const struct netsetup_params *p, cJSON *o)
{
	cJSON *st = netsetup_state_read(p);
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(st, "allowlist");
	int rc = 0;

	char alog[PATH_MAX];

	if (cJSON_IsString(a) &&
	    cJSON_AddStringToObject(o, "allowlist", a->valuestring) == NULL)
		rc = -ENOMEM;
	cJSON_Delete(st);
	/* Where the access log is (replay and suggest read it). */
	if (rc == 0 && netsetup_proxy_access_log(p, alog, sizeof(alog)) == 0 &&
	    cJSON_AddStringToObject(o, "access_log", alog) == NULL)
		rc = -ENOMEM;
	return rc;
}

static int
status_proxy(const struct netsetup_params *p, cJSON *root, cJSON *drift)
{
	cJSON *o = cJSON_AddObjectToObject(root, "proxy");
	char pidp[400], cpidp[400], logp[400], listen[40], name[64] = "";
	char control[NETSETUP_CONTROL_MAX], tlisten[40], dlisten[40];
	pid_t sup = 0, child = 0;
	bool sd, sup_ok, child_ok, open_ok, ctl_ok, t_ok, d_ok;
	struct stat stt;
	int rc;

	if (o == NULL)
		return -ENOMEM;
	netsetup_state_path(p, "supervisor.pid", pidp, sizeof(pidp));
	netsetup_state_path(p, "proxy.pid", cpidp, sizeof(cpidp));
	netsetup_state_path(p, "proxy.log", logp, sizeof(logp));
	snprintf(listen, sizeof(listen), "%s:%d", p->gateway, p->port);
	snprintf(tlisten, sizeof(tlisten), "%s:%d", p->gateway, p->tport);
	snprintf(dlisten, sizeof(dlisten), "%s:%d", p->gateway, p->dns_port);
	if ((sd = sdunit_installed(p))) {
		sdunit_name(p, name, sizeof(name));
		sup_ok = sdunit_active(p);
		sup = 1;	/* systemd */
		child = sup_ok ? sdunit_main_pid(p) : 0;
		child_ok = child > 0;
	} else {
		sup_ok = nssuper_alive(pidp, &sup) == 0;
		child_ok = sup_ok && nssuper_child_alive(cpidp, &child) == 0;
	}
	open_ok = child_ok && nssuper_port_open(p->gateway, p->port, 1000);
	/* The transparent and DNS sockets as the kernel lists them: a
	 * connect from here would be a refused connection in the proxy's
	 * log on every run's readiness check. */
	t_ok = child_ok && nssuper_bound(p->gateway, p->tport, false);
	d_ok = child_ok && nssuper_bound(p->gateway, p->dns_port, true) &&
	    nssuper_bound(p->gateway, p->dns_port, false);
	/* Runs are registered there; a proxy without it (an older one)
	 * would let no proxy-mode run through. */
	ctl_ok = netsetup_control_path(p, control, sizeof(control)) == 0 &&
	    stat(control, &stt) == 0 && S_ISSOCK(stt.st_mode);
	if (cJSON_AddStringToObject(o, "supervisor", sd ? "systemd" :
	    "pid-file") == NULL ||
	    (sd && cJSON_AddStringToObject(o, "unit", name) == NULL) ||
	    cJSON_AddStringToObject(o, "listen", listen) == NULL ||
	    cJSON_AddStringToObject(o, "user", p->proxy_user) == NULL ||
	    add_pid(o, "supervisor_pid", sup_ok, sup) < 0 ||
	    add_pid(o, "proxy_pid", child_ok, child) < 0 ||
	    cJSON_AddBoolToObject(o, "listening", open_ok) == NULL ||
	    cJSON_AddStringToObject(o, "transparent", tlisten) == NULL ||
	    cJSON_AddBoolToObject(o, "transparent_listening", t_ok) == NULL ||
	    cJSON_AddStringToObject(o, "dns", dlisten) == NULL ||
	    cJSON_AddBoolToObject(o, "dns_listening", d_ok) == NULL ||
	    cJSON_AddStringToObject(o, "control", control) == NULL ||
	    cJSON_AddBoolToObject(o, "control_present", ctl_ok) == NULL ||
	    cJSON_AddStringToObject(o, "log", logp) == NULL ||
	    add_allowlist(p, o) < 0)
		return -ENOMEM;
	rc = 0;
	if (!sup_ok)
		rc = netsetup_drift(drift, "proxy supervisor not running");
	else if (!child_ok)
		rc = netsetup_drift(drift, "proxy dead (supervisor restarting "
		    "it)");
	else if (!open_ok)
		rc = netsetup_drift(drift, "proxy not listening");
	else if (!t_ok)
		rc = netsetup_drift(drift, "proxy not listening on %s "
		    "(transparent: where the host redirects TCP)", tlisten);
	else if (!d_ok)
		rc = netsetup_drift(drift, "proxy's resolver not listening on "
		    "%s (UDP and TCP)", dlisten);
	else if (!ctl_ok)
		rc = netsetup_drift(drift, "proxy control socket %s missing (a "
		    "proxy started by an older 'cordon net up'?)", control);
	return rc;
}

/* The sandbox's resolv.conf: there, world-readable, and what up writes. */
static int
status_resolv_conf(const struct netsetup_params *p, cJSON *root,
    cJSON *drift)
{
	cJSON *o = cJSON_AddObjectToObject(root, "resolv_conf");
	char path[400], want[128], *have = NULL;
	struct stat st;
	size_t n = 0;
	int rc;
	bool there, right, readable;

	if (o == NULL)
		return -ENOMEM;
	netsetup_state_path(p, NETSETUP_RESOLV_CONF, path, sizeof(path));
	if (netsetup_resolv_conf_text(p->gateway, want, sizeof(want)) < 0)
		return -EINVAL;
	there = util_read_file(path, 4096, &have, &n) == 0;
	right = there && n == strlen(want) && memcmp(have, want, n) == 0;
	readable = there && stat(path, &st) == 0 &&
	    (st.st_mode & 0444) == 0444;
	free(have);
	if (cJSON_AddStringToObject(o, "path", path) == NULL ||
	    cJSON_AddStringToObject(o, "nameserver", p->gateway) == NULL ||
	    cJSON_AddBoolToObject(o, "present", there) == NULL ||
	    cJSON_AddBoolToObject(o, "ok", right && readable) == NULL)
		return -ENOMEM;
	rc = 0;
	if (!there)
		rc = netsetup_drift(drift, "the sandbox's resolv.conf %s is "
		    "missing", path);
	else if (!right)
		rc = netsetup_drift(drift, "the sandbox's resolv.conf %s is not "
		    "what net up writes (nameserver %s, options edns0 "
		    "ndots:1)", path, p->gateway);
	else if (!readable)
		rc = netsetup_drift(drift, "the sandbox's resolv.conf %s is not "
		    "world-readable", path);
	return rc;
}

static int
status_firewall(const struct netsetup_params *p, cJSON *root, cJSON *drift)
{
	cJSON *fw = cJSON_AddObjectToObject(root, "firewall"), *v4, *v6;
	int rc;

	if (fw == NULL ||
	    cJSON_AddStringToObject(fw, "backend", fwa_backend()) == NULL ||
	    cJSON_AddStringToObject(fw, "input_chain", p->chain_in) == NULL ||
	    cJSON_AddStringToObject(fw, "forward_chain", p->chain_fwd) ==
	    NULL || cJSON_AddStringToObject(fw, "nat_chain", p->chain_nat) ==
	    NULL || (v4 = cJSON_AddObjectToObject(fw, "ipv4")) == NULL)
		return -ENOMEM;
	if ((rc = fwa_status(p, FW_INET, v4, drift)) < 0)
		return rc;
	if ((v6 = cJSON_AddObjectToObject(fw, "ipv6")) == NULL)
		return -ENOMEM;
	return fwa_status(p, FW_INET6, v6, drift);
}

/* Whether the array under obj's key has an element. */
static bool
status_nonempty(const cJSON *obj, const char *key)
{
	return cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(obj,
	    key)) > 0;
}

static bool
status_true(const cJSON *obj, const char *key)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(obj, key));
}

bool
netsetup_status_set_up(const cJSON *st)
{
	static const char *const fams[] = { "ipv4", "ipv6" };
	const cJSON *net, *fw, *f, *rc, *px, *v;

	net = cJSON_GetObjectItemCaseSensitive(st, "network");
	if (status_true(net, "present"))
		return true;
	fw = cJSON_GetObjectItemCaseSensitive(st, "firewall");
	for (size_t i = 0; i < sizeof(fams) / sizeof(fams[0]); i++) {
		f = cJSON_GetObjectItemCaseSensitive(fw, fams[i]);
		if (status_nonempty(f, "chains") ||
		    status_nonempty(f, "rules") ||
		    status_nonempty(f, "nat_rules"))
			return true;
	}
	rc = cJSON_GetObjectItemCaseSensitive(st, "resolv_conf");
	if (status_true(rc, "present"))
		return true;
	px = cJSON_GetObjectItemCaseSensitive(st, "proxy");
	v = cJSON_GetObjectItemCaseSensitive(px, "supervisor_pid");
	return (v != NULL && !cJSON_IsNull(v)) ||
	    status_true(px, "control_present") ||
	    cJSON_GetObjectItemCaseSensitive(px, "allowlist") != NULL;
}

int
netsetup_status(const struct netsetup_params *p, cJSON **out, char *err,
    size_t errlen)
{
	cJSON *root = cJSON_CreateObject(), *drift;
	int rc;

	*out = NULL;
	err[0] = '\0';
	if (root == NULL)
		return -ENOMEM;
	if ((drift = cJSON_AddArrayToObject(root, "drift")) == NULL) {
		cJSON_Delete(root);
		return -ENOMEM;
	}
	if ((rc = status_network(p, root, drift)) < 0)
		goto bad;
	if ((rc = status_firewall(p, root, drift)) < 0) {
		if (rc != -ENOMEM)
			snprintf(err, errlen, "cannot take the firewall "
			    "status");
		goto bad;
	}
	if ((rc = status_resolv_conf(p, root, drift)) < 0 ||
	    (rc = status_proxy(p, root, drift)) < 0)
		goto bad;
	if (cJSON_AddBoolToObject(root, "ok", cJSON_GetArraySize(drift) ==
	    0) == NULL || cJSON_AddBoolToObject(root, "set_up",
	    netsetup_status_set_up(root)) == NULL) {
		rc = -ENOMEM;
		goto bad;
	}
	*out = root;
	return 0;
bad:
	if (err[0] == '\0')
		snprintf(err, errlen, "cannot take the status: %s",
		    strerror(-rc));
	cJSON_Delete(root);
	return rc;
}

/* The endpoint the runs of p use: the proxy on the gateway, its control
 * socket. */
static int
ready_endpoint(const struct netsetup_params *p, struct netsetup_endpoint *ep,
    char *err, size_t errlen)
{
	int rc;

	snprintf(ep->gateway, sizeof(ep->gateway), "%s", p->gateway);
	ep->port = p->port;
	if ((rc = netsetup_control_path(p, ep->control,
	    sizeof(ep->control))) < 0) {
		snprintf(err, errlen, "the proxy's control socket path under %s "
		    "is too long for a unix socket", p->state_dir);
		return rc;
	}
	return 0;
}

int
netsetup_endpoint_load(const struct config *c, struct netsetup_endpoint *ep,
    char *err, size_t errlen)
{
	struct netsetup_params p;
	int rc;

	if ((rc = netsetup_params_load(&p, c, err, errlen)) < 0)
		return rc;
	return ready_endpoint(&p, ep, err, errlen);
}

int
netsetup_ready(const struct config *c, struct netsetup_endpoint *ep,
    char *err, size_t errlen)
{
	struct netsetup_params p;
	cJSON *st = NULL, *drift;
	int rc;

	if ((rc = netsetup_params_load(&p, c, err, errlen)) < 0)
		return rc;
	if ((rc = netsetup_status(&p, &st, err, errlen)) < 0)
		return rc;
	drift = cJSON_GetObjectItemCaseSensitive(st, "drift");
	if (cJSON_GetArraySize(drift) > 0) {
		const cJSON *d0 = cJSON_GetArrayItem(drift, 0);
		snprintf(err, errlen, "the egress network is not ready (%s%s); "
		    "run 'cordon net up' (and 'cordon net status')",
		    d0->valuestring, cJSON_GetArraySize(drift) > 1 ?
		    ", and more" : "");
		cJSON_Delete(st);
		return -ENETDOWN;
	}
	cJSON_Delete(st);
	{
		char bundle[340];
		snprintf(bundle, sizeof(bundle), "%s/ca-bundle.pem", p.ca_dir);
		if (access(bundle, R_OK) != 0) {
			snprintf(err, errlen, "the egress CA bundle %s is "
			    "missing; run 'cordon net up'", bundle);
			return -ENETDOWN;
		}
	}
	return ep != NULL ? ready_endpoint(&p, ep, err, errlen) : 0;
}
