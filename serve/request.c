/*
 * `POST /v1/runs` bodies (request.h): the strict JSON check, strict base64,
 * and staging of `files` under a fresh temporary directory. Paths follow
 * the same rule as the MCP tool's (mcp_path_safe); contents are bytes.
 */
#include "serve/request.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/json.h"
#include "common/util.h"
#include "mcp/mcp.h"

#define TIMEOUT_MAX_ARG 9007199254740991LL	/* any integer JSON keeps */

static const char *const allowed_keys[] = {
	"code", "lang", "net", "timeout_s", "max_output", "files",
};

static int
b64_value(unsigned char ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	if (ch == '+')
		return 62;
	if (ch == '/')
		return 63;
	return -1;
}

int
serve_base64_decode(const char *s, size_t len, unsigned char **out,
    size_t *outlen)
{
	unsigned char *buf;
	size_t n = 0;

	*out = NULL;
	*outlen = 0;
	if (len % 4 != 0)
		return -EINVAL;
	if ((buf = malloc(len / 4 * 3 + 1)) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < len; i += 4) {
		int v[4], pad = 0;
		bool last = i + 4 == len;

		for (int k = 0; k < 4; k++) {
			unsigned char ch = (unsigned char)s[i + k];

			/* '=' only at the end: "xx==" or "xxx=". */
			if (ch == '=' && last && k >= 2 &&
			    (k == 3 || s[i + 3] == '=')) {
				v[k] = 0;
				pad++;
				continue;
			}
			if (pad > 0 || (v[k] = b64_value(ch)) < 0) {
				free(buf);
				return -EINVAL;
			}
		}
		buf[n++] = (unsigned char)(v[0] << 2 | v[1] >> 4);
		if (pad < 2)
			buf[n++] = (unsigned char)((v[1] & 15) << 4 | v[2] >> 2);
		if (pad < 1)
			buf[n++] = (unsigned char)((v[2] & 3) << 6 | v[3]);
		/* Non-canonical encodings (stray low bits) are refused. */
		if ((pad == 2 && (v[1] & 15) != 0) ||
		    (pad == 1 && (v[2] & 3) != 0)) {
			free(buf);
			return -EINVAL;
		}
	}
	*out = buf;
	*outlen = n;
	return 0;
}

void
serve_req_cleanup(struct serve_req *r)
{
	free(r->code);
	for (size_t i = 0; i < r->nfiles; i++) {
		free(r->files[i].path);
		free(r->files[i].data);
	}
	free(r->files);
	memset(r, 0, sizeof(*r));
}

static int
bad(char *err, size_t errlen, int rc, const char *why)
{
	snprintf(err, errlen, "%s", why);
	return rc;
}

static int
parse_files(const struct config *c, const cJSON *files, struct serve_req *r,
    char *err, size_t errlen)
{
	const cJSON *f, *m;
	const char *path, *b64;
	uint64_t total = 0;
	int n = cJSON_GetArraySize(files), rc;

	if (!cJSON_IsArray(files))
		return bad(err, errlen, -EINVAL, "'files' must be an array");
	if (n > c->limits.in_max_files) {
		snprintf(err, errlen, "'files': at most %lld entries",
		    (long long)c->limits.in_max_files);
		return -EINVAL;
	}
	if (n == 0)
		return 0;
	if ((r->files = calloc((size_t)n, sizeof(*r->files))) == NULL)
		return bad(err, errlen, -ENOMEM, "out of memory");
	cJSON_ArrayForEach(f, files) {
		struct serve_file *sf = &r->files[r->nfiles];

		if (!cJSON_IsObject(f) ||
		    json_get_string(f, "path", &path) < 0 ||
		    json_get_string(f, "content_b64", &b64) < 0)
			return bad(err, errlen, -EINVAL, "each of 'files' must "
			    "be an object with string 'path' and 'content_b64'");
		cJSON_ArrayForEach(m, f)
			if (strcmp(m->string, "path") != 0 &&
			    strcmp(m->string, "content_b64") != 0)
				return bad(err, errlen, -EINVAL, "'files': only "
				    "'path' and 'content_b64' are allowed");
		if (!mcp_path_safe(path))
			return bad(err, errlen, -EINVAL, "'files': unsafe path "
			    "(a relative path of printable ASCII, no '..', '.' "
			    "or empty components)");
		if ((sf->path = strdup(path)) == NULL)
			return bad(err, errlen, -ENOMEM, "out of memory");
		r->nfiles++;
		rc = serve_base64_decode(b64, strlen(b64), &sf->data, &sf->len);
		if (rc < 0)
			return bad(err, errlen, rc, rc == -EINVAL ? "'files': "
			    "content_b64 is not canonical base64" :
			    "out of memory");
		total += sf->len;
		if (total > c->limits.in_max_bytes) {
			snprintf(err, errlen, "'files': more than %llu bytes in "
			    "total", (unsigned long long)c->limits.in_max_bytes);
			return -EFBIG;
		}
	}
	return 0;
}

static int
parse_fields(const struct config *c, const cJSON *root, struct serve_req *r,
    char *err, size_t errlen)
{
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
			    "code, lang, net, timeout_s, max_output, files)",
			    m->string);
			return -EINVAL;
		}
	}
	if ((rc = json_get_string(root, "code", &s)) < 0)
		return bad(err, errlen, -EINVAL, rc == -ENOENT ?
		    "missing field 'code'" : "'code' must be a string");
	r->code_len = strlen(s);
	if (r->code_len > RUNNER_CODE_MAX)
		return bad(err, errlen, -EFBIG, "'code' is too long");
	if ((r->code = strdup(s)) == NULL)
		return bad(err, errlen, -ENOMEM, "out of memory");
	rc = json_get_string(root, "lang", &s);
	if (rc == -EINVAL || (rc == 0 && strcmp(s, "python") != 0))
		return bad(err, errlen, -EINVAL, "'lang' must be \"python\"");
	rc = json_get_string(root, "net", &s);
	if (rc == 0 && (strcmp(s, "none") == 0 || strcmp(s, "proxy") == 0)) {
		r->has_net = true;
		r->net = s[0] == 'p' ? RUNNER_NET_PROXY : RUNNER_NET_NONE;
	} else if (rc != -ENOENT) {
		return bad(err, errlen, -EINVAL,
		    "'net' must be \"none\" or \"proxy\"");
	}
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
	if ((m = cJSON_GetObjectItemCaseSensitive(root, "files")) != NULL)
		return parse_files(c, m, r, err, errlen);
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
	struct stage_file *f;
	int rc;

	memset(st, 0, sizeof(*st));
	if (r->nfiles == 0)
		return 0;
	if ((f = calloc(r->nfiles, sizeof(*f))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < r->nfiles; i++)
		f[i] = (struct stage_file){ r->files[i].path, r->files[i].data,
		    r->files[i].len };
	rc = stage_write(tmp_dir, "cordon-serve", f, r->nfiles, st, err, errlen);
	free(f);
	return rc;
}
