/*
 * Look-ups in reported JSON shared by the suites (result.h).
 */
#include "result.h"

#include <string.h>

const cJSON *
result_egress_entry(const cJSON *j, const char *host, const char *via,
    const char *reason)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, cJSON_GetObjectItem(j, "egress")) {
		const cJSON *h = cJSON_GetObjectItem(e, "host");
		const cJSON *v = cJSON_GetObjectItem(e, "via");
		const cJSON *w = cJSON_GetObjectItem(e, "reason");
		if (cJSON_IsString(h) && strcmp(h->valuestring, host) == 0 &&
		    cJSON_IsString(v) && strcmp(v->valuestring, via) == 0 &&
		    (reason == NULL || (cJSON_IsString(w) &&
		    strcmp(w->valuestring, reason) == 0)))
			return e;
	}
	return NULL;
}
