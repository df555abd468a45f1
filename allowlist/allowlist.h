/*
 * Egress allowlists: the text format security teams edit by hand, its
 * all-or-nothing loader with FILE:LINE diagnostics, and the matcher the
 * proxy asks for every request. A loaded set is immutable and may be shared
 * read-only between threads; reload by loading a new set and swapping.
 */
#ifndef CORDON_ALLOWLIST_ALLOWLIST_H
#define CORDON_ALLOWLIST_ALLOWLIST_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Format and semantics (also in allowlist/README.md).
 *
 * One entry per line; '#' starts a comment anywhere; blank lines are
 * ignored; spaces, tabs and a CR before the newline are whitespace; a UTF-8
 * byte-order mark at the start of the text is skipped.
 *
 *   example.com            exact host, ports 80 and 443
 *   *.example.com          any subdomain at any depth, NOT example.com itself
 *   api.example.com:8443   explicit ports (":8443" or ":80,443") replace
 *                          the defaults
 *   !internal.example.com  deny entry; "!*.x" denies subdomains of x only,
 *                          "!host" does not deny the host's subdomains
 *   203.0.113.7            IPv4 literal (exact only)
 *   2001:db8::1            IPv6 literal, bare; with ports it is bracketed:
 *   [2001:db8::2]:8443
 *
 * Host names follow the letters-digits-hyphen rule: labels of 1-63 bytes
 * of [A-Za-z0-9-] not starting or ending with '-', at most 253 bytes in all
 * (one trailing dot is allowed and dropped); uppercase is folded. A name
 * whose last label is numeric (or 0x...) is not a name: it must be a valid
 * dotted-quad IPv4 address. Non-ASCII bytes are rejected: write
 * internationalised names as punycode ("xn--..."). '*' is only valid as a
 * whole leading "*." label, and never over a public suffix ("*.com",
 * "*.co.uk", "*.github.io", or any single label) for allow entries.
 * IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) are treated as the IPv4
 * address, in the file and in requests.
 *
 * Decision for (host, port), deterministic:
 *  1. The request host is normalised: lowercase, one trailing dot removed;
 *     "[v6]" or a bare IPv6/IPv4 literal becomes an address, compared as an
 *     address (so [2001:db8:0:0:0:0:0:1] is 2001:db8::1). Anything else that
 *     is not a valid host name, and any port outside 1-65535, is denied
 *     ("invalid-host", "invalid-port").
 *  2. Deny entries first: an exact "!host" for the host, then "!*.suffix"
 *     entries from the most specific suffix to the least. A deny entry
 *     without ports denies every port; with ports, only those. The first
 *     deny whose host and port match decides ("denied-by-entry").
 *  3. Then allow entries: exact first, then wildcards from the most specific
 *     suffix. Ports are checked after the host matches; the first entry
 *     whose host and ports both match allows ("allowed-by-entry"). Ports
 *     accumulate: "api.example.com:8443" plus "*.example.com" allows
 *     api.example.com on 80, 443 and 8443.
 *     An allow wildcard "*.BASE" never crosses a public suffix: it covers
 *     a host only when the host's registrable domain (libpsl) is BASE or
 *     a name above BASE. When the host is itself a public suffix (no
 *     registrable domain) or its registrable domain lies below BASE, the
 *     wildcard does not match it. So "*.amazonaws.com" covers
 *     ec2.amazonaws.com (registrable domain amazonaws.com) but not
 *     s3.amazonaws.com (a public suffix), attacker.s3.amazonaws.com or
 *     x.execute-api.us-east-1.amazonaws.com (registrable domains below
 *     amazonaws.com); "*.b.s3.amazonaws.com" and the exact entry
 *     "s3.amazonaws.com" still match their hosts. Deny wildcards are not
 *     narrowed.
 *  4. If some allow entry matched the host but none listed the port, the
 *     request is denied citing the first such entry ("port-not-allowed");
 *     else if a wildcard was refused for crossing a public suffix, citing
 *     the first such wildcard ("wildcard-crosses-public-suffix");
 *     otherwise "no-match".
 * A missing policy (NULL) denies everything ("no-policy"). A directory
 * without default.list has no "default" policy.
 *
 * Lookups hash the exact name and each label suffix of the request (at
 * most 127), so their cost does not depend on the number of entries. The
 * registrable domain is looked up only when an allow wildcard whose base
 * has public-suffix rules beneath it matches (known at load time).
 *
 * The public suffix data is read once per process from Debian's
 * publicsuffix file (/usr/share/publicsuffix/public_suffix_list.dat), both
 * for libpsl and for the set of names with rules beneath them; without
 * that file, libpsl's own data is used and every wildcard match is
 * checked.
 *
 * Entry options (allow entries only), whitespace-separated after the
 * host, in any order, each at most once:
 *
 *   api.github.com:443 inspect methods=GET,POST paths=/user
 *       inject=Authorization:github-token        (one line in a file)
 *
 *   raw                the entry's tunnels may carry any bytes (ssh, a
 *                      database protocol): without it a CONNECT tunnel
 *                      must carry TLS whose ClientHello names the host.
 *                      Excludes every other option
 *   inspect            the proxy terminates TLS and checks every request;
 *                      required by the three options below
 *   methods=M[,M...]   allowed methods: upper-case letters and inner '-',
 *                      compared case-sensitively; CONNECT is refused.
 *                      Absent: any method
 *   paths=P[,P...]     allowed paths: "/x/y" exactly, or, ending in '*',
 *                      any path starting with what precedes the '*'
 *                      ("/x/" then '*': the tree under /x/). A pattern starts with '/', holds
 *                      no '?', '#', ',', whitespace, control or non-ASCII
 *                      byte, '*' only last, and is canonical (as below).
 *                      Absent: any (canonical) path
 *   inject=H:SECRET    set header H (an RFC 9110 token, not hop-by-hop or
 *                      framing: Host, Content-Length, Transfer-Encoding,
 *                      Connection, Upgrade, TE, Trailer, Keep-Alive,
 *                      Proxy-*) to the value of SECRET, replacing any
 *                      the client sent
 * Up to ALLOWLIST_METHODS_MAX methods and ALLOWLIST_PATHS_MAX patterns.
 * Options are matched per deciding entry: the entry that allows
 * (host, port) by the rules above brings its options (decision.inspect),
 * so an exact entry's options win over a wildcard's, a more specific
 * wildcard's over a broader one's. Two entries for one host (and kind)
 * sharing a port with different options are an error; identical entries
 * are warned about as duplicates; an entry a wildcard covers with other
 * options is warned about.
 *
 * A request is canonical (allowlist_inspect_check) when its target is in
 * origin form and its path (the query, after '?', is ignored) holds only
 * printable ASCII, no '#', no backslash, no ';' (path parameters, which
 * servers resolve differently), no "//", no segment that is "." or "..",
 * no malformed '%' escape, no percent-encoded '.', '/', '\\', ';' or NUL,
 * and percent-encoded bytes above 0x7f only as well-formed UTF-8
 * (shortest form, no surrogates: "%c0%ae" is refused). Anything else is
 * refused before patterns are compared (byte for byte).
 *
 * Secrets (allowlist_load_opts.secrets, config egress_secrets): a file of
 * NAME=VALUE lines ('#' comment lines and blank lines allowed; the value
 * is the rest of the line, a CR before the LF dropped) or a directory with
 * one file per secret (file name = NAME; its whole contents, one trailing
 * LF or CRLF dropped). The file or directory, and each secret file, must
 * be owned by root or the loading user and give nothing to group or other.
 * Names: 1-64 of [A-Za-z0-9._-], not starting with '.'. Values: 1-8192
 * bytes of printable text or tabs (no NUL, CR, LF or other control byte),
 * not starting or ending with a space or tab. The store is opened only
 * when an entry has inject=; a missing or bad secret is an error at the
 * entry's FILE:LINE; no diagnostic ever holds a value.
 *
 * Errors reject the whole set (nothing is half-loaded); warnings (duplicate
 * entries, entries already covered by a wildcard, allows shadowed by a deny,
 * allow wildcards with public suffixes beneath their base) do not.
 */

struct allowlist;		/* one policy; owned by its set */
struct allowlist_set;		/* named policies; immutable once loaded */

/* Load limits, enforced by the loader. */
#define ALLOWLIST_FILE_MAX	(64u * 1024 * 1024)	/* bytes per file */
#define ALLOWLIST_ENTRIES_MAX	1000000u	/* entries in one policy */
#define ALLOWLIST_PORTS_MAX	64	/* ports on one entry */
#define ALLOWLIST_DIAG_MAX	1000	/* diagnostics kept; rest counted */
#define ALLOWLIST_NAME_MAX	64	/* policy name length */
#define ALLOWLIST_METHODS_MAX	16	/* methods= items on one entry */
#define ALLOWLIST_PATHS_MAX	64	/* paths= items on one entry */
#define ALLOWLIST_METHOD_MAX	32	/* bytes in one method */
#define ALLOWLIST_PATTERN_MAX	1024	/* bytes in one path pattern */
#define ALLOWLIST_HEADER_MAX	64	/* bytes in an inject= header name */
#define ALLOWLIST_SECRET_NAME_MAX 64	/* bytes in a secret's name */
#define ALLOWLIST_SECRET_MAX	8192	/* bytes in a secret's value */
#define ALLOWLIST_SECRETS_FILE_MAX (1024u * 1024)	/* a secrets file */

struct allowlist_diag_item {
	bool warning;		/* false: an error */
	char *file;		/* as given (FILE, DIR/NAME.list, or the name) */
	unsigned line;		/* 1-based; 0 when about the whole file */
	char *message;
	char *text;		/* "FILE:LINE: message" or
				   "FILE:LINE: warning: message" (no LINE when 0) */
};

struct allowlist_diag {
	struct allowlist_diag_item *items;	/* in file, then line order */
	size_t count;
	size_t errors;		/* counted even past ALLOWLIST_DIAG_MAX */
	size_t warnings;
	size_t dropped;		/* not kept because of ALLOWLIST_DIAG_MAX */
};

/* Zeroes a diag; cleanup frees its items (and leaves it zeroed). */
void allowlist_diag_init(struct allowlist_diag *diag);
void allowlist_diag_cleanup(struct allowlist_diag *diag);

/*
 * Loads a policy set from path: a regular file becomes the single policy
 * "default"; a directory loads every NAME.list in it as policy NAME (NAME of
 * [A-Za-z0-9_-], 1-64 bytes; other files are skipped with a warning).
 * diag (optional; init it first) receives every error and warning.
 * Returns 0 and *out (caller frees with allowlist_set_free), or a negative
 * errno with *out NULL: -EINVAL when the content has errors (see diag),
 * -ENOENT/-EACCES/... when path cannot be read (also in diag), -ENOMEM.
 */
int allowlist_set_load(const char *path, struct allowlist_set **out,
    struct allowlist_diag *diag);

/*
 * Parses text[0..len) (need not be NUL-terminated; may contain anything)
 * as a set with the single policy "default"; name is used as FILE in
 * diagnostics and decisions (copied). Same returns as allowlist_set_load.
 */
int allowlist_set_parse(const char *name, const char *text, size_t len,
    struct allowlist_set **out, struct allowlist_diag *diag);

/* Options for loading (both fields may be left zero). */
struct allowlist_load_opts {
	/* Secrets file or directory (root-only, see above); NULL or "" =
	 * none, and then any entry with inject= is a load error. */
	const char *secrets;
	/* Do not read the store: inject= secret names are checked for
	 * syntax only and every inject_value stays NULL. For `cordon
	 * allowlist check` run by a user who cannot read the store; never
	 * for a set that serves requests. */
	bool secrets_unverified;
};

/* allowlist_set_load and allowlist_set_parse with options (opts NULL: as
 * if all zero). Errors of the secrets store itself (unreadable, not
 * private, malformed) are reported against its path; a secret an entry
 * names but the store lacks (or holds an invalid value for) is an error at
 * the entry's FILE:LINE; both return -EINVAL. Secrets are looked up only
 * once the text has no other error. No diagnostic ever holds a secret's
 * value. */
int allowlist_set_load_opts(const char *path,
    const struct allowlist_load_opts *opts, struct allowlist_set **out,
    struct allowlist_diag *diag);
int allowlist_set_parse_opts(const char *name, const char *text, size_t len,
    const struct allowlist_load_opts *opts, struct allowlist_set **out,
    struct allowlist_diag *diag);

void allowlist_set_free(struct allowlist_set *set);	/* accepts NULL */

/* A policy's source: its name, the file its diagnostics name, and the
 * text it is parsed from (not NUL-terminated; may hold anything). */
struct allowlist_source {
	const char *name;
	const char *file;
	const char *text;
	size_t len;
};

/*
 * A set from n policies given as text, in name order (names as a
 * directory's NAME.list, unique): all-or-nothing like
 * allowlist_set_load_opts. cordon-proxy's network child builds the set
 * its parent checked this way, with opts->secrets_unverified (the child
 * never holds the secrets' values).
 */
int allowlist_set_parse_many(const struct allowlist_source *src, size_t n,
    const struct allowlist_load_opts *opts, struct allowlist_set **out,
    struct allowlist_diag *diag);
/* The source of the i-th policy (name order), borrowed from the set. 0,
 * or -ENOENT. */
int allowlist_set_source(const struct allowlist_set *set, size_t i,
    struct allowlist_source *out);
/* Reads the public suffix data now (a process about to chroot cannot read
 * it later). */
void allowlist_preload(void);

/* The policy called name (NULL means "default"), borrowed from the set;
 * NULL when there is none: pass it on to allowlist_match, which denies. */
const struct allowlist *allowlist_set_policy(const struct allowlist_set *set,
    const char *name);
/* Policies in name order: count, and the i-th name (borrowed). */
size_t allowlist_set_count(const struct allowlist_set *set);
const char *allowlist_set_name(const struct allowlist_set *set, size_t i);

/* Number of entries in a policy (exact duplicates, which are warned
 * about, count once); 0 for NULL. */
size_t allowlist_entry_count(const struct allowlist *al);
/* Entries of a policy with `inspect`; 0 for NULL. */
size_t allowlist_inspect_count(const struct allowlist *al);
/* Entries of a policy with `raw`; 0 for NULL. */
size_t allowlist_raw_count(const struct allowlist *al);
/* Entries with inject= in every policy of a set; 0 for NULL. */
size_t allowlist_set_inject_count(const struct allowlist_set *set);

/* Options of an allow entry with `inspect` (see allowlist/README.md).
 * Borrowed from the set; valid until allowlist_set_free. */
struct allowlist_inspect {
	const char *const *methods;	/* upper-case tokens ("GET"); nmethods
					   0 = any method */
	size_t nmethods;
	const char *const *paths;	/* path patterns; npaths 0 = any path */
	size_t npaths;
	const char *inject_header;	/* header name to set, e.g.
					   "Authorization"; NULL = none */
	const char *inject_secret;	/* the secret's NAME (loggable); NULL =
					   none */
	const char *inject_value;	/* the secret's VALUE: never log, never
					   report */
	const char *text;		/* the options in canonical form
					   ("inspect methods=GET,POST
					   paths=/a,/b/x inject=H:NAME"; lists
					   sorted; never holds the value) */
};

/* Why a request was allowed or denied. Strings are static or borrowed from
 * the set: valid until allowlist_set_free. */
struct allowlist_decision {
	bool allowed;
	/* Machine-readable, fit for an HTTP header: "allowed-by-entry",
	 * "denied-by-entry", "port-not-allowed",
	 * "wildcard-crosses-public-suffix", "no-match", "invalid-host",
	 * "invalid-port", "no-policy". */
	const char *reason;
	const char *file;	/* deciding entry's file, or NULL */
	unsigned line;		/* its line, or 0 */
	const char *entry;	/* its text as written ("!*.x.com:80"), or NULL */
	/* The deciding allow entry's options, NULL when it has no `inspect`
	 * (a tunnel checked at the TLS level only) and for every denial. */
	const struct allowlist_inspect *inspect;
	/* The deciding allow entry has `raw`: its tunnels carry any bytes,
	 * not only TLS (false for every denial). */
	bool raw;
};

/*
 * Decides host:port under policy al (NULL: deny, "no-policy"). host is as
 * the client wrote it: a name, an IPv4 literal, or an IPv6 literal bare or
 * in brackets; NUL-terminated. Returns true to allow. d (optional) is
 * always filled. Never allocates; safe to call from many threads at once.
 */
bool allowlist_match(const struct allowlist *al, const char *host, long port,
    struct allowlist_decision *d);

/*
 * Whether host is allowed under al on at least one port (the closed
 * resolver's question: a DNS query has no port, and a name allowed only as
 * "git.example.com:22 raw" must resolve). True with d from that port's
 * decision; false with d the refusal for one of the ports the host's
 * allow entries list (443 when none does).
 */
bool allowlist_match_any_port(const struct allowlist *al, const char *host,
    struct allowlist_decision *d);

/*
 * Same for an authority "HOST[:PORT]" ("[v6]:PORT" for IPv6; a bare IPv6
 * address needs brackets here); without a port, default_port is used. A
 * malformed port (empty, non-digits, leading zero, out of range) denies with
 * "invalid-port".
 */
bool allowlist_match_authority(const struct allowlist *al,
    const char *authority, long default_port, struct allowlist_decision *d);

/*
 * One request inside an inspected tunnel (or a plain-HTTP request to an
 * inspected entry). method: as sent (compared case-sensitively); target:
 * the request-target, which must be in origin form ("/a/b?q=1"); the query
 * is ignored for matching. Returns true to allow; *reason (optional) gets
 * a static string: "allowed-by-entry", "method-not-allowed",
 * "path-not-allowed", or "path-not-canonical" (a target that is not origin
 * form or not canonical as above: refused so that path patterns cannot be
 * bypassed). The method is
 * checked first, then the target's form, then the patterns. in NULL (no
 * options), method NULL or target NULL deny. Pure, never allocates.
 */
bool allowlist_inspect_check(const struct allowlist_inspect *in,
    const char *method, const char *target, const char **reason);

/*
 * Whether a request header named name (len bytes, any case) asks a server
 * to act on another method or URL than the request line's:
 * X-HTTP-Method-Override, X-HTTP-Method, X-Method-Override,
 * X-Original-URL, X-Rewrite-URL, X-Original-Method. An inspected entry
 * that bounds methods or paths (allowlist_inspect_bounded) refuses a
 * request carrying one ("override-header"). Pure.
 */
bool allowlist_override_header(const char *name, size_t len);
/* True when in has methods= or paths=. */
bool allowlist_inspect_bounded(const struct allowlist_inspect *in);

/* A request host after normalisation (see the rules above). */
struct allowlist_host {
	int family;		/* 0 for a name, AF_INET or AF_INET6 */
	unsigned char addr[16];	/* the address for AF_INET(6) */
	char text[256];		/* lowercase name without trailing dot, or
				   the canonical address text (no brackets) */
};

/*
 * The one parser of request hosts, shared by the matcher, `cordon
 * allowlist explain` and cordon-proxy. host[0..len) (no NUL inside):
 *  - "[...]" or anything with ':' is an IPv6 literal (inet_pton syntax,
 *    no zone id); an IPv4-mapped one (::ffff:a.b.c.d) becomes the IPv4
 *    address;
 *  - otherwise, after one trailing dot is dropped, a host whose last
 *    label is numeric (all decimal digits, or "0x" and hex digits) is an
 *    IPv4 literal in any inet_aton form ("127.1", "0x7f000001",
 *    "0177.0.0.1", "2130706433"), or invalid: never a name;
 *  - anything else must be a letters-digits-hyphen name (rules above),
 *    lowercased.
 * Returns 0, or -EINVAL for anything else (out is then zeroed).
 */
int allowlist_host_parse_n(const char *host, size_t len,
    struct allowlist_host *out);
/* The same for a NUL-terminated host. */
int allowlist_host_parse(const char *host, struct allowlist_host *out);
/* inet_aton's forms of an IPv4 literal, strictly (1-4 parts, each
 * decimal, 0-octal or 0x-hex, the last filling the bytes left; no
 * trailing dot, space or junk). *out in network byte order. 0 or
 * -EINVAL (*out zeroed). */
struct in_addr;
int allowlist_host_parse_ipv4(const char *s, size_t len,
    struct in_addr *out);
/*
 * True when a name is internal by its shape, refused before any lookup:
 * a single label (no dot), "localhost" and "*.localhost", and names in
 * the special-use or never-public domains internal, local, localdomain,
 * lan, home, corp, intranet, private, home.arpa, in-addr.arpa, ip6.arpa,
 * test, invalid, example, onion, alt (the domain itself or below it:
 * "metadata.google.internal"). ASCII case ignored, one trailing dot
 * ignored; NULL or "" is internal.
 */
bool allowlist_host_internal(const char *name);

/* An absolute URL split for `cordon allowlist explain`. */
struct allowlist_url {
	char authority[272];	/* "HOST[:PORT]" as written, NUL-terminated */
	long default_port;	/* from the scheme: http 80, https 443 */
	const char *target;	/* into the URL: path and query ("" when the
				   URL has neither), not NUL-terminated */
	size_t target_len;	/* bytes of target, the fragment excluded */
};

/*
 * Parses "SCHEME://HOST[:PORT][/PATH][?QUERY][#FRAGMENT]", SCHEME being
 * http or https (any case). The authority is copied as written, so that
 * allowlist_match_authority() judges its host and port exactly as for a
 * "HOST[:PORT]" argument. User information ("USER@HOST") is refused.
 * Returns 0, or -EINVAL with *why (optional) a static message and out
 * zeroed. Pure.
 */
int allowlist_url_parse(const char *url, struct allowlist_url *out,
    const char **why);

#endif
