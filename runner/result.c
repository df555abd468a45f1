/*
 * The pure parts of the runner API (result.h): request checks, clamping of
 * caller limits to the config maxima, the result's JSON view, and the
 * audit line (which never carries code or output).
 */
#include "runner/result.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cbuf.h"
#include "common/json.h"
#include "common/util.h"

const char *
runner_status_name(enum runner_status s)
{
	switch (s) {
	case RUNNER_OK: return "ok";
	case RUNNER_TIMEOUT: return "timeout";
	case RUNNER_OOM: return "oom";
	case RUNNER_OUTPUT_TRUNCATED: return "output_truncated";
	case RUNNER_CLOSED_EARLY: return "closed_early";
	case RUNNER_SANDBOX_ERROR: return "sandbox_error";
	}
	return "sandbox_error";
}

const char *
runner_net_name(enum runner_net n)
{
	return n == RUNNER_NET_PROXY ? "proxy" : "none";
}

void
runner_limits_resolve(const struct config *c, const struct runner_request *req,
    struct runner_limits *out)
{
	const struct config_limits *l = &c->limits;

	out->timeout_s = req->timeout_s > 0 ? req->timeout_s : l->timeout_s;
	if (out->timeout_s > l->max_timeout_s)
		out->timeout_s = l->max_timeout_s;
	out->max_output = req->max_output > 0 ? req->max_output :
	    l->max_output_bytes;
	if (out->max_output > l->max_output_cap)
		out->max_output = l->max_output_cap;
	/* limits.memory and limits.cpus are both default and maximum. */
	out->memory = req->memory > 0 && req->memory < l->memory_bytes ?
	    req->memory : l->memory_bytes;
	if (out->memory < RUNNER_MEMORY_MIN)
		out->memory = RUNNER_MEMORY_MIN;
	out->cpus = req->cpus > 0 && req->cpus < l->cpus ? req->cpus : l->cpus;
	if (out->cpus < RUNNER_CPUS_MIN)
		out->cpus = RUNNER_CPUS_MIN;
	out->pids = l->nproc;
}

/* A size as the flags take it: "256m" when whole in g, m or k, else
 * bytes. */
static void
size_format(uint64_t v, char out[32])
{
	static const struct { uint64_t unit; char suffix; } u[] = {
		{ 1ULL << 30, 'g' }, { 1ULL << 20, 'm' }, { 1ULL << 10, 'k' },
	};

	for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++)
		if (v >= u[i].unit && v % u[i].unit == 0) {
			snprintf(out, 32, "%llu%c",
			    (unsigned long long)(v / u[i].unit), u[i].suffix);
			return;
		}
	snprintf(out, 32, "%llu bytes", (unsigned long long)v);
}

int
runner_limits_check(const struct config *c, const struct runner_request *req,
    char *err, size_t errlen)
{
	const struct config_limits *l = &c->limits;
	char a[32], b[32];

	if (req->timeout_s < 0 || req->timeout_s > l->max_timeout_s) {
		snprintf(err, errlen, "timeout %lld s is above the maximum of "
		    "%lld s (config limits.max_timeout_s)",
		    (long long)req->timeout_s, (long long)l->max_timeout_s);
		return -EINVAL;
	}
	if (req->max_output > l->max_output_cap) {
		size_format(req->max_output, a);
		size_format(l->max_output_cap, b);
		snprintf(err, errlen, "max_output %s is above the maximum of "
		    "%s (config limits.max_output_cap)", a, b);
		return -EINVAL;
	}
	if (req->memory > l->memory_bytes) {
		size_format(req->memory, a);
		size_format(l->memory_bytes, b);
		snprintf(err, errlen, "memory %s is above the maximum of %s "
		    "(config limits.memory)", a, b);
		return -EINVAL;
	}
	if (req->memory > 0 && req->memory < RUNNER_MEMORY_MIN) {
		size_format(req->memory, a);
		snprintf(err, errlen, "memory %s is below the minimum of 16m",
		    a);
		return -EINVAL;
	}
	if (req->cpus > l->cpus) {
		snprintf(err, errlen, "cpus %g is above the maximum of %g "
		    "(config limits.cpus)", req->cpus, l->cpus);
		return -EINVAL;
	}
	if (req->cpus > 0 && req->cpus < RUNNER_CPUS_MIN) {
		snprintf(err, errlen, "cpus %g is below the minimum of %g",
		    req->cpus, RUNNER_CPUS_MIN);
		return -EINVAL;
	}
	if (req->nin > RUNNER_MAX_IN) {
		snprintf(err, errlen, "%zu --in paths is above the maximum of "
		    "%d", req->nin, RUNNER_MAX_IN);
		return -EINVAL;
	}
	return 0;
}

int
runner_request_check(const struct runner_request *req, char *err,
    size_t errlen)
{
	enum cbuf_keep keep;

	if (config_lang_bit(req->lang) == 0) {
		snprintf(err, errlen, "unsupported language '%.32s' (python, "
		    "bash or node)", req->lang);
		return -EINVAL;
	}
	if (req->profile != NULL && !config_profile_name_valid(req->profile)) {
		snprintf(err, errlen, "profile: 1-%d characters of [a-z0-9_-]",
		    CONFIG_PROFILE_MAX);
		return -EINVAL;
	}
	if (req->keep != NULL && cbuf_keep_parse(req->keep, &keep) < 0) {
		snprintf(err, errlen, "keep must be head, tail or both, not "
		    "'%.32s'", req->keep);
		return -EINVAL;
	}
	if (req->code == NULL && req->code_len > 0) {
		snprintf(err, errlen, "code is NULL");
		return -EINVAL;
	}
	if (req->code_len > RUNNER_CODE_MAX) {
		snprintf(err, errlen, "code larger than %u bytes",
		    RUNNER_CODE_MAX);
		return -EINVAL;
	}
	if (req->nin > RUNNER_MAX_IN) {
		snprintf(err, errlen, "%zu --in paths is above the maximum of "
		    "%d", req->nin, RUNNER_MAX_IN);
		return -EINVAL;
	}
	if (req->session != NULL) {
		size_t n = strlen(req->session);
		if (n == 0 || n > RUNNER_SESSION_MAX || strspn(req->session,
		    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		    "0123456789._-") != n) {
			snprintf(err, errlen, "session id: 1-%d characters of "
			    "[A-Za-z0-9._-]", RUNNER_SESSION_MAX);
			return -EINVAL;
		}
	}
	if (req->out_dir != NULL && req->out_dir[0] == '\0') {
		snprintf(err, errlen, "--out: empty directory name");
		return -EINVAL;
	}
	if (req->policy != NULL && req->net != RUNNER_NET_PROXY) {
		snprintf(err, errlen, "an egress policy needs net mode proxy "
		    "(offline runs have no egress)");
		return -EINVAL;
	}
	if (req->policy != NULL && !config_policy_name_valid(req->policy)) {
		snprintf(err, errlen, "egress policy: 1-%d characters of "
		    "[A-Za-z0-9_-]", CONFIG_POLICY_MAX);
		return -EINVAL;
	}
	return 0;
}

/* "profile" and "lang" of a run that got that far (a result made by
 * runner_run always has them). */
static bool
add_profile_lang(cJSON *o, const struct runner_result *res)
{
	if (res->profile[0] != '\0' && cJSON_AddStringToObject(o, "profile",
	    res->profile) == NULL)
		return false;
	return res->lang[0] == '\0' || cJSON_AddStringToObject(o, "lang",
	    res->lang) != NULL;
}

/* The proxy's count n of the report, or 0. */
static double
egress_count(const struct runner_result *res, const char *n)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(res->egress, n);

	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* Proxy mode: the policy, the proxy's report of the run's connections
 * (a copy of its "egress" list, capped by the proxy) and its counts, or
 * why there is no report. */
static bool
egress_to_json(cJSON *o, const struct runner_result *res)
{
	static const char *const extra[] = { "egress_truncated",
	    "egress_dropped", "proxy_restarts" };
	const cJSON *list, *v;
	cJSON *copy;

	if (cJSON_AddStringToObject(o, "policy", res->policy) == NULL)
		return false;
	if (res->egress == NULL)
		return cJSON_AddStringToObject(o, "egress_error",
		    res->egress_error[0] != '\0' ? res->egress_error :
		    "no egress report") != NULL;
	list = cJSON_GetObjectItemCaseSensitive(res->egress, "egress");
	copy = cJSON_IsArray(list) ? cJSON_Duplicate(list, true) :
	    cJSON_CreateArray();
	if (copy == NULL || !cJSON_AddItemToObject(o, "egress", copy)) {
		cJSON_Delete(copy);
		return false;
	}
	if (cJSON_AddNumberToObject(o, "egress_allowed",
	    egress_count(res, "allowed")) == NULL ||
	    cJSON_AddNumberToObject(o, "egress_denied",
	    egress_count(res, "denied")) == NULL ||
	    cJSON_AddNumberToObject(o, "egress_errors",
	    egress_count(res, "errors")) == NULL)
		return false;
	for (size_t i = 0; i < sizeof(extra) / sizeof(extra[0]); i++) {
		v = cJSON_GetObjectItemCaseSensitive(res->egress, extra[i]);
		if (v != NULL && ((copy = cJSON_Duplicate(v, true)) == NULL ||
		    !cJSON_AddItemToObject(o, extra[i], copy))) {
			cJSON_Delete(copy);
			return false;
		}
	}
	return true;
}

static cJSON *
files_to_json(const struct runner_result *res)
{
	cJSON *arr = cJSON_CreateArray();

	for (size_t i = 0; arr != NULL && i < res->nfiles; i++) {
		const struct runner_file *f = &res->files[i];
		cJSON *o = cJSON_CreateObject();
		if (o == NULL || !cJSON_AddItemToArray(arr, o) ||
		    json_add_bytes(o, "path", f->path, strlen(f->path)) < 0 ||
		    cJSON_AddNumberToObject(o, "size", (double)f->size) == NULL ||
		    (f->refused != NULL &&
		    cJSON_AddStringToObject(o, "refused", f->refused) == NULL)) {
			cJSON_Delete(arr);
			return NULL;
		}
	}
	return arr;
}

void
runner_timing_reset(struct runner_timing *t)
{
	*t = (struct runner_timing){ .stdin_ms = -1, .run_ms = -1,
	    .exit_ms = -1, .cli_ms = -1, .inspect_ms = -1, .remove_ms = -1,
	    .stop_ms = -1, .admit_ms = -1, .start_ms = -1, .seal_ms = -1,
	    .register_ms = -1, .unregister_ms = -1 };
}

/* "timing_ms": where the run's time went (runner.h), for benchmarks. */
static bool
timing_to_json(cJSON *o, const struct runner_timing *t)
{
	const struct {
		const char *name;
		int64_t v;
	} steps[] = {
		{ "stdin", t->stdin_ms }, { "run", t->run_ms },
		{ "exit", t->exit_ms }, { "cli", t->cli_ms },
		{ "inspect", t->inspect_ms }, { "remove", t->remove_ms },
		{ "stop", t->stop_ms }, { "admit", t->admit_ms },
		{ "start", t->start_ms }, { "seal", t->seal_ms },
		{ "register", t->register_ms },
		{ "unregister", t->unregister_ms },
	};
	cJSON *j = cJSON_AddObjectToObject(o, "timing_ms");

	for (size_t i = 0; j != NULL && i < sizeof(steps) / sizeof(steps[0]);
	    i++)
		if (cJSON_AddNumberToObject(j, steps[i].name,
		    (double)steps[i].v) == NULL)
			return false;
	return j != NULL;
}

/* "limits": what applied to the run; nothing when none were resolved. */
static bool
limits_to_json(cJSON *o, const struct runner_limits *l)
{
	cJSON *j;

	if (l->timeout_s <= 0)
		return true;
	if ((j = cJSON_AddObjectToObject(o, "limits")) == NULL)
		return false;
	return cJSON_AddNumberToObject(j, "timeout_s", (double)l->timeout_s) !=
	    NULL && cJSON_AddNumberToObject(j, "memory", (double)l->memory) !=
	    NULL && cJSON_AddNumberToObject(j, "cpus", l->cpus) != NULL &&
	    cJSON_AddNumberToObject(j, "max_output", (double)l->max_output) !=
	    NULL && cJSON_AddNumberToObject(j, "pids", (double)l->pids) != NULL;
}

cJSON *
runner_result_to_json(const struct runner_result *res)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *files;
	bool ok = o != NULL;

	ok = ok && cJSON_AddStringToObject(o, "status",
	    runner_status_name(res->status)) != NULL;
	ok = ok && cJSON_AddNumberToObject(o, "exit_code", res->exit_code);
	ok = ok && json_add_bytes(o, "stdout", res->out, res->out_len) == 0;
	ok = ok && json_add_bytes(o, "stderr", res->err, res->err_len) == 0;
	ok = ok && cJSON_AddBoolToObject(o, "stdout_truncated",
	    res->out_truncated);
	ok = ok && cJSON_AddBoolToObject(o, "stderr_truncated",
	    res->err_truncated);
	ok = ok && cJSON_AddNumberToObject(o, "duration_ms",
	    (double)res->duration_ms);
	ok = ok && cJSON_AddNumberToObject(o, "queue_ms",
	    (double)res->queue_ms);
	ok = ok && timing_to_json(o, &res->timing);
	ok = ok && cJSON_AddStringToObject(o, "container", res->container);
	ok = ok && cJSON_AddBoolToObject(o, "warm", res->warm);
	ok = ok && cJSON_AddStringToObject(o, "code_sha256", res->code_sha256);
	ok = ok && cJSON_AddStringToObject(o, "image", res->image);
	ok = ok && add_profile_lang(o, res);
	ok = ok && cJSON_AddStringToObject(o, "net", runner_net_name(res->net));
	ok = ok && limits_to_json(o, &res->limits);
	if (ok && res->net == RUNNER_NET_PROXY)
		ok = egress_to_json(o, res);
	if (ok && res->want_files) {
		files = files_to_json(res);
		ok = files != NULL && cJSON_AddItemToObject(o, "files", files);
		if (files != NULL && !ok)
			cJSON_Delete(files);
		if (ok && res->files_error[0] != '\0')
			ok = cJSON_AddStringToObject(o, "files_error",
			    res->files_error) != NULL;
	}
	/* A debug run: where its runsc logs are, or why there are none. */
	if (ok && res->debug)
		ok = res->debug_log[0] != '\0' ?
		    cJSON_AddStringToObject(o, "debug_log", res->debug_log) !=
		    NULL : cJSON_AddStringToObject(o, "debug_log_error",
		    res->debug_log_error) != NULL;
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

void
runner_result_cleanup(struct runner_result *res)
{
	if (res == NULL)
		return;
	free(res->out);
	free(res->err);
	for (size_t i = 0; i < res->nfiles; i++)
		free(res->files[i].path);
	free(res->files);
	cJSON_Delete(res->egress);
	memset(res, 0, sizeof(*res));
}

static cJSON *
audit_json(const char *session, const struct runner_result *res)
{
	cJSON *o = cJSON_CreateObject();
	char now[32];
	bool ok = o != NULL;

	time_format_utc(time_wall_ms(), now);
	ok = ok && cJSON_AddStringToObject(o, "time", now);
	ok = ok && cJSON_AddStringToObject(o, "session",
	    session != NULL ? session : "");
	ok = ok && cJSON_AddStringToObject(o, "code_sha256", res->code_sha256);
	ok = ok && cJSON_AddStringToObject(o, "image", res->image);
	ok = ok && add_profile_lang(o, res);
	ok = ok && cJSON_AddStringToObject(o, "net", runner_net_name(res->net));
	ok = ok && cJSON_AddStringToObject(o, "status",
	    runner_status_name(res->status));
	ok = ok && cJSON_AddNumberToObject(o, "exit_code", res->exit_code);
	ok = ok && cJSON_AddNumberToObject(o, "duration_ms",
	    (double)res->duration_ms);
	ok = ok && cJSON_AddNumberToObject(o, "stdout_bytes",
	    (double)res->out_len);
	ok = ok && cJSON_AddNumberToObject(o, "stderr_bytes",
	    (double)res->err_len);
	ok = ok && cJSON_AddBoolToObject(o, "stdout_truncated",
	    res->out_truncated);
	ok = ok && cJSON_AddBoolToObject(o, "stderr_truncated",
	    res->err_truncated);
	ok = ok && cJSON_AddStringToObject(o, "container", res->container);
	ok = ok && cJSON_AddBoolToObject(o, "warm", res->warm);
	/* The limits that applied, as in the result. */
	ok = ok && limits_to_json(o, &res->limits);
	if (ok && res->debug)
		ok = cJSON_AddStringToObject(o, "debug_log", res->debug_log) !=
		    NULL;
	/* Proxy mode: the policy and how many connections the proxy let
	 * through, refused, or saw fail (-1 each: no report came back). */
	if (ok && res->net == RUNNER_NET_PROXY) {
		bool r = res->egress != NULL;
		double a = r ? egress_count(res, "allowed") : -1;
		double d = r ? egress_count(res, "denied") : -1;
		double x = r ? egress_count(res, "errors") : -1;
		ok = cJSON_AddStringToObject(o, "policy", res->policy) != NULL &&
		    cJSON_AddNumberToObject(o, "egress_allowed", a) != NULL &&
		    cJSON_AddNumberToObject(o, "egress_denied", d) != NULL &&
		    cJSON_AddNumberToObject(o, "egress_errors", x) != NULL;
	}
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* Opens the audit log for one append (creating its directory): the fd,
 * or a negative errno. */
static int
audit_open(const struct config *c)
{
	char dir[sizeof(c->audit_log)], *slash;
	int fd, rc;

	util_strlcpy(dir, c->audit_log, sizeof(dir));
	if ((slash = strrchr(dir, '/')) != NULL && slash != dir) {
		*slash = '\0';
		if ((rc = util_mkdir_p(dir, 0750)) < 0)
			return rc;
	}
	fd = open(c->audit_log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC |
	    O_NOFOLLOW, 0640);
	return fd < 0 ? -errno : fd;
}

int
runner_audit_append(const struct config *c, const char *session,
    const struct runner_result *res)
{
	char *line;
	cJSON *o;
	size_t len;
	ssize_t w;
	int fd, rc = 0;

	if ((o = audit_json(session, res)) == NULL)
		return -ENOMEM;
	line = json_print_line(o);
	cJSON_Delete(o);
	if (line == NULL)
		return -ENOMEM;
	len = strlen(line);
	/* One write with O_APPEND: concurrent runs never interleave lines. */
	if ((fd = audit_open(c)) < 0) {
		rc = fd;
	} else {
		w = write(fd, line, len);
		if (w != (ssize_t)len)
			rc = w < 0 ? -errno : -EIO;
		if (close(fd) < 0 && rc == 0)
			rc = -errno;
	}
	free(line);
	return rc;
}

int
runner_audit_check(const struct config *c, char *err, size_t errlen)
{
	int fd;

	if (!c->audit_required)
		return 0;
	if ((fd = audit_open(c)) < 0) {
		snprintf(err, errlen, "cannot write the audit log %.200s: %s: "
		    "no run without its audit line (run as root, give this "
		    "user an audit_log it can write, or set audit_required "
		    "to false in the config)", c->audit_log, strerror(-fd));
		return fd;
	}
	(void)close(fd);
	return 0;
}

int
runner_audit_finish(const struct config *c, const char *session,
    struct runner_result *res, char *err, size_t errlen)
{
	int rc = runner_audit_append(c, session, res);

	if (rc == 0)
		return 0;
	snprintf(res->audit_error, sizeof(res->audit_error),
	    "audit log %.80s: %s", c->audit_log, strerror(-rc));
	if (!c->audit_required)
		return 0;
	snprintf(err, errlen, "the run's audit line could not be written "
	    "(%s): its result is withheld (audit_required)",
	    res->audit_error);
	return rc;
}
