/* Unit tests: the result's JSON (any bytes give valid JSON), status
 * names, the audit line (fields, never code or output), gc's decision
 * and the parsers of docker's answers. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/config.h"
#include "common/json.h"
#include "common/util.h"
#include "runner/docker.h"
#include "runner/dockerapi.h"
#include "runner/runner.h"

static void
fill(struct runner_result *r, const char *out, size_t olen)
{
	memset(r, 0, sizeof(*r));
	r->status = RUNNER_OUTPUT_TRUNCATED;
	r->exit_code = 0;
	r->out = malloc(olen + 1);
	memcpy(r->out, out, olen);
	r->out[olen] = '\0';
	r->out_len = olen;
	r->err = strdup("e\"rr\n");
	r->err_len = 5;
	r->out_truncated = true;
	r->duration_ms = 812;
	r->queue_ms = 1500;
	strcpy(r->container, "cordon-00ff");
	strcpy(r->code_sha256, "ab");
	strcpy(r->image, "sha256:1234");
}

static void
test_json_any_bytes(void **state)
{
	static const char bad[] = "ok\xff\xfe\xc0\xaf\xed\xa0\x80\0nul\x1b";
	struct runner_result r;
	cJSON *o, *back;
	char *line;
	const char *s;
	int64_t n;
	bool b;

	(void)state;
	fill(&r, bad, sizeof(bad) - 1);
	o = runner_result_to_json(&r);
	assert_non_null(o);
	line = json_print_line(o);
	assert_non_null(line);
	assert_non_null(strchr(line, '\n'));
	assert_ptr_equal(strchr(line, '\n'), line + strlen(line) - 1);
	back = cJSON_Parse(line);
	assert_non_null(back);
	assert_int_equal(json_get_string(back, "status", &s), 0);
	assert_string_equal(s, "output_truncated");
	assert_int_equal(json_get_string(back, "stdout", &s), 0);
	assert_int_equal(strncmp(s, "ok\xef\xbf\xbd", 5), 0);
	assert_int_equal(json_get_string(back, "stderr", &s), 0);
	assert_string_equal(s, "e\"rr\n");
	assert_int_equal(json_get_bool(back, "stdout_truncated", &b), 0);
	assert_true(b);
	assert_int_equal(json_get_string(back, "net", &s), 0);
	assert_string_equal(s, "none");
	assert_int_equal(json_get_int(back, "queue_ms", 0, 10000, &n), 0);
	assert_int_equal(n, 1500);
	assert_int_equal(json_get_string(back, "image", &s), 0);
	assert_string_equal(s, "sha256:1234");
	assert_int_equal(json_get_string(back, "container", &s), 0);
	assert_int_equal(json_get_string(back, "code_sha256", &s), 0);
	assert_null(cJSON_GetObjectItem(back, "files"));
	cJSON_Delete(back);
	cJSON_Delete(o);
	free(line);
	runner_result_cleanup(&r);
}

static void
test_json_files(void **state)
{
	struct runner_result r;
	cJSON *o, *files;

	(void)state;
	fill(&r, "x", 1);
	r.want_files = true;
	r.files = calloc(2, sizeof(*r.files));
	r.files[0].path = strdup("a.txt");
	r.files[0].size = 3;
	r.files[1].path = strdup("bad\xff");
	r.files[1].refused = "link";
	r.nfiles = 2;
	o = runner_result_to_json(&r);
	files = cJSON_GetObjectItem(o, "files");
	assert_true(cJSON_IsArray(files));
	assert_int_equal(cJSON_GetArraySize(files), 2);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(files, 1),
	    "refused")->valuestring, "link");
	cJSON_Delete(o);
	runner_result_cleanup(&r);
}

/* timing_ms: every step by name, -1 for one that did not happen; the
 * proxy-mode phases (admit, start, seal, register, unregister) too. */
static void
test_json_timing(void **state)
{
	static const struct {
		const char *name;
		int64_t want;
	} rows[] = {
		{ "stdin", 1 }, { "run", 2 }, { "exit", 3 }, { "cli", -1 },
		{ "inspect", 5 }, { "remove", -1 }, { "stop", -1 },
		{ "admit", 8 }, { "start", 9 }, { "seal", 10 },
		{ "register", 11 }, { "unregister", 12 },
	};
	struct runner_result r;
	cJSON *o, *t, *v;

	(void)state;
	fill(&r, "x", 1);
	runner_timing_reset(&r.timing);
	o = runner_result_to_json(&r);
	t = cJSON_GetObjectItem(o, "timing_ms");
	assert_int_equal(cJSON_GetArraySize(t), 12);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		v = cJSON_GetObjectItemCaseSensitive(t, rows[i].name);
		assert_true(cJSON_IsNumber(v));
		assert_int_equal((int64_t)v->valuedouble, -1);
	}
	cJSON_Delete(o);
	r.timing = (struct runner_timing){ .stdin_ms = 1, .run_ms = 2,
	    .exit_ms = 3, .cli_ms = -1, .inspect_ms = 5, .remove_ms = -1,
	    .stop_ms = -1, .admit_ms = 8, .start_ms = 9, .seal_ms = 10,
	    .register_ms = 11, .unregister_ms = 12 };
	o = runner_result_to_json(&r);
	t = cJSON_GetObjectItem(o, "timing_ms");
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		v = cJSON_GetObjectItemCaseSensitive(t, rows[i].name);
		assert_true(cJSON_IsNumber(v));
		assert_int_equal((int64_t)v->valuedouble, rows[i].want);
	}
	cJSON_Delete(o);
	runner_result_cleanup(&r);
}

/* Proxy mode: the policy, the proxy's report (list, counts, and its
 * truncation marks when present), or why there is none. Offline results
 * have none of these keys. */
static void
test_json_egress(void **state)
{
	static const char rep[] = "{\"egress\":[{\"host\":\"pypi.org\","
	    "\"port\":443,\"decision\":\"allow\",\"reason\":"
	    "\"allowed-by-entry\",\"status\":200,\"count\":3,\"bytes_up\":"
	    "100,\"bytes_down\":5000},{\"host\":\"evil.example\",\"port\":"
	    "443,\"decision\":\"deny\",\"reason\":\"no-match\",\"status\":"
	    "403,\"count\":1,\"bytes_up\":0,\"bytes_down\":0}],\"allowed\":3,"
	    "\"denied\":1,\"errors\":5,\"egress_truncated\":true,"
	    "\"egress_dropped\":7}";
	struct runner_result r;
	cJSON *o, *list;
	char *line;

	(void)state;
	fill(&r, "x", 1);
	o = runner_result_to_json(&r);
	for (const char *k = "policy\0egress\0egress_error\0egress_allowed\0"
	    "egress_truncated\0"; *k; k += strlen(k) + 1)
		assert_null(cJSON_GetObjectItem(o, k));
	cJSON_Delete(o);

	r.net = RUNNER_NET_PROXY;
	strcpy(r.policy, "pypi");
	r.egress = cJSON_Parse(rep);
	assert_non_null(r.egress);
	o = runner_result_to_json(&r);
	assert_non_null(o);
	assert_string_equal(cJSON_GetObjectItem(o, "policy")->valuestring,
	    "pypi");
	list = cJSON_GetObjectItem(o, "egress");
	assert_int_equal(cJSON_GetArraySize(list), 2);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(list, 1),
	    "host")->valuestring, "evil.example");
	assert_int_equal(cJSON_GetObjectItem(o, "egress_allowed")->valueint, 3);
	assert_int_equal(cJSON_GetObjectItem(o, "egress_denied")->valueint, 1);
	assert_int_equal(cJSON_GetObjectItem(o, "egress_errors")->valueint, 5);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(o, "egress_truncated")));
	assert_int_equal(cJSON_GetObjectItem(o, "egress_dropped")->valueint, 7);
	assert_null(cJSON_GetObjectItem(o, "egress_error"));
	line = json_print_line(o);
	assert_non_null(strstr(line, "\"net\":\"proxy\",\"policy\":\"pypi\","
	    "\"egress\":[{\"host\":\"pypi.org\""));
	free(line);
	cJSON_Delete(o);

	/* Without the marks, none are made up. */
	cJSON_DeleteItemFromObject(r.egress, "egress_truncated");
	cJSON_DeleteItemFromObject(r.egress, "egress_dropped");
	o = runner_result_to_json(&r);
	assert_null(cJSON_GetObjectItem(o, "egress_truncated"));
	assert_null(cJSON_GetObjectItem(o, "egress_dropped"));
	cJSON_Delete(o);

	/* No report: the reason instead, and no list. */
	cJSON_Delete(r.egress);
	r.egress = NULL;
	strcpy(r.egress_error, "the proxy did not answer");
	o = runner_result_to_json(&r);
	assert_null(cJSON_GetObjectItem(o, "egress"));
	assert_string_equal(cJSON_GetObjectItem(o, "egress_error")->valuestring,
	    "the proxy did not answer");
	cJSON_Delete(o);
	runner_result_cleanup(&r);
}

/* --keep: three names, nothing else; absent means both. */
static void
test_request_keep(void **state)
{
	static const struct { const char *keep; int rc; } rows[] = {
		{ NULL, 0 }, { "head", 0 }, { "tail", 0 }, { "both", 0 },
		{ "", -EINVAL }, { "HEAD", -EINVAL }, { "middle", -EINVAL },
		{ "both ", -EINVAL },
	};
	char err[128];

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct runner_request q = { .code = "1", .code_len = 1,
		    .keep = rows[i].keep };
		err[0] = '\0';
		assert_int_equal(runner_request_check(&q, err, sizeof(err)),
		    rows[i].rc);
		if (rows[i].rc < 0)
			assert_non_null(strstr(err, "keep must be head, tail "
			    "or both"));
	}
}

/* A value above the config's maximum is refused, naming the maximum and
 * the key that sets it; the maximum itself and the defaults (0) pass. */
static void
test_limits_check(void **state)
{
	static const struct {
		int64_t timeout; uint64_t out, mem; double cpus; size_t nin;
		const char *err;	/* NULL: accepted */
	} rows[] = {
		{ 0, 0, 0, 0, 0, NULL },
		{ 300, 16u << 20, 256u << 20, 1.0, RUNNER_MAX_IN, NULL },
		{ 1, 1, 16u << 20, 0.01, 1, NULL },
		{ 301, 0, 0, 0, 0, "timeout 301 s is above the maximum of 300 s "
		  "(config limits.max_timeout_s)" },
		{ 3600, 0, 0, 0, 0, "timeout 3600 s is above the maximum of "
		  "300 s (config limits.max_timeout_s)" },
		{ -1, 0, 0, 0, 0, "timeout -1 s is above the maximum of 300 s "
		  "(config limits.max_timeout_s)" },
		{ 0, (16u << 20) + 1, 0, 0, 0, "max_output 16777217 bytes is "
		  "above the maximum of 16m (config limits.max_output_cap)" },
		{ 0, 1ull << 30, 0, 0, 0, "max_output 1g is above the maximum "
		  "of 16m (config limits.max_output_cap)" },
		{ 0, 0, 64ull << 30, 0, 0, "memory 64g is above the maximum of "
		  "256m (config limits.memory)" },
		{ 0, 0, (256u << 20) + 1024, 0, 0, "memory 262145k is above the "
		  "maximum of 256m (config limits.memory)" },
		{ 0, 0, 1000, 0, 0, "memory 1000 bytes is below the minimum of "
		  "16m" },
		{ 0, 0, 0, 100, 0, "cpus 100 is above the maximum of 1 (config "
		  "limits.cpus)" },
		{ 0, 0, 0, 1.5, 0, "cpus 1.5 is above the maximum of 1 (config "
		  "limits.cpus)" },
		{ 0, 0, 0, 0.001, 0, "cpus 0.001 is below the minimum of 0.01" },
		{ 0, 0, 0, 0, RUNNER_MAX_IN + 1, "33 --in paths is above the "
		  "maximum of 32" },
	};
	struct config c;
	char err[256];

	(void)state;
	config_defaults(&c);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct runner_request q = { .timeout_s = rows[i].timeout,
		    .max_output = rows[i].out, .memory = rows[i].mem,
		    .cpus = rows[i].cpus, .nin = rows[i].nin };
		int rc;

		print_message("row %zu\n", i);
		err[0] = '\0';
		rc = runner_limits_check(&c, &q, err, sizeof(err));
		if (rows[i].err == NULL) {
			assert_int_equal(rc, 0);
			continue;
		}
		assert_int_equal(rc, -EINVAL);
		assert_string_equal(err, rows[i].err);
	}
	/* The maximum is the operator's: raised, the same value passes. */
	c.limits.max_timeout_s = 3600;
	{
		struct runner_request q = { .timeout_s = 3600 };
		assert_int_equal(runner_limits_check(&c, &q, err, sizeof(err)),
		    0);
	}
}

/* "limits": what applied, from runner_limits_resolve; no key when none
 * were resolved. */
static void
test_json_limits(void **state)
{
	struct runner_request q = { .timeout_s = 7, .memory = 64u << 20 };
	struct runner_result r;
	struct config c;
	cJSON *o, *l;

	(void)state;
	config_defaults(&c);
	fill(&r, "x", 1);
	o = runner_result_to_json(&r);
	assert_null(cJSON_GetObjectItem(o, "limits"));
	cJSON_Delete(o);
	runner_limits_resolve(&c, &q, &r.limits);
	o = runner_result_to_json(&r);
	l = cJSON_GetObjectItem(o, "limits");
	assert_true(cJSON_IsObject(l));
	assert_int_equal(cJSON_GetArraySize(l), 5);
	assert_int_equal(cJSON_GetObjectItem(l, "timeout_s")->valuedouble, 7);
	assert_int_equal(cJSON_GetObjectItem(l, "memory")->valuedouble,
	    64u << 20);
	assert_true(cJSON_GetObjectItem(l, "cpus")->valuedouble == 1.0);
	assert_int_equal(cJSON_GetObjectItem(l, "max_output")->valuedouble,
	    c.limits.max_output_bytes);
	assert_int_equal(cJSON_GetObjectItem(l, "pids")->valuedouble,
	    c.limits.nproc);
	cJSON_Delete(o);
	runner_result_cleanup(&r);
}

/* --out: a directory we may write into, made when missing; a file, or a
 * path under a file, is refused before any run. */
static void
test_out_dir_check(void **state)
{
	char dir[] = "/tmp/cordon-test-out-XXXXXX", path[128], err[256];
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(runner_out_dir_check(dir, err, sizeof(err)), 0);
	snprintf(path, sizeof(path), "%s/new/sub", dir);
	assert_int_equal(runner_out_dir_check(path, err, sizeof(err)), 0);
	snprintf(path, sizeof(path), "%s/afile", dir);
	assert_true((fd = open(path, O_WRONLY | O_CREAT, 0600)) >= 0);
	close(fd);
	assert_int_equal(runner_out_dir_check(path, err, sizeof(err)),
	    -ENOTDIR);
	assert_non_null(strstr(err, "afile: not a directory"));
	snprintf(path, sizeof(path), "%s/afile/x", dir);
	assert_true(runner_out_dir_check(path, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "afile/x: cannot create it"));
	assert_int_equal(util_rm_rf(dir), 0);
}

static void
test_status_names(void **state)
{
	(void)state;
	assert_string_equal(runner_status_name(RUNNER_OK), "ok");
	assert_string_equal(runner_status_name(RUNNER_TIMEOUT), "timeout");
	assert_string_equal(runner_status_name(RUNNER_OOM), "oom");
	assert_string_equal(runner_status_name(RUNNER_CLOSED_EARLY),
	    "closed_early");
	assert_string_equal(runner_status_name(RUNNER_SANDBOX_ERROR),
	    "sandbox_error");
	assert_string_equal(runner_net_name(RUNNER_NET_PROXY), "proxy");
}

static void
test_audit_line(void **state)
{
	char dir[] = "/tmp/cordon-audit.XXXXXX", *text, rotated[320];
	struct runner_result r;
	struct config c;
	cJSON *o;
	size_t len;
	int64_t n;

	(void)state;
	assert_non_null(mkdtemp(dir));
	config_defaults(&c);
	snprintf(c.audit_log, sizeof(c.audit_log), "%s/sub/audit.log", dir);
	fill(&r, "SECRET-OUTPUT", 13);
	r.limits = (struct runner_limits){ 30, 1048576, 536870912, 1.5, 64 };
	assert_int_equal(runner_audit_append(&c, "sess", &r), 0);
	assert_int_equal(runner_audit_append(&c, NULL, &r), 0);
	assert_int_equal(util_read_file(c.audit_log, 1 << 16, &text, &len), 0);
	assert_null(strstr(text, "SECRET-OUTPUT"));
	assert_null(strstr(text, "\"stderr\""));
	assert_null(strstr(text, "\"stdout\""));
	*strchr(text, '\n') = '\0';
	o = cJSON_Parse(text);
	assert_non_null(o);
	assert_int_equal(json_get_int(o, "stdout_bytes", 0, 100, &n), 0);
	assert_int_equal(n, 13);
	assert_int_equal(json_get_int(o, "duration_ms", 0, 10000, &n), 0);
	assert_int_equal(n, 812);
	for (const char *k = "time\0session\0code_sha256\0net\0status\0"
	    "container\0image\0"; *k; k += strlen(k) + 1)
		assert_non_null(cJSON_GetObjectItem(o, k));
	assert_null(cJSON_GetObjectItem(o, "stdout"));
	/* The limits that applied, the result's object. */
	{
		const cJSON *l = cJSON_GetObjectItem(o, "limits");
		assert_int_equal(json_get_int(l, "timeout_s", 0, 1000, &n), 0);
		assert_int_equal(n, 30);
		assert_int_equal(json_get_int(l, "memory", 0, INT64_MAX, &n),
		    0);
		assert_int_equal(n, 536870912);
		assert_int_equal(json_get_int(l, "max_output", 0, INT64_MAX,
		    &n), 0);
		assert_int_equal(n, 1048576);
		assert_int_equal(json_get_int(l, "pids", 0, 1000, &n), 0);
		assert_int_equal(n, 64);
		assert_true(cJSON_GetObjectItem(l, "cpus")->valuedouble == 1.5);
	}
	/* Offline: no egress fields. */
	assert_null(cJSON_GetObjectItem(o, "egress_allowed"));
	assert_null(cJSON_GetObjectItem(o, "policy"));
	cJSON_Delete(o);
	free(text);
	/* Proxy mode: the policy and the proxy's counts, never the list
	 * (hosts a job contacted are output, not audit). */
	r.net = RUNNER_NET_PROXY;
	strcpy(r.policy, "pypi");
	r.egress = cJSON_Parse("{\"egress\":[{\"host\":\"h.example\"}],"
	    "\"allowed\":4,\"denied\":2,\"errors\":3}");
	assert_int_equal(unlink(c.audit_log), 0);
	assert_int_equal(runner_audit_append(&c, "sess", &r), 0);
	cJSON_Delete(r.egress);
	r.egress = NULL;
	assert_int_equal(runner_audit_append(&c, "sess", &r), 0);
	assert_int_equal(util_read_file(c.audit_log, 1 << 16, &text, &len), 0);
	assert_null(strstr(text, "h.example"));
	*strchr(text, '\n') = '\0';
	o = cJSON_Parse(text);
	assert_string_equal(cJSON_GetObjectItem(o, "policy")->valuestring,
	    "pypi");
	assert_int_equal(json_get_int(o, "egress_allowed", -1, 100, &n), 0);
	assert_int_equal(n, 4);
	assert_int_equal(json_get_int(o, "egress_denied", -1, 100, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(json_get_int(o, "egress_errors", -1, 100, &n), 0);
	assert_int_equal(n, 3);
	cJSON_Delete(o);
	/* No report came back: -1, not a made-up 0. */
	o = cJSON_Parse(text + strlen(text) + 1);
	assert_int_equal(json_get_int(o, "egress_allowed", -1, 100, &n), 0);
	assert_int_equal(n, -1);
	assert_int_equal(json_get_int(o, "egress_denied", -1, 100, &n), 0);
	assert_int_equal(n, -1);
	assert_int_equal(json_get_int(o, "egress_errors", -1, 100, &n), 0);
	assert_int_equal(n, -1);
	cJSON_Delete(o);
	free(text);
	/* Rotation (logrotate renames it, no signal): each run opens the
	 * file anew, so the next line goes to a new file. */
	snprintf(rotated, sizeof(rotated), "%s.1", c.audit_log);
	assert_int_equal(rename(c.audit_log, rotated), 0);
	assert_int_equal(runner_audit_append(&c, "sess", &r), 0);
	assert_int_equal(util_read_file(c.audit_log, 1 << 16, &text, &len), 0);
	assert_ptr_equal(strchr(text, '\n'), text + len - 1);	/* one line */
	free(text);
	assert_int_equal(util_read_file(rotated, 1 << 16, &text, &len), 0);
	assert_non_null(strchr(strchr(text, '\n') + 1, '\n'));	/* two */
	free(text);
	runner_result_cleanup(&r);
	assert_int_equal(util_rm_rf(dir), 0);
}

static bool
alive_if_even(long pid)
{
	return pid % 2 == 0;
}

static void
test_gc_match(void **state)
{
	(void)state;
	assert_false(docker_gc_match("2", "2000", 1000, alive_if_even));
	assert_true(docker_gc_match("3", "2000", 1000, alive_if_even));
	assert_true(docker_gc_match("2", "999", 1000, alive_if_even));
	assert_true(docker_gc_match("", "2000", 1000, alive_if_even));
	assert_true(docker_gc_match("2", "", 1000, alive_if_even));
	assert_true(docker_gc_match("2", "<no value>", 1000, alive_if_even));
	assert_true(docker_gc_match("-1", "2000", 1000, alive_if_even));
}

static void
test_docker_parsers(void **state)
{
	struct docker_state st;
	struct docker_runtime drt;
	static const char rt[] = "{\"cordon-offline\":{\"path\":\"/usr/bin/"
	    "runsc\"},\"runc\":{\"path\":\"runc\"}}";

	(void)state;
	assert_int_equal(docker_state_parse("true 137 2026-11-29T10:00:00Z\n",
	    &st), 0);
	assert_true(st.oom_killed);
	assert_int_equal(st.exit_code, 137);
	assert_true(st.started);
	assert_int_equal(docker_state_parse("false 125 0001-01-01T00:00:00Z",
	    &st), 0);
	assert_false(st.started);
	assert_int_equal(docker_state_parse("true 137 2026-11-29T10:00:00Z "
	    "ce32ed6d402daa455e3ea3760f5a6a4cc7274c78dbc9d48022d3320b71895e37\n",
	    &st), 0);
	assert_true(st.oom_killed);
	assert_int_equal(st.exit_code, 137);
	assert_string_equal(st.id,
	    "ce32ed6d402daa455e3ea3760f5a6a4cc7274c78dbc9d48022d3320b71895e37");
	assert_int_equal(docker_state_parse("maybe 1 x", &st), -EINVAL);
	assert_int_equal(docker_state_parse("true", &st), -EINVAL);
	assert_int_equal(docker_runtime_parse(rt, strlen(rt), "cordon-offline",
	    &drt), 0);
	assert_int_equal(docker_runtime_parse(rt, strlen(rt), "cordon-egress",
	    &drt), -ENOENT);
	assert_int_equal(docker_runtime_parse("null", 4, "runc", &drt),
	    -EBADMSG);
	assert_int_equal(docker_runtime_parse("[\"runc\"]", 8, "runc", &drt),
	    -EBADMSG);
}

static void
test_dockerapi_status(void **state)
{
	(void)state;
	assert_int_equal(dockerapi_status("HTTP/1.1 204 No Content\r\n", 25),
	    204);
	assert_int_equal(dockerapi_status("HTTP/1.0 404 x", 14), 404);
	assert_int_equal(dockerapi_status("HTTP/1.1 20", 11), -EBADMSG);
	assert_int_equal(dockerapi_status("HTTP/2.0 204 x", 14), -EBADMSG);
	assert_int_equal(dockerapi_status("HTTP/1.1 2x4 x", 14), -EBADMSG);
	assert_int_equal(dockerapi_status("SSH-2.0-xxxxxx", 14), -EBADMSG);
}

/* A one-connection fake daemon: checks the request, sends answer (or
 * nothing when NULL) and exits. */
static pid_t
fake_daemon(const char *path, const char *answer)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int ls = socket(AF_UNIX, SOCK_STREAM, 0);
	pid_t pid;

	strcpy(sa.sun_path, path);
	unlink(path);
	assert_int_equal(bind(ls, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(ls, 1), 0);
	if ((pid = fork()) == 0) {
		char buf[512] = { 0 };
		int c = accept(ls, NULL, NULL);
		ssize_t n = read(c, buf, sizeof(buf) - 1);
		if (n <= 0 || strncmp(buf, "DELETE /containers/cordon-x?force=1 "
		    "HTTP/1.1\r\n", 46) != 0)
			_exit(1);
		if (answer == NULL) {
			pause();
			_exit(0);
		}
		(void)!write(c, answer, strlen(answer));
		_exit(0);
	}
	close(ls);
	return pid;
}

static void
test_dockerapi_rm(void **state)
{
	char dir[] = "/tmp/cordon-api.XXXXXX", path[64];
	int st;
	pid_t pid;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/docker.sock", dir);
	pid = fake_daemon(path, "HTTP/1.1 204 No Content\r\n\r\n");
	assert_int_equal(dockerapi_rm_force(path, "cordon-x", 5000), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(WEXITSTATUS(st), 0);
	pid = fake_daemon(path, "HTTP/1.1 404 Not Found\r\n\r\n{}");
	assert_int_equal(dockerapi_rm_force(path, "cordon-x", 5000), -ENOENT);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	/* A removal already in progress may still fail: not "gone". */
	pid = fake_daemon(path, "HTTP/1.1 409 Conflict\r\n\r\n{}");
	assert_int_equal(dockerapi_rm_force(path, "cordon-x", 5000), -EBUSY);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	pid = fake_daemon(path, NULL);
	assert_int_equal(dockerapi_rm_force(path, "cordon-x", 300), -ETIMEDOUT);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(dockerapi_rm_force(path, "a/../b", 300), -EINVAL);
	assert_int_equal(dockerapi_rm_force(path, "x?all=1", 300), -EINVAL);
	unlink(path);
	assert_int_equal(dockerapi_rm_force(path, "cordon-x", 300), -ENOENT);
	assert_int_equal(util_rm_rf(dir), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_any_bytes),
		cmocka_unit_test(test_request_keep),
		cmocka_unit_test(test_json_files),
		cmocka_unit_test(test_json_egress),
		cmocka_unit_test(test_limits_check),
		cmocka_unit_test(test_json_limits),
		cmocka_unit_test(test_out_dir_check),
		cmocka_unit_test(test_json_timing),
		cmocka_unit_test(test_status_names),
		cmocka_unit_test(test_audit_line),
		cmocka_unit_test(test_gc_match),
		cmocka_unit_test(test_docker_parsers),
		cmocka_unit_test(test_dockerapi_status),
		cmocka_unit_test(test_dockerapi_rm),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
