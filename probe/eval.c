/*
 * Judging a probe (probe.h): the inside view (untrusted JSON printed by the
 * probe program) and the outside view (docker inspect of the probe's own
 * container) against what the config promises. Pure: no I/O. A field that
 * is missing or has the wrong type fails the control that needs it. The
 * process controls are here; mounts, environment and network are in
 * eval_net.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/eval_internal.h"

static bool
host_ulimit(const cJSON *host, const char *name, long long *soft,
    long long *hard)
{
	const cJSON *u;

	cJSON_ArrayForEach(u, probe_view_get(host, "HostConfig.Ulimits")) {
		const char *n = probe_view_str(u, "Name");
		if (n != NULL && strcmp(n, name) == 0)
			return probe_view_int(u, "Soft", soft) &&
			    probe_view_int(u, "Hard", hard);
	}
	return false;
}

static void
ctl_user(const struct probe_expect *e, const struct views *v,
    struct probe_report *rep)
{
	struct probe_control *c = probe_ctl_new(rep, "user", "uid:gid %s inside; "
	    "Config.User %s", e->config->user, e->config->user);
	long long uid, gid;
	const char *hu = probe_view_str(v->host, "Config.User");
	char inside[48];

	if (!probe_view_int(v->in, "uid", &uid) ||
	    !probe_view_int(v->in, "gid", &gid)) {
		probe_ctl_observe(c, false,
		    "inside uid/gid missing or malformed");
		return;
	}
	snprintf(inside, sizeof(inside), "%lld:%lld", uid, gid);
	probe_ctl_observe(c, strcmp(inside, e->config->user) == 0 && uid != 0 &&
	    hu != NULL && strcmp(hu, e->config->user) == 0,
	    "inside %s; Config.User %s", inside, hu ? hu : "(missing)");
}

/* Options of the mount at point from the inside view, or NULL. */
static const char *
mount_opts(const cJSON *in, const char *point)
{
	const cJSON *m;

	cJSON_ArrayForEach(m, probe_view_get(in, "mounts")) {
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
	struct probe_control *c = probe_ctl_new(rep, "rootfs_readonly",
	    "/ mounted ro inside; HostConfig.ReadonlyRootfs true");
	const char *o = mount_opts(v->in, "/");
	int ro = probe_view_bool(v->host, "HostConfig.ReadonlyRootfs");

	probe_ctl_observe(c, o != NULL && opt_has(o, "ro") && ro == 1,
	    "/ options %.120s; ReadonlyRootfs %s", o ? o : "(missing)",
	    ro < 0 ? "(missing)" : ro ? "true" : "false");
}

static void
ctl_tmp(const struct views *v, struct probe_report *rep)
{
	struct probe_control *c = probe_ctl_new(rep, "tmp_writable_noexec",
	    "/tmp rw,noexec; a write works; exec fails with EACCES");
	const char *o = mount_opts(v->in, "/tmp");
	int w = probe_view_bool(v->in, "tmp_write");
	long long ex = -1;
	bool ok = probe_view_int(v->in, "tmp_exec_errno", &ex);

	probe_ctl_observe(c, o != NULL && opt_has(o, "rw") && opt_has(o, "noexec") &&
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
	struct probe_control *c = probe_ctl_new(rep, "capabilities",
	    "CapEff, CapPrm, CapBnd 0; CapDrop ALL; no CapAdd; not privileged");
	const char *eff = probe_view_str(v->in, "status.CapEff");
	const char *prm = probe_view_str(v->in, "status.CapPrm");
	const char *bnd = probe_view_str(v->in, "status.CapBnd");
	const cJSON *drop = probe_view_get(v->host, "HostConfig.CapDrop");
	const cJSON *add = probe_view_get(v->host, "HostConfig.CapAdd");
	int priv = probe_view_bool(v->host, "HostConfig.Privileged");
	bool add_empty = cJSON_IsNull(add) || (cJSON_IsArray(add) &&
	    cJSON_GetArraySize(add) == 0);
	bool dropall = probe_view_has_string(drop, "ALL", 0) ||
	    probe_view_has_string(drop, "all", 0);

	probe_ctl_observe(c, hex_zero(eff) && hex_zero(prm) && hex_zero(bnd) && dropall &&
	    add_empty && priv == 0, "CapEff %s CapPrm %s CapBnd %s; CapDrop "
	    "%s; CapAdd %s; Privileged %d", eff ? eff : "?", prm ? prm : "?",
	    bnd ? bnd : "?", dropall ? "ALL" : "not ALL",
	    add_empty ? "none" : "some", priv);
}

static void
ctl_nnp(const struct views *v, struct probe_report *rep)
{
	struct probe_control *c = probe_ctl_new(rep, "no_new_privileges",
	    "SecurityOpt no-new-privileges; NoNewPrivs 1 or absent (gVisor)");
	const cJSON *st = probe_view_get(v->in, "status");
	const cJSON *nnp = probe_view_get(st, "NoNewPrivs");
	bool inside_ok = cJSON_IsObject(st) && (cJSON_IsNull(nnp) ||
	    (cJSON_IsString(nnp) && strcmp(nnp->valuestring, "1") == 0));
	bool host_ok = probe_view_has_string(probe_view_get(v->host,
	    "HostConfig.SecurityOpt"),
	    "no-new-privileges", 17);

	probe_ctl_observe(c, inside_ok && host_ok, "inside NoNewPrivs %s; SecurityOpt %s",
	    !cJSON_IsObject(st) ? "(missing)" : cJSON_IsString(nnp) ?
	    nnp->valuestring : "absent", host_ok ? "has no-new-privileges" :
	    "lacks no-new-privileges");
}

static void
ctl_kernel(const struct probe_expect *e, const struct views *v,
    struct probe_report *rep)
{
	struct probe_control *c = probe_ctl_new(rep, "gvisor_kernel",
	    "release != host %s; dmesg shows gVisor; runtime %s is runsc",
	    e->host_release, e->runtime);
	const char *rel = probe_view_str(v->in, "release");
	int dm = probe_view_bool(v->in, "dmesg_gvisor");
	const char *rt = probe_view_str(v->host, "HostConfig.Runtime");

	probe_ctl_observe(c, rel != NULL && strcmp(rel, e->host_release) != 0 && dm == 1 &&
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
	struct probe_control *c = probe_ctl_new(rep, "process_limit",
	    "RLIMIT_NPROC %lld:%lld; forks stop with EAGAIN; PidsLimit %lld",
	    n, n, pl);
	long long s = -1, h = -1, forked = -1, err = -1, hs = -1, hh = -1, hp = -1;
	bool ok = probe_view_pair(v->in, "rlimit_nproc", &s, &h) &&
	    probe_view_int(v->in, "forks.forked", &forked) &&
	    probe_view_int(v->in, "forks.errno", &err) &&
	    host_ulimit(v->host, "nproc", &hs, &hh) &&
	    probe_view_int(v->host, "HostConfig.PidsLimit", &hp);

	probe_ctl_observe(c, ok && s == n && h == n && err == EAGAIN && forked < n &&
	    hs == n && hh == n && hp == pl, "RLIMIT_NPROC %lld:%lld; %lld forks "
	    "then errno %lld; host nproc %lld:%lld; PidsLimit %lld", s, h,
	    forked, err, hs, hh, hp);
}

static void
ctl_memory(const struct probe_expect *e, const struct views *v,
    struct probe_report *rep)
{
	long long m = (long long)e->config->limits.memory_bytes;
	struct probe_control *c = probe_ctl_new(rep, "memory_limit",
	    "HostConfig.Memory = MemorySwap = %lld", m);
	long long hm = -1, hs = -1;
	bool ok = probe_view_int(v->host, "HostConfig.Memory", &hm) &&
	    probe_view_int(v->host, "HostConfig.MemorySwap", &hs);

	probe_ctl_observe(c, ok && hm == m && hs == m, "Memory %lld MemorySwap %lld",
	    hm, hs);
}

static void
ctl_fsize(const struct probe_expect *e, const struct views *v,
    struct probe_report *rep)
{
	long long f = (long long)e->config->limits.fsize_bytes;
	struct probe_control *c = probe_ctl_new(rep, "file_size_limit",
	    "RLIMIT_FSIZE %lld:%lld; a write past it fails with EFBIG", f, f);
	long long s = -1, h = -1, err = -1;
	bool ok = probe_view_pair(v->in, "rlimit_fsize", &s, &h) &&
	    probe_view_int(v->in, "fsize_errno", &err);

	probe_ctl_observe(c, ok && s == f && h == f && err == EFBIG,
	    "RLIMIT_FSIZE %lld:%lld; write past it: errno %lld", s, h, err);
}

static void
ctl_setid(const struct views *v, struct probe_report *rep)
{
	struct probe_control *c = probe_ctl_new(rep, "no_setid_files",
	    "no setuid/setgid files in the image");
	long long n = -1;
	const cJSON *paths = probe_view_get(v->in, "setid.paths");
	const cJSON *first = cJSON_GetArrayItem(paths, 0);

	if (!probe_view_int(v->in, "setid.count", &n) ||
	    !cJSON_IsArray(paths)) {
		probe_ctl_observe(c, false, "setid scan missing or malformed");
		return;
	}
	probe_ctl_observe(c, n == 0, "%lld found%s%.200s", n, n ? ", e.g. " : "",
	    n && cJSON_IsString(first) ? first->valuestring : "");
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
	probe_ctl_mounts(e, &v, rep);
	probe_ctl_env(e, &v, rep);
	probe_ctl_network(e, &v, rep);
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
