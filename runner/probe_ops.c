/*
 * The runner's probe ops (probe_ops.h): the probe program goes through
 * runner_run like any job (optionally taking the one container of a warm
 * pool labelled with the probe's session), while an inspector thread
 * finds that container by its label and keeps its `docker inspect`.
 */
#include "runner/probe_ops.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "common/proc.h"
#include "common/util.h"
#include "netsetup/netsetup.h"
#include "runner/debug.h"
#include "runner/docker.h"
#include "runner/pool.h"
#include "runner/result.h"

#define PROBE_RUN_TIMEOUT_S 90	/* the program runs for seconds (forks) */
#define PROBE_WARM_WAIT_MS 60000

/* What a probe's runs need: the config and the run function. */
struct probe_ctx {
	const struct config *c;
	runner_probe_run_fn *run;
};

struct inspector {
	const struct config *c;
	const char *session;
	atomic_int stop;
	char *inspect;		/* docker inspect JSON of the probe container */
	size_t inspect_len;
};

/* stdout of a docker call that exited 0 (caller frees), else NULL. */
static struct cbuf *
docker_out(const char *const *argv, size_t max)
{
	struct proc_opts o = { .argv = argv, .stdout_max = max,
	    .stderr_max = 4096 };
	struct cbuf *out;
	char err[320];

	if (proc_call(&o, DOCKER_CALL_MS, &out, NULL, err, sizeof(err)) == 0)
		return out;
	cbuf_free(out);
	return NULL;
}

/* Polls for the container labelled with our session and inspects it once
 * it is running (the probe program runs for seconds: the fork test). */
static void *
inspector_main(void *arg)
{
	struct inspector *in = arg;
	char filter[96];

	snprintf(filter, sizeof(filter), "label=cordon.session=%s",
	    in->session);
	while (!atomic_load(&in->stop)) {
		const char *ps[] = { in->c->docker, "ps", "-q", "--filter",
		    filter, NULL };
		struct cbuf *ids = docker_out(ps, 4096);
		char id[80] = "";
		if (ids != NULL) {
			util_strlcpy(id, cbuf_data(ids), sizeof(id));
			id[strcspn(id, "\n")] = '\0';
			cbuf_free(ids);
		}
		if (id[0] != '\0') {
			const char *insp[] = { in->c->docker, "inspect", id,
			    NULL };
			struct cbuf *j = docker_out(insp, 1 << 20);
			if (j != NULL) {
				in->inspect = cbuf_steal(j, &in->inspect_len);
				cbuf_free(j);
				return NULL;
			}
		}
		usleep(200 * 1000);
	}
	return NULL;
}

/* Whether dockerd registers runtime with a runsc binary (false when
 * `docker info` fails); *stack gets its network stack
 * (docker_runtime_stack), or stays NULL. */
static bool
runtime_is_runsc(const struct config *c, const char *runtime,
    const char **stack)
{
	const char *argv[] = { c->docker, "info", "--format",
	    "{{json .Runtimes}}", NULL };
	struct cbuf *out = docker_out(argv, 1 << 16);
	struct docker_runtime rt;
	bool ok;

	*stack = NULL;
	if (out == NULL)
		return false;
	ok = docker_runtime_parse(cbuf_data(out), cbuf_len(out), runtime,
	    &rt) == 0 && strstr(rt.path, "runsc") != NULL;
	if (ok)
		*stack = docker_runtime_stack(rt.args);
	cbuf_free(out);
	return ok;
}

/* --warm: a pool of one container for the mode, labelled with the probe's
 * session (the inspector finds it by that), ready before the run. */
static int
warm_pool(const struct config *c, enum runner_net net, const char *session,
    struct runner_pool **out, char *err, size_t errlen)
{
	struct runner_pool_opts o = { .size = 1, .max_age_s = 600,
	    .session = session, .skip_probe_check = true };
	struct runner_pool_stats st;
	int rc;

	o.modes[net] = true;
	if ((rc = runner_pool_new(c, &o, out, err, errlen)) < 0)
		return rc;
	if (runner_pool_wait_full(*out, PROBE_WARM_WAIT_MS) == 0)
		return 0;
	runner_pool_stats(*out, &st);
	snprintf(err, errlen, "no warm container in 60 s%s%.160s",
	    st.last_error[0] != '\0' ? ": " : "", st.last_error);
	runner_pool_free(*out);
	*out = NULL;
	return -ETIMEDOUT;
}

/* Moves what the probe needs from the run's result into out. */
static void
outcome_take(struct probe_outcome *out, struct runner_result *res,
    struct inspector *in)
{
	out->out = res->out;
	out->out_len = res->out_len;
	out->err = res->err;
	out->err_len = res->err_len;
	res->out = res->err = NULL;
	out->inspect = in->inspect;
	out->inspect_len = in->inspect_len;
	in->inspect = NULL;
	util_strlcpy(out->container, res->container, sizeof(out->container));
	out->warm = res->warm;
	out->run_status = runner_status_name(res->status);
	util_strlcpy(out->image, res->image, sizeof(out->image));
	util_strlcpy(out->debug_log, res->debug_log, sizeof(out->debug_log));
}

/* probe_ops.run: the program through runner_run (x->run), inspected
 * meanwhile. */
static int
probe_job_run(void *data, const struct probe_job *job,
    struct probe_outcome *out, char *err, size_t errlen)
{
	const struct probe_ctx *x = data;
	const struct config *c = x->c;
	struct inspector in = { .c = c, .session = job->session };
	struct runner_request req = { .code = job->code,
	    .code_len = job->code_len, .timeout_s = PROBE_RUN_TIMEOUT_S,
	    .session = job->session, .skip_probe_check = true,
	    .debug = job->debug };
	struct runner_result res = { 0 };
	struct runner_pool *pool = NULL;
	pthread_t th;
	int rc;

	/* Our own request: within the operator's maximum, which the runner
	 * would refuse a caller to exceed. */
	if (req.timeout_s > c->limits.max_timeout_s)
		req.timeout_s = c->limits.max_timeout_s;
	req.net = strcmp(job->mode, "proxy") == 0 ? RUNNER_NET_PROXY :
	    RUNNER_NET_NONE;
	if (job->warm && (rc = warm_pool(c, req.net, job->session, &pool, err,
	    errlen)) < 0)
		return rc;
	req.pool = pool;
	if (pthread_create(&th, NULL, inspector_main, &in) != 0) {
		runner_pool_free(pool);
		snprintf(err, errlen, "cannot start the inspector");
		return -EAGAIN;
	}
	rc = x->run(c, &req, &res, err, errlen);
	atomic_store(&in.stop, 1);
	pthread_join(th, NULL);
	runner_pool_free(pool);
	if (rc == 0 && job->warm && !res.warm) {
		snprintf(err, errlen, "the run did not get the warm container");
		rc = -EIO;
	}
	if (rc == 0)
		outcome_take(out, &res, &in);
	free(in.inspect);
	runner_result_cleanup(&res);
	return rc;
}

/* One probe, the probe lock already held. */
static int
probe_locked(const struct probe_ctx *x, const char *mode, bool warm,
    bool debug, struct probe_report *rep, cJSON **json, char *err,
    size_t errlen)
{
	const struct config *c = x->c;
	static const struct probe_ops ops = { .run = probe_job_run };
	struct probe_run_opts o = { .mode = mode, .warm = warm,
	    .debug = debug };
	const char *runtime;
	struct netsetup_endpoint ep;
	struct utsname uts;
	char proxy_url[64];
	int rc;

	if (strcmp(mode, "proxy") == 0) {
		if ((rc = netsetup_ready(c, &ep, err, errlen)) < 0)
			return rc;
		snprintf(proxy_url, sizeof(proxy_url), "http://%s:%d",
		    ep.gateway, ep.port);
		o.proxy_url = proxy_url;
	}
	if (uname(&uts) < 0) {
		rc = -errno;
		snprintf(err, errlen, "uname: %s", strerror(-rc));
		return rc;
	}
	o.host_release = uts.release;
	if (debug)
		runtime = runner_debug_runtime(c, o.proxy_url != NULL ?
		    RUNNER_NET_PROXY : RUNNER_NET_NONE);
	else
		runtime = o.proxy_url != NULL ? c->runtime_egress :
		    c->runtime_offline;
	o.runtime_is_runsc = runtime_is_runsc(c, runtime, &o.stack);
	return probe_run(c, &o, &ops, (void *)x, rep, json, err, errlen);
}

int
runner_probe(const struct config *c, runner_probe_run_fn *run,
    const char *mode, bool warm, bool debug, struct probe_report *rep,
    cJSON **json, char *err, size_t errlen)
{
	struct probe_ctx x = { .c = c, .run = run };
	int fd, rc;

	*json = NULL;
	memset(rep, 0, sizeof(*rep));
	if (warm && debug) {
		snprintf(err, errlen, "a debug probe runs cold (warm "
		    "containers run in the mode's own runtime)");
		return -EINVAL;
	}
	if (debug && (rc = runner_debug_allowed(err, errlen)) < 0)
		return rc;
	/* A docker that cannot be reached is said as such, never as 13
	 * failed controls (nor as the probe lock's permission error). */
	if ((rc = runner_daemon_check(c, err, errlen)) < 0)
		return rc;
	if ((fd = probe_lock(c, time_mono_ms() + probe_lock_wait_ms(c), NULL,
	    err, errlen)) < 0)
		return fd;
	rc = probe_locked(&x, mode, warm, debug, rep, json, err, errlen);
	probe_unlock(fd);
	return rc;
}

struct auto_ctx {
	struct probe_ctx x;
	void (*note)(void *, const char *);
	void *note_arg;
};

/* probe_auto.probe: a cold probe, its report only recorded. */
static int
auto_probe(void *data, const char *mode, char *err, size_t errlen)
{
	struct auto_ctx *x = data;
	struct probe_report rep;
	cJSON *json = NULL;
	int rc;

	rc = probe_locked(&x->x, mode, false, false, &rep, &json, err, errlen);
	cJSON_Delete(json);
	/* A report that could not be recorded cannot let the run go on:
	 * the caller reads the record again. */
	return rc;
}

static void
auto_note(void *data, const char *msg)
{
	struct auto_ctx *x = data;

	if (x->note != NULL)
		x->note(x->note_arg, msg);
}

int
runner_probe_ensure(const struct config *c, runner_probe_run_fn *run,
    const char *mode, const char *image, void (*note)(void *, const char *),
    void *note_arg, const atomic_int *cancel, char *err, size_t errlen)
{
	struct auto_ctx x = { .x = { .c = c, .run = run }, .note = note,
	    .note_arg = note_arg };
	struct probe_auto a = { .probe = auto_probe, .note = auto_note,
	    .data = &x, .cancel = cancel };

	return probe_state_ensure(c, mode, image, &a, err, errlen);
}
