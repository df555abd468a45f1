/* What a `cordon` child printed, for the runner's end-to-end suites
 * (e2e_runner.c, e2e_dockerapi.c): its exit code, stdout and stderr, the
 * stdout parsed as JSON, and getters that fail the test (naming the key
 * and what cordon printed) when the result lacks a field. Include after
 * cmocka.h. */
#ifndef CORDON_TESTS_RUNNER_E2E_RESULT_H
#define CORDON_TESTS_RUNNER_E2E_RESULT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "common/json.h"

struct e2e {
	int exit;
	char *out, *err;	/* what it printed (strdup'd) */
	cJSON *json;		/* out parsed, or NULL */
	char container[64];	/* the result's container, or "" */
	long hwm_kb;		/* e2e_runner: peak RSS of the cordon process */
	int docker_kids;	/* e2e_dockerapi: ticks that saw a `docker`
				 * child */
	int ticks;
};

static inline void
e2e_free(struct e2e *r)
{
	free(r->out);
	free(r->err);
	cJSON_Delete(r->json);
}

/* Not inlined: gcc 12 at -O3 then takes the returned pointer for one to
 * the local `s` (-Wdangling-pointer), though it points into r->json. */
static __attribute__((noinline, unused)) const char *
jstr(const struct e2e *r, const char *key)
{
	const char *s = NULL;

	if (r->json == NULL || json_get_string(r->json, key, &s) < 0)
		fail_msg("no string '%s' in cordon's output: %s / %s", key,
		    r->out, r->err);
	return s;
}

static inline int64_t
jint(const struct e2e *r, const char *key)
{
	int64_t v = 0;

	if (r->json == NULL || json_get_int(r->json, key, INT64_MIN,
	    INT64_MAX, &v) < 0)
		fail_msg("no integer '%s' in cordon's output: %s", key, r->out);
	return v;
}

static inline bool
jbool(const struct e2e *r, const char *key)
{
	bool b = false;

	if (r->json == NULL || json_get_bool(r->json, key, &b) < 0)
		fail_msg("no bool '%s' in cordon's output: %s", key, r->out);
	return b;
}

#endif
