/*
 * Integration tests for cordon-proxy's run mode (--control): the built
 * daemon with a real control socket in a temp dir and a directory of
 * policies, driven through real sockets (see proxy_fixture.c): per-run
 * policies, every 407/429/403 reason, limits, the egress report, reload,
 * the SNI check's refusals in the report, and the control protocol itself. Clients come from 127.0.0.1, or from
 * 127.0.0.2 (bound) as a second source address.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/util.h"
#include "proxy/dnsd.h"
#include "dig_util.h"
#include "dns_util.h"
#include "hello_util.h"
#include "proxy_fixture.h"
#include "result.h"

#define TOK_A	"aaaaaaaaaaaaaaaa0123456789abcdef0123456789abcdef0123456789abcdef"
#define TOK_B	"bbbbbbbbbbbbbbbb0123456789abcdef0123456789abcdef0123456789abcdef"
#define TOK_X	"cccccccccccccccc0123456789abcdef0123456789abcdef0123456789abcdef"

static char head[8192];

static void b64(const char *in, char *out);

/* The test's own temp dir: policies/ and ctl.sock. */
struct rm {
	struct px p;
	char dir[64];
	char pol[128];
	char sock[100];
};

static void
write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* Policy NAME (replaced atomically, so a reload never reads half). */
static void
write_policy(struct rm *r, const char *name, const char *text)
{
	char path[256], tmp[256];

	snprintf(path, sizeof(path), "%s/%s.list", r->pol, name);
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", r->dir, name);
	write_text(tmp, text);
	assert_int_equal(rename(tmp, path), 0);
}

static void
remove_policy(struct rm *r, const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s.list", r->pol, name);
	assert_int_equal(unlink(path), 0);
}

/* pypi: echo.cordon-test.net; npm: web.cordon-test.net (each on every
 * fixture port, raw: the fixture's servers speak plain bytes); tls:
 * echo.cordon-test.net on the echo port, tunnels carry TLS (only while
 * rm_tls is set). */
static bool rm_tls;

static void
rm_policies(struct rm *r)
{
	char text[256];

	snprintf(text, sizeof(text), "echo.cordon-test.net:%u,%u,%u raw\n"
	    "slow.cordon-test.net\n", fx_echo_port(), fx_http_port(),
	    fx_flood_port());
	write_policy(r, "pypi", text);
	snprintf(text, sizeof(text), "web.cordon-test.net:%u,%u,%u raw\n",
	    fx_echo_port(), fx_http_port(), fx_flood_port());
	write_policy(r, "npm", text);
	/* Tunnels that must carry TLS (the SNI check), when a test asks. */
	if (!rm_tls)
		return;
	snprintf(text, sizeof(text), "echo.cordon-test.net:%u\n",
	    fx_echo_port());
	write_policy(r, "tls", text);
}

/* Starts the daemon in run mode; extra (NULL-terminated) is appended. */
static void
rm_start(struct rm *r, const char *const *extra)
{
	const char *argv[32];
	size_t n = 0;

	memset(r, 0, sizeof(*r));
	snprintf(r->dir, sizeof(r->dir), "/tmp/cordon-pxrun-XXXXXX");
	assert_non_null(mkdtemp(r->dir));
	snprintf(r->pol, sizeof(r->pol), "%s/policies", r->dir);
	snprintf(r->sock, sizeof(r->sock), "%s/ctl.sock", r->dir);
	assert_int_equal(mkdir(r->pol, 0700), 0);
	rm_policies(r);
	argv[n++] = "--allowlist";
	argv[n++] = r->pol;
	argv[n++] = "--control";
	argv[n++] = r->sock;
	for (size_t i = 0; extra != NULL && extra[i] != NULL && n < 30; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	assert_int_equal(px_start(&r->p, NULL, argv), 0);
}

static struct rm R;

static void
rm_stop(struct rm *r)
{
	assert_int_equal(px_stop(&r->p), 0);
	(void)util_rm_rf(r->dir);
}

/* No token, plain or in its header encoding, in text. */
static void
no_tokens(const char *what, const char *text)
{
	static const char *const runs[] = { "run-a", "run-b", "run-c" };
	static const char *const toks[] = { TOK_A, TOK_B, TOK_X };
	char plain[256], enc[400];

	for (size_t i = 0; i < 3; i++) {
		if (strstr(text, toks[i]) != NULL)
			fail_msg("%s holds a token", what);
		for (size_t j = 0; j < 3; j++) {
			snprintf(plain, sizeof(plain), "%s:%s", runs[j],
			    toks[i]);
			b64(plain, enc);
			if (strstr(text, enc) != NULL)
				fail_msg("%s holds a credential", what);
		}
	}
}

/* Stops the daemon (SIGTERM, clean exit), checks that no token is in
 * its stderr or access log, cleans up; returns the access log (caller
 * frees). */
static char *
rm_finish(struct rm *r)
{
	char *log = NULL;
	size_t len;

	assert_int_equal(kill(r->p.pid, SIGTERM), 0);
	assert_int_equal(px_wait_exit(&r->p, 20000), 0);
	assert_int_equal(util_read_file(r->p.accesslog, 1 << 22, &log, &len),
	    0);
	no_tokens("access log", log);
	no_tokens("stderr", r->p.err);
	rm_stop(r);
	return log;
}

/* --- the control socket -------------------------------------------------- */

static int
ctl_open(const struct rm *r)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct timeval tv = { 10, 0 };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", r->sock);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	assert_int_equal(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	return fd;
}

/* Reads one answer line (without '\n') into a static buffer; NULL on
 * EOF. */
static const char *
ctl_read(int fd)
{
	static char buf[256 * 1024];
	size_t n = 0;

	while (n + 1 < sizeof(buf)) {
		ssize_t k = recv(fd, buf + n, 1, 0);
		if (k <= 0)
			return NULL;
		if (buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = '\0';
	return buf;
}

/* One request on a fresh connection; the answer (static). */
static const char *
ctl(const struct rm *r, const char *line)
{
	int fd = ctl_open(r);
	const char *a;

	assert_int_equal(cli_send(fd, line), 0);
	assert_int_equal(cli_send(fd, "\n"), 0);
	a = ctl_read(fd);
	close(fd);
	assert_non_null(a);
	return a;
}

static void
ctl_ok(const struct rm *r, const char *line)
{
	const char *a = ctl(r, line);

	if (strcmp(a, "{\"ok\":true}") != 0)
		fail_msg("%s -> %s", line, a);
}

/* register; extra is more JSON members (",\"max_conns\":1") or "". */
static const char *
ctl_register(const struct rm *r, const char *run, const char *addr,
    const char *policy, const char *token, int64_t deadline_ms,
    const char *extra)
{
	char line[1024];

	snprintf(line, sizeof(line), "{\"op\":\"register\",\"run\":\"%s\","
	    "\"addr\":\"%s\",\"policy\":\"%s\",\"token\":\"%s\","
	    "\"deadline_ms\":%lld%s}", run, addr, policy, token,
	    (long long)deadline_ms, extra);
	return ctl(r, line);
}

static void
reg_ok(const struct rm *r, const char *run, const char *addr,
    const char *policy, const char *token, const char *extra)
{
	const char *a = ctl_register(r, run, addr, policy, token,
	    time_wall_ms() + 600000, extra);

	if (strcmp(a, "{\"ok\":true}") != 0)
		fail_msg("register %s -> %s", run, a);
}

/* unregister or report: the parsed answer (caller deletes). */
static cJSON *
ctl_report(const struct rm *r, const char *op, const char *run)
{
	char line[256];
	cJSON *j;

	snprintf(line, sizeof(line), "{\"op\":\"%s\",\"run\":\"%s\"}", op,
	    run);
	j = cJSON_Parse(ctl(r, line));
	assert_non_null(j);
	return j;
}

/* --- clients -------------------------------------------------------------- */

static void
b64(const char *in, char *out)
{
	static const char tab[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t n = strlen(in), o = 0;

	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned char)in[i] << 16;
		if (i + 1 < n)
			v |= (unsigned char)in[i + 1] << 8;
		if (i + 2 < n)
			v |= (unsigned char)in[i + 2];
		out[o++] = tab[(v >> 18) & 63];
		out[o++] = tab[(v >> 12) & 63];
		out[o++] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < n ? tab[v & 63] : '=';
	}
	out[o] = '\0';
}

/* "Proxy-Authorization: Basic b64(run:token)\r\n", or "" for run NULL. */
static const char *
auth_line(const char *run, const char *token)
{
	static char buf[4][512];
	static int i;
	char plain[256], enc[400];

	i = (i + 1) % 4;
	if (run == NULL)
		return "";
	snprintf(plain, sizeof(plain), "%s:%s", run, token);
	b64(plain, enc);
	snprintf(buf[i], sizeof(buf[i]), "Proxy-Authorization: Basic %s\r\n",
	    enc);
	return buf[i];
}

/* A client socket from src (127.0.0.1 or 127.0.0.2) to the proxy. */
static int
cli_from(const struct rm *r, const char *src)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct timeval tv = { 10, 0 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(inet_pton(AF_INET, src, &sin.sin_addr), 1);
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	sin.sin_port = htons(r->p.port);
	assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	return fd;
}

/* CONNECT authority from src with the header line hdr; the status. On
 * 200 with fdout, the tunnel is left open in *fdout. */
static int
rconnect(const struct rm *r, const char *src, const char *hdr,
    const char *authority, int *fdout)
{
	char req[1024];
	int fd = cli_from(r, src), st;

	snprintf(req, sizeof(req), "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n",
	    authority, authority, hdr);
	assert_int_equal(cli_send(fd, req), 0);
	st = cli_read_head(fd, head, sizeof(head));
	if (st == 200 && fdout != NULL) {
		*fdout = fd;
		return st;
	}
	close(fd);
	return st;
}

/* A CONNECT that must be refused with status and X-Cordon-Error. */
static void
refused(const struct rm *r, const char *src, const char *hdr,
    const char *authority, int status, const char *reason)
{
	int st = rconnect(r, src, hdr, authority, NULL);

	if (st != status || !head_has(head, "X-Cordon-Error", reason))
		fail_msg("CONNECT %s from %s: want %d %s, got %d:\n%s",
		    authority, src, status, reason, st, head);
	if (status == 407 && !head_has(head, "Proxy-Authenticate",
	    "Basic realm=\"cordon\""))
		fail_msg("407 without Proxy-Authenticate:\n%s", head);
}

/* A tunnel that must work: 200 and an echo round trip. */
static void
echo_ok(const struct rm *r, const char *src, const char *hdr)
{
	char buf[16];
	int fd = -1;
	int st = rconnect(r, src, hdr, px_auth("echo.cordon-test.net",
	    fx_echo_port()), &fd);

	if (st != 200)
		fail_msg("echo tunnel: %d\n%s", st, head);
	assert_int_equal(cli_send(fd, "0123456789"), 0);
	assert_int_equal(cli_read_n(fd, buf, 10), 0);
	assert_memory_equal(buf, "0123456789", 10);
	close(fd);
}

/* True when fd sees EOF or an error within ms. */
static bool
closed_within(int fd, int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	char c;
	ssize_t n;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	n = recv(fd, &c, 1, 0);
	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

static void
sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* --- tests ---------------------------------------------------------------- */

/* Two runs, two policies: each reaches its own host only. */
static void
test_run_policies(void **state)
{
	const char *A = auth_line("run-a", TOK_A), *B = auth_line("run-b",
	    TOK_B);
	char req[1024], body[256], up[8192], *log;
	struct rm *r = &R;
	struct stat st;
	int fd;
	long cl;

	(void)state;
	rm_start(r, NULL);
	/* Only root (the owner) may connect. */
	assert_int_equal(lstat(r->sock, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_uid, geteuid());
	ctl_ok(r, "{\"op\":\"ping\"}");
	assert_string_equal(ctl(r, "{\"op\":\"policies\"}"),
	    "{\"ok\":true,\"policies\":[\"npm\",\"pypi\"]}");
	reg_ok(r, "run-a", "127.0.0.1", "pypi", TOK_A, "");
	reg_ok(r, "run-b", "127.0.0.1", "npm", TOK_B, "");
	echo_ok(r, "127.0.0.1", A);
	refused(r, "127.0.0.1", A,
	    px_auth("web.cordon-test.net", fx_echo_port()), 403,
	    "not-on-policy pypi");
	refused(r, "127.0.0.1", B, px_auth("echo.cordon-test.net",
	    fx_echo_port()), 403, "not-on-policy npm");
	/* B's host over plain HTTP; the credential is not forwarded. */
	fd = cli_from(r, "127.0.0.1");
	snprintf(req, sizeof(req), "GET http://web.cordon-test.net:%u/b "
	    "HTTP/1.1\r\nHost: web.cordon-test.net:%u\r\n%s\r\n",
	    fx_http_port(), fx_http_port(), B);
	assert_int_equal(cli_send(fd, req), 0);
	assert_int_equal(cli_read_head(fd, head, sizeof(head)), 200);
	cl = head_content_length(head);
	assert_true(cl > 0 && cl < (long)sizeof(body));
	assert_int_equal(cli_read_n(fd, body, (size_t)cl), 0);
	fx_last_http_head(up, sizeof(up));
	assert_null(strcasestr(up, "Proxy-Authorization"));
	assert_null(strstr(up, TOK_B));
	/* Kept alive: the next request must name the same run. */
	snprintf(req, sizeof(req), "GET http://web.cordon-test.net:%u/c "
	    "HTTP/1.1\r\nHost: web.cordon-test.net:%u\r\n%s\r\n",
	    fx_http_port(), fx_http_port(), A);
	assert_int_equal(cli_send(fd, req), 0);
	assert_int_equal(cli_read_head(fd, head, sizeof(head)), 407);
	assert_true(head_has(head, "X-Cordon-Error",
	    "credential-wrong-source"));
	close(fd);
	/* Register: unknown policy (names listed), duplicate, past
	 * deadline. */
	assert_string_equal(ctl_register(r, "run-c", "127.0.0.1", "nope",
	    TOK_X, time_wall_ms() + 60000, ""), "{\"ok\":false,\"error\":"
	    "\"unknown policy \\\"nope\\\" (policies: npm, pypi)\"}");
	assert_string_equal(ctl_register(r, "run-a", "127.0.0.1", "pypi",
	    TOK_X, time_wall_ms() + 60000, ""), "{\"ok\":false,\"error\":"
	    "\"run \\\"run-a\\\" already registered\"}");
	assert_non_null(strstr(ctl_register(r, "run-c", "127.0.0.1", "pypi",
	    TOK_X, time_wall_ms() - 1, ""), "\"ok\":false"));
	log = rm_finish(r);
	assert_non_null(strstr(log, "\"run\":\"run-a\",\"method\":\"CONNECT\","
	    "\"host\":\"echo.cordon-test.net\""));
	assert_non_null(strstr(log, "\"reason\":\"not-on-policy npm\","
	    "\"policy\":\"npm\""));
	assert_non_null(strstr(log, "\"run\":null"));
	assert_non_null(strstr(log, "\"policy\":null"));
	free(log);
}

/* Every 407 reason, from both source addresses (debug logging on: the
 * token must not show up there either). */
static void
test_run_credentials(void **state)
{
	static const char *const extra[] = { "--log-level", "debug", NULL };
	const char *A = auth_line("run-a", TOK_A), *B = auth_line("run-b",
	    TOK_B);
	const char *echo = px_auth("echo.cordon-test.net", fx_echo_port());
	struct rm *r = &R;
	char bad[512];
	cJSON *j;
	int fd = -1;

	(void)state;
	rm_start(r, extra);
	/* Nothing registered: no live run, with or without a header. */
	refused(r, "127.0.0.1", "", echo, 407, "no-live-run");
	refused(r, "127.0.0.1", A, echo, 407, "credential-unknown");
	reg_ok(r, "run-a", "127.0.0.1", "pypi", TOK_A, "");
	/* A live run here now: a missing header is just missing; from
	 * 127.0.0.2 there is still no live run. */
	refused(r, "127.0.0.1", "", echo, 407, "credential-missing");
	refused(r, "127.0.0.2", "", echo, 407, "no-live-run");
	refused(r, "127.0.0.1", "Proxy-Authorization: Basic !!!!\r\n", echo,
	    407, "credential-malformed");
	refused(r, "127.0.0.1", "Proxy-Authorization: Bearer abc\r\n", echo,
	    407, "credential-malformed");
	snprintf(bad, sizeof(bad), "%s%s", A, A);	/* two headers */
	refused(r, "127.0.0.1", bad, echo, 407, "credential-malformed");
	/* A made-up token and an unknown run look the same. */
	refused(r, "127.0.0.1", auth_line("run-a", TOK_X), echo, 407,
	    "credential-unknown");
	refused(r, "127.0.0.1", auth_line("run-z", TOK_A), echo, 407,
	    "credential-unknown");
	echo_ok(r, "127.0.0.1", A);
	/* Run B lives at 127.0.0.2: its credential works only from there,
	 * and A's does not work from there. */
	reg_ok(r, "run-b", "127.0.0.2", "pypi", TOK_B, "");
	refused(r, "127.0.0.1", B, echo, 407, "credential-wrong-source");
	refused(r, "127.0.0.2", A, echo, 407, "credential-wrong-source");
	echo_ok(r, "127.0.0.2", B);
	/* After unregister: unknown, and no live run at 127.0.0.1. */
	j = ctl_report(r, "unregister", "run-a");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "ok")));
	cJSON_Delete(j);
	refused(r, "127.0.0.1", A, echo, 407, "credential-unknown");
	refused(r, "127.0.0.1", "", echo, 407, "no-live-run");
	j = ctl_report(r, "unregister", "run-a");
	assert_string_equal(cJSON_GetObjectItem(j, "error")->valuestring,
	    "unknown run");
	cJSON_Delete(j);
	/* A deadline: the open tunnel is closed when it passes, the
	 * credential refused as expired, the report still there. */
	assert_string_equal(ctl_register(r, "run-c", "127.0.0.1", "pypi",
	    TOK_X, time_wall_ms() + 1500, ""), "{\"ok\":true}");
	assert_int_equal(rconnect(r, "127.0.0.1", auth_line("run-c", TOK_X),
	    echo, &fd), 200);
	assert_true(closed_within(fd, 4000));
	close(fd);
	refused(r, "127.0.0.1", auth_line("run-c", TOK_X), echo, 407,
	    "credential-expired");
	j = ctl_report(r, "unregister", "run-c");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "ok")));
	assert_int_equal(cJSON_GetObjectItem(j, "allowed")->valueint, 1);
	cJSON_Delete(j);
	free(rm_finish(r));
}

/* max_conns for one run does not touch another; a byte limit closes a
 * tunnel and refuses new requests. */
static void
test_run_limits(void **state)
{
	const char *A = auth_line("run-a", TOK_A), *B = auth_line("run-b",
	    TOK_B), *C = auth_line("run-c", TOK_X);
	const char *echo = px_auth("echo.cordon-test.net", fx_echo_port());
	static char buf[4096];
	struct rm *r = &R;
	cJSON *j, *e;
	int fd = -1, fd2 = -1, st = 0;

	(void)state;
	rm_start(r, NULL);
	reg_ok(r, "run-a", "127.0.0.1", "pypi", TOK_A, ",\"max_conns\":1");
	reg_ok(r, "run-b", "127.0.0.1", "pypi", TOK_B, "");
	assert_int_equal(rconnect(r, "127.0.0.1", A, echo, &fd), 200);
	refused(r, "127.0.0.1", A, echo, 429, "run-connection-limit");
	echo_ok(r, "127.0.0.1", B);
	assert_int_equal(rconnect(r, "127.0.0.1", B, echo, &fd2), 200);
	close(fd2);
	/* Room again once the tunnel is gone (closing is asynchronous). */
	close(fd);
	for (int i = 0; i < 50; i++) {
		st = rconnect(r, "127.0.0.1", A, echo, NULL);
		if (st == 200)
			break;
		assert_int_equal(st, 429);
		sleep_ms(50);
	}
	assert_int_equal(st, 200);
	/* 1000 bytes up for run-c: the tunnel carries 600, then dies on
	 * the next 600; run-b's tunnel is not touched. */
	reg_ok(r, "run-c", "127.0.0.1", "pypi", TOK_X, ",\"bytes_up\":1000");
	assert_int_equal(rconnect(r, "127.0.0.1", B, echo, &fd2), 200);
	assert_int_equal(rconnect(r, "127.0.0.1", C, echo, &fd), 200);
	memset(buf, 'u', 600);
	assert_int_equal(cli_send_n(fd, buf, 600), 0);
	assert_int_equal(cli_read_n(fd, buf, 600), 0);
	assert_int_equal(cli_send_n(fd, buf, 600), 0);
	assert_true(closed_within(fd, 5000));
	close(fd);
	refused(r, "127.0.0.1", C, echo, 429, "run-bytes-limit");
	assert_int_equal(cli_send(fd2, "b still"), 0);
	assert_int_equal(cli_read_n(fd2, buf, 7), 0);
	assert_memory_equal(buf, "b still", 7);
	close(fd2);
	/* The report: the tunnel (closed for the limit) and the refusal. */
	j = ctl_report(r, "unregister", "run-c");
	e = cJSON_GetObjectItem(j, "egress");
	assert_int_equal(cJSON_GetArraySize(e), 2);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(e, 0),
	    "reason")->valuestring, "run-bytes-limit");
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(e, 0),
	    "bytes_up")->valuedouble, 1200);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(e, 1),
	    "reason")->valuestring, "run-bytes-limit");
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(e, 1),
	    "status")->valueint, 429);
	cJSON_Delete(j);
	free(rm_finish(r));
}

/* unregister returns exactly the run's attempts, in order, with counts
 * and bytes; report does the same without forgetting. */
static void
test_run_report(void **state)
{
	const char *A = auth_line("run-a", TOK_A), *B = auth_line("run-b",
	    TOK_B);
	const char *echo = px_auth("echo.cordon-test.net", fx_echo_port());
	struct rm *r = &R;
	char want[2048], *got;
	cJSON *j;
	int fd = -1;

	(void)state;
	rm_start(r, NULL);
	reg_ok(r, "run-a", "127.0.0.1", "pypi", TOK_A, "");
	reg_ok(r, "run-b", "127.0.0.1", "npm", TOK_B, "");
	refused(r, "127.0.0.1", A, px_auth("x.other-test.net", fx_echo_port()),
	    403, "not-on-policy pypi");
	refused(r, "127.0.0.1", A, px_auth("denied.cordon-test.net", 443), 403,
	    "not-on-policy pypi");
	echo_ok(r, "127.0.0.1", A);
	refused(r, "127.0.0.1", B, echo, 403, "not-on-policy npm");
	/* The second tunnel is still open at unregister: closed, noted. */
	assert_int_equal(rconnect(r, "127.0.0.1", A, echo, &fd), 200);
	assert_int_equal(cli_send(fd, "abc"), 0);
	assert_int_equal(cli_read_n(fd, head, 3), 0);
	/* A 407 is nobody's. */
	refused(r, "127.0.0.1", auth_line("run-a", TOK_X), echo, 407,
	    "credential-unknown");
	/* (The first tunnel's line may still be on its way.) */
	j = ctl_report(r, "report", "run-a");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "ok")));
	assert_int_equal(cJSON_GetObjectItem(j, "denied")->valueint, 2);
	cJSON_Delete(j);
	j = ctl_report(r, "unregister", "run-a");
	assert_true(closed_within(fd, 3000));
	close(fd);
	got = cJSON_PrintUnformatted(j);
	snprintf(want, sizeof(want), "{\"ok\":true,\"egress\":["
	    "{\"host\":\"x.other-test.net\",\"port\":%u,\"decision\":\"denied\","
	    "\"reason\":\"not-on-policy pypi\",\"status\":403,\"count\":1,"
	    "\"bytes_up\":0,\"bytes_down\":0,\"via\":\"connect\"},"
	    "{\"host\":\"denied.cordon-test.net\",\"port\":443,\"decision\":"
	    "\"denied\",\"reason\":\"not-on-policy pypi\",\"status\":403,"
	    "\"count\":1,\"bytes_up\":0,\"bytes_down\":0,\"via\":\"connect\"},"
	    "{\"host\":\"echo.cordon-test.net\",\"port\":%u,\"decision\":"
	    "\"allowed\",\"reason\":\"allowed-by-entry\",\"status\":200,"
	    "\"count\":2,\"bytes_up\":13,\"bytes_down\":13,\"via\":\"connect\"}],"
	    "\"allowed\":2,\"denied\":2,\"errors\":0}", fx_echo_port(),
	    fx_echo_port());
	assert_string_equal(got, want);
	free(got);
	cJSON_Delete(j);
	j = ctl_report(r, "report", "run-a");
	assert_string_equal(cJSON_GetObjectItem(j, "error")->valuestring,
	    "unknown run");
	cJSON_Delete(j);
	/* B's report: its own attempt only. */
	j = ctl_report(r, "unregister", "run-b");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "egress")),
	    1);
	assert_int_equal(cJSON_GetObjectItem(j, "denied")->valueint, 1);
	cJSON_Delete(j);
	free(rm_finish(r));
}

/* The SNI check in a run: a ClientHello naming another host than the
 * CONNECT host closes the tunnel, and the run's report shows it as denied
 * with sni-mismatch (status 200: the client had its 200), beside the
 * tunnel that passed. The same through the buffered relay (a run with a
 * byte limit is never spliced). */
static void
test_run_sni(void **state)
{
	static const char *const names[][1] = { { "pypi.org" },
	    { "echo.cordon-test.net" } };
	static uint8_t hello[HELLO_CAP], back[HELLO_CAP];
	const char *A = auth_line("run-a", TOK_A), *B = auth_line("run-b",
	    TOK_B);
	const char *echo = px_auth("echo.cordon-test.net", fx_echo_port());
	struct rm *r = &R;
	char want[2048], *got;
	size_t bad, good;
	cJSON *j;
	int fd = -1;

	(void)state;
	rm_tls = true;
	rm_start(r, NULL);
	rm_tls = false;
	reg_ok(r, "run-a", "127.0.0.1", "tls", TOK_A, "");
	reg_ok(r, "run-b", "127.0.0.1", "tls", TOK_B,
	    ",\"bytes_up\":1000000");
	for (int run = 0; run < 2; run++) {
		const char *hdr = run == 0 ? A : B;

		bad = hello_with_names("hello-python-pypi.bin", names[0], 1,
		    hello, sizeof(hello));
		assert_int_equal(rconnect(r, "127.0.0.1", hdr, echo, &fd), 200);
		assert_int_equal(cli_send_n(fd, hello, bad), 0);
		/* The alert, then the close; nothing echoed. */
		assert_int_equal(cli_read_n(fd, back, 7), 0);
		assert_memory_equal(back, "\x15\x03\x03\x00\x02\x02\x31", 7);
		assert_true(closed_within(fd, 3000));
		close(fd);
		good = hello_with_names("hello-python-pypi.bin", names[1], 1,
		    hello, sizeof(hello));
		assert_int_equal(rconnect(r, "127.0.0.1", hdr, echo, &fd), 200);
		assert_int_equal(cli_send_n(fd, hello, good), 0);
		assert_int_equal(cli_read_n(fd, back, good), 0);
		assert_memory_equal(back, hello, good);
		close(fd);
	}
	sleep_ms(200);	/* the passed tunnels' lines */
	for (int run = 0; run < 2; run++) {
		j = ctl_report(r, "unregister", run == 0 ? "run-a" : "run-b");
		got = cJSON_PrintUnformatted(j);
		snprintf(want, sizeof(want), "{\"ok\":true,\"egress\":["
		    "{\"host\":\"echo.cordon-test.net\",\"port\":%u,"
		    "\"decision\":\"denied\",\"reason\":\"sni-mismatch\","
		    "\"status\":200,\"count\":1,\"bytes_up\":0,"
		    "\"bytes_down\":0,\"via\":\"connect\"},"
		    "{\"host\":\"echo.cordon-test.net\",\"port\":%u,"
		    "\"decision\":\"allowed\",\"reason\":"
		    "\"allowed-by-entry\",\"status\":200,\"count\":1,"
		    "\"bytes_up\":%zu,\"bytes_down\":%zu,"
		    "\"via\":\"connect\"}],"
		    "\"allowed\":1,\"denied\":1,\"errors\":0}", fx_echo_port(),
		    fx_echo_port(), good, good);
		assert_string_equal(got, want);
		free(got);
		cJSON_Delete(j);
	}
	got = rm_finish(r);
	assert_non_null(strstr(got, "\"reason\":\"sni-mismatch\""));
	assert_non_null(strstr(got, "\"sni\":\"pypi.org\""));
	free(got);
}

/* Fairness before the credential: run A's sandbox (127.0.0.3) opens idle
 * connections that never send a byte, far past the proxy's connection
 * limit; it holds at most --source-max-pending of them, the rest are
 * refused at accept (503 source-pending-limit), and every fetch of run B
 * (127.0.0.4) still succeeds. The refusals, and A's own requests that are
 * refused before any credential (a bad host, TRACE, no credential), show
 * in A's report: the source address names the run. */
static void
test_run_fairness(void **state)
{
	static const char *const extra[] = { "--max-connections", "40",
	    "--source-max-pending", "8", NULL };
	const char *A = auth_line("run-a", TOK_A), *B = auth_line("run-b",
	    TOK_B);
	struct rm *r = &R;
	int idle[60], n503 = 0, st;
	char req[512], *log;
	cJSON *j, *e;
	bool pend = false, bad = false, trace = false, cred = false;

	(void)state;
	rm_start(r, extra);
	reg_ok(r, "run-a", "127.0.0.3", "pypi", TOK_A, "");
	reg_ok(r, "run-b", "127.0.0.4", "pypi", TOK_B, "");
	for (int i = 0; i < 60; i++)
		idle[i] = cli_from(r, "127.0.0.3");
	/* The refused ones were answered and closed at once; the others
	 * get no answer (they are waiting for a head). */
	for (int i = 0; i < 60; i++) {
		struct timeval tv = { 0, 300000 };

		setsockopt(idle[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		st = cli_read_head(idle[i], head, sizeof(head));
		if (st == 503) {
			if (!head_has(head, "X-Cordon-Error",
			    "source-pending-limit"))
				fail_msg("idle %d: %s", i, head);
			n503++;
			close(idle[i]);
			idle[i] = -1;
		} else if (st != -1) {
			fail_msg("idle %d: %d %s", i, st, head);
		}
	}
	assert_int_equal(n503, 60 - 8);
	/* B is not starved: ten fetches through its own tunnels. */
	for (int i = 0; i < 10; i++)
		echo_ok(r, "127.0.0.4", B);
	for (int i = 0; i < 60; i++)
		if (idle[i] >= 0)
			close(idle[i]);
	sleep_ms(300);
	/* A's own refusals before a credential. */
	refused(r, "127.0.0.3", "", px_auth("echo.cordon-test.net",
	    fx_echo_port()), 407, "credential-missing");
	refused(r, "127.0.0.3", A, "bad_host.example:443", 400, "bad-host");
	{
		int fd = cli_from(r, "127.0.0.3");

		snprintf(req, sizeof(req), "TRACE http://echo.cordon-test.net:"
		    "%u/ HTTP/1.1\r\nHost: echo.cordon-test.net:%u\r\n\r\n",
		    fx_http_port(), fx_http_port());
		assert_int_equal(cli_send(fd, req), 0);
		assert_int_equal(cli_read_head(fd, head, sizeof(head)), 405);
		close(fd);
	}
	sleep_ms(300);
	j = ctl_report(r, "report", "run-a");
	cJSON_ArrayForEach(e, cJSON_GetObjectItem(j, "egress")) {
		const char *why = cJSON_GetStringValue(cJSON_GetObjectItem(e,
		    "reason"));
		const char *host = cJSON_GetStringValue(cJSON_GetObjectItem(e,
		    "host"));
		if (why == NULL || host == NULL)
			continue;
		if (strcmp(why, "source-pending-limit") == 0 &&
		    strcmp(host, "-") == 0 && cJSON_GetObjectItem(e,
		    "count")->valueint == 60 - 8)
			pend = true;
		bad |= strcmp(why, "bad-host") == 0 &&
		    strcmp(host, "bad_host.example") == 0;
		trace |= strcmp(why, "method-not-allowed") == 0 &&
		    strcmp(host, "echo.cordon-test.net") == 0;
		cred |= strcmp(why, "credential-missing") == 0;
	}
	if (!pend || !bad || !trace || !cred) {
		char *t = cJSON_PrintUnformatted(j);
		fail_msg("run-a's report lacks a refusal (pending %d, bad "
		    "host %d, TRACE %d, credential %d):\n%s", pend, bad, trace,
		    cred, t);
	}
	cJSON_Delete(j);
	/* B's report holds its ten tunnels and nothing of A's. */
	j = ctl_report(r, "report", "run-b");
	assert_int_equal(cJSON_GetObjectItem(j, "allowed")->valueint, 10);
	assert_int_equal(cJSON_GetObjectItem(j, "denied")->valueint, 0);
	cJSON_Delete(j);
	log = rm_finish(r);
	assert_non_null(strstr(log, "\"run\":\"run-a\",\"method\":null,"
	    "\"host\":null"));
	free(log);
}

/* --- privilege separation: crashes --------------------------------------- */

/* The daemon's network child (the parent's only child), waiting for one
 * other than not (0: any). */
static pid_t
rm_child(const struct rm *r, pid_t not)
{
	char path[64], line[64];
	pid_t found = 0;
	FILE *f;

	for (int tries = 0; tries < 300; tries++) {
		snprintf(path, sizeof(path), "/proc/%d/task/%d/children",
		    (int)r->p.pid, (int)r->p.pid);
		found = 0;
		if ((f = fopen(path, "r")) != NULL) {
			if (fgets(line, sizeof(line), f) != NULL)
				found = (pid_t)strtol(line, NULL, 10);
			fclose(f);
		}
		if (found > 0 && found != not)
			return found;
		sleep_ms(10);
	}
	fail_msg("no network child (other than %d) after 3 s", (int)not);
	return 0;
}

/* An echo tunnel for the run, retried until it works or ms pass: the
 * time it took, in ms. */
static int64_t
echo_within(const struct rm *r, const char *src, const char *hdr, int ms)
{
	int64_t t0 = time_mono_ms();
	char buf[16];
	int fd = -1, st;

	for (;;) {
		st = rconnect(r, src, hdr, px_auth("echo.cordon-test.net",
		    fx_echo_port()), &fd);
		if (st == 200 && cli_send(fd, "0123456789") == 0 &&
		    cli_read_n(fd, buf, 10) == 0 && memcmp(buf, "0123456789",
		    10) == 0) {
			close(fd);
			return time_mono_ms() - t0;
		}
		if (fd >= 0)
			close(fd);
		fd = -1;
		if (time_mono_ms() - t0 > ms)
			fail_msg("no echo tunnel within %d ms (last %d):\n%s", ms,
			    st, head);
		sleep_ms(20);
	}
}

/* The network child is SIGKILLed during a run: its parent restarts it
 * with the run's registration, so the run's next tunnel works (within
 * 2 s of the restart) with the credential it had; its report says the
 * proxy restarted (and lacks what the dead child had noted), and so does
 * the access log. */
static void
test_run_child_killed(void **state)
{
	const char *A = auth_line("run-a", TOK_A);
	struct rm *r = &R;
	pid_t child, again;
	int64_t took;
	char *log;
	cJSON *j;

	(void)state;
	rm_start(r, NULL);
	reg_ok(r, "run-a", "127.0.0.1", "pypi", TOK_A, "");
	echo_ok(r, "127.0.0.1", A);
	child = rm_child(r, 0);
	assert_int_equal(kill(child, SIGKILL), 0);
	again = rm_child(r, child);
	took = echo_within(r, "127.0.0.1", A, 2000);
	fprintf(stderr, "network child %d killed; %d took over; the run's "
	    "tunnel worked %lld ms later\n", (int)child, (int)again,
	    (long long)took);
	j = ctl_report(r, "unregister", "run-a");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "ok")));
	assert_int_equal(cJSON_GetObjectItem(j, "proxy_restarts")->valueint, 1);
	/* The new child noted the tunnel after the restart. */
	assert_int_equal(cJSON_GetObjectItem(j, "allowed")->valueint, 1);
	cJSON_Delete(j);
	log = rm_finish(r);
	assert_non_null(strstr(log, "\"run\":\"run-a\""));
	assert_non_null(strstr(log, "\"reason\":\"proxy-restarted\""));
	free(log);
}

/* The parent itself is SIGKILLed (the child dies with it); a new one
 * started as a supervisor would, with the same --state, knows the live
 * run: its credential works again without a new registration, and its
 * report counts the restart. */
static void
test_run_parent_killed(void **state)
{
	const char *A = auth_line("run-a", TOK_A);
	char statef[300];
	const char *extra[] = { "--state", statef, NULL };
	struct rm *r = &R;
	struct stat st;
	pid_t child;
	int64_t took;
	cJSON *j;

	(void)state;
	snprintf(statef, sizeof(statef), "/tmp/cordon-pxstate-%d.state",
	    (int)getpid());
	(void)unlink(statef);
	rm_start(r, extra);
	reg_ok(r, "run-a", "127.0.0.1", "pypi", TOK_A, "");
	/* The registry on disk is root's own. */
	assert_int_equal(stat(statef, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	echo_ok(r, "127.0.0.1", A);
	child = rm_child(r, 0);
	assert_int_equal(kill(r->p.pid, SIGKILL), 0);
	assert_int_equal(px_wait_exit(&r->p, 5000), -1);
	for (int i = 0; i < 300 && kill(child, 0) == 0; i++)
		sleep_ms(10);
	assert_int_not_equal(kill(child, 0), 0);	/* died with it */
	{
		/* The supervisor's restart: the same arguments. */
		char pol[300], sock[300];
		const char *argv[] = { "--allowlist", pol, "--control", sock,
		    "--state", statef, NULL };
		snprintf(pol, sizeof(pol), "%s", r->pol);
		snprintf(sock, sizeof(sock), "%s", r->sock);
		assert_int_equal(px_start(&r->p, NULL, argv), 0);
	}
	assert_true(px_wait_err(&r->p, 0, "1 live runs restored", 3000));
	took = echo_within(r, "127.0.0.1", A, 2000);
	fprintf(stderr, "parent killed; the new one restored run-a from %s; "
	    "its tunnel worked %lld ms after the new proxy listened\n", statef,
	    (long long)took);
	j = ctl_report(r, "unregister", "run-a");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "ok")));
	assert_int_equal(cJSON_GetObjectItem(j, "proxy_restarts")->valueint, 1);
	cJSON_Delete(j);
	free(rm_finish(r));
	(void)unlink(statef);
}

/* SIGHUP: a broken policy keeps the old set; a removed policy gives
 * policy-removed to its runs while the others go on. */
static void
test_run_reload(void **state)
{
	const char *A = auth_line("run-a", TOK_A), *B = auth_line("run-b",
	    TOK_B);
	const char *web = px_auth("web.cordon-test.net", fx_echo_port());
	struct rm *r = &R;
	char text[256];
	size_t mark;
	int fd = -1;

	(void)state;
	rm_start(r, NULL);
	reg_ok(r, "run-a", "127.0.0.1", "pypi", TOK_A, "");
	reg_ok(r, "run-b", "127.0.0.1", "npm", TOK_B, "");
	assert_int_equal(rconnect(r, "127.0.0.1", B, web, &fd), 200);
	close(fd);
	/* Broken: the old set stays. */
	write_policy(r, "npm", "web.cordon-test.net\nnot a host!\n");
	mark = r->p.errlen;
	assert_int_equal(kill(r->p.pid, SIGHUP), 0);
	assert_true(px_wait_err(&r->p, mark, "keeping the previous allowlist",
	    10000));
	assert_int_equal(rconnect(r, "127.0.0.1", B, web, &fd), 200);
	close(fd);
	/* New contents are seen by live runs: pypi now has web too. */
	remove_policy(r, "npm");
	snprintf(text, sizeof(text), "echo.cordon-test.net:%u raw\n"
	    "web.cordon-test.net:%u raw\n", fx_echo_port(), fx_echo_port());
	write_policy(r, "pypi", text);
	mark = r->p.errlen;
	assert_int_equal(kill(r->p.pid, SIGHUP), 0);
	assert_true(px_wait_err(&r->p, mark, "reload ok: 1 policies: pypi",
	    10000));
	refused(r, "127.0.0.1", B, web, 403, "policy-removed");
	assert_int_equal(rconnect(r, "127.0.0.1", A, web, &fd), 200);
	close(fd);
	assert_string_equal(ctl(r, "{\"op\":\"policies\"}"),
	    "{\"ok\":true,\"policies\":[\"pypi\"]}");
	/* Registering with the removed name is refused now. */
	assert_string_equal(ctl_register(r, "run-c", "127.0.0.1", "npm",
	    TOK_X, time_wall_ms() + 60000, ""), "{\"ok\":false,\"error\":"
	    "\"unknown policy \\\"npm\\\" (policies: pypi)\"}");
	free(rm_finish(r));
}

/* The protocol on one connection: bad lines answered, the connection
 * goes on; an over-long line closes it. */
static void
test_run_control(void **state)
{
	static char big[4096];
	struct rm *r = &R;
	const char *a;
	int fd;

	(void)state;
	rm_start(r, NULL);
	fd = ctl_open(r);
	assert_int_equal(cli_send(fd, "{\"op\":\"ping\"}\n"
	    "not json\n{\"op\":\"fly\"}\n{\"op\":\"ping\",\"x\":1}\n"
	    "{\"op\":\"ping\"}\n"), 0);
	assert_string_equal(ctl_read(fd), "{\"ok\":true}");
	for (int i = 0; i < 3; i++) {
		a = ctl_read(fd);
		assert_non_null(a);
		assert_non_null(strstr(a, "{\"ok\":false,\"error\":"));
	}
	assert_string_equal(ctl_read(fd), "{\"ok\":true}");
	memset(big, ' ', sizeof(big));
	assert_int_equal(cli_send_n(fd, big, sizeof(big)), 0);
	a = ctl_read(fd);
	assert_non_null(a);
	assert_non_null(strstr(a, "line too long"));
	assert_null(ctl_read(fd));	/* closed */
	close(fd);
	ctl_ok(r, "{\"op\":\"ping\"}");
	free(rm_finish(r));
}

/* A stale socket is replaced; any other file at the path is refused. */
static void
test_run_control_path(void **state)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char dir[] = "/tmp/cordon-pxsock-XXXXXX", path[100];
	const char *extra[] = { "--control", path, NULL };
	struct px p;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/ctl.sock", dir);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	assert_int_equal(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	close(fd);	/* stale */
	assert_int_equal(px_start(&p, NULL, extra), 0);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	close(fd);
	assert_int_equal(px_stop(&p), 0);
	/* Removed on exit. */
	assert_int_equal(access(path, F_OK), -1);
	write_text(path, "not a socket\n");
	assert_int_not_equal(px_start(&p, NULL, extra), 0);
	assert_int_equal(px_wait_exit(&p, 10000), 1);
	assert_non_null(strstr(p.err, "exists and is not a socket"));
	(void)px_stop(&p);
	(void)util_rm_rf(dir);
}

/* dig from src (127.0.0.1 or .2) at the resolver on port: its output. */
static const char *
rdig(uint16_t port, const char *src, const char *name, const char *type)
{
	const char *args[] = { "-b", src, name, type, NULL };

	return dig_run(port, args);
}

/* The report entry of run report j for host with via, or NULL. */
static const cJSON *
entry_of(const cJSON *j, const char *host, const char *via)
{
	return result_egress_entry(j, host, via, NULL);
}

/* n A queries for name from 127.0.0.1 sent at once; the answers that
 * came within 3 s: how many had text in them (an EDE's EXTRA-TEXT), and
 * *answers: how many came. */
static unsigned
dns_flood(uint16_t port, const char *name, unsigned n, const char *text,
    unsigned *answers)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
	    .sin_port = htons(port) };
	struct timeval tv = { 3, 0 };
	int fd;
	unsigned got = 0;
	uint8_t q[512], a[1500];

	*answers = 0;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv,
	    sizeof(tv)), 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	for (unsigned i = 0; i < n; i++) {
		size_t len = dns_query(q, sizeof(q), (uint16_t)(7000 + i), name,
		    1, 1, 1232, 0, false);
		assert_int_equal(send(fd, q, len, 0), (ssize_t)len);
	}
	for (ssize_t k; *answers < n && (k = recv(fd, a, sizeof(a), 0)) >= 12;) {
		(*answers)++;
		if (memmem(a, (size_t)k, text, strlen(text)) != NULL)
			got++;
	}
	close(fd);
	return got;
}

/* n queries for name sent back to back from 127.0.0.1, then every
 * answer read: how many had rcode. */
static unsigned
dns_burst(uint16_t port, const char *name, unsigned n, unsigned rcode,
    unsigned *answers)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
	    .sin_port = htons(port) };
	struct timeval tv = { 1, 0 };
	int fd, big = 1 << 20;
	unsigned got = 0;
	uint8_t q[512], a[1500];
	ssize_t k;

	*answers = 0;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv,
	    sizeof(tv)), 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	/* In batches of 20, each answered before the next (a socket
	 * buffer holds a few hundred datagrams at most). */
	for (unsigned i = 0; i < n; i++) {
		size_t len = dns_query(q, sizeof(q), (uint16_t)i, name, 1, 1,
		    1232, 0, false);
		assert_int_equal(send(fd, q, len, 0), (ssize_t)len);
		if (i % 20 != 19 && i + 1 < n)
			continue;
		while (*answers <= i && (k = recv(fd, a, sizeof(a), 0)) >=
		    12) {
			(*answers)++;
			if ((a[3] & 0x0f) == rcode)
				got++;
		}
	}
	close(fd);
	return got;
}

/* The closed resolver in run mode: a query belongs to the run registered
 * at its source address, answered under that run's policy from that run's
 * own synthetic map, rate-limited per run, and every name it asked is in
 * its report (via "dns"); a source with no live run is refused. */
static void
test_run_dns(void **state)
{
	const char *extra[] = { "--dns-listen", "127.0.0.1:0", NULL };
	struct rm *r = &R;
	const char *t, *s;
	const cJSON *e;
	char a[32], b[32];
	unsigned total, limited, answers, answers400, web_a;
	uint16_t dp;
	cJSON *j;

	(void)state;
	rm_start(r, extra);
	s = strstr(r->p.err, "dns on 127.0.0.1:");
	assert_non_null(s);
	dp = (uint16_t)atoi(s + strlen("dns on 127.0.0.1:"));
	total = fx_queries(NULL);
	web_a = fx_queries_a("web.cordon-test.net");
	t = rdig(dp, "127.0.0.1", "echo.cordon-test.net", "A");
	dig_check(t, "status: REFUSED", true);
	dig_check(t, "EDE: 18 (Prohibited): (cordon: no-live-run)", true);
	assert_int_equal(fx_queries(NULL), total);
	reg_ok(r, "run-a", "127.0.0.1", "pypi", TOK_A, "");
	reg_ok(r, "run-b", "127.0.0.2", "npm", TOK_B, "");
	t = rdig(dp, "127.0.0.1", "echo.cordon-test.net", "A");
	dig_check(t, "status: NOERROR", true);
	dig_answer_a(t, "echo.cordon-test.net", 30, a, sizeof(a));
	t = rdig(dp, "127.0.0.1", "web.cordon-test.net", "A");
	dig_check(t, "status: NXDOMAIN", true);
	dig_check(t, "EDE: 15 (Blocked): (cordon: not-on-policy pypi)", true);
	t = rdig(dp, "127.0.0.2", "web.cordon-test.net", "A");
	dig_check(t, "status: NOERROR", true);
	dig_answer_a(t, "web.cordon-test.net", 30, b, sizeof(b));
	t = rdig(dp, "127.0.0.2", "echo.cordon-test.net", "A");
	dig_check(t, "status: NXDOMAIN", true);
	dig_check(t, "EDE: 15 (Blocked): (cordon: not-on-policy npm)", true);
	/* Each run its own map: both start at the block's first address. */
	assert_string_equal(a, "198.18.0.1");
	assert_string_equal(b, "198.18.0.1");
	assert_int_equal(fx_queries_a("web.cordon-test.net"), web_a + 1);
	/* Over the rate (burst 200): refused, EDE 18; run-b unaffected. */
	limited = dns_burst(dp, "x.other-test.net", 400, 5, &answers);
	answers400 = answers;
	if (limited < 100 || answers < 390)
		fail_msg("400 queries at once: %u answers, %u REFUSED", answers,
		    limited);
	print_message("400 queries in batches of 20: %u answers, %u REFUSED "
	    "dns-rate-limit\n", answers, limited);
	t = rdig(dp, "127.0.0.2", "web.cordon-test.net", "A");
	dig_check(t, "status: NOERROR", true);
	assert_int_equal(fx_queries("x.other-test.net"), 0);
	/* Lookups waiting upstream: at most 32 of one run (the stub never
	 * answers slow.cordon-test.net), the rest SERVFAIL at once; the
	 * other run is answered meanwhile. */
	sleep_ms(2100);		/* the bucket full again */
	{
		unsigned busy = dns_flood(dp, "slow.cordon-test.net", 60,
		    "cordon: resolver-busy", &answers);
		if (busy != 60 - PROXY_DNSD_RUN_PENDING_MAX || answers != 60)
			fail_msg("60 lookups at once: %u answers, %u "
			    "resolver-busy", answers, busy);
		print_message("60 lookups that never return, at once: %u "
		    "SERVFAIL resolver-busy, the other %u upstream-timeout\n",
		    busy, answers - busy);
	}
	t = rdig(dp, "127.0.0.2", "web.cordon-test.net", "A");
	dig_check(t, "status: NOERROR", true);
	/* TCP from an address with no run: closed at accept. */
	{
		struct sockaddr_in sa = { .sin_family = AF_INET,
		    .sin_port = htons(dp) };
		struct sockaddr_in me = { .sin_family = AF_INET };
		struct timeval tv = { 3, 0 };
		char c;
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		inet_pton(AF_INET, "127.0.0.3", &me.sin_addr);
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		assert_int_equal(bind(fd, (struct sockaddr *)&me, sizeof(me)),
		    0);
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		assert_int_equal(connect(fd, (struct sockaddr *)&sa,
		    sizeof(sa)), 0);
		assert_true(recv(fd, &c, 1, 0) <= 0);
		close(fd);
	}
	j = ctl_report(r, "unregister", "run-a");
	e = entry_of(j, "echo.cordon-test.net", "dns");
	assert_non_null(e);
	assert_string_equal(cJSON_GetObjectItem(e, "decision")->valuestring,
	    "allowed");
	assert_int_equal(cJSON_GetObjectItem(e, "port")->valueint, 53);
	e = entry_of(j, "web.cordon-test.net", "dns");
	assert_non_null(e);
	assert_string_equal(cJSON_GetObjectItem(e, "reason")->valuestring,
	    "not-on-policy pypi");
	/* The burst: one entry per name and outcome, counted. */
	e = result_egress_entry(j, "x.other-test.net", "dns",
	    "not-on-policy pypi");
	assert_non_null(e);
	assert_int_equal(cJSON_GetObjectItem(e, "count")->valueint,
	    (int)(answers400 - limited));
	e = result_egress_entry(j, "x.other-test.net", "dns", "dns-rate-limit");
	assert_non_null(e);
	assert_int_equal(cJSON_GetObjectItem(e, "count")->valueint,
	    (int)limited);
	assert_non_null(result_egress_entry(j, "slow.cordon-test.net", "dns",
	    "resolver-busy"));
	cJSON_Delete(j);
	/* Unregistered: its address has no run any more. */
	t = rdig(dp, "127.0.0.1", "echo.cordon-test.net", "A");
	dig_check(t, "status: REFUSED", true);
	j = ctl_report(r, "unregister", "run-b");
	assert_non_null(result_egress_entry(j, "web.cordon-test.net", "dns",
	    "allowed"));
	assert_non_null(result_egress_entry(j, "echo.cordon-test.net", "dns",
	    "not-on-policy npm"));
	cJSON_Delete(j);
	/* Refusals over the rate: logged once per stretch, not each. */
	{
		char *log = rm_finish(r);
		unsigned lines = 0;

		for (const char *p = log; (p = strstr(p, "\"dns-rate-limit\""))
		    != NULL; p++)
			lines++;
		if (lines == 0 || lines >= limited)
			fail_msg("%u access-log lines for %u rate-limited "
			    "queries", lines, limited);
		print_message("%u rate-limited queries, %u access-log lines\n",
		    limited, lines);
		free(log);
	}
}

/* The policy op: a live run's policy changed while a tunnel is open. The
 * tunnel the new policy denies is closed and named in the answer, the
 * next CONNECT is judged under the new policy at once, a tunnel both
 * allow stays open, and the access log says why the closed one ended. */
static void
test_run_policy_change(void **state)
{
	const char *A = auth_line("run-a", TOK_A);
	const char *echo = px_auth("echo.cordon-test.net", fx_echo_port());
	const char *web = px_auth("web.cordon-test.net", fx_echo_port());
	struct rm *r = &R;
	char want[512], buf[8], *log;
	const char *a;
	int fd = -1, fd2 = -1;

	(void)state;
	rm_start(r, NULL);
	reg_ok(r, "run-a", "127.0.0.1", "pypi", TOK_A, "");
	assert_int_equal(rconnect(r, "127.0.0.1", A, echo, &fd), 200);
	assert_int_equal(cli_send(fd, "abc"), 0);
	assert_int_equal(cli_read_n(fd, buf, 3), 0);
	refused(r, "127.0.0.1", A, web, 403, "not-on-policy pypi");

	a = ctl(r, "{\"op\":\"policy\",\"run\":\"run-a\",\"policy\":\"npm\"}");
	snprintf(want, sizeof(want), "{\"ok\":true,\"policy\":\"npm\","
	    "\"was\":\"pypi\",\"closed\":[{\"host\":"
	    "\"echo.cordon-test.net\",\"port\":%u,\"reason\":"
	    "\"not-on-policy npm\"}]}", fx_echo_port());
	assert_string_equal(a, want);
	assert_true(closed_within(fd, 3000));
	close(fd);
	/* Judged under npm from now on. */
	refused(r, "127.0.0.1", A, echo, 403, "not-on-policy npm");
	assert_int_equal(rconnect(r, "127.0.0.1", A, web, &fd2), 200);
	/* The same policy again: nothing closes. */
	a = ctl(r, "{\"op\":\"policy\",\"run\":\"run-a\",\"policy\":\"npm\"}");
	assert_string_equal(a, "{\"ok\":true,\"policy\":\"npm\",\"was\":"
	    "\"npm\",\"closed\":[]}");
	assert_int_equal(cli_send(fd2, "xyz"), 0);
	assert_int_equal(cli_read_n(fd2, buf, 3), 0);
	assert_memory_equal(buf, "xyz", 3);
	close(fd2);
	/* Refusals: nothing changes. */
	a = ctl(r, "{\"op\":\"policy\",\"run\":\"run-a\",\"policy\":\"nope\"}");
	assert_true(strncmp(a, "{\"ok\":false,\"error\":\"unknown policy "
	    "\\\"nope\\\"", 40) == 0);
	a = ctl(r, "{\"op\":\"policy\",\"run\":\"run-z\",\"policy\":\"npm\"}");
	assert_string_equal(a, "{\"ok\":false,\"error\":\"unknown run\"}");
	a = ctl(r, "{\"op\":\"policy\",\"run\":\"run-a\"}");
	assert_string_equal(a, "{\"ok\":false,\"error\":\"missing field "
	    "\\\"policy\\\"\"}");
	refused(r, "127.0.0.1", A, echo, 403, "not-on-policy npm");
	log = rm_finish(r);
	if (strstr(log, "\"decision\":\"deny\",\"reason\":\"policy-changed "
	    "not-on-policy npm\",\"policy\":\"npm\"") == NULL)
		fail_msg("no policy-changed line in the access log:\n%s", log);
	free(log);
}

static int
test_teardown(void **state)
{
	(void)state;
	px_kill_all();
	if (R.dir[0] != '\0')
		(void)util_rm_rf(R.dir);
	memset(&R, 0, sizeof(R));
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_run_policies, test_teardown),
		cmocka_unit_test_teardown(test_run_credentials, test_teardown),
		cmocka_unit_test_teardown(test_run_limits, test_teardown),
		cmocka_unit_test_teardown(test_run_report, test_teardown),
		cmocka_unit_test_teardown(test_run_policy_change,
		    test_teardown),
		cmocka_unit_test_teardown(test_run_sni, test_teardown),
		cmocka_unit_test_teardown(test_run_fairness, test_teardown),
		cmocka_unit_test_teardown(test_run_child_killed, test_teardown),
		cmocka_unit_test_teardown(test_run_parent_killed,
		    test_teardown),
		cmocka_unit_test_teardown(test_run_reload, test_teardown),
		cmocka_unit_test_teardown(test_run_control, test_teardown),
		cmocka_unit_test_teardown(test_run_control_path, test_teardown),
		cmocka_unit_test_teardown(test_run_dns, test_teardown),
	};
	const char *filter = getenv("CORDON_TEST_FILTER");

	if (filter != NULL)
		cmocka_set_test_filter(filter);
	return cmocka_run_group_tests(tests, fx_group_setup_nofile,
	    fx_group_teardown);
}
