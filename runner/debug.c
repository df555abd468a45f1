/*
 * Debug runs (debug.h): which runtime, whether dockerd has it with runsc's
 * debug flags, and where a run's logs went. runsc itself knows no %ID% in
 * --debug-log (Debian's 0.0~20221219 nor current releases: only
 * %TIMESTAMP% and %COMMAND%); scripts/runsc-debug substitutes it, and here
 * the runner does the same with the ID docker reports.
 */
#include "runner/debug.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/proc.h"
#include "common/util.h"
#include "runner/docker.h"

#define DEBUG_ID "%ID%"

const char *
runner_debug_runtime(const struct config *c, enum runner_net net)
{
	return net == RUNNER_NET_PROXY ? c->runtime_debug_egress :
	    c->runtime_debug;
}

/* Whether the pattern is an absolute path with exactly one %ID%, a whole
 * component, and no "..": the directory is derived from it and read. */
static const char *
pattern_check(const char *p)
{
	const char *id = strstr(p, DEBUG_ID);
	const char *after;

	if (p[0] != '/')
		return "--debug-log is not an absolute path";
	if (id == NULL)
		return "--debug-log does not name %ID% (one directory per "
		    "container)";
	after = id + strlen(DEBUG_ID);
	if (strstr(after, DEBUG_ID) != NULL)
		return "--debug-log names %ID% twice";
	if (id[-1] != '/' || (*after != '/' && *after != '\0'))
		return "%ID% is not a whole path component of --debug-log";
	if (strstr(p, "/../") != NULL || strstr(p, "/./") != NULL)
		return "--debug-log has . or .. components";
	return NULL;
}

int
runner_debug_pattern(const char *args, char *pat, size_t patlen,
    const char **why)
{
	char buf[512], *save = NULL, *tok;
	const char *w = NULL, *log = NULL;
	bool debug = false, strace = false;

	if (patlen > 0)
		pat[0] = '\0';
	if (why != NULL)
		*why = NULL;
	if (!util_strlcpy(buf, args, sizeof(buf)))
		return -ENAMETOOLONG;
	for (tok = strtok_r(buf, " ", &save); tok != NULL;
	    tok = strtok_r(NULL, " ", &save)) {
		if (strcmp(tok, "--debug") == 0 ||
		    strcmp(tok, "--debug=true") == 0)
			debug = true;
		else if (strcmp(tok, "--strace") == 0 ||
		    strcmp(tok, "--strace=true") == 0)
			strace = true;
		else if (strncmp(tok, "--debug-log=", 12) == 0)
			log = tok + 12;
	}
	if (log == NULL) {
		if (why != NULL)
			*why = "no --debug-log";
		return -ENOENT;
	}
	if (!debug || !strace)
		w = !debug ? "no --debug" : "no --strace";
	else
		w = pattern_check(log);
	if (w != NULL) {
		if (why != NULL)
			*why = w;
		return -EINVAL;
	}
	if (!util_strlcpy(pat, log, patlen)) {
		pat[0] = '\0';
		return -ENAMETOOLONG;
	}
	return 0;
}

int
runner_debug_dir(const char *pat, const char *id, char *out, size_t outlen)
{
	const char *at = strstr(pat, DEBUG_ID);
	size_t n = strlen(id);
	int len;

	if (outlen > 0)
		out[0] = '\0';
	if (at == NULL || n == 0 || n > 64 ||
	    strspn(id, "0123456789abcdef") != n)
		return -EINVAL;
	len = snprintf(out, outlen, "%.*s%s%s", (int)(at - pat), pat, id,
	    at + strlen(DEBUG_ID));
	if (len < 0 || (size_t)len >= outlen) {
		if (outlen > 0)
			out[0] = '\0';
		return -ENAMETOOLONG;
	}
	while (len > 1 && out[len - 1] == '/')
		out[--len] = '\0';
	return 0;
}

int
runner_debug_allowed(char *err, size_t errlen)
{
	if (geteuid() == 0)
		return 0;
	snprintf(err, errlen, "--debug is for root only (its runsc logs hold "
	    "an strace of the job)");
	return -EPERM;
}

int
runner_debug_admit(const struct config *c, enum runner_net net, char *pat,
    size_t patlen, char *err, size_t errlen)
{
	const char *name = runner_debug_runtime(c, net);
	const char *argv[] = { c->docker, "info", "--format",
	    "{{json .Runtimes}}", NULL };
	struct proc_opts o = { .argv = argv, .stdout_max = 1 << 16,
	    .stderr_max = 4096 };
	struct docker_runtime rt;
	struct cbuf *out = NULL;
	const char *why;
	char perr[320];

	int rc;

	if ((rc = runner_debug_allowed(err, errlen)) < 0)
		return rc;
	if (proc_call(&o, DOCKER_CALL_MS, &out, NULL, perr, sizeof(perr)) < 0) {
		cbuf_free(out);
		snprintf(err, errlen, RUNNER_DOCKER_UNAVAILABLE ": docker "
		    "daemon not reachable (`%s info` failed: %.120s)", c->docker,
		    perr);
		return -EHOSTUNREACH;
	}
	rc = docker_runtime_parse(cbuf_data(out), cbuf_len(out), name, &rt);
	cbuf_free(out);
	if (rc < 0) {
		snprintf(err, errlen, "debug runtime '%s' is not registered "
		    "with the docker daemon (run scripts/setup%s)", name,
		    net == RUNNER_NET_PROXY ? " after scripts/egress-runtime" :
		    "");
		return -ENOENT;
	}
	if ((rc = runner_debug_pattern(rt.args, pat, patlen, &why)) < 0) {
		snprintf(err, errlen, "debug runtime '%s' (%s %.100s): %s; "
		    "rerun scripts/setup", name, rt.path, rt.args,
		    why != NULL ? why : strerror(-rc));
		return rc == -ENAMETOOLONG ? rc : -EINVAL;
	}
	return 0;
}

void
runner_debug_result(const char *pat, const char *id,
    struct runner_result *res)
{
	struct stat st;
	char dir[sizeof(res->debug_log)];

	res->debug = true;
	if (id[0] == '\0') {
		snprintf(res->debug_log_error, sizeof(res->debug_log_error),
		    "the container's ID is unknown (it may never have been "
		    "created)");
		return;
	}
	if (runner_debug_dir(pat, id, dir, sizeof(dir)) < 0) {
		snprintf(res->debug_log_error, sizeof(res->debug_log_error),
		    "no log directory for ID %.64s in %.40s", id, pat);
		return;
	}
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		snprintf(res->debug_log_error, sizeof(res->debug_log_error),
		    "runsc wrote no logs to %.100s", dir);
		return;
	}
	util_strlcpy(res->debug_log, dir, sizeof(res->debug_log));
}
