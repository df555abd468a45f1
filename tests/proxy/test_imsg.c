/*
 * Tests of the parent-child channel (proxy/imsg.h) over a real
 * SOCK_SEQPACKET socketpair on one libevent loop: messages arrive whole
 * and in order, a payload over the inline size travels in a sealed memfd,
 * a passed descriptor arrives with its message, a peer that does not read
 * makes the sender queue (never block), a malformed record or a blob that
 * is not sealed kills the channel, and a closed peer is reported once.
 * Also the strict decoders of the child's messages (proxy/psmsg.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "proxy/imsg.h"
#include "proxy/psmsg.h"

struct got {
	int n;
	uint32_t type[64];
	uint64_t id[64];
	size_t len[64];
	unsigned char first[64];
	int fd[64];
	bool dead;
	struct event_base *base;
	int stop_after;
};

static void
got_cb(void *arg, const struct proxy_imsg *m)
{
	struct got *g = arg;

	if (m == NULL) {
		g->dead = true;
		event_base_loopbreak(g->base);
		return;
	}
	if (g->n < 64) {
		g->type[g->n] = m->type;
		g->id[g->n] = m->id;
		g->len[g->n] = m->len;
		g->first[g->n] = m->len > 0 ? ((const unsigned char *)m->data)[0]
		    : 0;
		g->fd[g->n] = m->fd;
		/* Every byte of a big payload is what was sent. */
		for (size_t i = 0; i < m->len; i++)
			if (((const unsigned char *)m->data)[i] !=
			    (unsigned char)(m->len + i))
				fail_msg("message %d: byte %zu differs", g->n, i);
		g->n++;
	} else if (m->fd >= 0) {
		close(m->fd);
	}
	if (g->n >= g->stop_after)
		event_base_loopbreak(g->base);
}

static unsigned char *
pattern(size_t len)
{
	unsigned char *p = malloc(len > 0 ? len : 1);

	assert_non_null(p);
	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)(len + i);
	return p;
}

static void
run_until(struct event_base *base)
{
	struct timeval tv = { 5, 0 };

	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
}

static void
test_messages(void **state)
{
	struct event_base *base = event_base_new();
	struct proxy_chan *a, *b;
	struct got ga = { .base = base }, gb = { .base = base,
	    .stop_after = 4 };
	static const size_t sizes[] = { 0, 1, PROXY_IMSG_INLINE,
	    PROXY_IMSG_INLINE + 1 };
	int sv[2], pfd[2];
	unsigned char *p;
	char c;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
	    sv), 0);
	assert_int_equal(proxy_chan_new(base, sv[0], got_cb, &ga, &a), 0);
	assert_int_equal(proxy_chan_new(base, sv[1], got_cb, &gb, &b), 0);
	for (size_t i = 0; i < 4; i++) {
		p = pattern(sizes[i]);
		assert_int_equal(proxy_chan_send(a, (uint32_t)(10 + i), 100 + i,
		    p, sizes[i], -1), 0);
		free(p);
	}
	run_until(base);
	assert_int_equal(gb.n, 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(gb.type[i], 10 + i);
		assert_int_equal(gb.id[i], 100 + i);
		assert_int_equal(gb.len[i], sizes[i]);
		assert_int_equal(gb.fd[i], -1);
	}
	/* A descriptor with its message. */
	assert_int_equal(pipe(pfd), 0);
	p = pattern(1);
	assert_int_equal(proxy_chan_send(a, 7, 1, p, 1, pfd[1]), 0);
	free(p);
	gb.stop_after = 5;
	run_until(base);
	assert_int_equal(gb.n, 5);
	assert_true(gb.fd[4] >= 0);
	assert_int_equal(write(gb.fd[4], "!", 1), 1);
	assert_int_equal(read(pfd[0], &c, 1), 1);
	assert_int_equal(c, '!');
	close(gb.fd[4]);
	close(pfd[0]);
	/* A blob and a descriptor together are refused: one each. */
	p = pattern(PROXY_IMSG_INLINE + 1);
	assert_int_equal(pipe(pfd), 0);
	assert_int_equal(proxy_chan_send(a, 7, 1, p, PROXY_IMSG_INLINE + 1,
	    pfd[1]), -EINVAL);
	assert_int_equal(fcntl(pfd[1], F_GETFD), -1);	/* closed anyway */
	close(pfd[0]);
	free(p);
	assert_int_equal(proxy_chan_send(a, 0, 1, NULL, 0, -1), -EINVAL);
	assert_int_equal(proxy_chan_send(a, 1, 1, NULL, PROXY_IMSG_MAX + 1,
	    -1), -EMSGSIZE);
	/* The peer goes: reported once, then sends fail. */
	proxy_chan_free(b);
	run_until(base);
	assert_true(ga.dead);
	proxy_chan_free(a);
	event_base_free(base);
}

/* A peer that never reads: the sender queues, never blocks. */
static void
test_backpressure(void **state)
{
	struct event_base *base = event_base_new();
	struct proxy_chan *a;
	struct got ga = { .base = base };
	unsigned char *p = pattern(40000);
	int sv[2], sent = 0;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
	    sv), 0);
	assert_int_equal(proxy_chan_new(base, sv[0], got_cb, &ga, &a), 0);
	for (int i = 0; i < 500; i++)
		if (proxy_chan_send(a, 1, (uint64_t)i, p, 40000, -1) == 0)
			sent++;
	assert_int_equal(sent, 500);
	assert_true(proxy_chan_queued(a) > 0);
	free(p);
	proxy_chan_free(a);
	close(sv[1]);
	event_base_free(base);
}

/* Records that break the protocol kill the channel. */
static void
test_malformed(void **state)
{
	static const struct {
		const char *what;
		unsigned char bytes[32];
		size_t len;
	} rows[] = {
		{ "short header", { 1, 0, 0, 0 }, 4 },
		{ "type 0", { 0 }, 24 },
		{ "length past the record", { 1, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		  0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0 }, 24 },
		{ "blob flag without a descriptor", { 1, 0, 0, 0, 1, 0, 0, 0,
		  0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0 }, 24 },
		{ "unknown flag", { 1, 0, 0, 0, 8, 0, 0, 0 }, 24 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct event_base *base = event_base_new();
		struct got g = { .base = base, .stop_after = 1 };
		struct proxy_chan *b;
		int sv[2];

		assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET |
		    SOCK_CLOEXEC, 0, sv), 0);
		assert_int_equal(proxy_chan_new(base, sv[1], got_cb, &g, &b),
		    0);
		assert_int_equal(send(sv[0], rows[i].bytes, rows[i].len, 0),
		    (ssize_t)rows[i].len);
		run_until(base);
		if (!g.dead || g.n != 0)
			fail_msg("%s: not refused", rows[i].what);
		proxy_chan_free(b);
		close(sv[0]);
		event_base_free(base);
	}
}

/* A blob in a memfd that is not sealed (its sender could change it
 * after sending): refused. */
static void
test_unsealed_blob(void **state)
{
	struct event_base *base = event_base_new();
	struct got g = { .base = base, .stop_after = 1 };
	struct proxy_chan *b;
	unsigned char hdr[24] = { 1, 0, 0, 0, 1, 0, 0, 0 };
	union {
		struct cmsghdr h;
		char space[CMSG_SPACE(sizeof(int))];
	} cm;
	struct iovec iov = { hdr, sizeof(hdr) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
	    .msg_control = cm.space, .msg_controllen = sizeof(cm.space) };
	struct cmsghdr *c;
	int sv[2], mfd = memfd_create("t", MFD_CLOEXEC);

	(void)state;
	assert_true(mfd >= 0);
	assert_int_equal(write(mfd, "abcd", 4), 4);
	hdr[16] = 4;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
	    sv), 0);
	assert_int_equal(proxy_chan_new(base, sv[1], got_cb, &g, &b), 0);
	memset(&cm, 0, sizeof(cm));
	c = &cm.h;	/* CMSG_FIRSTHDR(&mh): the buffer's start */
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &mfd, sizeof(int));
	assert_int_equal(sendmsg(sv[0], &mh, 0), (ssize_t)sizeof(hdr));
	run_until(base);
	assert_true(g.dead);
	assert_int_equal(g.n, 0);
	proxy_chan_free(b);
	close(sv[0]);
	close(mfd);
	event_base_free(base);
}

/* The decoders of the child's messages: exact forms only. */
static void
test_psmsg(void **state)
{
	static const char *const bad_leaf[] = {
		"", "{}", "[]", "{\"host\":\"a.example\",\"ip\":false,"
		"\"port\":443}",
		"{\"host\":\"A.example\",\"ip\":false,\"port\":443,\"key\":\"AA==\"}",
		"{\"host\":\"a.example\",\"ip\":true,\"port\":443,\"key\":\"AA==\"}",
		"{\"host\":\"a.example\",\"ip\":false,\"port\":0,\"key\":\"AA==\"}",
		"{\"host\":\"a.example\",\"ip\":false,\"port\":1.5,\"key\":\"AA==\"}",
		"{\"host\":\"a.example\",\"ip\":false,\"port\":443,\"key\":\"A\"}",
		"{\"host\":\"a.example\",\"ip\":false,\"port\":443,\"key\":\"AA==\","
		"\"x\":1}",
		"{\"host\":\"a.example\",\"host\":\"b.example\",\"ip\":false,"
		"\"port\":443,\"key\":\"AA==\"}",
		"{\"host\":\"bad_host\",\"ip\":false,\"port\":443,\"key\":\"AA==\"}",
	};
	static const char good_leaf[] = "{\"host\":\"a.example\",\"ip\":false,"
	    "\"port\":443,\"key\":\"AQID\"}";
	static const char good_secret[] = "{\"policy\":\"p\",\"host\":"
	    "\"a.example\",\"port\":443,\"name\":\"tok\"}";
	static const char empty_name[] = "{\"policy\":\"p\",\"host\":"
	    "\"a.example\",\"port\":443,\"name\":\"\"}";
	struct proxy_psmsg_leaf_req lr;
	struct proxy_psmsg_secret_req sr;
	uint64_t gen;
	bool ok;

	(void)state;
	for (size_t i = 0; i < sizeof(bad_leaf) / sizeof(bad_leaf[0]); i++)
		if (proxy_psmsg_leaf_req_decode(bad_leaf[i], strlen(bad_leaf[i]),
		    &lr) != -EINVAL)
			fail_msg("accepted leaf request %zu: %s", i, bad_leaf[i]);
	assert_int_equal(proxy_psmsg_leaf_req_decode(good_leaf,
	    strlen(good_leaf), &lr), 0);
	assert_string_equal(lr.host, "a.example");
	assert_int_equal(lr.keylen, 3);
	assert_int_equal(lr.key[2], 3);
	/* A NUL inside is never a shorter text. */
	assert_int_equal(proxy_psmsg_leaf_req_decode(good_leaf,
	    sizeof(good_leaf), &lr), -EINVAL);
	assert_int_equal(proxy_psmsg_secret_req_decode(good_secret,
	    strlen(good_secret), &sr), 0);
	assert_string_equal(sr.name, "tok");
	assert_int_equal(proxy_psmsg_secret_req_decode(empty_name,
	    strlen(empty_name), &sr), -EINVAL);
	assert_int_equal(proxy_psmsg_gen_ack_decode("{\"gen\":3}", 9, &gen), 0);
	assert_int_equal(gen, 3);
	assert_int_equal(proxy_psmsg_gen_ack_decode("{\"gen\":0}", 9, &gen),
	    -EINVAL);
	{
		static const char r1[] = "{\"ok\":true,\"egress\":[],"
		    "\"allowed\":0,\"denied\":0,\"errors\":0}";
		static const char r2[] = "{\"ok\":false,\"error\":\"unknown "
		    "run\"}";
		static const char r3[] = "{\"ok\":true,\"egress\":[1],"
		    "\"allowed\":0,\"denied\":0,\"errors\":0}";
		assert_int_equal(proxy_psmsg_report_check(r1, strlen(r1), &ok),
		    0);
		assert_true(ok);
		assert_int_equal(proxy_psmsg_report_check(r2, strlen(r2), &ok),
		    0);
		assert_false(ok);
		/* Without the error count, or with a negative one. */
		static const char r4[] = "{\"ok\":true,\"egress\":[],"
		    "\"allowed\":0,\"denied\":0}";
		static const char r5[] = "{\"ok\":true,\"egress\":[],"
		    "\"allowed\":0,\"denied\":0,\"errors\":-1}";
		assert_int_equal(proxy_psmsg_report_check(r3, strlen(r3), &ok),
		    -EINVAL);
		assert_int_equal(proxy_psmsg_report_check(r4, strlen(r4), &ok),
		    -EINVAL);
		assert_int_equal(proxy_psmsg_report_check(r5, strlen(r5), &ok),
		    -EINVAL);
	}
	{
		/* An entry with its path, and one whose path is too long
		 * or not a string. */
		static const char v1[] = "{\"ok\":true,\"egress\":[{\"host\":"
		    "\"a.example\",\"port\":53,\"decision\":\"allowed\","
		    "\"reason\":\"allowed\",\"status\":0,\"count\":1,"
		    "\"bytes_up\":0,\"bytes_down\":0,\"via\":\"dns\"}],"
		    "\"allowed\":1,\"denied\":0,\"errors\":0}";
		static const char v2[] = "{\"ok\":true,\"egress\":[{\"host\":"
		    "\"a.example\",\"port\":53,\"decision\":\"allowed\","
		    "\"reason\":\"allowed\",\"status\":0,\"count\":1,"
		    "\"bytes_up\":0,\"bytes_down\":0,\"via\":"
		    "\"0123456789abcdef\"}],\"allowed\":1,\"denied\":0,"
		    "\"errors\":0}";
		static const char v3[] = "{\"ok\":true,\"egress\":[{\"host\":"
		    "\"a.example\",\"port\":53,\"decision\":\"allowed\","
		    "\"reason\":\"allowed\",\"status\":0,\"count\":1,"
		    "\"bytes_up\":0,\"bytes_down\":0,\"via\":7}],"
		    "\"allowed\":1,\"denied\":0,\"errors\":0}";
		assert_int_equal(proxy_psmsg_report_check(v1, strlen(v1), &ok),
		    0);
		assert_true(ok);
		assert_int_equal(proxy_psmsg_report_check(v2, strlen(v2), &ok),
		    -EINVAL);
		assert_int_equal(proxy_psmsg_report_check(v3, strlen(v3), &ok),
		    -EINVAL);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_messages),
		cmocka_unit_test(test_backpressure),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_unsealed_blob),
		cmocka_unit_test(test_psmsg),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
