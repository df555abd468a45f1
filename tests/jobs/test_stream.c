/* Unit tests of the bounded live-output queue the front ends share
 * (jobs/stream.h): its bound, the dropped notice, a blocking consumer
 * thread and the NDJSON lines. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "jobs/stream.h"

static char *
pop_line(struct jobs_stream *s)
{
	struct jobs_stream_event *ev;
	char *line;

	if (jobs_stream_pop(s, false, &ev) != 1)
		return NULL;
	line = jobs_stream_event_line(ev);
	jobs_stream_event_free(ev);
	assert_non_null(line);
	return line;
}

static void
expect_line(struct jobs_stream *s, const char *want)
{
	char *line = pop_line(s);

	if (line == NULL || strcmp(line, want) != 0)
		fail_msg("got %s want %s", line != NULL ? line : "(none)",
		    want);
	free(line);
}

static int notified;

static void
count_notify(void *arg)
{
	(void)arg;
	notified++;
}

/* Order, encoding (any bytes give valid JSON), the bound: what does not
 * fit is dropped, counted, and announced before the next event. */
static void
test_stream_queue(void **state)
{
	struct jobs_stream *s = jobs_stream_new(2 * 64 + 100 + 64,
	    count_notify, NULL);
	char big[200];

	(void)state;
	assert_non_null(s);
	notified = 0;
	jobs_stream_output(s, 1, "hi\n", 3);
	jobs_stream_output(s, 2, "a\xff\0b\"", 5);
	assert_int_equal(notified, 2);
	expect_line(s, "{\"event\":\"stdout\",\"data\":\"hi\\n\"}\n");
	expect_line(s, "{\"event\":\"stderr\",\"data\":\"a\xef\xbf\xbd\xef"
	    "\xbf\xbd" "b\\\"\"}\n");
	assert_null(pop_line(s));
	/* 100 bytes fit (with room for a notice); 200 more do not. */
	memset(big, 'x', sizeof(big));
	jobs_stream_output(s, 1, big, 100);
	jobs_stream_output(s, 1, big, 200);
	jobs_stream_output(s, 2, big, 50);
	assert_int_equal(jobs_stream_dropped(s), 250);
	free(pop_line(s));
	jobs_stream_output(s, 1, "end", 3);
	expect_line(s, "{\"event\":\"dropped\",\"bytes\":250}\n");
	expect_line(s, "{\"event\":\"stdout\",\"data\":\"end\"}\n");
	assert_int_equal(jobs_stream_dropped(s), 250);
	/* A gap at the end is announced at close. */
	jobs_stream_output(s, 1, big, 200);
	jobs_stream_close(s);
	expect_line(s, "{\"event\":\"dropped\",\"bytes\":200}\n");
	jobs_stream_output(s, 1, "late", 4);
	assert_null(pop_line(s));
	assert_int_equal(jobs_stream_dropped(s), 450);
	jobs_stream_free(s);
}

struct consumer {
	struct jobs_stream *s;
	size_t bytes;
	int events;
};

static void *
consume(void *arg)
{
	struct consumer *c = arg;
	struct jobs_stream_event *ev;

	while (jobs_stream_pop(c->s, true, &ev) == 1) {
		c->bytes += ev->len;
		c->events++;
		jobs_stream_event_free(ev);
	}
	return NULL;
}

/* A consumer thread that blocks in pop gets everything, then ends at
 * close. */
static void
test_stream_thread(void **state)
{
	struct consumer c = { .s = jobs_stream_new(0, NULL, NULL) };
	pthread_t th;

	(void)state;
	assert_int_equal(pthread_create(&th, NULL, consume, &c), 0);
	for (int i = 0; i < 10000; i++)
		jobs_stream_output(c.s, 1 + i % 2, "0123456789", 10);
	jobs_stream_close(c.s);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(c.bytes + jobs_stream_dropped(c.s), 100000);
	assert_true(c.events > 0);
	jobs_stream_free(c.s);
}

/* The result line: "event" first, the result's fields, stream_dropped
 * only when something was. */
static void
test_stream_result_line(void **state)
{
	struct runner_result res = { .status = RUNNER_OK, .exit_code = 0,
	    .out = "42\n", .out_len = 3, .err = "", .err_len = 0 };
	char *line;
	cJSON *o;

	(void)state;
	line = jobs_stream_result_line(&res, 0);
	assert_non_null(line);
	assert_int_equal(strncmp(line, "{\"event\":\"result\",\"status\":"
	    "\"ok\",\"exit_code\":0,\"stdout\":\"42\\n\"", 56), 0);
	assert_null(strstr(line, "stream_dropped"));
	assert_int_equal(line[strlen(line) - 1], '\n');
	free(line);
	line = jobs_stream_result_line(&res, 7);
	o = cJSON_Parse(line);
	assert_non_null(o);
	assert_int_equal(cJSON_GetObjectItem(o, "stream_dropped")->valueint,
	    7);
	cJSON_Delete(o);
	free(line);
	line = jobs_stream_error_line("bad \xff");
	assert_string_equal(line, "{\"event\":\"error\",\"error\":\"bad "
	    "\xef\xbf\xbd\"}\n");
	free(line);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stream_queue),
		cmocka_unit_test(test_stream_thread),
		cmocka_unit_test(test_stream_result_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
