/*
 * `POST /v1/runs` bodies (request.h): the strict JSON check and staging of
 * `files` under a fresh temporary directory. `files` is checked by
 * stage_files_parse, the same rules as the MCP tool's; contents are base64.
 */
#include "serve/request.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/util.h"

#define TIMEOUT_MAX_ARG 9007199254740991LL	/* any integer JSON keeps */

static const char *const allowed_keys[] = {
	"code", "lang", "language", "profile", "net", "policy", "timeout_s",
	"max_output", "keep", "files",
};

void
serve_req_cleanup(struct serve_req *r)
{
	free(r->code);
	stage_files_free(r->files, r->nfiles);
	memset(r, 0, sizeof(*r));
}

static int
bad(char *err, size_t errlen, int rc, const char *why)
{
	snprintf(err, errlen, "%s", why);
	return rc;
}

/* `net` and `policy`; whether they go together, and whether the tenant
 * may use them, is serve_tenant_check's. */
static int
parse_net(const cJSON *root, struct serve_req *r, char *err, size_t errlen)
{
	const char *s;
	int rc;

	rc = json_get_string(root, "net", &s);
	if (rc == 0 && (strcmp(s, "none") == 0 || strcmp(s, "proxy") == 0)) {
		r->has_net = true;
		r->net = s[0] == 'p' ? RUNNER_NET_PROXY : RUNNER_NET_NONE;
	} else if (rc != -ENOENT) {
		return bad(err, errlen, -EINVAL,
		    "'net' must be \"none\" or \"proxy\"");
	}
	rc = json_get_string(root, "policy", &s);
	if (rc == 0 && config_policy_name_valid(s)) {
		util_strlcpy(r->policy, s, sizeof(r->policy));
	} else if (rc != -ENOENT) {
		snprintf(err, errlen, "'policy' must be a policy name (1-%d of "
		    "[A-Za-z0-9_-])", CONFIG_POLICY_MAX);
		return -EINVAL;
	}
	return 0;
}

/* `language` ("lang" is its older name: one of them), `profile`: the
 * profile must exist and offer the language (config_profile_pick), so a
 * wrong pair is a 400 before the run is queued. */
static int
parse_lang(const struct config *c, const cJSON *root, struct serve_req *r,
    char *err, size_t errlen)
{
	const struct config_profile *p;
	const char *s = NULL, *prof = NULL;
	int rc, rl;

	rc = json_get_string(root, "language", &s);
	rl = json_get_string(root, "lang", rc == 0 ? &prof : &s);
	r->lang_key = rc != -ENOENT ? "language" : rl != -ENOENT ? "lang" :
	    NULL;
	if (rc == 0 && rl == 0)
		return bad(err, errlen, -EINVAL, "give 'language' or 'lang', "
		    "not both");
	if (rc == -EINVAL || rl == -EINVAL || (s != NULL &&
	    config_lang_bit(s) == 0))
		return bad(err, errlen, -EINVAL, "'language' must be "
		    "\"python\", \"bash\" or \"node\"");
	r->lang = config_lang_name(config_lang_bit(s));
	prof = NULL;
	rc = json_get_string(root, "profile", &prof);
	if (rc == -EINVAL || (rc == 0 && !config_profile_name_valid(prof)))
		return bad(err, errlen, -EINVAL, "'profile' must be a profile "
		    "name (1-32 of [a-z0-9_-])");
	if (rc == 0)
		util_strlcpy(r->profile, prof, sizeof(r->profile));
	return config_profile_pick(c, rc == 0 ? prof : NULL, r->lang, &p, err,
	    errlen) < 0 ? -EINVAL : 0;
}

static int
parse_fields(const struct config *c, const cJSON *root, struct serve_req *r,
    char *err, size_t errlen)
{
	struct runner_request lq = { .code = NULL };
	const cJSON *m;
	const char *s;
	int64_t v;
	int rc;

	if (!cJSON_IsObject(root))
		return bad(err, errlen, -EINVAL, "the body must be a JSON object");
	cJSON_ArrayForEach(m, root) {
		bool known = false;

		for (size_t i = 0; i < sizeof(allowed_keys) /
		    sizeof(allowed_keys[0]); i++)
			known = known || strcmp(m->string, allowed_keys[i]) == 0;
		if (!known) {
			snprintf(err, errlen, "unknown field '%.64s' (allowed: "
			    "code, language, profile, net, policy, timeout_s, "
			    "max_output, keep, files)", m->string);
			return -EINVAL;
		}
	}
	if ((rc = json_get_string(root, "code", &s)) < 0)
		return bad(err, errlen, -EINVAL, rc == -ENOENT ?
		    "missing field 'code'" : "'code' must be a string");
	/* As `cordon run` refuses an empty program (exit 2). */
	if (s[0] == '\0')
		return bad(err, errlen, -EINVAL, "'code' is empty: the program "
		    "is empty, nothing to run");
	r->code_len = strlen(s);
	if (r->code_len > RUNNER_CODE_MAX)
		return bad(err, errlen, -EFBIG, "'code' is too long");
	if ((r->code = strdup(s)) == NULL)
		return bad(err, errlen, -ENOMEM, "out of memory");
	if ((rc = parse_lang(c, root, r, err, errlen)) < 0)
		return rc;
	if ((rc = parse_net(root, r, err, errlen)) < 0)
		return rc;
	rc = json_get_int(root, "timeout_s", 1, TIMEOUT_MAX_ARG, &v);
	if (rc == -EINVAL)
		return bad(err, errlen, -EINVAL, "'timeout_s' must be a whole "
		    "number of seconds, at least 1");
	r->timeout_s = rc == 0 ? v : 0;
	rc = json_get_int(root, "max_output", 1, TIMEOUT_MAX_ARG, &v);
	if (rc == -EINVAL)
		return bad(err, errlen, -EINVAL, "'max_output' must be a whole "
		    "number of bytes, at least 1");
	r->max_output = rc == 0 ? (uint64_t)v : 0;
	/* Above the operator's maximum: refused, naming it. */
	lq.timeout_s = r->timeout_s;
	lq.max_output = r->max_output;
	if ((rc = runner_limits_check(c, &lq, err, errlen)) < 0)
		return rc;
	/* `keep`: which part of an over-long stream is kept. */
	if ((rc = json_get_keep(root, "keep", &r->keep)) < 0)
		return bad(err, errlen, -EINVAL, "'keep' must be \"head\", "
		    "\"tail\" or \"both\"");
	if ((m = cJSON_GetObjectItemCaseSensitive(root, "files")) != NULL)
		return stage_files_parse(c, m, STAGE_CONTENT_BASE64, &r->files,
		    &r->nfiles, err, errlen);
	return 0;
}

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
    struct serve_req *out, char *err, size_t errlen)
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
	if ((root = cJSON_ParseWithLength(body, len)) == NULL)
		return bad(err, errlen, -EINVAL, "the body is not valid JSON");
	rc = parse_fields(c, root, out, err, errlen);
	cJSON_Delete(root);
	if (rc < 0)
		serve_req_cleanup(out);
	return rc;
}

int
serve_stage_files(const char *tmp_dir, const struct serve_req *r,
    struct stage_dir *st, char *err, size_t errlen)
{
	return stage_write(tmp_dir, "cordon-serve", r->files, r->nfiles, st,
	    err, errlen);
}
