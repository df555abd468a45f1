/* run_code's `session` argument (mcp/sessions.c) against the fake docker
 * CLI running the real session driver with this host's python3
 * (tests/runner/fake-docker.sh, FAKE_MODE=python): state across calls of
 * one name, names kept apart, session_new/session_ended in the result, a
 * timeout that ends the session so the next call starts afresh, bad
 * arguments, every container removed when the server (the connection) is
 * freed, and the idle time and lifetime that end a session before; a
 * name started afresh says why its session before ended. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "mcp/mcp.h"
#define FAKE_DOCKER_SUITE "python"
#include "fake_docker.h"

#define INIT "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\"," \
	"\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{}," \
	"\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}"

static int
never_run(const struct config *c, const struct runner_request *req,
    struct runner_result *res, char *err, size_t errlen, void *arg)
{
	(void)c; (void)req; (void)res; (void)arg;
	snprintf(err, errlen, "a session's call went to the run function");
	return -EIO;
}

/* The structuredContent of a tools/call reply (caller deletes the
 * returned root); *sc NULL for an error result. */
static cJSON *
call(struct mcp_server *s, const char *args, const cJSON **sc, bool *error)
{
	char msg[2048], *reply = NULL;
	cJSON *root, *result;

	snprintf(msg, sizeof(msg), "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":"
	    "\"tools/call\",\"params\":{\"name\":\"run_code\",\"arguments\":"
	    "%s}}", args);
	assert_int_equal(mcp_handle(s, msg, strlen(msg), &reply), 0);
	assert_non_null(reply);
	root = cJSON_Parse(reply);
	free(reply);
	assert_non_null(root);
	result = cJSON_GetObjectItem(root, "result");
	assert_non_null(result);
	*error = cJSON_IsTrue(cJSON_GetObjectItem(result, "isError"));
	*sc = cJSON_GetObjectItem(result, "structuredContent");
	return root;
}

static const char *
str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItem(o, k);

	return cJSON_IsString(v) ? v->valuestring : "";
}

/* The first text block of a tools/call reply. */
static const char *
text(const cJSON *root)
{
	const cJSON *c = cJSON_GetObjectItem(cJSON_GetObjectItem(root,
	    "result"), "content");
	const cJSON *t = cJSON_GetObjectItem(cJSON_GetArrayItem(c, 0), "text");

	return cJSON_IsString(t) ? t->valuestring : "";
}

static bool
flag(const cJSON *o, const char *k)
{
	return cJSON_IsTrue(cJSON_GetObjectItem(o, k));
}

/* A server over the fake docker, initialized. */
static struct mcp_server *
server(void)
{
	struct mcp_server_opts o = { .config = &fk.cfg, .run = never_run };
	struct mcp_server *s;
	char *reply = NULL;

	assert_int_equal(mcp_server_new(&o, &s), 0);
	assert_int_equal(mcp_handle(s, INIT, strlen(INIT), &reply), 0);
	free(reply);
	return s;
}

/* The run_code tool's text (tools/list) holds want. */
static void
tool_says(struct mcp_server *s, const char *want)
{
	const char *list = "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":"
	    "\"tools/list\"}";
	char *reply = NULL;

	assert_int_equal(mcp_handle(s, list, strlen(list), &reply), 0);
	assert_non_null(reply);
	assert_non_null(strstr(reply, want));
	free(reply);
}

static void
test_sessions(void **state)
{
	struct mcp_server *s;
	const cJSON *sc;
	char ctr[64], ctr2[64], ctr3[64], *log;
	cJSON *root;
	bool error;

	(void)state;
	s = server();

	root = call(s, "{\"code\":\"x = 20\",\"session\":\"a\"}", &sc, &error);
	assert_false(error);
	assert_string_equal(str(sc, "session"), "a");
	assert_true(flag(sc, "session_new"));
	assert_false(flag(sc, "session_ended"));
	util_strlcpy(ctr, str(sc, "container"), sizeof(ctr));
	cJSON_Delete(root);
	root = call(s, "{\"code\":\"x = 1\",\"session\":\"b\"}", &sc, &error);
	util_strlcpy(ctr2, str(sc, "container"), sizeof(ctr2));
	assert_string_not_equal(ctr, ctr2);
	cJSON_Delete(root);
	root = call(s, "{\"code\":\"x += 1\\nprint(x * 2)\",\"session\":\"a\"}",
	    &sc, &error);
	assert_false(error);
	assert_string_equal(str(sc, "stdout"), "42\n");
	assert_false(flag(sc, "session_new"));
	assert_string_equal(str(sc, "container"), ctr);
	cJSON_Delete(root);

	/* A timeout ends "a"; the next call starts a fresh one. */
	root = call(s, "{\"code\":\"import time\\ntime.sleep(20)\","
	    "\"session\":\"a\",\"timeout_s\":1}", &sc, &error);
	assert_true(error);
	assert_string_equal(str(sc, "status"), "timeout");
	assert_true(flag(sc, "session_ended"));
	cJSON_Delete(root);
	root = call(s, "{\"code\":\"print('x' in globals())\",\"session\":"
	    "\"a\"}", &sc, &error);
	assert_string_equal(str(sc, "stdout"), "False\n");
	assert_true(flag(sc, "session_new"));
	util_strlcpy(ctr, str(sc, "container"), sizeof(ctr));
	cJSON_Delete(root);

	/* Bad arguments. */
	root = call(s, "{\"code\":\"1\",\"session\":\"a b\"}", &sc, &error);
	assert_true(error);
	assert_null(sc);
	cJSON_Delete(root);
	/* A later call may not change the session's settings. */
	root = call(s, "{\"code\":\"1\",\"session\":\"a\",\"network\":"
	    "\"proxy\"}", &sc, &error);
	assert_true(error);
	assert_non_null(strstr(text(root), "may not name others"));
	cJSON_Delete(root);
	root = call(s, "{\"code\":\"1\",\"session\":\"a\",\"profile\":"
	    "\"data\"}", &sc, &error);
	assert_true(error);
	assert_non_null(strstr(text(root), "may not name others"));
	cJSON_Delete(root);
	/* The same settings named explicitly are the session's own. */
	root = call(s, "{\"code\":\"print(2)\",\"session\":\"a\","
	    "\"network\":\"none\",\"profile\":\"minimal\"}", &sc, &error);
	assert_false(error);
	assert_string_equal(str(sc, "stdout"), "2\n");
	assert_false(flag(sc, "session_new"));
	cJSON_Delete(root);
	root = call(s, "{\"code\":\"1\",\"session\":\"a\",\"language\":"
	    "\"bash\"}", &sc, &error);
	assert_true(error);
	cJSON_Delete(root);
	/* files: only with the call that starts a session; then at /in. */
	root = call(s, "{\"code\":\"1\",\"session\":\"a\",\"files\":"
	    "[{\"path\":\"x.csv\",\"content\":\"1,2\\n\"}]}", &sc, &error);
	assert_true(error);
	assert_non_null(strstr(text(root), "only with the call that starts"));
	cJSON_Delete(root);
	root = call(s, "{\"code\":\"print(3)\",\"session\":\"c\",\"files\":"
	    "[{\"path\":\"x.csv\",\"content\":\"1,2\\n\"}]}", &sc, &error);
	assert_false(error);
	assert_true(flag(sc, "session_new"));
	util_strlcpy(ctr3, str(sc, "container"), sizeof(ctr3));
	cJSON_Delete(root);
	log = fake_docker_log(&fk);
	assert_non_null(strstr(log, ",dst=/in,readonly"));
	free(log);

	/* Closing the connection ends every session. */
	mcp_server_free(s);
	log = fake_docker_log(&fk);
	assert_true(fake_docker_removed(log, ctr));
	assert_true(fake_docker_removed(log, ctr2));
	assert_true(fake_docker_removed(log, ctr3));
	free(log);
}

static void
test_limit(void **state)
{
	struct mcp_server *s;
	const cJSON *sc;
	char args[128];
	cJSON *root;
	bool error;

	(void)state;
	fk.cfg.serve.sessions_per_tenant = 2;
	s = server();
	for (int i = 0; i < 3; i++) {
		snprintf(args, sizeof(args), "{\"code\":\"1\",\"session\":"
		    "\"s%d\"}", i);
		root = call(s, args, &sc, &error);
		assert_int_equal(error, i == 2);
		if (i == 2) {
			char *t = cJSON_PrintUnformatted(root);

			assert_non_null(strstr(t, "its limit"));
			free(t);
		}
		cJSON_Delete(root);
	}
	mcp_server_free(s);
}

/* A session unused for mcp.session_idle_s ends on its own (its container
 * removed), not before; the next call with its name starts afresh. */
static void
test_idle(void **state)
{
	struct mcp_server *s;
	const cJSON *sc;
	char ctr[64], *log = NULL;
	cJSON *root;
	bool error, gone = false;

	(void)state;
	fk.cfg.mcp.session_idle_s = 2;
	s = server();
	root = call(s, "{\"code\":\"x = 1\",\"session\":\"a\"}", &sc, &error);
	assert_false(error);
	assert_true(flag(sc, "session_new"));
	util_strlcpy(ctr, str(sc, "container"), sizeof(ctr));
	cJSON_Delete(root);
	/* The tool says when a session ends on its own, as configured. */
	tool_says(s, "unused for 2 s, or it is 3600 s old");
	/* Not before its idle time... */
	usleep(500 * 1000);
	log = fake_docker_log(&fk);
	assert_false(fake_docker_removed(log, ctr));
	free(log);
	log = NULL;
	/* ... then soon (within 30 s here: the machine may be loaded). */
	for (int i = 0; i < 600 && !gone; i++) {
		usleep(50 * 1000);
		free(log);
		log = fake_docker_log(&fk);
		gone = fake_docker_removed(log, ctr);
	}
	free(log);
	assert_true(gone);
	root = call(s, "{\"code\":\"print('x' in globals())\",\"session\":"
	    "\"a\"}", &sc, &error);
	assert_false(error);
	assert_string_equal(str(sc, "stdout"), "False\n");
	assert_true(flag(sc, "session_new"));
	assert_string_not_equal(str(sc, "container"), ctr);
	cJSON_Delete(root);
	mcp_server_free(s);
}

/* A call that starts a name afresh says why its session before ended
 * (session_previous_end), the latest end when the name ended twice; a
 * first start, and a call in a live session, say nothing of it. */
static void
test_previous_end(void **state)
{
	struct mcp_server *s;
	const cJSON *sc;
	char ctr[64], *log = NULL;
	cJSON *root;
	bool error, gone = false;

	(void)state;
	fk.cfg.mcp.session_idle_s = 2;
	s = server();
	root = call(s, "{\"code\":\"x = 1\",\"session\":\"a\"}", &sc, &error);
	assert_true(flag(sc, "session_new"));
	assert_null(cJSON_GetObjectItem(sc, "session_previous_end"));
	cJSON_Delete(root);
	/* Its call's timeout ends it. */
	root = call(s, "{\"code\":\"import time\\ntime.sleep(20)\","
	    "\"session\":\"a\",\"timeout_s\":1}", &sc, &error);
	assert_true(flag(sc, "session_ended"));
	assert_null(cJSON_GetObjectItem(sc, "session_previous_end"));
	cJSON_Delete(root);
	root = call(s, "{\"code\":\"x = 2\",\"session\":\"a\"}", &sc, &error);
	assert_false(error);
	assert_true(flag(sc, "session_new"));
	assert_string_equal(str(sc, "session_previous_end"), "timeout");
	util_strlcpy(ctr, str(sc, "container"), sizeof(ctr));
	cJSON_Delete(root);
	root = call(s, "{\"code\":\"print(x)\",\"session\":\"a\"}", &sc,
	    &error);
	assert_false(flag(sc, "session_new"));
	assert_null(cJSON_GetObjectItem(sc, "session_previous_end"));
	cJSON_Delete(root);
	/* Then its idle time ends the new one: that is the why now. */
	for (int i = 0; i < 600 && !gone; i++) {
		usleep(50 * 1000);
		free(log);
		log = fake_docker_log(&fk);
		gone = fake_docker_removed(log, ctr);
	}
	free(log);
	assert_true(gone);
	root = call(s, "{\"code\":\"1\",\"session\":\"a\"}", &sc, &error);
	assert_true(flag(sc, "session_new"));
	assert_string_equal(str(sc, "session_previous_end"), "idle timeout");
	cJSON_Delete(root);
	/* Another name's end is not this one's. */
	root = call(s, "{\"code\":\"1\",\"session\":\"b\"}", &sc, &error);
	assert_true(flag(sc, "session_new"));
	assert_null(cJSON_GetObjectItem(sc, "session_previous_end"));
	cJSON_Delete(root);
	mcp_server_free(s);
}

/* mcp.session_life_s ends a session even in a call: the call is cancelled
 * and says its session ended. */
static void
test_lifetime(void **state)
{
	struct mcp_server *s;
	const cJSON *sc;
	char ctr[64], *log;
	cJSON *root;
	bool error;

	(void)state;
	fk.cfg.mcp.session_idle_s = 0;
	fk.cfg.mcp.session_life_s = 2;
	s = server();
	tool_says(s, "ends when it is 2 s old");
	root = call(s, "{\"code\":\"import time\\ntime.sleep(30)\","
	    "\"session\":\"a\",\"timeout_s\":60}", &sc, &error);
	assert_true(error);
	assert_true(flag(sc, "session_new"));
	assert_true(flag(sc, "session_ended"));
	assert_string_not_equal(str(sc, "status"), "ok");
	util_strlcpy(ctr, str(sc, "container"), sizeof(ctr));
	cJSON_Delete(root);
	log = fake_docker_log(&fk);
	assert_true(fake_docker_removed(log, ctr));
	free(log);
	/* The next call with its name is told why (not the cancelled
	 * call's status). */
	root = call(s, "{\"code\":\"1\",\"session\":\"a\"}", &sc, &error);
	assert_true(flag(sc, "session_new"));
	assert_string_equal(str(sc, "session_previous_end"), "max lifetime");
	cJSON_Delete(root);
	mcp_server_free(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sessions,
		    fake_suite_setup, fake_suite_teardown),
		cmocka_unit_test_setup_teardown(test_limit,
		    fake_suite_setup, fake_suite_teardown),
		cmocka_unit_test_setup_teardown(test_idle,
		    fake_suite_setup, fake_suite_teardown),
		cmocka_unit_test_setup_teardown(test_lifetime,
		    fake_suite_setup, fake_suite_teardown),
		cmocka_unit_test_setup_teardown(test_previous_end,
		    fake_suite_setup, fake_suite_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
