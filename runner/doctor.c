/*
 * The doctor's checks (doctor.h): Docker reachable, Cordon's runtimes
 * registered with runsc and how, the pinned image present and free of
 * setuid/setgid files, egress (via the netsetup callback), and the age and
 * outcome of the latest probes.
 */
#include "runner/doctor.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/proc.h"
#include "common/util.h"
#include "probe/probe.h"
#include "runner/image.h"

const char *
doctor_verdict_name(enum doctor_verdict v)
{
	return v == DOCTOR_OK ? "OK" : v == DOCTOR_FAIL ? "FAIL" : "INFO";
}

static void
line_set(struct doctor_line *l, enum doctor_verdict v, const char *what,
    const char *hint, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void
line_set(struct doctor_line *l, enum doctor_verdict v, const char *what,
    const char *hint, const char *fmt, ...)
{
	va_list ap;

	l->verdict = v;
	util_strlcpy(l->what, what, sizeof(l->what));
	util_strlcpy(l->hint, v == DOCTOR_FAIL && hint ? hint : "", sizeof(l->hint));
	va_start(ap, fmt);
	vsnprintf(l->detail, sizeof(l->detail), fmt, ap);
	va_end(ap);
}

/* Runs argv with a deadline; the caller owns *out (may be NULL). */
static int
run(const char *const *argv, int64_t ms, size_t outmax, struct cbuf **out)
{
	struct proc_opts o = { .argv = argv, .stdout_max = outmax,
	    .stderr_max = 4096 };
	struct proc_result r;
	int rc = proc_run(&o, ms, &r);

	if (rc < 0)
		return rc;
	rc = r.timed_out ? -ETIMEDOUT : r.exit_code != 0 ? -EIO : 0;
	if (rc == 0 && out != NULL) {
		*out = r.out;
		r.out = NULL;
	}
	proc_result_cleanup(&r);
	return rc;
}

static void
check_runtime(const struct config *c, const cJSON *rts, const char *name,
    const char *runsc_version, struct doctor_line *l)
{
	const cJSON *rt = cJSON_GetObjectItemCaseSensitive(rts, name);
	const cJSON *path = cJSON_GetObjectItemCaseSensitive(rt, "path");
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(rt, "runtimeArgs");
	char what[96], argtext[128] = "";
	size_t n = 0;
	const cJSON *a;

	(void)c;
	snprintf(what, sizeof(what), "runtime %s", name);
	if (!cJSON_IsObject(rt)) {
		line_set(l, DOCTOR_FAIL, what, "run scripts/setup (and "
		    "scripts/egress-runtime) to register it", "not registered");
		return;
	}
	cJSON_ArrayForEach(a, args)
		if (cJSON_IsString(a) && n < sizeof(argtext))
			n += (size_t)snprintf(argtext + n, sizeof(argtext) - n,
			    "%s%s", n ? " " : "", a->valuestring);
	if (!cJSON_IsString(path) || strstr(path->valuestring, "runsc") == NULL) {
		line_set(l, DOCTOR_FAIL, what, "its path must be runsc; rerun "
		    "scripts/setup", "path %s is not runsc",
		    cJSON_IsString(path) ? path->valuestring : "(none)");
		return;
	}
	line_set(l, DOCTOR_OK, what, NULL, "%s %s (runsc %s; network: %s)",
	    path->valuestring, argtext, runsc_version,
	    strstr(argtext, "--network=none") ? "none, loopback only" :
	    strstr(argtext, "--network=host") ? "host stack in Docker's netns" :
	    "runsc netstack");
}

static void
check_runtimes(const struct config *c, struct doctor_line *l, size_t *n,
    size_t max)
{
	const char *info[] = { c->docker, "info", "--format",
	    "{{json .Runtimes}}", NULL };
	const char *ver[] = { "runsc", "--version", NULL };
	struct cbuf *out = NULL, *vout = NULL;
	char version[64] = "unknown";
	cJSON *rts;

	if (run(ver, 10000, 4096, &vout) == 0) {
		sscanf(cbuf_data(vout), "runsc version %63s", version);
		cbuf_free(vout);
	}
	if (run(info, 20000, 1 << 16, &out) < 0 ||
	    (rts = cJSON_Parse(cbuf_data(out))) == NULL) {
		cbuf_free(out);
		if (*n < max)
			line_set(&l[(*n)++], DOCTOR_FAIL, "docker runtimes",
			    "start dockerd (scripts/setup)", "cannot list them");
		return;
	}
	cbuf_free(out);
	if (*n < max)
		check_runtime(c, rts, c->runtime_offline, version, &l[(*n)++]);
	if (*n < max)
		check_runtime(c, rts, c->runtime_egress, version, &l[(*n)++]);
	cJSON_Delete(rts);
}

static void
check_image(const struct config *c, struct doctor_line *l)
{
	char id[IMAGE_ID_MAX], name[64], hex[17], first[128];
	const char *inspect[] = { c->docker, "image", "inspect", "--format",
	    "{{.Id}}", id, NULL };
	struct cbuf *tar = NULL;
	long n;
	int rc = image_pinned_id(c, id);

	if (rc < 0) {
		line_set(l, DOCTOR_FAIL, "sandbox image", "run 'cordon image "
		    "build'", "no pinned image ID (%s)", strerror(-rc));
		return;
	}
	if (run(inspect, 20000, 4096, NULL) < 0) {
		line_set(l, DOCTOR_FAIL, "sandbox image", "run 'cordon image "
		    "build' (it re-imports when the ID is gone)",
		    "%.20s... is not present in dockerd", id);
		return;
	}
	/* Read the image's files from an export of a never-started container. */
	util_random_hex(hex, 8);
	snprintf(name, sizeof(name), "cordon-doctor-%s", hex);
	{
		const char *create[] = { c->docker, "create", "--name", name,
		    "--label", "cordon=1", "--network=none", id, "true", NULL };
		const char *export[] = { c->docker, "export", name, NULL };
		const char *rm[] = { c->docker, "rm", "-f", name, NULL };
		if (run(create, 30000, 4096, NULL) == 0)
			(void)run(export, 120000, 2ULL << 30, &tar);
		(void)run(rm, 30000, 4096, NULL);
	}
	if (tar == NULL) {
		line_set(l, DOCTOR_FAIL, "sandbox image", "check dockerd's log",
		    "could not export the image to scan it");
		return;
	}
	n = doctor_tar_count_setid((const unsigned char *)cbuf_data(tar),
	    cbuf_len(tar), first, sizeof(first));
	cbuf_free(tar);
	if (n != 0)
		line_set(l, DOCTOR_FAIL, "sandbox image", "rebuild with 'cordon "
		    "image build --force' (it strips setuid/setgid bits)",
		    n < 0 ? "%.20s...: unreadable export" :
		    "%.20s...: %ld setuid/setgid files, e.g. %s", id, n, first);
	else
		line_set(l, DOCTOR_OK, "sandbox image", NULL, "%s present, no "
		    "setuid/setgid files", id);
}

static void
check_probe(const struct config *c, const char *mode, struct doctor_line *l)
{
	char what[64], failed[256];
	int64_t at = 0, age;
	bool pass = false;
	int rc = probe_state_read(c, mode, &pass, &at, failed, sizeof(failed));

	snprintf(what, sizeof(what), "probe --net %s", mode);
	if (rc < 0) {
		line_set(l, c->require_probe && strcmp(mode, "none") == 0 ?
		    DOCTOR_FAIL : DOCTOR_INFO, what, "run 'cordon probe --net none'",
		    "never run%s", c->require_probe ? " (jobs refused until it "
		    "passes)" : "");
		return;
	}
	age = (time_wall_ms() - at) / 1000;
	if (!pass)
		line_set(l, DOCTOR_FAIL, what, "fix the failing controls, then "
		    "rerun 'cordon probe'", "failed %llds ago: %s",
		    (long long)age, failed);
	else if (age > c->probe_max_age_s)
		line_set(l, c->require_probe ? DOCTOR_FAIL : DOCTOR_INFO, what,
		    "rerun 'cordon probe'", "passed %llds ago: older than %llds",
		    (long long)age, (long long)c->probe_max_age_s);
	else
		line_set(l, DOCTOR_OK, what, NULL, "passed %llds ago",
		    (long long)age);
}

size_t
doctor_run(const struct config *c, doctor_egress_fn egress,
    struct doctor_line *lines, size_t max)
{
	const char *ping[] = { c->docker, "version", "--format",
	    "{{.Server.Version}}", NULL };
	struct cbuf *out = NULL;
	size_t n = 0;

	if (max == 0)
		return 0;
	if (run(ping, 20000, 256, &out) < 0) {
		line_set(&lines[n++], DOCTOR_FAIL, "docker", "start dockerd: "
		    "scripts/setup", "dockerd does not answer via %s", c->docker);
		return n;
	}
	line_set(&lines[n++], DOCTOR_OK, "docker", NULL, "dockerd %.*s",
	    (int)strcspn(cbuf_data(out), "\n"), cbuf_data(out));
	cbuf_free(out);
	check_runtimes(c, lines, &n, max);
	if (n < max)
		check_image(c, &lines[n++]);
	if (n < max && egress != NULL && !egress(c, &lines[n]))
		line_set(&lines[n], DOCTOR_INFO, "egress", NULL, "not set up "
		    "(only --net proxy needs it: 'cordon net up')");
	if (n < max && egress != NULL)
		n++;
	if (n < max)
		check_probe(c, "none", &lines[n++]);
	if (n < max)
		check_probe(c, "proxy", &lines[n++]);
	return n;
}
