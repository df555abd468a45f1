/*
 * Integration tests for the cordon-proxy daemon: the built binary runs on
 * 127.0.0.1 with a stub DNS server and upstream servers on 127.0.0.2 (see
 * proxy_fixture.c), and each test drives it through real sockets: allow and
 * deny paths, IP literal encodings, rebinding, HTTP forwarding, limits,
 * timeouts, reload, drain, and memory with thousands of tunnels.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/proc.h"
#include "common/util.h"
#include "proxy_fixture.h"

static char head[8192];

/* CONNECT that must be refused with status and reason. */
static void
expect_connect_refused(struct px *p, const char *authority, int status,
    const char *reason)
{
	int st, fd;

	fd = px_connect(p, authority, &st, head, sizeof(head));
	if (fd >= 0)
		close(fd);
	if (st != status || (reason != NULL &&
	    !head_has(head, "X-Cordon-Error", reason)))
		fail_msg("CONNECT %s: want %d %s, got %d:\n%s", authority,
		    status, reason != NULL ? reason : "", st, head);
}

/* Sends raw bytes as one request on a fresh connection; returns status. */
static int
raw_request(struct px *p, const char *req)
{
	int fd = cli_connect(p->port), st;

	assert_true(fd >= 0);
	assert_int_equal(cli_send(fd, req), 0);
	st = cli_read_head(fd, head, sizeof(head));
	close(fd);
	return st;
}

static void
echo_roundtrip(int fd, const char *msg)
{
	char buf[256];
	size_t n = strlen(msg);

	assert_true(n < sizeof(buf));
	assert_int_equal(cli_send(fd, msg), 0);
	assert_int_equal(cli_read_n(fd, buf, n), 0);
	assert_memory_equal(buf, msg, n);
}

static void
stop_ok(struct px *p)
{
	assert_int_equal(px_stop(p), 0);
}

/* --- allow and deny paths ---------------------------------------------- */

/* Echo, a large transfer, and half-close through one relay mode. */
static void
connect_echo(const char *const *extra)
{
	static char big[1 << 20], back[1 << 20];
	struct px p;
	int st, fd;
	char c;

	assert_int_equal(px_start(&p, NULL, extra), 0);
	fd = px_connect(&p, px_auth("echo.cordon-test.net", fx_echo_port()),
	    &st, head, sizeof(head));
	assert_int_equal(st, 200);
	echo_roundtrip(fd, "hello through the tunnel");
	echo_roundtrip(fd, "and again");
	/* 1 MiB both ways (the echo server sends it back while we write:
	 * small pieces so neither side's buffers deadlock). */
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)(i * 7 + i / 4096);
	for (size_t off = 0; off < sizeof(big); off += 65536) {
		assert_int_equal(cli_send_n(fd, big + off, 65536), 0);
		assert_int_equal(cli_read_n(fd, back + off, 65536), 0);
	}
	assert_memory_equal(big, back, sizeof(big));
	/* Half-close: our FIN reaches the echo server, which closes; what
	 * was in flight still arrives, then EOF. */
	assert_int_equal(cli_send(fd, "last words"), 0);
	assert_int_equal(shutdown(fd, SHUT_WR), 0);
	assert_int_equal(cli_read_n(fd, back, 10), 0);
	assert_memory_equal(back, "last words", 10);
	assert_int_equal(recv(fd, &c, 1, 0), 0);
	close(fd);
	/* Half-close before a single byte: the SNI check's reader is the one
	 * that reads the end, and the FIN still reaches the echo server,
	 * which closes (a lost FIN would leave recv to time out). */
	fd = px_connect(&p, px_auth("echo.cordon-test.net", fx_echo_port()),
	    &st, head, sizeof(head));
	assert_int_equal(st, 200);
	assert_int_equal(shutdown(fd, SHUT_WR), 0);
	assert_int_equal(recv(fd, &c, 1, 0), 0);
	close(fd);
	/* Bytes sent right behind the CONNECT head (one write). */
	fd = cli_connect(p.port);
	snprintf(big, sizeof(big), "CONNECT echo.cordon-test.net:%u HTTP/1.1\r\n"
	    "\r\npipelined", fx_echo_port());
	assert_int_equal(cli_send(fd, big), 0);
	assert_int_equal(cli_read_head(fd, head, sizeof(head)), 200);
	assert_int_equal(cli_read_n(fd, back, 9), 0);
	assert_memory_equal(back, "pipelined", 9);
	echo_roundtrip(fd, "after the pipelined bytes");
	close(fd);
	stop_ok(&p);
}

static void
test_connect_echo(void **state)
{
	(void)state;
	connect_echo(NULL);
}

static void
test_connect_echo_buffered(void **state)
{
	static const char *const extra[] = { "--no-splice", NULL };

	(void)state;
	connect_echo(extra);
}

static void
test_access_log(void **state)
{
	struct px p;
	int st, fd;
	char *log = NULL;
	size_t len;

	(void)state;
	assert_int_equal(px_start(&p, NULL, NULL), 0);
	fd = px_connect(&p, px_auth("echo.cordon-test.net", fx_echo_port()),
	    &st, head, sizeof(head));
	assert_int_equal(st, 200);
	echo_roundtrip(fd, "0123456789");
	close(fd);
	expect_connect_refused(&p, px_auth("denied.cordon-test.net",
	    fx_echo_port()), 403, "denied-by-entry");
	assert_int_equal(kill(p.pid, SIGTERM), 0);
	assert_int_equal(px_wait_exit(&p, 10000), 0);
	assert_int_equal(util_read_file(p.accesslog, 1 << 20, &log, &len), 0);
	fprintf(stderr, "access log:\n%s", log);
	assert_non_null(strstr(log, "\"method\":\"CONNECT\",\"host\":"
	    "\"echo.cordon-test.net\""));
	assert_non_null(strstr(log, "\"decision\":\"allow\",\"reason\":"
	    "\"allowed-by-entry\",\"policy\":\"default\",\"address\":"
	    "\"127.0.0.2:"));
	assert_non_null(strstr(log, "\"status\":200,\"bytes_up\":10,"
	    "\"bytes_down\":10"));
	assert_non_null(strstr(log, "\"decision\":\"deny\",\"reason\":"
	    "\"denied-by-entry\""));
	assert_non_null(strstr(log, "\"dns_ms\":"));
	free(log);
	stop_ok(&p);
}

static void
test_not_allowlisted(void **state)
{
	struct px p;
	unsigned before;

	(void)state;
	assert_int_equal(px_start(&p, NULL, NULL), 0);
	before = fx_queries("x.other-test.net");
	expect_connect_refused(&p, px_auth("x.other-test.net",
	    fx_echo_port()), 403, "not-on-policy default");
	/* Wrong port for an allowed name. */
	expect_connect_refused(&p, px_auth("echo.cordon-test.net", 443),
	    403, "port-not-allowed");
	expect_connect_refused(&p, px_auth("denied.cordon-test.net",
	    fx_echo_port()), 403, "denied-by-entry");
	/* The allowlist is checked before any lookup. */
	assert_int_equal(fx_queries("x.other-test.net"), before);
	assert_int_equal(fx_queries("denied.cordon-test.net"), 0);
	stop_ok(&p);
}

/* Whether lo has ::1 here (not where IPv6 is off). */
static bool
local_has_v6_loopback(void)
{
	struct ifaddrs *ifa, *i;
	bool found = false;

	assert_int_equal(getifaddrs(&ifa), 0);
	for (i = ifa; i != NULL; i = i->ifa_next)
		if (i->ifa_addr != NULL && i->ifa_addr->sa_family == AF_INET6 &&
		    IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)
		    i->ifa_addr)->sin6_addr))
			found = true;
	freeifaddrs(ifa);
	return found;
}

static void
test_internal_answers(void **state)
{
	struct px p;

	(void)state;
	assert_int_equal(px_start(&p, NULL, NULL), 0);
	/* 127.0.0.1 is where the proxy listens, ::1 is lo's: both are the
	 * proxy's own (more local addresses: test_self.c); 127.0.0.9 is
	 * loopback but no interface's address. */
	expect_connect_refused(&p, px_auth("loop1.cordon-test.net",
	    fx_echo_port()), 403, "address-self");
	expect_connect_refused(&p, px_auth("loop9.cordon-test.net",
	    fx_echo_port()), 403, "address-loopback");
	expect_connect_refused(&p, px_auth("meta.cordon-test.net",
	    fx_echo_port()), 403, "address-metadata");
	expect_connect_refused(&p, px_auth("priv.cordon-test.net",
	    fx_echo_port()), 403, "address-private");
	expect_connect_refused(&p, px_auth("v6loop.cordon-test.net",
	    fx_echo_port()), 403, local_has_v6_loopback() ? "address-self" :
	    "address-loopback");
	/* Several answers, all blocked: the first one's reason. */
	expect_connect_refused(&p, px_auth("allbad.cordon-test.net",
	    fx_echo_port()), 403, "address-private");
	stop_ok(&p);
}

static void
test_ip_literals(void **state)
{
	static const char *const lits[] = {
		"2852039166", "0xA9FEA9FE", "0251.0376.0251.0376",
		"169.254.43518", "127.1", "0x7f.1", "[::ffff:169.254.169.254]",
		"[::1]", "[fd00:ec2::254]", "10.0.0.1", "0", "[::]",
		"100.100.100.200", "[::ffff:127.0.0.1]", "[2002:a9fe:a9fe::1]",
	};
	struct px p;
	unsigned before;
	int st;

	(void)state;
	assert_int_equal(px_start(&p, NULL, NULL), 0);
	before = fx_queries(NULL);
	for (size_t i = 0; i < sizeof(lits) / sizeof(lits[0]); i++) {
		char req[512];

		expect_connect_refused(&p, px_auth(lits[i], 80), 403, NULL);
		assert_non_null(strstr(head, "X-Cordon-Error: address-"));
		snprintf(req, sizeof(req), "GET http://%s/ HTTP/1.1\r\n"
		    "Host: %s\r\n\r\n", lits[i], lits[i]);
		st = raw_request(&p, req);
		if (st != 403)
			fail_msg("GET via %s: %d\n%s", lits[i], st, head);
	}
	/* Bad literals are 400, also without DNS. */
	expect_connect_refused(&p, "[fe80::1%25eth0]:80", 400, NULL);
	expect_connect_refused(&p, "1.2.3.4.5:80", 400, NULL);
	expect_connect_refused(&p, "0x1.0xfffffffff:80", 400, NULL);
	assert_int_equal(fx_queries(NULL), before);
	stop_ok(&p);
}

/* A port with leading zeros is no port (as `cordon allowlist explain`
 * says invalid-port): 400 bad-port, for CONNECT and absolute URIs, before
 * any lookup; the same port written plainly still works. */
static void
test_bad_ports(void **state)
{
	char auth[128], req[256];
	unsigned before;
	struct px p;
	int st, fd;

	(void)state;
	assert_int_equal(px_start(&p, NULL, NULL), 0);
	before = fx_queries(NULL);
	snprintf(auth, sizeof(auth), "echo.cordon-test.net:0%u",
	    fx_echo_port());
	expect_connect_refused(&p, auth, 400, "bad-port");
	snprintf(auth, sizeof(auth), "echo.cordon-test.net:00%u",
	    fx_echo_port());
	expect_connect_refused(&p, auth, 400, "bad-port");
	expect_connect_refused(&p, "echo.cordon-test.net:0", 400, "bad-port");
	expect_connect_refused(&p, "echo.cordon-test.net:", 400, "bad-port");
	snprintf(req, sizeof(req), "GET http://web.cordon-test.net:0%u/ "
	    "HTTP/1.1\r\nHost: web.cordon-test.net:0%u\r\n\r\n",
	    fx_http_port(), fx_http_port());
	assert_int_equal(raw_request(&p, req), 400);
	assert_true(head_has(head, "X-Cordon-Error", "bad-port"));
	assert_int_equal(fx_queries(NULL), before);
	fd = px_connect(&p, px_auth("echo.cordon-test.net", fx_echo_port()),
	    &st, head, sizeof(head));
	assert_int_equal(st, 200);
	close(fd);
	stop_ok(&p);
}

static void
test_internal_names(void **state)
{
	static const char *const names[] = {
		"localhost", "foo.localhost", "metadata.google.internal",
		"printer.local", "singlelabel", "LOCALHOST.", "db.internal",
	};
	struct px p;
	unsigned before;

	(void)state;
	assert_int_equal(px_start(&p, NULL, NULL), 0);
	before = fx_queries(NULL);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		expect_connect_refused(&p, px_auth(names[i], 80), 403,
		    "internal-name");
	assert_int_equal(fx_queries(NULL), before);
	stop_ok(&p);
}

static void
test_rebinding(void **state)
{
	/* A long lookup timeout: a retransmitted query under load would
	 * be counted as a second lookup. */
	static const char *const extra[] = { "--dns-timeout", "10", NULL };
	struct px p;
	int st, fd;

	(void)state;
	assert_int_equal(px_start(&p, NULL, extra), 0);
	assert_int_equal(fx_queries_a("rebind.cordon-test.net"), 0);
	/* First lookup answers 127.0.0.2 (excepted): the tunnel must reach
	 * the echo server there, after exactly one A query. */
	fd = px_connect(&p, px_auth("rebind.cordon-test.net",
	    fx_echo_port()), &st, head, sizeof(head));
	assert_int_equal(st, 200);
	echo_roundtrip(fd, "rebind-proof");
	assert_int_equal(fx_queries_a("rebind.cordon-test.net"), 1);
	close(fd);
	/* Every later lookup answers the metadata address: refused. */
	expect_connect_refused(&p, px_auth("rebind.cordon-test.net",
	    fx_echo_port()), 403, "address-metadata");
	assert_int_equal(fx_queries_a("rebind.cordon-test.net"), 2);
	stop_ok(&p);
}

/* The answer cache: an answer with a TTL is asked once, and what the cache
 * gives back is classified on every use like a fresh answer (a private
 * address stays refused); one lookup at most per request. */
static void
test_dns_cache(void **state)
{
	struct px p;
	int st, fd;

	(void)state;
	assert_int_equal(px_start(&p, NULL, NULL), 0);
	for (unsigned i = 1; i <= 3; i++) {
		expect_connect_refused(&p, px_auth(
		    "cachedpriv.cordon-test.net", fx_echo_port()), 403,
		    "address-private");
		assert_int_equal(fx_queries_a("cachedpriv.cordon-test.net"), 1);
		fd = px_connect(&p, px_auth("cached.cordon-test.net",
		    fx_echo_port()), &st, head, sizeof(head));
		assert_int_equal(st, 200);
		echo_roundtrip(fd, "from the cache");
		close(fd);
		assert_int_equal(fx_queries_a("cached.cordon-test.net"), 1);
	}
	stop_ok(&p);
}

static void
test_mixed_answers(void **state)
{
	struct px p;
	int st, fd;

	(void)state;
	assert_int_equal(px_start(&p, NULL, NULL), 0);
	fd = px_connect(&p, px_auth("mixed.cordon-test.net", fx_echo_port()),
	    &st, head, sizeof(head));
	assert_int_equal(st, 200);
	echo_roundtrip(fd, "the permitted answer");
	close(fd);
	stop_ok(&p);
}

static void
test_dns_failures(void **state)
{
	struct px p;
	int64_t t0;

	(void)state;
	assert_int_equal(px_start(&p, NULL, NULL), 0);
	expect_connect_refused(&p, px_auth("nx.cordon-test.net",
	    fx_echo_port()), 502, "dns-nxdomain");
	t0 = time_mono_ms();
	expect_connect_refused(&p, px_auth("slow.cordon-test.net",
	    fx_echo_port()), 502, "dns-timeout");
	/* --dns-timeout 0.8 bounds the whole lookup. */
	assert_true(time_mono_ms() - t0 >= 700);
	assert_true(time_mono_ms() - t0 < 4000);
	stop_ok(&p);
}

static void
test_upstream_refused(void **state)
{
	struct px p;

	(void)state;
	assert_int_equal(px_start(&p, NULL, NULL), 0);
	expect_connect_refused(&p, px_auth("refused.cordon-test.net",
	    fx_closed_port()), 502, "upstream-refused");
	stop_ok(&p);
}

static void
test_connect_timeout(void **state)
{
	static const char *const extra[] = { "--connect-timeout", "0.5", NULL };
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	char text[1024], auth[64];
	int lfd, fill[4], st, fd;
	int64_t t0;
	struct px p;

	(void)state;
	/* A listener whose accept queue is full: the kernel drops further
	 * SYNs, so a connect to it hangs (a blackhole on loopback). */
	inet_pton(AF_INET, "127.0.0.2", &sin.sin_addr);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(lfd, 0), 0);
	getsockname(lfd, (struct sockaddr *)&sin, &sl);
	for (int i = 0; i < 4; i++) {
		fill[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, 0);
		(void)connect(fill[i], (struct sockaddr *)&sin, sizeof(sin));
	}
	snprintf(text, sizeof(text), "%s127.0.0.2:%u\n", px_default_allowlist(),
	    ntohs(sin.sin_port));
	assert_int_equal(px_start(&p, text, extra), 0);
	snprintf(auth, sizeof(auth), "127.0.0.2:%u", ntohs(sin.sin_port));
	t0 = time_mono_ms();
	fd = px_connect(&p, auth, &st, head, sizeof(head));
	assert_true(fd < 0);
	assert_int_equal(st, 504);
	assert_true(head_has(head, "X-Cordon-Error", "connect-timeout"));
	assert_true(time_mono_ms() - t0 >= 400);
	for (int i = 0; i < 4; i++)
		close(fill[i]);
	close(lfd);
	stop_ok(&p);
}

/* A line of /proc/PID/status: its first number, or -1. */
static long
proc_status(pid_t pid, const char *key)
{
	char path[64], line[256];
	size_t n = strlen(key);
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, key, n) == 0 && line[n] == ':')
			v = strtol(line + n + 1, NULL, 10);
	fclose(f);
	return v;
}

/* The network child of the daemon started as p (the only child). */
static pid_t
network_child(const struct px *p)
{
	char path[64], line[256];
	pid_t found = 0;
	FILE *f;

	for (int tries = 0; tries < 100 && found == 0; tries++) {
		snprintf(path, sizeof(path), "/proc/%d/task/%d/children",
		    (int)p->pid, (int)p->pid);
		if ((f = fopen(path, "r")) != NULL) {
			if (fgets(line, sizeof(line), f) != NULL)
				found = (pid_t)strtol(line, NULL, 10);
			fclose(f);
		}
		if (found == 0)
			usleep(20000);
	}
	return found;
}

/* Privilege separation: the parent stays root (it keeps the keys and
 * rereads root-only files); the process that accepts and parses runs as
 * --user, with no_new_privs, in the empty root, and cannot open a file
 * only root may read. */
static void
test_user_drop(void **state)
{
	static const char *const extra[] = { "--user", "nobody", NULL };
	char path[64], root[256], secret[] = "/tmp/cordon-pxtest-secret.XXXXXX";
	struct px p;
	pid_t child, k;
	ssize_t n;
	int st, fd, wst;

	(void)state;
	assert_int_equal(px_start(&p, NULL, extra), 0);
	assert_int_equal(proc_status(p.pid, "Uid"), 0);
	child = network_child(&p);
	assert_true(child > 0);
	assert_int_equal(proc_status(child, "Uid"), 65534);
	assert_int_equal(proc_status(child, "Gid"), 65534);
	assert_int_equal(proc_status(child, "NoNewPrivs"), 1);
	snprintf(path, sizeof(path), "/proc/%d/root", (int)child);
	n = readlink(path, root, sizeof(root) - 1);
	assert_true(n > 0);
	root[n] = '\0';
	assert_string_equal(root, "/run/cordon-proxy-root");
	/* What the child's user can do with a root-only file (as the CA
	 * key and the secrets store are): nothing. */
	fd = mkstemp(secret);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "k", 1), 1);
	close(fd);
	k = fork();
	if (k == 0) {
		if (setgid(65534) != 0 || setuid(65534) != 0)
			_exit(2);
		_exit(open(secret, O_RDONLY) < 0 && errno == EACCES ? 0 : 1);
	}
	assert_int_equal(waitpid(k, &wst, 0), k);
	unlink(secret);
	assert_true(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
	fd = px_connect(&p, px_auth("echo.cordon-test.net", fx_echo_port()),
	    &st, head, sizeof(head));
	assert_int_equal(st, 200);
	echo_roundtrip(fd, "as nobody");
	close(fd);
	stop_ok(&p);
}

/* --- HTTP forwarding ---------------------------------------------------- */

static void
read_body(int fd, char *buf, size_t len)
{
	long cl = head_content_length(head);

	assert_true(cl >= 0 && (size_t)cl < len);
	assert_int_equal(cli_read_n(fd, buf, (size_t)cl), 0);
	buf[cl] = '\0';
}

static void
test_http_keepalive(void **state)
{
	struct px p;
	char req[1024], body[1024], up[8192];
	int fd;

	(void)state;
	assert_int_equal(px_start(&p, NULL, NULL), 0);
	fd = cli_connect(p.port);
	assert_true(fd >= 0);
	snprintf(req, sizeof(req), "GET http://web.cordon-test.net:%u/first?q=1 "
	    "HTTP/1.1\r\nHost: web.cordon-test.net:%u\r\n"
	    "Proxy-Authorization: Basic c2VjcmV0\r\nProxy-Connection: "
	    "keep-alive\r\nX-Mine: kept\r\n\r\n", fx_http_port(),
	    fx_http_port());
	assert_int_equal(cli_send(fd, req), 0);
	assert_int_equal(cli_read_head(fd, head, sizeof(head)), 200);
	assert_true(head_has(head, "X-Upstream", "yes"));
	/* The client connection stays open: no Connection: close. */
	assert_null(strcasestr(head, "Connection: close"));
	read_body(fd, body, sizeof(body));
	assert_string_equal(body, "/first?q=1|");
	fx_last_http_head(up, sizeof(up));
	assert_non_null(strstr(up, "GET /first?q=1 HTTP/1.1\r\n"));
	assert_null(strcasestr(up, "Proxy-"));
	assert_non_null(strstr(up, "X-Mine: kept\r\n"));
	assert_non_null(strstr(up, "Connection: close\r\n"));
	/* Second request on the same connection: checked on its own. */
	snprintf(req, sizeof(req), "GET http://denied.cordon-test.net:%u/ "
	    "HTTP/1.1\r\nHost: denied.cordon-test.net:%u\r\n\r\n",
	    fx_http_port(), fx_http_port());
	assert_int_equal(cli_send(fd, req), 0);
	assert_int_equal(cli_read_head(fd, head, sizeof(head)), 403);
	assert_true(head_has(head, "X-Cordon-Error", "denied-by-entry"));
	close(fd);

	/* Pipelined: two allowed requests in one write. */
	fd = cli_connect(p.port);
	snprintf(req, sizeof(req), "GET http://web.cordon-test.net:%u/a "
	    "HTTP/1.1\r\n\r\nGET http://web.cordon-test.net:%u/b HTTP/1.1\r\n"
	    "Connection: close\r\n\r\n", fx_http_port(), fx_http_port());
	assert_int_equal(cli_send(fd, req), 0);
	assert_int_equal(cli_read_head(fd, head, sizeof(head)), 200);
	read_body(fd, body, sizeof(body));
	assert_string_equal(body, "/a|");
	assert_int_equal(cli_read_head(fd, head, sizeof(head)), 200);
	assert_true(head_has(head, "Connection", "close"));
	read_body(fd, body, sizeof(body));
	assert_string_equal(body, "/b|");
	close(fd);
	stop_ok(&p);
}

static void
test_http_post(void **state)
{
	struct px p;
	char req[1024], body[1024];
	int fd;

	(void)state;
	assert_int_equal(px_start(&p, NULL, NULL), 0);
	fd = cli_connect(p.port);
	snprintf(req, sizeof(req), "POST http://web.cordon-test.net:%u/post "
	    "HTTP/1.1\r\nContent-Length: 11\r\n\r\nhello world",
	    fx_http_port());
	assert_int_equal(cli_send(fd, req), 0);
	assert_int_equal(cli_read_head(fd, head, sizeof(head)), 200);
	read_body(fd, body, sizeof(body));
	assert_string_equal(body, "/post|hello world");
	/* Chunked, sent in pieces. */
	snprintf(req, sizeof(req), "POST http://web.cordon-test.net:%u/chunked "
	    "HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
	    fx_http_port());
	assert_int_equal(cli_send(fd, req), 0);
	assert_int_equal(cli_send(fd, "lo\r\n6\r\n world\r\n0\r\n\r\n"), 0);
	assert_int_equal(cli_read_head(fd, head, sizeof(head)), 200);
	read_body(fd, body, sizeof(body));
	assert_string_equal(body,
	    "/chunked|5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
	close(fd);
	stop_ok(&p);
}

static void
test_http_errors(void **state)
{
	struct px p;
	char req[1024], *big;
	int st;

	(void)state;
	assert_int_equal(px_start(&p, NULL, NULL), 0);
	/* Host header disagreeing with the URI. */
	snprintf(req, sizeof(req), "GET http://web.cordon-test.net:%u/ HTTP/1.1"
	    "\r\nHost: evil.example.org\r\n\r\n", fx_http_port());
	assert_int_equal(raw_request(&p, req), 400);
	assert_true(head_has(head, "X-Cordon-Error", "host-mismatch"));
	/* Origin-form to the proxy. */
	assert_int_equal(raw_request(&p, "GET / HTTP/1.1\r\nHost: "
	    "web.cordon-test.net\r\n\r\n"), 400);
	assert_true(head_has(head, "X-Cordon-Error", "origin-form"));
	/* Malformed. */
	assert_int_equal(raw_request(&p, "GARBAGE\r\n\r\n"), 400);
	assert_int_equal(raw_request(&p, "GET http://a.b/ HTTP/1.1\r\n"
	    "Content-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"), 400);
	assert_int_equal(raw_request(&p, "CONNECT echo.cordon-test.net "
	    "HTTP/1.1\r\n\r\n"), 400);
	/* Other schemes and TRACE. */
	assert_int_equal(raw_request(&p, "GET https://web.cordon-test.net/ "
	    "HTTP/1.1\r\n\r\n"), 405);
	assert_int_equal(raw_request(&p, "GET ftp://web.cordon-test.net/ "
	    "HTTP/1.1\r\n\r\n"), 405);
	snprintf(req, sizeof(req), "TRACE http://web.cordon-test.net:%u/ "
	    "HTTP/1.1\r\n\r\n", fx_http_port());
	assert_int_equal(raw_request(&p, req), 405);
	/* Headers too large (default --max-header 32k). */
	big = malloc(40000);
	assert_non_null(big);
	strcpy(big, "GET http://web.cordon-test.net/ HTTP/1.1\r\nX-Big: ");
	memset(big + strlen(big), 'a', 39000);
	big[39000] = '\0';
	strcat(big, "\r\n\r\n");
	st = raw_request(&p, big);
	free(big);
	assert_int_equal(st, 431);
	stop_ok(&p);
}

/* --- limits and timeouts ----------------------------------------------- */

static void
test_slowloris(void **state)
{
	static const char *const extra[] = { "--header-timeout", "1", NULL };
	struct px p;
	int64_t t0;
	int fd, st;

	(void)state;
	assert_int_equal(px_start(&p, NULL, extra), 0);
	fd = cli_connect(p.port);
	t0 = time_mono_ms();
	assert_int_equal(cli_send(fd, "GET http://web.cordon-test.net/ HTTP/1.1"
	    "\r\nX-Slow: "), 0);
	/* Keep trickling: the deadline is for the whole head. */
	for (int i = 0; i < 3; i++) {
		struct timespec ts = { 0, 300 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		if (cli_send(fd, "a") != 0)
			break;
	}
	st = cli_read_head(fd, head, sizeof(head));
	assert_int_equal(st, 408);
	assert_true(head_has(head, "X-Cordon-Error", "header-timeout"));
	assert_true(time_mono_ms() - t0 < 3000);
	close(fd);
	stop_ok(&p);
}

static void
test_max_connections(void **state)
{
	static const char *const extra[] = { "--max-connections", "2", NULL };
	struct px p;
	int a, b, fd, st;

	(void)state;
	assert_int_equal(px_start(&p, NULL, extra), 0);
	a = px_connect(&p, px_auth("echo.cordon-test.net", fx_echo_port()),
	    &st, head, sizeof(head));
	assert_int_equal(st, 200);
	b = cli_connect(p.port);
	assert_true(b >= 0);
	/* b is accepted before the next one (accept queue order). */
	fd = cli_connect(p.port);
	assert_int_equal(cli_send(fd, "CONNECT echo.cordon-test.net:1 "
	    "HTTP/1.1\r\n\r\n"), 0);
	assert_int_equal(cli_read_head(fd, head, sizeof(head)), 503);
	assert_true(head_has(head, "X-Cordon-Error", "over-capacity"));
	close(fd);
	/* The tunnel is unaffected; after closing b there is room again. */
	echo_roundtrip(a, "still here");
	close(b);
	close(a);
	for (int i = 0; i < 50; i++) {
		int c = px_connect(&p, px_auth("echo.cordon-test.net",
		    fx_echo_port()), &st, head, sizeof(head));
		if (c >= 0) {
			echo_roundtrip(c, "room again");
			close(c);
			break;
		}
		/* Closing is asynchronous: retry briefly on 503. */
		assert_int_equal(st, 503);
		struct timespec ts = { 0, 50 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	assert_int_equal(st, 200);
	stop_ok(&p);
}

static void
test_garbage_isolation(void **state)
{
	struct px p;
	unsigned char junk[4096];
	int good, bad, st;

	(void)state;
	assert_int_equal(px_start(&p, NULL, NULL), 0);
	good = px_connect(&p, px_auth("echo.cordon-test.net", fx_echo_port()),
	    &st, head, sizeof(head));
	assert_int_equal(st, 200);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (unsigned char)(i * 131 + 7);
	for (int round = 0; round < 5; round++) {
		bad = cli_connect(p.port);
		assert_true(bad >= 0);
		(void)cli_send_n(bad, junk, sizeof(junk));
		(void)cli_send_n(bad, "\r\n\r\n", 4);
		st = cli_read_head(bad, head, sizeof(head));
		assert_true(st == 400 || st == 431);
		close(bad);
		echo_roundtrip(good, "unaffected");
	}
	close(good);
	stop_ok(&p);
}

/* --- reload, drain, check ---------------------------------------------- */

static void
rewrite_allowlist(struct px *p, const char *text)
{
	char tmp[400];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s/new.list", p->dir);
	f = fopen(tmp, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(rename(tmp, p->allowlist), 0);
}

static void
test_sighup_reload(void **state)
{
	struct px p;
	char text[1024];
	size_t mark;
	int fd, st;

	(void)state;
	assert_int_equal(px_start(&p, NULL, NULL), 0);
	expect_connect_refused(&p, px_auth("x.other-test.net",
	    fx_echo_port()), 403, "not-on-policy default");
	/* A good file: the new host works. */
	snprintf(text, sizeof(text), "%sx.other-test.net:%u raw\n",
	    px_default_allowlist(), fx_echo_port());
	rewrite_allowlist(&p, text);
	mark = p.errlen;
	assert_int_equal(kill(p.pid, SIGHUP), 0);
	assert_true(px_wait_err(&p, mark, "reload ok", 10000));
	fd = px_connect(&p, px_auth("x.other-test.net", fx_echo_port()), &st,
	    head, sizeof(head));
	assert_int_equal(st, 200);
	echo_roundtrip(fd, "newly allowed");
	close(fd);
	/* A broken file: error with file:line, old list stays. */
	rewrite_allowlist(&p, "echo.cordon-test.net\nthis is not a host!\n");
	mark = p.errlen;
	assert_int_equal(kill(p.pid, SIGHUP), 0);
	assert_true(px_wait_err(&p, mark, "keeping the previous allowlist",
	    10000));
	snprintf(text, sizeof(text), "%s:2:", p.allowlist);
	assert_non_null(strstr(p.err + mark, text));
	fd = px_connect(&p, px_auth("x.other-test.net", fx_echo_port()), &st,
	    head, sizeof(head));
	assert_int_equal(st, 200);
	close(fd);
	expect_connect_refused(&p, px_auth("denied.cordon-test.net",
	    fx_echo_port()), 403, "denied-by-entry");
	stop_ok(&p);
}

static void
test_sigterm_drain(void **state)
{
	struct px p;
	size_t mark;
	int fd, st;

	(void)state;
	assert_int_equal(px_start(&p, NULL, NULL), 0);
	fd = px_connect(&p, px_auth("echo.cordon-test.net", fx_echo_port()),
	    &st, head, sizeof(head));
	assert_int_equal(st, 200);
	mark = p.errlen;
	assert_int_equal(kill(p.pid, SIGTERM), 0);
	assert_true(px_wait_err(&p, mark, "no longer accepting", 10000));
	/* New connections are refused; the tunnel goes on. */
	assert_true(cli_connect(p.port) < 0);
	echo_roundtrip(fd, "draining but alive");
	assert_int_equal(px_wait_exit(&p, 300), -2);
	close(fd);
	assert_int_equal(px_wait_exit(&p, 10000), 0);
	assert_true(px_wait_err(&p, mark, "drained: exiting", 1000));
	stop_ok(&p);
}

static void
test_sigterm_grace(void **state)
{
	static const char *const extra[] = { "--grace", "0.5", NULL };
	struct px p;
	int fd, st;

	(void)state;
	assert_int_equal(px_start(&p, NULL, extra), 0);
	fd = px_connect(&p, px_auth("echo.cordon-test.net", fx_echo_port()),
	    &st, head, sizeof(head));
	assert_int_equal(st, 200);
	assert_int_equal(kill(p.pid, SIGTERM), 0);
	/* The tunnel stays open, the grace period ends it. */
	assert_int_equal(px_wait_exit(&p, 10000), 0);
	close(fd);
	stop_ok(&p);
}

static void
test_metrics(void **state)
{
	/* 127.0.0.1 is excepted here, yet the proxy's own addresses stay
	 * refused. */
	static const char *const extra[] = { "--metrics", "127.0.0.1:0",
	    "--allow-address", "127.0.0.1", NULL };
	struct px p;
	char body[65536];
	int fd, st;

	(void)state;
	assert_int_equal(px_start(&p, NULL, extra), 0);
	assert_true(p.metrics_port != 0);
	fd = px_connect(&p, px_auth("echo.cordon-test.net", fx_echo_port()),
	    &st, head, sizeof(head));
	assert_int_equal(st, 200);
	expect_connect_refused(&p, px_auth("meta.cordon-test.net",
	    fx_echo_port()), 403, "address-metadata");
	/* The metrics listener is one of the proxy's own addresses. */
	expect_connect_refused(&p, px_auth("127.0.0.1", p.metrics_port), 403,
	    "address-self");
	int m = cli_connect(p.metrics_port);
	assert_true(m >= 0);
	assert_int_equal(cli_send(m, "GET /metrics HTTP/1.1\r\nHost: x\r\n"
	    "Connection: close\r\n\r\n"), 0);
	assert_int_equal(cli_read_head(m, head, sizeof(head)), 200);
	read_body(m, body, sizeof(body));
	close(m);
	fprintf(stderr, "%s", body);
	assert_non_null(strstr(body, "cordon_proxy_tunnels 1\n"));
	assert_non_null(strstr(body, "cordon_proxy_requests_total{decision="
	    "\"deny\",reason=\"address-metadata\"} 1\n"));
	assert_non_null(strstr(body, "cordon_proxy_dns_seconds_count "));
	assert_non_null(strstr(body, "cordon_proxy_connect_seconds_bucket"));
	close(fd);
	stop_ok(&p);
}

static void
test_check_mode(void **state)
{
	char bin[512], list[300], dir[] = "/tmp/cordon-pxcheck-XXXXXX";
	struct proc_result res;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(bin, sizeof(bin), "%s/proxy/cordon-proxy",
	    getenv("CORDON_BUILD_ROOT"));
	snprintf(list, sizeof(list), "%s/allow.list", dir);
	f = fopen(list, "w");
	fputs("example.com\n", f);
	fclose(f);
	{
		const char *argv[] = { bin, "--check", "--listen",
		    "127.0.0.1:0", "--allowlist", list, NULL };
		struct proc_opts o = { .argv = argv, .stdout_max = 65536,
		    .stderr_max = 65536 };
		assert_int_equal(proc_run(&o, 30000, &res), 0);
		assert_int_equal(res.exit_code, 0);
		proc_result_cleanup(&res);
	}
	f = fopen(list, "w");
	fputs("example.com\n*.com\n", f);
	fclose(f);
	{
		const char *argv[] = { bin, "--check", "--listen",
		    "127.0.0.1:0", "--allowlist", list, NULL };
		struct proc_opts o = { .argv = argv, .stdout_max = 65536,
		    .stderr_max = 65536 };
		char want[400];
		assert_int_equal(proc_run(&o, 30000, &res), 0);
		assert_int_equal(res.exit_code, 1);
		snprintf(want, sizeof(want), "%s:2:", list);
		assert_non_null(strstr(cbuf_data(res.err), want));
		proc_result_cleanup(&res);
	}
	{
		const char *argv[] = { bin, "--check", "--listen",
		    "localhost:80", "--allowlist", list, NULL };
		struct proc_opts o = { .argv = argv, .stdout_max = 65536,
		    .stderr_max = 65536 };
		assert_int_equal(proc_run(&o, 30000, &res), 0);
		assert_int_equal(res.exit_code, 1);
		assert_non_null(strstr(cbuf_data(res.err), "--listen"));
		proc_result_cleanup(&res);
	}
	unlink(list);
	rmdir(dir);
}

/* --- memory with many tunnels whose client never reads ------------------- */

#define MANY 2000

static void
many_tunnels(const char *relay)
{
	struct px p;
	static int fds[MANY];
	long rss0, rss1, conns0;
	long long bytes, last = -1;
	int st, small = 4096;
	int64_t deadline, stable_since = 0;
	char req[256];

	/* The fixture thread is busy flooding: give DNS more time. */
	/* One client opens them all in bursts of 200: no per-source cap
	 * (the fairness cap has its own test). */
	const char *extra[] = { "--dns-timeout", "10",
	    "--source-max-pending", "0", relay, NULL };
	const char *asan = getenv("ASAN_OPTIONS");
	char *saved = asan != NULL ? strdup(asan) : NULL, opts[512];

	/* Under ASan, freed buffers sit in its quarantine (256 MiB by
	 * default) and would be counted as the proxy's: turn it off for
	 * this daemon so RSS measures live memory. */
	snprintf(opts, sizeof(opts), "%s%squarantine_size_mb=0",
	    saved != NULL ? saved : "", saved != NULL ? ":" : "");
	setenv("ASAN_OPTIONS", opts, 1);
	st = px_start(&p, NULL, extra);
	if (saved != NULL)
		setenv("ASAN_OPTIONS", saved, 1);
	else
		unsetenv("ASAN_OPTIONS");
	free(saved);
	assert_int_equal(st, 0);
	/* Warm up (resolver, first buffers) before the baseline. */
	int w = px_connect(&p, px_auth("echo.cordon-test.net",
	    fx_echo_port()), &st, head, sizeof(head));
	assert_int_equal(st, 200);
	echo_roundtrip(w, "warm");
	close(w);
	rss0 = px_rss_kb(&p);
	conns0 = fx_flood_conns();
	snprintf(req, sizeof(req), "CONNECT flood.cordon-test.net:%u HTTP/1.1"
	    "\r\n\r\n", fx_flood_port());
	/* Send every CONNECT first, then read the answers: the proxy works
	 * on many at once. Small receive buffers keep kernel memory low. */
	for (int i = 0; i < MANY; i++) {
		struct sockaddr_in sin = { .sin_family = AF_INET,
		    .sin_port = htons(p.port) };
		struct timeval tv = { 20, 0 };

		sin.sin_addr.s_addr = htonl(0x7f000001);
		fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		assert_true(fds[i] >= 0);
		setsockopt(fds[i], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
		setsockopt(fds[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		assert_int_equal(connect(fds[i], (struct sockaddr *)&sin,
		    sizeof(sin)), 0);
		assert_int_equal(cli_send(fds[i], req), 0);
		if (i % 200 == 199) {
			/* Read the answers of this batch (no data is read:
			 * the head is read byte by byte up to CRLFCRLF). */
			for (int j = i - 199; j <= i; j++) {
				st = cli_read_head(fds[j], head, sizeof(head));
				if (st != 200)
					fail_msg("tunnel %d: %d\n%s", j, st,
					    head);
			}
		}
	}
	/* Every tunnel got its 200, so every upstream connection exists;
	 * the fixture thread may still be accepting the last ones. */
	deadline = time_mono_ms() + 30000;
	while (fx_flood_conns() - conns0 < MANY && time_mono_ms() < deadline) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	assert_int_equal(fx_flood_conns() - conns0, MANY);
	/* Readiness: the flood servers stop being able to write once every
	 * path is full; wait until their byte count stops moving. */
	deadline = time_mono_ms() + 120000;
	while (time_mono_ms() < deadline) {
		bytes = fx_flood_bytes();
		if (bytes != last) {
			last = bytes;
			stable_since = time_mono_ms();
		} else if (time_mono_ms() - stable_since >= 1000) {
			break;
		}
		struct timespec ts = { 0, 100 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	assert_true(time_mono_ms() < deadline);
	rss1 = px_rss_kb(&p);
	fprintf(stderr, "many tunnels (%s relay): %d tunnels, flood %lld bytes "
	    "queued by upstreams, proxy RSS %ld -> %ld KiB, %.1f KiB per "
	    "tunnel\n", relay != NULL ? "buffered" : "splice", MANY, last,
	    rss0, rss1, (double)(rss1 - rss0) / MANY);
	assert_true(rss1 - rss0 < 64 * 1024);
	/* Still serving. */
	w = px_connect(&p, px_auth("echo.cordon-test.net", fx_echo_port()),
	    &st, head, sizeof(head));
	assert_int_equal(st, 200);
	echo_roundtrip(w, "still responsive");
	close(w);
	for (int i = 0; i < MANY; i++)
		close(fds[i]);
	stop_ok(&p);
}

static void
test_many_tunnels(void **state)
{
	(void)state;
	many_tunnels(NULL);
}

static void
test_many_tunnels_buffered(void **state)
{
	(void)state;
	many_tunnels("--no-splice");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_connect_echo, fx_test_teardown),
		cmocka_unit_test_teardown(test_connect_echo_buffered,
		    fx_test_teardown),
		cmocka_unit_test_teardown(test_access_log, fx_test_teardown),
		cmocka_unit_test_teardown(test_not_allowlisted,
		    fx_test_teardown),
		cmocka_unit_test_teardown(test_internal_answers,
		    fx_test_teardown),
		cmocka_unit_test_teardown(test_ip_literals, fx_test_teardown),
		cmocka_unit_test_teardown(test_bad_ports, fx_test_teardown),
		cmocka_unit_test_teardown(test_internal_names,
		    fx_test_teardown),
		cmocka_unit_test_teardown(test_rebinding, fx_test_teardown),
		cmocka_unit_test_teardown(test_dns_cache, fx_test_teardown),
		cmocka_unit_test_teardown(test_mixed_answers, fx_test_teardown),
		cmocka_unit_test_teardown(test_dns_failures, fx_test_teardown),
		cmocka_unit_test_teardown(test_upstream_refused,
		    fx_test_teardown),
		cmocka_unit_test_teardown(test_connect_timeout,
		    fx_test_teardown),
		cmocka_unit_test_teardown(test_user_drop, fx_test_teardown),
		cmocka_unit_test_teardown(test_http_keepalive,
		    fx_test_teardown),
		cmocka_unit_test_teardown(test_http_post, fx_test_teardown),
		cmocka_unit_test_teardown(test_http_errors, fx_test_teardown),
		cmocka_unit_test_teardown(test_slowloris, fx_test_teardown),
		cmocka_unit_test_teardown(test_max_connections,
		    fx_test_teardown),
		cmocka_unit_test_teardown(test_garbage_isolation,
		    fx_test_teardown),
		cmocka_unit_test_teardown(test_sighup_reload, fx_test_teardown),
		cmocka_unit_test_teardown(test_sigterm_drain, fx_test_teardown),
		cmocka_unit_test_teardown(test_sigterm_grace, fx_test_teardown),
		cmocka_unit_test_teardown(test_metrics, fx_test_teardown),
		cmocka_unit_test_teardown(test_check_mode, fx_test_teardown),
		cmocka_unit_test_teardown(test_many_tunnels, fx_test_teardown),
		cmocka_unit_test_teardown(test_many_tunnels_buffered,
		    fx_test_teardown),
	};

	/* e.g. CORDON_TEST_FILTER=test_many_tunnels for one test; a filter
	 * that matches no test fails rather than passing with none run. */
	const char *filter = getenv("CORDON_TEST_FILTER");
	if (filter != NULL) {
		size_t matched = 0;
		for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
			if (fnmatch(filter, tests[i].name, 0) == 0)
				matched++;
		if (matched == 0) {
			fprintf(stderr, "CORDON_TEST_FILTER=%s matches no test\n",
			    filter);
			return 1;
		}
		cmocka_set_test_filter(filter);
	}
	return cmocka_run_group_tests(tests, fx_group_setup_nofile,
	    fx_group_teardown);
}
