/*
 * Unit tests for the stdio transport of `cordon mcp` (cli/cmd_mcp.c): the
 * built binary gets byte streams on stdin (CRLF, blank lines, a last line
 * without newline, NUL bytes, a message over the 4 MiB cap, a call before
 * initialize) and must answer each message on its own line and exit 0 at
 * EOF. No tool runs here.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/cbuf.h"
#include "common/proc.h"
#include "mcp/mcp.h"

static char cordon[4096];

static int
find_cordon(void **state)
{
	const char *root = getenv("CORDON_BUILD_ROOT");

	(void)state;
	if (root == NULL)
		return -1;
	snprintf(cordon, sizeof(cordon), "%s/cordon", root);
	return 0;
}

/* Runs `cordon mcp ARG` with stdin; returns the exit code, *out the stdout
 * (caller frees). */
static int
run_mcp(const char *arg, const void *in, size_t inlen, char **out)
{
	const char *argv[] = { cordon, "mcp", arg, NULL };
	struct proc_opts o = { .argv = argv, .stdin_data = in,
	    .stdin_len = inlen, .stdout_max = 1 << 20, .stderr_max = 1 << 16 };
	struct proc_result r;
	int code;

	assert_int_equal(proc_run(&o, 60000, &r), 0);
	assert_false(r.timed_out);
	*out = strdup(cbuf_data(r.out));
	code = r.exit_code;
	proc_result_cleanup(&r);
	return code;
}

/* Checks the n-th reply line: its id (printed) and error code (0: result). */
static void
check_line(const char *out, int n, const char *id, int error)
{
	const char *p = out, *nl;
	char line[4096], *idtext;
	cJSON *r, *e;

	for (int i = 0; i < n; i++) {
		assert_non_null(p = strchr(p, '\n'));
		p++;
	}
	assert_non_null(nl = strchr(p, '\n'));
	snprintf(line, sizeof(line), "%.*s", (int)(nl - p), p);
	assert_non_null(r = cJSON_Parse(line));
	idtext = cJSON_PrintUnformatted(cJSON_GetObjectItem(r, "id"));
	assert_string_equal(idtext, id);
	e = cJSON_GetObjectItem(r, "error");
	assert_int_equal(e ? (int)cJSON_GetObjectItem(e, "code")->valuedouble :
	    0, error);
	free(idtext);
	cJSON_Delete(r);
}

static int
count_lines(const char *out)
{
	int n = 0;

	for (; *out != '\0'; out++)
		n += *out == '\n';
	return n;
}

#define PING(id) "{\"jsonrpc\":\"2.0\",\"id\":" id ",\"method\":\"ping\"}"

static void
test_framing(void **state)
{
	static const char in[] = PING("1") "\r\n" "\n" "\r\n"
	    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
	    "not json\n"
	    PING("\"two\"");	/* no final newline */
	char *out;

	(void)state;
	assert_int_equal(run_mcp(NULL, in, sizeof(in) - 1, &out), 0);
	assert_int_equal(count_lines(out), 3);
	check_line(out, 0, "1", 0);
	check_line(out, 1, "null", MCP_PARSE_ERROR);
	check_line(out, 2, "\"two\"", 0);
	free(out);
}

static void
test_nul_bytes(void **state)
{
	static const char in[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\0\"method\":"
	    "\"ping\"}\n\0\0\0\n" PING("2") "\n";
	char *out;

	(void)state;
	assert_int_equal(run_mcp(NULL, in, sizeof(in) - 1, &out), 0);
	assert_int_equal(count_lines(out), 3);
	check_line(out, 0, "null", MCP_PARSE_ERROR);
	check_line(out, 1, "null", MCP_PARSE_ERROR);
	check_line(out, 2, "2", 0);
	free(out);
}

static void
test_oversized_message(void **state)
{
	static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":77,\"method\":"
	    "\"tools/call\",\"params\":{\"name\":\"run_code\",\"arguments\":"
	    "{\"code\":\"";
	static const char tail[] = "\"}}}\n" PING("78") "\n";
	size_t body = MCP_MAX_MESSAGE, len = 0;
	char *in = malloc(MCP_MAX_MESSAGE + 1 + sizeof(head) + body +
	    sizeof(tail)), *out;

	(void)state;
	assert_non_null(in);
	/* A message of exactly the cap is served (a parse error here)... */
	memset(in, ' ', MCP_MAX_MESSAGE);
	in[0] = '{';
	len = MCP_MAX_MESSAGE;
	in[len++] = '\n';
	/* ...one over it is refused with its id, and serving goes on. */
	memcpy(in + len, head, sizeof(head) - 1);
	len += sizeof(head) - 1;
	memset(in + len, 'x', body);
	len += body;
	memcpy(in + len, tail, sizeof(tail) - 1);
	len += sizeof(tail) - 1;
	assert_int_equal(run_mcp(NULL, in, len, &out), 0);
	assert_int_equal(count_lines(out), 3);
	check_line(out, 0, "null", MCP_PARSE_ERROR);
	check_line(out, 1, "77", MCP_INVALID_REQUEST);
	assert_non_null(strstr(out, "larger than"));
	check_line(out, 2, "78", 0);
	free(out);
	free(in);
}

/* Before initialize a tools/call is refused at once with its id, however
 * long (nothing runs: no Docker is needed here), and ping is served. */
static void
test_call_before_initialize(void **state)
{
	char id[203], in[1024], *out;
	size_t n;

	(void)state;
	id[0] = '"';
	memset(id + 1, 'i', 200);
	id[201] = '"';
	id[202] = '\0';
	n = (size_t)snprintf(in, sizeof(in), "{\"jsonrpc\":\"2.0\",\"id\":%s,"
	    "\"method\":\"tools/call\",\"params\":{\"name\":\"run_code\","
	    "\"arguments\":{\"code\":\"print(1)\"}}}\n"
	    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
	    "\"params\":{\"requestId\":%s}}\n" PING("3") "\n", id, id);
	assert_int_equal(run_mcp(NULL, in, n, &out), 0);
	assert_int_equal(count_lines(out), 2);
	check_line(out, 0, id, MCP_INVALID_REQUEST);
	assert_non_null(strstr(out, "not initialized"));
	check_line(out, 1, "3", 0);
	free(out);
}

static void
test_empty_input_and_options(void **state)
{
	char *out;

	(void)state;
	assert_int_equal(run_mcp(NULL, "", 0, &out), 0);
	assert_string_equal(out, "");
	free(out);
	assert_int_equal(run_mcp("--help", "", 0, &out), 0);
	assert_non_null(strstr(out, "usage: cordon mcp"));
	free(out);
	assert_int_equal(run_mcp("--bogus", "", 0, &out), 2);
	free(out);
	assert_int_equal(run_mcp("--session=has space", "", 0, &out), 2);
	free(out);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_framing),
		cmocka_unit_test(test_nul_bytes),
		cmocka_unit_test(test_oversized_message),
		cmocka_unit_test(test_call_before_initialize),
		cmocka_unit_test(test_empty_input_and_options),
	};
	return cmocka_run_group_tests(tests, find_cordon, NULL);
}
