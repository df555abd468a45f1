/*
 * Allowlist internals shared by its .c files (never included outside
 * allowlist/): the policy tables, host-name checks, and diagnostics.
 */
#ifndef CORDON_ALLOWLIST_INTERNAL_H
#define CORDON_ALLOWLIST_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libpsl.h>

#include "allowlist/allowlist.h"

#define AL_NAME_MAX	253	/* bytes in a host name, without trailing dot */
#define AL_LABEL_MAX	63
#define AL_LABELS_MAX	127	/* most labels a 253-byte name can have */
#define AL_CHAIN_MAX	64	/* entries for one host and kind */

/* Entry kinds; each key has one chain per kind. */
enum al_kind {
	AL_ALLOW_EXACT = 0,
	AL_ALLOW_WILD,
	AL_DENY_EXACT,
	AL_DENY_WILD,
	AL_KINDS
};

#define AL_PORTS_INLINE	2	/* ports kept in the entry itself */

struct al_entry {
	uint32_t line;
	uint32_t text;		/* offset of the entry as written, in strs */
	uint32_t ports;		/* offset in ports[]; or with nports <=
				   AL_PORTS_INLINE, the ports themselves
				   (first | second << 16), saving a cache
				   miss for the usual 80,443 */
	uint32_t key;		/* index in keys[] */
	uint16_t nports;	/* 0 when all_ports */
	uint8_t kind;
	bool all_ports;
	int32_t next;		/* next entry with the same key and kind; -1 */
	uint32_t insp;		/* index + 1 in insps[]; 0: no options */
};

/* One allow entry's options (options.c); strings are offsets in strs. */
#define AL_NONE		UINT32_MAX
struct al_insp {
	uint32_t canon;		/* canonical text (allowlist_inspect.text) */
	uint32_t list;		/* methods then paths: list[] offsets */
	uint16_t nmethods, npaths;
	uint32_t header, secret;	/* AL_NONE: no inject= */
	uint32_t line;
	bool raw;		/* `raw`: no other option, not inspected */
};

/* Options of one entry as parsed from its line (pointers into it), before
 * the entry is added. */
struct al_span {
	const char *s;
	size_t len;
};
struct al_opts {
	bool inspect;
	bool raw;
	size_t nmethods, npaths;
	struct al_span methods[ALLOWLIST_METHODS_MAX];
	struct al_span paths[ALLOWLIST_PATHS_MAX];
	struct al_span header, secret;	/* len 0: no inject= */
	char *canon;		/* canonical text, malloc'd */
	size_t canon_len;
};

struct al_key {			/* 32 bytes */
	uint64_t hash;
	uint32_t name;		/* offset in strs (normalised name or IP text) */
	uint16_t len;		/* <= AL_NAME_MAX */
	bool in_wild;		/* also in the wildcard table */
	bool psl_check;		/* an allow wildcard base with public
				   suffixes (maybe) beneath: its matches
				   need the registrable domain */
	int32_t head[AL_KINDS];	/* first entry per kind, in file order; -1 */
};

/* The hash's high half sits beside the index, so probing past other keys
 * (and most misses) never touches keys[] or strs. */
struct al_slot {
	uint32_t key;		/* key index + 1; 0 is empty */
	uint32_t hash;		/* hash >> 32 */
};

/* Open addressing, linear probing, at most half full. */
struct al_table {
	struct al_slot *slots;
	size_t nslots;		/* a power of two */
	size_t used;
};

struct allowlist {
	char *name;		/* policy name */
	char *file;		/* file name for diagnostics and decisions */
	char *src;		/* the text it was parsed from (a copy) */
	size_t src_len;
	char *strs;		/* NUL-separated strings */
	size_t strs_len, strs_cap;
	struct al_entry *entries;
	size_t nentries, entries_cap;
	uint16_t *ports;
	size_t nports, ports_cap;
	struct al_key *keys;
	size_t nkeys, keys_cap;
	struct al_table all;	/* every key: exact lookups */
	struct al_table wild;	/* keys with wildcard entries: the suffix
				   lookups, kept small and cache-warm */
	const psl_ctx_t *psl;	/* al_psl_ctx(), set by the parser */
	/* Entry options: built while parsing (insps, list), then turned into
	 * the public records by al_opts_finish once strs no longer moves. */
	struct al_insp *insps;
	size_t ninsps, insps_cap;
	uint32_t *list;
	size_t nlist, list_cap;
	struct allowlist_inspect *inspect;	/* ninsps records */
	const char **ptrs;			/* their methods and paths */
	char **values;		/* ninsps secret values (or NULL): zeroed
				   when freed */
};

/* host.c */
/* Checks a host name (not a wildcard, not lowercased yet) of len bytes.
 * Returns true when valid; otherwise writes a message into msg. */
/* parse.c, shared with options.c: a quoted excerpt for diagnostics, and
 * the whitespace of the file format (a newline ends a line). */
const char *al_quote(const char *s, size_t len, char *out, size_t outlen);
bool al_space(char c);

bool al_name_check(const char *s, size_t len, char *msg, size_t msglen);
/* True when the last label of s is numeric (decimal or 0x...), i.e. s can
 * only be an IPv4 address. */
bool al_name_numeric(const char *s, size_t len);
/* Parses an IPv4 or IPv6 literal of len bytes (no brackets) into h
 * (family, addr, canonical text); IPv4-mapped IPv6 becomes IPv4. */
bool al_ip_parse(const char *s, size_t len, int family,
    struct allowlist_host *h);

/* psl.c */
/* The public suffix list file; read once per process. */
#define AL_PSL_FILE	"/usr/share/publicsuffix/public_suffix_list.dat"
/* The process's libpsl context: AL_PSL_FILE's rules, or when that cannot
 * be read, libpsl's own data; NULL only when libpsl has none at all. */
const psl_ctx_t *al_psl_ctx(void);
/* True when name (lowercase) is a public suffix, the "*" rule included
 * (every single label is one); also true when there is no data. */
bool al_psl_public_suffix(const char *name);
/* Whether public-suffix rules lie strictly beneath name (lowercase): 1 with
 * *rule set to the shortest such rule (static), 0 when none, or -errno
 * when AL_PSL_FILE could not be read (unknown). */
int al_psl_beneath(const char *name, const char **rule);

/* allowlist.c: building a policy */
struct allowlist *al_policy_new(const char *name, const char *file);
void al_policy_free(struct allowlist *al);
uint64_t al_hash(const char *s, size_t len);
/* Finds the key for name in the table of all keys (or of wildcard bases
 * when wild), or -1. */
int32_t al_key_find(const struct allowlist *al, bool wild, const char *name,
    size_t len, uint64_t hash);
/* Sizes the tables for about n more entries (an optimisation only). */
void al_policy_reserve(struct allowlist *al, size_t n, size_t bytes);
/* Finds or adds the key; returns its index or -ENOMEM. */
int32_t al_key_add(struct allowlist *al, const char *name, size_t len);
/* The wildcard-table keys for the proper label suffixes of name s,
 * longest first, into out; returns their number. *exact (optional) gets
 * the key of s itself from the table of all keys, or -1. */
size_t al_suffix_keys(const struct allowlist *al, const char *s, size_t len,
    int32_t *exact, int32_t out[AL_LABELS_MAX]);
/* Adds key k to the wildcard table (once); 0 or -ENOMEM. */
int al_key_add_wild(struct allowlist *al, int32_t k);
/* Copies s into the string pool; returns its offset or -ENOMEM. */
int64_t al_str_add(struct allowlist *al, const char *s, size_t len);
/* Port i (< e->nports) of e. */
static inline unsigned
al_entry_port(const struct allowlist *al, const struct al_entry *e, size_t i)
{
	if (e->nports <= AL_PORTS_INLINE)
		return (e->ports >> (16 * i)) & 0xffff;
	return al->ports[e->ports + i];
}
bool al_entry_has_port(const struct allowlist *al, const struct al_entry *e,
    unsigned port);
/* True when every port of inner is also a port of outer. */
bool al_entry_ports_cover(const struct allowlist *al,
    const struct al_entry *outer, const struct al_entry *inner);

/* parse.c */
/* Parses one file's text into al; adds diagnostics (file is al->file).
 * Returns the number of errors found, or -ENOMEM. */
long al_parse_text(struct allowlist *al, const char *text, size_t len,
    struct allowlist_diag *diag);

/* options.c */
/* Parses an entry's options (s[0..len), whitespace-separated, after the
 * host) into o (zeroed first). Returns true, or reports the first mistake
 * as an error at line and returns false (o then holds nothing to free).
 * *nomem is set when out of memory. */
bool al_opts_parse(struct allowlist *al, struct allowlist_diag *diag,
    unsigned line, const char *s, size_t len, struct al_opts *o,
    bool *nomem);
void al_opts_cleanup(struct al_opts *o);
/* Stores o for an entry at line; returns the entry's insp (index + 1) or
 * -ENOMEM. */
int64_t al_opts_commit(struct allowlist *al, const struct al_opts *o,
    unsigned line);
/* The canonical option text of entry e, or NULL when it has none. */
const char *al_entry_opts(const struct allowlist *al, const struct al_entry *e);
/* Builds al->inspect from insps (after the last string was added);
 * 0 or -ENOMEM. */
int al_opts_finish(struct allowlist *al);
/* Why path s[0..len) (no query) is not canonical, or NULL when it is.
 * stem: s is a prefix pattern without its '*', whose last segment may be
 * incomplete (so it is not checked for being a dot segment). */
const char *al_path_problem(const char *s, size_t len, bool stem);

/* secrets.c */
/* A secrets store (see allowlist.h): a file of NAME=VALUE lines read
 * whole, or a directory whose files are read on demand. */
struct al_secrets;
/* Opens path as a store, checking that it is root-only; errors go to
 * diag against path. 0 or a negative errno. */
int al_secrets_open(const char *path, struct al_secrets **out,
    struct allowlist_diag *diag);
/* A store from the text of a secrets file (pure; for tests and fuzzing):
 * errors go to diag against file. 0, -EINVAL or -ENOMEM. */
int al_secrets_parse(const char *file, const char *text, size_t len,
    struct al_secrets **out, struct allowlist_diag *diag);
void al_secrets_free(struct al_secrets *s);
/* True for a valid secret name: 1-ALLOWLIST_SECRET_NAME_MAX of
 * [A-Za-z0-9._-], not starting with '.'. */
bool al_secret_name_ok(const char *s, size_t len);
/* Gives every inject= of al its value from store (NULL: none given;
 * skip: verify nothing, values stay NULL). Returns the number of errors
 * reported (at the entries' lines), or -ENOMEM. */
long al_secrets_resolve(struct allowlist *al, struct al_secrets *store,
    bool skip, struct allowlist_diag *diag);

/* cover.c */
/* Warns (into diag) about entries already covered by a wildcard and allows
 * that a deny always overrides. */
void al_warn_covered(const struct allowlist *al, struct allowlist_diag *diag);

/* diag.c */
/* Adds one diagnostic (a NULL diag only counts nothing). Allocation
 * failures drop the item but still count it. */
void al_diag_add(struct allowlist_diag *diag, bool warning, const char *file,
    unsigned line, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Sorts the items from index start on by line, keeping insertion order for
 * equal lines. */
void al_diag_sort_from(struct allowlist_diag *diag, size_t start);

#endif
