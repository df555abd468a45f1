/* The service's network layer (serve/conn.h, issue 39) with real sockets
 * on 127.0.0.x and a unix socket, its event loop run in this process
 * between the client's steps: the head handed over before any body byte
 * is read (a refusal then closes without reading it), the head, body and
 * idle deadlines, the per-peer and per-listener caps with the unix
 * socket's own share, EMFILE (a lowered descriptor limit): a paused,
 * counted, not spinning accept, unsent reply bytes counted and released by
 * a stalled reply's deadline, a hang-up while the owner holds the
 * connection, keep-alive with pipelining, 100-continue and a chunked
 * stream. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/event.h>

#include "common/util.h"
#include "serve/conn.h"

/* What the fake owner does on a head. */
enum mode { READ_BODY, REFUSE, HOLD };

struct owner {
	enum mode mode;
	int heads, requests, gones, dones, written;
	int64_t unsent;
	size_t reply_size;		/* on_request: a reply of this size */
	struct serve_conn *held, *helds[8];
	int nheld;
	char body[256];
	size_t body_len;
};

static struct fx {
	struct event_base *base;
	struct serve_accept *acc;
	struct owner o;
	uint16_t port;
	char sock[108];
	char dir[64];
} *fx;

static void
on_gone(void *arg)
{
	((struct owner *)arg)->gones++;
}

static void
on_done(void *arg, bool written)
{
	struct owner *o = arg;

	o->dones++;
	o->written += written;
}

static bool
on_head(struct serve_conn *c, void *arg)
{
	struct owner *o = arg;

	o->heads++;
	serve_conn_account(c, &o->unsent);
	if (o->mode == REFUSE) {
		serve_conn_add_header(c, "WWW-Authenticate", "Bearer");
		serve_conn_reply_error(c, 401, "no");
		return false;
	}
	return true;
}

static void
on_request(struct serve_conn *c, void *arg)
{
	struct owner *o = arg;
	size_t len;
	const char *b = serve_conn_body(c, &len);
	char *r;

	o->requests++;
	o->body_len = len < sizeof(o->body) ? len : sizeof(o->body);
	memcpy(o->body, b, o->body_len);
	serve_conn_on_gone(c, on_gone, o);
	serve_conn_on_done(c, on_done, o);
	if (o->mode == HOLD) {
		o->held = c;
		if (o->nheld < 8)
			o->helds[o->nheld++] = c;
		return;
	}
	if (o->reply_size == 0) {
		serve_conn_reply(c, 200, "text/plain", "ok", 2);
		return;
	}
	r = malloc(o->reply_size);
	assert_non_null(r);
	memset(r, 'x', o->reply_size);
	serve_conn_reply_take(c, 200, "text/plain", r, o->reply_size);
}

/* A TCP listener on 127.0.0.1 (port 0, read back) and a unix socket. */
static int
listen_tcp(uint16_t *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 64), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	*port = ntohs(sa.sin_port);
	return fd;
}

static int
listen_unix(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	util_strlcpy(sa.sun_path, path, sizeof(sa.sun_path));
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 64), 0);
	return fd;
}

/* A fresh service side with these caps and deadlines (ms). */
static void
start(int64_t tcp_max, int64_t peer_max, int64_t unix_max, int64_t head_ms,
    int64_t body_ms, int64_t write_ms)
{
	struct serve_accept_opts o = {
		.conn = { .head_ms = head_ms, .body_ms = body_ms,
		    .write_ms = write_ms, .on_head = on_head,
		    .on_request = on_request },
		.tcp_max = tcp_max, .peer_max = peer_max, .unix_max = unix_max,
		.pause_ms = 200, .log_ms = 60000,
	};

	fx->base = event_base_new();
	assert_non_null(fx->base);
	o.base = o.conn.base = fx->base;
	o.conn.arg = &fx->o;
	assert_int_equal(serve_accept_new(&o, &fx->acc), 0);
	assert_int_equal(serve_accept_listen(fx->acc, listen_tcp(&fx->port),
	    true), 0);
	assert_int_equal(serve_accept_listen(fx->acc, listen_unix(fx->sock),
	    false), 0);
}

static int
setup(void **state)
{
	(void)state;
	fx = calloc(1, sizeof(*fx));
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/cordon-conn.XXXXXX");
	if (fx == NULL || mkdtemp(fx->dir) == NULL)
		return -1;
	snprintf(fx->sock, sizeof(fx->sock), "%s/s.sock", fx->dir);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	serve_accept_free(fx->acc);
	if (fx->base != NULL)
		event_base_free(fx->base);
	unlink(fx->sock);
	rmdir(fx->dir);
	free(fx);
	return 0;
}

/* Runs the service's loop for ms. */
static void
loop_for(int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	event_base_loopexit(fx->base, &tv);
	event_base_dispatch(fx->base);
}

/* A client connected to the TCP listener from src (e.g. "127.0.0.2"). */
static int
client_tcp(const char *src)
{
	struct sockaddr_in sa = { .sin_family = AF_INET }, me = {
	    .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(inet_pton(AF_INET, src, &me.sin_addr), 1);
	assert_int_equal(bind(fd, (struct sockaddr *)&me, sizeof(me)), 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons(fx->port);
	/* The kernel completes it in the backlog: no loop needed. */
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

static int
client_unix(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	util_strlcpy(sa.sun_path, fx->sock, sizeof(sa.sun_path));
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

static void
send_str(int fd, const char *s)
{
	assert_int_equal(send(fd, s, strlen(s), MSG_NOSIGNAL), (ssize_t)strlen(s));
}

/* Reads what fd has, running the loop between tries, for up to ms or
 * until want (if not NULL) appears or EOF. The bytes into buf
 * (NUL-terminated); *eof whether the peer closed. */
static size_t
read_for(int fd, char *buf, size_t len, int ms, const char *want, bool *eof)
{
	size_t n = 0;
	ssize_t r = -1;

	*eof = false;
	for (int waited = 0; waited <= ms; waited += 20) {
		loop_for(20);
		while (n + 1 < len && (r = recv(fd, buf + n, len - 1 - n,
		    MSG_DONTWAIT)) > 0)
			n += (size_t)r;
		buf[n] = '\0';
		if (r == 0 || (r < 0 && errno != EAGAIN)) {
			*eof = true;
			return n;
		}
		if (n + 1 >= len)
			return n;
		if (want != NULL && strstr(buf, want) != NULL)
			return n;
	}
	return n;
}

/* A refusal on the head: answered and closed, its body never read. */
static void
test_head_before_body(void **state)
{
	char buf[4096], *big;
	bool eof;
	int fd;

	(void)state;
	start(8, 8, 8, 2000, 2000, 2000);
	fx->o.mode = REFUSE;
	fd = client_tcp("127.0.0.1");
	send_str(fd, "POST /v1/runs HTTP/1.1\r\nContent-Length: 16777216\r\n\r\n");
	read_for(fd, buf, sizeof(buf), 2000, NULL, &eof);
	assert_true(eof);
	assert_non_null(strstr(buf, "HTTP/1.1 401 Unauthorized\r\n"));
	assert_non_null(strstr(buf, "WWW-Authenticate: Bearer\r\n"));
	assert_non_null(strstr(buf, "Connection: close\r\n"));
	assert_int_equal(fx->o.heads, 1);
	assert_int_equal(fx->o.requests, 0);
	/* The body it sends now is dropped (the connection lingers, then
	 * closes), never handed over. */
	big = calloc(1, 1 << 20);
	(void)send(fd, big, 1 << 20, MSG_NOSIGNAL | MSG_DONTWAIT);
	loop_for(200);
	free(big);
	close(fd);
	assert_int_equal(fx->o.requests, 0);
	/* The same head with a token's answer: the body is read. */
	fx->o.mode = READ_BODY;
	fd = client_tcp("127.0.0.1");
	send_str(fd, "POST /v1/runs HTTP/1.1\r\nContent-Length: 11\r\n\r\nhello");
	loop_for(100);
	assert_int_equal(fx->o.heads, 2);
	assert_int_equal(fx->o.requests, 0);
	send_str(fd, " world");
	read_for(fd, buf, sizeof(buf), 1000, "ok", &eof);
	assert_int_equal(fx->o.requests, 1);
	assert_int_equal(fx->o.body_len, 11);
	assert_memory_equal(fx->o.body, "hello world", 11);
	assert_non_null(strstr(buf, "HTTP/1.1 200 OK\r\n"));
	close(fd);
}

static void
test_deadlines(void **state)
{
	char buf[4096];
	bool eof;
	int idle, part, body;

	(void)state;
	start(8, 8, 8, 300, 300, 2000);
	idle = client_tcp("127.0.0.1");
	part = client_tcp("127.0.0.1");
	body = client_tcp("127.0.0.1");
	send_str(part, "GET /v1/hea");
	send_str(body, "POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc");
	/* An idle connection: closed without a word. */
	read_for(idle, buf, sizeof(buf), 1500, NULL, &eof);
	assert_true(eof);
	assert_int_equal(strlen(buf), 0);
	read_for(part, buf, sizeof(buf), 1500, NULL, &eof);
	assert_true(eof);
	assert_non_null(strstr(buf, "HTTP/1.1 408 Request Timeout\r\n"));
	assert_non_null(strstr(buf, "head did not arrive"));
	read_for(body, buf, sizeof(buf), 1500, NULL, &eof);
	assert_true(eof);
	assert_non_null(strstr(buf, "HTTP/1.1 408 Request Timeout\r\n"));
	assert_non_null(strstr(buf, "body did not arrive"));
	assert_int_equal(fx->o.requests, 0);
	close(idle);
	close(part);
	close(body);
}

/* Per-peer cap: a third connection from one address is closed at once;
 * another address is served. Listener cap: a connection beyond it makes
 * room by closing the oldest one still reading a head (idle here); when
 * every connection is past its head, the new one is closed at once. The
 * unix socket has its own share throughout. */
static void
test_caps(void **state)
{
	char buf[4096];
	struct serve_accept_stats st;
	bool eof;
	int a1, a2, a3, b1, b2, c1, u;

	(void)state;
	start(3, 2, 8, 5000, 5000, 5000);
	a1 = client_tcp("127.0.0.1");
	a2 = client_tcp("127.0.0.1");
	a3 = client_tcp("127.0.0.1");
	read_for(a3, buf, sizeof(buf), 500, NULL, &eof);
	assert_true(eof);
	serve_accept_stats(fx->acc, &st);
	assert_int_equal(st.refused_peer, 1);
	assert_int_equal(st.conns[1], 2);
	close(a3);
	b1 = client_tcp("127.0.0.2");
	send_str(b1, "GET / HTTP/1.1\r\n\r\n");
	read_for(b1, buf, sizeof(buf), 1000, "ok", &eof);
	assert_non_null(strstr(buf, "HTTP/1.1 200 OK\r\n"));
	/* At its cap (3): b2 is served at once, a1 (the oldest, idle) is
	 * closed for it. */
	b2 = client_tcp("127.0.0.3");
	send_str(b2, "GET / HTTP/1.1\r\n\r\n");
	read_for(b2, buf, sizeof(buf), 1000, "ok", &eof);
	assert_non_null(strstr(buf, "HTTP/1.1 200 OK\r\n"));
	read_for(a1, buf, sizeof(buf), 500, NULL, &eof);
	assert_true(eof);
	serve_accept_stats(fx->acc, &st);
	assert_int_equal(st.full, 1);
	assert_int_equal(st.evicted, 1);
	assert_int_equal(st.conns[1], 3);
	/* All three past their heads (held): a new one is closed at once. */
	fx->o.mode = HOLD;
	send_str(a2, "GET / HTTP/1.1\r\n\r\n");
	send_str(b1, "GET / HTTP/1.1\r\n\r\n");
	send_str(b2, "GET / HTTP/1.1\r\n\r\n");
	loop_for(200);
	assert_int_equal(fx->o.nheld, 3);
	c1 = client_tcp("127.0.0.4");
	read_for(c1, buf, sizeof(buf), 500, NULL, &eof);
	assert_true(eof);
	assert_int_equal(strlen(buf), 0);
	serve_accept_stats(fx->acc, &st);
	assert_int_equal(st.full, 2);
	assert_int_equal(st.evicted, 1);
	/* The unix socket is served meanwhile. */
	fx->o.mode = READ_BODY;
	u = client_unix();
	send_str(u, "GET /v1/health HTTP/1.1\r\n\r\n");
	read_for(u, buf, sizeof(buf), 1000, "ok", &eof);
	assert_non_null(strstr(buf, "HTTP/1.1 200 OK\r\n"));
	for (int i = 0; i < 3; i++)
		serve_conn_reply(fx->o.helds[i], 200, "text/plain", "ok", 2);
	read_for(b2, buf, sizeof(buf), 500, "ok", &eof);
	assert_non_null(strstr(buf, "HTTP/1.1 200 OK\r\n"));
	close(a1);
	close(a2);
	close(b1);
	close(b2);
	close(c1);
	close(u);
}

/* Out of descriptors: accepting pauses (no busy loop), what waits is
 * closed through the spare descriptor, and accepting resumes. */
static void
test_emfile(void **state)
{
	struct serve_accept_stats st;
	struct rlimit old, low;
	int fill[64], nfill = 0, c[4], fd;
	char buf[4096];
	bool eof;

	(void)state;
	start(100, 100, 100, 5000, 5000, 5000);
	for (int i = 0; i < 4; i++)
		c[i] = client_tcp("127.0.0.1");
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	/* Every descriptor below the limit in use, and none above. */
	fd = dup(0);
	assert_true(fd >= 0);
	close(fd);
	low = old;
	low.rlim_cur = (rlim_t)fd + 8;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	while (nfill < 64 && (fd = dup(0)) >= 0)
		fill[nfill++] = fd;
	assert_int_equal(errno, EMFILE);
	loop_for(1000);
	serve_accept_stats(fx->acc, &st);
	/* Paused 200 ms after each failure: a handful in a second, never
	 * the millions of a busy loop. */
	assert_true(st.accept_errors >= 1);
	assert_true(st.accept_errors <= 8);
	/* Each waiting client was accepted and closed with the spare. */
	assert_int_equal(st.shed, 4);
	for (int i = 0; i < 4; i++) {
		read_for(c[i], buf, sizeof(buf), 100, NULL, &eof);
		assert_true(eof);
		close(c[i]);
	}
	for (int i = 0; i < nfill; i++)
		close(fill[i]);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	loop_for(300);
	fd = client_tcp("127.0.0.1");
	send_str(fd, "GET / HTTP/1.1\r\n\r\n");
	read_for(fd, buf, sizeof(buf), 1000, "ok", &eof);
	assert_non_null(strstr(buf, "HTTP/1.1 200 OK\r\n"));
	close(fd);
}

/* A reply its client does not read: counted in the owner's counter while
 * unsent, released when the stalled reply's deadline closes it. */
static void
test_unsent(void **state)
{
	int rcv = 4096, fd;

	(void)state;
	start(8, 8, 8, 5000, 5000, 400);
	fx->o.reply_size = 16 << 20;
	fd = client_tcp("127.0.0.1");
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv,
	    sizeof(rcv)), 0);
	send_str(fd, "GET / HTTP/1.1\r\n\r\n");
	loop_for(200);
	assert_int_equal(fx->o.requests, 1);
	/* Most of it still in the service (the sockets took some MB). */
	assert_true(fx->o.unsent > 8 << 20);
	assert_true(fx->o.unsent <= (16 << 20) + 256);
	assert_int_equal(fx->o.dones, 0);
	loop_for(800);
	assert_int_equal(fx->o.unsent, 0);
	assert_int_equal(fx->o.dones, 1);
	assert_int_equal(fx->o.written, 0);
	close(fd);
}

/* One that reads it all: written, nothing left counted. The write
 * deadline is long here: on a loaded machine this process may not run
 * for more than 400 ms, and the reader it plays would look stalled. */
static void
test_unsent_read(void **state)
{
	char buf[65536];
	size_t got = 0;
	bool eof = false;
	int fd;

	(void)state;
	start(8, 8, 8, 5000, 5000, 30000);
	fx->o.reply_size = 16 << 20;
	fd = client_tcp("127.0.0.1");
	send_str(fd, "GET / HTTP/1.1\r\nConnection: close\r\n\r\n");
	/* Read until EOF against a deadline, not a count of reads: on a
	 * loaded machine one 20 ms turn may move far less than 64 KiB. */
	for (int64_t end = time_mono_ms() + 60000; !eof &&
	    time_mono_ms() < end;)
		got += read_for(fd, buf, sizeof(buf), 0, NULL, &eof);
	assert_true(eof);
	assert_true(got > 16 << 20);
	assert_int_equal(fx->o.unsent, 0);
	assert_int_equal(fx->o.dones, 1);
	assert_int_equal(fx->o.written, 1);
	close(fd);
}

/* A hang-up while the owner holds the connection is reported at once; the
 * owner's late reply frees it and is reported dropped. */
static void
test_gone_while_held(void **state)
{
	struct serve_accept_stats st;
	int fd;

	(void)state;
	start(8, 8, 8, 5000, 5000, 5000);
	fx->o.mode = HOLD;
	fd = client_tcp("127.0.0.1");
	send_str(fd, "POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi");
	loop_for(100);
	assert_non_null(fx->o.held);
	close(fd);
	loop_for(100);
	assert_int_equal(fx->o.gones, 1);
	assert_true(serve_conn_gone(fx->o.held));
	/* Its descriptor is free already. */
	serve_accept_stats(fx->acc, &st);
	assert_int_equal(st.conns[1], 0);
	serve_conn_reply(fx->o.held, 200, "text/plain", "late", 4);
	assert_int_equal(fx->o.dones, 1);
	assert_int_equal(fx->o.written, 0);
}

static void
test_keepalive_continue_stream(void **state)
{
	char buf[8192];
	bool eof;
	int fd;

	(void)state;
	start(8, 8, 8, 5000, 5000, 5000);
	fd = client_tcp("127.0.0.1");
	/* Two pipelined requests (blank lines between are allowed). */
	send_str(fd, "POST /a HTTP/1.1\r\nContent-Length: 1\r\n\r\nA\r\n"
	    "POST /b HTTP/1.1\r\nContent-Length: 1\r\n\r\nB");
	read_for(fd, buf, sizeof(buf), 300, NULL, &eof);
	assert_false(eof);
	assert_int_equal(fx->o.requests, 2);
	assert_int_equal(fx->o.body[0], 'B');
	assert_non_null(strstr(buf, "HTTP/1.1 200 OK\r\n"));
	assert_non_null(strstr(strstr(buf, "HTTP/1.1 200 OK\r\n") + 1,
	    "HTTP/1.1 200 OK\r\n"));
	/* 100-continue: asked for before the body is sent. */
	send_str(fd, "POST /c HTTP/1.1\r\nExpect: 100-continue\r\n"
	    "Content-Length: 3\r\n\r\n");
	read_for(fd, buf, sizeof(buf), 500, "Continue", &eof);
	assert_string_equal(buf, "HTTP/1.1 100 Continue\r\n\r\n");
	send_str(fd, "xyz");
	read_for(fd, buf, sizeof(buf), 500, "ok", &eof);
	assert_non_null(strstr(buf, "HTTP/1.1 200 OK\r\n"));
	assert_int_equal(fx->o.requests, 3);
	/* A stream: chunks, then the end. */
	fx->o.mode = HOLD;
	send_str(fd, "GET /s HTTP/1.1\r\n\r\n");
	loop_for(100);
	assert_non_null(fx->o.held);
	serve_conn_stream_start(fx->o.held, 200, "application/x-ndjson");
	serve_conn_stream_chunk(fx->o.held, "{\"a\":1}\n", 8);
	serve_conn_stream_chunk_take(fx->o.held, strdup("{\"b\":2}\n"), 8);
	serve_conn_stream_end(fx->o.held);
	read_for(fd, buf, sizeof(buf), 500, "0\r\n\r\n", &eof);
	assert_non_null(strstr(buf, "Transfer-Encoding: chunked\r\n\r\n"
	    "8\r\n{\"a\":1}\n\r\n8\r\n{\"b\":2}\n\r\n0\r\n\r\n"));
	/* Four replies on one connection, each reported written. */
	assert_int_equal(fx->o.dones, 4);
	assert_int_equal(fx->o.written, 4);
	close(fd);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_head_before_body, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_deadlines, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_caps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_emfile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unsent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unsent_read, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_gone_while_held, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_keepalive_continue_stream,
		    setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
