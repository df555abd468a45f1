/*
 * The closed resolver's pure parts checked by an independent decoder: the
 * test serves DNS on 127.0.0.1 (UDP and TCP, one port) with
 * proxy_dnsmsg_parse, proxy_dnsresolve_decide and proxy_dnsmsg_answer, and
 * BIND's dig (bind9-dnsutils, installed by scripts/setup) asks it and
 * prints what it read: rcodes, flags, EDE codes and EXTRA-TEXT, answers,
 * truncation and dig's retry over TCP, BADVERS, FORMERR, NOTIMP.
 */
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
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proxy/dnsmsg.h"
#include "proxy/dnsresolve.h"

extern char **environ;

#define DEADLINE_MS	20000

struct srv {
	int udp, lst, conn;
	uint16_t port;
	struct proxy_dnsmsg_tcp tcp;
	struct proxy_synth *synth;
	unsigned udp_queries, tcp_queries;
};

static struct srv srv;
static uint8_t out[2 + 65536];

static bool
policy(const char *name, void *arg, char *why, size_t len)
{
	(void)arg;
	if (strcmp(name, "allowed.example.com") == 0 ||
	    strcmp(name, "gone.example.com") == 0 ||
	    strcmp(name, "many.example.com") == 0)
		return true;
	snprintf(why, len, "not-on-policy");
	return false;
}

/* The upstream of the test, by name. */
static enum proxy_dnsresolve_upstream
upstream(const char *name)
{
	return strcmp(name, "gone.example.com") == 0 ?
	    DNSRESOLVE_UP_NXDOMAIN : DNSRESOLVE_UP_ADDRESS;
}

/* The answer to one message into out; 0 bytes: send nothing. */
static size_t
serve(const uint8_t *msg, size_t len, enum proxy_dnsmsg_transport t)
{
	struct proxy_dnsmsg_query q;
	struct proxy_dnsresolve_out o;
	struct proxy_dnsresolve_in in = { .q = &q, .policy = "pol-a",
	    .allowed = policy, .synth = srv.synth };
	size_t olen = 0;

	(void)proxy_dnsmsg_parse(msg, len, &q);
	switch (q.status) {
	case DNSMSG_DROP:
		return 0;
	case DNSMSG_FORMERR:
	case DNSMSG_NOTIMP:
		assert_int_equal(proxy_dnsmsg_reject(msg, len,
		    q.status == DNSMSG_FORMERR ? PROXY_DNS_RCODE_FORMERR :
		    PROXY_DNS_RCODE_NOTIMP, t, out, sizeof(out), &olen), 0);
		return olen;
	default:
		break;
	}
	if (strcmp(q.name, "many.example.com") == 0 && q.qtype == 1) {
		/* 40 records: 669 bytes, over 512. */
		struct in_addr as[40];
		struct proxy_dnsmsg_reply r = { .ede = -1, .ttl = 30,
		    .a = as, .na = 40 };

		for (uint32_t i = 0; i < 40; i++)
			as[i].s_addr = htonl(0xc6120000u + 100 + i);
		assert_int_equal(proxy_dnsmsg_answer(&q, &r, t, out,
		    sizeof(out), &olen), 0);
		return olen;
	}
	assert_int_equal(proxy_dnsresolve_decide(&in, &o), 0);
	if (o.action == DNSRESOLVE_LOOKUP) {
		in.upstream = upstream(q.name);
		assert_int_equal(proxy_dnsresolve_decide(&in, &o), 0);
	}
	assert_int_equal(o.action, DNSRESOLVE_ANSWER);
	assert_int_equal(proxy_dnsmsg_answer(&q, &o.reply, t, out,
	    sizeof(out), &olen), 0);
	return olen;
}

static void
srv_udp(void)
{
	uint8_t buf[65536];
	struct sockaddr_in from;
	socklen_t flen = sizeof(from);
	ssize_t n = recvfrom(srv.udp, buf, sizeof(buf), 0,
	    (struct sockaddr *)&from, &flen);
	size_t olen;

	if (n < 0)
		return;
	srv.udp_queries++;
	if ((olen = serve(buf, (size_t)n, DNSMSG_UDP)) > 0)
		assert_int_equal(sendto(srv.udp, out, olen, 0,
		    (struct sockaddr *)&from, flen), (ssize_t)olen);
}

static void
srv_tcp(void)
{
	uint8_t buf[4096];
	ssize_t n = read(srv.conn, buf, sizeof(buf));
	size_t off = 0;

	if (n <= 0) {
		close(srv.conn);
		srv.conn = -1;
		return;
	}
	while (off < (size_t)n) {
		const uint8_t *msg;
		size_t taken, mlen, olen;
		int rc = proxy_dnsmsg_tcp_feed(&srv.tcp, buf + off,
		    (size_t)n - off, &taken, &msg, &mlen);

		assert_true(rc >= 0);
		off += taken;
		if (rc == 1) {
			srv.tcp_queries++;
			if ((olen = serve(msg, mlen, DNSMSG_TCP)) > 0)
				assert_int_equal(write(srv.conn, out, olen),
				    (ssize_t)olen);
		}
	}
}

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Runs dig with args (a NULL-terminated list after the server and port),
 * serving it until it exits; returns what it printed (static). */
static const char *
dig(const char *const *args)
{
	static char text[65536];
	char port[16], *argv[32];
	posix_spawn_file_actions_t fa;
	int p[2], status, argc = 0;
	size_t len = 0;
	pid_t pid;
	bool eof = false, reaped = false;
	int64_t deadline = now_ms() + DEADLINE_MS;

	snprintf(port, sizeof(port), "%u", srv.port);
	argv[argc++] = (char *)"dig";
	argv[argc++] = (char *)"@127.0.0.1";
	argv[argc++] = (char *)"-p";
	argv[argc++] = port;
	argv[argc++] = (char *)"+tries=1";
	argv[argc++] = (char *)"+time=5";
	for (const char *const *a = args; *a != NULL; a++)
		argv[argc++] = (char *)*a;
	argv[argc] = NULL;
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_adddup2(&fa, p[1], 2);
	if (posix_spawnp(&pid, "dig", &fa, NULL, argv, environ) != 0)
		fail_msg("cannot run dig: install bind9-dnsutils "
		    "(scripts/setup does)");
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	while (!eof || !reaped) {
		struct pollfd fds[4] = {
			{ .fd = p[0], .events = POLLIN },
			{ .fd = srv.udp, .events = POLLIN },
			{ .fd = srv.lst, .events = POLLIN },
			{ .fd = srv.conn, .events = POLLIN },
		};
		int64_t left = deadline - now_ms();

		if (left <= 0) {
			kill(pid, SIGKILL);
			(void)waitpid(pid, &status, 0);
			fail_msg("dig did not finish in %d ms", DEADLINE_MS);
		}
		if (eof && !reaped) {
			assert_int_equal(waitpid(pid, &status, 0), pid);
			reaped = true;
			continue;
		}
		if (poll(fds, 4, (int)(left < 100 ? left : 100)) < 0)
			continue;
		if (fds[0].revents & (POLLIN | POLLHUP)) {
			ssize_t n = read(p[0], text + len,
			    sizeof(text) - 1 - len);

			if (n <= 0)
				eof = true;
			else
				len += (size_t)n;
		}
		if (fds[1].revents & POLLIN)
			srv_udp();
		if ((fds[2].revents & POLLIN) && srv.conn < 0) {
			srv.conn = accept4(srv.lst, NULL, NULL, SOCK_CLOEXEC);
			proxy_dnsmsg_tcp_init(&srv.tcp);
		}
		if (srv.conn >= 0 && (fds[3].revents & (POLLIN | POLLHUP)))
			srv_tcp();
	}
	close(p[0]);
	text[len] = '\0';
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("dig exited %d:\n%s", status, text);
	return text;
}

/* Whether dig printed want (or must not have). */
static void
check(const char *text, const char *want, bool present)
{
	bool found = strstr(text, want) != NULL;

	if (found != present)
		fail_msg("dig's output %s \"%s\":\n%.*s", present ? "lacks" :
		    "has", want, (int)strlen(text), text);
}

static void
expect(const char *text, const char *want)
{
	check(text, want, true);
}

static void
expect_not(const char *text, const char *want)
{
	check(text, want, false);
}

static int
setup(void **state)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t slen = sizeof(sa);
	int one = 1;

	(void)state;
	memset(&srv, 0, sizeof(srv));
	srv.conn = -1;
	assert_int_equal(proxy_synth_new(16, &srv.synth), 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	/* One port for both: UDP picks it, TCP takes the same (retried
	 * when that one is taken for TCP). */
	for (int tries = 0; tries < 20; tries++) {
		srv.udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		srv.lst = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		assert_true(srv.udp >= 0 && srv.lst >= 0);
		setsockopt(srv.lst, SOL_SOCKET, SO_REUSEADDR, &one,
		    sizeof(one));
		sa.sin_port = 0;
		assert_int_equal(bind(srv.udp, (struct sockaddr *)&sa,
		    sizeof(sa)), 0);
		assert_int_equal(getsockname(srv.udp, (struct sockaddr *)&sa,
		    &slen), 0);
		if (bind(srv.lst, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
		    listen(srv.lst, 4) == 0) {
			srv.port = ntohs(sa.sin_port);
			return 0;
		}
		close(srv.udp);
		close(srv.lst);
	}
	fail_msg("no port free for both UDP and TCP on 127.0.0.1");
	return -1;
}

static int
teardown(void **state)
{
	(void)state;
	close(srv.udp);
	close(srv.lst);
	if (srv.conn >= 0)
		close(srv.conn);
	proxy_synth_free(srv.synth);
	return 0;
}

static void
test_blocked(void **state)
{
	const char *t;

	(void)state;
	t = dig((const char *const[]){ "evil.example.com", "A", NULL });
	expect(t, "status: NXDOMAIN");
	expect(t, "flags: qr rd ra;");
	expect(t, "EDE: 15 (Blocked): (cordon: not-on-policy pol-a)");
	expect(t, "udp: 1232");
	/* Over TCP, the same. */
	t = dig((const char *const[]){ "+tcp", "evil.example.com", "AAAA",
	    NULL });
	expect(t, "status: NXDOMAIN");
	expect(t, "EDE: 15 (Blocked): (cordon: not-on-policy pol-a)");
	/* Without EDNS: no OPT, no EDE. */
	t = dig((const char *const[]){ "+noedns", "evil.example.com", NULL });
	expect(t, "status: NXDOMAIN");
	expect_not(t, "OPT PSEUDOSECTION");
	expect_not(t, "EDE");
	t = dig((const char *const[]){ "localhost", NULL });
	expect(t, "status: NXDOMAIN");
	expect(t, "EDE: 15 (Blocked): (cordon: internal-name pol-a)");
}

static void
test_allowed(void **state)
{
	const char *t;

	(void)state;
	t = dig((const char *const[]){ "allowed.example.com", "A", NULL });
	expect(t, "status: NOERROR");
	expect(t, "ANSWER: 1,");
	expect(t, "allowed.example.com.\t30\tIN\tA\t198.18.0.1");
	expect_not(t, " aa");
	/* The case asked is the case echoed; the same address. */
	t = dig((const char *const[]){ "+dnssec", "AlLoWeD.ExAmPlE.CoM",
	    NULL });
	expect(t, "AlLoWeD.ExAmPlE.CoM.\t30\tIN\tA\t198.18.0.1");
	expect(t, "flags: do; udp: 1232");
	t = dig((const char *const[]){ "allowed.example.com", "AAAA", NULL });
	expect(t, "status: NOERROR");
	expect(t, "ANSWER: 0,");
	t = dig((const char *const[]){ "gone.example.com", NULL });
	expect(t, "status: NXDOMAIN");
	expect_not(t, "EDE");
}

static void
test_refusals(void **state)
{
	const char *t;

	(void)state;
	t = dig((const char *const[]){ "allowed.example.com", "ANY", NULL });
	expect(t, "status: NOTIMP");
	expect(t, "EDE: 21 (Not Supported): (cordon: qtype-not-supported)");
	t = dig((const char *const[]){ "version.bind", "CH", "TXT", NULL });
	expect(t, "status: REFUSED");
	expect(t, "EDE: 21 (Not Supported): (cordon: class-not-supported)");
	t = dig((const char *const[]){ "+edns=1", "+noednsnegotiation",
	    "allowed.example.com", NULL });
	expect(t, "status: BADVERS");
	expect(t, "EDNS: version: 0");
	/* No question: FORMERR, header only. */
	t = dig((const char *const[]){ "+header-only", "allowed.example.com",
	    NULL });
	expect(t, "status: FORMERR");
	expect(t, "QUERY: 0, ANSWER: 0");
	t = dig((const char *const[]){ "+opcode=status", "allowed.example.com",
	    NULL });
	expect(t, "opcode: STATUS, status: NOTIMP");
}

static void
test_truncated(void **state)
{
	const char *t;
	unsigned tcp;

	(void)state;
	/* 669 bytes over UDP without EDNS: TC and no records... */
	t = dig((const char *const[]){ "+noedns", "+ignore", "+notcp",
	    "many.example.com", NULL });
	expect(t, "flags: qr tc rd ra;");
	expect(t, "ANSWER: 0,");
	/* ...so dig asks again over TCP and gets all 40. */
	tcp = srv.tcp_queries;
	t = dig((const char *const[]){ "+noedns", "many.example.com", NULL });
	expect(t, "Truncated, retrying in TCP mode");
	expect(t, "ANSWER: 40,");
	expect(t, "many.example.com.\t30\tIN\tA\t198.18.0.139");
	assert_int_equal(srv.tcp_queries, tcp + 1);
	/* With EDNS the 1232 limit holds them: no TC. */
	t = dig((const char *const[]){ "+notcp", "many.example.com", NULL });
	expect(t, "ANSWER: 40,");
	expect_not(t, " tc");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_blocked),
		cmocka_unit_test(test_allowed),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_truncated),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
