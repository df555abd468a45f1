/* Unit tests for probe judging: a real good observation passes, and each
 * weakened observation fails exactly the control it concerns. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "probe/probe.h"

static char *inside_good, *inspect_good;
static struct config cfg;

static struct probe_expect
expect(void)
{
	struct probe_expect e = { .config = &cfg, .mode = "none",
	    .host_release = "6.18.44-test", .runtime = "cordon-offline",
	    .runtime_is_runsc = true, .marker_var = "CORDON_PROBE_MARKER_1" };
	return e;
}

static int
setup(void **state)
{
	char path[512];
	const char *src = getenv("CORDON_SOURCE_ROOT");
	(void)state;
	config_defaults(&cfg);
	snprintf(path, sizeof(path), "%s/tests/probe/data/inside-good.json", src);
	if (util_read_file(path, 1 << 20, &inside_good, NULL) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/tests/probe/data/inspect-good.json", src);
	if (util_read_file(path, 1 << 20, &inspect_good, NULL) < 0)
		return -1;
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	free(inside_good);
	free(inspect_good);
	return 0;
}

static void
test_good_passes(void **state)
{
	struct probe_expect e = expect();
	struct probe_report rep;
	(void)state;
	probe_evaluate(&e, inside_good, strlen(inside_good), inspect_good,
	    strlen(inspect_good), &rep);
	for (size_t i = 0; i < rep.ncontrols; i++)
		if (!rep.controls[i].pass)
			fail_msg("%s: %s", rep.controls[i].name,
			    rep.controls[i].observed);
	assert_true(rep.pass);
	assert_int_equal(rep.ncontrols, 13);
}

/* Replaces (or with value NULL deletes) the item at a dotted path. */
static void
set_path(cJSON *root, const char *path, const char *value)
{
	char buf[128], *last;
	cJSON *o = root;

	snprintf(buf, sizeof(buf), "%s", path);
	while ((last = strchr(buf, '.')) != NULL) {
		*last = '\0';
		o = cJSON_GetObjectItemCaseSensitive(o, buf);
		assert_non_null(o);
		memmove(buf, last + 1, strlen(last + 1) + 1);
	}
	if (value == NULL)
		cJSON_DeleteItemFromObjectCaseSensitive(o, buf);
	else {
		cJSON *v = cJSON_Parse(value);
		assert_non_null(v);
		if (cJSON_GetObjectItemCaseSensitive(o, buf) != NULL)
			cJSON_ReplaceItemInObjectCaseSensitive(o, buf, v);
		else
			cJSON_AddItemToObject(o, buf, v);
	}
}

static const struct mutation {
	int doc;		/* 0 inside, 1 inspect (first element) */
	const char *path;
	const char *value;	/* JSON, or NULL to delete */
	const char *fails;	/* the one control that must fail */
} mutations[] = {
	{ 0, "uid", "0", "user" },
	{ 0, "uid", "\"65534\"", "user" },
	{ 1, "Config.User", "\"\"", "user" },
	{ 1, "HostConfig.ReadonlyRootfs", "false", "rootfs_readonly" },
	{ 0, "tmp_exec_errno", "0", "tmp_writable_noexec" },
	{ 0, "tmp_write", "false", "tmp_writable_noexec" },
	{ 0, "status.CapEff", "\"00000000a80425fb\"", "capabilities" },
	{ 1, "HostConfig.CapAdd", "[\"NET_RAW\"]", "capabilities" },
	{ 1, "HostConfig.CapDrop", "null", "capabilities" },
	{ 1, "HostConfig.Privileged", "true", "capabilities" },
	{ 1, "HostConfig.SecurityOpt", "[]", "no_new_privileges" },
	{ 0, "status.NoNewPrivs", "\"0\"", "no_new_privileges" },
	{ 0, "release", "\"6.18.44-test\"", "gvisor_kernel" },
	{ 0, "dmesg_gvisor", "false", "gvisor_kernel" },
	{ 1, "HostConfig.Runtime", "\"runc\"", "gvisor_kernel" },
	{ 0, "forks.errno", "0", "process_limit" },
	{ 0, "rlimit_nproc", "[1000, 1000]", "process_limit" },
	{ 1, "HostConfig.PidsLimit", "null", "process_limit" },
	{ 1, "HostConfig.MemorySwap", "-1", "memory_limit" },
	{ 1, "HostConfig.Memory", "0", "memory_limit" },
	{ 0, "fsize_errno", "0", "file_size_limit" },
	{ 0, "rlimit_fsize", NULL, "file_size_limit" },
	{ 0, "setid.count", "1", "no_setid_files" },
	{ 1, "Mounts", "[{\"Destination\":\"/var/run/docker.sock\"}]", "no_host_mounts" },
	{ 0, "sockets", "[\"/var/run/docker.sock\"]", "no_host_mounts" },
	{ 0, "env_keys", "[\"PATH\",\"AWS_SECRET_ACCESS_KEY\"]", "environment" },
	{ 0, "marker_seen", "true", "environment" },
	{ 0, "interfaces", "[\"lo\",\"eth0\"]", "network" },
	{ 0, "resolve_ok", "true", "network" },
	{ 0, "connect_errno", "0", "network" },
	{ 1, "HostConfig.NetworkMode", "\"bridge\"", "network" },
};

static void
test_each_weakening_fails_its_control(void **state)
{
	(void)state;
	for (size_t m = 0; m < sizeof(mutations) / sizeof(mutations[0]); m++) {
		const struct mutation *mu = &mutations[m];
		cJSON *in = cJSON_Parse(inside_good), *insp = cJSON_Parse(inspect_good);
		struct probe_expect e = expect();
		struct probe_report rep;
		char *a, *b;
		assert_non_null(in);
		assert_non_null(insp);
		set_path(mu->doc == 0 ? in : cJSON_GetArrayItem(insp, 0), mu->path,
		    mu->value);
		a = cJSON_PrintUnformatted(in);
		b = cJSON_PrintUnformatted(insp);
		probe_evaluate(&e, a, strlen(a), b, strlen(b), &rep);
		assert_false(rep.pass);
		for (size_t i = 0; i < rep.ncontrols; i++) {
			bool should_fail = strcmp(rep.controls[i].name, mu->fails) == 0;
			if (rep.controls[i].pass == should_fail)
				fail_msg("mutation %zu (%s): control %s pass=%d (%s)",
				    m, mu->path, rep.controls[i].name,
				    rep.controls[i].pass, rep.controls[i].observed);
		}
		free(a);
		free(b);
		cJSON_Delete(in);
		cJSON_Delete(insp);
	}
}

/* The network control of a proxy-mode probe: the proxy must refuse an
 * unlisted name with the run's credential (403) and anything without it
 * (407); a direct connection fails or lands on the proxy, which refuses
 * it; the proxy's resolver on the gateway is the only one, and a name no
 * policy allows does not resolve. */
struct proxy_obs {
	const char *denied, *nocred, *direct, *nameservers, *resolve_denied;
};

static const struct proxy_obs proxy_good = {
	"\"HTTP/1.1 403 Forbidden\"",
	"\"HTTP/1.1 407 Proxy Authentication Required\"",
	"\"HTTP/1.1 403 Forbidden\"", "[\"10.213.0.1\"]", "false",
};

static bool
proxy_network_pass(const struct proxy_obs *o)
{
	cJSON *in = cJSON_Parse(inside_good), *insp = cJSON_Parse(inspect_good);
	struct probe_expect e = expect();
	struct probe_report rep;
	char nm[96];
	char *a, *b;
	bool pass = false, seen = false;

	assert_non_null(in);
	assert_non_null(insp);
	e.mode = "proxy";
	e.proxy_url = "http://10.213.0.1:3128";
	snprintf(nm, sizeof(nm), "\"%s\"", cfg.egress_network);
	set_path(in, "interfaces", "[\"lo\",\"eth0\"]");
	/* Not observed in proxy mode. */
	set_path(in, "connect_errno", NULL);
	set_path(in, "resolve_ok", NULL);
	set_path(in, "proxy_denied", o->denied);
	set_path(in, "proxy_nocred", o->nocred);
	set_path(in, "direct_answer", o->direct);
	set_path(in, "nameservers", o->nameservers);
	set_path(in, "resolve_denied_ok", o->resolve_denied);
	set_path(cJSON_GetArrayItem(insp, 0), "HostConfig.NetworkMode", nm);
	a = cJSON_PrintUnformatted(in);
	b = cJSON_PrintUnformatted(insp);
	probe_evaluate(&e, a, strlen(a), b, strlen(b), &rep);
	for (size_t i = 0; i < rep.ncontrols; i++)
		if (strcmp(rep.controls[i].name, "network") == 0) {
			pass = rep.controls[i].pass;
			seen = true;
		}
	assert_true(seen);
	free(a);
	free(b);
	cJSON_Delete(in);
	cJSON_Delete(insp);
	return pass;
}

static void
test_proxy_network(void **state)
{
	struct proxy_obs o = proxy_good;

	(void)state;
	assert_true(proxy_network_pass(&o));
	/* A proxy that serves requests without the run's credential. */
	o.nocred = "\"HTTP/1.1 403 Forbidden\"";
	assert_false(proxy_network_pass(&o));
	o.nocred = "null";
	assert_false(proxy_network_pass(&o));
	/* One that lets the credentialed request through. */
	o = proxy_good;
	o.denied = "\"HTTP/1.1 200 OK\"";
	assert_false(proxy_network_pass(&o));
	o.denied = "\"no credential in HTTP_PROXY\"";
	assert_false(proxy_network_pass(&o));
	/* The direct connection: refused by the proxy (403, or closed with
	 * no answer) or failed, never served. */
	o = proxy_good;
	o.direct = "\"\"";
	assert_true(proxy_network_pass(&o));
	o.direct = "\"connect failed: errno 111\"";
	assert_true(proxy_network_pass(&o));
	o.direct = "\"connect failed: timeout\"";
	assert_true(proxy_network_pass(&o));
	o.direct = "\"HTTP/1.1 200 OK\"";
	assert_false(proxy_network_pass(&o));
	o.direct = "\"SSH-2.0-OpenSSH_9.2\"";
	assert_false(proxy_network_pass(&o));
	o.direct = "\"no answer in 5 s\"";
	assert_false(proxy_network_pass(&o));
	o.direct = "null";		/* the observation raised */
	assert_false(proxy_network_pass(&o));
	o.direct = NULL;
	assert_false(proxy_network_pass(&o));
	/* The resolver: the gateway's only, and closed. */
	o = proxy_good;
	o.resolve_denied = "true";
	assert_false(proxy_network_pass(&o));
	o.resolve_denied = "null";
	assert_false(proxy_network_pass(&o));
	o = proxy_good;
	o.nameservers = "[\"127.0.0.11\"]";
	assert_false(proxy_network_pass(&o));
	o.nameservers = "[\"10.213.0.1\",\"8.8.8.8\"]";
	assert_false(proxy_network_pass(&o));
	o.nameservers = "[]";
	assert_false(proxy_network_pass(&o));
	o.nameservers = "[\"10.213.0.10\"]";
	assert_false(proxy_network_pass(&o));
	o.nameservers = "null";
	assert_false(proxy_network_pass(&o));
}

/* Whether control name passes for a probe in mode, with in_path/host_path
 * of the good views replaced (NULL: kept). */
static bool
control_pass(const char *mode, const char *name, const char *in_path,
    const char *in_value, const char *host_path, const char *host_value)
{
	cJSON *in = cJSON_Parse(inside_good), *insp = cJSON_Parse(inspect_good);
	struct probe_expect e = expect();
	struct probe_report rep;
	bool pass = false, seen = false;
	char *a, *b;

	e.mode = mode;
	if (in_path != NULL)
		set_path(in, in_path, in_value);
	if (host_path != NULL)
		set_path(cJSON_GetArrayItem(insp, 0), host_path, host_value);
	a = cJSON_PrintUnformatted(in);
	b = cJSON_PrintUnformatted(insp);
	probe_evaluate(&e, a, strlen(a), b, strlen(b), &rep);
	for (size_t i = 0; i < rep.ncontrols; i++)
		if (strcmp(rep.controls[i].name, name) == 0) {
			pass = rep.controls[i].pass;
			seen = true;
		}
	assert_true(seen);
	free(a);
	free(b);
	cJSON_Delete(in);
	cJSON_Delete(insp);
	return pass;
}

/* Proxy mode: the CA bundle and the resolv.conf, read-only at their one
 * path each, and the variables naming the bundle, are expected; anywhere
 * else, writable, or offline they are not. */
static void
test_proxy_ca_bundle(void **state)
{
	static const char ro[] = "[{\"Destination\":\"/etc/cordon/ca-bundle.pem\","
	    "\"RW\":false}]";
	static const char rw[] = "[{\"Destination\":\"/etc/cordon/ca-bundle.pem\","
	    "\"RW\":true}]";
	static const char env[] = "[\"PATH\",\"SSL_CERT_FILE\","
	    "\"REQUESTS_CA_BUNDLE\",\"PIP_CERT\",\"CURL_CA_BUNDLE\","
	    "\"NODE_EXTRA_CA_CERTS\"]";

	(void)state;
	assert_true(control_pass("proxy", "no_host_mounts", NULL, NULL,
	    "Mounts", ro));
	assert_false(control_pass("proxy", "no_host_mounts", NULL, NULL,
	    "Mounts", rw));
	assert_false(control_pass("none", "no_host_mounts", NULL, NULL,
	    "Mounts", ro));
	/* The sandbox's resolv.conf, the same way. */
	assert_true(control_pass("proxy", "no_host_mounts", NULL, NULL,
	    "Mounts", "[{\"Destination\":\"/etc/cordon/ca-bundle.pem\","
	    "\"RW\":false},{\"Destination\":\"/etc/resolv.conf\","
	    "\"RW\":false}]"));
	assert_false(control_pass("proxy", "no_host_mounts", NULL, NULL,
	    "Mounts", "[{\"Destination\":\"/etc/resolv.conf\",\"RW\":true}]"));
	assert_false(control_pass("proxy", "no_host_mounts", NULL, NULL,
	    "Mounts", "[{\"Destination\":\"/etc/resolv.conf\"}]"));
	assert_false(control_pass("none", "no_host_mounts", NULL, NULL,
	    "Mounts", "[{\"Destination\":\"/etc/resolv.conf\","
	    "\"RW\":false}]"));
	assert_true(control_pass("proxy", "environment", "env_keys", env,
	    NULL, NULL));
	assert_false(control_pass("none", "environment", "env_keys", env,
	    NULL, NULL));
	assert_false(control_pass("proxy", "environment", "env_keys",
	    "[\"SSL_CERT_DIR\"]", NULL, NULL));
}

static void
test_runtime_not_runsc(void **state)
{
	struct probe_expect e = expect();
	struct probe_report rep;
	(void)state;
	e.runtime_is_runsc = false;
	probe_evaluate(&e, inside_good, strlen(inside_good), inspect_good,
	    strlen(inspect_good), &rep);
	assert_false(rep.pass);
	for (size_t i = 0; i < rep.ncontrols; i++)
		assert_int_equal(rep.controls[i].pass,
		    strcmp(rep.controls[i].name, "gvisor_kernel") != 0);
}

static void
test_garbage_fails_closed(void **state)
{
	static const char *const junk[] = { "", "not json", "[]", "{}", "null",
	    "{\"uid\": 65534}", "{\"errors\": [], \"uid\": 65534, \"gid\": 65534}" };
	struct probe_expect e = expect();
	struct probe_report rep;
	(void)state;
	for (size_t j = 0; j < sizeof(junk) / sizeof(junk[0]); j++) {
		probe_evaluate(&e, junk[j], strlen(junk[j]), inspect_good,
		    strlen(inspect_good), &rep);
		assert_false(rep.pass);
		probe_evaluate(&e, inside_good, strlen(inside_good), junk[j],
		    strlen(junk[j]), &rep);
		assert_false(rep.pass);
	}
	probe_evaluate(&e, NULL, 0, NULL, 0, &rep);
	assert_false(rep.pass);
	for (size_t i = 0; i < rep.ncontrols; i++)
		assert_false(rep.controls[i].pass);
}

#define IMG_A "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define IMG_B "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

static void
test_state_fail_closed(void **state)
{
	char dir[] = "/tmp/cordon-probe-state-XXXXXX", err[512];
	char img[PROBE_IMAGE_MAX];
	struct probe_expect e = expect();
	struct probe_report rep;
	int64_t now = time_wall_ms();
	struct config c = cfg;
	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(c.state_dir, sizeof(c.state_dir), "%s", dir);
	assert_int_equal(probe_state_check(&c, "none", NULL, now, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "cordon probe --net none"));
	probe_evaluate(&e, inside_good, strlen(inside_good), inspect_good,
	    strlen(inspect_good), &rep);
	rep.at_ms = now;
	assert_int_equal(probe_state_write(&c, &rep), 0);
	assert_int_equal(probe_state_check(&c, "none", NULL, now, err, sizeof(err)), 0);
	assert_int_equal(probe_state_check(&c, "proxy", NULL, now, err, sizeof(err)), -ENOENT);
	assert_int_equal(probe_state_check(&c, "none", NULL,
	    now + (c.probe_max_age_s + 1) * 1000, err, sizeof(err)), -ESTALE);
	/* A record with no image (older Cordon) proves no pinned image. */
	assert_int_equal(probe_state_check(&c, "none", IMG_A, now, err,
	    sizeof(err)), -ESTALE);
	assert_string_equal(err, "the latest probe for --net none ran in "
	    "image (none recorded), not the pinned sha256:aaaaaaaaaaaa: run "
	    "'cordon probe --net none'");
	/* Made in A: fine for A (and for a caller that does not compare),
	 * stale for the new B. */
	strcpy(rep.image, IMG_A);
	assert_int_equal(probe_state_write(&c, &rep), 0);
	assert_int_equal(probe_state_image(&c, "none", img), 0);
	assert_string_equal(img, IMG_A);
	assert_int_equal(probe_state_check(&c, "none", IMG_A, now, err,
	    sizeof(err)), 0);
	assert_int_equal(probe_state_check(&c, "none", "", now, err,
	    sizeof(err)), 0);
	assert_int_equal(probe_state_check(&c, "none", IMG_B, now, err,
	    sizeof(err)), -ESTALE);
	assert_string_equal(err, "the latest probe for --net none ran in "
	    "image sha256:aaaaaaaaaaaa, not the pinned sha256:bbbbbbbbbbbb: "
	    "run 'cordon probe --net none'");
	rep.controls[3].pass = false;
	rep.pass = false;
	assert_int_equal(probe_state_write(&c, &rep), 0);
	assert_int_equal(probe_state_check(&c, "none", NULL, now, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, rep.controls[3].name));
	/* Failed stays failed, whichever image is pinned now. */
	assert_int_equal(probe_state_check(&c, "none", IMG_B, now, err,
	    sizeof(err)), -EPERM);
	c.require_probe = false;
	assert_int_equal(probe_state_check(&c, "none", NULL, now, err, sizeof(err)), 0);
	assert_int_equal(util_rm_rf(dir), 0);
}

static void
test_program_embeds_expectations(void **state)
{
	struct probe_expect e = expect();
	char *p;
	(void)state;
	e.marker_var = "EVIL'); import os; os.system('x";
	p = probe_program(&e);
	assert_non_null(p);
	assert_non_null(strstr(p, "NPROC = 64\n"));
	/* Quotes and spaces are dropped, never injected. */
	assert_non_null(strstr(p, "MARKER = 'EVILimportosos.systemx'\n"));
	assert_non_null(strstr(p, "PROXY = None\n"));
	free(p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_passes),
		cmocka_unit_test(test_each_weakening_fails_its_control),
		cmocka_unit_test(test_proxy_network),
		cmocka_unit_test(test_proxy_ca_bundle),
		cmocka_unit_test(test_runtime_not_runsc),
		cmocka_unit_test(test_garbage_fails_closed),
		cmocka_unit_test(test_state_fail_closed),
		cmocka_unit_test(test_program_embeds_expectations),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
