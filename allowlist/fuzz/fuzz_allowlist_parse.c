/*
 * libFuzzer target for the allowlist parser: any bytes as a file. Checks
 * that loading is all-or-nothing, that diagnostics name the file, and that
 * a loaded policy answers a few lookups.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "allowlist/allowlist.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *hosts[] = { "example.com", "a.example.com",
	    "[2001:db8::1]", "203.0.113.7", "x.y.z.co.uk", "localhost" };
	struct allowlist_diag diag;
	struct allowlist_set *set = NULL;
	const struct allowlist *al;
	int r;

	allowlist_diag_init(&diag);
	r = allowlist_set_parse("fuzz", (const char *)data, size, &set, &diag);
	if (r == 0) {
		if (set == NULL || diag.errors != 0)
			abort();
	} else if (set != NULL || (r == -EINVAL && diag.errors == 0)) {
		abort();
	}
	for (size_t i = 0; i < diag.count; i++)
		if (strncmp(diag.items[i].text, "fuzz:", 5) != 0 ||
		    diag.items[i].message == NULL)
			abort();
	al = allowlist_set_policy(set, NULL);
	if (r == 0 && al == NULL)
		abort();
	for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
		struct allowlist_decision d;
		bool ok = allowlist_match(al, hosts[i], 443, &d);
		if (ok != d.allowed || d.reason == NULL ||
		    (ok && (d.entry == NULL || d.line == 0)))
			abort();
	}
	allowlist_set_free(set);
	allowlist_diag_cleanup(&diag);
	return 0;
}
