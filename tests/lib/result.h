/*
 * Reading the JSON that Cordon's parts report, for the suites that check
 * it: one copy of the look-ups each suite had written for itself.
 */
#ifndef CORDON_TESTS_LIB_RESULT_H
#define CORDON_TESTS_LIB_RESULT_H

#include <cjson/cJSON.h>

/* The entry of a run report's "egress" array (cordon-proxy's report op)
 * with this host and via, and this reason when reason is not NULL; NULL
 * when there is none. Points into j. */
const cJSON *result_egress_entry(const cJSON *j, const char *host,
    const char *via, const char *reason);

#endif
