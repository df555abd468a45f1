/*
 * JSON helpers over cJSON: strict typed field access (a missing or mistyped
 * field is an error, for parsing untrusted JSON fail-closed), making any
 * bytes into a valid UTF-8 string, and one-line printing.
 */
#ifndef CORDON_COMMON_JSON_H
#define CORDON_COMMON_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* Returns a malloc'd NUL-terminated copy of data[0..len) in which every
 * invalid UTF-8 sequence (overlongs, surrogates, > U+10FFFF, truncated) and
 * every NUL byte is replaced by U+FFFD. Caller frees. NULL on ENOMEM. */
char *json_utf8_sanitize(const void *data, size_t len, size_t *outlen);

/* Strict getters: 0, -ENOENT when the key is missing, -EINVAL when it has
 * the wrong type or range. Outputs are untouched on failure. */
int json_get_string(const cJSON *obj, const char *key, const char **out);
int json_get_bool(const cJSON *obj, const char *key, bool *out);
/* Integral numbers only (no fraction), within [min, max]. */
int json_get_int(const cJSON *obj, const char *key, int64_t min, int64_t max,
    int64_t *out);
int json_get_object(const cJSON *obj, const char *key, const cJSON **out);
int json_get_array(const cJSON *obj, const char *key, const cJSON **out);
/* A stream-keep field ("head", "tail" or "both", common/cbuf.h): *out is
 * its static name, or NULL when the key is missing (0 then too); -EINVAL
 * for anything else (*out NULL). */
int json_get_keep(const cJSON *obj, const char *key, const char **out);

/* What json_scan finds in a JSON text without building it (the text is not
 * validated here: cJSON does that when it parses). */
struct json_scan {
	/* A raw NUL byte, or a string whose escapes decode to U+0000 (cJSON
	 * would silently cut that string short there). */
	bool nul;
	/* The name of the top-level member whose name or value holds the
	 * first such NUL, as written (escapes not decoded, at most 63 bytes);
	 * "" when it is not inside a top-level member. */
	char nul_member[64];
	/* An upper bound of the values cJSON would allocate: one more than
	 * the '{', '[' and ',' outside strings. */
	size_t values;
	size_t depth;			/* deepest nesting of '{' and '[' */
};

/* Scans text[0..len) in one pass, allocating nothing, so that a caller can
 * refuse a body before cJSON builds it. Pure. */
void json_scan(const char *text, size_t len, struct json_scan *out);

/* Parses the file at path (at most max bytes). On failure returns a negative
 * errno (-EBADMSG for bad JSON) and writes a one-line reason to err. Caller
 * frees *out with cJSON_Delete. */
int json_parse_file(const char *path, size_t max, cJSON **out, char *err,
    size_t errlen);

/* One-line serialisation with a trailing newline; caller frees. NULL on
 * ENOMEM. */
char *json_print_line(const cJSON *obj);

/* Adds a string made valid UTF-8 from arbitrary bytes; 0 or -ENOMEM. */
int json_add_bytes(cJSON *obj, const char *key, const void *data, size_t len);

#endif
