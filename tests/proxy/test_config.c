/* Unit tests for cordon-proxy's command-line parsing (config.c), the
 * access-log line format (accesslog.c) and the metrics text (metrics.c):
 * pure functions, table-driven. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/cbuf.h"
#include "proxy/accesslog.h"
#include "proxy/config.h"
#include "proxy/metrics.h"

static int
parse(struct proxy_config *c, const char *const *args)
{
	char *argv[64];
	char err[256];
	int argc = 0, rc;

	argv[argc++] = (char *)"cordon-proxy";
	for (; *args != NULL; args++)
		argv[argc++] = (char *)*args;
	argv[argc] = NULL;
	proxy_config_init(c);
	rc = proxy_config_parse(c, argc, argv, err, sizeof(err));
	if (rc != 0)
		assert_true(err[0] != '\0');
	return rc;
}

static void
test_full(void **state)
{
	static const char *const args[] = {
		"--listen", "127.0.0.1:3128", "--listen", "[::1]:0",
		"--allowlist", "/etc/cordon/allow.d", "--policy", "strict",
		"--resolver", "127.0.0.1:5353", "--resolver", "10.0.0.2",
		"--resolver", "[fd00::53]:53", "--allow-address", "127.0.0.2",
		"--allow-address", "10.0.0.0/8:3128", "--access-log", "-",
		"--metrics", "127.0.0.1:9100", "--max-connections", "10",
		"--connect-timeout", "2.5", "--idle-timeout", "60",
		"--dns-timeout", "0.25", "--header-timeout", "3", "--grace",
		"1", "--max-header", "16k", "--user", "nobody", "--log-level",
		"debug", "--control", "/run/cordon/proxy.sock",
		"--run-max-conns", "8", "--run-bytes-up", "1m",
		"--run-bytes-down", "1g", "--self-refresh", "2.5",
		"--sni-timeout", "0.75", "--insecure-no-sni-check",
		"--transparent", "10.213.0.1:3129", "--dns-listen",
		"10.213.0.1:53", NULL,
	};
	struct proxy_config c;

	(void)state;
	assert_int_equal(parse(&c, args), 0);
	assert_int_equal(c.nlisten, 2);
	assert_int_equal(c.listen[0].ss.ss_family, AF_INET);
	assert_int_equal(ntohs(((struct sockaddr_in *)&c.listen[0].ss)->sin_port),
	    3128);
	assert_int_equal(c.listen[1].ss.ss_family, AF_INET6);
	assert_string_equal(c.allowlist, "/etc/cordon/allow.d");
	assert_string_equal(c.policy, "strict");
	assert_string_equal(c.resolvers,
	    "127.0.0.1:5353,10.0.0.2:53,[fd00::53]:53");
	assert_int_equal(c.nexceptions, 2);
	assert_int_equal(c.exceptions[1].port, 3128);
	assert_string_equal(c.access_log, "-");
	assert_true(c.has_metrics);
	assert_int_equal(c.max_connections, 10);
	assert_int_equal(c.connect_timeout_ms, 2500);
	assert_int_equal(c.idle_timeout_ms, 60000);
	assert_int_equal(c.dns_timeout_ms, 250);
	assert_int_equal(c.header_timeout_ms, 3000);
	assert_int_equal(c.grace_ms, 1000);
	assert_int_equal(c.self_refresh_ms, 2500);
	assert_int_equal(c.max_header, 16384);
	assert_string_equal(c.user, "nobody");
	assert_int_equal(c.log_level, 3);
	assert_string_equal(c.control, "/run/cordon/proxy.sock");
	assert_int_equal(c.run_max_conns, 8);
	assert_int_equal(c.run_bytes_up, 1024 * 1024);
	assert_int_equal(c.run_bytes_down, 1024 * 1024 * 1024);
	assert_int_equal(c.sni_timeout_ms, 750);
	assert_true(c.no_sni_check);
	assert_true(c.has_transparent);
	assert_int_equal(ntohs(((struct sockaddr_in *)&c.transparent.ss)->
	    sin_port), 3129);
	assert_true(c.has_dns_listen);
	assert_int_equal(ntohs(((struct sockaddr_in *)&c.dns_listen.ss)->
	    sin_port), 53);
	assert_int_equal(c.transparent_fd, -1);
	assert_int_equal(c.dns_udp_fd, -1);
}

static void
test_defaults(void **state)
{
	static const char *const args[] = { "--listen", "127.0.0.1:0",
	    "--allowlist", "a.list", "--check", NULL };
	struct proxy_config c;

	(void)state;
	assert_int_equal(parse(&c, args), 0);
	assert_true(c.check);
	assert_string_equal(c.policy, "default");
	assert_string_equal(c.resolvers, "");
	assert_null(c.access_log);
	assert_false(c.has_metrics);
	assert_true(c.max_connections > 0);
	assert_true(c.dns_timeout_ms > 0 && c.connect_timeout_ms > 0);
	assert_int_equal(c.self_refresh_ms, 30000);
	/* Standalone mode; run limits: 32 connections, bytes unlimited. */
	assert_null(c.control);
	assert_int_equal(c.run_max_conns, 32);
	assert_int_equal(c.run_bytes_up, 0);
	assert_int_equal(c.run_bytes_down, 0);
	/* The SNI check is on, 5 s for a started ClientHello. */
	assert_false(c.no_sni_check);
	assert_int_equal(c.sni_timeout_ms, 5000);
	/* Neither the transparent listener nor the resolver. */
	assert_false(c.has_transparent);
	assert_false(c.has_dns_listen);
}

static void
test_errors(void **state)
{
	static const char *const bad[][5] = {
		{ "--allowlist", "a", NULL },			/* no listen */
		{ "--listen", "127.0.0.1:1", NULL },		/* no list */
		{ "--listen", "localhost:80", "--allowlist", "a" },
		{ "--listen", "127.0.0.1", "--allowlist", "a" },
		{ "--listen", "127.0.0.1:65536", "--allowlist", "a" },
		{ "--listen", "::1:80", "--allowlist", "a" },
		{ "--listen", "[::1]80", "--allowlist", "a" },
		{ "--resolver", "dns.google", NULL },
		{ "--resolver", "1.1.1.1:0", NULL },
		{ "--allow-address", "10.0.0.1/8", NULL },
		{ "--allow-address", "example.com", NULL },
		{ "--metrics", "9100", NULL },
		{ "--max-connections", "0", NULL },
		{ "--max-connections", "-5", NULL },
		{ "--connect-timeout", "0", NULL },
		{ "--connect-timeout", "1.2345", NULL },
		{ "--connect-timeout", "5s", NULL },
		{ "--idle-timeout", "", NULL },
		{ "--dns-timeout", "-1", NULL },
		{ "--max-header", "10", NULL },
		{ "--log-level", "loud", NULL },
		{ "--control", "", NULL },
		{ "--control", "/tmp/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
		    NULL },
		{ "--run-max-conns", "0", NULL },
		{ "--run-max-conns", "65536", NULL },
		{ "--run-bytes-up", "-1", NULL },
		{ "--run-bytes-down", "lots", NULL },
		{ "--self-refresh", "0", NULL },
		{ "--self-refresh", "never", NULL },
		{ "--sni-timeout", "0", NULL },
		{ "--sni-timeout", "forever", NULL },
		{ "--no-sni-check", NULL },	/* only the insecure- name */
		{ "--insecure-no-sni-check", "yes", NULL },
		{ "--transparent", "3129", NULL },
		{ "--transparent", "example.com:3129", NULL },
		{ "--dns-listen", "10.0.0.1", NULL },
		{ "--dns-listen", "10.0.0.1:65536", NULL },
		{ "--bogus", NULL },
		{ "--listen", NULL },
	};
	struct proxy_config c;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *args[8];
		size_t n = 0;

		for (size_t j = 0; j < 5 && bad[i][j] != NULL; j++)
			args[n++] = bad[i][j];
		if (i >= 7) {	/* add the required options */
			args[n++] = "--listen";
			args[n++] = "127.0.0.1:0";
			args[n++] = "--allowlist";
			args[n++] = "x";
		}
		args[n] = NULL;
		if (parse(&c, args) != -EINVAL)
			fail_msg("row %zu (%s %s) accepted", i, bad[i][0],
			    bad[i][1] != NULL ? bad[i][1] : "");
	}
}

static void
test_seconds(void **state)
{
	static const struct { const char *s; int rc, ms; } rows[] = {
		{ "1", 0, 1000 }, { "0.5", 0, 500 }, { "0.001", 0, 1 },
		{ "10.25", 0, 10250 }, { "86400", 0, 86400000 },
		{ "0", -ERANGE, 0 }, { "0.000", -ERANGE, 0 },
		{ "86401", -ERANGE, 0 }, { "1.", -EINVAL, 0 },
		{ ".5", -EINVAL, 0 }, { "1.0001", -EINVAL, 0 },
		{ "1e3", -EINVAL, 0 }, { " 1", -EINVAL, 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int ms = -1, rc = proxy_config_parse_seconds(rows[i].s, &ms);
		if (rc != rows[i].rc || (rc == 0 && ms != rows[i].ms))
			fail_msg("'%s': rc %d ms %d", rows[i].s, rc, ms);
	}
}

static void
test_accesslog_format(void **state)
{
	struct accesslog_entry e = {
		.time_ms = 1796000000123LL, .client = "127.0.0.1:5555",
		.method = "CONNECT", .host = "a.example\"\n\x80", .port = 443,
		.decision = "deny", .reason = "no-match", .policy = "default",
		.address = NULL, .status = 403, .bytes_up = 1, .bytes_down = 2,
		.duration_ms = 3, .dns_ms = -1, .connect_ms = -1,
		.sni = "Evil.example\x01",
	};
	char buf[1024], tiny[32];
	int n;

	(void)state;
	n = proxy_accesslog_format(&e, buf, sizeof(buf));
	assert_true(n > 0);
	assert_int_equal((size_t)n, strlen(buf));
	assert_non_null(strstr(buf, "\"host\":\"a.example\\\"\\u000a\\u0080\""));
	assert_non_null(strstr(buf, "\"address\":null"));
	assert_non_null(strstr(buf, "\"status\":403,\"bytes_up\":1,"
	    "\"bytes_down\":2,\"duration_ms\":3,\"dns_ms\":null,"
	    "\"connect_ms\":null,\"sni\":\"Evil.example\\u0001\"}\n"));
	assert_int_equal(strncmp(buf, "{\"time\":\"", 9), 0);
	assert_int_equal(proxy_accesslog_format(&e, tiny, sizeof(tiny)),
	    -ENOSPC);
	/* No ClientHello name: null. */
	e.sni = NULL;
	assert_true(proxy_accesslog_format(&e, buf, sizeof(buf)) > 0);
	assert_non_null(strstr(buf, "\"sni\":null}\n"));
}

static void
test_metrics_render(void **state)
{
	struct proxy_metrics *m;
	struct cbuf *out = cbuf_new(1 << 20);
	const char *t;

	(void)state;
	assert_int_equal(proxy_metrics_new(&m), 0);
	proxy_metrics_request(m, "allow", "allowed-by-entry");
	proxy_metrics_request(m, "allow", "allowed-by-entry");
	proxy_metrics_request(m, "deny", "address-metadata");
	proxy_metrics_tunnels_add(m, 2);
	proxy_metrics_tunnels_add(m, -1);
	proxy_metrics_bytes_add(m, 10, 20);
	proxy_metrics_dns_observe(m, 3);
	proxy_metrics_dns_observe(m, 20000);
	proxy_metrics_connect_observe(m, 0);
	/* A flood of distinct reasons is capped, never grows memory. */
	for (int i = 0; i < 200; i++) {
		char r[32];
		snprintf(r, sizeof(r), "reason-%d", i);
		proxy_metrics_request(m, "deny", r);
	}
	assert_int_equal(proxy_metrics_render(m, out), 0);
	t = cbuf_data(out);
	assert_non_null(strstr(t, "cordon_proxy_requests_total{decision="
	    "\"allow\",reason=\"allowed-by-entry\"} 2\n"));
	assert_non_null(strstr(t, "reason=\"address-metadata\"} 1\n"));
	assert_non_null(strstr(t, "cordon_proxy_requests_total{decision="
	    "\"other\",reason=\"other\"} "));
	assert_non_null(strstr(t, "cordon_proxy_tunnels 1\n"));
	assert_non_null(strstr(t, "cordon_proxy_bytes_total{direction=\"up\"} "
	    "10\n"));
	assert_non_null(strstr(t, "cordon_proxy_dns_seconds_bucket{le=\"0.005\"}"
	    " 1\n"));
	assert_non_null(strstr(t, "cordon_proxy_dns_seconds_bucket{le=\"10\"}"
	    " 1\n"));
	assert_non_null(strstr(t, "cordon_proxy_dns_seconds_bucket{le=\"+Inf\"}"
	    " 2\n"));
	assert_non_null(strstr(t, "cordon_proxy_connect_seconds_count 1\n"));
	cbuf_free(out);
	proxy_metrics_free(m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_seconds),
		cmocka_unit_test(test_accesslog_format),
		cmocka_unit_test(test_metrics_render),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
