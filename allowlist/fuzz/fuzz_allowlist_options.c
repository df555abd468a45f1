/*
 * libFuzzer target for entry options and the secrets store: the input is
 * allowlist text after the host "fuzz.example " (so its first line is an
 * option list), then, after a NUL byte, a secrets file. Checks that
 * loading is all-or-nothing, that no diagnostic holds a secret value, that
 * a loaded entry's options are well-formed and re-parse from their
 * canonical text to the same text, and that allowlist_inspect_check
 * agrees with the patterns.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allowlist/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HOST	"fuzz.example"

/* Loads text with store (may be NULL) as policy "fuzz"; returns it or
 * NULL, checking the all-or-nothing and diagnostic invariants. */
static struct allowlist *
load(const char *text, size_t len, struct al_secrets *store, bool skip,
    struct allowlist_diag *diag)
{
	struct allowlist *al = al_policy_new("default", "fuzz");
	long r;

	if (al == NULL)
		return NULL;
	r = al_parse_text(al, text, len, diag);
	if (r == 0)
		r = al_secrets_resolve(al, store, skip, diag);
	if (r != 0) {
		if (r > 0 && diag->errors == 0)
			abort();
		al_policy_free(al);
		return NULL;
	}
	if (diag->errors != 0)
		abort();
	return al;
}

/* The options of the entry deciding HOST:443, checked for form. */
static void
check_inspect(const struct allowlist_inspect *in, bool skip)
{
	char buf[ALLOWLIST_PATTERN_MAX + 8];
	const char *why;

	if (in->text == NULL || strncmp(in->text, "inspect", 7) != 0)
		abort();
	if (in->nmethods > ALLOWLIST_METHODS_MAX ||
	    in->npaths > ALLOWLIST_PATHS_MAX ||
	    (in->nmethods > 0) != (in->methods != NULL) ||
	    (in->npaths > 0) != (in->paths != NULL))
		abort();
	for (size_t i = 0; i < in->nmethods; i++) {
		const char *m = in->methods[i];
		if (m[0] < 'A' || m[0] > 'Z' || strcmp(m, "CONNECT") == 0)
			abort();
	}
	if ((in->inject_header == NULL) != (in->inject_secret == NULL))
		abort();
	if (in->inject_header != NULL && (skip ? in->inject_value != NULL :
	    in->inject_value == NULL))
		abort();
	if (in->inject_value != NULL && (strpbrk(in->inject_value, "\r\n") ||
	    in->inject_value[0] == '\0'))
		abort();
	for (size_t i = 0; i < in->npaths; i++) {
		const char *p = in->paths[i];
		size_t n = strlen(p);
		const char *m = in->nmethods > 0 ? in->methods[0] : "GET";
		bool star = n > 0 && p[n - 1] == '*';
		if (p[0] != '/' || strchr(p, '?') != NULL ||
		    n > ALLOWLIST_PATTERN_MAX)
			abort();
		if (!star) {
			/* An exact pattern allows itself. */
			if (!allowlist_inspect_check(in, m, p, &why))
				abort();
			continue;
		}
		/* A prefix pattern allows what extends it, when canonical. */
		memcpy(buf, p, n - 1);
		memcpy(buf + n - 1, "x", 2);
		if (al_path_problem(buf, n, false) == NULL &&
		    !allowlist_inspect_check(in, m, buf, &why))
			abort();
	}
	if (allowlist_inspect_check(in, "GET", "/a/../b", &why) ||
	    allowlist_inspect_check(in, "GET", "//x", &why) ||
	    allowlist_inspect_check(in, "GET", "*", &why) ||
	    allowlist_inspect_check(in, "CONNECT", HOST ":443", &why))
		abort();
}

/* The canonical text re-parses to itself (secrets not needed). */
static void
check_canonical(const char *text)
{
	struct allowlist_diag diag;
	struct allowlist_decision d;
	struct allowlist *al;
	char *line;
	int n;

	if ((n = asprintf(&line, HOST " %s\n", text)) < 0)
		return;
	allowlist_diag_init(&diag);
	if ((al = load(line, (size_t)n, NULL, true, &diag)) == NULL) {
		if (diag.errors != 0)
			abort();	/* only out of memory may fail */
	} else {
		if (!allowlist_match(al, HOST, 443, &d) || d.inspect == NULL ||
		    strcmp(d.inspect->text, text) != 0)
			abort();
		al_policy_free(al);
	}
	allowlist_diag_cleanup(&diag);
	free(line);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t alen = nul != NULL ? (size_t)(nul - data) : size;
	struct allowlist_diag diag, sdiag;
	struct allowlist_decision d;
	struct al_secrets *store = NULL;
	struct allowlist *al;
	char *text, target[256];
	bool skip;
	int r;

	allowlist_diag_init(&diag);
	allowlist_diag_init(&sdiag);
	if (nul != NULL) {
		r = al_secrets_parse("store", (const char *)nul + 1,
		    size - alen - 1, &store, &sdiag);
		if ((r == 0) != (sdiag.errors == 0) || (r == 0) !=
		    (store != NULL))
			abort();
		for (size_t i = 0; i < sdiag.count; i++)
			if (strncmp(sdiag.items[i].text, "store:", 6) != 0)
				abort();
	}
	skip = nul == NULL;
	if ((text = malloc(sizeof(HOST) + alen)) == NULL)
		goto out;
	memcpy(text, HOST " ", sizeof(HOST));
	memcpy(text + sizeof(HOST), data, alen);
	al = load(text, sizeof(HOST) + alen, store, skip, &diag);
	for (size_t i = 0; i < diag.count; i++)
		if ((strncmp(diag.items[i].text, "fuzz:", 5) != 0 &&
		    strncmp(diag.items[i].text, "store", 5) != 0) ||
		    diag.items[i].message == NULL)
			abort();
	/* raw excludes every other option. */
	if (al != NULL && allowlist_match(al, HOST, 443, &d) && d.raw &&
	    d.inspect != NULL)
		abort();
	if (al != NULL && allowlist_match(al, HOST, 443, &d) &&
	    d.inspect != NULL) {
		const struct allowlist_inspect *in = d.inspect;
		check_inspect(in, skip);
		/* No diagnostic quotes the value (long enough to tell). */
		if (in->inject_value != NULL && strlen(in->inject_value) >= 8) {
			for (size_t i = 0; i < diag.count; i++)
				if (strstr(diag.items[i].text,
				    in->inject_value) != NULL)
					abort();
			for (size_t i = 0; i < sdiag.count; i++)
				if (strstr(sdiag.items[i].text,
				    in->inject_value) != NULL)
					abort();
		}
		check_canonical(in->text);
		/* The input's first bytes as a target. */
		snprintf(target, sizeof(target), "%.*s", (int)(alen < 200 ?
		    alen : 200), (const char *)data);
		if (allowlist_inspect_check(in, "GET", target, NULL)) {
			size_t q = strcspn(target, "?");
			if (target[0] != '/' || al_path_problem(target, q,
			    false) != NULL)
				abort();
			/* No path parameter, in any spelling, passes. */
			for (size_t i = 0; i < q; i++)
				if (target[i] == ';' || (target[i] == '%' &&
				    i + 2 < q && target[i + 1] == '3' &&
				    (target[i + 2] == 'b' ||
				    target[i + 2] == 'B')))
					abort();
		}
	}
	al_policy_free(al);
	free(text);
out:
	al_secrets_free(store);
	allowlist_diag_cleanup(&diag);
	allowlist_diag_cleanup(&sdiag);
	return 0;
}
