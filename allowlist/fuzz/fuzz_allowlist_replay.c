/*
 * libFuzzer target for replay's access-log line parser and the feed that
 * groups its changes: any bytes, split into lines, go through
 * allowlist_replay_feed under a small policy set. Invariants: every line
 * is counted exactly once (replayed, skipped, malformed, too old or empty), changed +
 * unchanged == replayed, and each change's verdicts differ.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "allowlist/replay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char policy_text[] =
    "example.com\n"
    "*.example.org:443,8443\n"
    "!bad.example.org\n"
    "api.example.net:443 inspect methods=GET paths=/v1/*\n"
    "git.example.net:22 raw\n"
    "203.0.113.7\n";

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct allowlist_set *set;
	struct allowlist_replay_stats st;
	const char *p = (const char *)data, *end = p + size;
	uint64_t lineno = 0, skipped = 0, empty = 0;

	if (set == NULL && allowlist_set_parse("fuzz.list", policy_text,
	    sizeof(policy_text) - 1, &set, NULL) != 0)
		abort();
	allowlist_replay_stats_init(&st);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);
		uint64_t before = st.replayed + st.malformed + st.too_old;
		size_t i;

		skipped = 0;
		for (i = 0; i < st.nskipped; i++)
			skipped += st.skipped[i].count;
		if (allowlist_replay_feed(&st, set, p, n, ++lineno,
		    lineno % 2 ? NULL : "2026-01-01T00:00:00.000Z") != 0)
			abort();
		{
			uint64_t s2 = 0;
			for (i = 0; i < st.nskipped; i++)
				s2 += st.skipped[i].count;
			uint64_t after = st.replayed + st.malformed +
			    st.too_old;
			uint64_t counted = (after - before) + (s2 - skipped);
			if (counted > 1)
				abort();
			if (counted == 0)
				empty++;
		}
		p += n + (nl != NULL);
	}
	if (st.lines != lineno || st.changed + st.unchanged != st.replayed)
		abort();
	for (size_t i = 0; i < st.nchanges; i++)
		if (st.changes[i].from_allowed == st.changes[i].to_allowed ||
		    st.changes[i].count == 0)
			abort();
	allowlist_replay_sort(&st);
	allowlist_replay_stats_free(&st);
	(void)empty;
	return 0;
}
