/* Shared setup for the runner and mcp suites that drive the fake docker CLI
 * (tests/runner/fake-docker.sh): a temporary directory holding the state
 * dir, the audit log and the call log ($FAKE_LOG), and a config that
 * points at the fake, pins an image and does not require a probe. */
#ifndef CORDON_TESTS_LIB_FAKE_DOCKER_H
#define CORDON_TESTS_LIB_FAKE_DOCKER_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/util.h"

struct fake_docker {
	char dir[64];		/* /tmp/cordon-fake.XXXXXX */
	char log[128];		/* dir/calls.log, exported as FAKE_LOG */
	struct config cfg;
};

/* 0, or -1 (with a message on stderr). */
static inline int
fake_docker_setup(struct fake_docker *f)
{
	const char *src = getenv("CORDON_SOURCE_ROOT");
	char text[1024], err[256];

	strcpy(f->dir, "/tmp/cordon-fake.XXXXXX");
	if (src == NULL || mkdtemp(f->dir) == NULL) {
		fprintf(stderr, "fake docker: no CORDON_SOURCE_ROOT or temp "
		    "dir\n");
		return -1;
	}
	snprintf(f->log, sizeof(f->log), "%s/calls.log", f->dir);
	snprintf(text, sizeof(text), "{\"docker\":\"%s/tests/runner/"
	    "fake-docker.sh\",\"require_probe\":false,"
	    "\"state_dir\":\"%s/state\",\"audit_log\":"
	    "\"%s/audit/audit.log\",\"image\":{\"id\":\"sha256:%064d\"}}",
	    src, f->dir, f->dir, 7);
	if (config_parse(&f->cfg, text, strlen(text), "test", err,
	    sizeof(err)) < 0) {
		fprintf(stderr, "config: %s\n", err);
		return -1;
	}
	setenv("FAKE_LOG", f->log, 1);
	return 0;
}

static inline int
fake_docker_teardown(struct fake_docker *f)
{
	return util_rm_rf(f->dir);
}

/* The call log so far (caller frees); "" when there is none yet. */
static inline char *
fake_docker_log(const struct fake_docker *f)
{
	char *text = NULL;
	size_t len;

	if (util_read_file(f->log, 1 << 22, &text, &len) < 0)
		return strdup("");
	return text;
}

/* The log has "rm -f NAME" for the container. */
static inline bool
fake_docker_removed(const char *log, const char *name)
{
	char want[96];

	snprintf(want, sizeof(want), "rm -f %s\n", name);
	return strstr(log, want) != NULL;
}

/* Define FAKE_DOCKER_SUITE as a FAKE_MODE (a string, or NULL to leave it
 * unset) before including this file to get the suite's one fake, fk, and
 * the cmocka set-up and tear-down around it (group or per test): set-up
 * makes the fake and sets FAKE_MODE; tear-down removes it and clears
 * FAKE_MODE and FAKE_BREAK_AUDIT. */
#ifdef FAKE_DOCKER_SUITE
static struct fake_docker fk;

static int
fake_suite_setup(void **state)
{
	const char *mode = FAKE_DOCKER_SUITE;

	(void)state;
	if (fake_docker_setup(&fk) < 0)
		return -1;
	if (mode != NULL)
		setenv("FAKE_MODE", mode, 1);
	return 0;
}

static int
fake_suite_teardown(void **state)
{
	(void)state;
	unsetenv("FAKE_MODE");
	unsetenv("FAKE_BREAK_AUDIT");
	return fake_docker_teardown(&fk);
}
#endif

#endif
