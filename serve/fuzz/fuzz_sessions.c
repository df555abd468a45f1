/*
 * libFuzzer target for the service's session requests (serve/sessions.h):
 * any bytes as a `POST /v1/sessions` body parse within the bounds or are
 * refused with a reason; the same bytes, cut at the first NUL, as a path
 * give a kind in -1..2 and, for a session, an id of the exact form.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve/sessions.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct serve_session_opts o;
	char err[256] = "", id[SERVE_SESSION_ID_LEN + 1], *path;
	int rc;

	rc = serve_session_opts_parse((const char *)data, size, &o, err,
	    sizeof(err));
	if (rc != 0 && (rc != -EINVAL || err[0] == '\0'))
		abort();
	if (rc == 0 && (o.idle_timeout_s < 1 || o.max_lifetime_s < 1 ||
	    o.idle_timeout_s > SERVE_SESSION_S_MAX ||
	    o.max_lifetime_s > SERVE_SESSION_S_MAX ||
	    (o.policy[0] != '\0' && !config_policy_name_valid(o.policy)) ||
	    (o.profile[0] != '\0' && !config_profile_name_valid(o.profile)) ||
	    (o.files != NULL && !cJSON_IsArray(o.files))))
		abort();
	if (rc != 0 && o.files != NULL)
		abort();	/* refused: nothing is left to free */
	serve_session_opts_cleanup(&o);
	/* The same bytes as a PATCH body. */
	{
		char policy[CONFIG_POLICY_MAX + 1];
		rc = serve_session_patch_parse((const char *)data, size,
		    policy, sizeof(policy), err, sizeof(err));
		if ((rc == 0 && !config_policy_name_valid(policy)) ||
		    (rc != 0 && (rc != -EINVAL || policy[0] != '\0')))
			abort();
	}
	if ((path = malloc(size + 1)) == NULL)
		return 0;
	memcpy(path, data, size);
	path[size] = '\0';
	rc = serve_session_path(path, id);
	if (rc < -1 || rc > 2 || (rc > 0 && (strlen(id) !=
	    SERVE_SESSION_ID_LEN || strncmp(id, "ses_", 4) != 0)) ||
	    (rc <= 0 && id[0] != '\0'))
		abort();
	free(path);
	return 0;
}
