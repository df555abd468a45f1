/*
 * Suggest: allowlist lines that would allow what a policy denied for not
 * being on it ("learn mode"), from the denials a caller collects (an
 * access log, run results). The output is allowlist text, one entry per
 * host with exactly the ports seen and a comment giving the count and an
 * example; with wildcards, three or more sibling names under one parent
 * become "*.parent" with the union of their ports.
 *
 * Never suggested: a host that is not a valid name or address, an
 * internal name (allowlist_host_internal), an address the caller's
 * internal() says the proxy refuses anyway, and any line the loader
 * would reject or warn about (so never a wildcard over a public suffix,
 * nor one with public suffixes beneath its base), or that would not
 * allow every (host, port) it stands for. What is left out is listed in
 * comments with the reason. Pure apart from allocation.
 */
#ifndef CORDON_ALLOWLIST_SUGGEST_H
#define CORDON_ALLOWLIST_SUGGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allowlist/allowlist.h"

#define SUGGEST_HOSTS_MAX	10000	/* distinct hosts kept; rest counted */

struct allowlist_suggest;

struct allowlist_suggest *allowlist_suggest_new(void);
void allowlist_suggest_free(struct allowlist_suggest *s);	/* NULL ok */

/*
 * One denial of host on port (0: a DNS query, no port) seen count times;
 * example: a short text shown for the first sighting (copied, at most 200
 * bytes kept). 0, or -ENOMEM.
 */
int allowlist_suggest_add(struct allowlist_suggest *s, const char *host,
    long port, uint64_t count, const char *example);

/* Whether the proxy refuses this address whatever the allowlist says
 * (h->family is AF_INET or AF_INET6). */
typedef bool (*allowlist_suggest_internal_fn)(const struct allowlist_host *h);

/*
 * The suggestion as allowlist text (NUL-terminated, malloc'd, caller
 * frees). header: a comment put first (without '#'), or NULL. Returns
 * the number of entry lines (0 or more), or -ENOMEM.
 */
int allowlist_suggest_render(const struct allowlist_suggest *s,
    bool wildcards, allowlist_suggest_internal_fn internal,
    const char *header, char **out);

#endif
