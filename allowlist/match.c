/*
 * The matcher the proxy asks for every request: deny entries, then exact
 * and wildcard allows, from the keys of the request name and its label
 * suffixes (al_suffix_keys), with the decision and its reason. Never
 * allocates; safe from many threads at once.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "allowlist/internal.h"
#include "common/util.h"

static void
decision_set(struct allowlist_decision *d, bool allowed, const char *reason,
    const struct allowlist *al, const struct al_entry *e)
{
	d->allowed = allowed;
	d->reason = reason;
	d->file = e != NULL ? al->file : NULL;
	d->line = e != NULL ? e->line : 0;
	d->entry = e != NULL ? al->strs + e->text : NULL;
	d->raw = allowed && e != NULL && e->insp != 0 &&
	    al->insps[e->insp - 1].raw;
	d->inspect = allowed && e != NULL && e->insp != 0 && !d->raw ?
	    &al->inspect[e->insp - 1] : NULL;
}

/* Walks the chain of kind under key k: the first entry listing port, or
 * NULL; *hostmatch gets the chain's first entry when it is still NULL. */
static const struct al_entry *
match_chain(const struct allowlist *al, int32_t k, int kind, unsigned port,
    const struct al_entry **hostmatch)
{
	int32_t i;

	if (k < 0)
		return NULL;
	i = al->keys[k].head[kind];
	if (i >= 0 && hostmatch != NULL && *hostmatch == NULL)
		*hostmatch = &al->entries[i];
	for (; i >= 0; i = al->entries[i].next)
		if (al_entry_has_port(al, &al->entries[i], port))
			return &al->entries[i];
	return NULL;
}

/*
 * The allow wildcards for name s (len bytes), most specific first: the
 * first entry listing port, or NULL. A wildcard whose key may have public
 * suffixes beneath it covers s only when s's registrable domain is its
 * base or above it; the registrable domain is looked up at most once, and
 * only then, as it costs more than the rest of the lookup. *crossed gets
 * the first entry refused that way.
 */
static const struct al_entry *
match_wild(const struct allowlist *al, const char *s, size_t len,
    const int32_t *sufkeys, size_t nsuf, unsigned port,
    const struct al_entry **hostmatch, const struct al_entry **crossed)
{
	const struct al_entry *e;
	const char *reg = NULL;
	bool looked = false;

	for (size_t i = 0; i < nsuf; i++) {
		const struct al_key *k = &al->keys[sufkeys[i]];
		if (k->head[AL_ALLOW_WILD] < 0)
			continue;
		if (k->psl_check) {
			if (!looked)
				reg = al->psl != NULL ?
				    psl_registrable_domain(al->psl, s) : NULL;
			looked = true;
			if (reg == NULL || len - (size_t)(reg - s) > k->len) {
				if (*crossed == NULL)
					*crossed = &al->entries[
					    k->head[AL_ALLOW_WILD]];
				continue;
			}
		}
		if ((e = match_chain(al, sufkeys[i], AL_ALLOW_WILD, port,
		    hostmatch)) != NULL)
			return e;
	}
	return NULL;
}

static bool
match_name(const struct allowlist *al, const struct allowlist_host *h,
    unsigned port, struct allowlist_decision *d)
{
	int32_t sufkeys[AL_LABELS_MAX];
	size_t nsuf = 0, len = strlen(h->text);
	const char *s = h->text;
	const struct al_entry *e, *hostmatch = NULL, *crossed = NULL;
	int32_t exact = -1;

	if (h->family == 0)
		nsuf = al_suffix_keys(al, s, len, &exact, sufkeys);
	else
		exact = al_key_find(al, false, s, len, al_hash(s, len));

	/* A wildcard key is a proper suffix, never the name itself, so
	 * "*.x" does not cover "x". */
	if ((e = match_chain(al, exact, AL_DENY_EXACT, port, NULL)) != NULL)
		goto deny;
	for (size_t i = 0; i < nsuf; i++)
		if ((e = match_chain(al, sufkeys[i], AL_DENY_WILD, port,
		    NULL)) != NULL)
			goto deny;
	if ((e = match_chain(al, exact, AL_ALLOW_EXACT, port,
	    &hostmatch)) != NULL)
		goto allow;
	if ((e = match_wild(al, s, len, sufkeys, nsuf, port, &hostmatch,
	    &crossed)) != NULL)
		goto allow;
	if (hostmatch != NULL)
		decision_set(d, false, "port-not-allowed", al, hostmatch);
	else if (crossed != NULL)
		decision_set(d, false, "wildcard-crosses-public-suffix", al,
		    crossed);
	else
		decision_set(d, false, "no-match", NULL, NULL);
	return false;
deny:
	decision_set(d, false, "denied-by-entry", al, e);
	return false;
allow:
	decision_set(d, true, "allowed-by-entry", al, e);
	return true;
}

bool
allowlist_match(const struct allowlist *al, const char *host, long port,
    struct allowlist_decision *d)
{
	struct allowlist_decision tmp;
	struct allowlist_host h;

	if (d == NULL)
		d = &tmp;
	if (al == NULL) {
		decision_set(d, false, "no-policy", NULL, NULL);
		return false;
	}
	if (allowlist_host_parse(host, &h) != 0) {
		decision_set(d, false, "invalid-host", NULL, NULL);
		return false;
	}
	if (port < 1 || port > 65535) {
		decision_set(d, false, "invalid-port", NULL, NULL);
		return false;
	}
	return match_name(al, &h, (unsigned)port, d);
}

/* "443" -> 443, else -1: util_port_parse, the proxy's parser too, so
 * explain and the proxy agree on every spelling ("0443" is no port). */
static long
authority_port(const char *s)
{
	uint16_t v;

	return util_port_parse(s, strlen(s), &v) == 0 ? (long)v : -1;
}

bool
allowlist_match_authority(const struct allowlist *al, const char *authority,
    long default_port, struct allowlist_decision *d)
{
	struct allowlist_decision tmp;
	char host[AL_NAME_MAX + 8];
	const char *colon, *end;
	long port = default_port;
	size_t hlen;

	if (d == NULL)
		d = &tmp;
	if (al == NULL) {
		decision_set(d, false, "no-policy", NULL, NULL);
		return false;
	}
	if (authority == NULL)
		goto badhost;
	if (authority[0] == '[') {
		if ((end = strchr(authority, ']')) == NULL)
			goto badhost;
		end++;
		if (*end != '\0' && *end != ':')
			goto badhost;
		colon = *end == ':' ? end : NULL;
	} else {
		colon = strchr(authority, ':');
		if (colon != NULL && strchr(colon + 1, ':') != NULL)
			goto badhost;	/* bare IPv6 needs brackets here */
		end = colon != NULL ? colon : authority + strlen(authority);
	}
	hlen = (size_t)(end - authority);
	if (hlen >= sizeof(host))
		goto badhost;
	memcpy(host, authority, hlen);
	host[hlen] = '\0';
	if (colon != NULL && (port = authority_port(colon + 1)) < 0) {
		struct allowlist_host h;
		if (allowlist_host_parse(host, &h) != 0)
			goto badhost;
		decision_set(d, false, "invalid-port", NULL, NULL);
		return false;
	}
	return allowlist_match(al, host, port, d);
badhost:
	decision_set(d, false, "invalid-host", NULL, NULL);
	return false;
}

/* Adds e's ports (every port of an allow entry is listed: only deny
 * entries have all_ports) to ports[0..*n), without repeats. */
static void
any_port_add(const struct allowlist *al, const struct al_entry *e,
    unsigned *ports, size_t *n, size_t max)
{
	for (size_t i = 0; i < e->nports; i++) {
		unsigned p = al_entry_port(al, e, i);
		size_t k;
		for (k = 0; k < *n; k++)
			if (ports[k] == p)
				break;
		if (k == *n && *n < max)
			ports[(*n)++] = p;
	}
}

static void
any_port_chain(const struct allowlist *al, int32_t k, int kind,
    unsigned *ports, size_t *n, size_t max)
{
	if (k < 0)
		return;
	for (int32_t i = al->keys[k].head[kind]; i >= 0;
	    i = al->entries[i].next)
		any_port_add(al, &al->entries[i], ports, n, max);
}

bool
allowlist_match_any_port(const struct allowlist *al, const char *host,
    struct allowlist_decision *d)
{
	unsigned ports[512];
	int32_t sufkeys[AL_LABELS_MAX], exact = -1;
	struct allowlist_decision tmp;
	struct allowlist_host h;
	size_t n = 0, nsuf = 0;

	if (d == NULL)
		d = &tmp;
	if (al == NULL || allowlist_host_parse(host, &h) != 0)
		return allowlist_match(al, host, 443, d);
	if (h.family == 0)
		nsuf = al_suffix_keys(al, h.text, strlen(h.text), &exact,
		    sufkeys);
	else
		exact = al_key_find(al, false, h.text, strlen(h.text),
		    al_hash(h.text, strlen(h.text)));
	/* Every port an allow entry for the host lists: the host is allowed
	 * somewhere when one of them passes the whole decision (denies,
	 * public suffixes). */
	any_port_chain(al, exact, AL_ALLOW_EXACT, ports, &n, 512);
	for (size_t i = 0; i < nsuf; i++)
		any_port_chain(al, sufkeys[i], AL_ALLOW_WILD, ports, &n, 512);
	for (size_t i = 0; i < n; i++)
		if (allowlist_match(al, host, (long)ports[i], d))
			return true;
	/* The reason of the most usual port. */
	(void)allowlist_match(al, host, n > 0 ? (long)ports[0] : 443, d);
	return false;
}
