/*
 * libFuzzer target for the one request schema (jobs/request.h): any JSON
 * value parses or is refused with a reason, never crashes or leaks; and
 * the two front ends' rules agree. Without `files` and `session` (the
 * members their rules treat differently), serve's and MCP's rules accept
 * the same inputs, with the same status, into the same request.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "jobs/request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const mcp_extra[] = { "session", NULL };
static const struct jobs_req_rules rules[2] = {
	{ .whole = "the body", .noun = "field", .advertised = "code",
	  .files = STAGE_CONTENT_BASE64 },
	{ .whole = "the arguments", .noun = "argument", .advertised = "code",
	  .extra = mcp_extra, .files = STAGE_CONTENT_TEXT },
};

static int
str_eq(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a != NULL && b != NULL &&
	    strcmp(a, b) == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct config c;
	static int ready;
	struct jobs_req r[2];
	char err[2][512];
	int rc[2];
	cJSON *root;
	bool differ;

	if (!ready) {
		config_defaults(&c);
		c.limits.in_max_bytes = 4096;
		c.limits.in_max_files = 8;
		ready = 1;
	}
	if ((root = cJSON_ParseWithLength((const char *)data, size)) == NULL)
		return 0;
	for (int i = 0; i < 2; i++) {
		err[i][0] = '\0';
		rc[i] = jobs_req_parse(&c, root, &rules[i], &r[i], err[i],
		    sizeof(err[i]));
		if (rc[i] == 0 ? (r[i].code == NULL || r[i].lang == NULL ||
		    r[i].code_len != strlen(r[i].code)) :
		    ((rc[i] != -EINVAL && rc[i] != -EFBIG && rc[i] != -ENOMEM)
		    || err[i][0] == '\0' || r[i].code != NULL))
			abort();
	}
	differ = cJSON_IsObject(root) &&
	    (cJSON_GetObjectItemCaseSensitive(root, "files") != NULL ||
	    cJSON_GetObjectItemCaseSensitive(root, "session") != NULL);
	if (!differ && rc[0] != rc[1] && rc[0] != -ENOMEM && rc[1] != -ENOMEM)
		abort();
	if (!differ && rc[0] == 0 && rc[1] == 0 &&
	    (strcmp(r[0].code, r[1].code) != 0 || r[0].has_net != r[1].has_net
	    || r[0].net != r[1].net || strcmp(r[0].policy, r[1].policy) != 0
	    || r[0].timeout_s != r[1].timeout_s ||
	    r[0].max_output != r[1].max_output || !str_eq(r[0].keep, r[1].keep)
	    || strcmp(r[0].lang, r[1].lang) != 0 ||
	    strcmp(r[0].profile, r[1].profile) != 0))
		abort();
	for (int i = 0; i < 2; i++)
		jobs_req_cleanup(&r[i]);
	cJSON_Delete(root);
	return 0;
}
