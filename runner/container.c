/*
 * The container steps shared by cold runs and the warm pool (container.h).
 */
#include "runner/container.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/util.h"
#include "runner/apirun.h"
#include "runner/docker.h"
#include "runner/dockerapi.h"
#include "runner/egress.h"
#include "runner/outwrap.h"

void
container_spec(const struct config *c, const struct container_start *s,
    struct docker_spec *out)
{
	*out = (struct docker_spec){
		.name = s->name, .image_id = s->image,
		.runtime = c->runtime_offline, .network = "none",
		.session = s->session != NULL ? s->session : "",
		.owner_pid = (long)getpid(),
		.deadline_epoch_s = s->label_deadline_s,
		.memory = s->lim->memory, .cpus = s->lim->cpus,
		.in_dir = s->in_dir,
		.wrapper = s->out_wrapper ? outwrap_program : NULL,
		.wrapper_cap = s->lim->max_output,
		.lang = s->lang,
	};
	if (s->na != NULL) {
		/* The run's proxy credential comes first on stdin. */
		out->prelude = runner_egress_prelude;
		out->runtime = s->na->runtime;
		out->network = s->na->network;
		out->extra = s->na->argv;
		out->ca_bundle = s->na->ca_bundle[0] != '\0' ?
		    s->na->ca_bundle : NULL;
		out->resolv_conf = s->na->resolv_conf[0] != '\0' ?
		    s->na->resolv_conf : NULL;
		out->nextra = s->na->argc;
	}
	/* A debug run: the same argv, only the runtime differs. */
	if (s->runtime != NULL)
		out->runtime = s->runtime;
	out->holder = s->holder;
}

static int
spawn(const struct config *c, const struct container_start *s, bool exec,
    struct proc **out)
{
	struct docker_spec spec;
	struct dargv a;
	struct proc_opts o = { .stdin_data = s->input,
	    .stdin_len = s->input_len, .stdin_hold = s->hold,
	    .stdout_max = s->stdout_max, .stderr_max = s->stderr_max,
	    .stdout_keep = s->stdout_keep, .stderr_keep = s->stderr_keep,
	    .stop_at_cap = s->stop_at_cap };
	int rc;

	container_spec(c, s, &spec);
	if ((rc = exec ? docker_exec_argv(c, &spec, &a) :
	    docker_run_argv(c, &spec, &a)) < 0)
		return rc;
	o.argv = (const char *const *)a.v;
	rc = proc_spawn(&o, out);
	dargv_cleanup(&a);
	return rc;
}

int
container_spawn(const struct config *c, const struct container_start *s,
    struct proc **out)
{
	return spawn(c, s, false, out);
}

int
container_exec_spawn(const struct config *c, const struct container_start *s,
    struct proc **out)
{
	return spawn(c, s, true, out);
}

int
container_api_start(const struct config *c, const struct container_start *s,
    int64_t deadline_ms, const atomic_int *cancel, struct apirun **out,
    char *err, size_t errlen)
{
	struct docker_spec spec;
	struct apirun_opts o = { .sock = DOCKERAPI_SOCKET, .name = s->name,
	    .input = s->input, .input_len = s->input_len,
	    .stdout_max = s->stdout_max, .stderr_max = s->stderr_max,
	    .stdout_keep = s->stdout_keep, .stderr_keep = s->stderr_keep,
	    .stop_at_cap = s->stop_at_cap,
	    /* Proxy mode: the code waits for the seal and registration. */
	    .hold_input = s->na != NULL };
	char *body = NULL;
	int rc;

	*out = NULL;
	container_spec(c, s, &spec);
	if ((rc = dockerapi_create_body(c, &spec, &body)) < 0) {
		snprintf(err, errlen, "cannot build the container's create "
		    "request: %s", strerror(-rc));
		return rc;
	}
	o.body = body;
	rc = apirun_new(&o, out);
	free(body);
	if (rc < 0) {
		snprintf(err, errlen, "%s", strerror(-rc));
		return rc;
	}
	return apirun_start(*out, deadline_ms, cancel, err, errlen);
}

int
container_api_abort(const struct config *c, const char *name,
    const struct apirun *a)
{
	int64_t end = time_mono_ms() + CONTAINER_API_ABORT_MS;
	int rc;

	/* A create cut short before its answer may still be carried out by
	 * the daemon: look again for a while (as container_abort does while
	 * a `docker run` lives). One refused or answered is final. */
	while ((rc = container_remove(c, name)) == -ENOENT && a != NULL &&
	    !apirun_created(a) && apirun_http_status(a) == 0 &&
	    time_mono_ms() < end)
		(void)poll(NULL, 0, 50);
	return rc;
}

static int
remove_once(const struct config *c, const char *name)
{
	const char *names[] = { name };
	int rc;

	if (dockerapi_usable(c)) {
		rc = dockerapi_rm_force(DOCKERAPI_SOCKET, name, DOCKER_CALL_MS);
		if (rc == 0 || rc == -ENOENT || rc == -EBUSY)
			return rc;
	}
	/* container_remove's callers go by its result alone. */
	return docker_rm_force(c, names, 1, NULL, 0);
}

int
container_remove(const struct config *c, const char *name)
{
	int64_t end = time_mono_ms() + CONTAINER_BUSY_MS;
	int rc;

	/* A removal already in progress (409) is not one done: it may be
	 * an earlier one of ours cut by its timeout, and it can still fail
	 * (a kill the runtime did not carry out), leaving the container
	 * running with nobody to remove it. That was seen in CI: a probe's
	 * warm container, Up a minute after its probe had exited. Asked
	 * again until the daemon answers removed or no such container. */
	while ((rc = remove_once(c, name)) == -EBUSY &&
	    time_mono_ms() < end)
		(void)poll(NULL, 0, 100);
	return rc;
}

int
container_abort(const struct config *c, const char *name, struct proc *cli,
    int64_t deadline_ms)
{
	char why[256];
	bool gone;
	int rc;

	for (;;) {
		/* Sampled first: a CLI gone before the removal had its
		 * create answered, so a -ENOENT then is final. */
		gone = proc_gone(cli);
		rc = container_remove(c, name);
		if (rc == 0 || (rc == -ENOENT && gone) ||
		    time_mono_ms() >= deadline_ms)
			break;
		/* A daemon that is down creates nothing meanwhile: no reason
		 * to hold the caller (container_abort_patient waits for it). */
		if (rc != -ENOENT && runner_daemon_check(c, why,
		    sizeof(why)) < 0)
			break;
		/* Not there yet (its create still running), or a removal that
		 * failed (a daemon busy tearing a sandbox down): again. */
		(void)poll(NULL, 0, rc == -ENOENT ? 20 : 200);
	}
	proc_kill(cli, SIGKILL);
	(void)proc_reap(cli, time_mono_ms() + 5000);
	if (rc == -ENOENT && !gone)
		rc = container_remove(c, name);
	return rc;
}

int
container_abort_patient(const struct config *c, const char *name,
    struct proc *cli)
{
	int64_t t0 = time_mono_ms();
	char why[256];
	int rc = container_abort(c, name, cli, t0 + CONTAINER_ABORT_MS);

	/* Failed, not missing: the daemon was down or failing. Its
	 * stopped container would stay until someone's gc. */
	while (rc < 0 && rc != -ENOENT && time_mono_ms() < t0 +
	    CONTAINER_PATIENT_MS) {
		(void)poll(NULL, 0, 500);
		if (runner_daemon_check(c, why, sizeof(why)) == 0)
			rc = container_remove(c, name);
	}
	return rc;
}

/* State.Status of an inspect body: 0 running, -EAGAIN created, -ECHILD
 * any other (exited, dead...), -EBADMSG not a container's state. */
static int
api_status(const struct dockerapi_resp *resp)
{
	cJSON *o = cJSON_ParseWithLength(resp->body, resp->body_len);
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "State");
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(st, "Status");
	int rc = !cJSON_IsString(s) ? -EBADMSG :
	    strcmp(s->valuestring, "running") == 0 ? 0 :
	    strcmp(s->valuestring, "created") == 0 ? -EAGAIN : -ECHILD;

	cJSON_Delete(o);
	return rc;
}

/* GET /containers/NAME/json into *resp (any status; the caller's to
 * clean up when 0). The one place the inspect path is built: a name that
 * is not one of ours (URL syntax) is -EINVAL. */
static int
api_inspect(const char *name, int64_t deadline_ms, struct dockerapi_resp *resp)
{
	char path[160];

	if (!dockerapi_name_ok(name))
		return -EINVAL;
	if ((size_t)snprintf(path, sizeof(path), "/containers/%s/json",
	    name) >= sizeof(path))
		return -ENAMETOOLONG;
	return dockerapi_call(DOCKERAPI_SOCKET, "GET", path, NULL,
	    deadline_ms, resp);
}

/* docker_wait_running over the Engine API: one GET of the container's
 * JSON (kept in *resp, the caller's to clean up, when it runs), not a
 * `docker inspect` process (about 60 ms each here). -EAGAIN while it is
 * created or not there yet. */
static int
api_running(const char *name, int64_t deadline_ms, struct dockerapi_resp *resp)
{
	int rc;

	if ((rc = api_inspect(name, deadline_ms, resp)) < 0)
		return rc;
	rc = resp->status == 404 ? -EAGAIN : resp->status != 200 ? -EIO :
	    api_status(resp);
	if (rc < 0)
		dockerapi_resp_cleanup(resp);
	return rc;
}

/* Waits as container_wait_running; with the Engine API usable, its last
 * answer (the container running) is kept in *resp (resp->body NULL:
 * none kept, the CLI asked). */
static int
wait_running(const struct config *c, const char *name, int64_t deadline_ms,
    int (*stop)(void *), void *arg, struct dockerapi_resp *resp)
{
	bool api = dockerapi_usable(c);
	int rc;

	memset(resp, 0, sizeof(*resp));
	for (;;) {
		rc = api ? api_running(name, deadline_ms, resp) :
		    docker_wait_running(c, name);
		if (rc != -EAGAIN)
			break;
		if (stop != NULL && (rc = stop(arg)) < 0)
			return rc;
		if (time_mono_ms() >= deadline_ms)
			return -ETIMEDOUT;
		/* The API answers in a few ms: poll it more often. */
		(void)poll(NULL, 0, api ? 20 : 50);
	}
	return rc;
}

int
container_wait_running(const struct config *c, const char *name,
    int64_t deadline_ms, int (*stop)(void *), void *arg)
{
	struct dockerapi_resp resp;
	int rc = wait_running(c, name, deadline_ms, stop, arg, &resp);

	dockerapi_resp_cleanup(&resp);
	return rc;
}

/* Seals name from its inspect body (the Engine API's container JSON). */
static int
seal_body(const struct config *c, const struct netsetup_endpoint *ep,
    const char *name, const struct dockerapi_resp *resp, char *addr,
    char *err, size_t errlen)
{
	struct netsetup_sandbox_view v;

	if (netsetup_sandbox_view_parse(c, resp->body, resp->body_len,
	    &v) < 0) {
		snprintf(err, errlen, "docker API inspect of %s: not a "
		    "container's state", name);
		return -EBADMSG;
	}
	return netsetup_sandbox_seal_view(c, ep, name, &v, addr, err, errlen);
}

int
container_seal_until(const struct config *c,
    const struct netsetup_endpoint *ep, const char *name, int64_t deadline_ms,
    int (*stop)(void *), void *arg, char *addr, int64_t *running_at,
    char *err, size_t errlen)
{
	struct dockerapi_resp resp;
	int rc = wait_running(c, name, deadline_ms, stop, arg, &resp);

	if (running_at != NULL)
		*running_at = rc == 0 ? time_mono_ms() : 0;
	if (rc == -ETIMEDOUT)
		snprintf(err, errlen, "the egress container did not start "
		    "before the deadline");
	else if (rc < 0)
		snprintf(err, errlen, "the egress container did not start: %s",
		    strerror(-rc));
	/* Seen running over the API: that very answer is sealed from (no
	 * second inspect); else `docker inspect`'s. */
	else if (resp.body != NULL)
		rc = seal_body(c, ep, name, &resp, addr, err, errlen);
	else
		rc = netsetup_sandbox_seal(c, ep, name, addr, err, errlen);
	dockerapi_resp_cleanup(&resp);
	return rc;
}

int
container_seal(const struct config *c, const struct netsetup_endpoint *ep,
    const char *name, int64_t deadline_ms, char *addr, int64_t *running_at,
    char *err, size_t errlen)
{
	return container_seal_until(c, ep, name, deadline_ms, NULL, NULL, addr,
	    running_at, err, errlen);
}

int
container_api_seal(const struct config *c, const struct netsetup_endpoint *ep,
    const char *name, int64_t deadline_ms, char *addr, char *err,
    size_t errlen)
{
	struct dockerapi_resp resp;
	char why[200];
	int rc;

	if ((rc = api_inspect(name, deadline_ms, &resp)) < 0) {
		snprintf(err, errlen, "docker API inspect of %s: %s", name,
		    strerror(-rc));
		return rc;
	}
	if (resp.status != 200) {
		rc = resp.status == 404 ? -ENOENT : -EIO;
		dockerapi_error_message(&resp, why, sizeof(why));
		snprintf(err, errlen, "docker API inspect of %s: %d %s", name,
		    resp.status, why);
		dockerapi_resp_cleanup(&resp);
		return rc;
	}
	rc = seal_body(c, ep, name, &resp, addr, err, errlen);
	dockerapi_resp_cleanup(&resp);
	return rc;
}
