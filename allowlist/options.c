/*
 * Entry options after the host (`inspect`, `methods=`, `paths=`,
 * `inject=HEADER:SECRET`): their strict grammar and their storage in a
 * policy. The canonical-path rules that patterns and requests share, and
 * allowlist_inspect_check, which the proxy asks for every inspected
 * request, are in inspect_check.c. Pure: no I/O.
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
