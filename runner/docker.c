/*
 * docker CLI helpers (docker.h): rm -f, inspect, preflight and gc. The
 * outputs parsed here come from the daemon, but are still parsed strictly.
 */
#include "runner/docker.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "common/proc.h"
#include "common/util.h"
#include "runner/docker_argv.h"
#include "runner/image.h"
#include "runner/runner.h"

static int
run_argv(struct dargv *a, struct proc_result *r, size_t outmax)
{
	struct proc_opts o = { .argv = (const char *const *)a->v,
	    .stdout_max = outmax, .stderr_max = 4096 };
	int rc;

	if (a->error != 0)
		return a->error;
	rc = proc_run(&o, DOCKER_CALL_MS, r);
	if (rc == 0 && r->timed_out) {
		proc_result_cleanup(r);
		return -ETIMEDOUT;
	}
	return rc;
}

static bool
says_no_such(const struct proc_result *r)
{
	return strstr(cbuf_data(r->err), "No such") != NULL ||
	    strstr(cbuf_data(r->err), "no such") != NULL;
}

int
docker_rm_force(const struct config *c, const char *const *names, size_t n)
{
	struct dargv a;
	struct proc_result r;
	int rc;

	if (n == 0)
		return 0;
	dargv_init(&a);
	dargv_add(&a, c->docker);
	dargv_add(&a, "rm");
	dargv_add(&a, "-f");
	for (size_t i = 0; i < n; i++)
		dargv_add(&a, names[i]);
	rc = run_argv(&a, &r, 65536);
	dargv_cleanup(&a);
	if (rc < 0)
		return rc;
	/* Newer clients exit 0 for `rm -f` of a missing container; a
	 * removal already in progress (the run removing its own container
	 * while gc lists it) ends the same way. */
	if (says_no_such(&r) ||
	    strstr(cbuf_data(r.err), "already in progress") != NULL)
		rc = -ENOENT;
	else if (r.exit_code != 0)
		rc = -EIO;
	proc_result_cleanup(&r);
	return rc;
}

int
docker_state_parse(const char *line, struct docker_state *st)
{
	char buf[128], *sp1, *sp2;
	int64_t code;

	if (!util_strlcpy(buf, line, sizeof(buf)))
		return -EINVAL;
	buf[strcspn(buf, "\r\n")] = '\0';
	if ((sp1 = strchr(buf, ' ')) == NULL ||
	    (sp2 = strchr(sp1 + 1, ' ')) == NULL)
		return -EINVAL;
	*sp1++ = '\0';
	*sp2++ = '\0';
	if (strcmp(buf, "true") != 0 && strcmp(buf, "false") != 0)
		return -EINVAL;
	if (util_parse_i64(sp1, -1, 255, &code) < 0)
		return -EINVAL;
	st->oom_killed = strcmp(buf, "true") == 0;
	st->exit_code = (int)code;
	/* Never started: Go's zero time. */
	st->started = *sp2 != '\0' && strncmp(sp2, "0001-01-01", 10) != 0;
	return 0;
}

/* `docker inspect --format=FORMAT NAME` of a container: 0 with r filled
 * (caller cleans it up), -ENOENT when there is no such container, or
 * another negative errno. */
static int
inspect_format(const struct config *c, const char *name, const char *format,
    struct proc_result *r)
{
	struct dargv a;
	int rc;

	dargv_init(&a);
	dargv_add(&a, c->docker);
	dargv_add(&a, "inspect");
	dargv_add(&a, "--type=container");
	dargv_addf(&a, "--format=%s", format);
	dargv_add(&a, name);
	rc = run_argv(&a, r, 4096);
	dargv_cleanup(&a);
	if (rc < 0)
		return rc;
	if (r->exit_code != 0) {
		rc = says_no_such(r) ? -ENOENT : -EIO;
		proc_result_cleanup(r);
	}
	return rc;
}

int
docker_inspect_state(const struct config *c, const char *name,
    struct docker_state *st)
{
	struct proc_result r;
	int rc = inspect_format(c, name, "{{.State.OOMKilled}} "
	    "{{.State.ExitCode}} {{.State.StartedAt}}", &r);

	if (rc < 0)
		return rc;
	rc = docker_state_parse(cbuf_data(r.out), st);
	proc_result_cleanup(&r);
	return rc;
}

int
docker_wait_running(const struct config *c, const char *name)
{
	struct proc_result r;
	const char *status;
	int rc = inspect_format(c, name, "{{.State.Status}}", &r);

	if (rc == -ENOENT)
		return -EAGAIN;
	if (rc < 0)
		return rc;
	status = cbuf_data(r.out);
	if (strncmp(status, "running", 7) == 0)
		rc = 0;
	else if (strncmp(status, "created", 7) == 0)
		rc = -EAGAIN;
	else
		rc = -ECHILD;
	proc_result_cleanup(&r);
	return rc;
}

bool
docker_runtimes_has(const char *json, size_t len, const char *runtime)
{
	cJSON *o = cJSON_ParseWithLength(json, len);
	bool has = cJSON_IsObject(o) &&
	    cJSON_GetObjectItemCaseSensitive(o, runtime) != NULL;

	cJSON_Delete(o);
	return has;
}

static int
check_runtime(const struct config *c, const char *runtime, char *err,
    size_t errlen)
{
	struct dargv a;
	struct proc_result r;
	int rc;

	dargv_init(&a);
	dargv_add(&a, c->docker);
	dargv_add(&a, "info");
	dargv_add(&a, "--format={{json .Runtimes}}");
	rc = run_argv(&a, &r, 1 << 16);
	dargv_cleanup(&a);
	if (rc < 0 || r.exit_code != 0) {
		snprintf(err, errlen, "docker daemon not reachable (`%s info` "
		    "failed%s%.120s)", c->docker, rc < 0 ? "" : ": ",
		    rc < 0 ? "" : cbuf_data(r.err));
		if (rc == 0)
			proc_result_cleanup(&r);
		return -EHOSTUNREACH;
	}
	if (!docker_runtimes_has(cbuf_data(r.out), cbuf_len(r.out), runtime)) {
		snprintf(err, errlen, "runtime '%s' is not registered with the "
		    "docker daemon (run scripts/setup); refusing to run without "
		    "gVisor", runtime);
		rc = -ENOENT;
	}
	proc_result_cleanup(&r);
	return rc;
}

static int
check_image(const struct config *c, char *err, size_t errlen)
{
	char id[IMAGE_ID_MAX];
	struct dargv a;
	struct proc_result r;
	int rc;

	if (image_pinned_id(c, id) < 0) {
		snprintf(err, errlen, "no sandbox image pinned (run `cordon "
		    "image build`)");
		return -ENOENT;
	}
	dargv_init(&a);
	dargv_add(&a, c->docker);
	dargv_add(&a, "image");
	dargv_add(&a, "inspect");
	dargv_add(&a, "--format={{.Id}}");
	dargv_add(&a, id);
	rc = run_argv(&a, &r, 4096);
	dargv_cleanup(&a);
	if (rc < 0)
		return rc;
	if (r.exit_code != 0) {
		snprintf(err, errlen, "pinned image %.19s... is not present in "
		    "the docker daemon (run `cordon image build`)", id);
		rc = -ENOENT;
	}
	proc_result_cleanup(&r);
	return rc;
}

int
runner_preflight(const struct config *c, enum runner_net net, char *err,
    size_t errlen)
{
	int rc;

	rc = check_runtime(c, net == RUNNER_NET_PROXY ? c->runtime_egress :
	    c->runtime_offline, err, errlen);
	if (rc == 0)
		rc = check_image(c, err, errlen);
	return rc;
}

bool
docker_gc_match(const char *owner_pid, const char *deadline, int64_t now_s,
    bool (*alive)(long pid))
{
	int64_t pid, dl;

	if (util_parse_i64(deadline, 0, INT64_MAX, &dl) < 0 || dl < now_s)
		return true;
	if (util_parse_i64(owner_pid, 1, INT32_MAX, &pid) < 0)
		return true;
	return alive != NULL && !alive((long)pid);
}
