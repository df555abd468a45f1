/*
 * MCP's JSON-RPC 2.0 messages, apart from what they ask (mcp.c): ids
 * (valid, printed exactly), reply and error lines, the whole-message parse
 * that notices U+0000, and what the transport needs before a worker takes
 * a message: its kind and id (mcp_classify), an oversized message's error
 * reply, an error reply for a known id. Pure: no I/O.
 */
#include "mcp/mcp.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/json.h"
#include "mcp/internal.h"

/* True for the bytes of valid UTF-8 without NUL. */
static bool
utf8_valid(const char *s, size_t len)
{
	size_t outlen;
	char *clean = json_utf8_sanitize(s, len, &outlen);
	bool ok = clean != NULL && outlen == len && memcmp(clean, s, len) == 0;

	free(clean);
	return ok;
}

/* MCP ids are strings or integers (never null). */
bool
mcp_id_valid(const cJSON *id)
{
	if (cJSON_IsString(id))
		return utf8_valid(id->valuestring, strlen(id->valuestring));
	if (cJSON_IsNumber(id))
		return isfinite(id->valuedouble) &&
		    floor(id->valuedouble) == id->valuedouble &&
		    fabs(id->valuedouble) <= 9007199254740991.0;
	return false;
}

/* A valid id printed as JSON, exactly: cJSON prints a number of more than
 * 15 digits rounded (%1.15g, when that compares equal within DBL_EPSILON),
 * which would answer 9007199254740991 as 9.00719925474099e+15 and make
 * two ids one. Caller frees; NULL on ENOMEM. */
char *
mcp_id_print(const cJSON *id)
{
	char buf[32], *text, *copy;

	if (cJSON_IsNumber(id)) {
		snprintf(buf, sizeof(buf), "%.0f", id->valuedouble);
		return strdup(buf);
	}
	if ((text = cJSON_PrintUnformatted(id)) == NULL)
		return NULL;
	copy = strdup(text);
	cJSON_free(text);
	return copy;
}

/* One reply line; takes ownership of payload (the result or error object).
 * id may be NULL (null id). NULL on ENOMEM. */
char *
mcp_rpc_reply_line(const cJSON *id, const char *key, cJSON *payload)
{
	cJSON *o = cJSON_CreateObject(), *idc = NULL;
	char *text = NULL, *line = NULL;
	size_t n;

	if (o == NULL || payload == NULL)
		goto done;
	if (id == NULL)
		idc = cJSON_CreateNull();
	else if ((text = mcp_id_print(id)) != NULL)
		idc = cJSON_CreateRaw(text);
	free(text);
	text = NULL;
	if (cJSON_AddStringToObject(o, "jsonrpc", "2.0") == NULL ||
	    !cJSON_AddItemToObject(o, "id", idc)) {
		cJSON_Delete(idc);
		goto done;
	}
	if (!cJSON_AddItemToObject(o, key, payload))
		goto done;
	payload = NULL;
	if ((text = cJSON_PrintUnformatted(o)) == NULL)
		goto done;
	n = strlen(text);
	if ((line = malloc(n + 2)) != NULL) {
		memcpy(line, text, n);
		line[n] = '\n';
		line[n + 1] = '\0';
	}
done:
	cJSON_Delete(payload);
	cJSON_Delete(o);
	cJSON_free(text);
	return line;
}

char *
mcp_rpc_error_line(const cJSON *id, int code, const char *message)
{
	cJSON *e = cJSON_CreateObject();

	if (e != NULL && (cJSON_AddNumberToObject(e, "code", code) == NULL ||
	    cJSON_AddStringToObject(e, "message", message) == NULL)) {
		cJSON_Delete(e);
		e = NULL;
	}
	return mcp_rpc_reply_line(id, "error", e);
}

static const char *
skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
		p++;
	return p;
}

/* Parses exactly one JSON value spanning msg[0..len) (whitespace around it
 * allowed); NULL when that is not what the bytes are. A string escape that
 * decodes to U+0000 (cJSON would cut the string there: "a\u0000x" and
 * "a\u0000y" would both read "a") sets *nul, with *nul_in_id when it is in
 * the top-level id. */
cJSON *
mcp_rpc_parse_whole(const char *msg, size_t len, bool *nul, bool *nul_in_id)
{
	const char *end = NULL;
	struct json_scan sc;
	cJSON *root;

	if (len == 0 || memchr(msg, '\0', len) != NULL)
		return NULL;
	json_scan(msg, len, &sc);
	*nul = sc.nul;
	*nul_in_id = sc.nul && strcmp(sc.nul_member, "id") == 0;
	root = cJSON_ParseWithLengthOpts(msg, len, &end, false);
	if (root != NULL && (end == NULL || skip_ws(end, msg + len) !=
	    msg + len)) {
		cJSON_Delete(root);
		root = NULL;
	}
	return root;
}

/* Finds the top-level "id" among the first members of a cut-short object
 * (clients put it before the large params). NULL when it is not there. */
static cJSON *
peek_id(const char *p, size_t len)
{
	const char *end = p + len, *q = NULL;
	cJSON *key, *val;
	bool is_id;

	p = skip_ws(p, end);
	if (p == end || *p++ != '{')
		return NULL;
	for (;;) {
		p = skip_ws(p, end);
		if (p == end || *p != '"')
			return NULL;
		key = cJSON_ParseWithLengthOpts(p, (size_t)(end - p), &q, false);
		if (key == NULL || q == NULL) {
			cJSON_Delete(key);
			return NULL;
		}
		is_id = cJSON_IsString(key) && strcmp(key->valuestring,
		    "id") == 0;
		cJSON_Delete(key);
		p = skip_ws(q, end);
		if (p == end || *p++ != ':')
			return NULL;
		p = skip_ws(p, end);
		q = NULL;
		val = cJSON_ParseWithLengthOpts(p, (size_t)(end - p), &q, false);
		if (val == NULL || q == NULL) {
			cJSON_Delete(val);
			return NULL;
		}
		if (is_id) {
			if (mcp_id_valid(val))
				return val;
			cJSON_Delete(val);
			return NULL;
		}
		cJSON_Delete(val);
		p = skip_ws(q, end);
		if (p == end || *p++ != ',')
			return NULL;
	}
}

char *
mcp_oversized_reply(const char *prefix, size_t len)
{
	cJSON *id = peek_id(prefix, len);
	char msg[96], *line;

	snprintf(msg, sizeof(msg), "Invalid Request: message larger than %u "
	    "bytes", MCP_MAX_MESSAGE);
	line = mcp_rpc_error_line(id, MCP_INVALID_REQUEST, msg);
	cJSON_Delete(id);
	return line;
}

/* The valid id v printed as JSON into *id (caller frees); -EINVAL when v is
 * absent or not a valid id, -ENOMEM. */
static int
print_id(const cJSON *v, char **id)
{
	if (v == NULL || !mcp_id_valid(v))
		return -EINVAL;
	*id = mcp_id_print(v);
	return *id != NULL ? 0 : -ENOMEM;
}

int
mcp_classify(const char *msg, size_t len, enum mcp_kind *kind, char **id)
{
	const cJSON *method, *params, *v;
	bool nul = false, nul_in_id = false;
	cJSON *root = mcp_rpc_parse_whole(msg, len, &nul, &nul_in_id);
	int rc = -EINVAL;

	*kind = MCP_KIND_OTHER;
	*id = NULL;
	/* A NUL: mcp_handle refuses it (a call) or drops it (a
	 * cancellation, which would otherwise name a cut-short id). */
	if (!cJSON_IsObject(root) || nul)
		goto done;
	method = cJSON_GetObjectItemCaseSensitive(root, "method");
	params = cJSON_GetObjectItemCaseSensitive(root, "params");
	v = cJSON_GetObjectItemCaseSensitive(root, "id");
	if (!cJSON_IsString(method))
		goto done;
	if (strcmp(method->valuestring, "tools/call") == 0) {
		if ((rc = print_id(v, id)) == 0)
			*kind = MCP_KIND_CALL;
	} else if (strcmp(method->valuestring, "notifications/cancelled") == 0 &&
	    v == NULL && cJSON_IsObject(params)) {
		rc = print_id(cJSON_GetObjectItemCaseSensitive(params,
		    "requestId"), id);
		if (rc == 0)
			*kind = MCP_KIND_CANCEL;
	}
done:
	cJSON_Delete(root);
	return rc == -ENOMEM ? rc : 0;
}

char *
mcp_error_reply(const char *id, int code, const char *message)
{
	cJSON *v = id != NULL ? cJSON_Parse(id) : NULL;
	char *line;

	if (id != NULL && v == NULL)
		return NULL;
	line = mcp_rpc_error_line(v, code, message);
	cJSON_Delete(v);
	return line;
}
