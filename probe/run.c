/*
 * probe_run (probe.h): one whole probe. The program is run by the caller's
 * ops (the runner, or a test's fake), so this library stays below the
 * runner; here are the marker variable, the program, the judging, the
 * record and the report.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/util.h"
#include "probe/probe.h"

#define PROBE_STDERR_MAX 2000	/* bytes of a failed probe's stderr shown */

void
probe_outcome_cleanup(struct probe_outcome *out)
{
	if (out == NULL)
		return;
	free(out->out);
	free(out->err);
	free(out->inspect);
	memset(out, 0, sizeof(*out));
}

/* The report JSON with the run's details added; NULL on ENOMEM. */
static cJSON *
report_json(const struct probe_report *rep, const struct probe_outcome *out,
    bool debug, const char *stack)
{
	cJSON *j = probe_report_to_json(rep);

	if (j == NULL)
		return NULL;
	cJSON_AddStringToObject(j, "container", out->container);
	cJSON_AddBoolToObject(j, "warm", out->warm);
	cJSON_AddBoolToObject(j, "debug", debug);
	cJSON_AddStringToObject(j, "network_stack",
	    stack != NULL ? stack : "unknown");
	if (debug)
		cJSON_AddStringToObject(j, "debug_log", out->debug_log);
	cJSON_AddStringToObject(j, "run_status",
	    out->run_status != NULL ? out->run_status : "");
	if (!rep->pass && out->err_len > 0)
		json_add_bytes(j, "probe_stderr", out->err,
		    out->err_len > PROBE_STDERR_MAX ? PROBE_STDERR_MAX :
		    out->err_len);
	return j;
}

/* Runs the program with the marker set in the host environment. */
static int
run_marked(const struct probe_expect *e, const struct probe_job *job,
    const struct probe_ops *ops, void *data, struct probe_outcome *out,
    char *err, size_t errlen)
{
	int rc;

	if (setenv(e->marker_var, "1", 1) < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot set the marker variable: %s",
		    strerror(-rc));
		return rc;
	}
	rc = ops->run(data, job, out, err, errlen);
	(void)unsetenv(e->marker_var);
	return rc;
}

int
probe_run(const struct config *c, const struct probe_run_opts *o,
    const struct probe_ops *ops, void *data, struct probe_report *rep,
    cJSON **json, char *err, size_t errlen)
{
	struct probe_expect e = { .config = c, .mode = o->mode,
	    .host_release = o->host_release,
	    .runtime_is_runsc = o->runtime_is_runsc };
	struct probe_outcome out = { 0 };
	struct probe_job job = { .mode = o->mode, .warm = o->warm,
	    .debug = o->debug };
	char marker[64], session[40], hex[17], *code;
	bool proxy;
	int rc;

	*json = NULL;
	err[0] = '\0';
	memset(rep, 0, sizeof(*rep));
	if (o->mode == NULL || (strcmp(o->mode, "none") != 0 &&
	    strcmp(o->mode, "proxy") != 0) || o->host_release == NULL) {
		snprintf(err, errlen, "bad probe options");
		return -EINVAL;
	}
	proxy = strcmp(o->mode, "proxy") == 0;
	if (proxy && o->proxy_url == NULL) {
		snprintf(err, errlen, "proxy mode needs the proxy's URL");
		return -EINVAL;
	}
	if ((rc = util_random_hex(hex, 8)) < 0) {
		snprintf(err, errlen, "cannot make a random marker: %s",
		    strerror(-rc));
		return rc;
	}
	/* A host variable that must not reach the sandbox. */
	snprintf(marker, sizeof(marker), "CORDON_PROBE_MARKER_%s", hex);
	snprintf(session, sizeof(session), "probe-%s", hex);
	e.marker_var = marker;
	e.proxy_url = proxy ? o->proxy_url : NULL;
	if (o->debug)
		e.runtime = proxy ? c->runtime_debug_egress : c->runtime_debug;
	else
		e.runtime = proxy ? c->runtime_egress : c->runtime_offline;
	if ((code = probe_program(&e)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	job.code = code;
	job.code_len = strlen(code);
	job.session = session;
	rc = run_marked(&e, &job, ops, data, &out, err, errlen);
	free(code);
	if (rc < 0) {
		probe_outcome_cleanup(&out);
		return rc;
	}
	probe_evaluate(&e, out.out, out.out_len, out.inspect, out.inspect_len,
	    rep);
	rep->at_ms = time_wall_ms();
	util_strlcpy(rep->image, out.image, sizeof(rep->image));
	/* A debug probe proves the debug runtime; the record stands for the
	 * runtime that jobs use, so it is left alone. */
	if (!o->debug && (rc = probe_state_write(c, rep)) < 0)
		snprintf(err, errlen, "cannot record the result in %s: %s",
		    c->state_dir, strerror(-rc));
	*json = report_json(rep, &out, o->debug, o->stack);
	probe_outcome_cleanup(&out);
	return 0;
}

int
probe_progress_line(const struct probe_control *ctl, int64_t ms, char *buf,
    size_t len)
{
	int n;

	if (ms < 0)
		ms = 0;
	if (ctl->pass)
		n = snprintf(buf, len, "cordon probe: %s ok (%lld.%lld s)\n",
		    ctl->name, (long long)(ms / 1000),
		    (long long)(ms % 1000 / 100));
	else
		n = snprintf(buf, len, "cordon probe: %s failed (%lld.%lld s): "
		    "%.120s\n", ctl->name, (long long)(ms / 1000),
		    (long long)(ms % 1000 / 100), ctl->observed);
	if (n < 0 || (size_t)n >= len) {
		if (len > 0)
			buf[0] = '\0';
		return -ENOSPC;
	}
	/* The observation comes from the sandbox: one line, no controls. */
	for (int i = 0; i < n - 1; i++)
		if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
			buf[i] = '?';
	return n;
}
