/*
 * Entry options after the host (`inspect`, `methods=`, `paths=`,
 * `inject=HEADER:SECRET`): their strict grammar, their storage in a policy,
 * the canonical-path rules shared by patterns and requests, and
 * allowlist_inspect_check, which the proxy asks for every inspected
 * request. Pure: no I/O; the check never allocates.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "allowlist/internal.h"

#define OPTS_HELP	"options are raw, inspect, methods=, paths=, inject="

static void
opts_error(struct allowlist *al, struct allowlist_diag *diag, unsigned line,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void
opts_error(struct allowlist *al, struct allowlist_diag *diag, unsigned line,
    const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	al_diag_add(diag, false, al->file, line, "%s", msg);
}

/* Quotes option text for a message: printable ASCII as is, other bytes as
 * \xNN, cut at about 100 bytes. */
static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

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
		h = hexval(s[i + 1]);
		l = hexval(s[i + 2]);
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
			hi = hexval(s[i + 1]);
			lo = hexval(s[i + 2]);
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

/* RFC 9110 tchar. */
static bool
opts_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || (c != '\0' &&
	    strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static bool
opts_span_eq(struct al_span a, const char *s, size_t len)
{
	return a.len == len && memcmp(a.s, s, len) == 0;
}

static bool
opts_span_caseeq(struct al_span a, const char *s)
{
	size_t len = strlen(s);

	return a.len == len && strncasecmp(a.s, s, len) == 0;
}

/* One method of methods=; true when valid (else reported). */
static bool
opts_method(struct allowlist *al, struct allowlist_diag *diag, unsigned line,
    struct al_span m)
{
	bool lower = false, other = false;
	char q[128];

	for (size_t i = 0; i < m.len; i++) {
		char c = m.s[i];
		if (c >= 'a' && c <= 'z')
			lower = true;
		else if (!((c >= 'A' && c <= 'Z') || (c == '-' && i > 0 &&
		    i + 1 < m.len)))
			other = true;
	}
	al_quote(m.s, m.len, q, sizeof(q));
	if (other) {
		opts_error(al, diag, line, "'%s' is not a method name "
		    "(upper-case letters, and '-' inside, as in 'GET')", q);
		return false;
	}
	if (lower) {
		char up[ALLOWLIST_METHOD_MAX + 1];
		size_t n = m.len < ALLOWLIST_METHOD_MAX ? m.len :
		    ALLOWLIST_METHOD_MAX;
		for (size_t i = 0; i < n; i++)
			up[i] = (m.s[i] >= 'a' && m.s[i] <= 'z') ?
			    (char)(m.s[i] - 32) : m.s[i];
		up[n] = '\0';
		opts_error(al, diag, line, "methods are case-sensitive and "
		    "upper case: write '%s', not '%s'", up, q);
		return false;
	}
	if (m.len > ALLOWLIST_METHOD_MAX) {
		opts_error(al, diag, line, "method '%s' is longer than %d "
		    "bytes", q, ALLOWLIST_METHOD_MAX);
		return false;
	}
	if (opts_span_eq(m, "CONNECT", 7)) {
		opts_error(al, diag, line, "CONNECT cannot be allowed in an "
		    "inspected connection (it would open a tunnel that is "
		    "not inspected)");
		return false;
	}
	return true;
}

/* One pattern of paths=; true when valid (else reported). */
static bool
opts_path(struct allowlist *al, struct allowlist_diag *diag, unsigned line,
    struct al_span p)
{
	const char *star = memchr(p.s, '*', p.len), *why;
	char q[128];

	al_quote(p.s, p.len, q, sizeof(q));
	if (p.len > ALLOWLIST_PATTERN_MAX) {
		opts_error(al, diag, line, "path pattern '%s' is longer than "
		    "%d bytes", q, ALLOWLIST_PATTERN_MAX);
		return false;
	}
	if (p.s[0] != '/') {
		opts_error(al, diag, line, "path pattern '%s' must start "
		    "with '/'", q);
		return false;
	}
	if (memchr(p.s, '?', p.len) != NULL) {
		opts_error(al, diag, line, "path pattern '%s' holds a query "
		    "('?'): queries are ignored, write the path only", q);
		return false;
	}
	if (star != NULL && star != p.s + p.len - 1) {
		opts_error(al, diag, line, "'*' is only allowed as the last "
		    "character of a path pattern: '%s'", q);
		return false;
	}
	if ((why = al_path_problem(p.s, star != NULL ? p.len - 1 : p.len,
	    star != NULL)) != NULL) {
		opts_error(al, diag, line, "path pattern '%s' is not "
		    "canonical: %s", q, why);
		return false;
	}
	return true;
}

/* Splits a methods= or paths= value into spans; true when every item is
 * valid and unique (else reported). */
static bool
opts_list(struct allowlist *al, struct allowlist_diag *diag, unsigned line,
    const char *key, const char *s, size_t len, struct al_span *out,
    size_t max, size_t *n, bool paths)
{
	size_t i = 0;
	char q[128];

	if (len == 0) {
		opts_error(al, diag, line, "%s= has an empty list", key);
		return false;
	}
	while (i <= len) {
		size_t j = i;
		struct al_span sp;
		while (j < len && s[j] != ',')
			j++;
		if (j == i) {
			opts_error(al, diag, line, "empty item in the %s= list "
			    "'%s'", key, al_quote(s, len, q, sizeof(q)));
			return false;
		}
		sp.s = s + i;
		sp.len = j - i;
		if (!(paths ? opts_path(al, diag, line, sp) :
		    opts_method(al, diag, line, sp)))
			return false;
		for (size_t k = 0; k < *n; k++) {
			if (opts_span_eq(out[k], sp.s, sp.len)) {
				opts_error(al, diag, line, "%s '%s' is listed "
				    "twice", paths ? "path pattern" : "method",
				    al_quote(sp.s, sp.len, q, sizeof(q)));
				return false;
			}
		}
		if (*n >= max) {
			opts_error(al, diag, line, "more than %zu items in "
			    "%s=", max, key);
			return false;
		}
		out[(*n)++] = sp;
		i = j + 1;
	}
	return true;
}

/* Headers the proxy owns: hop-by-hop and message framing. */
static bool
opts_header_reserved(struct al_span h)
{
	static const char *const names[] = { "Host", "Content-Length",
	    "Transfer-Encoding", "Connection", "Upgrade", "TE", "Trailer",
	    "Keep-Alive" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (opts_span_caseeq(h, names[i]))
			return true;
	return h.len >= 6 && strncasecmp(h.s, "Proxy-", 6) == 0;
}

static bool
opts_inject(struct allowlist *al, struct allowlist_diag *diag, unsigned line,
    const char *s, size_t len, struct al_opts *o)
{
	const char *colon = memchr(s, ':', len);
	char q[128];

	if (colon == NULL || colon == s || colon == s + len - 1) {
		opts_error(al, diag, line, "inject= takes HEADER:SECRET (a "
		    "header name and the name of a secret in the secrets "
		    "store): '%s'", al_quote(s, len, q, sizeof(q)));
		return false;
	}
	o->header.s = s;
	o->header.len = (size_t)(colon - s);
	o->secret.s = colon + 1;
	o->secret.len = len - o->header.len - 1;
	al_quote(o->header.s, o->header.len, q, sizeof(q));
	for (size_t i = 0; i < o->header.len; i++) {
		if (!opts_tchar((unsigned char)o->header.s[i])) {
			opts_error(al, diag, line, "'%s' is not a header name "
			    "(RFC 9110 token characters)", q);
			return false;
		}
	}
	if (o->header.len > ALLOWLIST_HEADER_MAX) {
		opts_error(al, diag, line, "header name '%s' is longer than "
		    "%d bytes", q, ALLOWLIST_HEADER_MAX);
		return false;
	}
	if (opts_header_reserved(o->header)) {
		opts_error(al, diag, line, "inject= cannot set '%s': it is a "
		    "hop-by-hop or message-framing header, which the proxy "
		    "owns", q);
		return false;
	}
	if (!al_secret_name_ok(o->secret.s, o->secret.len)) {
		opts_error(al, diag, line, "'%s' is not a secret name (1-%d "
		    "letters, digits, '.', '_' or '-', not starting with '.')",
		    al_quote(o->secret.s, o->secret.len, q, sizeof(q)),
		    ALLOWLIST_SECRET_NAME_MAX);
		return false;
	}
	return true;
}

static int
opts_span_cmp(const void *a, const void *b)
{
	const struct al_span *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->s, y->s, n);

	return c != 0 ? c : (x->len > y->len) - (x->len < y->len);
}

/* Appends s[0..len) to o->canon (sized by the caller). */
static void
opts_put(struct al_opts *o, const char *s, size_t len)
{
	memcpy(o->canon + o->canon_len, s, len);
	o->canon_len += len;
	o->canon[o->canon_len] = '\0';
}

static void
opts_put_list(struct al_opts *o, const char *key, struct al_span *v,
    size_t n)
{
	if (n == 0)
		return;
	qsort(v, n, sizeof(*v), opts_span_cmp);
	opts_put(o, " ", 1);
	opts_put(o, key, strlen(key));
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			opts_put(o, ",", 1);
		opts_put(o, v[i].s, v[i].len);
	}
}

/* The canonical text: fixed option order, sorted lists. */
static int
opts_canon(struct al_opts *o, size_t len)
{
	if ((o->canon = malloc(len + 32)) == NULL)
		return -ENOMEM;
	o->canon_len = 0;
	if (o->raw) {
		opts_put(o, "raw", 3);
		return 0;
	}
	opts_put(o, "inspect", 7);
	opts_put_list(o, "methods=", o->methods, o->nmethods);
	opts_put_list(o, "paths=", o->paths, o->npaths);
	if (o->header.len > 0) {
		opts_put(o, " inject=", 8);
		opts_put(o, o->header.s, o->header.len);
		opts_put(o, ":", 1);
		opts_put(o, o->secret.s, o->secret.len);
	}
	return 0;
}

bool
al_opts_parse(struct allowlist *al, struct allowlist_diag *diag,
    unsigned line, const char *s, size_t len, struct al_opts *o,
    bool *nomem)
{
	const char *first = NULL;	/* first option needing inspect */
	size_t i = 0, flen = 0;
	bool seen_m = false, seen_p = false, seen_i = false;
	char q[128];

	memset(o, 0, sizeof(*o));
	while (i < len) {
		size_t j, n;
		const char *t, *eq;
		while (i < len && al_space(s[i]))
			i++;
		if (i == len)
			break;
		for (j = i; j < len && !al_space(s[j]); j++)
			;
		t = s + i;
		n = j - i;
		i = j;
		eq = memchr(t, '=', n);
		al_quote(t, eq != NULL ? (size_t)(eq - t) + 1 : n, q,
		    sizeof(q));
		if (n == 7 && memcmp(t, "inspect", 7) == 0) {
			if (o->inspect)
				goto twice;
			o->inspect = true;
			continue;
		}
		if (n == 3 && memcmp(t, "raw", 3) == 0) {
			if (o->raw)
				goto twice;
			o->raw = true;
			continue;
		}
		if (eq == NULL) {
			opts_error(al, diag, line, "unexpected '%s' after the "
			    "entry (one entry per line; comments start with "
			    "'#'; %s)", q, OPTS_HELP);
			return false;
		}
		if (first == NULL) {
			first = t;
			flen = (size_t)(eq - t) + 1;
		}
		if (opts_span_eq((struct al_span){ t, (size_t)(eq - t) },
		    "methods", 7)) {
			if (seen_m)
				goto twice;
			seen_m = true;
			if (!opts_list(al, diag, line, "methods", eq + 1,
			    n - 8, o->methods, ALLOWLIST_METHODS_MAX,
			    &o->nmethods, false))
				return false;
		} else if (opts_span_eq((struct al_span){ t, (size_t)(eq - t) },
		    "paths", 5)) {
			if (seen_p)
				goto twice;
			seen_p = true;
			if (!opts_list(al, diag, line, "paths", eq + 1, n - 6,
			    o->paths, ALLOWLIST_PATHS_MAX, &o->npaths, true))
				return false;
		} else if (opts_span_eq((struct al_span){ t, (size_t)(eq - t) },
		    "inject", 6)) {
			if (seen_i)
				goto twice;
			seen_i = true;
			if (!opts_inject(al, diag, line, eq + 1, n - 7, o))
				return false;
		} else {
			opts_error(al, diag, line, "unknown option '%s' (%s)",
			    q, OPTS_HELP);
			return false;
		}
	}
	if (o->raw && o->inspect) {
		opts_error(al, diag, line, "'raw' and 'inspect' exclude each "
		    "other ('raw' passes any bytes without looking at them; "
		    "'inspect' terminates TLS and checks every request)");
		return false;
	}
	if (first != NULL && !o->inspect) {
		opts_error(al, diag, line, "'%s' needs 'inspect' on the same "
		    "entry (the proxy sees requests only in connections it "
		    "inspects)", al_quote(first, flen, q, sizeof(q)));
		return false;
	}
	if ((o->inspect || o->raw) && opts_canon(o, len) < 0) {
		*nomem = true;
		return false;
	}
	return true;
twice:
	opts_error(al, diag, line, "option '%s' is given twice", q);
	return false;
}

void
al_opts_cleanup(struct al_opts *o)
{
	free(o->canon);
	o->canon = NULL;
}

/* Appends strs offset v to al->list; 0 or -ENOMEM. */
static int
opts_list_add(struct allowlist *al, uint32_t v)
{
	if (al->nlist >= al->list_cap) {
		size_t n = al->list_cap != 0 ? al->list_cap * 2 : 16;
		uint32_t *p = realloc(al->list, n * sizeof(*p));
		if (p == NULL)
			return -ENOMEM;
		al->list = p;
		al->list_cap = n;
	}
	al->list[al->nlist++] = v;
	return 0;
}

int64_t
al_opts_commit(struct allowlist *al, const struct al_opts *o, unsigned line)
{
	struct al_insp in = { .line = line, .header = AL_NONE,
	    .secret = AL_NONE, .nmethods = (uint16_t)o->nmethods,
	    .npaths = (uint16_t)o->npaths, .list = (uint32_t)al->nlist,
	    .raw = o->raw };
	int64_t off;

	if (al->ninsps >= UINT32_MAX - 1 || al->nlist + o->nmethods +
	    o->npaths >= UINT32_MAX)
		return -ENOMEM;
	if ((off = al_str_add(al, o->canon, o->canon_len)) < 0)
		return -ENOMEM;
	in.canon = (uint32_t)off;
	for (size_t i = 0; i < o->nmethods + o->npaths; i++) {
		const struct al_span *sp = i < o->nmethods ? &o->methods[i] :
		    &o->paths[i - o->nmethods];
		if ((off = al_str_add(al, sp->s, sp->len)) < 0 ||
		    opts_list_add(al, (uint32_t)off) < 0)
			return -ENOMEM;
	}
	if (o->header.len > 0) {
		if ((off = al_str_add(al, o->header.s, o->header.len)) < 0)
			return -ENOMEM;
		in.header = (uint32_t)off;
		if ((off = al_str_add(al, o->secret.s, o->secret.len)) < 0)
			return -ENOMEM;
		in.secret = (uint32_t)off;
	}
	if (al->ninsps >= al->insps_cap) {
		size_t n = al->insps_cap != 0 ? al->insps_cap * 2 : 16;
		struct al_insp *p = realloc(al->insps, n * sizeof(*p));
		if (p == NULL)
			return -ENOMEM;
		al->insps = p;
		al->insps_cap = n;
	}
	al->insps[al->ninsps++] = in;
	return (int64_t)al->ninsps;
}

const char *
al_entry_opts(const struct allowlist *al, const struct al_entry *e)
{
	return e->insp != 0 ? al->strs + al->insps[e->insp - 1].canon : NULL;
}

int
al_opts_finish(struct allowlist *al)
{
	if (al->ninsps == 0)
		return 0;
	al->inspect = calloc(al->ninsps, sizeof(*al->inspect));
	al->ptrs = calloc(al->nlist + 1, sizeof(*al->ptrs));
	al->values = calloc(al->ninsps, sizeof(*al->values));
	if (al->inspect == NULL || al->ptrs == NULL || al->values == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < al->nlist; i++)
		al->ptrs[i] = al->strs + al->list[i];
	for (size_t i = 0; i < al->ninsps; i++) {
		const struct al_insp *in = &al->insps[i];
		struct allowlist_inspect *out = &al->inspect[i];
		out->methods = in->nmethods > 0 ? al->ptrs + in->list : NULL;
		out->nmethods = in->nmethods;
		out->paths = in->npaths > 0 ? al->ptrs + in->list +
		    in->nmethods : NULL;
		out->npaths = in->npaths;
		out->inject_header = in->header != AL_NONE ?
		    al->strs + in->header : NULL;
		out->inject_secret = in->secret != AL_NONE ?
		    al->strs + in->secret : NULL;
		out->text = al->strs + in->canon;
	}
	return 0;
}
