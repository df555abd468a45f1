/*
 * Allowlist suggestions from denials (suggest.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "allowlist/suggest.h"

#define SUGGEST_PORTS_MAX	ALLOWLIST_PORTS_MAX
#define SUGGEST_EXAMPLE_MAX	200

struct sg_host {
	char *text;		/* as given by the caller */
	long ports[SUGGEST_PORTS_MAX];
	size_t nports;
	bool dns;		/* seen in a DNS query (no port) */
	bool ports_dropped;	/* more ports than an entry may hold */
	uint64_t count;
	char *example;
};

struct allowlist_suggest {
	struct sg_host *hosts;
	size_t n, cap;
	uint64_t dropped;	/* hosts past SUGGEST_HOSTS_MAX */
};

struct allowlist_suggest *
allowlist_suggest_new(void)
{
	return calloc(1, sizeof(struct allowlist_suggest));
}

void
allowlist_suggest_free(struct allowlist_suggest *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->n; i++) {
		free(s->hosts[i].text);
		free(s->hosts[i].example);
	}
	free(s->hosts);
	free(s);
}

static void
add_port(struct sg_host *h, long port)
{
	if (port == 0) {
		h->dns = true;
		return;
	}
	for (size_t i = 0; i < h->nports; i++)
		if (h->ports[i] == port)
			return;
	if (h->nports == SUGGEST_PORTS_MAX) {
		h->ports_dropped = true;
		return;
	}
	h->ports[h->nports++] = port;
}

int
allowlist_suggest_add(struct allowlist_suggest *s, const char *host,
    long port, uint64_t count, const char *example)
{
	struct sg_host *h = NULL;

	if (port < 0 || port > 65535)
		return 0;
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->hosts[i].text, host) == 0) {
			h = &s->hosts[i];
			break;
		}
	if (h == NULL) {
		if (s->n >= SUGGEST_HOSTS_MAX) {
			s->dropped++;
			return 0;
		}
		if (s->n == s->cap) {
			size_t cap = s->cap != 0 ? s->cap * 2 : 16;
			void *p = realloc(s->hosts, cap * sizeof(*s->hosts));
			if (p == NULL)
				return -ENOMEM;
			s->hosts = p;
			s->cap = cap;
		}
		h = &s->hosts[s->n];
		memset(h, 0, sizeof(*h));
		if ((h->text = strdup(host)) == NULL)
			return -ENOMEM;
		if (example != NULL && (h->example = strndup(example,
		    SUGGEST_EXAMPLE_MAX)) == NULL) {
			free(h->text);
			return -ENOMEM;
		}
		/* It goes into a comment: one line of printable ASCII. */
		for (char *c = h->example; c != NULL && *c; c++)
			if (*c < 0x20 || *c > 0x7e)
				*c = '?';
		s->n++;
	}
	add_port(h, port);
	h->count += count;
	return 0;
}

/* --- rendering ---------------------------------------------------------- */

/* A normalised host ready to be written as an entry. */
struct sg_item {
	const struct sg_host *src;
	struct allowlist_host h;
	size_t parent;		/* names: offset of what follows the first
				   label in h.text; 0 when none */
	bool covered;		/* taken by a wildcard line */
};

/* An item's parent name, or NULL (items move when sorted: offsets, not
 * pointers, are kept). */
static const char *
parent_of(const struct sg_item *it)
{
	return it->parent != 0 ? it->h.text + it->parent : NULL;
}

static int
long_cmp(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return x < y ? -1 : x > y;
}

static int
item_cmp(const void *a, const void *b)
{
	const struct sg_item *x = a, *y = b;

	return strcmp(x->h.text, y->h.text);
}

/* "host" as an entry's host part: a bare name or IPv4, "[v6]". */
static void
entry_host(const struct allowlist_host *h, char *buf, size_t len)
{
	if (h->family == AF_INET6)
		snprintf(buf, len, "[%s]", h->text);
	else
		snprintf(buf, len, "%s", h->text);
}

static void
port_list(const long *ports, size_t n, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && used < len; i++) {
		int w = snprintf(buf + used, len - used, "%s%ld",
		    i > 0 ? "," : "", ports[i]);
		if (w < 0)
			break;
		used += (size_t)w;
	}
}

/* Loads text as one policy "default"; NULL when it has an error or a
 * warning (*why says which). */
static struct allowlist_set *
load_clean(const char *text, const char **why)
{
	struct allowlist_set *set = NULL;
	struct allowlist_diag diag;

	allowlist_diag_init(&diag);
	if (allowlist_set_parse("suggest", text, strlen(text), &set,
	    &diag) != 0) {
		*why = "the loader rejects it";
	} else if (diag.count > 0) {
		*why = "the loader warns about it";
		allowlist_set_free(set);
		set = NULL;
	}
	allowlist_diag_cleanup(&diag);
	return set;
}

/* Whether set allows the item's host on each of its ports. */
static bool
item_allowed(const struct allowlist_set *set, const struct sg_item *it)
{
	const struct allowlist *pol = allowlist_set_policy(set, "default");

	for (size_t p = 0; p < it->src->nports; p++)
		if (!allowlist_match(pol, it->h.text, it->src->ports[p], NULL))
			return false;
	return true;
}

/*
 * Whether the lines already suggested (acc) plus line load with no error
 * and no warning (a wildcard line may cover an exact one: a warning), and
 * allow each host of items[0..n) on each of its ports. *why gets a reason
 * when not.
 */
static bool
line_ok(const char *acc, const char *line, const struct sg_item *const *items,
    size_t n, const char **why)
{
	struct allowlist_set *set;
	char *text;
	bool ok = true;

	if (asprintf(&text, "%s%s", acc != NULL ? acc : "", line) < 0) {
		*why = "out of memory";
		return false;
	}
	set = load_clean(text, why);
	free(text);
	if (set == NULL)
		return false;
	for (size_t i = 0; ok && i < n; i++)
		if (!item_allowed(set, items[i])) {
			*why = "it would not allow what was denied";
			ok = false;
		}
	allowlist_set_free(set);
	return ok;
}

/* Writes the item's entry line (true), or a comment saying why not. */
static bool
render_exact(FILE *f, const struct sg_item *it)
{
	const struct sg_host *src = it->src;
	char host[300], ports[SUGGEST_PORTS_MAX * 6 + 1], line[700];
	const char *why = NULL;
	long sorted[SUGGEST_PORTS_MAX];

	entry_host(&it->h, host, sizeof(host));
	if (src->nports == 0) {
		fprintf(f, "# %s: asked for only by DNS (%llu), no port seen: "
		    "add %s:PORT by hand if it is wanted\n", it->h.text,
		    (unsigned long long)src->count, host);
		return false;
	}
	memcpy(sorted, src->ports, src->nports * sizeof(long));
	qsort(sorted, src->nports, sizeof(long), long_cmp);
	port_list(sorted, src->nports, ports, sizeof(ports));
	snprintf(line, sizeof(line), "%s:%s\n", host, ports);
	if (!line_ok(NULL, line, (const struct sg_item *const[]){ it }, 1,
	    &why)) {
		fprintf(f, "# not suggested: %s:%s (%s)\n", host, ports, why);
		return false;
	}
	fprintf(f, "%s:%s  # %llu denied%s%s%s\n", host, ports,
	    (unsigned long long)src->count,
	    src->example != NULL ? ", e.g. " : "",
	    src->example != NULL ? src->example : "",
	    src->ports_dropped ? " (more ports seen than an entry holds)" :
	    "");
	return true;
}

/* Items [b, e) share a parent: one wildcard line for them, if it is valid
 * next to the wildcard lines already written (*acc, appended to) and
 * allows each. Returns true when written. */
static bool
render_wildcard(FILE *f, struct sg_item *items, size_t b, size_t e,
    char **acc)
{
	const struct sg_item **group;
	long ports[SUGGEST_PORTS_MAX];
	char plist[SUGGEST_PORTS_MAX * 6 + 1], line[700], *next;
	const char *why = NULL, *parent = parent_of(&items[b]);
	size_t np = 0, n = e - b;
	uint64_t count = 0;
	bool covered = *acc != NULL, ok;

	if (n < 3)
		return false;
	for (size_t i = b; i < e; i++) {
		count += items[i].src->count;
		if (items[i].src->nports == 0)
			return false;	/* DNS only: no port to open */
		for (size_t p = 0; p < items[i].src->nports; p++) {
			bool have = false;
			for (size_t q = 0; q < np; q++)
				have = have || ports[q] == items[i].src->ports[p];
			if (!have) {
				if (np == SUGGEST_PORTS_MAX)
					return false;
				ports[np++] = items[i].src->ports[p];
			}
		}
	}
	/* A broader wildcard written before may take them all already. */
	if (covered) {
		struct allowlist_set *set = load_clean(*acc, &why);
		for (size_t i = b; set != NULL && covered && i < e; i++)
			covered = item_allowed(set, &items[i]);
		allowlist_set_free(set);
	}
	if (covered) {
		fprintf(f, "# %zu names under %s: allowed by a wildcard above\n",
		    n, parent);
		for (size_t i = b; i < e; i++)
			items[i].covered = true;
		return false;
	}
	qsort(ports, np, sizeof(long), long_cmp);
	port_list(ports, np, plist, sizeof(plist));
	snprintf(line, sizeof(line), "*.%s:%s\n", parent, plist);
	if ((group = calloc(n, sizeof(*group))) == NULL)
		return false;
	for (size_t i = b; i < e; i++)
		group[i - b] = &items[i];
	ok = line_ok(*acc, line, group, n, &why);
	free(group);
	if (!ok) {
		fprintf(f, "# no wildcard for %zu names under %s: *.%s:%s "
		    "(%s)\n", n, parent, parent, plist, why);
		return false;
	}
	if (asprintf(&next, "%s%s", *acc != NULL ? *acc : "", line) < 0)
		return false;
	free(*acc);
	*acc = next;
	fprintf(f, "*.%s:%s  # %llu denied for %zu names:", parent, plist,
	    (unsigned long long)count, n);
	for (size_t i = b; i < e; i++)
		fprintf(f, " %s", items[i].h.text);
	fprintf(f, "\n");
	for (size_t i = b; i < e; i++)
		items[i].covered = true;
	return true;
}

/* A run of items sharing a parent. */
struct sg_group {
	size_t b, e, parent_len;
};

static int
group_cmp(const void *a, const void *b)
{
	const struct sg_group *x = a, *y = b;

	if (x->parent_len != y->parent_len)
		return x->parent_len < y->parent_len ? -1 : 1;
	return x->b < y->b ? -1 : x->b > y->b;
}

static int
parent_cmp(const void *a, const void *b)
{
	const struct sg_item *x = a, *y = b;
	int r;

	if (x->parent == 0 || y->parent == 0)
		return (x->parent == 0) - (y->parent == 0);
	if ((r = strcmp(parent_of(x), parent_of(y))) != 0)
		return r;
	return strcmp(x->h.text, y->h.text);
}

int
allowlist_suggest_render(const struct allowlist_suggest *s,
    bool wildcards, allowlist_suggest_internal_fn internal,
    const char *header, char **out)
{
	struct allowlist_set *accset = NULL;
	struct sg_item *items = NULL;
	size_t n = 0, len = 0;
	char *buf = NULL, *acc = NULL;	/* acc: wildcard lines written */
	int entries = 0, rc = 0;
	FILE *f;

	*out = NULL;
	if ((f = open_memstream(&buf, &len)) == NULL)
		return -ENOMEM;
	if (header != NULL)
		fprintf(f, "# %s\n", header);
	if (s->n > 0 && (items = calloc(s->n, sizeof(*items))) == NULL) {
		fclose(f);
		free(buf);
		return -ENOMEM;
	}
	for (size_t i = 0; i < s->n; i++) {
		struct sg_item *it = &items[n];
		const char *t = s->hosts[i].text;
		bool dup = false;

		if (allowlist_host_parse(t, &it->h) != 0) {
			fprintf(f, "# not suggested: a host that is not valid "
			    "(");
			for (size_t k = 0; t[k] != '\0' && k < 80; k++)
				fputc(t[k] >= 0x20 && t[k] <= 0x7e ? t[k] : '?',
				    f);
			fprintf(f, ")\n");
			continue;
		}
		if (it->h.family == 0 && allowlist_host_internal(it->h.text)) {
			fprintf(f, "# not suggested: %s (an internal name the "
			    "proxy refuses anyway)\n", it->h.text);
			continue;
		}
		if (it->h.family != 0 && internal != NULL &&
		    internal(&it->h)) {
			fprintf(f, "# not suggested: %s (an internal address "
			    "the proxy refuses anyway)\n", it->h.text);
			continue;
		}
		/* Two spellings of one host ("A.example" and "a.example."):
		 * merged into the first. */
		for (size_t j = 0; j < n && !dup; j++)
			dup = strcmp(items[j].h.text, it->h.text) == 0;
		if (dup)
			continue;
		it->src = &s->hosts[i];
		if (it->h.family == 0 && strchr(it->h.text, '.') != NULL)
			it->parent = (size_t)(strchr(it->h.text, '.') -
			    it->h.text) + 1;
		n++;
	}
	if (wildcards && n > 0) {
		struct sg_group *groups = calloc(n, sizeof(*groups));
		size_t ng = 0;

		if (groups == NULL) {
			rc = -ENOMEM;
			goto out;
		}
		qsort(items, n, sizeof(*items), parent_cmp);
		for (size_t b = 0; b < n;) {
			size_t e = b + 1;
			while (e < n && items[b].parent != 0 &&
			    items[e].parent != 0 && strcmp(parent_of(&items[e]),
			    parent_of(&items[b])) == 0)
				e++;
			if (items[b].parent != 0 && e - b >= 3)
				groups[ng++] = (struct sg_group){ b, e,
				    strlen(parent_of(&items[b])) };
			b = e;
		}
		/* Broader parents first: a narrower wildcard they already
		 * take is not written (the loader would warn about it). */
		qsort(groups, ng, sizeof(*groups), group_cmp);
		for (size_t g = 0; g < ng; g++)
			if (render_wildcard(f, items, groups[g].b, groups[g].e,
			    &acc))
				entries++;
		free(groups);
	}
	qsort(items, n, sizeof(*items), item_cmp);
	if (acc != NULL) {
		const char *why;
		accset = load_clean(acc, &why);
	}
	for (size_t i = 0; i < n; i++) {
		if (items[i].covered)
			continue;
		if (accset != NULL && items[i].src->nports > 0 &&
		    item_allowed(accset, &items[i])) {
			fprintf(f, "# %s: allowed by a wildcard above\n",
			    items[i].h.text);
			continue;
		}
		if (render_exact(f, &items[i]))
			entries++;
	}
	if (s->dropped > 0)
		fprintf(f, "# and %llu more hosts not listed\n",
		    (unsigned long long)s->dropped);
out:
	allowlist_set_free(accset);
	free(acc);
	free(items);
	if (fclose(f) != 0 || rc < 0) {
		free(buf);
		return rc < 0 ? rc : -ENOMEM;
	}
	*out = buf;
	return entries;
}
