/* Unit tests of live output's first half: the relay between the read
 * loop and the caller (runner/relay.h); the queue the front ends take it
 * from is tests/jobs/test_stream.c's. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cbuf.h"
#include "common/util.h"
#include "runner/outwrap.h"
#include "runner/relay.h"

/* What a relay passed on, per stream, and how. */
struct got {
	struct cbuf *s[3];
	int calls;
	bool split_char;	/* a chunk ended inside a character */
};

static void
got_fn(void *arg, int stream, const void *data, size_t len)
{
	struct got *g = arg;

	assert_true(stream == 1 || stream == 2);
	assert_true(len > 0);
	if (util_utf8_partial_end(data, len) != 0)
		g->split_char = true;
	assert_true(cbuf_append(g->s[stream], data, len) >= 0);
	g->calls++;
}

static void
got_init(struct got *g)
{
	memset(g, 0, sizeof(*g));
	g->s[1] = cbuf_new(1 << 20);
	g->s[2] = cbuf_new(1 << 20);
}

static void
got_free(struct got *g)
{
	cbuf_free(g->s[1]);
	cbuf_free(g->s[2]);
}

/* Feeds text in chunks of n bytes to stream s. */
static void
feed(struct runner_relay *r, int s, const char *text, size_t len, size_t n)
{
	for (size_t off = 0; off < len; off += n)
		runner_relay_chunk(r, s, text + off, len - off < n ? len - off :
		    n);
}

/* Byte by byte, multibyte text arrives in whole characters only. */
static void
test_relay_utf8(void **state)
{
	static const char text[] = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80z";
	struct runner_relay r;
	struct got g;

	(void)state;
	for (size_t n = 1; n <= 4; n++) {
		got_init(&g);
		runner_relay_init(&r, got_fn, &g, 1000, NULL, 0);
		feed(&r, 2, text, sizeof(text) - 1, n);
		runner_relay_flush(&r);
		assert_false(g.split_char);
		assert_string_equal(cbuf_data(g.s[2]), text);
		assert_int_equal(cbuf_len(g.s[1]), 0);
		got_free(&g);
	}
	/* An incomplete sequence at the very end comes out at the flush,
	 * for the encoder to replace. */
	got_init(&g);
	runner_relay_init(&r, got_fn, &g, 1000, NULL, 0);
	runner_relay_chunk(&r, 1, "ab\xe2\x82", 4);
	assert_string_equal(cbuf_data(g.s[1]), "ab");
	runner_relay_flush(&r);
	assert_string_equal(cbuf_data(g.s[1]), "ab\xe2\x82");
	got_free(&g);
}

/* At most cap bytes per stream in all, never half a character, nothing
 * after the cut. */
static void
test_relay_cap(void **state)
{
	struct runner_relay r;
	struct got g;

	(void)state;
	got_init(&g);
	runner_relay_init(&r, got_fn, &g, 10, NULL, 0);
	runner_relay_chunk(&r, 1, "0123456", 7);
	runner_relay_chunk(&r, 1, "789abcdef", 9);
	runner_relay_chunk(&r, 1, "x", 1);
	runner_relay_chunk(&r, 2, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
	    "\xc3\xa9", 12);
	runner_relay_chunk(&r, 2, "z", 1);
	runner_relay_flush(&r);
	assert_string_equal(cbuf_data(g.s[1]), "0123456789");
	assert_string_equal(cbuf_data(g.s[2]), "\xc3\xa9\xc3\xa9\xc3\xa9"
	    "\xc3\xa9\xc3\xa9");
	got_free(&g);
	got_init(&g);
	runner_relay_init(&r, got_fn, &g, 0, NULL, 0);
	runner_relay_chunk(&r, 1, "abc", 3);
	runner_relay_flush(&r);
	assert_int_equal(g.calls, 0);
	got_free(&g);
}

/* --out: stdout up to the wrapper's marker, wherever chunks cut it; the
 * archive after it never; stderr as it comes. */
static void
test_relay_marker(void **state)
{
	static const char job[] = "job out\n\0CORDON-OUT-x\0 looks like "
	    "it\n";
	char marker[OUTWRAP_MARKER_LEN], text[512];
	const char *nonce = "0123456789abcdef0123456789abcdef";
	struct runner_relay r;
	struct got g;
	size_t len;

	(void)state;
	outwrap_marker(nonce, marker);
	len = sizeof(job) - 1;
	memcpy(text, job, len);
	memcpy(text + len, marker, sizeof(marker));
	memcpy(text + len + sizeof(marker), "1 2\nTAR\0DATA", 12);
	for (size_t n = 1; n <= len + 20; n++) {
		got_init(&g);
		runner_relay_init(&r, got_fn, &g, 1 << 20, marker,
		    sizeof(marker));
		feed(&r, 1, text, len + sizeof(marker) + 12, n);
		runner_relay_chunk(&r, 2, "err", 3);
		runner_relay_flush(&r);
		assert_int_equal(cbuf_len(g.s[1]), len);
		assert_memory_equal(cbuf_data(g.s[1]), text, len);
		assert_string_equal(cbuf_data(g.s[2]), "err");
		got_free(&g);
	}
	/* A tail that only starts like the marker comes out at the end. */
	got_init(&g);
	runner_relay_init(&r, got_fn, &g, 1 << 20, marker, sizeof(marker));
	runner_relay_chunk(&r, 1, "ab", 2);
	runner_relay_chunk(&r, 1, marker, 20);
	assert_string_equal(cbuf_data(g.s[1]), "ab");
	runner_relay_flush(&r);
	assert_int_equal(cbuf_len(g.s[1]), 22);
	got_free(&g);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_relay_utf8),
		cmocka_unit_test(test_relay_cap),
		cmocka_unit_test(test_relay_marker),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
