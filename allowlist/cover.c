/*
 * The loader's coverage warnings, once every entry is in place: entries
 * already covered by a wildcard, and allows that a deny always overrides.
 * A wildcard that would have to cross a public suffix covers nothing
 * there (see match_wild). Pure.
 */
#include <stdbool.h>
#include <string.h>

#include "allowlist/internal.h"

/* First entry of kind under key k whose ports cover e's, or NULL. */
static const struct al_entry *
cover_find(const struct allowlist *al, int32_t k, int kind,
    const struct al_entry *e)
{
	for (int32_t i = al->keys[k].head[kind]; i >= 0;
	    i = al->entries[i].next)
		if (&al->entries[i] != e &&
		    al_entry_ports_cover(al, &al->entries[i], e))
			return &al->entries[i];
	return NULL;
}

/* True when the allow wildcard over key base does not cover all of
 * allow entry e (name, len bytes) because it would cross a public suffix
 * (see match_wild in match.c). */
static bool
cover_crosses(const struct allowlist *al, int32_t base,
    const struct al_entry *e, const char *name, size_t len)
{
	const char *reg;

	if (!al->keys[base].psl_check)
		return false;
	if (e->kind == AL_ALLOW_WILD && al->keys[e->key].psl_check)
		return true;	/* some names under e's base cross */
	reg = al->psl != NULL ? psl_registrable_domain(al->psl, name) : NULL;
	return reg == NULL || len - (size_t)(reg - name) > al->keys[base].len;
}

static bool
cover_same_opts(const struct allowlist *al, const struct al_entry *a,
    const struct al_entry *b)
{
	const char *x = al_entry_opts(al, a), *y = al_entry_opts(al, b);

	return x == y || (x != NULL && y != NULL && strcmp(x, y) == 0);
}

static void
warn_covered(const struct allowlist *al, struct allowlist_diag *diag,
    const struct al_entry *e)
{
	const struct al_key *key = &al->keys[e->key];
	const char *name = al->strs + key->name;
	const struct al_entry *c = NULL, *d = NULL;
	bool allow = e->kind == AL_ALLOW_EXACT || e->kind == AL_ALLOW_WILD;
	int32_t suf[AL_LABELS_MAX];
	size_t nsuf = 0;

	if (allow)
		d = cover_find(al, e->key, e->kind == AL_ALLOW_EXACT ?
		    AL_DENY_EXACT : AL_DENY_WILD, e);
	/* IP literals have no suffixes. */
	if (memchr(name, ':', key->len) == NULL &&
	    !al_name_numeric(name, key->len))
		nsuf = al_suffix_keys(al, name, key->len, NULL, suf);
	for (size_t i = 0; i < nsuf && (c == NULL || (allow && d == NULL));
	    i++) {
		if (c == NULL && !(allow && cover_crosses(al, suf[i], e,
		    name, key->len)))
			c = cover_find(al, suf[i], allow ? AL_ALLOW_WILD :
			    AL_DENY_WILD, e);
		if (allow && d == NULL)
			d = cover_find(al, suf[i], AL_DENY_WILD, e);
	}
	if (d != NULL)
		al_diag_add(diag, true, al->file, e->line, "never allowed: "
		    "'%s' (line %u) denies it", al->strs + d->text, d->line);
	else if (c != NULL && allow && !cover_same_opts(al, c, e))
		al_diag_add(diag, true, al->file, e->line, "'%s' (line %u) "
		    "also covers this, with other options; this entry's "
		    "apply (%s)", al->strs + c->text, c->line,
		    e->insp == 0 ? "not inspected" : al->insps[e->insp -
		    1].raw ? "raw" : "inspected");
	else if (c != NULL)
		al_diag_add(diag, true, al->file, e->line, "already covered "
		    "by '%s' (line %u)", al->strs + c->text, c->line);
}

void
al_warn_covered(const struct allowlist *al, struct allowlist_diag *diag)
{
	bool any = false;

	/* Without wildcards or denies nothing can cover anything. */
	for (size_t e = 0; e < al->nentries && !any; e++)
		any = al->entries[e].kind == AL_ALLOW_WILD ||
		    al->entries[e].kind == AL_DENY_WILD ||
		    al->entries[e].kind == AL_DENY_EXACT;
	for (size_t e = 0; e < al->nentries && any; e++)
		warn_covered(al, diag, &al->entries[e]);
}
