/*
 * Judging a probe (probe.h): the inside view (untrusted JSON printed by the
 * probe program) and the outside view (docker inspect of the probe's own
 * container) against what the config promises. Pure: no I/O. A field that
 * is missing or has the wrong type fails the control that needs it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "probe/probe.h"

struct views {
	const cJSON *in;	/* inside object, or NULL if unusable */
	const cJSON *host;	/* inspect object, or NULL */
};

static struct probe_control *
control(struct probe_report *rep, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static struct probe_control *
control(struct probe_report *rep, const char *name, const char *fmt, ...)
{
	struct probe_control *c;
	va_list ap;

	if (rep->ncontrols == PROBE_MAX_CONTROLS)
		return NULL;
	c = &rep->controls[rep->ncontrols++];
	memset(c, 0, sizeof(*c));
	c->name = name;
	va_start(ap, fmt);
	vsnprintf(c->expected, sizeof(c->expected), fmt, ap);
	va_end(ap);
	return c;
}

static void
observe(struct probe_control *c, bool pass, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
observe(struct probe_control *c, bool pass, const char *fmt, ...)
{
	va_list ap;

	if (c == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(c->observed, sizeof(c->observed), fmt, ap);
	va_end(ap);
	c->pass = pass;
}

/* Strict typed lookups; a dotted path walks objects ("HostConfig.Memory"). */
static const cJSON *
get(const cJSON *o, const char *path)
{
	char key[64];
	const char *dot;

	while (o != NULL && (dot = strchr(path, '.')) != NULL) {
		size_t n = (size_t)(dot - path);
		if (n >= sizeof(key))
			return NULL;
		memcpy(key, path, n);
		key[n] = '\0';
		o = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key)
		    : NULL;
		path = dot + 1;
	}
	return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, path)
	    : NULL;
}

static bool
get_int(const cJSON *o, const char *path, long long *out)
{
	const cJSON *v = get(o, path);

	if (!cJSON_IsNumber(v) || v->valuedouble != (double)(long long)v->valuedouble)
		return false;
	*out = (long long)v->valuedouble;
	return true;
}

static const char *
get_str(const cJSON *o, const char *path)
{
	const cJSON *v = get(o, path);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int
get_bool(const cJSON *o, const char *path)
{
	const cJSON *v = get(o, path);

	return cJSON_IsBool(v) ? cJSON_IsTrue(v) : -1;
}

/* [soft, hard] pair of whole numbers. */
static bool
get_pair(const cJSON *o, const char *path, long long *soft, long long *hard)
{
	const cJSON *v = get(o, path);

	if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 2)
		return false;
	for (int i = 0; i < 2; i++) {
		const cJSON *x = cJSON_GetArrayItem(v, i);
		if (!cJSON_IsNumber(x))
			return false;
		*(i ? hard : soft) = (long long)x->valuedouble;
	}
	return true;
}

static bool
array_has_string(const cJSON *arr, const char *s, size_t prefix_len)
{
	const cJSON *v;

	cJSON_ArrayForEach(v, arr)
		if (cJSON_IsString(v) && (prefix_len ?
		    strncmp(v->valuestring, s, prefix_len) == 0 :
		    strcmp(v->valuestring, s) == 0))
			return true;
	return false;
}

/* Host ulimit {Name, Soft, Hard} from HostConfig.Ulimits. */
static bool
host_ulimit(const cJSON *host, const char *name, long long *soft,
    long long *hard)
{
	const cJSON *u;

	cJSON_ArrayForEach(u, get(host, "HostConfig.Ulimits")) {
		const char *n = get_str(u, "Name");
		if (n != NULL && strcmp(n, name) == 0)
			return get_int(u, "Soft", soft) && get_int(u, "Hard", hard);
	}
	return false;
}

static void
ctl_user(const struct probe_expect *e, const struct views *v,
    struct probe_report *rep)
{
	struct probe_control *c = control(rep, "user", "uid:gid %s inside; "
	    "Config.User %s", e->config->user, e->config->user);
	long long uid, gid;
	const char *hu = get_str(v->host, "Config.User");
	char inside[48];

	if (!get_int(v->in, "uid", &uid) || !get_int(v->in, "gid", &gid)) {
		observe(c, false, "inside uid/gid missing or malformed");
		return;
	}
	snprintf(inside, sizeof(inside), "%lld:%lld", uid, gid);
	observe(c, strcmp(inside, e->config->user) == 0 && uid != 0 &&
	    hu != NULL && strcmp(hu, e->config->user) == 0,
	    "inside %s; Config.User %s", inside, hu ? hu : "(missing)");
}

/* Options of the mount at point from the inside view, or NULL. */
static const char *
mount_opts(const cJSON *in, const char *point)
{
	const cJSON *m;

	cJSON_ArrayForEach(m, get(in, "mounts")) {
		const cJSON *p = cJSON_GetArrayItem(m, 0);
		const cJSON *o = cJSON_GetArrayItem(m, 2);
		if (cJSON_IsString(p) && cJSON_IsString(o) &&
		    strcmp(p->valuestring, point) == 0)
			return o->valuestring;
	}
	return NULL;
}

static bool
opt_has(const char *opts, const char *opt)
{
	size_t n = strlen(opt);

	for (const char *p = opts; p != NULL; p = strchr(p, ',')) {
		if (*p == ',')
			p++;
		if (strncmp(p, opt, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return true;
	}
	return false;
}

static void
ctl_rootfs(const struct views *v, struct probe_report *rep)
{
	struct probe_control *c = control(rep, "rootfs_readonly",
	    "/ mounted ro inside; HostConfig.ReadonlyRootfs true");
	const char *o = mount_opts(v->in, "/");
	int ro = get_bool(v->host, "HostConfig.ReadonlyRootfs");

	observe(c, o != NULL && opt_has(o, "ro") && ro == 1,
	    "/ options %.120s; ReadonlyRootfs %s", o ? o : "(missing)",
	    ro < 0 ? "(missing)" : ro ? "true" : "false");
}

static void
ctl_tmp(const struct views *v, struct probe_report *rep)
{
	struct probe_control *c = control(rep, "tmp_writable_noexec",
	    "/tmp rw,noexec; a write works; exec fails with EACCES");
	const char *o = mount_opts(v->in, "/tmp");
	int w = get_bool(v->in, "tmp_write");
	long long ex = -1;
	bool ok = get_int(v->in, "tmp_exec_errno", &ex);

	observe(c, o != NULL && opt_has(o, "rw") && opt_has(o, "noexec") &&
	    w == 1 && ok && ex == EACCES, "/tmp options %.100s; write %s; "
	    "exec errno %lld", o ? o : "(missing)", w == 1 ? "ok" : "failed",
	    ex);
}

static bool
hex_zero(const char *s)
{
	return s != NULL && *s != '\0' && strspn(s, "0") == strlen(s);
}

static void
ctl_caps(const struct views *v, struct probe_report *rep)
{
	struct probe_control *c = control(rep, "capabilities",
	    "CapEff, CapPrm, CapBnd 0; CapDrop ALL; no CapAdd; not privileged");
	const char *eff = get_str(v->in, "status.CapEff");
	const char *prm = get_str(v->in, "status.CapPrm");
	const char *bnd = get_str(v->in, "status.CapBnd");
	const cJSON *drop = get(v->host, "HostConfig.CapDrop");
	const cJSON *add = get(v->host, "HostConfig.CapAdd");
	int priv = get_bool(v->host, "HostConfig.Privileged");
	bool add_empty = cJSON_IsNull(add) || (cJSON_IsArray(add) &&
	    cJSON_GetArraySize(add) == 0);
	bool dropall = array_has_string(drop, "ALL", 0) ||
	    array_has_string(drop, "all", 0);

	observe(c, hex_zero(eff) && hex_zero(prm) && hex_zero(bnd) && dropall &&
	    add_empty && priv == 0, "CapEff %s CapPrm %s CapBnd %s; CapDrop "
	    "%s; CapAdd %s; Privileged %d", eff ? eff : "?", prm ? prm : "?",
	    bnd ? bnd : "?", dropall ? "ALL" : "not ALL",
	    add_empty ? "none" : "some", priv);
}

static void
ctl_nnp(const struct views *v, struct probe_report *rep)
{
	struct probe_control *c = control(rep, "no_new_privileges",
	    "SecurityOpt no-new-privileges; NoNewPrivs 1 or absent (gVisor)");
	const cJSON *st = get(v->in, "status");
	const cJSON *nnp = get(st, "NoNewPrivs");
	bool inside_ok = cJSON_IsObject(st) && (cJSON_IsNull(nnp) ||
	    (cJSON_IsString(nnp) && strcmp(nnp->valuestring, "1") == 0));
	bool host_ok = array_has_string(get(v->host, "HostConfig.SecurityOpt"),
	    "no-new-privileges", 17);

	observe(c, inside_ok && host_ok, "inside NoNewPrivs %s; SecurityOpt %s",
	    !cJSON_IsObject(st) ? "(missing)" : cJSON_IsString(nnp) ?
	    nnp->valuestring : "absent", host_ok ? "has no-new-privileges" :
	    "lacks no-new-privileges");
}

static void
ctl_kernel(const struct probe_expect *e, const struct views *v,
    struct probe_report *rep)
{
	struct probe_control *c = control(rep, "gvisor_kernel",
	    "release != host %s; dmesg shows gVisor; runtime %s is runsc",
	    e->host_release, e->runtime);
	const char *rel = get_str(v->in, "release");
	int dm = get_bool(v->in, "dmesg_gvisor");
	const char *rt = get_str(v->host, "HostConfig.Runtime");

	observe(c, rel != NULL && strcmp(rel, e->host_release) != 0 && dm == 1 &&
	    rt != NULL && strcmp(rt, e->runtime) == 0 && e->runtime_is_runsc,
	    "release %s; dmesg %s; runtime %s (%s)", rel ? rel : "(missing)",
	    dm == 1 ? "gVisor" : "not gVisor", rt ? rt : "(missing)",
	    e->runtime_is_runsc ? "runsc" : "NOT runsc");
}

static void
ctl_nproc(const struct probe_expect *e, const struct views *v,
    struct probe_report *rep)
{
	long long n = e->config->limits.nproc, pl = e->config->limits.pids_limit;
	struct probe_control *c = control(rep, "process_limit",
	    "RLIMIT_NPROC %lld:%lld; forks stop with EAGAIN; PidsLimit %lld",
	    n, n, pl);
	long long s = -1, h = -1, forked = -1, err = -1, hs = -1, hh = -1, hp = -1;
	bool ok = get_pair(v->in, "rlimit_nproc", &s, &h) &&
	    get_int(v->in, "forks.forked", &forked) &&
	    get_int(v->in, "forks.errno", &err) &&
	    host_ulimit(v->host, "nproc", &hs, &hh) &&
	    get_int(v->host, "HostConfig.PidsLimit", &hp);

	observe(c, ok && s == n && h == n && err == EAGAIN && forked < n &&
	    hs == n && hh == n && hp == pl, "RLIMIT_NPROC %lld:%lld; %lld forks "
	    "then errno %lld; host nproc %lld:%lld; PidsLimit %lld", s, h,
	    forked, err, hs, hh, hp);
}

static void
ctl_memory(const struct probe_expect *e, const struct views *v,
    struct probe_report *rep)
{
	long long m = (long long)e->config->limits.memory_bytes;
	struct probe_control *c = control(rep, "memory_limit",
	    "HostConfig.Memory = MemorySwap = %lld", m);
	long long hm = -1, hs = -1;
	bool ok = get_int(v->host, "HostConfig.Memory", &hm) &&
	    get_int(v->host, "HostConfig.MemorySwap", &hs);

	observe(c, ok && hm == m && hs == m, "Memory %lld MemorySwap %lld",
	    hm, hs);
}

static void
ctl_fsize(const struct probe_expect *e, const struct views *v,
    struct probe_report *rep)
{
	long long f = (long long)e->config->limits.fsize_bytes;
	struct probe_control *c = control(rep, "file_size_limit",
	    "RLIMIT_FSIZE %lld:%lld; a write past it fails with EFBIG", f, f);
	long long s = -1, h = -1, err = -1;
	bool ok = get_pair(v->in, "rlimit_fsize", &s, &h) &&
	    get_int(v->in, "fsize_errno", &err);

	observe(c, ok && s == f && h == f && err == EFBIG,
	    "RLIMIT_FSIZE %lld:%lld; write past it: errno %lld", s, h, err);
}

static void
ctl_setid(const struct views *v, struct probe_report *rep)
{
	struct probe_control *c = control(rep, "no_setid_files",
	    "no setuid/setgid files in the image");
	long long n = -1;
	const cJSON *paths = get(v->in, "setid.paths");
	const cJSON *first = cJSON_GetArrayItem(paths, 0);

	if (!get_int(v->in, "setid.count", &n) || !cJSON_IsArray(paths)) {
		observe(c, false, "setid scan missing or malformed");
		return;
	}
	observe(c, n == 0, "%lld found%s%.200s", n, n ? ", e.g. " : "",
	    n && cJSON_IsString(first) ? first->valuestring : "");
}

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

static void
ctl_mounts(const struct probe_expect *e, const struct views *v,
    struct probe_report *rep)
{
	bool proxy = strcmp(e->mode, "proxy") == 0;
	struct probe_control *c = control(rep, "no_host_mounts", proxy ?
	    "no Docker socket, no host paths beyond /in, the CA bundle and "
	    "resolv.conf (both read-only)" : "no Docker socket, no host paths "
	    "beyond /in");
	const cJSON *m, *mounts = get(v->in, "mounts");
	const cJSON *socks = get(v->in, "sockets");
	const cJSON *hm = v->host ? cJSON_GetObjectItemCaseSensitive(v->host,
	    "Mounts") : NULL;
	const char *bad = NULL;

	if (!cJSON_IsArray(mounts) || !cJSON_IsArray(socks) ||
	    !cJSON_IsArray(hm)) {
		observe(c, false, "mount views missing or malformed");
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
		const char *dst = get_str(m, "Destination");
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
	observe(c, bad == NULL, bad ? "unexpected: %.200s" : "%s",
	    bad ? bad : "only the expected mounts");
}

static void
ctl_env(const struct probe_expect *e, const struct views *v,
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
	struct probe_control *c = control(rep, "environment",
	    "only Cordon's fixed variables; host marker %s absent",
	    e->marker_var ? e->marker_var : "-");
	const cJSON *k, *keys = get(v->in, "env_keys");
	int seen = get_bool(v->in, "marker_seen");
	const char *bad = NULL;

	if (!cJSON_IsArray(keys) || seen < 0) {
		observe(c, false, "environment view missing or malformed");
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
	observe(c, bad == NULL && seen == 0, "%s%.200s%s",
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
	const char *nm = get_str(v->host, "HostConfig.NetworkMode");
	const char *denied = get_str(v->in, "proxy_denied");
	const char *nocred = get_str(v->in, "proxy_nocred");
	const char *direct = get_str(v->in, "direct_answer");
	const cJSON *ns = get(v->in, "nameservers");
	int res = get_bool(v->in, "resolve_denied_ok");
	char gw[64];
	bool direct_ok, ns_ok;

	proxy_gateway(e->proxy_url, gw, sizeof(gw));
	direct_ok = direct != NULL && (direct[0] == '\0' ||
	    strncmp(direct, "connect failed", 14) == 0 ||
	    strstr(direct, " 403") != NULL);
	ns_ok = gw[0] != '\0' && cJSON_IsArray(ns) &&
	    cJSON_GetArraySize(ns) == 1 && array_has_string(ns, gw, 0);
	observe(c, nm != NULL && strcmp(nm, e->config->egress_network) == 0 &&
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

static void
ctl_network(const struct probe_expect *e, const struct views *v,
    struct probe_report *rep)
{
	bool proxy = strcmp(e->mode, "proxy") == 0;
	struct probe_control *c = control(rep, "network", proxy ?
	    "egress network only; a direct connection fails or lands on the "
	    "proxy, which refuses it; the only resolver is the proxy's, and "
	    "it does not resolve a name outside every policy; the proxy "
	    "denies an unlisted name (403) and a request without the run's "
	    "credential (407)" :
	    "loopback only; connect fails; no resolver; NetworkMode none");
	const cJSON *ifs = get(v->in, "interfaces");
	long long cerr = -1;
	int res = get_bool(v->in, "resolve_ok");
	const char *nm = get_str(v->host, "HostConfig.NetworkMode");
	bool ok = get_int(v->in, "connect_errno", &cerr) && res >= 0 &&
	    cJSON_IsArray(ifs) && nm != NULL;
	bool lo_only = ok && cJSON_GetArraySize(ifs) == 1 &&
	    array_has_string(ifs, "lo", 0);

	if (proxy) {
		ctl_network_proxy(e, v, c);
		return;
	}
	observe(c, lo_only && cerr != 0 && res == 0 &&
	    strcmp(nm, "none") == 0, "interfaces %s; connect errno %lld; "
	    "resolve %s; NetworkMode %s", lo_only ? "lo" : "more than lo",
	    cerr, res == 1 ? "works" : "fails", nm ? nm : "(missing)");
}

void
probe_evaluate(const struct probe_expect *e, const char *inside,
    size_t inside_len, const char *inspect, size_t inspect_len,
    struct probe_report *rep)
{
	cJSON *in = NULL, *insp = NULL;
	struct views v = { NULL, NULL };

	memset(rep, 0, sizeof(*rep));
	snprintf(rep->mode, sizeof(rep->mode), "%s", e->mode);
	if (inside != NULL)
		in = cJSON_ParseWithLength(inside, inside_len);
	if (inspect != NULL)
		insp = cJSON_ParseWithLength(inspect, inspect_len);
	v.in = cJSON_IsObject(in) ? in : NULL;
	if (cJSON_IsArray(insp) && cJSON_GetArraySize(insp) == 1 &&
	    cJSON_IsObject(cJSON_GetArrayItem(insp, 0)))
		v.host = cJSON_GetArrayItem(insp, 0);
	ctl_user(e, &v, rep);
	ctl_rootfs(&v, rep);
	ctl_tmp(&v, rep);
	ctl_caps(&v, rep);
	ctl_nnp(&v, rep);
	ctl_kernel(e, &v, rep);
	ctl_nproc(e, &v, rep);
	ctl_memory(e, &v, rep);
	ctl_fsize(e, &v, rep);
	ctl_setid(&v, rep);
	ctl_mounts(e, &v, rep);
	ctl_env(e, &v, rep);
	ctl_network(e, &v, rep);
	rep->pass = v.in != NULL && v.host != NULL;
	for (size_t i = 0; i < rep->ncontrols; i++)
		rep->pass = rep->pass && rep->controls[i].pass;
	cJSON_Delete(in);
	cJSON_Delete(insp);
}

cJSON *
probe_report_to_json(const struct probe_report *rep)
{
	cJSON *o = cJSON_CreateObject(), *arr;

	if (o == NULL)
		return NULL;
	cJSON_AddStringToObject(o, "mode", rep->mode);
	cJSON_AddBoolToObject(o, "pass", rep->pass);
	cJSON_AddNumberToObject(o, "at_ms", (double)rep->at_ms);
	if (rep->image[0] != '\0')
		cJSON_AddStringToObject(o, "image", rep->image);
	arr = cJSON_AddArrayToObject(o, "controls");
	for (size_t i = 0; arr != NULL && i < rep->ncontrols; i++) {
		const struct probe_control *c = &rep->controls[i];
		cJSON *x = cJSON_CreateObject();
		if (x == NULL)
			break;
		cJSON_AddStringToObject(x, "control", c->name);
		json_add_bytes(x, "expected", c->expected, strlen(c->expected));
		json_add_bytes(x, "observed", c->observed, strlen(c->observed));
		cJSON_AddBoolToObject(x, "pass", c->pass);
		cJSON_AddItemToArray(arr, x);
	}
	return o;
}
