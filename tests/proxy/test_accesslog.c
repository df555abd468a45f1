/* Unit tests for the access log's rotation: by size (PATH.1 .. PATH.keep,
 * the oldest dropped, lines whole), after an outside rename (reopen), a
 * rotation that fails (logged once, lines kept in the open file, on again
 * after a reopen), and the --access-log-max/--access-log-keep options. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/util.h"
#include "proxy/accesslog.h"
#include "proxy/config.h"
#include "tmpdir.h"

static char path[128];

static int
setup(void **state)
{
	if (tmpdir_setup(state) != 0)
		return -1;
	snprintf(path, sizeof(path), "%s/access.log", tmpdir);
	return 0;
}

static void
entry(struct accesslog_entry *e, long port)
{
	*e = (struct accesslog_entry){ .time_ms = time_wall_ms(),
	    .client = "127.0.0.1:5555", .method = "CONNECT",
	    .host = "a.example", .port = port, .decision = "deny",
	    .reason = "no-match", .status = 403, .duration_ms = 1,
	    .dns_ms = -1, .connect_ms = -1 };
}

/* Lines in file (each must be one JSON object with a port); adds their
 * ports' bits to seen. -1 when the file does not exist. */
static long
count_lines(const char *file, unsigned char *seen, size_t nseen,
    size_t *bytes)
{
	char *text = NULL, *line, *save = NULL;
	size_t len = 0;
	long n = 0;

	if (util_read_file(file, 64 << 20, &text, &len) < 0)
		return -1;
	if (bytes != NULL)
		*bytes = len;
	assert_true(len == 0 || text[len - 1] == '\n');
	for (line = strtok_r(text, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		cJSON *o = cJSON_Parse(line);
		cJSON *port = cJSON_GetObjectItem(o, "port");
		if (o == NULL || !cJSON_IsNumber(port))
			fail_msg("%s: not a whole line: %s", file, line);
		if (seen != NULL && port->valueint >= 0 &&
		    (size_t)port->valueint < nseen)
			seen[port->valueint]++;
		cJSON_Delete(o);
		n++;
	}
	free(text);
	return n;
}

static void
clean(void)
{
	char p[160];

	unlink(path);
	for (int i = 1; i <= 10; i++) {
		snprintf(p, sizeof(p), "%s.%d", path, i);
		(void)util_rm_rf(p);
	}
}

static void
test_rotate_by_size(void **state)
{
	static unsigned char seen[400];
	struct accesslog *al;
	struct accesslog_entry e;
	char p[160], line[2048];
	size_t bytes, linelen;
	long total = 0, n;
	(void)state;
	clean();
	memset(seen, 0, sizeof(seen));
	entry(&e, 0);
	linelen = (size_t)proxy_accesslog_format(&e, line, sizeof(line));
	assert_int_equal(proxy_accesslog_open(path, &al), 0);
	assert_int_equal(proxy_accesslog_set_rotate(al, 4096, 3), 0);
	for (int i = 0; i < 400; i++) {
		entry(&e, i);
		assert_int_equal(proxy_accesslog_write(al, &e), 0);
	}
	proxy_accesslog_free(al);
	/* Each rotated file stopped at the first line that reached 4096. */
	for (int i = 1; i <= 3; i++) {
		snprintf(p, sizeof(p), "%s.%d", path, i);
		n = count_lines(p, seen, 400, &bytes);
		assert_true(n > 0);
		assert_true(bytes >= 4096 && bytes < 4096 + linelen + 8);
		total += n;
	}
	snprintf(p, sizeof(p), "%s.4", path);
	assert_int_equal(count_lines(p, NULL, 0, NULL), -1);	/* dropped */
	n = count_lines(path, seen, 400, &bytes);
	assert_true(n >= 0 && bytes < 4096);
	total += n;
	/* The newest lines are all there, each once; older ones dropped
	 * whole (never half a line anywhere). */
	for (long i = 400 - total; i < 400; i++)
		assert_int_equal(seen[i], 1);
	for (long i = 0; i < 400 - total; i++)
		assert_int_equal(seen[i], 0);
}

/* logrotate's way: rename, then reopen; the lines before the reopen land
 * in the renamed file, none lost. A size count restarts from the new
 * file's size. */
static void
test_reopen_after_rename(void **state)
{
	struct accesslog *al;
	struct accesslog_entry e;
	char p[160];
	(void)state;
	clean();
	assert_int_equal(proxy_accesslog_open(path, &al), 0);
	entry(&e, 1);
	assert_int_equal(proxy_accesslog_write(al, &e), 0);
	snprintf(p, sizeof(p), "%s.1", path);
	assert_int_equal(rename(path, p), 0);
	assert_int_equal(proxy_accesslog_write(al, &e), 0);
	assert_int_equal(proxy_accesslog_reopen(al), 0);
	assert_int_equal(proxy_accesslog_write(al, &e), 0);
	proxy_accesslog_free(al);
	assert_int_equal(count_lines(p, NULL, 0, NULL), 2);
	assert_int_equal(count_lines(path, NULL, 0, NULL), 1);
}

/* PATH.1 cannot be replaced (a directory there): the rotation fails once,
 * lines go on into the open file, and a reopen turns rotation on again. */
static void
test_rotation_failure(void **state)
{
	struct accesslog *al;
	struct accesslog_entry e;
	char p[160];
	(void)state;
	clean();
	snprintf(p, sizeof(p), "%s.1", path);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s.1/x", path);
	assert_int_equal(util_write_file_atomic(p, "x", 1, 0644), 0);
	assert_int_equal(proxy_accesslog_open(path, &al), 0);
	assert_int_equal(proxy_accesslog_set_rotate(al, 4096, 1), 0);
	for (int i = 0; i < 60; i++) {
		entry(&e, i);
		assert_int_equal(proxy_accesslog_write(al, &e), 0);
	}
	assert_int_equal(count_lines(path, NULL, 0, NULL), 60);
	snprintf(p, sizeof(p), "%s.1", path);
	assert_int_equal(util_rm_rf(p), 0);
	assert_int_equal(proxy_accesslog_reopen(al), 0);
	assert_int_equal(proxy_accesslog_write(al, &e), 0);
	proxy_accesslog_free(al);
	assert_int_equal(count_lines(p, NULL, 0, NULL), 61);
	assert_int_equal(count_lines(path, NULL, 0, NULL), 0);
}

static void
test_set_rotate_refusals(void **state)
{
	struct accesslog *al;
	(void)state;
	assert_int_equal(proxy_accesslog_open("-", &al), 0);
	assert_int_equal(proxy_accesslog_set_rotate(al, 4096, 3), -EINVAL);
	proxy_accesslog_free(al);
	clean();
	assert_int_equal(proxy_accesslog_open(path, &al), 0);
	assert_int_equal(proxy_accesslog_set_rotate(al, 4096, 0), -EINVAL);
	assert_int_equal(proxy_accesslog_set_rotate(al, 4096,
	    PROXY_ACCESSLOG_KEEP_MAX + 1), -EINVAL);
	proxy_accesslog_free(al);
}

static int
parse(struct proxy_config *c, const char *const *args)
{
	char *argv[16], err[256] = "";
	int argc = 0, rc;

	argv[argc++] = (char *)"cordon-proxy";
	argv[argc++] = (char *)"--listen";
	argv[argc++] = (char *)"127.0.0.1:0";
	argv[argc++] = (char *)"--allowlist";
	argv[argc++] = (char *)"x";
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
test_options(void **state)
{
	static const char *const good[] = { "--access-log", "/tmp/a.log",
	    "--access-log-max", "64m", "--access-log-keep", "7", NULL };
	static const char *const bad[][7] = {
		{ "--access-log-max", "1m", NULL },	/* no file */
		{ "--access-log", "-", "--access-log-max", "1m", NULL },
		{ "--access-log", "f", "--access-log-max", "1k", NULL },
		{ "--access-log", "f", "--access-log-max", "lots", NULL },
		{ "--access-log", "f", "--access-log-keep", "0", NULL },
		{ "--access-log", "f", "--access-log-keep", "1001", NULL },
	};
	struct proxy_config c;
	(void)state;
	assert_int_equal(parse(&c, good), 0);
	assert_int_equal(c.access_log_max, 64ULL << 20);
	assert_int_equal(c.access_log_keep, 7);
	assert_int_equal(parse(&c, (const char *const[]){ NULL }), 0);
	assert_int_equal(c.access_log_max, 0);
	assert_int_equal(c.access_log_keep, 5);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (parse(&c, bad[i]) != -EINVAL)
			fail_msg("row %zu accepted", i);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rotate_by_size),
		cmocka_unit_test(test_reopen_after_rename),
		cmocka_unit_test(test_rotation_failure),
		cmocka_unit_test(test_set_rotate_refusals),
		cmocka_unit_test(test_options),
	};
	return cmocka_run_group_tests(tests, setup, tmpdir_teardown);
}
