/*
 * Integration tests of the proxy's own addresses (issue 20, item 4): the
 * built cordon-proxy, on 127.0.0.1 with the loopback fixture, against
 * addresses this test puts on a veth pair of its own (removed at the end):
 * a public address of each family and loopback aliases. Names that resolve
 * to them are refused with address-self; an address --allow-address opens
 * stays reachable though local; addresses added later are noticed on
 * SIGHUP and on the periodic refresh. Needs root (ip addr); nothing is sent
 * to these addresses except one connection the test's exception opens.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/cbuf.h"
#include "common/proc.h"
#include "common/util.h"
#include "proxy_fixture.h"

#define IFNAME "cpxself0"	/* the veth pair: IFNAME and IFNAME "p" */
#define PUB4 "192.175.48.77"	/* public class (AS112 service range) */
#define PUB6 "2001:4:112::77"	/* public class (AS112 service range) */

static char head[8192];

/* Runs `ip ARGS...`; its exit code. Its stderr is shown on failure. */
static int
ip(const char *a0, ...)
{
	const char *argv[16] = { "ip", a0 };
	struct proc_opts o = { .argv = argv, .stdout_max = 4096,
	    .stderr_max = 4096 };
	struct proc_result r;
	size_t n = 2;
	va_list ap;
	int code;

	va_start(ap, a0);
	while (n < 15 && (argv[n] = va_arg(ap, const char *)) != NULL)
		n++;
	va_end(ap);
	argv[n] = NULL;
	if (proc_run(&o, 10000, &r) != 0)
		return -1;
	code = r.exit_code;
	if (code != 0)
		fprintf(stderr, "ip %s ...: %s", a0, cbuf_data(r.err));
	proc_result_cleanup(&r);
	return code;
}

/* CONNECT through p; the status, and the reason in *why ("" if none). */
static int
try_connect(struct px *p, const char *authority, char *why, size_t whylen)
{
	const char *h;
	int st, fd;

	fd = px_connect(p, authority, &st, head, sizeof(head));
	if (fd >= 0)
		close(fd);
	why[0] = '\0';
	if ((h = strstr(head, "X-Cordon-Error: ")) != NULL)
		snprintf(why, whylen, "%.*s", (int)strcspn(h + 16, "\r\n"),
		    h + 16);
	return st;
}

static void
expect_refused(struct px *p, const char *authority, const char *reason)
{
	char why[128];
	int st = try_connect(p, authority, why, sizeof(why));

	if (st != 403 || strcmp(why, reason) != 0)
		fail_msg("CONNECT %s: want 403 %s, got %d %s", authority,
		    reason, st, why);
}

/* Polls until CONNECT host is refused with reason; the ms it took. */
static long
wait_refused(struct px *p, const char *host, const char *reason,
    long timeout_ms)
{
	int64_t t0 = time_mono_ms();
	char why[128] = "";
	int st = 0;

	while (time_mono_ms() - t0 < timeout_ms) {
		st = try_connect(p, px_auth(host, fx_echo_port()), why,
		    sizeof(why));
		if (st == 403 && strcmp(why, reason) == 0)
			return (long)(time_mono_ms() - t0);
		usleep(50000);
	}
	fail_msg("%s: still %d %s after %ld ms, want 403 %s", host, st, why,
	    timeout_ms, reason);
	return -1;
}

/* Addresses that were local when the proxy started: each refused as its
 * own, whatever the family or class; the excepted one still reached. */
static void
test_local_addresses(void **state)
{
	struct px p;
	int st, fd;
	char c = 'x';

	(void)state;
	assert_int_equal(px_start(&p, NULL, NULL), 0);
	/* The hole this closes: a public address of the host itself. */
	expect_refused(&p, px_auth("hostpub.cordon-test.net",
	    fx_echo_port()), "address-self");
	expect_refused(&p, px_auth("hostpub6.cordon-test.net",
	    fx_echo_port()), "address-self");
	expect_refused(&p, px_auth(PUB4, fx_echo_port()), "address-self");
	expect_refused(&p, px_auth("[" PUB6 "]", fx_echo_port()),
	    "address-self");
	/* A loopback alias: the proxy's own first, not merely loopback. */
	expect_refused(&p, px_auth("hostlo.cordon-test.net",
	    fx_echo_port()), "address-self");
	/* 127.0.0.2 is local now too, but --allow-address opens it. */
	fd = px_connect(&p, px_auth("echo.cordon-test.net", fx_echo_port()),
	    &st, head, sizeof(head));
	assert_int_equal(st, 200);
	assert_int_equal(cli_send_n(fd, &c, 1), 0);
	c = 0;
	assert_int_equal(cli_read_n(fd, &c, 1), 0);
	assert_int_equal(c, 'x');
	close(fd);
	assert_int_equal(px_stop(&p), 0);
	assert_null(strstr(p.err, "reading the local addresses"));
}

/* --allow-address opens a local address of the host, public or not: the
 * proxy then connects (nothing listens there, so 502), instead of 403. */
static void
test_exception_opens_local(void **state)
{
	static char arg[64];
	const char *extra[] = { "--allow-address", arg, NULL };
	struct px p;
	char why[128];
	int st;

	(void)state;
	snprintf(arg, sizeof(arg), PUB4 ":%u", fx_closed_port());
	assert_int_equal(px_start(&p, NULL, extra), 0);
	st = try_connect(&p, px_auth("hostpub.cordon-test.net",
	    fx_closed_port()), why, sizeof(why));
	if (st != 502 || strcmp(why, "upstream-refused") != 0)
		fail_msg("excepted local address: want 502 upstream-refused, "
		    "got %d %s", st, why);
	/* The exception names one port: the others stay the proxy's. */
	expect_refused(&p, px_auth("hostpub.cordon-test.net",
	    fx_echo_port()), "address-self");
	assert_int_equal(px_stop(&p), 0);
}

/* An address added after start is noticed on SIGHUP. */
static void
test_sighup_rereads(void **state)
{
	struct px p;
	size_t from;

	(void)state;
	assert_int_equal(px_start(&p, NULL, NULL), 0);
	expect_refused(&p, px_auth("hostlate.cordon-test.net",
	    fx_echo_port()), "address-loopback");
	assert_int_equal(ip("addr", "add", "127.0.0.4/32", "dev", IFNAME,
	    NULL), 0);
	/* Not before a refresh (the default tick is 30 s away). */
	expect_refused(&p, px_auth("hostlate.cordon-test.net",
	    fx_echo_port()), "address-loopback");
	from = p.errlen;
	assert_int_equal(kill(p.pid, SIGHUP), 0);
	assert_true(px_wait_err(&p, from, "local addresses: ", 5000));
	expect_refused(&p, px_auth("hostlate.cordon-test.net",
	    fx_echo_port()), "address-self");
	assert_int_equal(px_stop(&p), 0);
}

/* And without a signal, by the periodic refresh; a removed address stops
 * counting the same way. */
static void
test_periodic_refresh(void **state)
{
	static const char *const extra[] = { "--self-refresh", "0.5", NULL };
	struct px p;
	long ms;

	(void)state;
	assert_int_equal(px_start(&p, NULL, extra), 0);
	expect_refused(&p, px_auth("hosttick.cordon-test.net",
	    fx_echo_port()), "address-loopback");
	assert_int_equal(ip("addr", "add", "127.0.0.5/32", "dev", IFNAME,
	    NULL), 0);
	ms = wait_refused(&p, "hosttick.cordon-test.net", "address-self", 5000);
	fprintf(stderr, "added address refused after %ld ms (refresh every "
	    "500 ms)\n", ms);
	assert_int_equal(ip("addr", "del", "127.0.0.5/32", "dev", IFNAME,
	    NULL), 0);
	ms = wait_refused(&p, "hosttick.cordon-test.net", "address-loopback",
	    5000);
	fprintf(stderr, "removed address forgotten after %ld ms\n", ms);
	assert_int_equal(px_stop(&p), 0);
}

static void
net_down(void)
{
	(void)ip("link", "del", IFNAME, NULL);
}

static int
group_setup(void **state)
{
	(void)state;
	if (access("/sys/class/net/" IFNAME, F_OK) == 0)
		net_down();	/* left by a run that was killed */
	if (ip("link", "add", IFNAME, "type", "veth", "peer", "name",
	    IFNAME "p", NULL) != 0 ||
	    ip("addr", "add", PUB4 "/32", "dev", IFNAME, NULL) != 0 ||
	    ip("-6", "addr", "add", PUB6 "/128", "dev", IFNAME, "nodad",
	    NULL) != 0 ||
	    ip("addr", "add", "127.0.0.3/32", "dev", IFNAME, NULL) != 0 ||
	    ip("addr", "add", "127.0.0.2/32", "dev", IFNAME, NULL) != 0 ||
	    ip("link", "set", IFNAME, "up", NULL) != 0 ||
	    ip("link", "set", IFNAME "p", "up", NULL) != 0) {
		net_down();
		return -1;
	}
	return fx_start();
}

static int
group_teardown(void **state)
{
	(void)state;
	fx_stop();
	net_down();
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_local_addresses,
		    fx_test_teardown),
		cmocka_unit_test_teardown(test_exception_opens_local,
		    fx_test_teardown),
		cmocka_unit_test_teardown(test_sighup_rereads,
		    fx_test_teardown),
		cmocka_unit_test_teardown(test_periodic_refresh,
		    fx_test_teardown),
	};
	int rc = fx_need_root("proxy_self",
	    "it adds addresses to an interface of its own");

	if (rc != 0)
		return rc;
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
