/*
 * The controls of what a sandbox sees of the host (eval_internal.h): its
 * mounts, its environment and its network, offline or in proxy mode.
 * Pure: no I/O.
 */
#include <stdio.h>
#include <string.h>

#include "probe/eval_internal.h"

/* Proxy mode: the CA bundle (system roots + the egress CA, for TLS
 * inspection), mounted read-only there by runner/docker_argv.c, and the
 * resolv.conf naming the proxy's resolver, read-only over Docker's. */
#define PROBE_CA_BUNDLE "/etc/cordon/ca-bundle.pem"
#define PROBE_RESOLV_CONF "/etc/resolv.conf"

/* The only mount points a Cordon container may have (gVisor's view). */
static bool
mount_allowed(const char *p, bool proxy)
{
	if (proxy && strcmp(p, PROBE_CA_BUNDLE) == 0)
		return true;
	static const char *const ok[] = { "/", "/dev", "/dev/pts", "/dev/shm",
	    "/dev/mqueue", "/sys", "/proc", "/tmp", "/etc/hosts",
	    "/etc/hostname", "/etc/resolv.conf", "/in" };

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (strcmp(p, ok[i]) == 0)
			return true;
	/* Docker's masking mounts over parts of /proc and /sys (runc). */
	return strncmp(p, "/proc/", 6) == 0 || strncmp(p, "/sys/", 5) == 0;
}

void
probe_ctl_mounts(const struct probe_expect *e, const struct views *v,
    struct probe_report *rep)
{
	bool proxy = strcmp(e->mode, "proxy") == 0;
	struct probe_control *c = probe_ctl_new(rep, "no_host_mounts", proxy ?
	    "no Docker socket, no host paths beyond /in, the CA bundle and "
	    "resolv.conf (both read-only)" : "no Docker socket, no host paths "
	    "beyond /in");
	const cJSON *m, *mounts = probe_view_get(v->in, "mounts");
	const cJSON *socks = probe_view_get(v->in, "sockets");
	const cJSON *hm = v->host ? cJSON_GetObjectItemCaseSensitive(v->host,
	    "Mounts") : NULL;
	const char *bad = NULL;

	if (!cJSON_IsArray(mounts) || !cJSON_IsArray(socks) ||
	    !cJSON_IsArray(hm)) {
		probe_ctl_observe(c, false, "mount views missing or malformed");
		return;
	}
	cJSON_ArrayForEach(m, mounts) {
		const cJSON *p = cJSON_GetArrayItem(m, 0);
		if (!cJSON_IsString(p) || !mount_allowed(p->valuestring,
		    proxy)) {
			bad = cJSON_IsString(p) ? p->valuestring : "(malformed)";
			break;
		}
	}
	cJSON_ArrayForEach(m, hm) {
		const char *dst = probe_view_str(m, "Destination");
		const cJSON *rw = cJSON_GetObjectItemCaseSensitive(m, "RW");
		if (proxy && dst != NULL && (strcmp(dst, PROBE_CA_BUNDLE) == 0 ||
		    strcmp(dst, PROBE_RESOLV_CONF) == 0) && cJSON_IsFalse(rw))
			continue;
		if (dst == NULL || strcmp(dst, "/in") != 0) {
			bad = dst ? dst : "(malformed host mount)";
			break;
		}
	}
	if (bad == NULL && cJSON_GetArraySize(socks) > 0)
		bad = cJSON_GetArrayItem(socks, 0)->valuestring;
	probe_ctl_observe(c, bad == NULL, bad ? "unexpected: %.200s" : "%s",
	    bad ? bad : "only the expected mounts");
}

void
probe_ctl_env(const struct probe_expect *e, const struct views *v,
    struct probe_report *rep)
{
	static const char *const ok[] = { "PATH", "HOME", "HOSTNAME", "LANG",
	    "LC_ALL", "LC_CTYPE", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED",
	    "PYTHONIOENCODING", "TMPDIR", "PWD", "HTTP_PROXY", "HTTPS_PROXY",
	    "http_proxy", "https_proxy", "NO_PROXY", "no_proxy" };
	/* Proxy mode: where clients find the CA bundle. */
	static const char *const ca[] = { "SSL_CERT_FILE",
	    "REQUESTS_CA_BUNDLE", "PIP_CERT", "CURL_CA_BUNDLE",
	    "NODE_EXTRA_CA_CERTS" };
	bool proxy = strcmp(e->mode, "proxy") == 0;
	struct probe_control *c = probe_ctl_new(rep, "environment",
	    "only Cordon's fixed variables; host marker %s absent",
	    e->marker_var ? e->marker_var : "-");
	const cJSON *k, *keys = probe_view_get(v->in, "env_keys");
	int seen = probe_view_bool(v->in, "marker_seen");
	const char *bad = NULL;

	if (!cJSON_IsArray(keys) || seen < 0) {
		probe_ctl_observe(c, false,
		    "environment view missing or malformed");
		return;
	}
	cJSON_ArrayForEach(k, keys) {
		size_t i, n = sizeof(ok) / sizeof(ok[0]);
		if (!cJSON_IsString(k)) {
			bad = "(malformed)";
			break;
		}
		for (i = 0; i < n && strcmp(k->valuestring, ok[i]) != 0; i++)
			;
		for (size_t j = 0; proxy && i == n && j < sizeof(ca) /
		    sizeof(ca[0]); j++)
			if (strcmp(k->valuestring, ca[j]) == 0)
				i = 0;
		if (i == n) {
			bad = k->valuestring;
			break;
		}
	}
	probe_ctl_observe(c, bad == NULL && seen == 0, "%s%.200s%s",
	    bad ? "unexpected variable " : "", bad ? bad : "fixed set only",
	    seen ? "; host marker leaked" : "");
}

/* The gateway of a proxy URL "http://GW:PORT" into gw (empty when it is
 * not one). */
static void
proxy_gateway(const char *url, char *gw, size_t len)
{
	const char *h = url != NULL ? strstr(url, "://") : NULL;
	const char *colon = h != NULL ? strrchr(h + 3, ':') : NULL;

	gw[0] = '\0';
	if (colon != NULL && (size_t)(colon - h - 3) < len)
		snprintf(gw, len, "%.*s", (int)(colon - h - 3), h + 3);
}

/* Proxy mode. A direct connection lands on the proxy (the host redirects
 * every TCP connection to its transparent listener), which refuses this
 * name (403, or a close without an answer), or it fails; the only resolver
 * is the proxy's on the gateway, and a name no policy allows does not
 * resolve; the explicit proxy refuses an unlisted name (403) and a request
 * without the run's credential (407). Fail-closed: anything missing or
 * malformed fails. */
static void
ctl_network_proxy(const struct probe_expect *e, const struct views *v,
    struct probe_control *c)
{
	const char *nm = probe_view_str(v->host, "HostConfig.NetworkMode");
	const char *denied = probe_view_str(v->in, "proxy_denied");
	const char *nocred = probe_view_str(v->in, "proxy_nocred");
	const char *direct = probe_view_str(v->in, "direct_answer");
	const cJSON *ns = probe_view_get(v->in, "nameservers");
	int res = probe_view_bool(v->in, "resolve_denied_ok");
	char gw[64];
	bool direct_ok, ns_ok;

	proxy_gateway(e->proxy_url, gw, sizeof(gw));
	direct_ok = direct != NULL && (direct[0] == '\0' ||
	    strncmp(direct, "connect failed", 14) == 0 ||
	    strstr(direct, " 403") != NULL);
	ns_ok = gw[0] != '\0' && cJSON_IsArray(ns) &&
	    cJSON_GetArraySize(ns) == 1 && probe_view_has_string(ns, gw, 0);
	probe_ctl_observe(c, nm != NULL && strcmp(nm, e->config->egress_network) == 0 &&
	    direct_ok && ns_ok && res == 0 && denied != NULL &&
	    strstr(denied, " 403") != NULL && nocred != NULL &&
	    strstr(nocred, " 407") != NULL, "direct connect: %.80s; "
	    "nameservers %s (want only %s); a name outside every policy %s; "
	    "NetworkMode %s; proxy said %.80s with the credential, %.80s "
	    "without", direct == NULL ? "(no observation)" : direct[0] == '\0' ?
	    "closed without an answer" : direct, ns_ok ? "ok" : "wrong",
	    gw[0] != '\0' ? gw : "(no gateway)", res == 1 ? "resolves" :
	    res == 0 ? "does not resolve" : "(no observation)",
	    nm ? nm : "(missing)", denied ? denied : "(nothing)",
	    nocred ? nocred : "(nothing)");
}

void
probe_ctl_network(const struct probe_expect *e, const struct views *v,
    struct probe_report *rep)
{
	bool proxy = strcmp(e->mode, "proxy") == 0;
	struct probe_control *c = probe_ctl_new(rep, "network", proxy ?
	    "egress network only; a direct connection fails or lands on the "
	    "proxy, which refuses it; the only resolver is the proxy's, and "
	    "it does not resolve a name outside every policy; the proxy "
	    "denies an unlisted name (403) and a request without the run's "
	    "credential (407)" :
	    "loopback only; connect fails; no resolver; NetworkMode none");
	const cJSON *ifs = probe_view_get(v->in, "interfaces");
	long long cerr = -1;
	int res = probe_view_bool(v->in, "resolve_ok");
	const char *nm = probe_view_str(v->host, "HostConfig.NetworkMode");
	bool ok = probe_view_int(v->in, "connect_errno", &cerr) && res >= 0 &&
	    cJSON_IsArray(ifs) && nm != NULL;
	bool lo_only = ok && cJSON_GetArraySize(ifs) == 1 &&
	    probe_view_has_string(ifs, "lo", 0);

	if (proxy) {
		ctl_network_proxy(e, v, c);
		return;
	}
	probe_ctl_observe(c, lo_only && cerr != 0 && res == 0 &&
	    strcmp(nm, "none") == 0, "interfaces %s; connect errno %lld; "
	    "resolve %s; NetworkMode %s", lo_only ? "lo" : "more than lo",
	    cerr, res == 1 ? "works" : "fails", nm ? nm : "(missing)");
}
