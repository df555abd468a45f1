/*
 * docker CLI helpers (docker.h): rm -f, inspect, preflight and gc. The
 * outputs parsed here come from the daemon, but are still parsed strictly.
 */
#include "runner/docker.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/proc.h"
#include "common/util.h"
#include "runner/docker_argv.h"
#include "runner/dockerapi.h"
#include "runner/image.h"

/* Runs the argv built in a through proc_call with the small-call deadline
 * (stderr up to 4 KiB). proc_call's result and err, or a's build error. */
static int
call_argv_ms(const struct dargv *a, size_t outmax, int64_t timeout_ms,
    struct cbuf **out, char *err, size_t errlen)
{
	struct proc_opts o = { .argv = (const char *const *)a->v,
	    .stdout_max = outmax, .stderr_max = 4096 };

	if (a->error != 0) {
		if (out != NULL)
			*out = NULL;
		snprintf(err, errlen, "%s", strerror(-a->error));
		return a->error;
	}
	return proc_call(&o, timeout_ms, out, NULL, err, errlen);
}

static int
call_argv(const struct dargv *a, size_t outmax, struct cbuf **out,
    char *err, size_t errlen)
{
	return call_argv_ms(a, outmax, DOCKER_CALL_MS, out, err, errlen);
}

/* docker's message (proc_call's err) says the container does not exist. */
static bool
says_no_such(const char *err)
{
	return strstr(err, "No such") != NULL || strstr(err, "no such") != NULL;
}

int
docker_rm_force(const struct config *c, const char *const *names, size_t n,
    char *err, size_t errlen)
{
	struct dargv a;
	char why[320];
	int rc;

	if (errlen > 0)
		err[0] = '\0';
	if (n == 0)
		return 0;
	dargv_init(&a);
	dargv_add(&a, c->docker);
	dargv_add(&a, "rm");
	dargv_add(&a, "-f");
	for (size_t i = 0; i < n; i++)
		dargv_add(&a, names[i]);
	rc = call_argv(&a, 65536, NULL, why, sizeof(why));
	dargv_cleanup(&a);
	/* Newer clients exit 0 for `rm -f` of a missing container; older ones
	 * say "No such". A removal already in progress (the run removing its
	 * own container while gc lists it, or an earlier removal of ours cut
	 * by its timeout) is -EBUSY: it may still fail. */
	if (rc == -EIO && says_no_such(why))
		rc = -ENOENT;
	else if (rc == -EIO && strstr(why, "already in progress") != NULL)
		rc = -EBUSY;
	if (errlen > 0)
		snprintf(err, errlen, "%s", why);
	return rc;
}

int
docker_kill(const struct config *c, const char *name, int64_t timeout_ms)
{
	struct dargv a;
	char err[320];
	int rc;

	dargv_init(&a);
	dargv_add(&a, c->docker);
	dargv_add(&a, "kill");
	dargv_add(&a, name);
	rc = call_argv_ms(&a, 4096, timeout_ms, NULL, err, sizeof(err));
	dargv_cleanup(&a);
	if (rc == -EIO && says_no_such(err))
		rc = -ENOENT;
	else if (rc == -EIO && strstr(err, "is not running") != NULL)
		rc = 0;
	return rc;
}

int
docker_state_parse(const char *line, struct docker_state *st)
{
	char buf[160], *sp1, *sp2, *sp3;
	int64_t code;

	if (!util_strlcpy(buf, line, sizeof(buf)))
		return -EINVAL;
	buf[strcspn(buf, "\r\n")] = '\0';
	if ((sp1 = strchr(buf, ' ')) == NULL ||
	    (sp2 = strchr(sp1 + 1, ' ')) == NULL)
		return -EINVAL;
	*sp1++ = '\0';
	*sp2++ = '\0';
	/* An optional fourth field: the container's full ID. */
	st->id[0] = '\0';
	if ((sp3 = strchr(sp2, ' ')) != NULL) {
		*sp3++ = '\0';
		if (!util_strlcpy(st->id, sp3, sizeof(st->id)))
			return -EINVAL;
	}
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

/* `docker inspect --format=FORMAT NAME` of a container: 0 with *out (caller
 * cbuf_frees), -ENOENT when there is no such container, or another
 * negative errno. */
static int
inspect_format(const struct config *c, const char *name, const char *format,
    struct cbuf **out)
{
	struct dargv a;
	char err[320];
	int rc;

	dargv_init(&a);
	dargv_add(&a, c->docker);
	dargv_add(&a, "inspect");
	dargv_add(&a, "--type=container");
	dargv_addf(&a, "--format=%s", format);
	dargv_add(&a, name);
	rc = call_argv(&a, 4096, out, err, sizeof(err));
	dargv_cleanup(&a);
	if (rc == -EIO && says_no_such(err))
		rc = -ENOENT;
	if (rc < 0) {
		cbuf_free(*out);
		*out = NULL;
	}
	return rc;
}

int
docker_inspect_state(const struct config *c, const char *name,
    struct docker_state *st)
{
	struct cbuf *out;
	int rc = inspect_format(c, name, "{{.State.OOMKilled}} "
	    "{{.State.ExitCode}} {{.State.StartedAt}} {{.Id}}", &out);

	if (rc < 0)
		return rc;
	rc = docker_state_parse(cbuf_data(out), st);
	cbuf_free(out);
	return rc;
}

int
docker_wait_running(const struct config *c, const char *name)
{
	struct cbuf *out;
	const char *status;
	int rc = inspect_format(c, name, "{{.State.Status}}", &out);

	if (rc == -ENOENT)
		return -EAGAIN;
	if (rc < 0)
		return rc;
	status = cbuf_data(out);
	if (strncmp(status, "running", 7) == 0)
		rc = 0;
	else if (strncmp(status, "created", 7) == 0)
		rc = -EAGAIN;
	else
		rc = -ECHILD;
	cbuf_free(out);
	return rc;
}

int
docker_runtime_parse(const char *json, size_t len, const char *name,
    struct docker_runtime *rt)
{
	cJSON *o = cJSON_ParseWithLength(json, len);
	const cJSON *r, *path, *args, *a;
	size_t n = 0;
	int rc = 0;

	memset(rt, 0, sizeof(*rt));
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		return -EBADMSG;
	}
	r = cJSON_GetObjectItemCaseSensitive(o, name);
	if (!cJSON_IsObject(r)) {
		cJSON_Delete(o);
		return -ENOENT;
	}
	path = cJSON_GetObjectItemCaseSensitive(r, "path");
	if (cJSON_IsString(path) &&
	    !util_strlcpy(rt->path, path->valuestring, sizeof(rt->path)))
		rc = -E2BIG;
	args = cJSON_GetObjectItemCaseSensitive(r, "runtimeArgs");
	cJSON_ArrayForEach(a, args)
		if (cJSON_IsString(a) && n < sizeof(rt->args))
			n += (size_t)snprintf(rt->args + n,
			    sizeof(rt->args) - n, "%s%s", n ? " " : "",
			    a->valuestring);
	cJSON_Delete(o);
	if (rc < 0)
		memset(rt, 0, sizeof(*rt));
	return rc;
}

const char *
docker_runtime_stack(const char *args)
{
	const char *stack = "netstack", *p = args, *end;
	size_t n;

	while (p != NULL && *p != '\0') {
		while (*p == ' ')
			p++;
		end = strchr(p, ' ');
		n = end != NULL ? (size_t)(end - p) : strlen(p);
		if (n == strlen("--network=host") &&
		    strncmp(p, "--network=host", n) == 0)
			stack = "host";
		else if (n == strlen("--network=none") &&
		    strncmp(p, "--network=none", n) == 0)
			stack = "none";
		else if (n > strlen("--network=") &&
		    strncmp(p, "--network=", strlen("--network=")) == 0)
			stack = "netstack";
		p = end;
	}
	return stack;
}

static int
check_runtime(const struct config *c, const char *runtime, char *err,
    size_t errlen)
{
	struct docker_runtime rt;
	struct cbuf *out;
	struct dargv a;
	char why[320];
	int rc;

	dargv_init(&a);
	dargv_add(&a, c->docker);
	dargv_add(&a, "info");
	dargv_add(&a, "--format={{json .Runtimes}}");
	rc = call_argv(&a, 1 << 16, &out, why, sizeof(why));
	dargv_cleanup(&a);
	if (rc == -EIO && docker_fault_text(why) !=
	    DOCKER_FAULT_OTHER) {
		cbuf_free(out);
		return docker_fault_say(docker_fault_text(why), NULL, why, err,
		    errlen);
	}
	if (rc < 0) {
		snprintf(err, errlen, RUNNER_DOCKER_UNAVAILABLE ": docker "
		    "daemon not reachable (`%s info` failed%s%.200s)", c->docker,
		    rc == -EIO ? ": " : "", rc == -EIO ? why : "");
		cbuf_free(out);
		return -EHOSTUNREACH;
	}
	if (docker_runtime_parse(cbuf_data(out), cbuf_len(out), runtime,
	    &rt) < 0) {
		snprintf(err, errlen, "runtime '%s' is not registered with the "
		    "docker daemon (run scripts/setup); refusing to run without "
		    "gVisor", runtime);
		rc = -ENOENT;
	}
	cbuf_free(out);
	return rc;
}

static int
check_image(const struct config *c, char *err, size_t errlen)
{
	char id[IMAGE_ID_MAX], why[320];
	struct dargv a;
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
	rc = call_argv(&a, 4096, NULL, why, sizeof(why));
	dargv_cleanup(&a);
	if (rc == -EIO) {
		snprintf(err, errlen, "pinned image %.19s... is not present in "
		    "the docker daemon (run `cordon image build`)", id);
		rc = -ENOENT;
	}
	return rc;
}

int
runner_daemon_access(const struct config *c, char *err, size_t errlen)
{
	/* Not ours to use: every docker call would fail the same way. */
	if (dockerapi_default(c) && access(DOCKERAPI_SOCKET, W_OK) < 0 &&
	    errno == EACCES)
		return docker_fault_say(DOCKER_FAULT_DENIED, DOCKERAPI_SOCKET,
		    NULL, err, errlen);
	return 0;
}

int
runner_daemon_check(const struct config *c, char *err, size_t errlen)
{
	struct stat st;
	int rc;

	if (!dockerapi_default(c))
		return 0;
	if (stat(DOCKERAPI_SOCKET, &st) < 0 && errno == ENOENT)
		return docker_fault_say(DOCKER_FAULT_DOWN, DOCKERAPI_SOCKET,
		    "no " DOCKERAPI_SOCKET, err, errlen);
	if ((rc = runner_daemon_access(c, err, errlen)) < 0)
		return rc;
	if ((rc = dockerapi_ping(DOCKERAPI_SOCKET, DOCKER_PING_MS)) == 0)
		return 0;
	if (rc == -ETIMEDOUT)
		snprintf(err, errlen, RUNNER_DOCKER_UNAVAILABLE ": dockerd did "
		    "not answer /_ping on %s within %d ms", DOCKERAPI_SOCKET,
		    DOCKER_PING_MS);
	else if (docker_fault_errno(rc) != DOCKER_FAULT_OTHER)
		(void)docker_fault_say(docker_fault_errno(rc), DOCKERAPI_SOCKET,
		    rc == -ECONNREFUSED ? "nothing listens on "
		    DOCKERAPI_SOCKET : NULL, err, errlen);
	else
		snprintf(err, errlen, RUNNER_DOCKER_UNAVAILABLE ": dockerd "
		    "does not answer on %s (%s)", DOCKERAPI_SOCKET,
		    rc == -EIO ? "/_ping refused" : strerror(-rc));
	return -EHOSTUNREACH;
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
