/*
 * The allowlist text format (see allowlist.h): one entry per line turned
 * into policy entries, every mistake reported as FILE:LINE: message, then a
 * pass over the loaded entries for warnings (duplicates, entries covered by
 * a wildcard, allows that a deny shadows). Pure: no I/O.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "allowlist/internal.h"
#include "common/util.h"

/* Most entries (and string bytes) reserved before parsing. */
#define PARSE_RESERVE_MAX	(256u * 1024)
#define PARSE_RESERVE_BYTES	(16u * 1024 * 1024)

struct parse {
	struct allowlist *al;
	struct allowlist_diag *diag;
	unsigned line;
	long errors;
	bool nomem;
	bool too_many;		/* reported ALLOWLIST_ENTRIES_MAX once */
	bool psl_unknown;	/* reported an unreadable AL_PSL_FILE once */
	const struct al_opts *opts;	/* the line's options, or NULL */
};

/* Parsed right side of an entry. */
struct parse_ports {
	uint16_t port[ALLOWLIST_PORTS_MAX];
	size_t n;
	bool given;
};

/* Printable text of s[0..len) for a diagnostic: non-printing bytes as
 * \xNN, cut with "..." after about 100 bytes. */
const char *
al_quote(const char *s, size_t len, char *out, size_t outlen)
{
	size_t o = 0;

	for (size_t i = 0; i < len && o + 8 < outlen; i++) {
		unsigned char c = (unsigned char)s[i];
		if (o > 100) {
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
		if (c >= 0x20 && c < 0x7f)
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", c);
	}
	out[o] = '\0';
	return out;
}

bool
al_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static void
parse_error(struct parse *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
parse_error(struct parse *p, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	p->errors++;
	al_diag_add(p->diag, false, p->al->file, p->line, "%s", msg);
}

#define parse_warning(p, line, ...) \
	al_diag_add((p)->diag, true, (p)->al->file, (line), __VA_ARGS__)

/* Quotes user text for a message: printable ASCII as is, other bytes as
 * \xNN, cut at about 100 bytes. */
/* ":80,443" after the host: fills pp, or reports and returns false. */
static bool
parse_ports(struct parse *p, const char *s, size_t len, struct parse_ports *pp)
{
	size_t i = 0;
	char q[128];

	pp->given = true;
	if (len == 0) {
		parse_error(p, "missing port after ':'");
		return false;
	}
	while (i <= len) {
		size_t j = i;
		uint16_t v = 0;
		int rc;
		while (j < len && s[j] != ',')
			j++;
		if (j == i) {
			parse_error(p, "empty port in list '%s'",
			    al_quote(s, len, q, sizeof(q)));
			return false;
		}
		/* The proxy's parser: a port has one spelling everywhere. */
		rc = util_port_parse(s + i, j - i, &v);
		if (rc == -ERANGE) {
			parse_error(p, "port %s is out of range (1-65535)",
			    al_quote(s + i, j - i, q, sizeof(q)));
			return false;
		} else if (rc != 0) {
			parse_error(p, "malformed port '%s' (%s)",
			    al_quote(s + i, j - i, q, sizeof(q)),
			    rc == -EDOM ? "no leading zeros" : "ports are "
			    "numbers from 1 to 65535");
			return false;
		}
		for (size_t k = 0; k < pp->n; k++) {
			if (pp->port[k] == v) {
				parse_warning(p, p->line, "port %u is listed "
				    "twice", (unsigned)v);
				goto next;
			}
		}
		if (pp->n >= ALLOWLIST_PORTS_MAX) {
			parse_error(p, "more than %d ports on one entry",
			    ALLOWLIST_PORTS_MAX);
			return false;
		}
		pp->port[pp->n++] = (uint16_t)v;
next:
		i = j + 1;
	}
	return true;
}

static bool
parse_same_ports(const struct allowlist *al, const struct al_entry *a,
    const struct al_entry *b)
{
	return al_entry_ports_cover(al, a, b) && al_entry_ports_cover(al, b, a);
}

/* True when some port of a is also a port of b. */
static bool
parse_ports_overlap(const struct allowlist *al, const struct al_entry *a,
    const struct al_entry *b)
{
	if (a->all_ports || b->all_ports)
		return true;
	for (size_t i = 0; i < a->nports; i++)
		if (al_entry_has_port(al, b, al_entry_port(al, a, i)))
			return true;
	return false;
}

static bool
parse_same_opts(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* Adds one entry under key name; drops exact duplicates (same ports and
 * options) with a warning; two entries for one host sharing a port with
 * different options are an error (only the first could ever decide). */
static void
parse_entry_add(struct parse *p, int kind, const char *name, size_t nlen,
    const char *text, size_t tlen, const struct parse_ports *pp)
{
	static const uint16_t defaults[] = { 80, 443 };
	struct allowlist *al = p->al;
	struct al_entry e = { .line = p->line, .kind = (uint8_t)kind,
	    .next = -1 };
	const uint16_t *ports = pp->given ? pp->port : defaults;
	size_t nports = pp->given ? pp->n : 2, chain = 0;
	const char *opts = p->opts != NULL ? p->opts->canon : NULL;
	int64_t off;
	int32_t k, i, last = -1;

	if ((k = al_key_add(al, name, nlen)) < 0)
		goto nomem;
	e.key = (uint32_t)k;
	e.all_ports = !pp->given && (kind == AL_DENY_EXACT ||
	    kind == AL_DENY_WILD);
	if (!e.all_ports) {
		/* Sorted, so equal sets compare equal and output is tidy. */
		uint16_t sorted[ALLOWLIST_PORTS_MAX];
		memcpy(sorted, ports, nports * sizeof(*ports));
		for (size_t a = 1; a < nports; a++)
			for (size_t b = a; b > 0 && sorted[b - 1] > sorted[b]; b--) {
				uint16_t t = sorted[b];
				sorted[b] = sorted[b - 1];
				sorted[b - 1] = t;
			}
		e.nports = (uint16_t)nports;
		if (nports <= AL_PORTS_INLINE) {
			e.ports = sorted[0] | (nports > 1 ?
			    (uint32_t)sorted[1] << 16 : 0);
			goto chain;
		}
		if (al->nports + nports > UINT32_MAX)
			goto nomem;
		if (al->nports + nports > al->ports_cap) {
			size_t n = al->ports_cap != 0 ? al->ports_cap : 64;
			uint16_t *q;
			while (n < al->nports + nports)
				n *= 2;
			if ((q = realloc(al->ports, n * sizeof(*q))) == NULL)
				goto nomem;
			al->ports = q;
			al->ports_cap = n;
		}
		e.ports = (uint32_t)al->nports;
		memcpy(al->ports + al->nports, sorted, nports * sizeof(*ports));
	}
chain:
	/* Chains are short (AL_CHAIN_MAX): walk to the end, checking for
	 * duplicates on the way. */
	for (i = al->keys[k].head[kind]; i >= 0; i = al->entries[i].next) {
		const struct al_entry *o = &al->entries[i];
		bool same = parse_same_opts(opts, al_entry_opts(al, o));
		if (same && parse_same_ports(al, o, &e)) {
			parse_warning(p, p->line, "duplicate of line %u", o->line);
			return;
		}
		if (!same && parse_ports_overlap(al, o, &e)) {
			parse_error(p, "conflicts with line %u: a port of this "
			    "host is on both lines, with different options "
			    "(only line %u could decide); give each port one "
			    "set of options", o->line, o->line);
			return;
		}
		last = i;
		chain++;
	}
	if (al->nentries >= ALLOWLIST_ENTRIES_MAX) {
		if (!p->too_many)
			parse_error(p, "more than %u entries in one policy",
			    ALLOWLIST_ENTRIES_MAX);
		p->too_many = true;
		return;
	}
	if (chain >= AL_CHAIN_MAX) {
		parse_error(p, "more than %d entries for the same host; list "
		    "its ports on one line", AL_CHAIN_MAX);
		return;
	}
	if (opts != NULL) {
		int64_t in = al_opts_commit(al, p->opts, p->line);
		if (in < 0)
			goto nomem;
		e.insp = (uint32_t)in;
	}
	if (!e.all_ports && nports > AL_PORTS_INLINE)
		al->nports += nports;
	if (tlen == nlen && memcmp(text, name, nlen) == 0) {
		e.text = al->keys[k].name;	/* written as normalised */
	} else {
		if ((off = al_str_add(al, text, tlen)) < 0)
			goto nomem;
		e.text = (uint32_t)off;
	}
	if (al->nentries >= INT32_MAX)
		goto nomem;
	if (al->nentries >= al->entries_cap) {
		size_t n = al->entries_cap != 0 ? al->entries_cap * 2 : 64;
		struct al_entry *q = realloc(al->entries, n * sizeof(*q));
		if (q == NULL)
			goto nomem;
		al->entries = q;
		al->entries_cap = n;
	}
	if ((kind == AL_ALLOW_WILD || kind == AL_DENY_WILD) &&
	    al_key_add_wild(al, k) < 0)
		goto nomem;
	i = (int32_t)al->nentries++;
	al->entries[i] = e;
	if (last >= 0)
		al->entries[last].next = i;
	else
		al->keys[k].head[kind] = i;
	return;
nomem:
	p->nomem = true;
}

/*
 * An allow wildcard over name: when public suffixes lie beneath name, its
 * matches below them are refused (al_psl_crossed); say so once per name
 * and mark the key so the matcher checks only such keys. The list file
 * spells IDN rules in Unicode, so a punycode base cannot be looked up:
 * it is always checked.
 */
static void
parse_wild_beneath(struct parse *p, const char *name, size_t len)
{
	struct allowlist *al = p->al;
	int32_t k = al_key_find(al, false, name, len, al_hash(name, len));
	const char *rule;
	int r;

	al->psl = al_psl_ctx();
	if (k < 0 || al->keys[k].psl_check)
		return;		/* not added, or said already */
	r = al_psl_beneath(name, &rule);
	if (r == 0 && memmem(name, len, "xn--", 4) != NULL)
		r = 2;
	if (r == 0)
		return;
	al->keys[k].psl_check = true;
	if (r == 1)
		parse_warning(p, p->line, "'*.%s' spans public suffixes such "
		    "as '%s': names registered under them are not allowed "
		    "by it (wildcard-crosses-public-suffix)", name, rule);
	else if (r < 0 && !p->psl_unknown)
		parse_warning(p, p->line, "cannot read %s (%s): which "
		    "wildcards span public suffixes is unknown, so every "
		    "wildcard match is checked", AL_PSL_FILE, strerror(-r));
	p->psl_unknown = p->psl_unknown || r < 0;
}

/* The host part of a non-bracketed entry: a name, "*.name" or IPv4. */
static void
parse_host(struct parse *p, bool deny, const char *s, size_t len,
    const char *text, size_t tlen, const struct parse_ports *pp)
{
	char name[AL_NAME_MAX + 1], msg[512], q[128];
	struct allowlist_host h;
	const char *os = s;
	size_t olen = len;
	bool wild = false;

	if (len == 1 && s[0] == '*') {
		parse_error(p, "'*' alone would match every host; write "
		    "'*.example.com' for the subdomains of one domain");
		return;
	}
	if (len >= 2 && s[0] == '*' && s[1] == '.') {
		wild = true;
		s += 2;
		len -= 2;
	}
	if (memchr(s, '*', len) != NULL) {
		parse_error(p, "'*' is only allowed as a whole leading label, "
		    "as in '*.example.com': '%s'",
			    al_quote(os, olen, q, sizeof(q)));
		return;
	}
	if (len > 1 && s[len - 1] == '.')
		len--;
	if (al_name_numeric(s, len)) {
		if (wild) {
			parse_error(p, "wildcards apply to host names, not IP "
			    "addresses: '%s'",
			    al_quote(os, olen, q, sizeof(q)));
			return;
		}
		if (!al_ip_parse(s, len, AF_INET, &h)) {
			parse_error(p, "'%s' is not a valid IPv4 address",
			    al_quote(os, olen, q, sizeof(q)));
			return;
		}
		parse_entry_add(p, deny ? AL_DENY_EXACT : AL_ALLOW_EXACT,
		    h.text, strlen(h.text), text, tlen, pp);
		return;
	}
	if (!al_name_check(s, len, msg, sizeof(msg))) {
		parse_error(p, "%s", msg);
		return;
	}
	for (size_t i = 0; i < len; i++)
		name[i] = (s[i] >= 'A' && s[i] <= 'Z') ? (char)(s[i] + 32) : s[i];
	name[len] = '\0';
	if (wild && !deny && al_psl_public_suffix(name)) {
		parse_error(p, "'*.%s' would allow every name under the public "
		    "suffix '%s'", name, name);
		return;
	}
	parse_entry_add(p, wild ? (deny ? AL_DENY_WILD : AL_ALLOW_WILD) :
	    (deny ? AL_DENY_EXACT : AL_ALLOW_EXACT), name, len, text, tlen, pp);
	if (wild && !deny)
		parse_wild_beneath(p, name, len);
}

/* One entry token (no spaces, no comment), as written. */
static void
parse_entry(struct parse *p, const char *text, size_t tlen)
{
	struct parse_ports pp = { .n = 0 };
	struct allowlist_host h;
	const char *s = text, *colon;
	size_t len = tlen;
	bool deny = false;
	char q[128];

	for (size_t i = 0; i < tlen; i++) {
		unsigned char c = (unsigned char)text[i];
		if (c >= 0x80 && tlen - i >= 3 &&
		    memcmp(text + i, "\xef\xbb\xbf", 3) == 0) {
			/* Only the file's start may hold one (skipped). */
			parse_error(p, "a UTF-8 byte-order mark (U+FEFF) in "
			    "'%s': it is allowed only at the start of the "
			    "file", al_quote(text, tlen, q, sizeof(q)));
			return;
		}
		if (c >= 0x80) {
			parse_error(p, "non-ASCII byte in '%s': write "
			    "internationalised names as punycode (xn--...)",
			    al_quote(text, tlen, q, sizeof(q)));
			return;
		}
		if (c < 0x20 || c == 0x7f) {
			parse_error(p, "invalid character 0x%02x in '%s'", c,
			    al_quote(text, tlen, q, sizeof(q)));
			return;
		}
	}
	if (s[0] == '!') {
		deny = true;
		s++;
		len--;
		if (len == 0) {
			parse_error(p, "'!' must be followed by the entry to "
			    "deny");
			return;
		}
	}
	if (s[0] == '[') {
		const char *close = memchr(s, ']', len);
		const char *end = s + len;
		if (close == NULL) {
			parse_error(p, "missing ']' in '%s'",
			    al_quote(text, tlen, q, sizeof(q)));
			return;
		}
		if (close + 1 < end && close[1] != ':') {
			parse_error(p, "unexpected text after ']' in '%s' "
			    "(write [IPv6]:PORT)",
			    al_quote(text, tlen, q, sizeof(q)));
			return;
		}
		if (close + 1 < end && !parse_ports(p, close + 2,
		    (size_t)(end - close - 2), &pp))
			return;
		if (!al_ip_parse(s + 1, (size_t)(close - s - 1), AF_INET6, &h)) {
			parse_error(p, "invalid IPv6 address in '%s'",
			    al_quote(text, tlen, q, sizeof(q)));
			return;
		}
		parse_entry_add(p, deny ? AL_DENY_EXACT : AL_ALLOW_EXACT,
		    h.text, strlen(h.text), text, tlen, &pp);
		return;
	}
	colon = memchr(s, ':', len);
	if (colon != NULL && memchr(colon + 1, ':', len -
	    (size_t)(colon + 1 - s)) != NULL) {
		if (memmem(s, len, "://", 3) != NULL) {
			parse_error(p, "'%s' looks like a URL: write the host "
			    "name only, with :PORT if needed",
			    al_quote(text, tlen, q, sizeof(q)));
			return;
		}
		if (!al_ip_parse(s, len, AF_INET6, &h)) {
			parse_error(p, "invalid IPv6 address '%s' (to add "
			    "ports, write [2001:db8::1]:443)",
			    al_quote(text, tlen, q, sizeof(q)));
			return;
		}
		parse_entry_add(p, deny ? AL_DENY_EXACT : AL_ALLOW_EXACT,
		    h.text, strlen(h.text), text, tlen, &pp);
		return;
	}
	if (colon != NULL) {
		if (memmem(s, len, "://", 3) != NULL) {
			parse_error(p, "'%s' looks like a URL: write the host "
			    "name only, with :PORT if needed",
			    al_quote(text, tlen, q, sizeof(q)));
			return;
		}
		if (!parse_ports(p, colon + 1, len - (size_t)(colon + 1 - s),
		    &pp))
			return;
		len = (size_t)(colon - s);
		if (len == 0) {
			parse_error(p, "missing host before ':' in '%s'",
			    al_quote(text, tlen, q, sizeof(q)));
			return;
		}
	}
	parse_host(p, deny, s, len, text, tlen, &pp);
}

static void
parse_line(struct parse *p, const char *s, size_t len)
{
	const char *hash = memchr(s, '#', len);
	struct al_opts opts;
	size_t tok, rest;

	if (hash != NULL)
		len = (size_t)(hash - s);
	while (len > 0 && al_space(s[len - 1]))
		len--;
	while (len > 0 && al_space(*s)) {
		s++;
		len--;
	}
	if (len == 0)
		return;
	for (tok = 0; tok < len && !al_space(s[tok]); tok++)
		;
	for (rest = tok; rest < len && al_space(s[rest]); rest++)
		;
	if (rest == len) {
		parse_entry(p, s, tok);
		return;
	}
	if (s[0] == '!') {
		parse_error(p, "deny entries take no options (they deny "
		    "every request to the host)");
		return;
	}
	if (!al_opts_parse(p->al, p->diag, p->line, s + rest, len - rest,
	    &opts, &p->nomem)) {
		p->errors++;
		return;
	}
	p->opts = opts.inspect || opts.raw ? &opts : NULL;
	parse_entry(p, s, tok);
	p->opts = NULL;
	al_opts_cleanup(&opts);
}

long
al_parse_text(struct allowlist *al, const char *text, size_t len,
    struct allowlist_diag *diag)
{
	struct parse p = { .al = al, .diag = diag };
	size_t start = diag != NULL ? diag->count : 0, i = 0, lines = 1;

	if (text == NULL)
		len = 0;
	/* A UTF-8 byte-order mark (editors on Windows write one) is not
	 * part of the first entry. */
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) {
		text += 3;
		len -= 3;
	}
	/* Sizing the tables up front saves rehashing big files. */
	for (const char *c = text; len > 0 && (c = memchr(c, '\n', len -
	    (size_t)(c - text))) != NULL; c++)
		lines++;
	al_policy_reserve(al, lines < PARSE_RESERVE_MAX ? lines :
	    PARSE_RESERVE_MAX, len < PARSE_RESERVE_BYTES ? len * 2 :
	    PARSE_RESERVE_BYTES);
	while (i < len && !p.nomem) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t n = nl != NULL ? (size_t)(nl - text) - i : len - i;
		p.line++;
		parse_line(&p, text + i, n);
		i += n + 1;
	}
	if (p.nomem)
		return -ENOMEM;
	if (p.errors == 0 && al_opts_finish(al) < 0)
		return -ENOMEM;
	if (diag != NULL && p.errors == 0) {
		/* Duplicates were reported while adding; coverage needs all
		 * entries in place. */
		al_warn_covered(al, diag);
		al_diag_sort_from(diag, start);
	}
	return p.errors;
}
