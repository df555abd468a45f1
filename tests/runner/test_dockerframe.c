/*
 * The attach stream's frame parser (runner/dockerframe.h): a table of
 * streams, each fed whole and cut at every byte, with what must come out
 * per stream and the verdicts at the end.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "runner/dockerframe.h"

struct got {
	char s[3][256];
	size_t n[3];
	int bad;		/* a piece for a stream other than 1/2, or empty */
};

static void
on_piece(void *arg, int stream, const void *data, size_t len)
{
	struct got *g = arg;

	if ((stream != 1 && stream != 2) || len == 0 ||
	    g->n[stream] + len > sizeof(g->s[stream])) {
		g->bad++;
		return;
	}
	memcpy(g->s[stream] + g->n[stream], data, len);
	g->n[stream] += len;
}

struct row {
	const char *what;
	const char *in;
	size_t len;
	const char *out, *err;
	int feed_rc, end_rc;
};

#define H(s, n) s "\0\0\0\0\0\0" n		/* header, size < 256 */
static const struct row rows[] = {
	{ "empty", "", 0, "", "", 0, 0 },
	{ "one stdout frame", H("\1", "\3") "1\n!", 11, "1\n!", "", 0, 0 },
	{ "stdout then stderr", H("\1", "\2") "ab" H("\2", "\1") "E", 19,
	    "ab", "E", 0, 0 },
	{ "zero-size frame", H("\2", "\0") H("\1", "\1") "x", 17, "x", "", 0,
	    0 },
	{ "stdin id refused", H("\0", "\1") "x", 9, "", "", -EBADMSG,
	    -EBADMSG },
	{ "stream 3 refused", H("\3", "\1") "x", 9, "", "", -EBADMSG,
	    -EBADMSG },
	{ "padding must be zero", "\1\0\1\0\0\0\0\1x", 9, "", "", -EBADMSG,
	    -EBADMSG },
	{ "after an error nothing more", H("\1", "\1") "a" "\7\0\0\0\0\0\0\1b"
	    H("\1", "\1") "c", 27, "a", "", -EBADMSG, -EBADMSG },
	{ "cut in a header", H("\1", "\1") "a" "\1\0\0", 12, "a", "", 0,
	    -EBADMSG },
	{ "cut in a payload", H("\1", "\5") "abc", 11, "abc", "", 0,
	    -EBADMSG },
	{ "size read big-endian", "\2\0\0\0\0\0\1\0", 8, "", "", 0, -EBADMSG },
};

static void
check(const struct row *w, size_t cut)
{
	struct dockerapi_frames f;
	struct got g;
	int rc;

	memset(&g, 0, sizeof(g));
	dockerapi_frames_init(&f);
	if (cut == 0 || cut >= w->len) {
		rc = dockerapi_frames_feed(&f, w->in, w->len, on_piece, &g);
	} else {
		rc = dockerapi_frames_feed(&f, w->in, cut, on_piece, &g);
		if (rc == 0)
			rc = dockerapi_frames_feed(&f, w->in + cut,
			    w->len - cut, on_piece, &g);
	}
	if (rc != w->feed_rc || dockerapi_frames_end(&f) != w->end_rc ||
	    g.bad != 0 || g.n[1] != strlen(w->out) ||
	    memcmp(g.s[1], w->out, g.n[1]) != 0 || g.n[2] != strlen(w->err) ||
	    memcmp(g.s[2], w->err, g.n[2]) != 0)
		fail_msg("%s (cut at %zu): feed %d end %d, out '%.*s' err "
		    "'%.*s' bad %d", w->what, cut, rc, dockerapi_frames_end(&f),
		    (int)g.n[1], g.s[1], (int)g.n[2], g.s[2], g.bad);
}

static void
test_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		for (size_t cut = 0; cut <= rows[i].len; cut++)
			check(&rows[i], cut);
}

/* Byte by byte: one piece per payload byte, and the frame count. */
static void
test_byte_at_a_time(void **state)
{
	static const char in[] = H("\1", "\4") "abcd" H("\2", "\2") "ef";
	struct dockerapi_frames f;
	struct got g;

	(void)state;
	memset(&g, 0, sizeof(g));
	dockerapi_frames_init(&f);
	for (size_t i = 0; i < sizeof(in) - 1; i++)
		assert_int_equal(dockerapi_frames_feed(&f, in + i, 1, on_piece,
		    &g), 0);
	assert_int_equal(dockerapi_frames_end(&f), 0);
	assert_int_equal(f.frames, 2);
	assert_int_equal(g.n[1], 4);
	assert_memory_equal(g.s[1], "abcd", 4);
	assert_int_equal(g.n[2], 2);
	assert_memory_equal(g.s[2], "ef", 2);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_byte_at_a_time),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
