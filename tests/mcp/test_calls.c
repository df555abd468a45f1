/*
 * Unit tests for how `cordon mcp` takes tool calls (issue 20): the
 * classification the stdio transport queues by (ids of any length), the
 * refusal of requests before initialize, one cancel flag per call reaching
 * the runner, and structuredContent checked against the outputSchema that
 * tools/list declares, by a small validator that is itself shown to fail.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/config.h"
#include "common/util.h"
#include "mcp/mcp.h"

/* What the fake runner answers and saw. */
struct fake {
	int calls;
	const atomic_int *cancel;	/* the flag the last run watched */
	int cancel_value;		/* *cancel when it ran, or -1 */
	enum runner_status status;
	int exit_code;
	bool proxy;			/* answer with a proxy-mode report */
	const char *egress;		/* that report; NULL: egress_error */
};

static struct config cfg;
static struct fake f;
static struct mcp_server *srv;

#define INIT "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\"," \
	"\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{}," \
	"\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}"
#define CALL(id) "{\"jsonrpc\":\"2.0\",\"id\":" id ",\"method\":" \
	"\"tools/call\",\"params\":{\"name\":\"run_code\",\"arguments\":" \
	"{\"code\":\"print(1)\"}}}"

static int
fake_run(const struct config *c, const struct runner_request *req,
    struct runner_result *res, char *err, size_t errlen, void *arg)
{
	struct fake *k = arg;

	(void)c;
	(void)err;
	(void)errlen;
	k->calls++;
	k->cancel = req->cancel;
	k->cancel_value = req->cancel != NULL ? *req->cancel : -1;
	res->status = k->status;
	res->exit_code = k->exit_code;
	res->out = strdup("out \xff\n");	/* invalid UTF-8 is replaced */
	res->out_len = strlen(res->out);
	res->err = strdup("");
	res->duration_ms = 1234;
	util_strlcpy(res->container, "cordon-0123456789abcdef",
	    sizeof(res->container));
	util_strlcpy(res->code_sha256, "ab", sizeof(res->code_sha256));
	res->limits = (struct runner_limits){ .timeout_s = 30,
	    .max_output = 1 << 20, .memory = 256u << 20, .cpus = 0.5,
	    .pids = 64 };
	if (k->proxy) {
		res->net = RUNNER_NET_PROXY;
		util_strlcpy(res->policy, "pypi", sizeof(res->policy));
		if (k->egress != NULL)
			assert_non_null(res->egress = cJSON_Parse(k->egress));
		else
			util_strlcpy(res->egress_error, "proxy did not answer",
			    sizeof(res->egress_error));
	}
	return 0;
}

static int
setup(void **state)
{
	struct mcp_server_opts o = { .config = &cfg, .run = fake_run,
	    .run_arg = &f, .tmp_dir = "/tmp" };

	(void)state;
	config_defaults(&cfg);
	memset(&f, 0, sizeof(f));
	assert_int_equal(mcp_server_new(&o, &srv), 0);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	mcp_server_free(srv);
	srv = NULL;
	return 0;
}

/* Sends msg through mcp_handle_cancellable; the parsed reply or NULL. */
static cJSON *
send_with(const char *msg, const atomic_int *cancel)
{
	char *reply = NULL;
	cJSON *r;

	assert_int_equal(mcp_handle_cancellable(srv, msg, strlen(msg), cancel,
	    &reply), 0);
	if (reply == NULL)
		return NULL;
	assert_null(memchr(reply, '\n', strlen(reply) - 1));
	assert_non_null(r = cJSON_Parse(reply));
	free(reply);
	return r;
}

static int
error_code(const cJSON *r)
{
	const cJSON *e = cJSON_GetObjectItem(r, "error");

	return e != NULL ? (int)cJSON_GetObjectItem(e, "code")->valuedouble : 0;
}

/* A string of n copies of c, quoted as a JSON string (caller frees). */
static char *
long_id(size_t n, char c)
{
	char *s = malloc(n + 3);

	assert_non_null(s);
	s[0] = '"';
	memset(s + 1, c, n);
	s[n + 1] = '"';
	s[n + 2] = '\0';
	return s;
}

static void
test_classify(void **state)
{
	static const struct {
		const char *msg;
		enum mcp_kind kind;
		const char *id;		/* printed; NULL for none */
	} c[] = {
		{ CALL("9"), MCP_KIND_CALL, "9" },
		/* Exact past 15 digits: two neighbours stay two ids. */
		{ CALL("-9007199254740991"), MCP_KIND_CALL, "-9007199254740991" },
		{ CALL("9007199254740990"), MCP_KIND_CALL, "9007199254740990" },
		{ CALL("1e3"), MCP_KIND_CALL, "1000" },
		{ "{\"jsonrpc\":\"2.0\",\"id\":\"x y\",\"method\":\"tools/call\"}",
		    MCP_KIND_CALL, "\"x y\"" },
		/* An escaped id is printed in one canonical form, so a
		 * cancellation spelled differently still matches. */
		{ CALL("\"\\u0061\""), MCP_KIND_CALL, "\"a\"" },
		{ CALL("2.0"), MCP_KIND_CALL, "2" },
		/* Refused by mcp_handle at once: no valid id. */
		{ "{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\"}",
		    MCP_KIND_OTHER, NULL },
		{ CALL("null"), MCP_KIND_OTHER, NULL },
		{ CALL("1.5"), MCP_KIND_OTHER, NULL },
		{ CALL("9007199254740992"), MCP_KIND_OTHER, NULL },
		{ CALL("[1]"), MCP_KIND_OTHER, NULL },
		{ CALL("\"\xff\""), MCP_KIND_OTHER, NULL },
		{ "[" CALL("1") "]", MCP_KIND_OTHER, NULL },
		{ "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
		    "\"params\":{\"requestId\":4,\"reason\":\"timeout\"}}",
		    MCP_KIND_CANCEL, "4" },
		{ "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
		    "\"params\":{\"requestId\":\"4\"}}", MCP_KIND_CANCEL,
		    "\"4\"" },
		{ "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\"}",
		    MCP_KIND_OTHER, NULL },
		{ "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
		    "\"params\":{\"requestId\":[1]}}", MCP_KIND_OTHER, NULL },
		{ "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":"
		    "\"notifications/cancelled\",\"params\":{\"requestId\":1}}",
		    MCP_KIND_OTHER, NULL },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
		    MCP_KIND_OTHER, NULL },
		{ "garbage", MCP_KIND_OTHER, NULL },
		{ "", MCP_KIND_OTHER, NULL },
		/* A NUL anywhere: never a call nor a cancellation (issue 39:
		 * "a\u0000x" would name request "a"); mcp_handle refuses
		 * the call and drops the notification. */
		{ "{\"jsonrpc\":\"2.0\",\"id\":\"a\\u0000x\",\"method\":"
		    "\"tools/call\",\"params\":{\"name\":\"run_code\"}}",
		    MCP_KIND_OTHER, NULL },
		{ "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\","
		    "\"params\":{\"name\":\"run_code\",\"arguments\":{\"code\":"
		    "\"print(1)\\u0000x\"}}}", MCP_KIND_OTHER, NULL },
		{ "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
		    "\"params\":{\"requestId\":\"a\\u0000y\"}}", MCP_KIND_OTHER,
		    NULL },
	};
	enum mcp_kind kind;
	char *id = (char *)"not touched";

	(void)state;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		print_message("classify %zu: %s\n", i, c[i].msg);
		assert_int_equal(mcp_classify(c[i].msg, strlen(c[i].msg), &kind,
		    &id), 0);
		assert_int_equal(kind, c[i].kind);
		if (c[i].id == NULL)
			assert_null(id);
		else
			assert_string_equal(id, c[i].id);
		free(id);
	}
}

/* Ids of 200 bytes and of 1 MiB are calls like any other (they once ran
 * inline on the reading thread, past the one-at-a-time queue), and a
 * cancellation names them whole. */
static void
test_classify_long_ids(void **state)
{
	static const size_t lens[] = { 126, 127, 128, 200, 1u << 20 };
	enum mcp_kind kind;
	char *q, *msg, *id;
	size_t n;

	(void)state;
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		q = long_id(lens[i], 'L');
		n = strlen(q) + 256;
		msg = malloc(n);
		assert_non_null(msg);
		if (msg == NULL)	/* for -Wformat-truncation at -O2 */
			return;
		snprintf(msg, n, CALL("%s"), q);
		assert_int_equal(mcp_classify(msg, strlen(msg), &kind, &id), 0);
		assert_int_equal(kind, MCP_KIND_CALL);
		assert_string_equal(id, q);
		free(id);
		snprintf(msg, n, "{\"jsonrpc\":\"2.0\",\"method\":"
		    "\"notifications/cancelled\",\"params\":{\"requestId\":%s}}",
		    q);
		assert_int_equal(mcp_classify(msg, strlen(msg), &kind, &id), 0);
		assert_int_equal(kind, MCP_KIND_CANCEL);
		assert_string_equal(id, q);
		free(id);
		/* The error line for it carries it whole too. */
		assert_non_null(id = mcp_error_reply(q, -32000, "busy"));
		assert_non_null(strstr(id, q));
		free(id);
		free(msg);
		free(q);
	}
}

static void
test_error_reply(void **state)
{
	char *line;
	cJSON *r;

	(void)state;
	line = mcp_error_reply("\"q\"", -32000, "busy");
	assert_non_null(r = cJSON_Parse(line));
	assert_string_equal(cJSON_GetObjectItem(r, "id")->valuestring, "q");
	assert_int_equal(error_code(r), -32000);
	cJSON_Delete(r);
	free(line);
	line = mcp_error_reply(NULL, MCP_INTERNAL_ERROR, "x");
	assert_non_null(strstr(line, "\"id\":null"));
	free(line);
	assert_non_null(r = cJSON_Parse(mcp_static_internal_error));
	assert_int_equal(error_code(r), MCP_INTERNAL_ERROR);
	cJSON_Delete(r);
}

/* A reply carries the request's id exactly, large integers included. */
static void
test_reply_id_exact(void **state)
{
	static const char *const ids[] = { "9007199254740991",
	    "9007199254740990", "-9007199254740991", "123456789012345678",
	    "0", "\"9007199254740991\"" };
	char msg[256], *reply;

	(void)state;
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		snprintf(msg, sizeof(msg), "{\"jsonrpc\":\"2.0\",\"id\":%s,"
		    "\"method\":\"ping\"}", ids[i]);
		reply = NULL;
		assert_int_equal(mcp_handle(srv, msg, strlen(msg), &reply), 0);
		if (strcmp(ids[i], "123456789012345678") == 0) {
			/* Past 2^53: not an integer JSON keeps, refused. */
			assert_non_null(strstr(reply, "\"id\":null"));
		} else {
			snprintf(msg, sizeof(msg), "\"id\":%s,", ids[i]);
			assert_non_null(strstr(reply, msg));
		}
		free(reply);
	}
}

/* Before initialize only initialize and ping are served; a tool call is
 * refused with -32600 and runs nothing. After it, the same call runs. */
static void
test_before_initialize(void **state)
{
	static const struct {
		const char *msg;
		int error;		/* 0: a result; 1: no reply */
	} m[] = {
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", 0 },
		{ CALL("2"), MCP_INVALID_REQUEST },
		{ CALL("\"two\""), MCP_INVALID_REQUEST },
		{ "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}",
		    MCP_INVALID_REQUEST },
		{ "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"nope\"}",
		    MCP_METHOD_NOT_FOUND },
		{ "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
		    1 },
		/* A failed initialize leaves the server uninitialized. */
		{ "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"initialize\"}",
		    MCP_INVALID_PARAMS },
		{ "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"initialize\","
		    "\"params\":{\"protocolVersion\":1}}", MCP_INVALID_PARAMS },
		{ "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"initialize\","
		    "\"params\":{\"protocolVersion\":\"2025-11-25\","
		    "\"capabilities\":[]}}", MCP_INVALID_PARAMS },
		{ CALL("6"), MCP_INVALID_REQUEST },
	};
	const cJSON *e;
	cJSON *r;

	(void)state;
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		print_message("before initialize %zu: %s\n", i, m[i].msg);
		r = send_with(m[i].msg, NULL);
		if (m[i].error == 1) {
			assert_null(r);
			continue;
		}
		assert_non_null(r);
		assert_int_equal(error_code(r), m[i].error);
		if (m[i].error == MCP_INVALID_REQUEST) {
			e = cJSON_GetObjectItem(r, "error");
			assert_non_null(strstr(cJSON_GetObjectItem(e,
			    "message")->valuestring, "not initialized"));
		}
		cJSON_Delete(r);
	}
	assert_false(mcp_server_initialized(srv));
	assert_int_equal(f.calls, 0);
	r = send_with(INIT, NULL);
	assert_int_equal(error_code(r), 0);
	cJSON_Delete(r);
	r = send_with(CALL("7"), NULL);
	assert_int_equal(error_code(r), 0);
	cJSON_Delete(r);
	assert_int_equal(f.calls, 1);
}

/* Each call's run watches the flag given with it, and only that one. */
static void
test_cancel_flag_per_call(void **state)
{
	atomic_int a = 0, b = 1;
	cJSON *r;

	(void)state;
	r = send_with(INIT, NULL);
	cJSON_Delete(r);
	r = send_with(CALL("1"), &a);
	assert_int_equal(error_code(r), 0);
	cJSON_Delete(r);
	assert_ptr_equal(f.cancel, &a);
	assert_int_equal(f.cancel_value, 0);
	r = send_with(CALL("2"), &b);
	cJSON_Delete(r);
	assert_ptr_equal(f.cancel, &b);
	assert_int_equal(f.cancel_value, 1);
	assert_int_equal(a, 0);		/* never touched by the handler */
	r = send_with(CALL("3"), NULL);
	cJSON_Delete(r);
	assert_null(f.cancel);
	assert_int_equal(f.calls, 3);
}

/* A small JSON Schema check of the keywords outputSchema uses: type
 * (object, array, string, integer, number, boolean), enum, required, properties,
 * items, minimum. Returns the path of the first violation or NULL. */
static const char *
schema_check(const cJSON *schema, const cJSON *v, const char *where)
{
	static char why[256];
	const cJSON *t = cJSON_GetObjectItem(schema, "type"), *k, *p, *x, *obj;
	const char *type = cJSON_IsString(t) ? t->valuestring : NULL, *sub;
	bool ok = true, found;

	if (type == NULL)
		ok = true;
	else if (strcmp(type, "object") == 0)
		ok = cJSON_IsObject(v);
	else if (strcmp(type, "array") == 0)
		ok = cJSON_IsArray(v);
	else if (strcmp(type, "string") == 0)
		ok = cJSON_IsString(v);
	else if (strcmp(type, "boolean") == 0)
		ok = cJSON_IsBool(v);
	else if (strcmp(type, "number") == 0)
		ok = cJSON_IsNumber(v);
	else if (strcmp(type, "integer") == 0)
		ok = cJSON_IsNumber(v) && floor(v->valuedouble) ==
		    v->valuedouble;
	else
		fail_msg("schema type %s not handled by this test", type);
	if (!ok) {
		snprintf(why, sizeof(why), "%s: not %s", where, type);
		return why;
	}
	if ((k = cJSON_GetObjectItem(schema, "minimum")) != NULL &&
	    v->valuedouble < k->valuedouble) {
		snprintf(why, sizeof(why), "%s: below minimum", where);
		return why;
	}
	if ((k = cJSON_GetObjectItem(schema, "enum")) != NULL) {
		found = false;
		cJSON_ArrayForEach(x, k)
			found = found || cJSON_Compare(x, v, true);
		if (!found) {
			snprintf(why, sizeof(why), "%s: not in enum", where);
			return why;
		}
	}
	cJSON_ArrayForEach(k, cJSON_GetObjectItem(schema, "required"))
		if (!cJSON_HasObjectItem(v, k->valuestring)) {
			snprintf(why, sizeof(why), "%s.%s: missing", where,
			    k->valuestring);
			return why;
		}
	p = cJSON_GetObjectItem(schema, "properties");
	obj = cJSON_IsObject(v) ? v : NULL;
	cJSON_ArrayForEach(x, obj)
		if ((k = cJSON_GetObjectItem(p, x->string)) != NULL &&
		    (sub = schema_check(k, x, x->string)) != NULL)
			return sub;
	if ((k = cJSON_GetObjectItem(schema, "items")) != NULL)
		cJSON_ArrayForEach(x, v)
			if ((sub = schema_check(k, x, "items")) != NULL)
				return sub;
	return NULL;
}

/* tools/list's outputSchema of run_code (owned by *root). */
static const cJSON *
output_schema(cJSON **root)
{
	const cJSON *tool, *s;

	*root = send_with("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	    "\"tools/list\"}", NULL);
	tool = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
	    *root, "result"), "tools"), 0);
	s = cJSON_GetObjectItem(tool, "outputSchema");
	assert_non_null(s);
	assert_string_equal(cJSON_GetObjectItem(s, "type")->valuestring,
	    "object");
	assert_true(cJSON_GetArraySize(cJSON_GetObjectItem(s, "required")) >=
	    10);
	return s;
}

/* Every kind of run result carries structuredContent that fits the
 * schema, equal to the JSON of the second text block, after the label. */
static void
test_structured_content(void **state)
{
	static const struct {
		enum runner_status status;
		int exit_code;
		bool proxy;
		const char *egress;
		bool is_error;
	} runs[] = {
		{ RUNNER_OK, 0, false, NULL, false },
		{ RUNNER_OK, 3, false, NULL, true },
		{ RUNNER_TIMEOUT, -1, false, NULL, true },
		{ RUNNER_OOM, 137, false, NULL, true },
		{ RUNNER_SANDBOX_ERROR, -1, false, NULL, true },
		{ RUNNER_OK, 0, true, NULL, false },	/* egress_error */
		{ RUNNER_OK, 0, true, "{\"egress\":[{\"host\":\"pypi.org\","
		    "\"port\":443,\"decision\":\"allowed\",\"reason\":"
		    "\"allowed-by-entry\",\"status\":200,\"count\":3,"
		    "\"bytes_up\":2817,\"bytes_down\":91234},{\"host\":"
		    "\"github.com\",\"port\":443,\"decision\":\"denied\","
		    "\"reason\":\"not-on-policy pypi\",\"status\":403,\"count\":1,"
		    "\"bytes_up\":0,\"bytes_down\":0}],\"allowed\":3,\"denied\":1,"
		    "\"egress_truncated\":true,\"egress_dropped\":5}", false },
	};
	const cJSON *schema, *res, *sc, *content;
	cJSON *lroot, *r, *text;
	const char *why;

	(void)state;
	cJSON_Delete(send_with(INIT, NULL));
	schema = output_schema(&lroot);
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		print_message("run %zu\n", i);
		f.status = runs[i].status;
		f.exit_code = runs[i].exit_code;
		f.proxy = runs[i].proxy;
		f.egress = runs[i].egress;
		r = send_with(CALL("1"), NULL);
		res = cJSON_GetObjectItem(r, "result");
		assert_int_equal(cJSON_IsTrue(cJSON_GetObjectItem(res,
		    "isError")), runs[i].is_error);
		content = cJSON_GetObjectItem(res, "content");
		assert_int_equal(cJSON_GetArraySize(content), 2);
		assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(
		    content, 0), "text")->valuestring, MCP_UNTRUSTED_LABEL);
		sc = cJSON_GetObjectItem(res, "structuredContent");
		assert_non_null(sc);
		why = schema_check(schema, sc, "structuredContent");
		if (why != NULL)
			fail_msg("run %zu: %s", i, why);
		assert_true(cJSON_IsObject(cJSON_GetObjectItem(sc, "limits")));
		text = cJSON_Parse(cJSON_GetObjectItem(cJSON_GetArrayItem(
		    content, 1), "text")->valuestring);
		assert_true(cJSON_Compare(text, sc, true));
		cJSON_Delete(text);
		cJSON_Delete(r);
	}
	cJSON_Delete(lroot);
}

/* The validator above does fail: results bent out of shape are caught. */
static void
test_schema_check_fails(void **state)
{
	static const char *const bad[] = {
		"{\"status\":\"bogus\"}",
		"{\"exit_code\":\"0\"}",
		"{\"exit_code\":0.5}",
		"{\"duration_ms\":-1}",
		"{\"stdout\":null}",
		"{\"net\":\"host\"}",
		"{\"egress\":[{\"port\":\"443\"}]}",
		"{\"egress\":{}}",
		"{\"limits\":{\"timeout_s\":1.5}}",
		"{\"limits\":{\"cpus\":\"1\"}}",
		"{\"limits\":[]}",
	};
	static const char *const drop[] = { "status", "stdout", "net" };
	const cJSON *schema;
	cJSON *lroot, *r, *good, *v, *patch;

	(void)state;
	cJSON_Delete(send_with(INIT, NULL));
	schema = output_schema(&lroot);
	r = send_with(CALL("1"), NULL);
	good = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "result"),
	    "structuredContent");
	assert_null(schema_check(schema, good, "ok"));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_non_null(v = cJSON_Duplicate(good, true));
		assert_non_null(patch = cJSON_Parse(bad[i]));
		if (cJSON_HasObjectItem(v, patch->child->string))
			cJSON_DeleteItemFromObject(v, patch->child->string);
		assert_true(cJSON_AddItemToObject(v, patch->child->string,
		    cJSON_Duplicate(patch->child, true)));
		assert_non_null(schema_check(schema, v, bad[i]));
		cJSON_Delete(patch);
		cJSON_Delete(v);
	}
	for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++) {
		assert_non_null(v = cJSON_Duplicate(good, true));
		cJSON_DeleteItemFromObject(v, drop[i]);
		assert_non_null(schema_check(schema, v, drop[i]));
		cJSON_Delete(v);
	}
	cJSON_Delete(r);
	cJSON_Delete(lroot);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_classify_long_ids),
		cmocka_unit_test(test_error_reply),
		cmocka_unit_test_setup_teardown(test_reply_id_exact, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_before_initialize, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_cancel_flag_per_call,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_structured_content, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_schema_check_fails, setup,
		    teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
