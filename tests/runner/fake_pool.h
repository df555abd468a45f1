/* Reading the fake docker's call log in the warm pool's suites
 * (test_pool_fake.c, test_pool_parallel.c): the containers `run` started
 * and whether each was removed. Include after cmocka.h. */
#ifndef CORDON_TESTS_RUNNER_FAKE_POOL_H
#define CORDON_TESTS_RUNNER_FAKE_POOL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner/runner.h"
#include "fake_docker.h"

#define MAX_NAMES 256

struct names {
	char v[MAX_NAMES][RUNNER_NAME_MAX];
	size_t n;
};

/* The container names of the `run` lines of log, in order. */
static inline void
run_names(const char *log, struct names *out)
{
	out->n = 0;
	for (const char *l = log; *l != '\0'; ) {
		const char *end = strchr(l, '\n'), *nm;

		if (end == NULL)
			end = l + strlen(l);
		if (strncmp(l, "run ", 4) == 0 &&
		    (nm = strstr(l, " --name ")) != NULL && nm < end) {
			size_t len;

			nm += 8;
			len = strcspn(nm, " \n");
			assert_true(len < RUNNER_NAME_MAX);
			assert_true(out->n < MAX_NAMES);
			memcpy(out->v[out->n], nm, len);
			out->v[out->n][len] = '\0';
			out->n++;
		}
		l = *end != '\0' ? end + 1 : end;
	}
}

/* run_names of the fake docker's log so far. */
static inline void
logged_run_names(const struct fake_docker *f, struct names *out)
{
	char *log = fake_docker_log(f);

	run_names(log, out);
	free(log);
}

/* Polls until every name in n has an `rm` line, or ms pass. */
static inline bool
all_removed_within(const struct fake_docker *f, const struct names *n,
    int64_t ms)
{
	int64_t end = time_mono_ms() + ms;

	for (;;) {
		char *log = fake_docker_log(f);
		size_t i;

		for (i = 0; i < n->n && fake_docker_removed(log, n->v[i]); i++)
			;
		free(log);
		if (i == n->n)
			return true;
		if (time_mono_ms() >= end)
			return false;
		usleep(50000);
	}
}

#endif
