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
static const char *const job_env[] = {
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"HOME=/tmp",
	"LANG=C.UTF-8",
	"PYTHONDONTWRITEBYTECODE=1",
	"PYTHONUNBUFFERED=1",
	NULL,
};

void
argv_init(struct argv_buf *a)
{
	memset(a, 0, sizeof(*a));
}

void
argv_add(struct argv_buf *a, const char *s)
{
	char *d;

	if (a->error != 0)
		return;
	if (a->n == ARGV_MAX) {
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
argv_addf(struct argv_buf *a, const char *fmt, ...)
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
	argv_add(a, s);
	free(s);
}

void
argv_cleanup(struct argv_buf *a)
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

static int
check_spec(const struct config *c, const struct docker_spec *s)
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
	if (s->memory == 0 || s->cpus <= 0 || s->owner_pid <= 0)
		return -EINVAL;
	return 0;
}

static void
add_identity(struct argv_buf *a, const struct docker_spec *s)
{
	argv_add(a, "--name");
	argv_add(a, s->name);
	argv_add(a, "--label");
	argv_add(a, "cordon=1");
	argv_add(a, "--label");
	argv_addf(a, "cordon.owner_pid=%ld", s->owner_pid);
	argv_add(a, "--label");
	argv_addf(a, "cordon.deadline=%lld", (long long)s->deadline_epoch_s);
	argv_add(a, "--label");
	argv_addf(a, "cordon.session=%s", s->session);
}

/* The fixed hardening set plus the clamped resource limits. */
static void
add_hardening(struct argv_buf *a, const struct config *c,
    const struct docker_spec *s)
{
	const struct config_limits *l = &c->limits;

	argv_addf(a, "--runtime=%s", s->runtime);
	argv_addf(a, "--network=%s", s->network);
	argv_add(a, "--cap-drop=ALL");
	argv_add(a, "--security-opt=no-new-privileges");
	argv_add(a, "--read-only");
	argv_add(a, "--tmpfs");
	argv_addf(a, "/tmp:rw,noexec,nosuid,nodev,size=%llu",
	    (unsigned long long)l->tmpfs_bytes);
	argv_add(a, "--user");
	argv_add(a, c->user);
	argv_addf(a, "--memory=%llu", (unsigned long long)s->memory);
	argv_addf(a, "--memory-swap=%llu", (unsigned long long)s->memory);
	argv_addf(a, "--cpus=%.3f", s->cpus);
	argv_add(a, "--ulimit");
	argv_addf(a, "nofile=%lld:%lld", (long long)l->nofile,
	    (long long)l->nofile);
	argv_add(a, "--ulimit");
	argv_addf(a, "fsize=%llu:%llu", (unsigned long long)l->fsize_bytes,
	    (unsigned long long)l->fsize_bytes);
	argv_add(a, "--ulimit");
	argv_addf(a, "nproc=%lld:%lld", (long long)l->nproc,
	    (long long)l->nproc);
	argv_addf(a, "--pids-limit=%lld", (long long)l->pids_limit);
	argv_add(a, "--ipc=none");
	argv_add(a, "--log-driver=none");
	argv_add(a, "--pull=never");
	argv_add(a, "--workdir=/tmp");
	for (size_t i = 0; job_env[i] != NULL; i++) {
		argv_add(a, "--env");
		argv_add(a, job_env[i]);
	}
}

int
docker_run_argv(const struct config *c, const struct docker_spec *s,
    struct argv_buf *a)
{
	int rc;

	argv_init(a);
	if ((rc = check_spec(c, s)) < 0)
		return rc;
	argv_add(a, c->docker);
	argv_add(a, "run");
	argv_add(a, "-i");
	add_identity(a, s);
	add_hardening(a, c, s);
	if (s->in_dir != NULL) {
		argv_add(a, "--mount");
		argv_addf(a, "type=bind,src=%s,dst=/in,readonly", s->in_dir);
	}
	for (size_t i = 0; i < s->nextra; i++)
		argv_add(a, s->extra[i]);
	argv_add(a, s->image_id);
	argv_add(a, "python3");
	argv_add(a, "-I");
	if (s->wrapper != NULL) {
		/* The fixed wrapper program; the job's code still comes on
		 * stdin, after a per-run nonce line. */
		argv_add(a, "-c");
		argv_add(a, s->wrapper);
		argv_addf(a, "%llu", (unsigned long long)s->wrapper_cap);
	} else {
		argv_add(a, "-");
	}
	if (a->error != 0) {
		rc = a->error;
		argv_cleanup(a);
		return rc;
	}
	return 0;
}
