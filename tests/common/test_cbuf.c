/* Unit tests for the capped buffer: the limit is never exceeded. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cbuf.h"

static void
test_append_within_limit(void **state)
{
	struct cbuf *b = cbuf_new(16);
	(void)state;
	assert_non_null(b);
	assert_int_equal(cbuf_append(b, "hello", 5), 5);
	assert_int_equal(cbuf_len(b), 5);
	assert_string_equal(cbuf_data(b), "hello");
	assert_false(cbuf_truncated(b));
	cbuf_free(b);
}

static void
test_refuses_past_limit(void **state)
{
	struct cbuf *b = cbuf_new(8);
	(void)state;
	assert_int_equal(cbuf_append(b, "0123456", 7), 7);
	assert_int_equal(cbuf_append(b, "789abc", 6), 1);
	assert_int_equal(cbuf_len(b), 8);
	assert_memory_equal(cbuf_data(b), "01234567", 8);
	assert_true(cbuf_truncated(b));
	assert_int_equal(cbuf_seen(b), 13);
	assert_int_equal(cbuf_append(b, "x", 1), 0);
	assert_int_equal(cbuf_seen(b), 14);
	assert_int_equal(cbuf_len(b), 8);
	assert_int_equal(cbuf_append_str(b, "y"), -ENOSPC);
	cbuf_free(b);
}

static void
test_zero_limit(void **state)
{
	struct cbuf *b = cbuf_new(0);
	(void)state;
	assert_int_equal(cbuf_append(b, "abc", 3), 0);
	assert_int_equal(cbuf_len(b), 0);
	assert_string_equal(cbuf_data(b), "");
	assert_true(cbuf_truncated(b));
	cbuf_free(b);
}

static void
test_large_flood_stays_capped(void **state)
{
	char chunk[4096];
	struct cbuf *b = cbuf_new(100000);
	(void)state;
	memset(chunk, 'a', sizeof(chunk));
	for (int i = 0; i < 1000; i++)
		assert_true(cbuf_append(b, chunk, sizeof(chunk)) >= 0);
	assert_int_equal(cbuf_len(b), 100000);
	assert_int_equal(cbuf_seen(b), 4096000ULL);
	cbuf_free(b);
}

static void
test_reset_and_steal(void **state)
{
	struct cbuf *b = cbuf_new(4);
	size_t n = 99;
	char *s;
	(void)state;
	cbuf_append(b, "abcdef", 6);
	cbuf_reset(b);
	assert_int_equal(cbuf_len(b), 0);
	assert_false(cbuf_truncated(b));
	cbuf_append(b, "xy", 2);
	s = cbuf_steal(b, &n);
	assert_int_equal(n, 2);
	assert_string_equal(s, "xy");
	assert_int_equal(cbuf_len(b), 0);
	free(s);
	cbuf_free(b);
	cbuf_free(NULL);
}


/* ---- KEEP_TAIL / KEEP_BOTH ---- */

static char *
repeat(const char *unit, int times)
{
	size_t n = strlen(unit);
	char *s = malloc(n * (size_t)times + 1);

	assert_non_null(s);
	for (int i = 0; i < times; i++)
		memcpy(s + n * (size_t)i, unit, n);
	s[n * (size_t)times] = '\0';
	return s;
}

/* Offers in[0..len) in chunks of `chunk` bytes. */
static struct cbuf *
feed(size_t limit, enum cbuf_keep keep, const char *in, size_t len,
    size_t chunk)
{
	struct cbuf *b = cbuf_new_keep(limit, keep);

	assert_non_null(b);
	for (size_t off = 0; off < len; off += chunk)
		assert_true(cbuf_append(b, in + off, len - off < chunk ?
		    len - off : chunk) >= 0);
	return b;
}

/* The documented layout, row by row: limit, mode, input (unit x times),
 * what is kept. Every row is fed whole and byte by byte. */
static void
test_keep_table(void **state)
{
	static const struct {
		size_t limit;
		enum cbuf_keep keep;
		const char *unit;
		int times;
		const char *want;
		bool truncated;
	} rows[] = {
		/* Fits: kept as is, whatever the mode. */
		{ 16, CBUF_KEEP_BOTH, "hello", 1, "hello", false },
		{ 5, CBUF_KEEP_TAIL, "hello", 1, "hello", false },
		{ 1, CBUF_KEEP_BOTH, "a", 1, "a", false },
		/* Cap 0: nothing, but the cut is known. */
		{ 0, CBUF_KEEP_BOTH, "abc", 1, "", true },
		{ 0, CBUF_KEEP_TAIL, "abc", 1, "", true },
		{ 0, CBUF_KEEP_BOTH, "", 1, "", false },
		/* Cap 1: the head is 0 bytes, the last byte stays; no room
		 * for the marker. */
		{ 1, CBUF_KEEP_BOTH, "ab", 1, "b", true },
		{ 1, CBUF_KEEP_TAIL, "ab", 1, "b", true },
		{ 1, CBUF_KEEP_HEAD, "ab", 1, "a", true },
		/* Odd caps: the head is limit / 2, the tail the rest. */
		{ 3, CBUF_KEEP_BOTH, "abcdef", 1, "aef", true },
		{ 5, CBUF_KEEP_BOTH, "abcdefgh", 1, "abfgh", true },
		/* Marker longer than the room: head and tail, no marker. */
		{ 31, CBUF_KEEP_BOTH, "0123456789", 4,
		    "012345678901234" "4567890123456789", true },
		/* The marker just fits in a tail buffer. */
		{ 40, CBUF_KEEP_TAIL, "abcdefghijklmnopqrstuvwxyz", 2,
		    "[cordon: 44 bytes dropped here]\nstuvwxyz", true },
		{ 32, CBUF_KEEP_TAIL, "abcdefghijklmnopqrstuvwxyz", 2,
		    "[cordon: 52 bytes dropped here]\n", true },
		/* Head, marker line (after a '\n' of its own: the head
		 * ends mid-line), tail. 88 < 100: one byte of the room
		 * reserved for 3 digits stays unused. */
		{ 80, CBUF_KEEP_BOTH, "line1\nline2\nxxxxxxxxxxxxxxxxxxxxxxxx"
		    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		    "xxxxxxxxxxxxxxxxxxxTraceback\nError: boom\n", 1,
		    "line1\nline2\nxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"
		    "[cordon: 88 bytes dropped here]\n boom\n", true },
		/* A head that ends in '\n' gets no extra one. */
		{ 80, CBUF_KEEP_BOTH, "012345678901234567890123456789012345678"
		    "\n", 3, "012345678901234567890123456789012345678\n"
		    "[cordon: 73 bytes dropped here]\n345678\n", true },
		/* UTF-8: 2-byte characters. Head of 37 bytes ends in half a
		 * character: cut back to 36; tail from a lead byte. */
		{ 74, CBUF_KEEP_BOTH, "\xc3\xa9", 50, NULL, true },
		/* ... tail starting on a continuation byte: skipped. */
		{ 75, CBUF_KEEP_BOTH, "\xc3\xa9", 50, NULL, true },
		/* 4-byte characters in a tail: 2 continuation bytes
		 * skipped. */
		{ 38, CBUF_KEEP_TAIL, "\xf0\x9f\x98\x80", 10,
		    "[cordon: 36 bytes dropped here]\n\xf0\x9f\x98\x80", true },
		/* KEEP_HEAD keeps bytes exactly, half characters too. */
		{ 3, CBUF_KEEP_HEAD, "\xc3\xa9", 2, "\xc3\xa9\xc3", true },
	};
	char *utf8_want = NULL;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char *in = repeat(rows[i].unit, rows[i].times);
		const char *want = rows[i].want;
		size_t len = strlen(in);

		if (want == NULL) {
			/* 18 characters, the marker, 2 characters. */
			free(utf8_want);
			utf8_want = repeat("\xc3\xa9", 18);
			utf8_want = realloc(utf8_want, 200);
			strcat(utf8_want, "\n[cordon: 60 bytes dropped here]\n"
			    "\xc3\xa9\xc3\xa9");
			want = utf8_want;
		}
		for (size_t chunk = len > 0 ? len : 1; ; chunk = 1) {
			struct cbuf *b = feed(rows[i].limit, rows[i].keep, in,
			    len, chunk);
			if (strcmp(cbuf_data(b), want) != 0)
				fail_msg("row %zu (chunk %zu): got '%s' want "
				    "'%s'", i, chunk, cbuf_data(b), want);
			assert_int_equal(cbuf_len(b), strlen(want));
			assert_true(cbuf_len(b) <= rows[i].limit);
			assert_int_equal(cbuf_truncated(b), rows[i].truncated);
			assert_int_equal(cbuf_seen(b), len);
			cbuf_free(b);
			if (chunk == 1)
				break;
		}
		free(in);
	}
	free(utf8_want);
}

/* The same rules written plainly over the whole stream, to check the
 * ring against. */
static size_t
ref_keep(const char *s, size_t n, size_t limit, enum cbuf_keep keep,
    char *out)
{
	size_t hmax = cbuf_keep_head(limit, keep), h, tl, skip = 0, o, mres;
	unsigned long long d;
	char num[32];
	bool nl;

	if (n <= limit || keep == CBUF_KEEP_HEAD) {
		o = n < limit ? n : limit;
		memcpy(out, s, o);
		return o;
	}
	h = hmax;
	for (size_t k = 1; k <= 3 && k <= h; k++) {
		unsigned char c = (unsigned char)s[h - k];
		size_t want = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 1;
		if ((c & 0xc0) == 0x80)
			continue;
		if (c >= 0xc2 && c <= 0xf4 && k < want)
			h -= k;
		break;
	}
	nl = h > 0 && s[h - 1] != '\n';
	mres = 30 + (size_t)snprintf(num, sizeof(num), "%zu", n) + nl;
	tl = limit - h >= mres ? limit - h - mres : limit - h;
	if (tl > limit - hmax)
		tl = limit - hmax;
	while (skip < 3 && skip < tl &&
	    ((unsigned char)s[n - tl + skip] & 0xc0) == 0x80)
		skip++;
	d = n - h - (tl - skip);
	memcpy(out, s, h);
	o = h;
	if (limit - h >= mres)
		o += (size_t)sprintf(out + o, "%s[cordon: %llu bytes dropped "
		    "here]\n", nl ? "\n" : "", d);
	memcpy(out + o, s + n - tl + skip, tl - skip);
	return o + tl - skip;
}

/* Random text (ASCII, newlines, 2-4 byte characters), random limits,
 * modes and chunkings, reads in between: always what ref_keep says, never
 * over the limit. A composition as the --out path does it (head, gap,
 * tail) gives the same. */
static void
test_keep_random(void **state)
{
	static const char *units[] = { "a", "b", "\n", "\xc3\xa9",
	    "\xe2\x82\xac", "\xf0\x9f\x98\x80", "xyz" };
	static const size_t limits[] = { 0, 1, 2, 3, 5, 31, 32, 33, 40, 64, 65,
	    100, 257, 1000 };
	char *in = malloc(5000), *want = malloc(5000);
	unsigned seed = 12345;

	(void)state;
	for (int iter = 0; iter < 3000; iter++) {
		size_t limit = limits[rand_r(&seed) % (sizeof(limits) /
		    sizeof(limits[0]))], len = 0, target, wl, hm;
		enum cbuf_keep keep = (enum cbuf_keep)(rand_r(&seed) % 3);
		struct cbuf *b = cbuf_new_keep(limit, keep), *g;

		target = (size_t)rand_r(&seed) % 3000;
		while (len < target) {
			const char *u = units[rand_r(&seed) % 7];
			memcpy(in + len, u, strlen(u));
			len += strlen(u);
		}
		for (size_t off = 0; off < len; ) {
			size_t c = 1 + (size_t)rand_r(&seed) % 300;
			if (c > len - off)
				c = len - off;
			assert_true(cbuf_append(b, in + off, c) >= 0);
			off += c;
			if (rand_r(&seed) % 5 == 0)
				assert_true(cbuf_len(b) <= limit);
		}
		wl = ref_keep(in, len, limit, keep, want);
		if (cbuf_len(b) != wl || memcmp(cbuf_data(b), want, wl) != 0)
			fail_msg("iter %d limit %zu keep %d len %zu: got %zu "
			    "bytes, want %zu", iter, limit, (int)keep, len,
			    cbuf_len(b), wl);
		assert_int_equal(cbuf_truncated(b), len > limit);
		/* What a capped relay passes on: the head, then the last
		 * limit - head bytes; the host adds the gap between. */
		g = cbuf_new_keep(limit, keep);
		hm = cbuf_keep_head(limit, keep);
		if (len > limit) {
			assert_true(cbuf_append(g, in, hm) >= 0);
			assert_int_equal(cbuf_gap(g, len - limit), 0);
			assert_true(cbuf_append(g, in + len - (limit - hm),
			    limit - hm) >= 0);
		} else {
			assert_true(cbuf_append(g, in, len) >= 0);
		}
		assert_int_equal(cbuf_len(g), wl);
		assert_memory_equal(cbuf_data(g), want, wl);
		assert_int_equal(cbuf_seen(g), len);
		cbuf_free(g);
		cbuf_free(b);
	}
	free(in);
	free(want);
}

/* A gap drops what followed the head so far; later bytes are the tail. */
static void
test_gap(void **state)
{
	struct cbuf *b = cbuf_new_keep(100, CBUF_KEEP_BOTH);
	char *h = repeat("h", 50), *t = repeat("t", 50), *want;

	(void)state;
	assert_true(cbuf_append(b, h, 50) >= 0);
	assert_false(cbuf_truncated(b));
	assert_int_equal(cbuf_gap(b, 1000), 0);
	assert_true(cbuf_truncated(b));
	assert_true(cbuf_append(b, t, 50) >= 0);
	want = malloc(200);
	snprintf(want, 200, "%s\n[cordon: 1035 bytes dropped here]\n%.15s", h,
	    t);
	assert_string_equal(cbuf_data(b), want);
	assert_int_equal(cbuf_seen(b), 1100);
	/* A gap before the head is full: the head is what came first. */
	cbuf_free(b);
	b = cbuf_new_keep(100, CBUF_KEEP_BOTH);
	assert_true(cbuf_append(b, "ab\n", 3) >= 0);
	assert_int_equal(cbuf_gap(b, 5), 0);
	assert_true(cbuf_append(b, "yz\n", 3) >= 0);
	assert_string_equal(cbuf_data(b), "ab\n[cordon: 5 bytes dropped here]\n"
	    "yz\n");
	/* KEEP_HEAD only counts. */
	cbuf_free(b);
	b = cbuf_new(4);
	assert_true(cbuf_append(b, "ab", 2) >= 0);
	assert_int_equal(cbuf_gap(b, 7), 0);
	assert_string_equal(cbuf_data(b), "ab");
	assert_true(cbuf_truncated(b));
	assert_int_equal(cbuf_seen(b), 9);
	cbuf_free(b);
	free(h);
	free(t);
	free(want);
}

/* 64 MiB through a 64 KiB buffer: the end is the end of the stream, and
 * the buffer never held more than its limit. */
static void
test_keep_flood(void **state)
{
	static char chunk[65536];
	struct cbuf *b = cbuf_new_keep(65536, CBUF_KEEP_BOTH);
	size_t n;
	char *s;

	(void)state;
	memset(chunk, 'a', sizeof(chunk));
	for (int i = 0; i < 1024; i++)
		assert_true(cbuf_append(b, chunk, sizeof(chunk)) >= 0);
	assert_true(cbuf_append(b, "\nTraceback: the end\n", 20) >= 0);
	assert_true(cbuf_len(b) <= 65536);
	assert_true(cbuf_len(b) >= 65536 - 1);
	s = strstr(cbuf_data(b), "\n[cordon: ");
	assert_non_null(s);
	assert_int_equal(s - cbuf_data(b), 32768);
	assert_non_null(strstr(cbuf_data(b), "\nTraceback: the end\n"));
	assert_int_equal(strlen(cbuf_data(b)), cbuf_len(b));
	/* steal hands over the view and empties the buffer. */
	s = cbuf_steal(b, &n);
	assert_true(n >= 65535 && strstr(s, "the end\n") != NULL);
	free(s);
	assert_int_equal(cbuf_len(b), 0);
	assert_false(cbuf_truncated(b));
	assert_true(cbuf_append(b, "again", 5) == 5);
	assert_string_equal(cbuf_data(b), "again");
	cbuf_free(b);
}

static void
test_keep_names(void **state)
{
	enum cbuf_keep k;

	(void)state;
	assert_int_equal(cbuf_keep_parse("head", &k), 0);
	assert_int_equal(k, CBUF_KEEP_HEAD);
	assert_int_equal(cbuf_keep_parse("tail", &k), 0);
	assert_int_equal(k, CBUF_KEEP_TAIL);
	assert_int_equal(cbuf_keep_parse("both", &k), 0);
	assert_int_equal(k, CBUF_KEEP_BOTH);
	assert_int_equal(cbuf_keep_parse("Both", &k), -EINVAL);
	assert_int_equal(cbuf_keep_parse("", &k), -EINVAL);
	assert_string_equal(cbuf_keep_name(CBUF_KEEP_TAIL), "tail");
	assert_int_equal(cbuf_keep_head(7, CBUF_KEEP_BOTH), 3);
	assert_int_equal(cbuf_keep_head(7, CBUF_KEEP_TAIL), 0);
	assert_int_equal(cbuf_keep_head(7, CBUF_KEEP_HEAD), 7);
}

/* What a relay capped like the host passes on (its head at once, then the
 * tail it held back), rebuilt, is what one buffer taking the whole stream
 * keeps: same bytes, marker and truncated flag, for every keep and for
 * streams under, at and over the cap. */
static void
test_rekept(void **state)
{
	static const enum cbuf_keep keeps[] = { CBUF_KEEP_HEAD, CBUF_KEEP_TAIL,
	    CBUF_KEEP_BOTH };
	static const size_t lens[] = { 0, 5, 63, 64, 65, 200, 5000 };
	char src[5000];

	(void)state;
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (char)('a' + i % 26);
	for (size_t k = 0; k < 3; k++) {
		for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
			size_t n = lens[l], max = 64;
			size_t h = cbuf_keep_head(max, keeps[k]);
			size_t hh = h < n ? h : n;
			size_t t = n - hh < max - h ? n - hh : max - h;
			char kept[64];
			struct cbuf *whole = cbuf_new_keep(max, keeps[k]), *re;

			memcpy(kept, src, hh);
			memcpy(kept + hh, src + n - t, t);
			assert_true(cbuf_append(whole, src, n) >= 0);
			re = cbuf_new_rekept(max, keeps[k], kept, hh + t, n);
			assert_non_null(re);
			assert_int_equal(cbuf_len(re), cbuf_len(whole));
			assert_memory_equal(cbuf_data(re), cbuf_data(whole),
			    cbuf_len(whole));
			assert_int_equal(cbuf_truncated(re),
			    cbuf_truncated(whole));
			assert_int_equal(cbuf_truncated(re), n > max);
			cbuf_free(re);
			cbuf_free(whole);
		}
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_append_within_limit),
		cmocka_unit_test(test_refuses_past_limit),
		cmocka_unit_test(test_zero_limit),
		cmocka_unit_test(test_large_flood_stays_capped),
		cmocka_unit_test(test_reset_and_steal),
		cmocka_unit_test(test_keep_table),
		cmocka_unit_test(test_keep_random),
		cmocka_unit_test(test_gap),
		cmocka_unit_test(test_keep_flood),
		cmocka_unit_test(test_keep_names),
		cmocka_unit_test(test_rekept),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
