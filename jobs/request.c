/*
 * The one request schema of a run (request.h): every member checked the
 * same way for every front end, in one order: unknown members, code,
 * language and profile, net and policy, limits, keep, files.
 */
#include "jobs/request.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/util.h"

#define ARG_INT_MAX 9007199254740991LL	/* any integer JSON keeps */

/* Every member the schema reads, aliases included. */
static const char *const schema_keys[] = {
	"code", "lang", "language", "profile", "net", "network", "policy",
	"timeout_s", "max_output", "keep", "files",
};

void
jobs_req_cleanup(struct jobs_req *r)
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

static bool
key_known(const struct jobs_req_rules *rules, const char *key)
{
	for (size_t i = 0; i < sizeof(schema_keys) / sizeof(schema_keys[0]);
	    i++)
		if (strcmp(key, schema_keys[i]) == 0)
			return true;
	for (size_t i = 0; rules->extra != NULL && rules->extra[i] != NULL;
	    i++)
		if (strcmp(key, rules->extra[i]) == 0)
			return true;
	return false;
}

/* One of two names for a member (key, or its alias), never both: which
 * was given in *used (NULL: neither). rc as json_get_string's. */
static int
get_aliased(const cJSON *root, const char *key, const char *alias,
    const char **s, const char **used, char *err, size_t errlen)
{
	const char *t = NULL;
	int rc = json_get_string(root, key, s);
	int ra = json_get_string(root, alias, rc == 0 ? &t : s);

	*used = rc != -ENOENT ? key : ra != -ENOENT ? alias : NULL;
	if (rc != -ENOENT && ra != -ENOENT) {
		snprintf(err, errlen, "give '%s' or '%s', not both", key,
		    alias);
		return -EEXIST;
	}
	return rc != -ENOENT ? rc : ra;
}

/* `net` ("network" is the MCP tool's name for it) and `policy`; whether
 * they go together is the front end's (a tenant's default may be proxy). */
static int
parse_net(const cJSON *root, struct jobs_req *r, char *err, size_t errlen)
{
	const char *s = NULL;
	int rc;

	rc = get_aliased(root, "net", "network", &s, &r->net_key, err,
	    errlen);
	if (rc == -EEXIST)
		return -EINVAL;
	if (rc == 0 && (strcmp(s, "none") == 0 || strcmp(s, "proxy") == 0)) {
		r->has_net = true;
		r->net = s[0] == 'p' ? RUNNER_NET_PROXY : RUNNER_NET_NONE;
	} else if (rc != -ENOENT) {
		snprintf(err, errlen, "'%s' must be \"none\" or \"proxy\"",
		    r->net_key);
		return -EINVAL;
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

/* `language` ("lang" is its older name), `profile`: the profile must
 * exist and offer the language (config_profile_pick), so a wrong pair is
 * refused before the run is queued, naming what the profile lacks. */
static int
parse_lang(const struct config *c, const cJSON *root, struct jobs_req *r,
    char *err, size_t errlen)
{
	const struct config_profile *p;
	const char *s = NULL, *prof = NULL;
	int rc;

	rc = get_aliased(root, "language", "lang", &s, &r->lang_key, err,
	    errlen);
	if (rc == -EEXIST)
		return -EINVAL;
	if (rc == -EINVAL || (rc == 0 && config_lang_bit(s) == 0))
		return bad(err, errlen, -EINVAL, "'language' must be "
		    "\"python\", \"bash\" or \"node\"");
	r->lang = config_lang_name(config_lang_bit(rc == 0 ? s : NULL));
	rc = json_get_string(root, "profile", &prof);
	if (rc == -EINVAL || (rc == 0 && !config_profile_name_valid(prof))) {
		snprintf(err, errlen, "'profile' must be a profile name (1-%d "
		    "of [a-z0-9_-])", CONFIG_PROFILE_MAX);
		return -EINVAL;
	}
	if (rc == 0)
		util_strlcpy(r->profile, prof, sizeof(r->profile));
	return config_profile_pick(c, rc == 0 ? prof : NULL, r->lang, &p, err,
	    errlen) < 0 ? -EINVAL : 0;
}

/* `timeout_s`, `max_output`: whole numbers, at least 1, at most the
 * operator's maxima (refused naming them, as `cordon run` does). */
static int
parse_limits(const struct config *c, const cJSON *root, struct jobs_req *r,
    char *err, size_t errlen)
{
	struct runner_request lq = { .code = NULL };
	int64_t v;
	int rc;

	rc = json_get_int(root, "timeout_s", 1, ARG_INT_MAX, &v);
	if (rc == -EINVAL)
		return bad(err, errlen, -EINVAL, "'timeout_s' must be a whole "
		    "number of seconds, at least 1");
	r->timeout_s = rc == 0 ? v : 0;
	rc = json_get_int(root, "max_output", 1, ARG_INT_MAX, &v);
	if (rc == -EINVAL)
		return bad(err, errlen, -EINVAL, "'max_output' must be a whole "
		    "number of bytes, at least 1");
	r->max_output = rc == 0 ? (uint64_t)v : 0;
	lq.timeout_s = r->timeout_s;
	lq.max_output = r->max_output;
	return runner_limits_check(c, &lq, err, errlen);
}

static int
parse_members(const struct config *c, const cJSON *root,
    const struct jobs_req_rules *rules, struct jobs_req *r, char *err,
    size_t errlen)
{
	const cJSON *m;
	const char *s;
	int rc;

	if (!cJSON_IsObject(root)) {
		snprintf(err, errlen, "%s must be a JSON object",
		    rules->whole);
		return -EINVAL;
	}
	cJSON_ArrayForEach(m, root) {
		if (!key_known(rules, m->string)) {
			snprintf(err, errlen, "unknown %s '%.64s' (allowed: "
			    "%s)", rules->noun, m->string, rules->advertised);
			return -EINVAL;
		}
	}
	if ((rc = json_get_string(root, "code", &s)) < 0) {
		if (rc == -ENOENT)
			snprintf(err, errlen, "missing %s 'code'", rules->noun);
		else
			snprintf(err, errlen, "'code' must be a string");
		return -EINVAL;
	}
	/* As `cordon run` refuses an empty program (exit 2). */
	if (s[0] == '\0')
		return bad(err, errlen, -EINVAL, "'code' is empty: the program "
		    "is empty, nothing to run");
	r->code_len = strlen(s);
	if (r->code_len > RUNNER_CODE_MAX)
		return bad(err, errlen, -EFBIG, "'code' is too long");
	if ((r->code = strdup(s)) == NULL)
		return bad(err, errlen, -ENOMEM, "out of memory");
	if ((rc = parse_lang(c, root, r, err, errlen)) < 0 ||
	    (rc = parse_net(root, r, err, errlen)) < 0 ||
	    (rc = parse_limits(c, root, r, err, errlen)) < 0)
		return rc;
	/* `keep`: which part of an over-long stream is kept. */
	if (json_get_keep(root, "keep", &r->keep) < 0)
		return bad(err, errlen, -EINVAL, "'keep' must be \"head\", "
		    "\"tail\" or \"both\"");
	if ((m = cJSON_GetObjectItemCaseSensitive(root, "files")) != NULL)
		return stage_files_parse(c, m, rules->files, &r->files,
		    &r->nfiles, err, errlen);
	return 0;
}

int
jobs_req_parse(const struct config *c, const cJSON *root,
    const struct jobs_req_rules *rules, struct jobs_req *out, char *err,
    size_t errlen)
{
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = parse_members(c, root, rules, out, err, errlen)) < 0)
		jobs_req_cleanup(out);
	return rc;
}

int
jobs_req_stage(const struct jobs_req *r, const char *tmp_dir,
    const char *prefix, struct stage_dir *st, struct runner_request *out,
    char *err, size_t errlen)
{
	int rc = stage_write(tmp_dir, prefix, r->files, r->nfiles, st, err,
	    errlen);

	if (rc < 0)
		return rc;
	out->code = r->code;
	out->code_len = r->code_len;
	out->net = r->net;
	out->policy = r->policy[0] != '\0' ? r->policy : NULL;
	out->timeout_s = r->timeout_s;
	out->max_output = r->max_output;
	out->keep = r->keep;
	out->lang = r->lang;
	out->profile = r->profile[0] != '\0' ? r->profile : NULL;
	for (size_t i = 0; i < st->nin; i++)
		out->in[i] = st->in[i];
	out->nin = st->nin;
	return 0;
}
