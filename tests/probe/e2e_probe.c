/*
 * End-to-end probe tests under real runsc: `cordon probe` passes on the
 * real set-up and its record gates `cordon run`; then the probe program is
 * run against deliberately weakened `docker run` settings (built here, in
 * the test, from the runner's own argv builder: no CLI flag can do this)
 * and each weakening must fail exactly the control it concerns.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "common/proc.h"
#include "common/util.h"
#include "probe/probe.h"
#include "runner/docker_argv.h"
#include "runner/image.h"

static struct config cfg;
static char image[IMAGE_ID_MAX];
static char tmpdir[] = "/tmp/cordon-e2e-probe-XXXXXX";
static char netname[64], setid_image[IMAGE_ID_MAX];

static int
sh_quiet(const char *const *argv, struct cbuf **out, bool quiet)
{
	struct proc_opts o = { .argv = argv, .stdout_max = 1 << 20,
	    .stderr_max = 1 << 16 };
	struct proc_result r;
	int rc = proc_run(&o, 120000, &r);

	if (rc == 0 && r.exit_code != 0) {
		if (!quiet)
			fprintf(stderr, "%s failed: %s\n", argv[0],
			    cbuf_data(r.err));
		rc = -EIO;
	}
	if (rc == 0 && out != NULL) {
		*out = r.out;
		r.out = NULL;
	}
	proc_result_cleanup(&r);
	return rc;
}

static int
sh(const char *const *argv, struct cbuf **out)
{
	return sh_quiet(argv, out, false);
}

static int
missing(const char *what)
{
	const char *skip = getenv("CORDON_E2E");

	if (skip != NULL && strcmp(skip, "skip") == 0) {
		fprintf(stderr, "SKIP (CORDON_E2E=skip): %s\n", what);
		exit(77);
	}
	fprintf(stderr, "FAIL: %s (run scripts/setup and 'cordon image "
	    "build'; CORDON_E2E=skip only on a laptop)\n", what);
	return -1;
}

static int
setup(void **state)
{
	char err[256];
	const char *info[] = { "docker", "info", "--format",
	    "{{json .Runtimes}}", NULL };
	struct cbuf *out = NULL;

	(void)state;
	config_defaults(&cfg);
	if (sh(info, &out) < 0)
		return missing("dockerd is not answering");
	if (strstr(cbuf_data(out), "\"cordon-offline\"") == NULL) {
		cbuf_free(out);
		return missing("runtime cordon-offline is not registered");
	}
	cbuf_free(out);
	if (image_pinned_id(&cfg, image) < 0)
		return missing("no pinned sandbox image");
	if (mkdtemp(tmpdir) == NULL)
		return -1;
	(void)err;
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	if (netname[0] != '\0') {
		const char *rm[] = { "docker", "network", "rm", netname, NULL };
		(void)sh(rm, NULL);
	}
	if (setid_image[0] != '\0') {
		const char *rm[] = { "docker", "image", "rm", "-f", setid_image,
		    NULL };
		(void)sh(rm, NULL);
	}
	return util_rm_rf(tmpdir);
}

/* Writes a config with a private state dir; returns its path. */
static const char *
private_config(const char *name, bool require_probe)
{
	static char path[512];
	char text[1024];

	snprintf(path, sizeof(path), "%s/%s.json", tmpdir, name);
	snprintf(text, sizeof(text), "{\"state_dir\":\"%s/state-%s\","
	    "\"audit_log\":\"%s/audit.log\",\"require_probe\":%s,"
	    "\"image\":{\"id\":\"%s\"}}", tmpdir, name, tmpdir,
	    require_probe ? "true" : "false", image);
	assert_int_equal(util_write_file_atomic(path, text, strlen(text), 0644), 0);
	return path;
}

static struct proc_result
cordon(const char *config, const char *stdin_text, const char *a1,
    const char *a2)
{
	char bin[512];
	const char *argv[] = { bin, a1, a2, NULL };
	struct proc_opts o = { .argv = argv, .stdin_data = stdin_text,
	    .stdin_len = stdin_text ? strlen(stdin_text) : 0,
	    .stdout_max = 1 << 20, .stderr_max = 1 << 16 };
	struct proc_result r;

	snprintf(bin, sizeof(bin), "%s/cordon", getenv("CORDON_BUILD_ROOT"));
	setenv("CORDON_CONFIG", config, 1);
	assert_int_equal(proc_run(&o, 180000, &r), 0);
	unsetenv("CORDON_CONFIG");
	return r;
}

/* The real probe passes, records itself, and gates `cordon run`. */
static void
test_probe_passes_and_gates_runs(void **state)
{
	const char *cfgpath = private_config("gate", true);
	struct proc_result r;
	cJSON *j;

	(void)state;
	r = cordon(cfgpath, "print(1)\n", "run", NULL);
	assert_int_not_equal(r.exit_code, 0);
	assert_non_null(strstr(cbuf_data(r.err), "cordon probe --net none"));
	proc_result_cleanup(&r);

	r = cordon(cfgpath, NULL, "probe", NULL);
	if (r.exit_code != 0)
		fail_msg("probe failed: %s %s", cbuf_data(r.out), cbuf_data(r.err));
	j = cJSON_Parse(cbuf_data(r.out));
	assert_non_null(j);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "pass")));
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "controls")), 13);
	cJSON_Delete(j);
	proc_result_cleanup(&r);

	r = cordon(cfgpath, "print(6*7)\n", "run", NULL);
	assert_int_equal(r.exit_code, 0);
	assert_non_null(strstr(cbuf_data(r.out), "\"stdout\":\"42\\n\""));
	proc_result_cleanup(&r);
}

/* ---- weakened runs of the probe program -------------------------------- */

struct inspector {
	char name[64];
	volatile int stop;
	char *json;
};

static void *
inspect_main(void *arg)
{
	struct inspector *in = arg;

	while (!in->stop) {
		const char *argv[] = { "docker", "inspect", in->name, NULL };
		struct cbuf *out = NULL;
		/* Quiet: it does not exist until docker has created it. */
		if (sh_quiet(argv, &out, true) == 0 &&
		    strstr(cbuf_data(out), "\"Running\": true") != NULL) {
			in->json = cbuf_steal(out, NULL);
			cbuf_free(out);
			return NULL;
		}
		cbuf_free(out);
		usleep(200 * 1000);
	}
	return NULL;
}

enum edit_kind { E_NONE, E_DROP, E_DROP_PAIR, E_REPLACE, E_ADD };

struct weakening {
	const char *fails;		/* the one control that must fail */
	enum edit_kind kind;
	const char *match;		/* prefix of the argv element */
	const char *with[2];		/* replacement / added elements */
	bool setid_image;
	bool network;
};

static void
argv_remove(struct dargv *a, size_t i)
{
	free(a->v[i]);
	memmove(&a->v[i], &a->v[i + 1], (a->n - i) * sizeof(a->v[0]));
	a->n--;
}

static size_t
argv_find(const struct dargv *a, const char *prefix)
{
	for (size_t i = 0; i < a->n; i++)
		if (strncmp(a->v[i], prefix, strlen(prefix)) == 0)
			return i;
	fail_msg("argv has no %s", prefix);
	return 0;
}

static void
apply(struct dargv *a, const struct weakening *w)
{
	size_t i, img = argv_find(a, "sha256:");

	switch (w->kind) {
	case E_DROP:
		argv_remove(a, argv_find(a, w->match));
		break;
	case E_DROP_PAIR:
		i = argv_find(a, w->match);
		argv_remove(a, i);
		argv_remove(a, i - 1);
		break;
	case E_REPLACE:
		i = argv_find(a, w->match);
		free(a->v[i]);
		a->v[i] = strdup(w->with[0]);
		break;
	case E_ADD:
		for (int k = 1; k >= 0; k--) {
			if (w->with[k] == NULL)
				continue;
			memmove(&a->v[img + 1], &a->v[img],
			    (a->n - img + 1) * sizeof(a->v[0]));
			a->v[img] = strdup(w->with[k]);
			a->n++;
		}
		break;
	case E_NONE:
		break;
	}
}

static void
make_setid_image(void)
{
	char name[64], hex[9];
	struct cbuf *out = NULL;

	if (setid_image[0] != '\0')
		return;
	util_random_hex(hex, 4);
	snprintf(name, sizeof(name), "cordon-e2e-setid-%s", hex);
	{
		/* Under runc as root: the image itself gets a setuid file. */
		const char *run[] = { "docker", "run", "--name", name, "--label",
		    "cordon=1", "--network=none", "--user", "0", image, "python3",
		    "-c", "import os; open('/usr/local/bin/cordon-suid','w');"
		    "os.chmod('/usr/local/bin/cordon-suid', 0o4755)", NULL };
		const char *commit[] = { "docker", "commit", name, NULL };
		const char *rm[] = { "docker", "rm", "-f", name, NULL };
		assert_int_equal(sh(run, NULL), 0);
		assert_int_equal(sh(commit, &out), 0);
		(void)sh(rm, NULL);
	}
	util_strlcpy(setid_image, cbuf_data(out), sizeof(setid_image));
	setid_image[strcspn(setid_image, "\n")] = '\0';
	cbuf_free(out);
	assert_true(image_id_valid(setid_image));
}

static void
make_network(void)
{
	char hex[9];

	if (netname[0] != '\0')
		return;
	util_random_hex(hex, 4);
	snprintf(netname, sizeof(netname), "cordon-e2e-probe-%s", hex);
	{
		const char *create[] = { "docker", "network", "create",
		    "--internal", netname, NULL };
		assert_int_equal(sh(create, NULL), 0);
	}
}

static void
run_weakened(const struct weakening *w)
{
	struct utsname uts;
	struct probe_expect e = { .config = &cfg, .mode = "none",
	    .runtime = "cordon-offline", .runtime_is_runsc = true,
	    .marker_var = "CORDON_E2E_PROBE_MARKER" };
	struct docker_spec s = { .image_id = image, .runtime = "cordon-offline",
	    .network = "none", .session = "e2e-probe", .owner_pid = getpid(),
	    .deadline_epoch_s = time_wall_ms() / 1000 + 300,
	    .memory = cfg.limits.memory_bytes, .cpus = cfg.limits.cpus };
	struct inspector in = { .stop = 0 };
	struct proc_opts o = { .stdout_max = 1 << 20, .stderr_max = 1 << 16 };
	struct proc_result r;
	struct probe_report rep;
	struct dargv a;
	char hex[17], *code;
	pthread_t th;

	uname(&uts);
	e.host_release = uts.release;
	if (w->setid_image) {
		make_setid_image();
		s.image_id = setid_image;
	}
	if (w->network) {
		make_network();
		s.network = netname;
	}
	util_random_hex(hex, 8);
	snprintf(in.name, sizeof(in.name), "cordon-%s", hex);
	s.name = in.name;
	assert_int_equal(docker_run_argv(&cfg, &s, &a), 0);
	apply(&a, w);
	if (strcmp(w->fails, "gvisor_kernel") == 0)
		e.runtime = "runc";
	code = probe_program(&e);
	o.argv = (const char *const *)a.v;
	o.stdin_data = code;
	o.stdin_len = strlen(code);
	setenv("CORDON_E2E_PROBE_MARKER", "1", 1);
	assert_int_equal(pthread_create(&th, NULL, inspect_main, &in), 0);
	assert_int_equal(proc_run(&o, 180000, &r), 0);
	in.stop = 1;
	pthread_join(th, NULL);
	{
		const char *rm[] = { "docker", "rm", "-f", in.name, NULL };
		(void)sh(rm, NULL);
	}
	probe_evaluate(&e, cbuf_data(r.out), cbuf_len(r.out), in.json,
	    in.json ? strlen(in.json) : 0, &rep);
	assert_false(rep.pass);
	for (size_t i = 0; i < rep.ncontrols; i++) {
		bool should_fail = strcmp(rep.controls[i].name, w->fails) == 0;
		if (rep.controls[i].pass == should_fail)
			fail_msg("weakening for %s: control %s pass=%d (%s) "
			    "[stderr %.300s]", w->fails, rep.controls[i].name,
			    rep.controls[i].pass, rep.controls[i].observed,
			    cbuf_data(r.err));
	}
	free(in.json);
	free(code);
	dargv_cleanup(&a);
	proc_result_cleanup(&r);
}

static const struct weakening weakenings[] = {
	{ "rootfs_readonly", E_DROP, "--read-only", { NULL, NULL }, false, false },
	{ "capabilities", E_REPLACE, "--cap-drop=ALL", { "--cap-add=NET_RAW", NULL }, false, false },
	{ "no_new_privileges", E_DROP, "--security-opt=no-new-privileges", { NULL, NULL }, false, false },
	{ "gvisor_kernel", E_REPLACE, "--runtime=", { "--runtime=runc", NULL }, false, false },
	{ "network", E_NONE, NULL, { NULL, NULL }, false, true },
	{ "no_setid_files", E_NONE, NULL, { NULL, NULL }, true, false },
	{ "environment", E_ADD, NULL, { "--env", "CORDON_LEAK=1" }, false, false },
	{ "memory_limit", E_REPLACE, "--memory-swap=", { "--memory-swap=-1", NULL }, false, false },
	{ "process_limit", E_DROP_PAIR, "nproc=", { NULL, NULL }, false, false },
	{ "file_size_limit", E_DROP_PAIR, "fsize=", { NULL, NULL }, false, false },
	{ "tmp_writable_noexec", E_REPLACE, "/tmp:rw,noexec", { "/tmp:rw,exec,nosuid,nodev,size=67108864", NULL }, false, false },
	{ "user", E_REPLACE, "65534:65534", { "1000:1000", NULL }, false, false },
	{ "no_host_mounts", E_ADD, NULL, { "--volume", "/etc/hostname:/host-hostname:ro" }, false, false },
};

static void
test_each_weakening_is_caught(void **state)
{
	const char *only = getenv("CORDON_E2E_PROBE_ONLY");
	size_t ran = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(weakenings) / sizeof(weakenings[0]); i++) {
		if (only != NULL && strcmp(only, weakenings[i].fails) != 0)
			continue;
		fprintf(stderr, "weakening: %s\n", weakenings[i].fails);
		run_weakened(&weakenings[i]);
		ran++;
	}
	/* A selector that names no weakening must not pass with none run. */
	if (ran == 0)
		fail_msg("CORDON_E2E_PROBE_ONLY=%s names no weakening", only);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_probe_passes_and_gates_runs),
		cmocka_unit_test(test_each_weakening_is_caught),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
