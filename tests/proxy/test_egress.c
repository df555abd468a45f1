/* Unit tests for the per-run egress report (proxy/egress.h). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/egress.h"

#define ALLOW	PROXY_EGRESS_ALLOWED
#define DENY	PROXY_EGRESS_DENIED
#define ERROR	PROXY_EGRESS_ERROR

/* The report as one line of JSON (without the newline); caller frees. */
static char *
egress_text(const struct proxy_egress *e)
{
	cJSON *o = proxy_egress_to_json(e);
	char *s;

	assert_non_null(o);
	s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	assert_non_null(s);
	return s;
}

/* The access log's words map to the report's decisions; anything but
 * "allow" and "deny" is an error; a decision out of range is refused. */
static void
test_egress_decision_of(void **state)
{
	struct proxy_egress *e = proxy_egress_new(4);

	(void)state;
	assert_int_equal(proxy_egress_decision_of("allow"), ALLOW);
	assert_int_equal(proxy_egress_decision_of("deny"), DENY);
	assert_int_equal(proxy_egress_decision_of("error"), ERROR);
	assert_int_equal(proxy_egress_decision_of(NULL), ERROR);
	assert_int_equal(proxy_egress_decision_of("allowed"), ERROR);
	assert_int_equal(proxy_egress_note(e, "a", 1,
	    (enum proxy_egress_decision)3, NULL, 0), -EINVAL);
	assert_int_equal(proxy_egress_note(e, "a", 1,
	    (enum proxy_egress_decision)-1, NULL, 0), -EINVAL);
	proxy_egress_free(e);
}

/* The JSON shape, exactly. */
static void
test_egress_shape(void **state)
{
	struct proxy_egress *e = proxy_egress_new(PROXY_EGRESS_DEFAULT_MAX);
	char *s;

	(void)state;
	assert_non_null(e);
	s = egress_text(e);
	assert_string_equal(s, "{\"egress\":[],\"allowed\":0,\"denied\":0,"
	    "\"errors\":0}");
	free(s);
	assert_int_equal(proxy_egress_note(e, "pypi.org", 443, ALLOW, NULL,
	    200), 0);
	assert_int_equal(proxy_egress_note(e, "evil.example", 80, DENY,
	    "not-allowlisted", 403), 0);
	/* A name that did not resolve: an error, not a denial; its own
	 * entry beside an allowed attempt at the same host:port, and no
	 * bytes. */
	assert_int_equal(proxy_egress_note(e, "nx.example", 443, ERROR,
	    "dns-nxdomain", 502), 0);
	assert_int_equal(proxy_egress_note(e, "nx.example", 443, ALLOW, NULL,
	    200), 0);
	assert_int_equal(proxy_egress_note(e, "nx.example", 443, ERROR,
	    "dns-nxdomain", 502), 0);
	assert_int_equal(proxy_egress_bytes(e, "pypi.org", 443, 120, 4096), 0);
	s = egress_text(e);
	assert_string_equal(s, "{\"egress\":["
	    "{\"host\":\"pypi.org\",\"port\":443,\"decision\":\"allowed\","
	    "\"reason\":\"\",\"status\":200,\"count\":1,\"bytes_up\":120,"
	    "\"bytes_down\":4096},"
	    "{\"host\":\"evil.example\",\"port\":80,\"decision\":\"denied\","
	    "\"reason\":\"not-allowlisted\",\"status\":403,\"count\":1,"
	    "\"bytes_up\":0,\"bytes_down\":0},"
	    "{\"host\":\"nx.example\",\"port\":443,\"decision\":\"error\","
	    "\"reason\":\"dns-nxdomain\",\"status\":502,\"count\":2,"
	    "\"bytes_up\":0,\"bytes_down\":0},"
	    "{\"host\":\"nx.example\",\"port\":443,\"decision\":\"allowed\","
	    "\"reason\":\"\",\"status\":200,\"count\":1,"
	    "\"bytes_up\":0,\"bytes_down\":0}],"
	    "\"allowed\":2,\"denied\":1,\"errors\":2}");
	free(s);
	proxy_egress_free(e);
}

/* Attempts noted as they end read in order of when they started. */
static void
test_egress_note_at(void **state)
{
	struct proxy_egress *e = proxy_egress_new(PROXY_EGRESS_DEFAULT_MAX);
	char *s;

	(void)state;
	assert_non_null(e);
	/* A long tunnel to a (started at 10) ends after a denial of b
	 * (started at 20) and an allowed c (30); a second, later c (40) is
	 * noted before the first c (25): c takes the earlier one's status. */
	assert_int_equal(proxy_egress_note_at(e, "b", 80, DENY, "r-b", 403,
	    20), 0);
	assert_int_equal(proxy_egress_note_at(e, "c", 80, ALLOW, "late", 404,
	    40), 0);
	assert_int_equal(proxy_egress_note_at(e, "a", 443, ALLOW, "r-a", 200,
	    10), 0);
	assert_int_equal(proxy_egress_note_at(e, "c", 80, ALLOW, "early", 200,
	    25), 0);
	/* Equal times keep the order noted. */
	assert_int_equal(proxy_egress_note_at(e, "d", 80, DENY, "", 403,
	    20), 0);
	s = egress_text(e);
	assert_non_null(strstr(s, "\"host\":\"a\""));
	assert_true(strstr(s, "\"host\":\"a\"") < strstr(s, "\"host\":\"b\""));
	assert_true(strstr(s, "\"host\":\"b\"") < strstr(s, "\"host\":\"d\""));
	assert_true(strstr(s, "\"host\":\"d\"") < strstr(s, "\"host\":\"c\""));
	assert_non_null(strstr(s, "{\"host\":\"c\",\"port\":80,\"decision\":"
	    "\"allowed\",\"reason\":\"early\",\"status\":200,\"count\":2,"));
	free(s);
	proxy_egress_free(e);
}

/* Rows of attempts and the entries they make, in first-attempt order. */
static void
test_egress_aggregate(void **state)
{
	static const struct {
		const char *host;
		uint16_t port;
		enum proxy_egress_decision decision;
		const char *reason;
		int status;
	} notes[] = {
		{ "a.example", 443, ALLOW, NULL, 200 },
		{ "b.example", 80, DENY, "not-allowlisted", 403 },
		{ "A.EXAMPLE", 443, ALLOW, NULL, 502 },	/* same as row 0 */
		{ "a.example", 443, DENY, "address-private", 403 },
		{ "a.example", 80, ALLOW, NULL, 200 },
		{ "B.Example", 80, DENY, "other", 0 },	/* same as row 1 */
		{ "a.example", 443, ALLOW, NULL, 200 },	/* same as row 0 */
	};
	static const struct {
		const char *host;
		double port, count, status;
		const char *decision, *reason;
	} want[] = {
		{ "a.example", 443, 3, 200, "allowed", "" },
		{ "b.example", 80, 2, 403, "denied", "not-allowlisted" },
		{ "a.example", 443, 1, 403, "denied", "address-private" },
		{ "a.example", 80, 1, 200, "allowed", "" },
	};
	struct proxy_egress *e = proxy_egress_new(PROXY_EGRESS_DEFAULT_MAX);
	cJSON *o, *arr;

	(void)state;
	for (size_t i = 0; i < sizeof(notes) / sizeof(notes[0]); i++)
		assert_int_equal(proxy_egress_note(e, notes[i].host,
		    notes[i].port, notes[i].decision, notes[i].reason,
		    notes[i].status), 0);
	o = proxy_egress_to_json(e);
	arr = cJSON_GetObjectItem(o, "egress");
	assert_int_equal(cJSON_GetArraySize(arr), 4);
	for (int i = 0; i < 4; i++) {
		cJSON *x = cJSON_GetArrayItem(arr, i);
		assert_string_equal(cJSON_GetObjectItem(x, "host")->valuestring,
		    want[i].host);
		assert_true(cJSON_GetObjectItem(x, "port")->valuedouble ==
		    want[i].port);
		assert_true(cJSON_GetObjectItem(x, "count")->valuedouble ==
		    want[i].count);
		/* an entry keeps its first attempt's status and reason */
		assert_true(cJSON_GetObjectItem(x, "status")->valuedouble ==
		    want[i].status);
		assert_string_equal(
		    cJSON_GetObjectItem(x, "decision")->valuestring,
		    want[i].decision);
		assert_string_equal(
		    cJSON_GetObjectItem(x, "reason")->valuestring,
		    want[i].reason);
	}
	assert_true(cJSON_GetObjectItem(o, "allowed")->valuedouble == 4);
	assert_true(cJSON_GetObjectItem(o, "denied")->valuedouble == 3);
	assert_null(cJSON_GetObjectItem(o, "egress_truncated"));
	assert_null(cJSON_GetObjectItem(o, "egress_dropped"));
	cJSON_Delete(o);
	proxy_egress_free(e);
}

/* Past max, new entries are dropped and counted; old ones still count. */
static void
test_egress_truncate(void **state)
{
	struct proxy_egress *e = proxy_egress_new(3);
	char host[32];
	char *s;

	(void)state;
	for (int i = 0; i < 5; i++) {
		snprintf(host, sizeof(host), "h%d.example", i);
		assert_int_equal(proxy_egress_note(e, host, 443, ALLOW, NULL,
		    200), i < 3 ? 0 : -ENOSPC);
	}
	assert_int_equal(proxy_egress_note(e, "H0.example", 443, ALLOW, NULL,
	    200), 0);
	assert_int_equal(proxy_egress_note(e, "h0.example", 443, DENY, "x",
	    403), -ENOSPC);
	assert_int_equal(proxy_egress_bytes(e, "h1.example", 443, 1, 2), 0);
	assert_int_equal(proxy_egress_bytes(e, "h4.example", 443, 1, 2),
	    -ENOENT);
	s = egress_text(e);
	assert_string_equal(s, "{\"egress\":["
	    "{\"host\":\"h0.example\",\"port\":443,\"decision\":\"allowed\","
	    "\"reason\":\"\",\"status\":200,\"count\":2,\"bytes_up\":0,"
	    "\"bytes_down\":0},"
	    "{\"host\":\"h1.example\",\"port\":443,\"decision\":\"allowed\","
	    "\"reason\":\"\",\"status\":200,\"count\":1,\"bytes_up\":1,"
	    "\"bytes_down\":2},"
	    "{\"host\":\"h2.example\",\"port\":443,\"decision\":\"allowed\","
	    "\"reason\":\"\",\"status\":200,\"count\":1,\"bytes_up\":0,"
	    "\"bytes_down\":0}],"
	    "\"egress_truncated\":true,\"egress_dropped\":3,"
	    "\"allowed\":6,\"denied\":1,\"errors\":0}");
	free(s);
	proxy_egress_free(e);

	/* max 0 keeps nothing but still counts */
	e = proxy_egress_new(0);
	assert_non_null(e);
	assert_int_equal(proxy_egress_note(e, "a", 1, DENY, "r", 403),
	    -ENOSPC);
	s = egress_text(e);
	assert_string_equal(s, "{\"egress\":[],\"egress_truncated\":true,"
	    "\"egress_dropped\":1,\"allowed\":0,\"denied\":1,"
	    "\"errors\":0}");
	free(s);
	proxy_egress_free(e);

	/* growth past the first allocation, up to the cap */
	e = proxy_egress_new(PROXY_EGRESS_DEFAULT_MAX);
	for (int i = 0; i < 150; i++) {
		snprintf(host, sizeof(host), "h%d", i);
		assert_int_equal(proxy_egress_note(e, host, 80, ALLOW, NULL,
		    200), i < PROXY_EGRESS_DEFAULT_MAX ? 0 : -ENOSPC);
	}
	assert_int_equal(proxy_egress_bytes(e, "H99", 80, 5, 5), 0);
	proxy_egress_free(e);

	errno = 0;
	assert_null(proxy_egress_new(PROXY_EGRESS_MAX_LIMIT + 1));
	assert_int_equal(errno, EINVAL);
	proxy_egress_free(NULL);
}

static void
test_egress_bytes(void **state)
{
	struct proxy_egress *e = proxy_egress_new(10);
	cJSON *o, *x;

	(void)state;
	assert_int_equal(proxy_egress_note(e, "Up.Example", 443, ALLOW, NULL,
	    200), 0);
	assert_int_equal(proxy_egress_note(e, "down.example", 443, DENY,
	    "not-allowlisted", 403), 0);
	/* case-insensitive, and only to the allowed entry of that port */
	assert_int_equal(proxy_egress_bytes(e, "UP.EXAMPLE", 443, 10, 20), 0);
	assert_int_equal(proxy_egress_bytes(e, "up.example", 443, 1, 2), 0);
	assert_int_equal(proxy_egress_bytes(e, "up.example", 80, 1, 2),
	    -ENOENT);
	assert_int_equal(proxy_egress_bytes(e, "down.example", 443, 1, 2),
	    -ENOENT);
	assert_int_equal(proxy_egress_bytes(e, "nowhere", 443, 1, 2),
	    -ENOENT);
	assert_int_equal(proxy_egress_bytes(e, NULL, 443, 1, 2), -ENOENT);
	o = proxy_egress_to_json(e);
	x = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "egress"), 0);
	assert_string_equal(cJSON_GetObjectItem(x, "host")->valuestring,
	    "up.example");
	assert_true(cJSON_GetObjectItem(x, "bytes_up")->valuedouble == 11);
	assert_true(cJSON_GetObjectItem(x, "bytes_down")->valuedouble == 22);
	cJSON_Delete(o);
	/* counters saturate */
	assert_int_equal(proxy_egress_bytes(e, "up.example", 443, UINT64_MAX,
	    UINT64_MAX), 0);
	o = proxy_egress_to_json(e);
	x = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "egress"), 0);
	assert_true(cJSON_GetObjectItem(x, "bytes_up")->valuedouble ==
	    (double)UINT64_MAX);
	cJSON_Delete(o);
	proxy_egress_free(e);
}

/* Long hosts and reasons are cut, at a UTF-8 boundary; JSON stays valid. */
static void
test_egress_cut(void **state)
{
	struct proxy_egress *e = proxy_egress_new(10);
	char host[400], reason[100];
	cJSON *o, *arr;
	const char *h;

	(void)state;
	memset(host, 'a', sizeof(host));
	host[sizeof(host) - 1] = '\0';
	assert_int_equal(proxy_egress_note(e, host, 1, ALLOW, NULL, 0), 0);
	/* the same 255-byte prefix is the same entry */
	host[300] = 'b';
	assert_int_equal(proxy_egress_note(e, host, 1, ALLOW, NULL, 0), 0);
	/* 254 ASCII bytes then a 2-byte character across the cut */
	memset(host, 'c', 254);
	memcpy(host + 254, "\xc3\xa9xyz", 6);
	assert_int_equal(proxy_egress_note(e, host, 2, ALLOW, NULL, 0), 0);
	/* invalid bytes become U+FFFD in the JSON */
	assert_int_equal(proxy_egress_note(e, "bad\xff\xfe", 3, DENY, NULL,
	    0), 0);
	memset(reason, 'r', sizeof(reason));
	reason[sizeof(reason) - 1] = '\0';
	assert_int_equal(proxy_egress_note(e, "r.example", 4, DENY, reason,
	    403), 0);
	assert_int_equal(proxy_egress_note(e, NULL, 1, ALLOW, NULL, 0),
	    -EINVAL);
	assert_int_equal(proxy_egress_note(e, "", 1, ALLOW, NULL, 0), -EINVAL);
	assert_int_equal(proxy_egress_note(NULL, "a", 1, ALLOW, NULL, 0),
	    -EINVAL);

	o = proxy_egress_to_json(e);
	arr = cJSON_GetObjectItem(o, "egress");
	assert_int_equal(cJSON_GetArraySize(arr), 4);
	h = cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 0), "host")->valuestring;
	assert_int_equal(strlen(h), PROXY_EGRESS_HOST_MAX);
	assert_true(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 0),
	    "count")->valuedouble == 2);
	h = cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 1), "host")->valuestring;
	assert_int_equal(strlen(h), 254);
	assert_int_equal(h[253], 'c');
	h = cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 2), "host")->valuestring;
	assert_string_equal(h, "bad\xef\xbf\xbd\xef\xbf\xbd");
	h = cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 3),
	    "reason")->valuestring;
	assert_int_equal(strlen(h), PROXY_EGRESS_REASON_MAX);
	assert_true(cJSON_GetObjectItem(o, "denied")->valuedouble == 2);
	cJSON_Delete(o);
	assert_null(proxy_egress_to_json(NULL));
	proxy_egress_free(e);
}

/* The path: one entry per (host, port, decision, via), and per reason
 * too for "dns"; "via" in the report (and absent for entries noted
 * without one); bytes go to the entry of their path. */
static void
test_egress_via(void **state)
{
	struct proxy_egress *e = proxy_egress_new(10);
	char *got;
	cJSON *o;

	(void)state;
	assert_int_equal(proxy_egress_note_via(e, "a.example", 443, "connect",
	    ALLOW, "allowed-by-entry", 200, 1), 0);
	assert_int_equal(proxy_egress_note_via(e, "a.example", 443, "tls",
	    ALLOW, "allowed-by-entry", 0, 2), 0);
	assert_int_equal(proxy_egress_note_via(e, "A.example", 443, "tls",
	    ALLOW, "allowed-by-entry", 0, 3), 0);
	assert_int_equal(proxy_egress_note_via(e, "a.example", 53, "dns",
	    ALLOW, "allowed", 0, 4), 0);
	assert_int_equal(proxy_egress_note_via(e, "b.example", 53, "dns",
	    DENY, "not-on-policy p", 0, 5), 0);
	assert_int_equal(proxy_egress_note_via(e, "b.example", 53, "dns",
	    DENY, "dns-rate-limit", 0, 6), 0);
	assert_int_equal(proxy_egress_note_via(e, "B.example", 53, "dns",
	    DENY, "not-on-policy p", 0, 7), 0);
	assert_int_equal(proxy_egress_note_at(e, "c.example", 80, DENY,
	    "x", 403, 7), 0);
	/* A path over PROXY_EGRESS_VIA_MAX bytes is cut. */
	assert_int_equal(proxy_egress_note_via(e, "d.example", 1,
	    "0123456789abcdefXYZ", ALLOW, "", 0, 8), 0);
	assert_int_equal(proxy_egress_bytes_via(e, "a.example", 443, "tls", 5,
	    6), 0);
	assert_int_equal(proxy_egress_bytes_via(e, "a.example", 443, "raw", 5,
	    6), -ENOENT);
	assert_int_equal(proxy_egress_bytes(e, "a.example", 443, 5, 6),
	    -ENOENT);
	o = proxy_egress_to_json(e);
	got = cJSON_PrintUnformatted(o);
	assert_string_equal(got, "{\"egress\":["
	    "{\"host\":\"a.example\",\"port\":443,\"decision\":\"allowed\","
	    "\"reason\":\"allowed-by-entry\",\"status\":200,\"count\":1,"
	    "\"bytes_up\":0,\"bytes_down\":0,\"via\":\"connect\"},"
	    "{\"host\":\"a.example\",\"port\":443,\"decision\":\"allowed\","
	    "\"reason\":\"allowed-by-entry\",\"status\":0,\"count\":2,"
	    "\"bytes_up\":5,\"bytes_down\":6,\"via\":\"tls\"},"
	    "{\"host\":\"a.example\",\"port\":53,\"decision\":\"allowed\","
	    "\"reason\":\"allowed\",\"status\":0,\"count\":1,"
	    "\"bytes_up\":0,\"bytes_down\":0,\"via\":\"dns\"},"
	    "{\"host\":\"b.example\",\"port\":53,\"decision\":\"denied\","
	    "\"reason\":\"not-on-policy p\",\"status\":0,\"count\":2,"
	    "\"bytes_up\":0,\"bytes_down\":0,\"via\":\"dns\"},"
	    "{\"host\":\"b.example\",\"port\":53,\"decision\":\"denied\","
	    "\"reason\":\"dns-rate-limit\",\"status\":0,\"count\":1,"
	    "\"bytes_up\":0,\"bytes_down\":0,\"via\":\"dns\"},"
	    "{\"host\":\"c.example\",\"port\":80,\"decision\":\"denied\","
	    "\"reason\":\"x\",\"status\":403,\"count\":1,"
	    "\"bytes_up\":0,\"bytes_down\":0},"
	    "{\"host\":\"d.example\",\"port\":1,\"decision\":\"allowed\","
	    "\"reason\":\"\",\"status\":0,\"count\":1,"
	    "\"bytes_up\":0,\"bytes_down\":0,\"via\":\"0123456789abcde\"}],"
	    "\"allowed\":5,\"denied\":4,\"errors\":0}");
	free(got);
	cJSON_Delete(o);
	proxy_egress_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_egress_decision_of),
		cmocka_unit_test(test_egress_shape),
		cmocka_unit_test(test_egress_aggregate),
		cmocka_unit_test(test_egress_note_at),
		cmocka_unit_test(test_egress_truncate),
		cmocka_unit_test(test_egress_bytes),
		cmocka_unit_test(test_egress_cut),
		cmocka_unit_test(test_egress_via),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
