/*
 * What the proxy asks of an inspected entry for every request inside the
 * tunnel: allowlist_inspect_check (method, canonical path), the
 * canonical-path rules that patterns (options.c) and requests share, and
 * the table of override headers an entry bounding methods or paths
 * refuses. Apart from options.c, which parses and stores the options:
 * this runs per request, on untrusted input. Pure: no I/O, no allocation.
 */
#include <string.h>
#include <strings.h>

#include "allowlist/internal.h"
#include "common/util.h"

/* Segment s[0..len) between two '/' (or after the last one when last);
 * why it is not canonical, or NULL. (';' never gets here.) */
static const char *
path_segment(const char *s, size_t len, bool last)
{
	if (len == 0)
		return last ? NULL : "it holds '//'";
	if ((len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' &&
	    s[1] == '.'))
		return "it holds a dot segment ('.' or '..')";
	return NULL;
}

/* The UTF-8 sequence that starts with the byte of the escape at s[i]
 * (v >= 0x80) must be well-formed in escapes that follow it at once
 * (RFC 3629: shortest form, no surrogates, at most U+10FFFF); *end gets
 * the index of its last escape's last digit. A server that decodes an
 * overlong form ("%c0%ae" for '.') finds what the check never saw. */
static bool
path_utf8_ok(const char *s, size_t len, size_t i, unsigned v, size_t *end)
{
	unsigned need, cp, lo = 0x80, hi = 0xbf;
	int h, l;

	if (v >= 0xc2 && v <= 0xdf) {
		need = 1;
		cp = v & 0x1f;
	} else if (v >= 0xe0 && v <= 0xef) {
		need = 2;
		cp = v & 0x0f;
		if (v == 0xe0)
			lo = 0xa0;	/* overlong */
		else if (v == 0xed)
			hi = 0x9f;	/* surrogates */
	} else if (v >= 0xf0 && v <= 0xf4) {
		need = 3;
		cp = v & 0x07;
		if (v == 0xf0)
			lo = 0x90;	/* overlong */
		else if (v == 0xf4)
			hi = 0x8f;	/* over U+10FFFF */
	} else {
		return false;	/* a continuation, 0xc0, 0xc1 or 0xf5-0xff */
	}
	for (unsigned k = 0; k < need; k++) {
		i += 3;
		if (i + 2 >= len || s[i] != '%')
			return false;
		h = util_hexval(s[i + 1]);
		l = util_hexval(s[i + 2]);
		if (h < 0 || l < 0)
			return false;
		v = (unsigned)(h * 16 + l);
		if (v < lo || v > hi)
			return false;
		lo = 0x80;
		hi = 0xbf;
		cp = cp << 6 | (v & 0x3f);
	}
	*end = i + 2;
	return cp != 0;
}

const char *
al_path_problem(const char *s, size_t len, bool stem)
{
	size_t seg = 1;
	const char *why;

	if (len == 0 || s[0] != '/')
		return "it does not start with '/'";
	for (size_t i = 1; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		int hi, lo, v;
		if (c <= 0x20 || c >= 0x7f)
			return "it holds a space, a control or a non-ASCII byte";
		if (c == '\\')
			return "it holds a backslash";
		if (c == '#')
			return "it holds '#'";
		/* Path parameters: servers disagree on what "/a;x/../b"
		 * names (Tomcat and Spring drop or resolve them). */
		if (c == ';')
			return "it holds ';'";
		if (c == '%') {
			size_t end;
			if (i + 2 >= len)
				return "it holds a malformed '%' escape";
			hi = util_hexval(s[i + 1]);
			lo = util_hexval(s[i + 2]);
			if (hi < 0 || lo < 0)
				return "it holds a malformed '%' escape";
			v = hi * 16 + lo;
			if (v == '.' || v == '/' || v == '\\' || v == 0)
				return "it holds a percent-encoded '.', '/', "
				    "'\\' or NUL";
			if (v == ';')
				return "it holds a percent-encoded ';'";
			if (v >= 0x80) {
				if (!path_utf8_ok(s, len, i, (unsigned)v, &end))
					return "it holds percent-encoded bytes "
					    "that are not UTF-8 (or an "
					    "overlong form)";
				i = end;
				continue;
			}
			i += 2;
			continue;
		}
		if (c == '/') {
			if ((why = path_segment(s + seg, i - seg, false)) != NULL)
				return why;
			seg = i + 1;
		}
	}
	if (!stem)
		return path_segment(s + seg, len - seg, true);
	return NULL;
}

bool
allowlist_inspect_check(const struct allowlist_inspect *in,
    const char *method, const char *target, const char **reason)
{
	const char *r = "allowed-by-entry", *q;
	size_t plen;
	bool ok = false;

	if (in == NULL) {
		r = "path-not-allowed";
		goto out;
	}
	if (method == NULL || method[0] == '\0') {
		r = "method-not-allowed";
		goto out;
	}
	if (in->nmethods > 0) {
		size_t i;
		for (i = 0; i < in->nmethods; i++)
			if (strcmp(in->methods[i], method) == 0)
				break;
		if (i == in->nmethods) {
			r = "method-not-allowed";
			goto out;
		}
	}
	if (target == NULL) {
		r = "path-not-canonical";
		goto out;
	}
	q = strchr(target, '?');
	plen = q != NULL ? (size_t)(q - target) : strlen(target);
	if (al_path_problem(target, plen, false) != NULL) {
		r = "path-not-canonical";
		goto out;
	}
	if (in->npaths > 0) {
		size_t i;
		for (i = 0; i < in->npaths; i++) {
			const char *p = in->paths[i];
			size_t n = strlen(p);
			if (n > 0 && p[n - 1] == '*') {
				if (plen >= n - 1 && memcmp(target, p, n - 1) == 0)
					break;
			} else if (plen == n && memcmp(target, p, n) == 0) {
				break;
			}
		}
		if (i == in->npaths) {
			r = "path-not-allowed";
			goto out;
		}
	}
	ok = true;
out:
	if (reason != NULL)
		*reason = r;
	return ok;
}

/* Request headers that make a server act on another method or URL than
 * the request line's: frameworks (Rails, Laravel, Symfony, ASP.NET,
 * IIS URL rewrite, nginx setups, Spring's HiddenHttpMethodFilter kin)
 * honour them, so an entry bounding methods or paths refuses them. One
 * table: allowlist/README.md lists it, tests/allowlist has a row each. */
static const char *const override_headers[] = {
	"X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override",
	"X-Original-URL", "X-Rewrite-URL", "X-Original-Method",
};

bool
allowlist_override_header(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(override_headers) /
	    sizeof(override_headers[0]); i++)
		if (strlen(override_headers[i]) == len &&
		    strncasecmp(override_headers[i], name, len) == 0)
			return true;
	return false;
}

bool
allowlist_inspect_bounded(const struct allowlist_inspect *in)
{
	return in != NULL && (in->nmethods > 0 || in->npaths > 0);
}
