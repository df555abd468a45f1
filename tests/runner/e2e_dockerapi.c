/* End-to-end tests of the Engine API cold path (runner/apirun.h) beside
 * the CLI path, with real dockerd and runsc: the same spec makes the same
 * container either way (`docker inspect`), the same jobs give the same
 * result fields, removal from outside and `cordon kill-all` (scoped to
 * this test's own containers) are never "ok", and `cordon probe --net
 * none` passes on the API path. Which path ran is checked from /proc:
 * the CLI path has a `docker run` child for the whole run, the API path
 * none.
 * FAIL when docker, the runtime or the image is missing, unless
 * CORDON_E2E=skip (then exit 77). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/config.h"
#include "common/json.h"
#include "common/proc.h"
#include "common/util.h"
#include "netsetup/netsetup.h"
#include "runner/apirun.h"
#include "runner/container.h"
#include "runner/docker_argv.h"
#include "runner/dockerapi.h"
#include "runner/image.h"
#include "runner/runner.h"
#include "e2e_result.h"

static char cordon[512];
static char tmp[64];
static char cfg_api[128], cfg_cli[128], cfg_kill[128];
static char image_id[IMAGE_ID_MAX];
static struct config cfg;

typedef void (*tick_fn)(pid_t pid, void *arg);

/* Whether pid has a child `docker run` (the CLI path's container; other
 * docker calls, e.g. the probe's host-side inspections, do not count). */
static bool
has_docker_child(pid_t pid)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	bool found = false;

	if (d == NULL)
		return false;
	while (!found && (e = readdir(d)) != NULL) {
		char path[300], *text = NULL, *rp;
		size_t len;
		int ppid = 0;
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		if (util_read_file(path, 4096, &text, &len) < 0)
			continue;
		/* pid (comm) state ppid ... */
		if ((rp = strrchr(text, ')')) != NULL &&
		    sscanf(rp + 2, "%*c %d", &ppid) == 1 && ppid == pid &&
		    strstr(text, "(docker)") != NULL) {
			free(text);
			snprintf(path, sizeof(path), "/proc/%s/cmdline",
			    e->d_name);
			if (util_read_file(path, 4096, &text, &len) < 0)
				continue;
			/* argv: docker NUL run NUL ... */
			found = len > 11 && memcmp(text + strlen(text),
			    "\0run\0", 5) == 0;
		}
		free(text);
	}
	closedir(d);
	return found;
}

static void
run_cordon(const char *config, const char *code, const char *const *args,
    int64_t limit_ms, tick_fn tick, void *arg, struct e2e *r)
{
	const char *argv[24] = { cordon };
	size_t n = 1;
	struct proc_opts o = { .argv = argv, .stdin_data = code,
	    .stdin_len = strlen(code), .stdout_max = 64 << 20,
	    .stderr_max = 1 << 20 };
	struct proc *p;
	int64_t t0 = time_mono_ms();
	const char *s;
	int rc;

	memset(r, 0, sizeof(*r));
	setenv("CORDON_CONFIG", config, 1);
	for (; args != NULL && *args != NULL && n < 22; args++)
		argv[n++] = *args;
	assert_int_equal(proc_spawn(&o, &p), 0);
	for (;;) {
		rc = proc_communicate(p, time_mono_ms() + 100, NULL);
		if (rc != -ETIMEDOUT)
			break;
		r->ticks++;
		if (has_docker_child(proc_pid(p)))
			r->docker_kids++;
		if (tick != NULL)
			tick(proc_pid(p), arg);
		if (time_mono_ms() - t0 > limit_ms) {
			proc_kill(p, SIGKILL);
			fail_msg("cordon took more than %lld ms",
			    (long long)limit_ms);
		}
	}
	(void)proc_reap(p, 0);
	r->exit = proc_exit_code(p);
	r->out = strdup(cbuf_data(proc_stdout(p)));
	r->err = strdup(cbuf_data(proc_stderr(p)));
	proc_free(p);
	r->json = cJSON_Parse(r->out);
	if (r->json != NULL && json_get_string(r->json, "container", &s) == 0)
		util_strlcpy(r->container, s, sizeof(r->container));
}

static char *
docker_out(const char *const *args)
{
	const char *argv[16] = { "docker" };
	struct proc_opts o = { .argv = argv, .stdout_max = 1 << 20,
	    .stderr_max = 4096 };
	struct proc_result r;
	size_t n = 1;
	char *s;

	for (; *args != NULL && n < 15; args++)
		argv[n++] = *args;
	assert_int_equal(proc_run(&o, 30000, &r), 0);
	s = strdup(cbuf_data(r.out));
	proc_result_cleanup(&r);
	return s;
}

static void
assert_container_gone(const char *name)
{
	char filter[96], *s;
	const char *args[] = { "ps", "-a", "-q", "--filter", filter, NULL };

	assert_true(strncmp(name, "cordon-", 7) == 0);
	snprintf(filter, sizeof(filter), "name=^%s$", name);
	s = docker_out(args);
	if (s[0] != '\0')
		fail_msg("container %s still exists", name);
	free(s);
}

/* Which path ran: the CLI's `docker run` is seen on most ticks of a run
 * that lasts a few of them; the API path never has one. */
static void
assert_path(const struct e2e *r, bool api)
{
	if (api && r->docker_kids != 0)
		fail_msg("API path, but a docker child on %d of %d ticks",
		    r->docker_kids, r->ticks);
	if (!api && r->ticks > 2 && r->docker_kids == 0)
		fail_msg("CLI path, but no docker child in %d ticks",
		    r->ticks);
}

/* ---- the same container either way ---- */

static void
rm_quiet(const char *name)
{
	const char *args[] = { "rm", "-f", name, NULL };

	free(docker_out(args));
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One inspect value as text for comparison: absent, null, [] and {} are
 * all "nothing set" (the CLI sends empty ones, the API body leaves them
 * out); Env is a set (its order differs, its meaning does not). */
static char *
canon(const char *key, const cJSON *v)
{
	char *list[64], *s, *p;
	size_t n = 0, len = 2;

	if (v == NULL || cJSON_IsNull(v) || ((cJSON_IsArray(v) ||
	    cJSON_IsObject(v)) && v->child == NULL))
		return strdup("(empty)");
	if (strcmp(key, "Env") != 0 || !cJSON_IsArray(v))
		return cJSON_PrintUnformatted(v);
	for (const cJSON *e = v->child; e != NULL && n < 64; e = e->next) {
		list[n] = cJSON_IsString(e) ? e->valuestring : (char *)"?";
		len += strlen(list[n++]) + 1;
	}
	qsort(list, n, sizeof(*list), cmp_str);
	p = s = malloc(len);
	assert_non_null(s);
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "%s;", list[i]);
	*p = '\0';
	return s;
}

/* Every field of docker inspect that says how the container is confined
 * or what it runs, API-created vs CLI-created from the same start under
 * config c; returns the API one's inspect text (caller frees). */
static char *
inspect_twins(const struct config *c, struct container_start cs)
{
	static const char *const host_keys[] = {
		"Runtime", "NetworkMode", "CapDrop", "CapAdd", "SecurityOpt",
		"ReadonlyRootfs", "Tmpfs", "Memory", "MemorySwap", "NanoCpus",
		"Ulimits", "PidsLimit", "IpcMode", "LogConfig", "Mounts",
		"Binds", "Privileged", "PidMode", "UsernsMode", "UTSMode",
		"CgroupnsMode", "Devices", "OomKillDisable", "Init",
		"AutoRemove", "PublishAllPorts", "ReadonlyPaths", "MaskedPaths",
		"ShmSize", "CpuShares", "CpuQuota", "CpuPeriod",
		"MemoryReservation", "KernelMemory", "Sysctls", "GroupAdd",
		"Dns", "DnsOptions", "DnsSearch", "ExtraHosts", "RestartPolicy",
	};
	static const char *const cfg_keys[] = {
		"User", "WorkingDir", "Env", "Cmd", "Entrypoint", "Labels",
		"Image", "OpenStdin", "StdinOnce", "AttachStdin",
		"AttachStdout", "AttachStderr", "Tty", "Volumes",
		"NetworkDisabled", "ExposedPorts", "StopSignal",
	};
	char hex[17], n_api[40], n_cli[40], *body, path[96];
	struct docker_spec spec;
	struct dockerapi_resp resp;
	struct dargv a;
	struct proc_opts o = { .stdout_max = 1 << 16, .stderr_max = 1 << 16 };
	struct proc_result pr;
	char *ja, *jc, diffs[4096] = "";
	cJSON *ra, *rc, *ia, *ic;

	assert_int_equal(util_random_hex(hex, 8), 0);
	snprintf(n_api, sizeof(n_api), "cordon-a%s", hex);
	snprintf(n_cli, sizeof(n_cli), "cordon-c%s", hex);
	/* API */
	cs.name = n_api;
	container_spec(c, &cs, &spec);
	assert_int_equal(dockerapi_create_body(c, &spec, &body), 0);
	snprintf(path, sizeof(path), "/containers/create?name=%s", n_api);
	assert_int_equal(dockerapi_call(DOCKERAPI_SOCKET, "POST", path, body,
	    time_mono_ms() + 30000, &resp), 0);
	free(body);
	if (resp.status != 201)
		fail_msg("create: %d %s", resp.status, resp.body);
	dockerapi_resp_cleanup(&resp);
	/* CLI: the run argv, as `docker create` */
	cs.name = n_cli;
	container_spec(c, &cs, &spec);
	assert_int_equal(docker_run_argv(c, &spec, &a), 0);
	assert_string_equal(a.v[1], "run");
	free(a.v[1]);
	a.v[1] = strdup("create");
	o.argv = (const char *const *)a.v;
	assert_int_equal(proc_run(&o, 30000, &pr), 0);
	if (pr.exit_code != 0)
		fail_msg("docker create: %s", cbuf_data(pr.err));
	proc_result_cleanup(&pr);
	dargv_cleanup(&a);
	{
		const char *ai[] = { "inspect", n_api, NULL };
		const char *ci[] = { "inspect", n_cli, NULL };
		ja = docker_out(ai);
		jc = docker_out(ci);
	}
	rm_quiet(n_api);
	rm_quiet(n_cli);
	ra = cJSON_Parse(ja);
	rc = cJSON_Parse(jc);
	ia = cJSON_GetArrayItem(ra, 0);
	ic = cJSON_GetArrayItem(rc, 0);
	assert_non_null(ia);
	assert_non_null(ic);
	/* The listed keys (absent on both sides is equal), then every
	 * other key the CLI's has, except the container's own hostname. */
	for (size_t pass = 0; pass < 4; pass++) {
		const char *sect = pass % 2 == 0 ? "HostConfig" : "Config";
		const char *const *keys = pass % 2 == 0 ? host_keys : cfg_keys;
		size_t nk = pass % 2 == 0 ?
		    sizeof(host_keys) / sizeof(*host_keys) :
		    sizeof(cfg_keys) / sizeof(*cfg_keys);
		cJSON *sa = cJSON_GetObjectItem(ia, sect);
		cJSON *sc = cJSON_GetObjectItem(ic, sect);
		cJSON *it = pass < 2 ? NULL : sc->child;
		for (size_t k = 0; pass < 2 ? k < nk : it != NULL; k++) {
			const char *key = pass < 2 ? keys[k] : it->string;
			cJSON *va = cJSON_GetObjectItem(sa, key);
			cJSON *vc = cJSON_GetObjectItem(sc, key);
			char *pa, *pc;
			if (pass >= 2)
				it = it->next;
			if (pass >= 2 && strcmp(key, "Hostname") == 0)
				continue;
			pa = canon(key, va);
			pc = canon(key, vc);
			if (strcmp(pa, pc) != 0)
				snprintf(diffs + strlen(diffs), sizeof(diffs) -
				    strlen(diffs), "\n  %s.%s: API %s, CLI %s",
				    sect, key, pa, pc);
			free(pa);
			free(pc);
		}
	}
	if (diffs[0] != '\0')
		fail_msg("API and CLI containers differ:%s", diffs);
	/* The hardening itself, not only equality. */
	assert_non_null(strstr(ja, "\"CapDrop\": [\n                \"ALL\""));
	assert_non_null(strstr(ja, "\"no-new-privileges\""));
	assert_non_null(strstr(ja, "\"ReadonlyRootfs\": true"));
	cJSON_Delete(ra);
	cJSON_Delete(rc);
	free(jc);
	return ja;
}

static char twin_net[40];		/* the proxy twins' network, until
					 * removed */

static void
net_rm_quiet(void)
{
	const char *args[] = { "network", "rm", twin_net, NULL };

	if (twin_net[0] != '\0')
		free(docker_out(args));
	twin_net[0] = '\0';
}

static struct runner_limits twin_lim = { .timeout_s = 10,
    .max_output = 1024, .memory = 256 << 20, .cpus = 0.5 };

static void
test_inspect_api_vs_cli(void **state)
{
	char in_dir[96], *ja;
	struct container_start cs = { .image = image_id, .session = "e2e-api",
	    .lim = &twin_lim, .label_deadline_s = 2000000000,
	    .in_dir = in_dir };

	(void)state;
	snprintf(in_dir, sizeof(in_dir), "%s/in", tmp);
	assert_int_equal(mkdir(in_dir, 0755), 0);
	ja = inspect_twins(&cfg, cs);
	assert_non_null(strstr(ja, "\"Runtime\": \"cordon-offline\""));
	assert_non_null(strstr(ja, "\"NetworkMode\": \"none\""));
	free(ja);
	(void)util_rm_rf(in_dir);
}

/* Proxy mode's twins: the options netsetup_run_args gives a run (its
 * network, --dns, --env), the CA bundle and resolv.conf mounts and the
 * prelude, on a bridge network of this test's own (config egress_network
 * names it; the runtime is the offline one: only the create is compared,
 * nothing starts). */
static void
test_inspect_api_vs_cli_proxy(void **state)
{
	struct config pc = cfg;
	struct netsetup_endpoint ep = { .gateway = "10.213.0.1", .port = 3128 };
	struct netsetup_run_args na;
	char hex[9], net[40], dir[200], *ja, *s;
	struct container_start cs = { .image = image_id, .session = "e2e-api",
	    .lim = &twin_lim, .label_deadline_s = 2000000000, .na = &na };

	(void)state;
	assert_int_equal(util_random_hex(hex, 4), 0);
	snprintf(net, sizeof(net), "cordon-e2e-api-%s", hex);
	/* Removed by group_teardown too, if a check fails. */
	util_strlcpy(twin_net, net, sizeof(twin_net));
	{
		const char *args[] = { "network", "create", "--label",
		    "cordon.e2e=1", net, NULL };
		free(docker_out(args));
	}
	util_strlcpy(pc.egress_network, net, sizeof(pc.egress_network));
	util_strlcpy(pc.runtime_egress, cfg.runtime_offline,
	    sizeof(pc.runtime_egress));
	util_strlcpy(pc.state_dir, tmp, sizeof(pc.state_dir));
	assert_int_equal(netsetup_run_args(&pc, &ep, &na), 0);
	snprintf(dir, sizeof(dir), "%s/egress-ca", tmp);
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_int_equal(util_write_file_atomic(na.ca_bundle, "x\n", 2, 0644),
	    0);
	snprintf(dir, sizeof(dir), "%s/net-%s", tmp, pc.egress_bridge);
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_int_equal(util_write_file_atomic(na.resolv_conf, "nameserver 10.213.0.1\n",
	    22, 0644), 0);
	ja = inspect_twins(&pc, cs);
	net_rm_quiet();
	s = strstr(ja, "\"NetworkMode\": \"");
	assert_non_null(s);
	assert_int_equal(strncmp(s + 16, net, strlen(net)), 0);
	assert_non_null(strstr(ja, "\"10.213.0.1\""));
	assert_non_null(strstr(ja, "\"Destination\": \"/etc/resolv.conf\""));
	assert_non_null(strstr(ja, "\"NO_PROXY=\""));
	free(ja);
}

/* ---- the same results either way ---- */

struct job {
	const char *what, *code;
	const char *args[8];
	const char *status;
	int exit_code;
	const char *out, *err;		/* NULL: not compared exactly */
	bool out_trunc;
};

static const struct job jobs[] = {
	{ "print", "print(1)\n", { "run", NULL }, "ok", 0, "1\n", "", false },
	{ "stderr and exit 3", "import sys\nprint('o')\n"
	    "print('e', file=sys.stderr)\nsys.exit(3)\n", { "run", NULL }, "ok",
	    3, "o\n", "e\n", false },
	{ "output cap", "import sys\nsys.stdout.write('y' * 100000)\n",
	    { "run", "--max-output", "1000", NULL }, "output_truncated", 0,
	    NULL, "", true },
	{ "timeout", "import time\ntime.sleep(60)\n",
	    { "run", "--timeout", "2", NULL }, "timeout", -1, "", "", false },
	{ "oom", "x = bytearray(1 << 30)\nprint('survived')\n",
	    { "run", "--memory", "128m", "--timeout", "60", NULL }, "oom", 137,
	    "", NULL, false },
};

static void
check_job(const struct job *j, const struct e2e *r, const char *path)
{
	if (r->exit != 0 || r->json == NULL)
		fail_msg("%s (%s): cordon exit %d: %s %s", j->what, path,
		    r->exit, r->out, r->err);
	if (strcmp(jstr(r, "status"), j->status) != 0)
		fail_msg("%s (%s): status %s: %s", j->what, path,
		    jstr(r, "status"), r->out);
	assert_int_equal(jint(r, "exit_code"), j->exit_code);
	if (j->out != NULL && strcmp(jstr(r, "stdout"), j->out) != 0)
		fail_msg("%s (%s): stdout %s", j->what, path,
		    jstr(r, "stdout"));
	if (j->err != NULL && strcmp(jstr(r, "stderr"), j->err) != 0)
		fail_msg("%s (%s): stderr %s", j->what, path,
		    jstr(r, "stderr"));
	assert_int_equal(jbool(r, "stdout_truncated"), j->out_trunc);
	assert_false(jbool(r, "stderr_truncated"));
	assert_container_gone(r->container);
}

static void
test_same_results(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++) {
		const struct job *j = &jobs[i];
		struct e2e ra, rc;
		run_cordon(cfg_api, j->code, j->args, 90000, NULL, NULL, &ra);
		check_job(j, &ra, "api");
		assert_path(&ra, true);
		run_cordon(cfg_cli, j->code, j->args, 90000, NULL, NULL, &rc);
		check_job(j, &rc, "cli");
		assert_path(&rc, false);
		if (j->out == NULL)
			assert_string_equal(jstr(&ra, "stdout"),
			    jstr(&rc, "stdout"));
		e2e_free(&ra);
		e2e_free(&rc);
	}
}

/* ---- stopped from outside ---- */

struct outside {
	bool done, kill_all;
};

static char *
own_container(pid_t pid)
{
	char filter[64];
	const char *args[] = { "ps", "-q", "--filter", filter, NULL };
	char *ids;

	snprintf(filter, sizeof(filter), "label=cordon.owner_pid=%d",
	    (int)pid);
	ids = docker_out(args);
	ids[strcspn(ids, "\n")] = '\0';
	return ids;
}

/* Once the run's container runs: `docker rm -f` it, or `cordon kill-all`
 * through a docker wrapper that lists only this run's containers (on a
 * shared daemon a real kill-all would remove other people's jobs). */
static void
outside_tick(pid_t pid, void *arg)
{
	struct outside *x = arg;
	char *ids, env_cfg[160], env_owner[64], env_path[600];
	const char *argv[] = { cordon, "kill-all", NULL };
	const char *envp[] = { env_cfg, env_owner, env_path, NULL };
	struct proc_opts o = { .argv = argv, .envp = envp,
	    .stdout_max = 4096, .stderr_max = 4096 };
	struct proc_result kr;

	if (x->done)
		return;
	ids = own_container(pid);
	if (ids[0] != '\0') {
		(void)poll(NULL, 0, 1500);
		if (x->kill_all) {
			snprintf(env_cfg, sizeof(env_cfg), "CORDON_CONFIG=%s",
			    cfg_kill);
			snprintf(env_owner, sizeof(env_owner),
			    "E2E_OWNER_PID=%d", (int)pid);
			snprintf(env_path, sizeof(env_path), "PATH=%s",
			    getenv("PATH"));
			assert_int_equal(proc_run(&o, 60000, &kr), 0);
			if (kr.exit_code != 0)
				fail_msg("kill-all: %s", cbuf_data(kr.err));
			proc_result_cleanup(&kr);
		} else {
			rm_quiet(ids);
		}
		x->done = true;
	}
	free(ids);
}

static void
stopped_from_outside(const char *config, bool api, bool kill_all)
{
	const char *args[] = { "run", "--timeout", "120", NULL };
	struct outside x = { .kill_all = kill_all };
	struct e2e r;
	const char *st;

	run_cordon(config, "import time\ntime.sleep(100)\n", args, 60000,
	    outside_tick, &x, &r);
	assert_true(x.done);
	st = jstr(&r, "status");
	if (strcmp(st, "sandbox_error") != 0 &&
	    (!kill_all || strcmp(st, "closed_early") != 0))
		fail_msg("%s during a cold %s run gave %s: %s", kill_all ?
		    "kill-all" : "docker rm -f", api ? "API" : "CLI", st, r.out);
	assert_container_gone(r.container);
	e2e_free(&r);
}

static void
test_removed_from_outside(void **state)
{
	(void)state;
	stopped_from_outside(cfg_api, true, false);
	stopped_from_outside(cfg_cli, false, false);
}

static void
test_kill_all_during_cold_run(void **state)
{
	(void)state;
	stopped_from_outside(cfg_api, true, true);
	stopped_from_outside(cfg_cli, false, true);
}

/* ---- the probe on the API path ---- */

static void
test_probe_api(void **state)
{
	char state_dir[96], path[128], text[512];
	const char *args[] = { "probe", "--net", "none", NULL };
	struct e2e r;

	(void)state;
	snprintf(state_dir, sizeof(state_dir), "%s/probe-state", tmp);
	assert_int_equal(mkdir(state_dir, 0700), 0);
	snprintf(path, sizeof(path), "%s/probe.json", tmp);
	snprintf(text, sizeof(text), "{\"state_dir\":\"%s\",\"audit_log\":"
	    "\"%s/audit.log\",\"image\":{\"id\":\"%s\"},\"docker_api\":"
	    "\"auto\"}", state_dir, tmp, image_id);
	assert_int_equal(util_write_file_atomic(path, text, strlen(text),
	    0600), 0);
	run_cordon(path, "", args, 120000, NULL, NULL, &r);
	if (r.exit != 0)
		fail_msg("probe --net none on the API path failed (%d): %s %s",
		    r.exit, r.out, r.err);
	assert_path(&r, true);
	e2e_free(&r);
}

/* ---- set-up ---- */

static int
write_config(const char *path, const char *api, const char *docker)
{
	char text[768];

	snprintf(text, sizeof(text), "{\"audit_log\":\"%s/audit.log\","
	    "\"docker_api\":\"%s\",\"docker\":\"%s\"}", tmp, api, docker);
	return util_write_file_atomic(path, text, strlen(text), 0600);
}

/* A docker that lists only E2E_OWNER_PID's containers and passes every
 * other command to the real one. */
static const char wrapper[] =
"#!/bin/sh\n"
"if [ \"$1\" = ps ]; then\n"
"  shift; exec docker ps --filter \"label=cordon.owner_pid=$E2E_OWNER_PID\" \"$@\"\n"
"fi\n"
"exec docker \"$@\"\n";

static int
group_setup(void **state)
{
	const char *root = getenv("CORDON_BUILD_ROOT");
	const char *skip = getenv("CORDON_E2E");
	char err[512], wpath[128];

	(void)state;
	snprintf(cordon, sizeof(cordon), "%s/cordon",
	    root != NULL ? root : ".");
	strcpy(tmp, "/tmp/cordon-e2e-api.XXXXXX");
	if (mkdtemp(tmp) == NULL || chmod(tmp, 0755) < 0)
		return -1;
	snprintf(cfg_api, sizeof(cfg_api), "%s/api.json", tmp);
	snprintf(cfg_cli, sizeof(cfg_cli), "%s/cli.json", tmp);
	snprintf(cfg_kill, sizeof(cfg_kill), "%s/kill.json", tmp);
	snprintf(wpath, sizeof(wpath), "%s/docker-own", tmp);
	if (util_write_file_atomic(wpath, wrapper, strlen(wrapper), 0755) < 0 ||
	    write_config(cfg_api, "auto", "docker") < 0 ||
	    write_config(cfg_cli, "never", "docker") < 0 ||
	    write_config(cfg_kill, "never", wpath) < 0 ||
	    config_load(&cfg, cfg_api, err, sizeof(err)) < 0)
		return -1;
	if (runner_preflight(&cfg, RUNNER_NET_NONE, err, sizeof(err)) < 0 ||
	    image_pinned_id(&cfg, image_id) < 0 || !dockerapi_usable(&cfg)) {
		if (skip != NULL && strcmp(skip, "skip") == 0) {
			fprintf(stderr, "SKIP (CORDON_E2E=skip): %s\n", err);
			(void)util_rm_rf(tmp);
			exit(77);
		}
		fprintf(stderr, "API e2e needs dockerd at %s, the runsc runtime "
		    "and the pinned image: %s\n", DOCKERAPI_SOCKET, err);
		return -1;
	}
	return 0;
}

static int
group_teardown(void **state)
{
	(void)state;
	net_rm_quiet();
	return util_rm_rf(tmp);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inspect_api_vs_cli),
		cmocka_unit_test(test_inspect_api_vs_cli_proxy),
		cmocka_unit_test(test_same_results),
		cmocka_unit_test(test_removed_from_outside),
		cmocka_unit_test(test_kill_all_during_cold_run),
		cmocka_unit_test(test_probe_api),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
