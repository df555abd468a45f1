/*
 * `POST /v1/runs` bodies (request.h): the size and shape check before
 * cJSON, the members by the one request schema (jobs/request.h, `files`
 * in base64), and staging of `files` under a fresh temporary directory.
 */
#include "serve/request.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/util.h"

/* The HTTP API's members are those of jobs/request.h, `files` in base64. */
static const struct jobs_req_rules serve_rules = {
	.whole = "the body",
	.noun = "field",
	.advertised = "code, language, profile, net, policy, timeout_s, "
	    "max_output, keep, files",
	.files = STAGE_CONTENT_BASE64,
};

#define BODY_DEPTH_MAX 16

int
serve_body_scan(const struct config *c, const char *body, size_t len,
    char *err, size_t errlen)
{
	struct json_scan sc;
	uint64_t max = 64 + 8 * (uint64_t)c->limits.in_max_files;

	json_scan(body, len, &sc);
	if (sc.nul) {
		if (sc.nul_member[0] != '\0')
			snprintf(err, errlen, "'%s' holds a string with U+0000 "
			    "(\\u0000 or a NUL byte), which is not accepted",
			    sc.nul_member);
		else
			snprintf(err, errlen, "the body holds U+0000 (\\u0000 "
			    "or a NUL byte), which is not accepted");
		return -EINVAL;
	}
	if (sc.values > max) {
		snprintf(err, errlen, "the body has too many JSON values "
		    "(over %llu: at most 64 and 8 per file)",
		    (unsigned long long)max);
		return -EINVAL;
	}
	if (sc.depth > BODY_DEPTH_MAX) {
		snprintf(err, errlen, "the body nests deeper than %d",
		    BODY_DEPTH_MAX);
		return -EINVAL;
	}
	return 0;
}

int
serve_req_parse(const struct config *c, const char *body, size_t len,
    struct jobs_req *out, char *err, size_t errlen)
{
	cJSON *root;
	int rc;

	memset(out, 0, sizeof(*out));
	if (len > c->serve.body_max_bytes) {
		snprintf(err, errlen, "the body is over %llu bytes",
		    (unsigned long long)c->serve.body_max_bytes);
		return -EFBIG;
	}
	if ((rc = serve_body_scan(c, body, len, err, errlen)) < 0)
		return rc;
	if ((root = cJSON_ParseWithLength(body, len)) == NULL) {
		snprintf(err, errlen, "the body is not valid JSON");
		return -EINVAL;
	}
	rc = jobs_req_parse(c, root, &serve_rules, out, err, errlen);
	cJSON_Delete(root);
	return rc;
}
