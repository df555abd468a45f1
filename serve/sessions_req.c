/*
 * The pure parts of the service's sessions (sessions.h): the strict
 * `POST /v1/sessions` body and the session paths. Unit-tested by
 * tests/serve/test_sessions.c and fuzzed (serve/fuzz/fuzz_sessions.c).
 */
#include "serve/sessions.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/json.h"
#include "common/util.h"

static const char *const session_keys[] = {
	"net", "policy", "profile", "idle_timeout_s", "max_lifetime_s",
	"files",
};

static int
bad(char *err, size_t errlen, const char *why)
{
	snprintf(err, errlen, "%s", why);
	return -EINVAL;
}

static int
parse_secs(const cJSON *root, const char *key, int64_t def, int64_t *out,
    char *err, size_t errlen)
{
	int64_t v;
	int rc = json_get_int(root, key, 1, SERVE_SESSION_S_MAX, &v);

	if (rc == -ENOENT) {
		*out = def;
		return 0;
	}
	if (rc < 0) {
		snprintf(err, errlen, "'%s' must be a whole number of seconds, "
		    "1-%d", key, SERVE_SESSION_S_MAX);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

static int
parse_session(const cJSON *root, struct serve_session_opts *o, char *err,
    size_t errlen)
{
	const cJSON *m;
	const char *s;
	int rc;

	if (!cJSON_IsObject(root))
		return bad(err, errlen, "the body must be a JSON object");
	cJSON_ArrayForEach(m, root) {
		bool known = false;

		for (size_t i = 0; i < sizeof(session_keys) /
		    sizeof(session_keys[0]); i++)
			known = known || strcmp(m->string, session_keys[i]) == 0;
		if (!known) {
			snprintf(err, errlen, "unknown field '%.64s' (allowed: "
			    "net, policy, profile, idle_timeout_s, "
			    "max_lifetime_s, files)", m->string);
			return -EINVAL;
		}
	}
	rc = json_get_string(root, "net", &s);
	if (rc == 0 && (strcmp(s, "none") == 0 || strcmp(s, "proxy") == 0)) {
		o->has_net = true;
		o->net = s[0] == 'p' ? RUNNER_NET_PROXY : RUNNER_NET_NONE;
	} else if (rc != -ENOENT) {
		return bad(err, errlen, "'net' must be \"none\" or \"proxy\"");
	}
	rc = json_get_string(root, "policy", &s);
	if (rc == 0 && config_policy_name_valid(s)) {
		util_strlcpy(o->policy, s, sizeof(o->policy));
	} else if (rc != -ENOENT) {
		snprintf(err, errlen, "'policy' must be a policy name (1-%d of "
		    "[A-Za-z0-9_-])", CONFIG_POLICY_MAX);
		return -EINVAL;
	}
	rc = json_get_string(root, "profile", &s);
	if (rc == 0 && config_profile_name_valid(s)) {
		if (strcmp(s, "default") != 0)
			util_strlcpy(o->profile, s, sizeof(o->profile));
	} else if (rc != -ENOENT) {
		snprintf(err, errlen, "'profile' must be a profile name (1-%d "
		    "of [a-z0-9_-]), or \"default\"", CONFIG_PROFILE_MAX);
		return -EINVAL;
	}
	if ((rc = parse_secs(root, "idle_timeout_s",
	    SERVE_SESSION_IDLE_DEFAULT_S, &o->idle_timeout_s, err,
	    errlen)) < 0)
		return rc;
	return parse_secs(root, "max_lifetime_s", SERVE_SESSION_LIFE_DEFAULT_S,
	    &o->max_lifetime_s, err, errlen);
}

int
serve_session_opts_parse(const char *body, size_t len,
    struct serve_session_opts *o, char *err, size_t errlen)
{
	struct json_scan sc;
	cJSON *root;
	int rc;

	memset(o, 0, sizeof(*o));
	/* An empty body is an empty object: every default. */
	if (len == 0) {
		o->idle_timeout_s = SERVE_SESSION_IDLE_DEFAULT_S;
		o->max_lifetime_s = SERVE_SESSION_LIFE_DEFAULT_S;
		return 0;
	}
	/* cJSON would cut a string at U+0000 (issue 39). */
	json_scan(body, len, &sc);
	if (sc.nul) {
		snprintf(err, errlen, "%s%s%s holds a string with U+0000 "
		    "(\\u0000 or a NUL byte), which is not accepted",
		    sc.nul_member[0] != '\0' ? "'" : "", sc.nul_member[0] !=
		    '\0' ? sc.nul_member : "the body", sc.nul_member[0] !=
		    '\0' ? "'" : "");
		return -EINVAL;
	}
	if ((root = cJSON_ParseWithLength(body, len)) == NULL)
		return bad(err, errlen, "the body is not valid JSON");
	rc = parse_session(root, o, err, errlen);
	/* `files` is kept whole for stage_files_parse, which needs the
	 * config's caps. */
	if (rc == 0 && (o->files = cJSON_DetachItemFromObjectCaseSensitive(root,
	    "files")) != NULL && !cJSON_IsArray(o->files))
		rc = bad(err, errlen, "'files' must be an array of {path, "
		    "content_b64}");
	cJSON_Delete(root);
	if (rc < 0) {
		serve_session_opts_cleanup(o);
		memset(o, 0, sizeof(*o));
	}
	return rc;
}

void
serve_session_opts_cleanup(struct serve_session_opts *o)
{
	cJSON_Delete(o->files);
	o->files = NULL;
}

int
serve_session_patch_parse(const char *body, size_t len, char *policy,
    size_t plen, char *err, size_t errlen)
{
	struct json_scan sc;
	const cJSON *v;
	cJSON *o = NULL;
	int rc = -EINVAL;

	policy[0] = '\0';
	if (len == 0) {
		snprintf(err, errlen, "a body {\"policy\": NAME} is required");
		return -EINVAL;
	}
	json_scan(body, len, &sc);
	if (sc.nul) {
		snprintf(err, errlen, "a string holds U+0000");
		return -EINVAL;
	}
	if ((o = cJSON_ParseWithLength(body, len)) == NULL ||
	    !cJSON_IsObject(o)) {
		snprintf(err, errlen, "the body is not a JSON object");
		goto out;
	}
	cJSON_ArrayForEach(v, o)
		if (v->string == NULL || strcmp(v->string, "policy") != 0) {
			snprintf(err, errlen, "unknown field '%.64s' (a "
			    "session's PATCH takes only 'policy')",
			    v->string != NULL ? v->string : "");
			goto out;
		}
	v = cJSON_GetObjectItemCaseSensitive(o, "policy");
	if (!cJSON_IsString(v) || !config_policy_name_valid(v->valuestring) ||
	    !util_strlcpy(policy, v->valuestring, plen)) {
		policy[0] = '\0';
		snprintf(err, errlen, "'policy' must be a policy name (1-%d of "
		    "[A-Za-z0-9_-])", CONFIG_POLICY_MAX);
		goto out;
	}
	rc = 0;
out:
	cJSON_Delete(o);
	return rc;
}

int
serve_session_path(const char *path, char *id)
{
	static const char base[] = "/v1/sessions";
	const char *p, *slash;
	size_t n;

	id[0] = '\0';
	if (strncmp(path, base, sizeof(base) - 1) != 0)
		return -1;
	p = path + sizeof(base) - 1;
	if (*p == '\0')
		return 0;
	if (*p++ != '/')
		return -1;
	slash = strchr(p, '/');
	n = slash != NULL ? (size_t)(slash - p) : strlen(p);
	if (n != SERVE_SESSION_ID_LEN || strncmp(p, "ses_", 4) != 0 ||
	    strspn(p + 4, "0123456789abcdef") != n - 4)
		return -1;
	if (slash != NULL && strcmp(slash, "/runs") != 0)
		return -1;
	memcpy(id, p, n);
	id[n] = '\0';
	return slash != NULL ? 2 : 1;
}
