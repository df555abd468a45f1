/*
 * The doctor's runtime lines: each of Cordon's runtimes registered with
 * Docker, which runsc it runs (a pinned build or the one on PATH) with
 * which network stack, and for the egress runtime why that stack was
 * chosen; the debug runtimes (root only). Apart from doctor.c, which runs
 * every check in order: these read `docker info` and the daemon's
 * runtime registrations, not the image or the probes.
 */
#include "runner/doctor.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "common/cbuf.h"
#include "common/util.h"
#include "runner/debug.h"
#include "runner/docker.h"
#include "runner/doctor_internal.h"

/* What the stack words mean, for the runtime lines. */
static const char *
stack_text(const char *stack)
{
	return strcmp(stack, "none") == 0 ? "none, loopback only" :
	    strcmp(stack, "host") == 0 ? "the host kernel's stack in Docker's netns" :
	    "gVisor's netstack";
}

/* The "why" of scripts/egress-runtime's record for runtime name
 * (STATE_DIR/egress-runtime.json for cordon-egress, else
 * egress-runtime-NAME.json), in why[]: "" when there is none, it is about
 * another runsc path, or it does not fit. */
static void
egress_why(const struct config *c, const char *name, const char *path,
    char *why, size_t len)
{
	char file[PATH_MAX];
	cJSON *j = NULL;
	const cJSON *w, *p;
	char *text = NULL;
	size_t n = 0;
	int k;

	why[0] = '\0';
	if (strcmp(name, "cordon-egress") == 0)
		k = snprintf(file, sizeof(file), "%s/egress-runtime.json",
		    c->state_dir);
	else
		k = snprintf(file, sizeof(file), "%s/egress-runtime-%s.json",
		    c->state_dir, name);
	if (k < 0 || (size_t)k >= sizeof(file) ||
	    util_read_file(file, 1 << 16, &text, &n) < 0)
		return;
	j = cJSON_ParseWithLength(text, n);
	free(text);
	w = cJSON_GetObjectItemCaseSensitive(j, "why");
	p = cJSON_GetObjectItemCaseSensitive(j, "path");
	if (cJSON_IsString(w) && (!cJSON_IsString(p) ||
	    strcmp(p->valuestring, path) == 0) &&
	    !util_strlcpy(why, w->valuestring, len))
		why[0] = '\0';	/* too long: the caller points to the file */
	cJSON_Delete(j);
}

/* One runtime's line, from the text of `docker info`'s runtimes: its
 * runsc (and that runsc's own version: the egress one may be the build of
 * scripts/runsc-build, not the runsc on PATH) and its network stack; for
 * the egress runtime, why scripts/egress-runtime chose that stack. */
static void
check_runtime(const struct config *c, const struct cbuf *info,
    const char *name, const char *runsc_version, bool egress,
    struct doctor_line *l)
{
	struct docker_runtime rt;
	struct cbuf *vout = NULL;
	char what[96], version[64], why[256] = "";
	const char *stack;

	snprintf(what, sizeof(what), "runtime %s", name);
	if (docker_runtime_parse(cbuf_data(info), cbuf_len(info), name,
	    &rt) < 0) {
		doctor_set(l, DOCTOR_FAIL, what, "run scripts/setup (and "
		    "scripts/egress-runtime) to register it", "not registered");
		return;
	}
	if (strstr(rt.path, "runsc") == NULL) {
		doctor_set(l, DOCTOR_FAIL, what, "its path must be runsc; "
		    "rerun scripts/setup", "path %s is not runsc",
		    rt.path[0] != '\0' ? rt.path : "(none)");
		return;
	}
	util_strlcpy(version, runsc_version, sizeof(version));
	if (rt.path[0] == '/') {
		const char *ver[] = { rt.path, "--version", NULL };

		if (doctor_call(ver, 10000, 4096, &vout) == 0) {
			sscanf(cbuf_data(vout), "runsc version %63s", version);
			cbuf_free(vout);
		}
	}
	stack = docker_runtime_stack(rt.args);
	if (egress)
		egress_why(c, name, rt.path, why, sizeof(why));
	if (egress) {
		char d[sizeof(l->detail)];
		int n = snprintf(d, sizeof(d), "%s %s (runsc %s); egress jobs "
		    "use %s: %s", rt.path, rt.args, version,
		    stack_text(stack), why);

		/* The reason when it fits, else where it is written. */
		if (why[0] == '\0' || n < 0 || (size_t)n >= sizeof(d))
			doctor_set(l, DOCTOR_OK, what, NULL,
			    "%s %s (runsc %s); egress jobs use %s (why: "
			    "scripts/egress-runtime's record in %s)", rt.path,
			    rt.args, version, stack_text(stack), c->state_dir);
		else
			doctor_set(l, DOCTOR_OK, what, NULL, "%s", d);
	} else
		doctor_set(l, DOCTOR_OK, what, NULL,
		    "%s %s (runsc %s; network: %s)", rt.path, rt.args, version,
		    stack_text(stack));
}

void
doctor_debug_line(const char *name, int rc, const struct docker_runtime *rt,
    const struct stat *dir, struct doctor_line *l)
{
	char what[96], pat[RUNNER_DEBUG_PAT_MAX];
	const char *why = NULL;
	char *cut;

	snprintf(what, sizeof(what), "debug runtime %s", name);
	if (rc < 0) {
		doctor_set(l, DOCTOR_INFO, what, NULL, "not registered (only "
		    "`cordon run --debug` needs it: scripts/setup registers "
		    "it)");
		return;
	}
	if (runner_debug_pattern(rt->args, pat, sizeof(pat), &why) < 0) {
		doctor_set(l, DOCTOR_WARN, what, "rerun scripts/setup (and "
		    "scripts/egress-runtime)", "%s %s: %s", rt->path, rt->args,
		    why != NULL ? why : "bad arguments");
		return;
	}
	if ((cut = strstr(pat, "%ID%")) != NULL)
		*cut = '\0';
	if (dir == NULL || dir->st_uid != 0 || (dir->st_mode & 077) != 0)
		doctor_set(l, DOCTOR_WARN, what, "its logs hold an strace of "
		    "each job: rerun scripts/setup (it makes the directory "
		    "root's, mode 0700)", "log directory %s is %s", pat, dir == NULL ?
		    "missing" : "readable by others than root");
	else
		doctor_set(l, DOCTOR_OK, what, NULL, "%s %s (logs in %s, root "
		    "only)", rt->path, rt->args, pat);
}

/* The debug runtime's line: registered or not, and its log directory. */
static void
check_debug_runtime(const struct cbuf *info, const char *name,
    struct doctor_line *l)
{
	struct docker_runtime rt;
	char pat[RUNNER_DEBUG_PAT_MAX], *cut;
	struct stat st;
	bool have_dir = false;
	int rc = docker_runtime_parse(cbuf_data(info), cbuf_len(info), name,
	    &rt);

	if (rc == 0 && runner_debug_pattern(rt.args, pat, sizeof(pat),
	    NULL) == 0) {
		if ((cut = strstr(pat, "%ID%")) != NULL)
			*cut = '\0';
		have_dir = stat(pat, &st) == 0 && S_ISDIR(st.st_mode);
	}
	doctor_debug_line(name, rc, &rt, have_dir ? &st : NULL, l);
}

void
doctor_check_runtimes(const struct config *c, struct doctor_line *l, size_t *n,
    size_t max)
{
	const char *info[] = { c->docker, "info", "--format",
	    "{{json .Runtimes}}", NULL };
	const char *ver[] = { "runsc", "--version", NULL };
	struct cbuf *out = NULL, *vout = NULL;
	struct docker_runtime rt;
	char version[64] = "unknown";

	if (doctor_call(ver, 10000, 4096, &vout) == 0) {
		sscanf(cbuf_data(vout), "runsc version %63s", version);
		cbuf_free(vout);
	}
	if (doctor_call(info, 20000, 1 << 16, &out) < 0 ||
	    docker_runtime_parse(cbuf_data(out), cbuf_len(out),
	    c->runtime_offline, &rt) == -EBADMSG) {
		cbuf_free(out);
		if (*n < max)
			doctor_set(&l[(*n)++], DOCTOR_FAIL, "docker runtimes",
			    "start dockerd (scripts/setup)", "cannot list them");
		return;
	}
	if (*n < max)
		check_runtime(c, out, c->runtime_offline, version, false,
		    &l[(*n)++]);
	if (*n < max)
		check_runtime(c, out, c->runtime_egress, version, true,
		    &l[(*n)++]);
	if (*n < max)
		check_debug_runtime(out, c->runtime_debug, &l[(*n)++]);
	if (*n < max)
		check_debug_runtime(out, c->runtime_debug_egress, &l[(*n)++]);
	cbuf_free(out);
}
