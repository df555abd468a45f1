/*
 * `cordon net up|down|status` as a library, and the runner's readiness
 * check and per-container seal. Orders matter here: the firewall goes up
 * before the network and the proxy, and comes down only when no container
 * is attached, so there is never a moment where a sandbox sees the host.
 */
#include "netsetup/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "common/json.h"
#include "common/proc.h"
#include "common/util.h"

#define PROXY_WAIT_MS 8000

int
ns_run(const char *const *argv, const char *in, char **out, char *err,
    size_t errlen)
{
	struct proc_opts o = {
		.argv = argv,
		.stdin_data = in,
		.stdin_len = in != NULL ? strlen(in) : 0,
		.stdout_max = 8u << 20,
		.stderr_max = 64u << 10,
	};
	struct proc_result res;
	int rc;

	if (out != NULL)
		*out = NULL;
	err[0] = '\0';
	rc = proc_run(&o, NS_CMD_TIMEOUT_MS, &res);
	if (rc < 0) {
		snprintf(err, errlen, "cannot run %s: %s", argv[0],
		    strerror(-rc));
		return rc;
	}
	if (res.timed_out) {
		snprintf(err, errlen, "%s timed out after %d s", argv[0],
		    NS_CMD_TIMEOUT_MS / 1000);
		proc_result_cleanup(&res);
		return -ETIMEDOUT;
	}
	rc = res.exit_code >= 0 ? res.exit_code : 128 + res.term_signal;
	if (rc != 0) {
		const char *e = cbuf_data(res.err);
		size_t n = strcspn(e, "\n");
		snprintf(err, errlen, "%.*s", (int)(n > 300 ? 300 : n), e);
		if (err[0] == '\0')
			snprintf(err, errlen, "%s exited with %d", argv[0], rc);
	}
	if (out != NULL)
		*out = cbuf_steal(res.out, NULL);
	proc_result_cleanup(&res);
	if (out != NULL && *out == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return rc;
}

void
ns_note(struct cbuf *changes, const char *fmt, ...)
{
	char buf[700];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	(void)cbuf_append_str(changes, buf);
	(void)cbuf_append_str(changes, "\n");
}

/* Paths under p->state_dir. */
static void
state_path(const struct netsetup_params *p, const char *name, char *buf,
    size_t len)
{
	snprintf(buf, len, "%s/%s", p->state_dir, name);
}

/* The record of the last `up`: subnet, allowlist, proxy argv. */
static cJSON *
state_read(const struct netsetup_params *p)
{
	char path[400], err[128];
	cJSON *st = NULL;

	state_path(p, "net.json", path, sizeof(path));
	if (json_parse_file(path, 1 << 20, &st, err, sizeof(err)) < 0)
		return NULL;
	return st;
}

int
netsetup_params_load(struct netsetup_params *p, const struct config *c,
    char *err, size_t errlen)
{
	const char *subnet = NULL;
	cJSON *st;
	int rc;

	if ((rc = netsetup_params_init(p, c, NULL, err, errlen)) < 0)
		return rc;
	st = state_read(p);
	if (st != NULL && json_get_string(st, "subnet", &subnet) == 0 &&
	    strcmp(subnet, p->subnet) != 0)
		rc = netsetup_params_init(p, c, subnet, err, errlen);
	cJSON_Delete(st);
	return rc;
}

/* Serialises up and down for one bridge: a lock file in the state dir,
 * waited for up to 60 s. Returns the locked fd or a negative errno. */
static int
ns_lock(const struct netsetup_params *p, char *err, size_t errlen)
{
	int64_t until = time_mono_ms() + 60000;
	char path[400];
	int fd, rc;

	if ((rc = util_mkdir_p(p->state_dir, 0755)) < 0) {
		snprintf(err, errlen, "%s: %s", p->state_dir, strerror(-rc));
		return rc;
	}
	state_path(p, "lock", path, sizeof(path));
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return rc;
	}
	while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK || time_mono_ms() >= until) {
			snprintf(err, errlen, "another 'cordon net' holds %s",
			    path);
			close(fd);
			return -EBUSY;
		}
		(void)usleep(100000);
	}
	return fd;
}

/* ---- up ---- */

static int
up_network(const struct netsetup_params *p, struct cbuf *changes,
    bool *ours, char *err, size_t errlen)
{
	char why[512];
	cJSON *net = NULL;
	int rc, n;

	rc = dnet_inspect(p, &net, err, errlen);
	if (rc == 0 && (n = dnet_check(net, p, why, sizeof(why))) > 0) {
		if (!dnet_ours(net) || dnet_containers(net) > 0) {
			snprintf(err, errlen, "network %s exists but is wrong: "
			    "%s. Not changing it: %s. Remove it (docker network "
			    "rm %s) or fix the configuration.", p->network, why,
			    dnet_ours(net) ? "containers are attached" :
			    "Cordon did not create it", p->network);
			cJSON_Delete(net);
			return -EEXIST;
		}
		if ((rc = dnet_remove(p, err, errlen)) < 0) {
			cJSON_Delete(net);
			return rc;
		}
		ns_note(changes, "removed network %s (was wrong: %s)",
		    p->network, why);
		rc = -ENOENT;
	}
	cJSON_Delete(net);
	net = NULL;
	if (rc == -ENOENT) {
		if ((rc = dnet_create(p, err, errlen)) < 0)
			return rc;
		ns_note(changes, "created network %s (bridge %s, internal, "
		    "subnet %s, gateway %s, icc off, no IPv6)", p->network,
		    p->bridge, p->subnet, p->gateway);
		/* Verify what Docker made of it. */
		if ((rc = dnet_inspect(p, &net, err, errlen)) < 0)
			return rc;
		if (dnet_check(net, p, why, sizeof(why)) > 0) {
			snprintf(err, errlen, "network %s was created wrong: %s",
			    p->network, why);
			cJSON_Delete(net);
			return -EIO;
		}
	} else if (rc < 0) {
		return rc;
	}
	*ours = dnet_ours(net);
	cJSON_Delete(net);
	return 0;
}

/* Containers on the bridge reach each other at layer 2; only with bridge
 * netfilter on do those frames pass through the FORWARD chain. */
static int
up_bridge_nf(struct cbuf *changes, char *err, size_t errlen)
{
	const char *modprobe[] = { "modprobe", "br_netfilter", NULL };
	static const char *const paths[] = {
		"/proc/sys/net/bridge/bridge-nf-call-iptables",
		"/proc/sys/net/bridge/bridge-nf-call-ip6tables",
	};
	char e2[128];

	if (fwa_bridge_nf(FW_INET) < 0) {
		(void)ns_run(modprobe, NULL, NULL, e2, sizeof(e2));
		if (fwa_bridge_nf(FW_INET) >= 0)
			ns_note(changes, "loaded br_netfilter");
	}
	for (int i = 0; i < 2; i++) {
		enum fw_family fam = i == 0 ? FW_INET : FW_INET6;
		if (fwa_bridge_nf(fam) == 1)
			continue;
		if (util_write_file_atomic(paths[i], "1\n", 2, 0644) < 0) {
			FILE *f = fopen(paths[i], "we");
			if (f == NULL || fputs("1\n", f) < 0) {
				if (f != NULL)
					fclose(f);
				snprintf(err, errlen, "cannot turn on %s: bridge "
				    "traffic would bypass the firewall", paths[i]);
				return -EIO;
			}
			fclose(f);
		}
		if (fwa_bridge_nf(fam) != 1) {
			snprintf(err, errlen, "%s is still not 1", paths[i]);
			return -EIO;
		}
		ns_note(changes, "set %s to 1", paths[i]);
	}
	return 0;
}

/* Builds the proxy argv into a JSON array (the recorded form). */
static cJSON *
proxy_argv_json(const struct netsetup_params *p,
    const struct netsetup_up_opts *o)
{
	cJSON *a = cJSON_CreateArray();
	char listen[40];

	if (a == NULL)
		return NULL;
	snprintf(listen, sizeof(listen), "%s:%d", p->gateway, p->port);
	cJSON_AddItemToArray(a, cJSON_CreateString(o->proxy_bin));
	cJSON_AddItemToArray(a, cJSON_CreateString("--listen"));
	cJSON_AddItemToArray(a, cJSON_CreateString(listen));
	cJSON_AddItemToArray(a, cJSON_CreateString("--allowlist"));
	cJSON_AddItemToArray(a, cJSON_CreateString(o->allowlist));
	cJSON_AddItemToArray(a, cJSON_CreateString("--access-log"));
	cJSON_AddItemToArray(a, cJSON_CreateString("-"));
	/* The proxy binds and loads its allowlist first, then drops to the
	 * proxy user itself: neither file needs to be readable by it. */
	cJSON_AddItemToArray(a, cJSON_CreateString("--user"));
	cJSON_AddItemToArray(a, cJSON_CreateString(p->proxy_user));
	for (size_t i = 0; i < o->nproxy_args; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(o->proxy_args[i]));
	return a;
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
	state_path(p, "proxy.log", path, sizeof(path));
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

static int
up_proxy(const struct netsetup_params *p, const struct netsetup_up_opts *o,
    const cJSON *recorded, cJSON *want, struct cbuf *changes, char *err,
    size_t errlen)
{
	char pidp[400], cpidp[400], logp[400], tail[400], envbuf[4][512];
	const char **argv = NULL, *env[8];
	bool systemd = sd_booted();
	struct super_spec spec;
	pid_t sup = 0;
	int64_t until;
	int rc;

	state_path(p, "supervisor.pid", pidp, sizeof(pidp));
	state_path(p, "proxy.pid", cpidp, sizeof(cpidp));
	state_path(p, "proxy.log", logp, sizeof(logp));
	if (!systemd && super_alive(pidp, &sup) == 0) {
		if (recorded != NULL && cJSON_Compare(recorded, want, true))
			goto wait;
		if ((rc = super_stop(pidp, cpidp, 10000)) < 0 && rc != -ESRCH) {
			snprintf(err, errlen, "cannot stop the old proxy");
			return rc;
		}
		ns_note(changes, "stopped proxy supervisor %ld (configuration "
		    "changed)", (long)sup);
	} else if (super_stop(pidp, cpidp, 2000) == 0) {
		/* A proxy left without its supervisor would hold the port;
		 * under systemd, a pid-file supervisor is a leftover. */
		ns_note(changes, "stopped a leftover proxy");
	}
	if ((argv = argv_from_json(want, "--check")) == NULL)
		return -ENOMEM;
	rc = ns_run(argv, NULL, NULL, err, errlen);
	if (rc != 0) {
		char why[300];
		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "%s --check refused the configuration: %s",
		    o->proxy_bin, why);
		free(argv);
		return rc < 0 ? rc : -EINVAL;
	}
	argv[cJSON_GetArraySize(want)] = NULL;	/* drop --check */
	proxy_env(env, envbuf);
	spec = (struct super_spec){ argv, env, p->proxy_user, logp, pidp,
	    cpidp };
	if (systemd) {
		rc = sd_start(p, &spec, changes, err, errlen);
		free(argv);
		if (rc < 0)
			return rc;
		goto wait;
	}
	rc = super_start(&spec, &sup, err, errlen);
	free(argv);
	if (rc < 0)
		return rc;
	ns_note(changes, "started proxy supervisor %ld: cordon-proxy as %s on "
	    "%s:%d, allowlist %s, log %s", (long)sup, p->proxy_user,
	    p->gateway, p->port, o->allowlist, logp);
wait:
	until = time_mono_ms() + PROXY_WAIT_MS;
	while (!super_port_open(p->gateway, p->port, 200)) {
		if (time_mono_ms() >= until ||
		    (!systemd && super_alive(pidp, &sup) < 0)) {
			log_tail(p, tail, sizeof(tail));
			snprintf(err, errlen, "the proxy is not listening on "
			    "%s:%d (log %s: %s)", p->gateway, p->port, logp,
			    tail);
			return -ECONNREFUSED;
		}
		(void)usleep(100000);
	}
	return 0;
}

static int
state_write(const struct netsetup_params *p, const struct netsetup_up_opts *o,
    cJSON *proxy_argv, bool ours)
{
	cJSON *st = cJSON_CreateObject();
	char path[400], *text;
	int rc = -ENOMEM;

	if (st == NULL)
		return -ENOMEM;
	cJSON_AddStringToObject(st, "network", p->network);
	cJSON_AddStringToObject(st, "subnet", p->subnet);
	cJSON_AddStringToObject(st, "gateway", p->gateway);
	cJSON_AddNumberToObject(st, "port", p->port);
	cJSON_AddStringToObject(st, "allowlist", o->allowlist);
	cJSON_AddBoolToObject(st, "network_created", ours);
	cJSON_AddItemToObject(st, "proxy_argv", cJSON_Duplicate(proxy_argv,
	    true));
	if ((text = json_print_line(st)) != NULL) {
		state_path(p, "net.json", path, sizeof(path));
		rc = util_write_file_atomic(path, text, strlen(text), 0644);
		free(text);
	}
	cJSON_Delete(st);
	return rc;
}

static char *
changes_take(struct cbuf *changes)
{
	char *s = cbuf_steal(changes, NULL);

	cbuf_free(changes);
	return s != NULL ? s : strdup("");
}

int
netsetup_up(const struct netsetup_params *p,
    const struct netsetup_up_opts *o, char **changes_out, char *err,
    size_t errlen)
{
	struct cbuf *changes = cbuf_new(64 * 1024);
	cJSON *st = NULL, *want = NULL;
	const cJSON *recorded;
	bool ours = false;
	int rc, lock = -1;

	*changes_out = NULL;
	err[0] = '\0';
	if (changes == NULL)
		return -ENOMEM;
	if (o->allowlist == NULL || o->allowlist[0] != '/' ||
	    o->proxy_bin == NULL || o->proxy_bin[0] != '/') {
		snprintf(err, errlen, "internal: allowlist and proxy paths must "
		    "be absolute");
		rc = -EINVAL;
		goto out;
	}
	if ((lock = ns_lock(p, err, errlen)) < 0) {
		rc = lock;
		goto out;
	}
	/* Firewall first: the bridge never exists without it. */
	if ((rc = fwa_apply(p, FW_INET, changes, err, errlen)) < 0 ||
	    (rc = fwa_apply(p, FW_INET6, changes, err, errlen)) < 0)
		goto out;
	if ((rc = up_network(p, changes, &ours, err, errlen)) < 0)
		goto out;
	if ((rc = up_bridge_nf(changes, err, errlen)) < 0)
		goto out;
	/* Docker may have (re)made DOCKER-USER while creating the network:
	 * a second pass adds our jumps there. */
	if ((rc = fwa_apply(p, FW_INET, changes, err, errlen)) < 0 ||
	    (rc = fwa_apply(p, FW_INET6, changes, err, errlen)) < 0)
		goto out;
	st = state_read(p);
	recorded = cJSON_GetObjectItemCaseSensitive(st, "proxy_argv");
	if ((want = proxy_argv_json(p, o)) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = up_proxy(p, o, recorded, want, changes, err, errlen)) < 0)
		goto out;
	if (st != NULL) {
		const cJSON *created = cJSON_GetObjectItemCaseSensitive(st,
		    "network_created");
		ours = ours || cJSON_IsTrue(created);
	}
	rc = state_write(p, o, want, ours);
	if (rc < 0)
		snprintf(err, errlen, "cannot write %s/net.json", p->state_dir);
out:
	if (lock >= 0)
		close(lock);
	cJSON_Delete(st);
	cJSON_Delete(want);
	*changes_out = changes_take(changes);
	return rc;
}

/* ---- down ---- */

int
netsetup_down(const struct netsetup_params *p, char **changes_out,
    char *err, size_t errlen)
{
	struct cbuf *changes = cbuf_new(64 * 1024);
	char pidp[400], cpidp[400];
	cJSON *net = NULL;
	pid_t sup = 0;
	int rc, have, n, lock;
	bool had_state;

	*changes_out = NULL;
	err[0] = '\0';
	if (changes == NULL)
		return -ENOMEM;
	had_state = access(p->state_dir, F_OK) == 0;
	if ((lock = ns_lock(p, err, errlen)) < 0) {
		cbuf_free(changes);
		return lock;
	}
	have = dnet_inspect(p, &net, err, errlen);
	if (have < 0 && have != -ENOENT) {
		rc = have;
		goto out;
	}
	/* Taking the firewall away under a running sandbox would expose the
	 * host to it: refuse while anything is attached. */
	if (have == 0 && (n = dnet_containers(net)) > 0) {
		snprintf(err, errlen, "%d container(s) are still attached to %s: "
		    "stop them first (e.g. cordon kill-all); nothing removed",
		    n, p->network);
		rc = -EBUSY;
		goto out;
	}
	state_path(p, "supervisor.pid", pidp, sizeof(pidp));
	state_path(p, "proxy.pid", cpidp, sizeof(cpidp));
	(void)super_alive(pidp, &sup);
	if (super_stop(pidp, cpidp, 10000) == 0)
		ns_note(changes, "stopped proxy supervisor %ld and the proxy",
		    (long)sup);
	if ((rc = sd_stop(p, changes, err, errlen)) < 0)
		goto out;
	if (have == 0 && dnet_ours(net)) {
		if ((rc = dnet_remove(p, err, errlen)) < 0)
			goto out;
		ns_note(changes, "removed network %s", p->network);
	} else if (have == 0) {
		ns_note(changes, "left network %s alone (Cordon did not create "
		    "it)", p->network);
	}
	if ((rc = fwa_remove(p, FW_INET, changes, err, errlen)) < 0 ||
	    (rc = fwa_remove(p, FW_INET6, changes, err, errlen)) < 0)
		goto out;
	/* The state dir (record, pid files, proxy log, lock) was up's too;
	 * the lock we hold goes with it. */
	if (util_rm_rf(p->state_dir) == 0 && had_state)
		ns_note(changes, "removed %s", p->state_dir);
	rc = 0;
out:
	close(lock);
	cJSON_Delete(net);
	*changes_out = changes_take(changes);
	return rc;
}

/* ---- status ---- */

static void
status_network(const struct netsetup_params *p, cJSON *root, cJSON *drift)
{
	cJSON *o = cJSON_AddObjectToObject(root, "network"), *net = NULL;
	char why[512], err[256];
	int rc;

	cJSON_AddStringToObject(o, "name", p->network);
	cJSON_AddStringToObject(o, "bridge", p->bridge);
	cJSON_AddStringToObject(o, "subnet", p->subnet);
	cJSON_AddStringToObject(o, "gateway", p->gateway);
	rc = dnet_inspect(p, &net, err, sizeof(err));
	cJSON_AddBoolToObject(o, "present", rc == 0);
	if (rc == -ENOENT) {
		cJSON_AddItemToArray(drift, cJSON_CreateString("network "
		    "missing"));
		return;
	}
	if (rc < 0) {
		snprintf(why, sizeof(why), "network: cannot inspect: %s", err);
		cJSON_AddItemToArray(drift, cJSON_CreateString(why));
		return;
	}
	cJSON_AddBoolToObject(o, "created_by_cordon", dnet_ours(net));
	cJSON_AddNumberToObject(o, "containers", dnet_containers(net));
	if (dnet_check(net, p, why, sizeof(why)) > 0) {
		char line[600];
		cJSON_AddStringToObject(o, "wrong", why);
		snprintf(line, sizeof(line), "network wrong: %s", why);
		cJSON_AddItemToArray(drift, cJSON_CreateString(line));
	}
	cJSON_Delete(net);
}

static void
status_proxy(const struct netsetup_params *p, cJSON *root, cJSON *drift)
{
	cJSON *o = cJSON_AddObjectToObject(root, "proxy"), *st;
	char pidp[400], cpidp[400], logp[400], listen[40];
	pid_t sup = 0, child = 0;
	bool sup_ok, child_ok, open_ok;

	state_path(p, "supervisor.pid", pidp, sizeof(pidp));
	state_path(p, "proxy.pid", cpidp, sizeof(cpidp));
	state_path(p, "proxy.log", logp, sizeof(logp));
	snprintf(listen, sizeof(listen), "%s:%d", p->gateway, p->port);
	if (sd_installed(p)) {
		char name[64];
		sd_unit_name(p, name, sizeof(name));
		cJSON_AddStringToObject(o, "supervisor", "systemd");
		cJSON_AddStringToObject(o, "unit", name);
		sup_ok = sd_active(p);
		sup = 1;	/* systemd */
		child = sup_ok ? sd_main_pid(p) : 0;
		child_ok = child > 0;
	} else {
		cJSON_AddStringToObject(o, "supervisor", "pid-file");
		sup_ok = super_alive(pidp, &sup) == 0;
		child_ok = sup_ok && super_child_alive(cpidp, &child) == 0;
	}
	open_ok = child_ok && super_port_open(p->gateway, p->port, 1000);
	cJSON_AddStringToObject(o, "listen", listen);
	cJSON_AddStringToObject(o, "user", p->proxy_user);
	if (sup_ok)
		cJSON_AddNumberToObject(o, "supervisor_pid", sup);
	else
		cJSON_AddNullToObject(o, "supervisor_pid");
	if (child_ok)
		cJSON_AddNumberToObject(o, "proxy_pid", child);
	else
		cJSON_AddNullToObject(o, "proxy_pid");
	cJSON_AddBoolToObject(o, "listening", open_ok);
	cJSON_AddStringToObject(o, "log", logp);
	if ((st = state_read(p)) != NULL) {
		const cJSON *a = cJSON_GetObjectItemCaseSensitive(st,
		    "allowlist");
		if (cJSON_IsString(a))
			cJSON_AddStringToObject(o, "allowlist", a->valuestring);
		cJSON_Delete(st);
	}
	if (!sup_ok)
		cJSON_AddItemToArray(drift, cJSON_CreateString("proxy "
		    "supervisor not running"));
	else if (!child_ok)
		cJSON_AddItemToArray(drift, cJSON_CreateString("proxy dead "
		    "(supervisor restarting it)"));
	else if (!open_ok)
		cJSON_AddItemToArray(drift, cJSON_CreateString("proxy not "
		    "listening"));
}

int
netsetup_status(const struct netsetup_params *p, cJSON **out, char *err,
    size_t errlen)
{
	cJSON *root = cJSON_CreateObject(), *drift, *fw;
	int rc = 0;

	*out = NULL;
	err[0] = '\0';
	if (root == NULL)
		return -ENOMEM;
	drift = cJSON_AddArrayToObject(root, "drift");
	status_network(p, root, drift);
	fw = cJSON_AddObjectToObject(root, "firewall");
	cJSON_AddStringToObject(fw, "backend", fwa_backend());
	cJSON_AddStringToObject(fw, "input_chain", p->chain_in);
	cJSON_AddStringToObject(fw, "forward_chain", p->chain_fwd);
	rc = fwa_status(p, FW_INET, cJSON_AddObjectToObject(fw, "ipv4"), drift);
	if (rc == 0)
		rc = fwa_status(p, FW_INET6, cJSON_AddObjectToObject(fw, "ipv6"),
		    drift);
	status_proxy(p, root, drift);
	if (rc < 0) {
		snprintf(err, errlen, "cannot take the firewall status");
		cJSON_Delete(root);
		return rc;
	}
	cJSON_AddBoolToObject(root, "ok", cJSON_GetArraySize(drift) == 0);
	*out = root;
	return 0;
}

/* ---- runner ---- */

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
	if (ep != NULL) {
		snprintf(ep->gateway, sizeof(ep->gateway), "%s", p.gateway);
		ep->port = p.port;
	}
	return 0;
}

/* Sandbox keys are Docker's netns bind mounts; nothing else is entered. */
static bool
sandbox_key_ok(const char *k)
{
	return (strncmp(k, "/var/run/docker/netns/", 22) == 0 ||
	    strncmp(k, "/run/docker/netns/", 18) == 0) &&
	    strstr(k, "..") == NULL && strchr(k, ' ') == NULL;
}

int
netsetup_sandbox_seal(const struct config *c,
    const struct netsetup_endpoint *ep, const char *container, char *err,
    size_t errlen)
{
	const char *inspect[] = { c->docker, "inspect", "--format",
	    "{{.State.Running}} {{.HostConfig.NetworkMode}} "
	    "{{.NetworkSettings.SandboxKey}}", "--", container, NULL };
	char *out = NULL, running[16], mode[80], key[256], nsarg[280];
	char rules[512];
	int rc;

	rc = ns_run(inspect, NULL, &out, err, errlen);
	if (rc != 0) {
		free(out);
		return rc < 0 ? rc : -ENOENT;
	}
	if (sscanf(out, "%15s %79s %255s", running, mode, key) != 3 ||
	    strcmp(running, "true") != 0 ||
	    strcmp(mode, c->egress_network) != 0 || !sandbox_key_ok(key)) {
		snprintf(err, errlen, "container %s is not a running "
		    "proxy-mode container (inspect: %.120s)", container, out);
		free(out);
		return -EINVAL;
	}
	free(out);
	snprintf(nsarg, sizeof(nsarg), "--net=%s", key);
	for (int fam = 4; fam <= 6; fam += 2) {
		const char *restore[] = { "nsenter", nsarg, "--",
		    fam == 4 ? "iptables-restore" : "ip6tables-restore", "-w",
		    "--noflush", NULL };
		if ((rc = netsetup_seal_rules(fam, ep, rules,
		    sizeof(rules))) < 0)
			return rc;
		rc = ns_run(restore, rules, NULL, err, errlen);
		if (rc != 0) {
			char why[300];
			snprintf(why, sizeof(why), "%s", err);
			snprintf(err, errlen, "sealing %s (%s): %s", container,
			    restore[3], why);
			return rc < 0 ? rc : -EIO;
		}
	}
	return 0;
}
