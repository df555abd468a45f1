/*
 * `cordon probe [--net none|proxy]`: runs the probe program through the
 * real runner (the same path as a user's job), inspects the probe's own
 * container from the host while it runs, judges both views, records the
 * result for the runner's require_probe check, and prints JSON. Exit 0
 * only when every control passes.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "common/json.h"
#include "common/proc.h"
#include "common/util.h"
#include "netsetup/netsetup.h"
#include "probe/probe.h"
#include "cli/cmd.h"
#include "runner/pool.h"
#include "runner/runner.h"

struct inspector {
	const struct config *c;
	char session[40];
	volatile int stop;
	char *inspect;		/* docker inspect JSON of the probe container */
	size_t inspect_len;
};

static struct cbuf *
docker_out(const struct config *c, const char *const *argv, size_t max)
{
	struct proc_opts o = { .argv = argv, .stdout_max = max,
	    .stderr_max = 4096 };
	struct proc_result r;
	struct cbuf *out = NULL;

	(void)c;
	if (proc_run(&o, 15000, &r) == 0 && r.exit_code == 0) {
		out = r.out;
		r.out = NULL;
	}
	proc_result_cleanup(&r);
	return out;
}

/* Polls for the container labelled with our session and inspects it once
 * it is running (the probe program runs for seconds: the fork test). */
static void *
inspector_main(void *arg)
{
	struct inspector *in = arg;
	char filter[96];

	snprintf(filter, sizeof(filter), "label=cordon.session=%s", in->session);
	while (!in->stop) {
		const char *ps[] = { in->c->docker, "ps", "-q", "--filter",
		    filter, NULL };
		struct cbuf *ids = docker_out(in->c, ps, 4096);
		char id[80] = "";
		if (ids != NULL) {
			util_strlcpy(id, cbuf_data(ids), sizeof(id));
			id[strcspn(id, "\n")] = '\0';
			cbuf_free(ids);
		}
		if (id[0] != '\0') {
			const char *insp[] = { in->c->docker, "inspect", id, NULL };
			struct cbuf *j = docker_out(in->c, insp, 1 << 20);
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

static bool
runtime_is_runsc(const struct config *c, const char *runtime)
{
	const char *argv[] = { c->docker, "info", "--format",
	    "{{json .Runtimes}}", NULL };
	struct cbuf *out = docker_out(c, argv, 1 << 16);
	cJSON *rts, *path;
	bool ok = false;

	if (out == NULL)
		return false;
	rts = cJSON_Parse(cbuf_data(out));
	path = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(rts, runtime), "path");
	ok = cJSON_IsString(path) && strstr(path->valuestring, "runsc") != NULL;
	cJSON_Delete(rts);
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
	if (runner_pool_wait_full(*out, 60000) == 0)
		return 0;
	runner_pool_stats(*out, &st);
	snprintf(err, errlen, "no warm container in 60 s%s%.160s",
	    st.last_error[0] != '\0' ? ": " : "", st.last_error);
	runner_pool_free(*out);
	*out = NULL;
	return -ETIMEDOUT;
}

static int
probe_usage(void)
{
	fprintf(stderr, "usage: cordon probe [--net none|proxy] [--warm]\n"
	    "  --warm  probe a container of a warm pool (pre-started, its "
	    "program\n          written later), the path `cordon serve --pool` "
	    "runs take\n");
	return 2;
}

int
cmd_probe(int argc, char **argv)
{
	struct config c;
	struct inspector in = { 0 };
	struct runner_request req = { 0 };
	struct runner_result res = { 0 };
	struct probe_expect e = { 0 };
	struct probe_report rep;
	struct utsname uts;
	char err[512], marker[64], hex[17], proxy_url[64], *code;
	const char *mode = "none";
	struct runner_pool *pool = NULL;
	bool warm = false;
	pthread_t th;
	cJSON *j;
	char *line;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--net") == 0 && i + 1 < argc)
			mode = argv[++i];
		else if (strcmp(argv[i], "--warm") == 0)
			warm = true;
		else
			return probe_usage();
	}
	if (strcmp(mode, "none") != 0 && strcmp(mode, "proxy") != 0)
		return probe_usage();
	if (config_load(&c, NULL, err, sizeof(err)) < 0) {
		fprintf(stderr, "cordon probe: %s\n", err);
		return 1;
	}
	if (strcmp(mode, "proxy") == 0) {
		struct netsetup_endpoint ep;
		if (netsetup_ready(&c, &ep, err, sizeof(err)) < 0) {
			fprintf(stderr, "cordon probe: %s\n", err);
			return 1;
		}
		snprintf(proxy_url, sizeof(proxy_url), "http://%s:%d",
		    ep.gateway, ep.port);
		e.proxy_url = proxy_url;
	}
	uname(&uts);
	util_random_hex(hex, 8);
	/* A host variable that must not reach the sandbox. */
	snprintf(marker, sizeof(marker), "CORDON_PROBE_MARKER_%s", hex);
	setenv(marker, "1", 1);
	e.config = &c;
	e.mode = mode;
	e.host_release = uts.release;
	e.runtime = e.proxy_url != NULL ? c.runtime_egress : c.runtime_offline;
	e.runtime_is_runsc = runtime_is_runsc(&c, e.runtime);
	e.marker_var = marker;
	if ((code = probe_program(&e)) == NULL) {
		fprintf(stderr, "cordon probe: out of memory\n");
		return 1;
	}
	in.c = &c;
	snprintf(in.session, sizeof(in.session), "probe-%s", hex);
	req.code = code;
	req.code_len = strlen(code);
	req.net = e.proxy_url != NULL ? RUNNER_NET_PROXY : RUNNER_NET_NONE;
	req.timeout_s = 90;
	req.session = in.session;
	req.skip_probe_check = true;
	if (warm && (rc = warm_pool(&c, req.net, in.session, &pool, err,
	    sizeof(err))) < 0) {
		free(code);
		fprintf(stderr, "cordon probe: %s\n", err);
		return 1;
	}
	req.pool = pool;
	if (pthread_create(&th, NULL, inspector_main, &in) != 0) {
		free(code);
		fprintf(stderr, "cordon probe: cannot start the inspector\n");
		return 1;
	}
	rc = runner_run(&c, &req, &res, err, sizeof(err));
	in.stop = 1;
	pthread_join(th, NULL);
	runner_pool_free(pool);
	free(code);
	if (rc == 0 && warm && !res.warm) {
		snprintf(err, sizeof(err), "the run did not get the warm "
		    "container");
		rc = -EIO;
	}
	if (rc < 0) {
		fprintf(stderr, "cordon probe: %s\n", err);
		free(in.inspect);
		runner_result_cleanup(&res);
		return 1;
	}
	probe_evaluate(&e, res.out, res.out_len, in.inspect, in.inspect_len,
	    &rep);
	rep.at_ms = time_wall_ms();
	if ((rc = probe_state_write(&c, &rep)) < 0)
		fprintf(stderr, "cordon probe: cannot record the result in %s: "
		    "%s\n", c.state_dir, strerror(-rc));
	j = probe_report_to_json(&rep);
	if (j != NULL) {
		cJSON_AddStringToObject(j, "container", res.container);
		cJSON_AddBoolToObject(j, "warm", res.warm);
		cJSON_AddStringToObject(j, "run_status",
		    runner_status_name(res.status));
		if (!rep.pass && res.err_len > 0)
			json_add_bytes(j, "probe_stderr", res.err,
			    res.err_len > 2000 ? 2000 : res.err_len);
	}
	line = j != NULL ? json_print_line(j) : NULL;
	if (line != NULL)
		fputs(line, stdout);
	free(line);
	cJSON_Delete(j);
	free(in.inspect);
	runner_result_cleanup(&res);
	return rep.pass ? 0 : 1;
}
