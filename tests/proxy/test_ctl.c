/* Unit tests for the proxy control protocol lines (proxy/ctl.h). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/ctl.h"

#define TOK "0123456789abcdef0123456789abcdef"
/* A register request missing its closing brace, for rows to extend. */
#define REG "{\"op\":\"register\",\"run\":\"r1\",\"addr\":\"10.0.0.5\"," \
	"\"policy\":\"default\",\"token\":\"" TOK "\",\"deadline_ms\":1000"
#define REG_WITH(rest) REG rest "}"
#define REG_DEADLINE(d) "{\"op\":\"register\",\"run\":\"r1\"," \
	"\"addr\":\"10.0.0.5\",\"policy\":\"p\",\"token\":\"" TOK "\"," \
	"\"deadline_ms\":" d "}"

/* Lines that parse, with what they give. */
static const struct ok_row {
	const char *line;
	enum proxy_ctl_op op;
	const char *run;
	const char *addr;	/* canonical text; NULL: not a register */
	int family;
	const char *policy;
	int64_t deadline_ms, max_conns, bytes_up, bytes_down;
} ok_rows[] = {
	{ "{\"op\":\"ping\"}", PROXY_CTL_PING, "", NULL, 0, NULL, 0, 0, 0, 0 },
	{ "{\"op\":\"ping\"}\n", PROXY_CTL_PING, "", NULL, 0, NULL, 0, 0, 0,
	  0 },
	{ " {\t\"op\" : \"ping\" }  ", PROXY_CTL_PING, "", NULL, 0, NULL, 0,
	  0, 0, 0 },
	{ "{\"op\":\"policies\"}", PROXY_CTL_POLICIES, "", NULL, 0, NULL, 0,
	  0, 0, 0 },
	{ "{\"op\":\"report\",\"run\":\"abc_D-9\"}", PROXY_CTL_REPORT,
	  "abc_D-9", NULL, 0, NULL, 0, 0, 0, 0 },
	{ "{\"run\":\"r1\",\"op\":\"unregister\"}", PROXY_CTL_UNREGISTER, "r1",
	  NULL, 0, NULL, 0, 0, 0, 0 },
	/* a live run's new policy */
	{ "{\"op\":\"policy\",\"run\":\"r1\",\"policy\":\"a.b_c-1\"}",
	  PROXY_CTL_POLICY, "r1", NULL, 0, "a.b_c-1", 0, 0, 0, 0 },
	/* an escape that decodes to an allowed character is fine */
	{ "{\"op\":\"report\",\"run\":\"\\u0041b\"}", PROXY_CTL_REPORT, "Ab",
	  NULL, 0, NULL, 0, 0, 0, 0 },
	{ REG "}", PROXY_CTL_REGISTER, "r1", "10.0.0.5", AF_INET, "default",
	  1000, PROXY_CTL_UNSET, PROXY_CTL_UNSET, PROXY_CTL_UNSET },
	{ REG_WITH(",\"max_conns\":65535,\"bytes_up\":0,"
	  "\"bytes_down\":9007199254740991"), PROXY_CTL_REGISTER, "r1",
	  "10.0.0.5", AF_INET, "default", 1000, 65535, 0,
	  9007199254740991LL },
	{ REG_WITH(",\"max_conns\":1"), PROXY_CTL_REGISTER, "r1", "10.0.0.5",
	  AF_INET, "default", 1000, 1, PROXY_CTL_UNSET, PROXY_CTL_UNSET },
	/* a literal only: the metadata address is policy's business */
	{ "{\"op\":\"register\",\"run\":\"r1\",\"addr\":\"169.254.169.254\","
	  "\"policy\":\"a.b_c-1\",\"token\":\"" TOK "\",\"deadline_ms\":1}",
	  PROXY_CTL_REGISTER, "r1", "169.254.169.254", AF_INET, "a.b_c-1", 1,
	  PROXY_CTL_UNSET, PROXY_CTL_UNSET, PROXY_CTL_UNSET },
	/* IPv6, stored in canonical text */
	{ "{\"op\":\"register\",\"run\":\"r1\",\"addr\":\"2001:DB8:0::1\","
	  "\"policy\":\"p\",\"token\":\"" TOK "\","
	  "\"deadline_ms\":9007199254740991}",
	  PROXY_CTL_REGISTER, "r1", "2001:db8::1", AF_INET6, "p",
	  9007199254740991LL, PROXY_CTL_UNSET, PROXY_CTL_UNSET,
	  PROXY_CTL_UNSET },
	{ "{\"op\":\"register\",\"run\":\"r1\",\"addr\":\"::ffff:1.2.3.4\","
	  "\"policy\":\"p\",\"token\":\"" TOK "\",\"deadline_ms\":5}",
	  PROXY_CTL_REGISTER, "r1", "::ffff:1.2.3.4", AF_INET6, "p", 5,
	  PROXY_CTL_UNSET, PROXY_CTL_UNSET, PROXY_CTL_UNSET },
};

/* Lines that are refused, with the code and a part of the reason. */
static const struct bad_row {
	const char *line;
	size_t len;		/* 0: strlen */
	int rc;
	const char *why;
} bad_rows[] = {
	{ "", 0, -EBADMSG, "invalid JSON" },
	{ "{\"op\":\"policy\",\"run\":\"r1\"}", 0, -EINVAL,
	  "missing field \"policy\"" },
	{ "{\"op\":\"policy\",\"policy\":\"p\"}", 0, -EINVAL,
	  "missing field \"run\"" },
	{ "{\"op\":\"policy\",\"run\":\"r1\",\"policy\":\".p\"}", 0,
	  -EINVAL, "policy" },
	{ "{\"op\":\"policy\",\"run\":\"r1\",\"policy\":\"p\",\"token\":"
	  "\"" TOK "\"}", 0, -EINVAL, "unknown field \"token\" for op policy" },
	{ "\n", 0, -EBADMSG, "invalid JSON" },
	{ "ping", 0, -EBADMSG, "invalid JSON" },
	{ "{\"op\":\"ping\"", 0, -EBADMSG, "invalid JSON" },
	{ "{\"op\":\"ping\"} x", 0, -EBADMSG, "invalid JSON" },
	{ "{\"op\":\"ping\"}{\"op\":\"ping\"}", 0, -EBADMSG, "invalid JSON" },
	{ "[{\"op\":\"ping\"}]", 0, -EINVAL, "not a JSON object" },
	{ "\"ping\"", 0, -EINVAL, "not a JSON object" },
	{ "null", 0, -EINVAL, "not a JSON object" },
	{ "{}", 0, -EINVAL, "missing field \"op\"" },
	{ "{\"op\":1}", 0, -EINVAL, "op: must be a string" },
	{ "{\"op\":\"reboot\"}", 0, -EINVAL, "unknown op" },
	{ "{\"op\":\"PING\"}", 0, -EINVAL, "unknown op" },
	{ "{\"OP\":\"ping\"}", 0, -EINVAL, "unknown field \"OP\"" },
	{ "{\"op\":\"ping\",\"x\":1}", 0, -EINVAL, "unknown field \"x\"" },
	{ "{\"op\":\"ping\",\"\\u00e9\":1}", 0, -EINVAL,
	  "unknown field (not printable)" },
	{ "{\"op\":\"ping\",\"run\":\"r1\"}", 0, -EINVAL,
	  "unknown field \"run\" for op ping" },
	{ "{\"op\":\"unregister\",\"run\":\"r1\",\"token\":\"" TOK "\"}", 0,
	  -EINVAL, "unknown field \"token\" for op unregister" },
	/* duplicate keys are refused, whatever their values */
	{ "{\"op\":\"ping\",\"op\":\"ping\"}", 0, -EINVAL,
	  "duplicate field \"op\"" },
	{ "{\"op\":\"report\",\"run\":\"a\",\"run\":\"b\"}", 0, -EINVAL,
	  "duplicate field \"run\"" },
	{ "{\"op\":\"unregister\"}", 0, -EINVAL, "missing field \"run\"" },
	{ "{\"op\":\"unregister\",\"run\":5}", 0, -EINVAL,
	  "run: must be a string" },
	{ "{\"op\":\"unregister\",\"run\":{\"a\":1}}", 0, -EINVAL,
	  "run: must be a string" },
	{ "{\"op\":\"unregister\",\"run\":\"\"}", 0, -EINVAL,
	  "run: invalid value" },
	{ "{\"op\":\"unregister\",\"run\":\"a/b\"}", 0, -EINVAL,
	  "run: invalid value" },
	{ "{\"op\":\"register\",\"run\":\"r1\"}", 0, -EINVAL,
	  "missing field \"addr\"" },
	/* numbers */
	{ REG_DEADLINE("1.5"), 0, -EINVAL, "plain non-negative integers" },
	{ REG_DEADLINE("1.0"), 0, -EINVAL, "plain non-negative integers" },
	{ REG_DEADLINE("-1"), 0, -EINVAL, "plain non-negative integers" },
	{ REG_DEADLINE("-0"), 0, -EINVAL, "plain non-negative integers" },
	{ REG_DEADLINE("1e300"), 0, -EINVAL, "plain non-negative integers" },
	{ REG_DEADLINE("1E3"), 0, -EINVAL, "plain non-negative integers" },
	{ REG_DEADLINE("0"), 0, -EINVAL, "deadline_ms: must be an integer" },
	{ REG_DEADLINE("9007199254740992"), 0, -EINVAL,
	  "deadline_ms: must be an integer in 1..9007199254740991" },
	/* 2^53 + 1 would read as 2^53 as a double */
	{ REG_DEADLINE("9007199254740993"), 0, -EINVAL,
	  "deadline_ms: must be an integer" },
	{ REG_DEADLINE("99999999999999999999999"), 0, -EINVAL,
	  "deadline_ms: must be an integer" },
	{ REG_DEADLINE("\"5\""), 0, -EINVAL, "deadline_ms: must be a number" },
	{ REG_DEADLINE("true"), 0, -EINVAL, "deadline_ms: must be a number" },
	{ REG_DEADLINE("null"), 0, -EINVAL, "deadline_ms: must be a number" },
	{ REG_WITH(",\"max_conns\":0"), 0, -EINVAL,
	  "max_conns: must be an integer in 1..65535" },
	{ REG_WITH(",\"max_conns\":65536"), 0, -EINVAL, "max_conns" },
	{ REG_WITH(",\"max_conns\":null"), 0, -EINVAL,
	  "max_conns: must be a number" },
	{ REG_WITH(",\"bytes_up\":9007199254740992"), 0, -EINVAL,
	  "bytes_up" },
	{ REG_WITH(",\"bytes_down\":[1]"), 0, -EINVAL,
	  "bytes_down: must be a number" },
	/* addr */
	{ "{\"op\":\"register\",\"run\":\"r1\",\"addr\":\"1.2.3\","
	  "\"policy\":\"p\",\"token\":\"" TOK "\",\"deadline_ms\":1}", 0,
	  -EINVAL, "addr: invalid value" },
	{ "{\"op\":\"register\",\"run\":\"r1\",\"addr\":\"1.2.3.256\","
	  "\"policy\":\"p\",\"token\":\"" TOK "\",\"deadline_ms\":1}", 0,
	  -EINVAL, "addr: invalid value" },
	{ "{\"op\":\"register\",\"run\":\"r1\",\"addr\":\"[::1]\","
	  "\"policy\":\"p\",\"token\":\"" TOK "\",\"deadline_ms\":1}", 0,
	  -EINVAL, "addr: invalid value" },
	{ "{\"op\":\"register\",\"run\":\"r1\",\"addr\":\"fe80::1%eth0\","
	  "\"policy\":\"p\",\"token\":\"" TOK "\",\"deadline_ms\":1}", 0,
	  -EINVAL, "addr: invalid value" },
	{ "{\"op\":\"register\",\"run\":\"r1\",\"addr\":\" 1.2.3.4\","
	  "\"policy\":\"p\",\"token\":\"" TOK "\",\"deadline_ms\":1}", 0,
	  -EINVAL, "addr: invalid value" },
	{ "{\"op\":\"register\",\"run\":\"r1\",\"addr\":\"example.com\","
	  "\"policy\":\"p\",\"token\":\"" TOK "\",\"deadline_ms\":1}", 0,
	  -EINVAL, "addr: invalid value" },
	{ "{\"op\":\"register\",\"run\":\"r1\",\"addr\":167772165,"
	  "\"policy\":\"p\",\"token\":\"" TOK "\",\"deadline_ms\":1}", 0,
	  -EINVAL, "addr: must be a string" },
	/* policy and token */
	{ "{\"op\":\"register\",\"run\":\"r1\",\"addr\":\"::1\","
	  "\"policy\":\".hidden\",\"token\":\"" TOK "\",\"deadline_ms\":1}", 0,
	  -EINVAL, "policy: invalid value" },
	{ "{\"op\":\"register\",\"run\":\"r1\",\"addr\":\"::1\","
	  "\"policy\":\"../x\",\"token\":\"" TOK "\",\"deadline_ms\":1}", 0,
	  -EINVAL, "policy: invalid value" },
	{ "{\"op\":\"register\",\"run\":\"r1\",\"addr\":\"::1\","
	  "\"policy\":\"\",\"token\":\"" TOK "\",\"deadline_ms\":1}", 0,
	  -EINVAL, "policy: invalid value" },
	{ "{\"op\":\"register\",\"run\":\"r1\",\"addr\":\"::1\","
	  "\"policy\":\"p\",\"token\":\"0123456789ABCDEF\","
	  "\"deadline_ms\":1}", 0, -EINVAL, "token: invalid value" },
	{ "{\"op\":\"register\",\"run\":\"r1\",\"addr\":\"::1\","
	  "\"policy\":\"p\",\"token\":\"0123\",\"deadline_ms\":1}", 0,
	  -EINVAL, "token: invalid value" },
	/* framing: control bytes, NUL, \u0000 */
	{ "{\"op\":\"ping\"}\r\n", 0, -EBADMSG, "control byte 0x0d" },
	{ "{\"op\":\"ping\"}\n\n", 0, -EBADMSG, "control byte 0x0a" },
	{ "{\"op\":\n\"ping\"}", 0, -EBADMSG, "control byte 0x0a" },
	{ "{\"op\":\"ping\"}\0", 14, -EBADMSG, "control byte 0x00" },
	{ "{\"op\":\"pi\tng\"}", 0, -EBADMSG, "control byte 0x09" },
	{ "{\"op\":\"report\",\"run\":\"r1\\u0000x\"}", 0, -EBADMSG,
	  "\\u0000 in a string" },
	{ "{\"op\\u0000x\":\"ping\"}", 0, -EBADMSG, "\\u0000 in a string" },
	/* an escaped backslash before u0000 is not an escape of it */
	{ "{\"op\":\"report\",\"run\":\"\\\\u0000\"}", 0, -EINVAL,
	  "run: invalid value" },
};

static void
test_ctl_ok_rows(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(ok_rows) / sizeof(ok_rows[0]); i++) {
		const struct ok_row *r = &ok_rows[i];
		struct proxy_ctl_req q;
		char err[128];
		int rc;

		rc = proxy_ctl_parse(r->line, strlen(r->line), &q, err,
		    sizeof(err));
		if (rc != 0)
			fail_msg("%s: %d %s", r->line, rc, err);
		assert_string_equal(err, "");
		assert_int_equal(q.op, r->op);
		assert_string_equal(q.run, r->run);
		if (r->addr == NULL) {
			assert_string_equal(q.policy, r->policy != NULL ?
			    r->policy : "");
			assert_string_equal(q.addr_text, "");
			assert_int_equal(q.addr.ss_family, 0);
			assert_int_equal(q.max_conns, PROXY_CTL_UNSET);
			continue;
		}
		assert_string_equal(q.addr_text, r->addr);
		assert_int_equal(q.addr.ss_family, r->family);
		assert_string_equal(q.policy, r->policy);
		assert_string_equal(q.token, TOK);
		assert_int_equal(q.deadline_ms, r->deadline_ms);
		assert_int_equal(q.max_conns, r->max_conns);
		assert_int_equal(q.bytes_up, r->bytes_up);
		assert_int_equal(q.bytes_down, r->bytes_down);
	}
}

static void
test_ctl_bad_rows(void **state)
{
	struct proxy_ctl_req reset;

	(void)state;
	proxy_ctl_req_reset(&reset);
	for (size_t i = 0; i < sizeof(bad_rows) / sizeof(bad_rows[0]); i++) {
		const struct bad_row *r = &bad_rows[i];
		struct proxy_ctl_req q;
		char err[128];
		int rc;

		memset(&q, 0xAA, sizeof(q));
		rc = proxy_ctl_parse(r->line, r->len ? r->len : strlen(r->line),
		    &q, err, sizeof(err));
		if (rc != r->rc || strstr(err, r->why) == NULL)
			fail_msg("row %zu %s: got %d \"%s\", want %d \"%s\"", i,
			    r->line, rc, err, r->rc, r->why);
		assert_memory_equal(&q, &reset, sizeof(q));
		/* the reason is printable ASCII */
		for (const char *p = err; *p != '\0'; p++)
			assert_true(*p >= 0x20 && *p <= 0x7e);
	}
}

/* Same rows with no err buffer: no crash, same code. */
static void
test_ctl_no_err_buffer(void **state)
{
	struct proxy_ctl_req q;

	(void)state;
	for (size_t i = 0; i < sizeof(bad_rows) / sizeof(bad_rows[0]); i++) {
		const struct bad_row *r = &bad_rows[i];
		assert_int_equal(proxy_ctl_parse(r->line,
		    r->len ? r->len : strlen(r->line), &q, NULL, 0), r->rc);
	}
}

/* The line cap counts the final newline; the text need not end in NUL. */
static void
test_ctl_line_cap(void **state)
{
	static char line[PROXY_CTL_LINE_MAX + 2];
	struct proxy_ctl_req q;
	const char *head = "{\"op\":\"ping\"}";
	size_t n = strlen(head);
	char err[128];

	(void)state;
	memset(line, ' ', sizeof(line));
	memcpy(line, head, n);
	line[PROXY_CTL_LINE_MAX - 1] = '\n';
	assert_int_equal(proxy_ctl_parse(line, PROXY_CTL_LINE_MAX, &q, err,
	    sizeof(err)), 0);
	assert_int_equal(q.op, PROXY_CTL_PING);
	line[PROXY_CTL_LINE_MAX - 1] = ' ';
	assert_int_equal(proxy_ctl_parse(line, PROXY_CTL_LINE_MAX, &q, err,
	    sizeof(err)), 0);
	line[PROXY_CTL_LINE_MAX] = '\n';
	assert_int_equal(proxy_ctl_parse(line, PROXY_CTL_LINE_MAX + 1, &q,
	    err, sizeof(err)), -EMSGSIZE);
	assert_non_null(strstr(err, "longer than 4096"));
	assert_int_equal(q.op, PROXY_CTL_NONE);
	/* the length given is what counts, not a NUL after it */
	assert_int_equal(proxy_ctl_parse(head, n - 1, &q, NULL, 0), -EBADMSG);
	assert_int_equal(proxy_ctl_parse(NULL, 0, &q, NULL, 0), -EMSGSIZE);
}

/* format then parse gives the same struct, for every accepted row. */
static void
test_ctl_round_trip(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(ok_rows) / sizeof(ok_rows[0]); i++) {
		struct proxy_ctl_req a, b;
		char *line;

		assert_int_equal(proxy_ctl_parse(ok_rows[i].line,
		    strlen(ok_rows[i].line), &a, NULL, 0), 0);
		line = proxy_ctl_format(&a);
		assert_non_null(line);
		assert_int_equal(line[strlen(line) - 1], '\n');
		assert_ptr_equal(strchr(line, '\n'), line + strlen(line) - 1);
		assert_int_equal(proxy_ctl_parse(line, strlen(line), &b, NULL,
		    0), 0);
		assert_memory_equal(&a, &b, sizeof(a));
		free(line);
	}
}

/* The runner's way: fill a struct, format it; exact text and limits. */
static void
test_ctl_format(void **state)
{
	struct proxy_ctl_req q, back;
	char *line;

	(void)state;
	proxy_ctl_req_reset(&q);
	q.op = PROXY_CTL_REGISTER;
	strcpy(q.run, "run-7");
	strcpy(q.addr_text, "::FFFF:10.1.2.3");
	strcpy(q.policy, "pypi");
	strcpy(q.token, TOK);
	q.deadline_ms = 1000000000000000LL;	/* cJSON would print 1e+15 */
	q.bytes_down = 0;
	line = proxy_ctl_format(&q);
	assert_non_null(line);
	assert_string_equal(line, "{\"op\":\"register\",\"run\":\"run-7\","
	    "\"addr\":\"::ffff:10.1.2.3\",\"policy\":\"pypi\",\"token\":\""
	    TOK "\",\"deadline_ms\":1000000000000000,\"bytes_down\":0}\n");
	assert_int_equal(proxy_ctl_parse(line, strlen(line), &back, NULL, 0),
	    0);
	free(line);
	assert_string_equal(back.addr_text, "::ffff:10.1.2.3");
	assert_int_equal(back.deadline_ms, q.deadline_ms);
	assert_int_equal(back.bytes_down, 0);
	assert_int_equal(back.bytes_up, PROXY_CTL_UNSET);
	assert_int_equal(back.max_conns, PROXY_CTL_UNSET);

	/* unregister writes only op and run */
	q.op = PROXY_CTL_UNREGISTER;
	line = proxy_ctl_format(&q);
	assert_string_equal(line, "{\"op\":\"unregister\",\"run\":\"run-7\"}\n");
	free(line);
	q.op = PROXY_CTL_PING;
	line = proxy_ctl_format(&q);
	assert_string_equal(line, "{\"op\":\"ping\"}\n");
	free(line);

	/* every rule of parse applies */
	q.op = PROXY_CTL_REGISTER;
	q.max_conns = 0;
	errno = 0;
	assert_null(proxy_ctl_format(&q));
	assert_int_equal(errno, EINVAL);
	q.max_conns = PROXY_CTL_UNSET;
	q.bytes_up = -2;
	assert_null(proxy_ctl_format(&q));
	q.bytes_up = PROXY_CTL_UNSET;
	strcpy(q.addr_text, "1.2.3");
	assert_null(proxy_ctl_format(&q));
	strcpy(q.addr_text, "1.2.3.4");
	strcpy(q.policy, ".x");
	assert_null(proxy_ctl_format(&q));
	strcpy(q.policy, "x");
	q.deadline_ms = 0;
	assert_null(proxy_ctl_format(&q));
	q.deadline_ms = 1;
	strcpy(q.token, "ABCDEF0123456789");
	assert_null(proxy_ctl_format(&q));
	strcpy(q.token, TOK);
	memset(q.run, 'a', sizeof(q.run));	/* not NUL-terminated */
	assert_null(proxy_ctl_format(&q));
	strcpy(q.run, "r");
	line = proxy_ctl_format(&q);
	assert_non_null(line);
	free(line);
	q.op = PROXY_CTL_NONE;
	assert_null(proxy_ctl_format(&q));
	assert_int_equal(errno, EINVAL);
	assert_null(proxy_ctl_format(NULL));
	assert_string_equal(proxy_ctl_op_name(PROXY_CTL_REPORT), "report");
	assert_null(proxy_ctl_op_name(PROXY_CTL_NONE));
}

static void
test_ctl_answers(void **state)
{
	cJSON *p;
	char *line;

	(void)state;
	line = proxy_ctl_ok(NULL);
	assert_string_equal(line, "{\"ok\":true}\n");
	free(line);

	p = cJSON_CreateObject();
	cJSON_AddNumberToObject(p, "allowed", 2);
	cJSON_AddArrayToObject(p, "egress");
	line = proxy_ctl_ok(p);
	assert_string_equal(line, "{\"ok\":true,\"allowed\":2,\"egress\":[]}\n");
	free(line);

	/* refused payloads are freed too (ASan checks the leak) */
	p = cJSON_CreateObject();
	cJSON_AddTrueToObject(p, "ok");
	errno = 0;
	assert_null(proxy_ctl_ok(p));
	assert_int_equal(errno, EINVAL);
	p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "error", "x");
	assert_null(proxy_ctl_ok(p));
	assert_null(proxy_ctl_ok(cJSON_CreateArray()));

	line = proxy_ctl_error("unknown op");
	assert_string_equal(line, "{\"ok\":false,\"error\":\"unknown op\"}\n");
	free(line);
	/* one line whatever the message holds; invalid UTF-8 replaced */
	line = proxy_ctl_error("a\"b\nc\xff");
	assert_string_equal(line,
	    "{\"ok\":false,\"error\":\"a\\\"b\\nc\xef\xbf\xbd\"}\n");
	free(line);
	line = proxy_ctl_error(NULL);
	assert_string_equal(line, "{\"ok\":false,\"error\":\"error\"}\n");
	free(line);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ctl_ok_rows),
		cmocka_unit_test(test_ctl_bad_rows),
		cmocka_unit_test(test_ctl_no_err_buffer),
		cmocka_unit_test(test_ctl_line_cap),
		cmocka_unit_test(test_ctl_round_trip),
		cmocka_unit_test(test_ctl_format),
		cmocka_unit_test(test_ctl_answers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
