/*
 * Integration tests for the access log's rotation in the running daemon,
 * under a load of concurrent requests (threads of blocking clients on
 * 127.0.0.1, upstreams of the fixture on 127.0.0.2): by size
 * (--access-log-max/--access-log-keep), and from outside (rename, then
 * SIGUSR1 or SIGHUP, as logrotate does). Across all the files, the lines
 * must be exactly the requests made, each a whole JSON object.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/util.h"
#include "proxy_fixture.h"

#define THREADS 16
#define PER_THREAD 200

struct load {
	struct px *p;
	atomic_int done;		/* requests answered as expected */
	atomic_int bad;
	atomic_int running;		/* threads still going */
};

/* Half tunnels to the echo server (an "allow" line when they close),
 * half refused CONNECTs (a "deny" line at once). */
static void *
load_thread(void *arg)
{
	struct load *l = arg;
	char head[4096], auth[128], buf[8];
	int st, fd;

	for (int i = 0; i < PER_THREAD; i++) {
		bool allow = i % 2 == 0;
		snprintf(auth, sizeof(auth), "%s.cordon-test.net:%u",
		    allow ? "echo" : "denied", fx_echo_port());
		fd = px_connect(l->p, auth, &st, head, sizeof(head));
		if (allow && fd >= 0 && cli_send(fd, "ping") == 0 &&
		    cli_read_n(fd, buf, 4) == 0)
			atomic_fetch_add(&l->done, 1);
		else if (!allow && st == 403)
			atomic_fetch_add(&l->done, 1);
		else
			atomic_fetch_add(&l->bad, 1);
		if (fd >= 0)
			close(fd);
	}
	atomic_fetch_sub(&l->running, 1);
	return NULL;
}

static void
load_start(struct load *l, struct px *p, pthread_t *th)
{
	l->p = p;
	atomic_store(&l->running, THREADS);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, load_thread, l), 0);
}

static void
load_join(struct load *l, pthread_t *th)
{
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	assert_int_equal(atomic_load(&l->bad), 0);
	assert_int_equal(atomic_load(&l->done), THREADS * PER_THREAD);
}

/* Lines of one file, each a whole JSON object of one request; its size in
 * *bytes. */
static long
file_lines(const char *path, size_t *bytes)
{
	char *text = NULL, *line, *save = NULL;
	size_t len = 0;
	long n = 0;

	assert_int_equal(util_read_file(path, 64 << 20, &text, &len), 0);
	*bytes = len;
	if (len > 0 && text[len - 1] != '\n')
		fail_msg("%s ends inside a line", path);
	for (line = strtok_r(text, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		cJSON *o = cJSON_Parse(line);
		if (o == NULL || !cJSON_IsString(cJSON_GetObjectItem(o,
		    "decision")))
			fail_msg("%s: not a whole line: %.200s", path, line);
		cJSON_Delete(o);
		n++;
	}
	free(text);
	return n;
}

/* Lines in every access.log* file of p's directory (removing them all
 * but access.log itself); *nfiles and *min_rotated (smallest file other
 * than access.log) describe them. */
static long
all_lines(struct px *p, int *nfiles, size_t *min_rotated)
{
	DIR *d = opendir(p->dir);
	struct dirent *de;
	char path[600];
	size_t bytes;
	long total = 0;

	assert_non_null(d);
	*nfiles = 0;
	*min_rotated = SIZE_MAX;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "access.log", 10) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", p->dir, de->d_name);
		total += file_lines(path, &bytes);
		(*nfiles)++;
		if (strcmp(de->d_name, "access.log") != 0) {
			if (bytes < *min_rotated)
				*min_rotated = bytes;
			unlink(path);
		}
	}
	closedir(d);
	return total;
}

static void
stop_and_wait(struct px *p)
{
	/* SIGTERM drains: every connection's line is written before exit. */
	assert_int_equal(kill(p->pid, SIGTERM), 0);
	assert_int_equal(px_wait_exit(p, 20000), 0);
}

static void
test_size_rotation_under_load(void **state)
{
	static const char *const extra[] = { "--access-log-max", "16k",
	    "--access-log-keep", "200", NULL };
	struct load l = { 0 };
	pthread_t th[THREADS];
	struct px p;
	size_t min_rotated;
	long lines;
	int nfiles;
	int64_t t0;

	(void)state;
	assert_int_equal(px_start(&p, NULL, extra), 0);
	t0 = time_mono_ms();
	load_start(&l, &p, th);
	load_join(&l, th);
	stop_and_wait(&p);
	lines = all_lines(&p, &nfiles, &min_rotated);
	fprintf(stderr, "size rotation: %d requests from %d threads in %lld "
	    "ms; %ld lines in %d files (rotated ones >= %zu bytes)\n",
	    THREADS * PER_THREAD, THREADS, (long long)(time_mono_ms() - t0),
	    lines, nfiles, min_rotated);
	assert_int_equal(lines, THREADS * PER_THREAD);
	assert_true(nfiles >= 10);
	assert_true(min_rotated >= 16384);
	assert_int_equal(px_stop(&p), 0);
}

/* logrotate: rename the file, then signal; SIGUSR1 reopens only, SIGHUP
 * also reloads the allowlist. */
static void
test_outside_rotation_under_load(void **state)
{
	struct load l = { 0 };
	pthread_t th[THREADS];
	struct px p;
	char to[600];
	size_t min_rotated;
	long lines;
	int nfiles, rotations = 0;

	(void)state;
	assert_int_equal(px_start(&p, NULL, NULL), 0);
	load_start(&l, &p, th);
	while (atomic_load(&l.running) > 0) {
		snprintf(to, sizeof(to), "%s.r%d", p.accesslog, rotations);
		if (rename(p.accesslog, to) == 0) {
			assert_int_equal(kill(p.pid, rotations % 5 == 4 ?
			    SIGHUP : SIGUSR1), 0);
			rotations++;
		}
		(void)poll(NULL, 0, 25);
	}
	load_join(&l, th);
	stop_and_wait(&p);
	lines = all_lines(&p, &nfiles, &min_rotated);
	fprintf(stderr, "outside rotation: %d requests, %d renames + "
	    "SIGUSR1/SIGHUP; %ld lines in %d files\n", THREADS * PER_THREAD,
	    rotations, lines, nfiles);
	assert_int_equal(lines, THREADS * PER_THREAD);
	assert_true(rotations >= 5);
	assert_non_null(strstr(p.err, "SIGUSR1: reopening the access log"));
	assert_null(strstr(p.err, "reopen access log"));	/* no failure */
	assert_int_equal(px_stop(&p), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_size_rotation_under_load,
		    fx_test_teardown),
		cmocka_unit_test_teardown(test_outside_rotation_under_load,
		    fx_test_teardown),
	};
	return cmocka_run_group_tests(tests, fx_group_setup, fx_group_teardown);
}
