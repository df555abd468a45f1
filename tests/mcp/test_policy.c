/*
 * Unit tests for run_code's egress policy (mcp/run_code.c): the `policy`
 * property of the input schema, an enum of the proxy's policies asked
 * through a fake policy source at each tools/list, or a plain string that
 * says why they are unavailable; and the `policy` argument, checked and
 * passed to a fake runner.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/config.h"
#include "common/util.h"
#include "mcp/mcp.h"

struct fake {
	/* The policy source. */
	int list_calls;
	int list_rc;			/* < 0: fail with list_err */
	const char *list_json;		/* the array it answers */
	const char *list_err;
	/* The runner. */
	int runs;
	int run_rc;			/* < 0: refuse with run_err */
	const char *run_err;
	enum runner_net net;
	char policy[80];		/* "(null)" when none was passed */
};

static struct config cfg;
static struct fake f;
static struct mcp_server *srv;

static int
fake_policies(const struct config *c, cJSON **out, char *err, size_t errlen,
    void *arg)
{
	struct fake *k = arg;

	(void)c;
	k->list_calls++;
	*out = NULL;
	if (k->list_rc < 0) {
		util_strlcpy(err, k->list_err, errlen);
		return k->list_rc;
	}
	*out = cJSON_Parse(k->list_json);
	assert_non_null(*out);
	return 0;
}

static int
fake_run(const struct config *c, const struct runner_request *req,
    struct runner_result *res, char *err, size_t errlen, void *arg)
{
	struct fake *k = arg;

	(void)c;
	k->runs++;
	k->net = req->net;
	snprintf(k->policy, sizeof(k->policy), "%s", req->policy != NULL ?
	    req->policy : "(null)");
	if (k->run_rc < 0) {
		util_strlcpy(err, k->run_err, errlen);
		return k->run_rc;
	}
	res->status = RUNNER_OK;
	res->exit_code = 0;
	res->out = strdup("");
	res->err = strdup("");
	res->net = req->net;
	return 0;
}

/* A new server in srv that answered initialize (only then are tools
 * listed and called). */
static void
server_start(const struct mcp_server_opts *o)
{
	static const char init[] = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":"
	    "\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\"}}";
	char *reply = NULL;

	assert_int_equal(mcp_server_new(o, &srv), 0);
	assert_int_equal(mcp_handle(srv, init, sizeof(init) - 1, &reply), 0);
	assert_non_null(strstr(reply, "\"result\""));
	free(reply);
}

static int
setup(void **state)
{
	struct mcp_server_opts o = { .config = &cfg, .run = fake_run,
	    .run_arg = &f, .policies = fake_policies, .policies_arg = &f,
	    .tmp_dir = "/tmp" };

	(void)state;
	config_defaults(&cfg);
	util_strlcpy(cfg.egress_default_policy, "std",
	    sizeof(cfg.egress_default_policy));
	memset(&f, 0, sizeof(f));
	f.list_json = "[\"std\",\"pypi\"]";
	server_start(&o);
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

/* Sends one request; returns its parsed reply (one valid JSON line). */
static cJSON *
send_msg(const char *msg)
{
	char *reply = NULL;
	cJSON *r;

	assert_int_equal(mcp_handle(srv, msg, strlen(msg), &reply), 0);
	assert_non_null(reply);
	assert_null(memchr(reply, '\n', strlen(reply) - 1));
	r = cJSON_Parse(reply);
	assert_non_null(r);
	free(reply);
	return r;
}

/* tools/list; returns run_code's `policy` property (owned by *root). */
static const cJSON *
policy_prop(cJSON **root)
{
	const cJSON *tool, *props;

	*root = send_msg("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	    "\"tools/list\"}");
	tool = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
	    *root, "result"), "tools"), 0);
	assert_non_null(tool);
	props = cJSON_GetObjectItem(cJSON_GetObjectItem(tool, "inputSchema"),
	    "properties");
	/* The other arguments are unchanged. */
	assert_int_equal(cJSON_GetArraySize(props), 9);
	assert_non_null(cJSON_GetObjectItem(props, "session"));
	assert_non_null(cJSON_GetObjectItem(props, "code"));
	assert_non_null(cJSON_GetObjectItem(props, "network"));
	assert_non_null(cJSON_GetObjectItem(props, "timeout_s"));
	assert_non_null(cJSON_GetObjectItem(props, "files"));
	assert_non_null(cJSON_GetObjectItem(props, "keep"));
	assert_null(cJSON_GetObjectItem(props, "default"));
	return cJSON_GetObjectItem(props, "policy");
}

static const char *
desc(const cJSON *p)
{
	const cJSON *d = cJSON_GetObjectItem(p, "description");

	assert_true(cJSON_IsString(d));
	return d->valuestring;
}

static void
test_schema_enum(void **state)
{
	const cJSON *p;
	cJSON *root;
	char *text;

	(void)state;
	p = policy_prop(&root);
	assert_int_equal(f.list_calls, 1);
	assert_string_equal(cJSON_GetObjectItem(p, "type")->valuestring,
	    "string");
	text = cJSON_PrintUnformatted(cJSON_GetObjectItem(p, "enum"));
	assert_string_equal(text, "[\"std\",\"pypi\"]");
	free(text);
	assert_non_null(strstr(desc(p), "default: 'std'"));
	assert_null(strstr(desc(p), "unavailable"));
	/* No JSON-schema default: a client that fills in defaults would
	 * send a policy with network none. */
	assert_null(cJSON_GetObjectItem(p, "default"));
	cJSON_Delete(root);

	/* Asked again at every tools/list; names that are not policy names
	 * (or not strings) are left out. */
	f.list_json = "[\"github-raw\",\"../etc\",7,\"a.b\",\"\",null,\"x_1\"]";
	p = policy_prop(&root);
	assert_int_equal(f.list_calls, 2);
	text = cJSON_PrintUnformatted(cJSON_GetObjectItem(p, "enum"));
	assert_string_equal(text, "[\"github-raw\",\"x_1\"]");
	free(text);
	cJSON_Delete(root);
}

static void
test_schema_unavailable(void **state)
{
	static const struct {
		int rc;
		const char *json, *err, *want;
	} rows[] = {
		{ -ENOSYS, NULL, "egress policies: not implemented yet",
		  "unavailable now (egress policies: not implemented yet)" },
		{ -ENETDOWN, NULL, "egress network not up",
		  "unavailable now (egress network not up)" },
		{ -ECONNREFUSED, NULL, "",
		  "unavailable now (Connection refused)" },
		/* Valid UTF-8 in the reply whatever the source said. */
		{ -EIO, NULL, "bad \xff\xfe bytes", "unavailable now (bad " },
		{ 0, "[]", NULL, "unavailable now (the egress proxy has no "
		  "policies)" },
		{ 0, "[\"../x\",1]", NULL, "unavailable now (the egress proxy "
		  "has no policies)" },
		{ 0, "{}", NULL, "unavailable now (the egress proxy has no "
		  "policies)" },
	};
	const cJSON *p;
	cJSON *root;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		f.list_rc = rows[i].rc;
		f.list_json = rows[i].json;
		f.list_err = rows[i].err;
		p = policy_prop(&root);
		assert_string_equal(cJSON_GetObjectItem(p, "type")->valuestring,
		    "string");
		assert_null(cJSON_GetObjectItem(p, "enum"));
		if (strstr(desc(p), rows[i].want) == NULL)
			fail_msg("row %zu: %s", i, desc(p));
		assert_non_null(strstr(desc(p), "default: 'std'"));
		cJSON_Delete(root);
	}
	assert_int_equal(f.list_calls, (int)(sizeof(rows) / sizeof(rows[0])));
}

/* A server without a policy source never lists any. */
static void
test_schema_no_source(void **state)
{
	struct mcp_server_opts o = { .config = &cfg, .run = fake_run,
	    .run_arg = &f, .tmp_dir = "/tmp" };
	const cJSON *p;
	cJSON *root;

	(void)state;
	mcp_server_free(srv);
	server_start(&o);
	p = policy_prop(&root);
	assert_null(cJSON_GetObjectItem(p, "enum"));
	assert_non_null(strstr(desc(p), "unavailable now (this server cannot "
	    "ask the egress proxy)"));
	cJSON_Delete(root);
	assert_int_equal(f.list_calls, 0);
}

#define CALL(args) "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\"," \
	"\"params\":{\"name\":\"run_code\",\"arguments\":" args "}}"

/* Calls run_code; returns the result's isError and its first text. */
static bool
call(const char *args, char *text, size_t textlen)
{
	char msg[1024];
	const cJSON *res, *b;
	cJSON *root;
	bool err;

	snprintf(msg, sizeof(msg), CALL("%s"), args);
	root = send_msg(msg);
	res = cJSON_GetObjectItem(root, "result");
	assert_non_null(res);
	err = cJSON_IsTrue(cJSON_GetObjectItem(res, "isError"));
	b = cJSON_GetArrayItem(cJSON_GetObjectItem(res, "content"), 0);
	util_strlcpy(text, cJSON_GetObjectItem(b, "text")->valuestring,
	    textlen);
	cJSON_Delete(root);
	return err;
}

static void
test_arguments(void **state)
{
	static const struct {
		const char *args;
		const char *policy;	/* passed to the runner; NULL: refused */
		const char *why;	/* of a refusal */
	} rows[] = {
		{ "{\"code\":\"1\",\"network\":\"proxy\",\"policy\":\"pypi\"}",
		  "pypi", NULL },
		{ "{\"code\":\"1\",\"network\":\"proxy\"}", "(null)", NULL },
		{ "{\"code\":\"1\"}", "(null)", NULL },
		/* Not listed by the proxy: the runner's to refuse. */
		{ "{\"code\":\"1\",\"network\":\"proxy\",\"policy\":\"zz\"}",
		  "zz", NULL },
		{ "{\"code\":\"1\",\"network\":\"none\",\"policy\":\"pypi\"}",
		  NULL, "'policy' needs network \"proxy\" (this call's network "
		  "is \"none\")" },
		{ "{\"code\":\"1\",\"policy\":\"pypi\"}", NULL, "'policy' needs "
		  "network \"proxy\" (this call's network is \"none\")" },
		{ "{\"code\":\"1\",\"network\":\"proxy\",\"policy\":\"\"}", NULL,
		  "'policy' must be a policy name (1-64 of [A-Za-z0-9_-])" },
		{ "{\"code\":\"1\",\"network\":\"proxy\",\"policy\":\"../x\"}",
		  NULL, "'policy' must be a policy name (1-64 of "
		  "[A-Za-z0-9_-])" },
		{ "{\"code\":\"1\",\"network\":\"proxy\",\"policy\":7}", NULL,
		  "'policy' must be a policy name (1-64 of [A-Za-z0-9_-])" },
		{ "{\"code\":\"1\",\"network\":\"proxy\",\"policy\":null}", NULL,
		  "'policy' must be a policy name (1-64 of [A-Za-z0-9_-])" },
		{ "{\"code\":\"1\",\"network\":\"proxy\",\"policy\":[\"a\"]}",
		  NULL, "'policy' must be a policy name (1-64 of "
		  "[A-Za-z0-9_-])" },
		{ "{\"code\":\"1\",\"policies\":[\"a\"]}", NULL, "unknown "
		  "argument 'policies' (allowed: code, language, profile, "
		  "network, policy, timeout_s, keep, files, session)" },
		/* Debug runs are the root CLI's only (runner/debug.h). */
		{ "{\"code\":\"1\",\"debug\":true}", NULL, "unknown "
		  "argument 'debug' (allowed: code, language, profile, "
		  "network, policy, timeout_s, keep, files, session)" },
	};
	char text[640], want[640];
	int runs;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		runs = f.runs;
		f.policy[0] = '\0';
		if (call(rows[i].args, text, sizeof(text)) !=
		    (rows[i].policy == NULL))
			fail_msg("row %zu: %s", i, text);
		if (rows[i].policy != NULL) {
			assert_int_equal(f.runs, runs + 1);
			assert_string_equal(f.policy, rows[i].policy);
			continue;
		}
		assert_int_equal(f.runs, runs);
		snprintf(want, sizeof(want), "Invalid arguments for run_code: "
		    "%s", rows[i].why);
		if (strcmp(text, want) != 0)
			fail_msg("row %zu: %s", i, text);
	}
	/* The runner refuses a policy the proxy does not have: an error
	 * result carrying its message. */
	f.run_rc = -EINVAL;
	f.run_err = "no egress policy 'zz' (policies: std, pypi)";
	assert_true(call("{\"code\":\"1\",\"network\":\"proxy\",\"policy\":"
	    "\"zz\"}", text, sizeof(text)));
	assert_string_equal(text, "Cordon could not run the code: no egress "
	    "policy 'zz' (policies: std, pypi)");
	assert_int_equal(f.net, RUNNER_NET_PROXY);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_schema_enum, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_schema_unavailable, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_schema_no_source, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_arguments, setup,
		    teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
