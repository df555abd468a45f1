/*
 * Payloads of the parent-child messages (psmsg.h). Decoders are strict:
 * one JSON object, exactly the members the message has, each once and of
 * its type, strings bounded and NUL-free, hosts valid by the one host
 * parser, numbers whole and in range. The parent reads only these from
 * the network child, so a compromised child gets nothing out of a
 * malformed message but its refusal.
 */
#include "proxy/psmsg.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "allowlist/allowlist.h"

/* One JSON object from data[0..len), or NULL. cJSON needs a terminated
 * buffer; the copy also stops a NUL inside from ending the text early. */
static cJSON *
ps_parse(const void *data, size_t len, size_t max)
{
	const char *end = NULL;
	cJSON *o;
	char *buf;

	if (len == 0 || len > max || memchr(data, '\0', len) != NULL ||
	    (buf = malloc(len + 1)) == NULL)
		return NULL;
	memcpy(buf, data, len);
	buf[len] = '\0';
	o = cJSON_ParseWithLengthOpts(buf, len + 1, &end, 1);
	free(buf);
	if (o != NULL && !cJSON_IsObject(o)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* True when o's members are exactly names[0..n), each once. */
static bool
ps_members(const cJSON *o, const char *const *names, size_t n)
{
	unsigned seen = 0;
	const cJSON *m;
	size_t i;

	cJSON_ArrayForEach(m, o) {
		if (m->string == NULL)
			return false;
		for (i = 0; i < n; i++)
			if (strcmp(m->string, names[i]) == 0)
				break;
		if (i == n || (seen & (1u << i)))
			return false;
		seen |= 1u << i;
	}
	return seen == (1u << n) - 1;
}

/* A string member of 1..max bytes (no NUL: cJSON's strings end at one). */
static bool
ps_str(const cJSON *o, const char *name, char *out, size_t max)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
	size_t n;

	if (!cJSON_IsString(v) || v->valuestring == NULL)
		return false;
	n = strlen(v->valuestring);
	if (n == 0 || n > max)
		return false;
	memcpy(out, v->valuestring, n + 1);
	return true;
}

/* A whole number member in lo..hi. */
static bool
ps_num(const cJSON *o, const char *name, double lo, double hi, double *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
	    v->valuedouble < lo || v->valuedouble > hi ||
	    floor(v->valuedouble) != v->valuedouble)
		return false;
	*out = v->valuedouble;
	return true;
}

/* host is what the parser normalises it to (so the parent judges the
 * very string the child will use). */
static bool
ps_host(const char *host, bool *is_ip)
{
	struct allowlist_host h;

	if (allowlist_host_parse(host, &h) != 0 || strcmp(h.text, host) != 0)
		return false;
	if (is_ip != NULL)
		*is_ip = h.family != 0;
	return true;
}

static const char b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *
ps_b64(const unsigned char *p, size_t n)
{
	char *out = malloc(4 * ((n + 2) / 3) + 1);
	size_t o = 0;

	if (out == NULL)
		return NULL;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ?
		    (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
		out[o++] = b64[v >> 18 & 63];
		out[o++] = b64[v >> 12 & 63];
		out[o++] = i + 1 < n ? b64[v >> 6 & 63] : '=';
		out[o++] = i + 2 < n ? b64[v & 63] : '=';
	}
	out[o] = '\0';
	return out;
}

/* Strict base64 (padded, no whitespace) into out; its length or -1. */
static long
ps_unb64(const char *s, unsigned char *out, size_t max)
{
	size_t n = strlen(s), o = 0;

	if (n == 0 || n % 4 != 0)
		return -1;
	for (size_t i = 0; i < n; i += 4) {
		uint32_t v = 0;
		int pad = 0;
		for (int k = 0; k < 4; k++) {
			const char *c = s[i + k] == '=' ? NULL :
			    strchr(b64, s[i + k]);
			if (s[i + k] == '=' && i + 4 == n && k >= 2 &&
			    (k == 3 || s[i + 3] == '=')) {
				pad++;
				v <<= 6;
				continue;
			}
			if (c == NULL || s[i + k] == '\0' || pad > 0)
				return -1;
			v = v << 6 | (uint32_t)(c - b64);
		}
		for (int k = 0; k < 3 - pad; k++) {
			if (o >= max)
				return -1;
			out[o++] = (unsigned char)(v >> (16 - 8 * k));
		}
	}
	return (long)o;
}

char *
proxy_psmsg_leaf_req_encode(const struct proxy_psmsg_leaf_req *r)
{
	cJSON *o = cJSON_CreateObject();
	char *key = ps_b64(r->key, r->keylen), *text = NULL;

	if (o != NULL && key != NULL && r->keylen > 0 &&
	    r->keylen <= PSMSG_KEY_MAX && r->port > 0 &&
	    cJSON_AddStringToObject(o, "host", r->host) != NULL &&
	    cJSON_AddBoolToObject(o, "ip", r->is_ip) != NULL &&
	    cJSON_AddNumberToObject(o, "port", r->port) != NULL &&
	    cJSON_AddStringToObject(o, "key", key) != NULL)
		text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	free(key);
	return text;
}

int
proxy_psmsg_leaf_req_decode(const void *data, size_t len,
    struct proxy_psmsg_leaf_req *out)
{
	static const char *const names[] = { "host", "ip", "port", "key" };
	char key[4 * ((PSMSG_KEY_MAX + 2) / 3) + 1];
	const cJSON *ip;
	cJSON *o = ps_parse(data, len, 2048);
	bool is_ip;
	double port;
	long n;
	int rc = -EINVAL;

	memset(out, 0, sizeof(*out));
	if (o == NULL || !ps_members(o, names, 4) ||
	    !ps_str(o, "host", out->host, HOST_NAME_MAXLEN) ||
	    !ps_host(out->host, &is_ip) ||
	    !cJSON_IsBool(ip = cJSON_GetObjectItemCaseSensitive(o, "ip")) ||
	    cJSON_IsTrue(ip) != is_ip ||
	    !ps_num(o, "port", 1, 65535, &port) ||
	    !ps_str(o, "key", key, sizeof(key) - 1) ||
	    (n = ps_unb64(key, out->key, PSMSG_KEY_MAX)) <= 0)
		goto out;
	out->is_ip = is_ip;
	out->port = (uint16_t)port;
	out->keylen = (size_t)n;
	rc = 0;
out:
	cJSON_Delete(o);
	if (rc != 0)
		memset(out, 0, sizeof(*out));
	return rc;
}

char *
proxy_psmsg_secret_req_encode(const struct proxy_psmsg_secret_req *r)
{
	cJSON *o = cJSON_CreateObject();
	char *text = NULL;

	if (o != NULL && r->port > 0 &&
	    cJSON_AddStringToObject(o, "policy", r->policy) != NULL &&
	    cJSON_AddStringToObject(o, "host", r->host) != NULL &&
	    cJSON_AddNumberToObject(o, "port", r->port) != NULL &&
	    cJSON_AddStringToObject(o, "name", r->name) != NULL)
		text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return text;
}

int
proxy_psmsg_secret_req_decode(const void *data, size_t len,
    struct proxy_psmsg_secret_req *out)
{
	static const char *const names[] = { "policy", "host", "port",
	    "name" };
	cJSON *o = ps_parse(data, len, 1024);
	double port;
	int rc = -EINVAL;

	memset(out, 0, sizeof(*out));
	if (o == NULL || !ps_members(o, names, 4) ||
	    !ps_str(o, "policy", out->policy, PROXY_CTL_POLICY_MAX) ||
	    !ps_str(o, "host", out->host, HOST_NAME_MAXLEN) ||
	    !ps_host(out->host, NULL) ||
	    !ps_num(o, "port", 1, 65535, &port) ||
	    !ps_str(o, "name", out->name, PSMSG_SECRET_NAME_MAX))
		goto out;
	out->port = (uint16_t)port;
	rc = 0;
out:
	cJSON_Delete(o);
	if (rc != 0)
		memset(out, 0, sizeof(*out));
	return rc;
}

char *
proxy_psmsg_gen_ack_encode(uint64_t gen)
{
	char buf[48];

	if (gen == 0 || gen > (uint64_t)PROXY_CTL_NUM_MAX)
		return NULL;
	snprintf(buf, sizeof(buf), "{\"gen\":%llu}", (unsigned long long)gen);
	return strdup(buf);
}

int
proxy_psmsg_gen_ack_decode(const void *data, size_t len, uint64_t *gen)
{
	static const char *const names[] = { "gen" };
	cJSON *o = ps_parse(data, len, 64);
	double v;
	int rc = -EINVAL;

	*gen = 0;
	if (o != NULL && ps_members(o, names, 1) &&
	    ps_num(o, "gen", 1, (double)PROXY_CTL_NUM_MAX, &v)) {
		*gen = (uint64_t)v;
		rc = 0;
	}
	cJSON_Delete(o);
	return rc;
}

/* One egress entry as proxy/egress.c writes it (the runner reads each
 * member strictly; here only the form is checked, so the parent passes
 * on nothing but such entries). */
static bool
ps_egress_entry(const cJSON *e)
{
	static const char *const names[] = { "host", "port", "decision",
	    "reason", "status", "count", "bytes_up", "bytes_down", "via" };
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(e, "decision");
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(e, "reason");
	char s[300];
	double v;

	return cJSON_IsObject(e) && (ps_members(e, names, 8) ||
	    (ps_members(e, names, 9) && ps_str(e, "via", s, 15))) &&
	    ps_str(e, "host", s, 256) && ps_num(e, "port", 0, 65535, &v) &&
	    cJSON_IsString(d) && strlen(d->valuestring) < 16 &&
	    cJSON_IsString(r) && strlen(r->valuestring) < 128 &&
	    ps_num(e, "status", -1, 999, &v) &&
	    ps_num(e, "count", 0, (double)PROXY_CTL_NUM_MAX, &v) &&
	    ps_num(e, "bytes_up", 0, (double)PROXY_CTL_NUM_MAX, &v) &&
	    ps_num(e, "bytes_down", 0, (double)PROXY_CTL_NUM_MAX, &v);
}

int
proxy_psmsg_report_check(const void *data, size_t len, bool *ok)
{
	static const char *const bad[] = { "ok", "error" };
	static const char *const good[] = { "ok", "egress", "allowed",
	    "denied", "errors" };
	static const char *const cut[] = { "ok", "egress", "allowed",
	    "denied", "errors", "egress_truncated", "egress_dropped" };
	cJSON *o = ps_parse(data, len, PSMSG_REPORT_MAX);
	const cJSON *v, *e;
	char s[512];
	double n;
	int rc = -EINVAL;

	*ok = false;
	if (o == NULL || !cJSON_IsBool(v = cJSON_GetObjectItemCaseSensitive(o,
	    "ok")))
		goto out;
	if (cJSON_IsFalse(v)) {
		if (ps_members(o, bad, 2) && ps_str(o, "error", s, sizeof(s) -
		    1))
			rc = 0;
		goto out;
	}
	if (!ps_members(o, good, 5) && !(ps_members(o, cut, 7) &&
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o,
	    "egress_truncated")) && ps_num(o, "egress_dropped", 0,
	    (double)PROXY_CTL_NUM_MAX, &n)))
		goto out;
	if (!ps_num(o, "allowed", 0, (double)PROXY_CTL_NUM_MAX, &n) ||
	    !ps_num(o, "denied", 0, (double)PROXY_CTL_NUM_MAX, &n) ||
	    !ps_num(o, "errors", 0, (double)PROXY_CTL_NUM_MAX, &n) ||
	    !cJSON_IsArray(v = cJSON_GetObjectItemCaseSensitive(o, "egress")))
		goto out;
	cJSON_ArrayForEach(e, v)
		if (!ps_egress_entry(e))
			goto out;
	*ok = true;
	rc = 0;
out:
	cJSON_Delete(o);
	return rc;
}
