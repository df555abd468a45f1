/*
 * JSON helpers (json.h). cJSON stores strings NUL-terminated and does not
 * validate UTF-8, so program output goes through json_utf8_sanitize first:
 * whatever bytes a sandboxed program writes, the result is valid JSON.
 */
#include "common/json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cbuf.h"
#include "common/util.h"

/* Length of the valid UTF-8 sequence at p (1-4), or 0 if invalid. */
static size_t
utf8_seq_len(const unsigned char *p, size_t avail)
{
	unsigned c = p[0];
	size_t n;
	unsigned cp, min;

	if (c < 0x80)
		return c == 0 ? 0 : 1;
	if (c >= 0xC2 && c <= 0xDF) {
		n = 2; cp = c & 0x1F; min = 0x80;
	} else if (c >= 0xE0 && c <= 0xEF) {
		n = 3; cp = c & 0x0F; min = 0x800;
	} else if (c >= 0xF0 && c <= 0xF4) {
		n = 4; cp = c & 0x07; min = 0x10000;
	} else {
		return 0;
	}
	if (avail < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3F);
	}
	if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return n;
}

char *
json_utf8_sanitize(const void *data, size_t len, size_t *outlen)
{
	const unsigned char *p = data;
	size_t i = 0, o = 0;
	char *out;

	/* Worst case every byte becomes the 3-byte U+FFFD. */
	if (len > (SIZE_MAX - 1) / 3)
		return NULL;
	out = malloc(len * 3 + 1);
	if (out == NULL)
		return NULL;
	while (i < len) {
		size_t n = utf8_seq_len(p + i, len - i);
		if (n == 0) {
			out[o++] = (char)0xEF;
			out[o++] = (char)0xBF;
			out[o++] = (char)0xBD;
			i++;
			continue;
		}
		memcpy(out + o, p + i, n);
		o += n;
		i += n;
	}
	out[o] = '\0';
	if (outlen != NULL)
		*outlen = o;
	return out;
}

static const cJSON *
json_field(const cJSON *obj, const char *key)
{
	if (!cJSON_IsObject(obj))
		return NULL;
	return cJSON_GetObjectItemCaseSensitive(obj, key);
}

int
json_get_string(const cJSON *obj, const char *key, const char **out)
{
	const cJSON *v = json_field(obj, key);

	if (v == NULL)
		return -ENOENT;
	if (!cJSON_IsString(v) || v->valuestring == NULL)
		return -EINVAL;
	*out = v->valuestring;
	return 0;
}

int
json_get_bool(const cJSON *obj, const char *key, bool *out)
{
	const cJSON *v = json_field(obj, key);

	if (v == NULL)
		return -ENOENT;
	if (!cJSON_IsBool(v))
		return -EINVAL;
	*out = cJSON_IsTrue(v);
	return 0;
}

int
json_get_keep(const cJSON *obj, const char *key, const char **out)
{
	enum cbuf_keep k;
	const char *s;
	int rc = json_get_string(obj, key, &s);

	*out = NULL;
	if (rc == -ENOENT)
		return 0;
	if (rc < 0 || cbuf_keep_parse(s, &k) < 0)
		return -EINVAL;
	*out = cbuf_keep_name(k);
	return 0;
}

int
json_get_int(const cJSON *obj, const char *key, int64_t min, int64_t max,
    int64_t *out)
{
	const cJSON *v = json_field(obj, key);
	double d;

	if (v == NULL)
		return -ENOENT;
	if (!cJSON_IsNumber(v))
		return -EINVAL;
	d = v->valuedouble;
	if (!isfinite(d) || d != floor(d) || d < (double)min || d > (double)max)
		return -EINVAL;
	*out = (int64_t)d;
	return 0;
}

int
json_get_object(const cJSON *obj, const char *key, const cJSON **out)
{
	const cJSON *v = json_field(obj, key);

	if (v == NULL)
		return -ENOENT;
	if (!cJSON_IsObject(v))
		return -EINVAL;
	*out = v;
	return 0;
}

int
json_get_array(const cJSON *obj, const char *key, const cJSON **out)
{
	const cJSON *v = json_field(obj, key);

	if (v == NULL)
		return -ENOENT;
	if (!cJSON_IsArray(v))
		return -EINVAL;
	*out = v;
	return 0;
}

int
json_parse_file(const char *path, size_t max, cJSON **out, char *err,
    size_t errlen)
{
	char *text = NULL;
	size_t len = 0;
	const char *end = NULL;
	int rc;

	*out = NULL;
	rc = util_read_file(path, max, &text, &len);
	if (rc < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	/* len + 1: cJSON wants the terminating NUL inside the length. */
	*out = cJSON_ParseWithLengthOpts(text, len + 1, &end, 1);
	if (*out == NULL) {
		size_t off = end != NULL && end >= text ? (size_t)(end - text) : 0;
		size_t line = 1;
		for (size_t i = 0; i < off && i < len; i++)
			if (text[i] == '\n')
				line++;
		snprintf(err, errlen, "%s:%zu: invalid JSON", path, line);
		free(text);
		return -EBADMSG;
	}
	free(text);
	return 0;
}

char *
json_print_line(const cJSON *obj)
{
	char *s = cJSON_PrintUnformatted(obj), *line;
	size_t n;

	if (s == NULL)
		return NULL;
	n = strlen(s);
	line = realloc(s, n + 2);
	if (line == NULL) {
		free(s);
		return NULL;
	}
	line[n] = '\n';
	line[n + 1] = '\0';
	return line;
}

int
json_add_bytes(cJSON *obj, const char *key, const void *data, size_t len)
{
	char *s = json_utf8_sanitize(data, len, NULL);
	cJSON *item;

	if (s == NULL)
		return -ENOMEM;
	item = cJSON_AddStringToObject(obj, key, s);
	free(s);
	return item != NULL ? 0 : -ENOMEM;
}

/* True when the escape at p[0..avail) ("\u0000", any case of digits)
 * decodes to U+0000. */
static bool
escape_is_nul(const char *p, size_t avail)
{
	if (avail < 6 || p[1] != 'u')
		return false;
	for (size_t i = 2; i < 6; i++)
		if (util_hexval(p[i]) != 0)
			return false;
	return true;
}

void
json_scan(const char *text, size_t len, struct json_scan *out)
{
	/* At depth 1 inside an object: the member whose name was read last
	 * (a string at depth 1 that a ':' follows). */
	const char *str = NULL, *member = NULL;
	size_t member_len = 0, depth = 0, i = 0;
	bool in_obj1 = false, nul_here;

	memset(out, 0, sizeof(*out));
	out->values = 1;
	while (i < len) {
		char c = text[i];

		if (c == '\0') {
			nul_here = true;
			i++;
		} else if (c == '"') {
			str = text + i + 1;
			nul_here = false;
			for (i++; i < len && text[i] != '"'; i++) {
				if (text[i] == '\0')
					nul_here = true;
				if (text[i] != '\\')
					continue;
				if (escape_is_nul(text + i, len - i))
					nul_here = true;
				i++;	/* the escaped character */
			}
			/* A name at depth 1: remember it for the value. */
			if (depth == 1 && in_obj1) {
				size_t j = i + 1;

				while (j < len && (text[j] == ' ' ||
				    text[j] == '\t' || text[j] == '\r' ||
				    text[j] == '\n'))
					j++;
				if (j < len && text[j] == ':') {
					member = str;
					member_len = (size_t)(text + i - str);
				}
			}
			i++;
		} else {
			nul_here = false;
			if (c == '{' || c == '[') {
				if (++depth > out->depth)
					out->depth = depth;
				if (depth == 1)
					in_obj1 = c == '{';
				out->values++;
			} else if (c == '}' || c == ']') {
				if (depth > 0 && --depth == 0)
					member = NULL;
			} else if (c == ',') {
				out->values++;
			}
			i++;
		}
		if (nul_here && !out->nul) {
			out->nul = true;
			if (member != NULL && depth >= 1)
				snprintf(out->nul_member, sizeof(out->nul_member),
				    "%.*s", (int)(member_len < 63 ? member_len :
				    63), member);
		}
	}
}
