/*
 * Control protocol lines (ctl.h): strict parsing of requests, the same
 * rules when formatting them, and the answer builders. cJSON does the JSON
 * grammar; a lexical pass over the raw text first refuses what cJSON would
 * let through silently (control bytes, "\u0000" cutting a string short,
 * numbers with a sign, fraction or exponent).
 */
#include "proxy/ctl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

/* The fields of every request, as bits of a set. */
enum ctl_field {
	F_OP, F_RUN, F_ADDR, F_POLICY, F_TOKEN, F_DEADLINE, F_MAX_CONNS,
	F_BYTES_UP, F_BYTES_DOWN, F_COUNT
};
#define FB(f)	(1u << (f))

static const char *const ctl_field_names[F_COUNT] = {
	"op", "run", "addr", "policy", "token", "deadline_ms", "max_conns",
	"bytes_up", "bytes_down",
};

static const struct ctl_op_spec {
	const char *name;
	enum proxy_ctl_op op;
	unsigned required;	/* besides op */
	unsigned optional;
} ctl_ops[] = {
	{ "register", PROXY_CTL_REGISTER,
	  FB(F_RUN) | FB(F_ADDR) | FB(F_POLICY) | FB(F_TOKEN) | FB(F_DEADLINE),
	  FB(F_MAX_CONNS) | FB(F_BYTES_UP) | FB(F_BYTES_DOWN) },
	{ "unregister", PROXY_CTL_UNREGISTER, FB(F_RUN), 0 },
	{ "report", PROXY_CTL_REPORT, FB(F_RUN), 0 },
	{ "policies", PROXY_CTL_POLICIES, 0, 0 },
	{ "ping", PROXY_CTL_PING, 0, 0 },
	{ "reload", PROXY_CTL_RELOAD, 0, 0 },
	{ "policy", PROXY_CTL_POLICY, FB(F_RUN) | FB(F_POLICY), 0 },
};
#define CTL_NOPS (sizeof(ctl_ops) / sizeof(ctl_ops[0]))

static const struct ctl_op_spec *
ctl_op_spec(enum proxy_ctl_op op)
{
	for (size_t i = 0; i < CTL_NOPS; i++)
		if (ctl_ops[i].op == op)
			return &ctl_ops[i];
	return NULL;
}

const char *
proxy_ctl_op_name(enum proxy_ctl_op op)
{
	const struct ctl_op_spec *spec = ctl_op_spec(op);

	return spec != NULL ? spec->name : NULL;
}

void
proxy_ctl_req_reset(struct proxy_ctl_req *req)
{
	memset(req, 0, sizeof(*req));
	req->op = PROXY_CTL_NONE;
	req->max_conns = PROXY_CTL_UNSET;
	req->bytes_up = PROXY_CTL_UNSET;
	req->bytes_down = PROXY_CTL_UNSET;
}

static void ctl_err(char *, size_t, const char *, ...)
    __attribute__((format(printf, 3, 4)));

static void
ctl_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static bool
ctl_policy_valid(const char *s, size_t len)
{
	if (len == 0 || len > PROXY_CTL_POLICY_MAX || s[0] == '.')
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

/* Parses an IP literal into ss and its canonical text; 0 or -EINVAL. */
static int
ctl_addr_parse(const char *s, struct sockaddr_storage *ss, char *text,
    size_t textlen)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	/* All of text is written, so requests compare with memcmp. */
	memset(ss, 0, sizeof(*ss));
	memset(text, 0, textlen);
	if (strnlen(s, INET6_ADDRSTRLEN) >= INET6_ADDRSTRLEN)
		return -EINVAL;
	if (inet_pton(AF_INET, s, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		if (inet_ntop(AF_INET, &sin->sin_addr, text,
		    (socklen_t)textlen) == NULL)
			return -EINVAL;
		return 0;
	}
	if (inet_pton(AF_INET6, s, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		if (inet_ntop(AF_INET6, &sin6->sin6_addr, text,
		    (socklen_t)textlen) == NULL)
			return -EINVAL;
		return 0;
	}
	memset(ss, 0, sizeof(*ss));
	return -EINVAL;
}

/*
 * The lexical pass over the raw line. Returns 0, -EBADMSG for a control
 * byte (HTAB allowed outside strings) or a "\u0000" escape, or -EINVAL
 * when a number has a sign, fraction or exponent (outside strings the
 * only other letters are those of true/false/null, and an 'e' there never
 * follows a digit).
 */
static int
ctl_lex(const char *s, size_t n, char *err, size_t errlen)
{
	bool in_str = false, escaped = false;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 && (c != '\t' || in_str)) {
			ctl_err(err, errlen, "control byte 0x%02x at %zu", c, i);
			return -EBADMSG;
		}
		if (escaped) {
			escaped = false;
			if (c == 'u' && n - i > 4 &&
			    memcmp(s + i + 1, "0000", 4) == 0) {
				ctl_err(err, errlen,
				    "\\u0000 in a string at %zu", i - 1);
				return -EBADMSG;
			}
			continue;
		}
		if (in_str) {
			if (c == '"')
				in_str = false;
			else if (c == '\\')
				escaped = true;
			continue;
		}
		if (c == '"') {
			in_str = true;
		} else if (c == '-' || c == '+' || c == '.' ||
		    ((c == 'e' || c == 'E') && i > 0 &&
		    s[i - 1] >= '0' && s[i - 1] <= '9')) {
			ctl_err(err, errlen, "numbers must be plain "
			    "non-negative integers (at %zu)", i);
			return -EINVAL;
		}
	}
	return 0;
}

/* Writes the key quoted, or "(not printable)" for a key that is not
 * short printable ASCII. */
static void
ctl_key_text(const char *key, char *out, size_t outlen)
{
	size_t n = strnlen(key, 33);
	bool printable = n > 0 && n <= 32;

	for (size_t i = 0; i < n && printable; i++)
		printable = key[i] >= 0x20 && key[i] <= 0x7e &&
		    key[i] != '"' && key[i] != '\\';
	if (printable)
		snprintf(out, outlen, "\"%s\"", key);
	else
		snprintf(out, outlen, "(not printable)");
}

/* First pass: every member is a known field given once; fills items. */
static int
ctl_collect(const cJSON *root, const cJSON *items[F_COUNT], unsigned *seen,
    char *err, size_t errlen)
{
	const cJSON *c;
	char what[48];

	*seen = 0;
	cJSON_ArrayForEach(c, root) {
		int f;

		for (f = 0; f < F_COUNT; f++)
			if (strcmp(c->string, ctl_field_names[f]) == 0)
				break;
		if (f == F_COUNT) {
			ctl_key_text(c->string, what, sizeof(what));
			ctl_err(err, errlen, "unknown field %s", what);
			return -EINVAL;
		}
		if (*seen & FB(f)) {
			ctl_err(err, errlen, "duplicate field \"%s\"",
			    ctl_field_names[f]);
			return -EINVAL;
		}
		*seen |= FB(f);
		items[f] = c;
	}
	return 0;
}

/* Copies string field f into dst (dstlen bytes) after checking it with
 * valid(); 0 or -EINVAL. */
static int
ctl_get_str(const cJSON *item, enum ctl_field f,
    bool (*valid)(const char *, size_t), char *dst, size_t dstlen,
    char *err, size_t errlen)
{
	size_t n;

	if (!cJSON_IsString(item) || item->valuestring == NULL) {
		ctl_err(err, errlen, "%s: must be a string",
		    ctl_field_names[f]);
		return -EINVAL;
	}
	n = strlen(item->valuestring);
	if (n >= dstlen || !valid(item->valuestring, n)) {
		ctl_err(err, errlen, "%s: invalid value", ctl_field_names[f]);
		return -EINVAL;
	}
	memcpy(dst, item->valuestring, n + 1);
	return 0;
}

static int
ctl_get_num(const cJSON *item, enum ctl_field f, int64_t min, int64_t max,
    int64_t *out, char *err, size_t errlen)
{
	double d;

	if (!cJSON_IsNumber(item)) {
		ctl_err(err, errlen, "%s: must be a number",
		    ctl_field_names[f]);
		return -EINVAL;
	}
	d = item->valuedouble;
	if (!isfinite(d) || d != floor(d) || d < (double)min ||
	    d > (double)max) {
		ctl_err(err, errlen, "%s: must be an integer in %" PRId64
		    "..%" PRId64, ctl_field_names[f], min, max);
		return -EINVAL;
	}
	*out = (int64_t)d;
	return 0;
}

static bool
ctl_addr_valid(const char *s, size_t len)
{
	struct sockaddr_storage ss;
	char text[INET6_ADDRSTRLEN];

	(void)len;
	return ctl_addr_parse(s, &ss, text, sizeof(text)) == 0;
}

/* The register fields (all present and allowed, checked by the caller). */
static int
ctl_register_fields(const cJSON *items[F_COUNT], unsigned seen,
    struct proxy_ctl_req *out, char *err, size_t errlen)
{
	int rc;

	if ((rc = ctl_get_str(items[F_ADDR], F_ADDR, ctl_addr_valid,
	    out->addr_text, sizeof(out->addr_text), err, errlen)) < 0 ||
	    (rc = ctl_get_str(items[F_POLICY], F_POLICY, ctl_policy_valid,
	    out->policy, sizeof(out->policy), err, errlen)) < 0 ||
	    (rc = ctl_get_str(items[F_TOKEN], F_TOKEN, proxy_cred_token_valid,
	    out->token, sizeof(out->token), err, errlen)) < 0 ||
	    (rc = ctl_get_num(items[F_DEADLINE], F_DEADLINE, 1,
	    PROXY_CTL_NUM_MAX, &out->deadline_ms, err, errlen)) < 0)
		return rc;
	/* Canonical text and the sockaddr, from the checked literal. */
	if (ctl_addr_parse(items[F_ADDR]->valuestring, &out->addr,
	    out->addr_text, sizeof(out->addr_text)) < 0)
		return -EINVAL;
	if ((seen & FB(F_MAX_CONNS)) &&
	    (rc = ctl_get_num(items[F_MAX_CONNS], F_MAX_CONNS, 1,
	    PROXY_CTL_MAX_CONNS_MAX, &out->max_conns, err, errlen)) < 0)
		return rc;
	if ((seen & FB(F_BYTES_UP)) &&
	    (rc = ctl_get_num(items[F_BYTES_UP], F_BYTES_UP, 0,
	    PROXY_CTL_NUM_MAX, &out->bytes_up, err, errlen)) < 0)
		return rc;
	if ((seen & FB(F_BYTES_DOWN)) &&
	    (rc = ctl_get_num(items[F_BYTES_DOWN], F_BYTES_DOWN, 0,
	    PROXY_CTL_NUM_MAX, &out->bytes_down, err, errlen)) < 0)
		return rc;
	return 0;
}

static int
ctl_parse_obj(const cJSON *root, struct proxy_ctl_req *out, char *err,
    size_t errlen)
{
	const cJSON *items[F_COUNT] = { 0 };
	const struct ctl_op_spec *spec = NULL;
	unsigned seen, extra, missing;
	int rc;

	if (!cJSON_IsObject(root)) {
		ctl_err(err, errlen, "not a JSON object");
		return -EINVAL;
	}
	if ((rc = ctl_collect(root, items, &seen, err, errlen)) < 0)
		return rc;
	if (!(seen & FB(F_OP))) {
		ctl_err(err, errlen, "missing field \"op\"");
		return -EINVAL;
	}
	if (!cJSON_IsString(items[F_OP]) || items[F_OP]->valuestring == NULL) {
		ctl_err(err, errlen, "op: must be a string");
		return -EINVAL;
	}
	for (size_t i = 0; i < CTL_NOPS && spec == NULL; i++)
		if (strcmp(items[F_OP]->valuestring, ctl_ops[i].name) == 0)
			spec = &ctl_ops[i];
	if (spec == NULL) {
		ctl_err(err, errlen, "unknown op");
		return -EINVAL;
	}
	extra = seen & ~(FB(F_OP) | spec->required | spec->optional);
	missing = spec->required & ~seen;
	for (int f = 0; f < F_COUNT; f++) {
		if (extra & FB(f)) {
			ctl_err(err, errlen, "unknown field \"%s\" for op %s",
			    ctl_field_names[f], spec->name);
			return -EINVAL;
		}
		if (missing & FB(f)) {
			ctl_err(err, errlen, "missing field \"%s\"",
			    ctl_field_names[f]);
			return -EINVAL;
		}
	}
	out->op = spec->op;
	if ((seen & FB(F_RUN)) &&
	    (rc = ctl_get_str(items[F_RUN], F_RUN, proxy_cred_run_id_valid,
	    out->run, sizeof(out->run), err, errlen)) < 0)
		return rc;
	if (spec->op == PROXY_CTL_REGISTER)
		return ctl_register_fields(items, seen, out, err, errlen);
	if (spec->op == PROXY_CTL_POLICY)
		return ctl_get_str(items[F_POLICY], F_POLICY, ctl_policy_valid,
		    out->policy, sizeof(out->policy), err, errlen);
	return 0;
}

int
proxy_ctl_parse(const char *line, size_t len, struct proxy_ctl_req *out,
    char *err, size_t errlen)
{
	char buf[PROXY_CTL_LINE_MAX + 1];
	const char *end = NULL;
	cJSON *root;
	int rc;

	proxy_ctl_req_reset(out);
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (line == NULL || len > PROXY_CTL_LINE_MAX) {
		ctl_err(err, errlen, "line longer than %d bytes",
		    PROXY_CTL_LINE_MAX);
		return -EMSGSIZE;
	}
	if (len > 0 && line[len - 1] == '\n')
		len--;
	if ((rc = ctl_lex(line, len, err, errlen)) < 0)
		return rc;
	memcpy(buf, line, len);
	buf[len] = '\0';
	/* len + 1: cJSON wants the NUL inside the length to check that
	 * nothing follows the value. */
	root = cJSON_ParseWithLengthOpts(buf, len + 1, &end, 1);
	if (root == NULL) {
		/* cJSON gives no reason; a failed malloc looks the same. */
		ctl_err(err, errlen, "invalid JSON");
		return -EBADMSG;
	}
	rc = ctl_parse_obj(root, out, err, errlen);
	cJSON_Delete(root);
	if (rc < 0)
		proxy_ctl_req_reset(out);
	return rc;
}

/* Adds an integer as raw digits: cJSON would print 1e15 as "1e+15", which
 * proxy_ctl_parse refuses. */
static bool
ctl_add_int(cJSON *obj, const char *key, int64_t v)
{
	char num[24];

	snprintf(num, sizeof(num), "%" PRId64, v);
	return cJSON_AddRawToObject(obj, key, num) != NULL;
}

/* Checks req's fields by the parse rules; 0 or -EINVAL. */
static int
ctl_format_check(const struct proxy_ctl_req *req, char *addr, size_t addrlen)
{
	struct sockaddr_storage ss;
	size_t n;

	if (req->op == PROXY_CTL_POLICIES || req->op == PROXY_CTL_PING ||
	    req->op == PROXY_CTL_RELOAD)
		return 0;
	n = strnlen(req->run, sizeof(req->run));
	if (n == sizeof(req->run) || !proxy_cred_run_id_valid(req->run, n))
		return -EINVAL;
	if (req->op == PROXY_CTL_POLICY) {
		n = strnlen(req->policy, sizeof(req->policy));
		return n == sizeof(req->policy) ||
		    !ctl_policy_valid(req->policy, n) ? -EINVAL : 0;
	}
	if (req->op != PROXY_CTL_REGISTER)
		return 0;
	if (strnlen(req->addr_text, sizeof(req->addr_text)) ==
	    sizeof(req->addr_text) ||
	    ctl_addr_parse(req->addr_text, &ss, addr, addrlen) < 0)
		return -EINVAL;
	n = strnlen(req->policy, sizeof(req->policy));
	if (n == sizeof(req->policy) || !ctl_policy_valid(req->policy, n))
		return -EINVAL;
	n = strnlen(req->token, sizeof(req->token));
	if (n == sizeof(req->token) || !proxy_cred_token_valid(req->token, n))
		return -EINVAL;
	if (req->deadline_ms < 1 || req->deadline_ms > PROXY_CTL_NUM_MAX)
		return -EINVAL;
	if (req->max_conns != PROXY_CTL_UNSET &&
	    (req->max_conns < 1 || req->max_conns > PROXY_CTL_MAX_CONNS_MAX))
		return -EINVAL;
	if ((req->bytes_up != PROXY_CTL_UNSET &&
	    (req->bytes_up < 0 || req->bytes_up > PROXY_CTL_NUM_MAX)) ||
	    (req->bytes_down != PROXY_CTL_UNSET &&
	    (req->bytes_down < 0 || req->bytes_down > PROXY_CTL_NUM_MAX)))
		return -EINVAL;
	return 0;
}

static bool
ctl_format_fields(cJSON *o, const struct proxy_ctl_req *req, const char *addr)
{
	if (cJSON_AddStringToObject(o, "op", proxy_ctl_op_name(req->op)) ==
	    NULL)
		return false;
	if (req->op == PROXY_CTL_POLICIES || req->op == PROXY_CTL_PING ||
	    req->op == PROXY_CTL_RELOAD)
		return true;
	if (cJSON_AddStringToObject(o, "run", req->run) == NULL)
		return false;
	if (req->op == PROXY_CTL_POLICY)
		return cJSON_AddStringToObject(o, "policy", req->policy) != NULL;
	if (req->op != PROXY_CTL_REGISTER)
		return true;
	if (cJSON_AddStringToObject(o, "addr", addr) == NULL ||
	    cJSON_AddStringToObject(o, "policy", req->policy) == NULL ||
	    cJSON_AddStringToObject(o, "token", req->token) == NULL ||
	    !ctl_add_int(o, "deadline_ms", req->deadline_ms))
		return false;
	if (req->max_conns != PROXY_CTL_UNSET &&
	    !ctl_add_int(o, "max_conns", req->max_conns))
		return false;
	if (req->bytes_up != PROXY_CTL_UNSET &&
	    !ctl_add_int(o, "bytes_up", req->bytes_up))
		return false;
	if (req->bytes_down != PROXY_CTL_UNSET &&
	    !ctl_add_int(o, "bytes_down", req->bytes_down))
		return false;
	return true;
}

char *
proxy_ctl_format(const struct proxy_ctl_req *req)
{
	char addr[INET6_ADDRSTRLEN] = "";
	cJSON *o;
	char *line;

	if (req == NULL || proxy_ctl_op_name(req->op) == NULL ||
	    ctl_format_check(req, addr, sizeof(addr)) < 0) {
		errno = EINVAL;
		return NULL;
	}
	o = cJSON_CreateObject();
	if (o == NULL || !ctl_format_fields(o, req, addr)) {
		cJSON_Delete(o);
		errno = ENOMEM;
		return NULL;
	}
	line = json_print_line(o);
	cJSON_Delete(o);
	if (line == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	if (strlen(line) > PROXY_CTL_LINE_MAX) {
		free(line);
		errno = EINVAL;
		return NULL;
	}
	return line;
}

char *
proxy_ctl_ok(cJSON *payload)
{
	cJSON *o = NULL, *c;
	char *line = NULL;
	int err = ENOMEM;

	if (payload != NULL && (!cJSON_IsObject(payload) ||
	    cJSON_GetObjectItemCaseSensitive(payload, "ok") != NULL ||
	    cJSON_GetObjectItemCaseSensitive(payload, "error") != NULL)) {
		err = EINVAL;
		goto out;
	}
	if ((o = cJSON_CreateObject()) == NULL ||
	    cJSON_AddTrueToObject(o, "ok") == NULL)
		goto out;
	while (payload != NULL && (c = payload->child) != NULL) {
		cJSON_DetachItemViaPointer(payload, c);
		/* The key is copied before the old one is freed. */
		if (!cJSON_AddItemToObject(o, c->string, c)) {
			cJSON_Delete(c);
			goto out;
		}
	}
	line = json_print_line(o);
out:
	cJSON_Delete(payload);
	cJSON_Delete(o);
	if (line == NULL)
		errno = err;
	return line;
}

char *
proxy_ctl_error(const char *msg)
{
	cJSON *o;
	char *line = NULL;

	if (msg == NULL)
		msg = "error";
	o = cJSON_CreateObject();
	if (o != NULL && cJSON_AddFalseToObject(o, "ok") != NULL &&
	    json_add_bytes(o, "error", msg, strlen(msg)) == 0)
		line = json_print_line(o);
	cJSON_Delete(o);
	if (line == NULL)
		errno = ENOMEM;
	return line;
}
