/* Unit tests of the runner's egress pieces (runner/egress.h): the control
 * client against a fake proxy control socket served by a thread of this
 * test (answers, refusals, a server that closes, a huge answer, a silent
 * one) and the request lines it sends (parsed back with proxy_ctl_parse).
 * The credential's way into the sandbox: test_egress_cred.c. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/util.h"
#include "proxy/ctl.h"
#include "runner/egress.h"

enum srv_mode { SRV_ANSWER, SRV_CLOSE, SRV_SILENT, SRV_HUGE, SRV_SPLIT };

struct srv {
	char dir[64], path[128];
	int lfd;
	pthread_t th;
	enum srv_mode mode;
	const char *answer;		/* SRV_ANSWER, SRV_SPLIT */
	size_t answer_len;
	char got[8192];			/* the request line received */
};

static struct srv S;

static void
srv_read_line(int fd)
{
	size_t n = 0;
	ssize_t r;

	S.got[0] = '\0';
	while (n < sizeof(S.got) - 1) {
		r = read(fd, S.got + n, 1);
		if (r <= 0)
			break;
		n++;
		if (S.got[n - 1] == '\n')
			break;
	}
	S.got[n] = '\0';
}

static void
srv_write(int fd, const char *p, size_t n)
{
	ssize_t w;

	while (n > 0 && (w = send(fd, p, n, MSG_NOSIGNAL)) > 0) {
		p += w;
		n -= (size_t)w;
	}
}

static void *
srv_main(void *arg)
{
	static char huge[64 * 1024];
	int fd = accept(S.lfd, NULL, NULL);

	(void)arg;
	if (fd < 0)
		return NULL;
	srv_read_line(fd);
	switch (S.mode) {
	case SRV_ANSWER:
		srv_write(fd, S.answer, S.answer_len);
		break;
	case SRV_SPLIT:
		/* One byte at a time: the client must gather the line. */
		for (size_t i = 0; i < S.answer_len; i++) {
			srv_write(fd, S.answer + i, 1);
			if (i % 7 == 0)
				(void)poll(NULL, 0, 1);
		}
		break;
	case SRV_CLOSE:
		srv_write(fd, "{\"ok\":tr", 8);
		break;
	case SRV_SILENT:
		(void)poll(NULL, 0, 1500);
		break;
	case SRV_HUGE:
		memset(huge, 'a', sizeof(huge));
		for (int i = 0; i < 20; i++)	/* 1.25 MiB, no newline */
			srv_write(fd, huge, sizeof(huge));
		break;
	}
	close(fd);
	return NULL;
}

static int
setup(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	(void)state;
	strcpy(S.dir, "/tmp/cordon-egress-test.XXXXXX");
	if (mkdtemp(S.dir) == NULL)
		return -1;
	snprintf(S.path, sizeof(S.path), "%s/control.sock", S.dir);
	memcpy(sa.sun_path, S.path, strlen(S.path) + 1);
	S.lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (S.lfd < 0 || bind(S.lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(S.lfd, 8) < 0)
		return -1;
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	close(S.lfd);
	return util_rm_rf(S.dir);
}

/* Serves one connection the way mode says. */
static void
serve(enum srv_mode mode, const char *answer)
{
	S.mode = mode;
	S.answer = answer;
	S.answer_len = answer != NULL ? strlen(answer) : 0;
	assert_int_equal(pthread_create(&S.th, NULL, srv_main, NULL), 0);
}

static void
served(void)
{
	assert_int_equal(pthread_join(S.th, NULL), 0);
}

static void
test_policies(void **state)
{
	cJSON *list = NULL;
	char err[256];

	(void)state;
	serve(SRV_SPLIT, "{\"ok\":true,\"policies\":[\"default\",\"pypi\"]}\n"
	    "{\"ignored\":1}\n");
	assert_int_equal(runner_egress_policies_at(S.path, &list, err,
	    sizeof(err)), 0);
	served();
	assert_string_equal(S.got, "{\"op\":\"policies\"}\n");
	assert_true(cJSON_IsArray(list));
	assert_int_equal(cJSON_GetArraySize(list), 2);
	assert_string_equal(cJSON_GetArrayItem(list, 1)->valuestring, "pypi");
	cJSON_Delete(list);
	/* An answer without the list is malformed. */
	serve(SRV_ANSWER, "{\"ok\":true}\n");
	assert_int_equal(runner_egress_policies_at(S.path, &list, err,
	    sizeof(err)), -EBADMSG);
	served();
	assert_null(list);
}

static void
test_policy_check(void **state)
{
	static const char ans[] = "{\"ok\":true,\"policies\":[\"default\","
	    "\"pypi\",\"github-raw\"]}\n";
	char err[256] = "";

	(void)state;
	serve(SRV_ANSWER, ans);
	assert_int_equal(runner_egress_policy_check(S.path, "pypi", err,
	    sizeof(err)), 0);
	served();
	serve(SRV_ANSWER, ans);
	assert_int_equal(runner_egress_policy_check(S.path, "x", err,
	    sizeof(err)), -EINVAL);
	served();
	assert_string_equal(err, "unknown egress policy \"x\" (policies: "
	    "default, pypi, github-raw)");
	serve(SRV_ANSWER, "{\"ok\":true,\"policies\":[]}\n");
	assert_int_equal(runner_egress_policy_check(S.path, "x", err,
	    sizeof(err)), -EINVAL);
	served();
	assert_string_equal(err, "unknown egress policy \"x\" (policies: "
	    "none)");
	/* A small err buffer is cut, never overrun. */
	serve(SRV_ANSWER, ans);
	assert_int_equal(runner_egress_policy_check(S.path, "x", err, 20),
	    -EINVAL);
	served();
	assert_int_equal(strlen(err), 19);
}

static void
test_error_answers(void **state)
{
	static const struct {
		const char *answer;
		int rc;
		const char *err;
	} rows[] = {
		{ "{\"ok\":false,\"error\":\"unknown run\"}\n", -EREMOTEIO,
		  "the proxy refused: unknown run" },
		{ "{\"ok\":false}\n", -EREMOTEIO,
		  "the proxy refused: (no reason)" },
		{ "not json\n", -EBADMSG, "the proxy's control answer is not "
		  "a JSON object with \"ok\"" },
		{ "[1,2]\n", -EBADMSG, "the proxy's control answer is not a "
		  "JSON object with \"ok\"" },
		{ "{\"ok\":1}\n", -EBADMSG, "the proxy's control answer is not "
		  "a JSON object with \"ok\"" },
		{ "{\"ok\":true}", -ECONNRESET, "the proxy closed its control "
		  "connection without an answer" },
	};
	cJSON *a;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		serve(SRV_ANSWER, rows[i].answer);
		assert_int_equal(runner_egress_call(S.path,
		    "{\"op\":\"ping\"}\n", 2000, &a, err, sizeof(err)),
		    rows[i].rc);
		served();
		assert_null(a);
		assert_string_equal(err, rows[i].err);
	}
}

static void
test_server_closes(void **state)
{
	cJSON *a;
	char err[256];

	(void)state;
	serve(SRV_CLOSE, NULL);
	assert_int_equal(runner_egress_call(S.path, "{\"op\":\"ping\"}\n",
	    2000, &a, err, sizeof(err)), -ECONNRESET);
	served();
	assert_null(a);
}

static void
test_huge_answer(void **state)
{
	size_t n = 300 * 1024;
	char *big = malloc(n + 64), err[256];
	cJSON *a;
	int64_t t0;

	(void)state;
	/* A long valid answer (a full egress report is tens of kB). */
	assert_non_null(big);
	strcpy(big, "{\"ok\":true,\"pad\":\"");
	memset(big + strlen(big), 'x', n);
	strcpy(big + 18 + n, "\"}\n");
	serve(SRV_ANSWER, big);
	assert_int_equal(runner_egress_call(S.path, "{\"op\":\"ping\"}\n",
	    2000, &a, err, sizeof(err)), 0);
	served();
	assert_int_equal(strlen(cJSON_GetObjectItem(a, "pad")->valuestring),
	    n);
	cJSON_Delete(a);
	free(big);
	/* Past the cap with no newline: refused, not buffered forever. */
	t0 = time_mono_ms();
	serve(SRV_HUGE, NULL);
	assert_int_equal(runner_egress_call(S.path, "{\"op\":\"ping\"}\n",
	    5000, &a, err, sizeof(err)), -EMSGSIZE);
	served();
	assert_null(a);
	assert_true(time_mono_ms() - t0 < 4000);
	assert_string_equal(err, "the proxy's control answer is longer than "
	    "1048576 bytes");
}

static void
test_timeout(void **state)
{
	int64_t t0 = time_mono_ms(), dt;
	cJSON *a;
	char err[256];

	(void)state;
	serve(SRV_SILENT, NULL);
	assert_int_equal(runner_egress_call(S.path, "{\"op\":\"ping\"}\n",
	    300, &a, err, sizeof(err)), -ETIMEDOUT);
	dt = time_mono_ms() - t0;
	served();
	assert_null(a);
	assert_true(dt >= 290 && dt < 1200);
	assert_string_equal(err, "the proxy did not answer on its control "
	    "socket within 300 ms");
}

static void
test_no_socket(void **state)
{
	char path[160], err[256];
	cJSON *a;

	(void)state;
	snprintf(path, sizeof(path), "%s/missing.sock", S.dir);
	assert_int_equal(runner_egress_call(path, "{\"op\":\"ping\"}\n", 500,
	    &a, err, sizeof(err)), -ENETDOWN);
	assert_null(a);
	assert_non_null(strstr(err, "run 'cordon net up'"));
	/* A file that is not a socket: nobody listens. */
	snprintf(path, sizeof(path), "%s/plain", S.dir);
	assert_int_equal(util_write_file_atomic(path, "x", 1, 0600), 0);
	assert_int_equal(runner_egress_call(path, "{\"op\":\"ping\"}\n", 500,
	    &a, err, sizeof(err)), -ECONNREFUSED);
}

static void
test_register_unregister(void **state)
{
	static const char token[] = "0123456789abcdef0123456789abcdef"
	    "0123456789abcdef0123456789abcdef";
	struct runner_egress_reg reg = { .run = "cordon-00112233445566ff",
	    .addr = "10.213.0.7", .policy = "pypi", .token = token,
	    .deadline_ms = 1764560000123, .max_conns = 32, .bytes_up = 0,
	    .bytes_down = 10485760 };
	struct proxy_ctl_req req;
	cJSON *rep = NULL;
	char err[512];

	(void)state;
	serve(SRV_ANSWER, "{\"ok\":true}\n");
	assert_int_equal(runner_egress_register(S.path, &reg, err,
	    sizeof(err)), 0);
	served();
	assert_int_equal(proxy_ctl_parse(S.got, strlen(S.got), &req, err,
	    sizeof(err)), 0);
	assert_int_equal(req.op, PROXY_CTL_REGISTER);
	assert_string_equal(req.run, reg.run);
	assert_string_equal(req.addr_text, "10.213.0.7");
	assert_string_equal(req.policy, "pypi");
	assert_string_equal(req.token, token);
	assert_int_equal(req.deadline_ms, 1764560000123);
	assert_int_equal(req.max_conns, 32);
	assert_int_equal(req.bytes_up, 0);
	assert_int_equal(req.bytes_down, 10485760);
	/* A refusal names no token. */
	serve(SRV_ANSWER, "{\"ok\":false,\"error\":\"unknown policy \\\"pypi\\\""
	    " (policies: default)\"}\n");
	assert_int_equal(runner_egress_register(S.path, &reg, err,
	    sizeof(err)), -EREMOTEIO);
	served();
	assert_null(strstr(err, token));
	assert_string_equal(err, "the proxy refused: unknown policy \"pypi\" "
	    "(policies: default)");
	/* Values the protocol refuses are never sent. */
	reg.addr = "10.213.0.999";
	assert_int_equal(runner_egress_register(S.path, &reg, err,
	    sizeof(err)), -EINVAL);
	reg.addr = "10.213.0.7";
	reg.bytes_up = 1ULL << 60;
	assert_int_equal(runner_egress_register(S.path, &reg, err,
	    sizeof(err)), -EINVAL);

	serve(SRV_ANSWER, "{\"ok\":true,\"egress\":[{\"host\":\"pypi.org\","
	    "\"port\":443,\"decision\":\"allow\",\"count\":2}],\"allowed\":2,"
	    "\"denied\":0}\n");
	assert_int_equal(runner_egress_unregister(S.path, reg.run, &rep, err,
	    sizeof(err)), 0);
	served();
	assert_string_equal(S.got, "{\"op\":\"unregister\",\"run\":"
	    "\"cordon-00112233445566ff\"}\n");
	assert_null(cJSON_GetObjectItem(rep, "ok"));
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(rep,
	    "egress")), 1);
	assert_int_equal(cJSON_GetObjectItem(rep, "allowed")->valueint, 2);
	cJSON_Delete(rep);
	serve(SRV_ANSWER, "{\"ok\":false,\"error\":\"unknown run\"}\n");
	assert_int_equal(runner_egress_unregister(S.path, reg.run, &rep, err,
	    sizeof(err)), -EREMOTEIO);
	served();
	assert_null(rep);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_policies),
		cmocka_unit_test(test_policy_check),
		cmocka_unit_test(test_error_answers),
		cmocka_unit_test(test_server_closes),
		cmocka_unit_test(test_huge_answer),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_no_socket),
		cmocka_unit_test(test_register_unregister),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
