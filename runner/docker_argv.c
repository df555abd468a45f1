/*
 * Builds the `docker run` argv for one job (docker_argv.h). Pure: no I/O.
 * The hardening set is written out once below; the spec only supplies the
 * per-run values, each checked so it cannot smuggle in another option.
 */
#include "runner/docker_argv.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The whole environment of the job: nothing from the host. */
const char *const docker_job_env[] = {
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"HOME=/tmp",
	"LANG=C.UTF-8",
	"PYTHONDONTWRITEBYTECODE=1",
	"PYTHONUNBUFFERED=1",
	NULL,
};

/* The interpreter of a language other than python: absolute, so that the
 * egress prelude (which execs an argv starting with '/') and the --out
 * wrapper (which runs its arguments after the cap) can run it too. The
 * job's code is read from stdin, never taken from argv. */
static const char *const *
lang_argv(unsigned lang)
{
	static const char *const bash[] = { "/bin/bash", "-s", NULL };
	static const char *const node[] = { "/usr/bin/node", "-", NULL };

	switch (lang) {
	case CONFIG_LANG_BASH: return bash;
	case CONFIG_LANG_NODE: return node;
	}
	return NULL;
}

void
dargv_init(struct dargv *a)
{
	memset(a, 0, sizeof(*a));
}

void
dargv_add(struct dargv *a, const char *s)
{
	char *d;

	if (a->error != 0)
		return;
	if (a->n == DARGV_MAX) {
		a->error = -E2BIG;
		return;
	}
	if ((d = strdup(s)) == NULL) {
		a->error = -ENOMEM;
		return;
	}
	a->v[a->n++] = d;
}

void
dargv_addf(struct dargv *a, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	if (a->error != 0)
		return;
	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0) {
		a->error = -ENOMEM;
		return;
	}
	dargv_add(a, s);
	free(s);
}

void
dargv_cleanup(struct dargv *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i]);
	memset(a, 0, sizeof(*a));
}

/* A value that goes into a flag's argument: non-empty, printable, and no
 * characters that a docker option parser treats as separators. */
static int
check_value(const char *s, const char *forbidden)
{
	if (s == NULL || *s == '\0')
		return -EINVAL;
	for (const char *p = s; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f ||
		    strchr(forbidden, *p) != NULL)
			return -EINVAL;
	return 0;
}

int
docker_spec_check(const struct config *c, const struct docker_spec *s)
{
	if (check_value(s->name, " ,=:/") < 0 ||
	    check_value(s->image_id, " ,=/") < 0 ||
	    check_value(s->runtime, " ,=:/") < 0 ||
	    check_value(s->network, " ,=:/") < 0 ||
	    check_value(c->user, " ,=") < 0 || check_value(c->docker, "") < 0)
		return -EINVAL;
	if (s->session == NULL || (*s->session != '\0' &&
	    check_value(s->session, " ,=:/\"'\\") < 0))
		return -EINVAL;
	if (s->in_dir != NULL && (check_value(s->in_dir, ",\"") < 0 ||
	    s->in_dir[0] != '/'))
		return -EINVAL;
	if (s->ca_bundle != NULL && (check_value(s->ca_bundle, ",\"") < 0 ||
	    s->ca_bundle[0] != '/'))
		return -EINVAL;
	if (s->resolv_conf != NULL && (check_value(s->resolv_conf,
	    ",\"") < 0 || s->resolv_conf[0] != '/'))
		return -EINVAL;
	if (s->memory == 0 || s->cpus <= 0 || s->owner_pid <= 0)
		return -EINVAL;
	if (s->lang != 0 && s->lang != CONFIG_LANG_PYTHON &&
	    lang_argv(s->lang) == NULL)
		return -EINVAL;
	return 0;
}

static void
add_identity(struct dargv *a, const struct docker_spec *s)
{
	dargv_add(a, "--name");
	dargv_add(a, s->name);
	dargv_add(a, "--label");
	dargv_add(a, "cordon=1");
	dargv_add(a, "--label");
	dargv_addf(a, "cordon.owner_pid=%ld", s->owner_pid);
	dargv_add(a, "--label");
	dargv_addf(a, "cordon.deadline=%lld", (long long)s->deadline_epoch_s);
	dargv_add(a, "--label");
	dargv_addf(a, "cordon.session=%s", s->session);
}

/* The fixed hardening set plus the clamped resource limits. */
static void
add_hardening(struct dargv *a, const struct config *c,
    const struct docker_spec *s)
{
	const struct config_limits *l = &c->limits;

	dargv_addf(a, "--runtime=%s", s->runtime);
	dargv_addf(a, "--network=%s", s->network);
	dargv_add(a, "--cap-drop=ALL");
	dargv_add(a, "--security-opt=no-new-privileges");
	dargv_add(a, "--read-only");
	dargv_add(a, "--tmpfs");
	dargv_addf(a, "/tmp:rw,noexec,nosuid,nodev,size=%llu",
	    (unsigned long long)l->tmpfs_bytes);
	dargv_add(a, "--user");
	dargv_add(a, c->user);
	dargv_addf(a, "--memory=%llu", (unsigned long long)s->memory);
	dargv_addf(a, "--memory-swap=%llu", (unsigned long long)s->memory);
	dargv_addf(a, "--cpus=%.3f", s->cpus);
	dargv_add(a, "--ulimit");
	dargv_addf(a, "nofile=%lld:%lld", (long long)l->nofile,
	    (long long)l->nofile);
	dargv_add(a, "--ulimit");
	dargv_addf(a, "fsize=%llu:%llu", (unsigned long long)l->fsize_bytes,
	    (unsigned long long)l->fsize_bytes);
	dargv_add(a, "--ulimit");
	dargv_addf(a, "nproc=%lld:%lld", (long long)l->nproc,
	    (long long)l->nproc);
	dargv_addf(a, "--pids-limit=%lld", (long long)l->pids_limit);
	dargv_add(a, "--ipc=none");
	dargv_add(a, "--log-driver=none");
	dargv_add(a, "--pull=never");
	dargv_add(a, "--workdir=/tmp");
	for (size_t i = 0; docker_job_env[i] != NULL; i++) {
		dargv_add(a, "--env");
		dargv_add(a, docker_job_env[i]);
	}
}

/* Proxy mode: the CA bundle (system roots + the egress CA, so inspected
 * tunnels verify) read-only, and what the usual clients read it from. */
const char *const docker_ca_env[] = {
	"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "PIP_CERT", "CURL_CA_BUNDLE",
	"NODE_EXTRA_CA_CERTS", NULL,
};

static void
add_ca_bundle(struct dargv *a, const char *path)
{
	dargv_add(a, "--mount");
	dargv_addf(a, "type=bind,src=%s,dst=%s,readonly", path,
	    DOCKER_CA_BUNDLE);
	for (size_t i = 0; docker_ca_env[i] != NULL; i++) {
		dargv_add(a, "--env");
		dargv_addf(a, "%s=%s", docker_ca_env[i], DOCKER_CA_BUNDLE);
	}
}

/* The command: python3 -I - for a python job; else the language's own
 * interpreter, run through the prelude and the wrapper when they are
 * there (both Python: every profile has python3). */
static void
add_job_command(struct dargv *a, const struct docker_spec *s)
{
	const char *const *job = lang_argv(s->lang);

	if (job != NULL && s->prelude == NULL && s->wrapper == NULL) {
		for (size_t i = 0; job[i] != NULL; i++)
			dargv_add(a, job[i]);
		return;
	}
	dargv_add(a, "python3");
	dargv_add(a, "-I");
	if (s->prelude != NULL) {
		/* It reads its line of stdin, then execs python3 -I with the
		 * arguments that follow (or, when they start with an absolute
		 * path, that program): the job runs as without it. */
		dargv_add(a, "-c");
		dargv_add(a, s->prelude);
	}
	if (s->wrapper != NULL) {
		/* The fixed wrapper program; the job's code still comes on
		 * stdin, after a per-run nonce line. It runs the arguments
		 * after the cap (none: python3 -I -) as the job. */
		dargv_add(a, "-c");
		dargv_add(a, s->wrapper);
		dargv_addf(a, "%llu", (unsigned long long)s->wrapper_cap);
	} else if (job == NULL) {
		dargv_add(a, "-");
	}
	for (size_t i = 0; job != NULL && job[i] != NULL; i++)
		dargv_add(a, job[i]);
}

/* What follows the image: the holder, or the job's command line. */
static void
add_command(struct dargv *a, const struct docker_spec *s)
{
	if (s->holder) {
		dargv_add(a, "python3");
		dargv_add(a, "-I");
		dargv_add(a, "-c");
		dargv_add(a, DARGV_HOLDER);
	} else {
		add_job_command(a, s);
	}
}

static int
dargv_finish(struct dargv *a)
{
	int rc;

	if (a->error != 0) {
		rc = a->error;
		dargv_cleanup(a);
		return rc;
	}
	return 0;
}

int
docker_run_argv(const struct config *c, const struct docker_spec *s,
    struct dargv *a)
{
	int rc;

	dargv_init(a);
	if ((rc = docker_spec_check(c, s)) < 0)
		return rc;
	dargv_add(a, c->docker);
	dargv_add(a, "run");
	dargv_add(a, "-i");
	add_identity(a, s);
	add_hardening(a, c, s);
	if (s->in_dir != NULL) {
		dargv_add(a, "--mount");
		dargv_addf(a, "type=bind,src=%s,dst=/in,readonly", s->in_dir);
	}
	if (s->ca_bundle != NULL)
		add_ca_bundle(a, s->ca_bundle);
	/* Proxy mode: the proxy's resolver is the sandbox's only one. A
	 * user mount at /etc/resolv.conf makes Docker skip its own (which
	 * would name its embedded DNS, 127.0.0.11). */
	if (s->resolv_conf != NULL) {
		dargv_add(a, "--mount");
		dargv_addf(a, "type=bind,src=%s,dst=/etc/resolv.conf,readonly",
		    s->resolv_conf);
	}
	for (size_t i = 0; i < s->nextra; i++)
		dargv_add(a, s->extra[i]);
	dargv_add(a, s->image_id);
	add_command(a, s);
	return dargv_finish(a);
}

int
docker_cmd_argv(const struct docker_spec *s, struct dargv *a)
{
	dargv_init(a);
	add_command(a, s);
	return dargv_finish(a);
}

int
docker_exec_argv(const struct config *c, const struct docker_spec *s,
    struct dargv *a)
{
	int rc;

	dargv_init(a);
	if ((rc = docker_spec_check(c, s)) < 0)
		return rc;
	/* Here the name stands alone: never one an option parser takes. */
	if (s->name[0] == '-')
		return -EINVAL;
	dargv_add(a, c->docker);
	dargv_add(a, "exec");
	dargv_add(a, "-i");
	dargv_add(a, s->name);
	add_job_command(a, s);
	return dargv_finish(a);
}
