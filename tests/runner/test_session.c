/* Sessions (runner/session.h): the result-frame parser by a table of
 * edge cases (every proper prefix of a frame asks for more; a wrong nonce,
 * kind, number form or length is refused), the request header, and the
 * whole host side against the fake docker CLI running the real driver
 * program with this host's python3 (FAKE_MODE=python): state across
 * calls, an exception, SystemExit, caps with head and tail, a timeout
 * that ends the session and removes its container, and the code never on
 * argv; and the worker's isolation: the code's process holds neither the
 * nonce nor the result stream, frames it writes (even with the real
 * nonce) on every fd it has, now or from a process it leaves behind,
 * change no later result, and a process left behind that takes a request
 * cannot answer it. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/config.h"
#include "common/util.h"
#include "runner/runner.h"
#include "runner/session.h"
/* White-box: the tests of the worker's isolation read the session's nonce,
 * sequence number and pipes. */
#include "runner/session_internal.h"
#define FAKE_DOCKER_SUITE "python"
#include "fake_docker.h"

#define NONCE "0123456789abcdef0123456789abcdef"
#define HDR(rest) "\0CSF1 " NONCE " " rest

/* A frame literal may hold NULs: its length is sizeof - 1. */
#define FRAME(s) s, sizeof(s) - 1

static void
test_frame_ok(void **state)
{
	static const char f[] = HDR("3 ok 0 2 2 3 10\n") "hiERR" "NEXT";
	struct runner_session_frame fr;

	(void)state;
	assert_int_equal(runner_session_frame_parse(f, sizeof(f) - 1, NONCE,
	    100, &fr), 0);
	assert_int_equal(fr.seq, 3);
	assert_int_equal(fr.kind, RUNNER_SESSION_OK);
	assert_int_equal(fr.exit_code, 0);
	assert_memory_equal(f + fr.out_off, "hi", 2);
	assert_int_equal(fr.out_len, 2);
	assert_int_equal(fr.out_seen, 2);
	assert_memory_equal(f + fr.err_off, "ERR", 3);
	assert_int_equal(fr.err_seen, 10);
	/* What follows the frame is not part of it. */
	assert_int_equal(fr.total, sizeof(f) - 1 - 4);
}

static void
test_frame_prefixes_want_more(void **state)
{
	static const char f[] = HDR("12 exc 1 3 3 0 0\n") "abc";
	struct runner_session_frame fr;

	(void)state;
	for (size_t n = 0; n < sizeof(f) - 1; n++)
		assert_int_equal(runner_session_frame_parse(f, n, NONCE, 100,
		    &fr), -EAGAIN);
	assert_int_equal(runner_session_frame_parse(f, sizeof(f) - 1, NONCE,
	    100, &fr), 0);
	assert_int_equal(fr.kind, RUNNER_SESSION_EXC);
	assert_int_equal(fr.exit_code, 1);
}

static void
test_frame_refused(void **state)
{
	static const struct { const char *s; size_t n; } bad[] = {
		{ FRAME("x") },
		{ FRAME("\0CSF2 ") },
		{ FRAME("\0CSF1 0123456789abcdef0123456789abcdeX") },
		{ FRAME("\0CSF1 " NONCE "x1 ok 0 0 0 0 0\n") },
		{ FRAME(HDR("1 maybe 0 0 0 0 0\n")) },
		{ FRAME(HDR("1 ok 256 0 0 0 0\n")) },
		{ FRAME(HDR("01 ok 0 0 0 0 0\n")) },
		{ FRAME(HDR("1 ok -1 0 0 0 0\n")) },
		{ FRAME(HDR("1 ok +1 0 0 0 0\n")) },
		{ FRAME(HDR("1 ok 0 0 0 0\n")) },
		{ FRAME(HDR("1 ok 0 0 0 0 0 0\n")) },
		{ FRAME(HDR("1 ok 0 0 0 0 0 \n")) },
		{ FRAME(HDR("1 ok 0  0 0 0 0\n")) },
		{ FRAME(HDR("1 ok 0 101 101 0 0\n")) },	/* over max */
		{ FRAME(HDR("1 ok 0 5 4 0 0\n")) },	/* more than seen */
		{ FRAME(HDR("1 ok 0 0 0 7 6\n")) },
		{ FRAME(HDR("0 ready 0 1 1 0 0\n")) },	/* ready carries nothing */
		{ FRAME(HDR("1 ready 0 0 0 0 0\n")) },
		{ FRAME(HDR("1 ok 0 0 99999999999999999999 0 0\n")) },
		{ FRAME(HDR("1 ok 0 0 0 0 0\r\n")) },
	};
	struct runner_session_frame fr;
	char longhdr[RUNNER_SESSION_HDR_MAX + 10];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = runner_session_frame_parse(bad[i].s, bad[i].n, NONCE,
		    100, &fr);

		if (rc != -EPROTO)
			fail_msg("row %zu: %d", i, rc);
	}
	/* No '\n' within the header's maximum. */
	memcpy(longhdr, HDR("1 ok 0 0 0 0 0"), sizeof(HDR("")) - 1);
	memset(longhdr + sizeof(HDR("")) - 1, '1', sizeof(longhdr) -
	    sizeof(HDR("")) + 1);
	assert_int_equal(runner_session_frame_parse(longhdr, sizeof(longhdr),
	    NONCE, 100, &fr), -EPROTO);
	/* A bad nonce argument. */
	assert_int_equal(runner_session_frame_parse(FRAME(HDR("0 ready 0 0 0 "
	    "0 0\n")), "short", 100, &fr), -EPROTO);
}

static void
test_frame_ready(void **state)
{
	struct runner_session_frame fr;

	(void)state;
	assert_int_equal(runner_session_frame_parse(FRAME(HDR("0 ready 0 0 0 "
	    "0 0\n")), NONCE, 0, &fr), 0);
	assert_int_equal(fr.kind, RUNNER_SESSION_READY);
	assert_int_equal(fr.total, sizeof(HDR("0 ready 0 0 0 0 0\n")) - 1);
}

static void
test_call_header(void **state)
{
	char b[64], small[8];

	(void)state;
	assert_int_equal(runner_session_call_header(b, sizeof(b), 7, 12, 5, 5),
	    9);
	assert_string_equal(b, "7 12 5 5\n");
	assert_int_equal(runner_session_call_header(small, sizeof(small), 7,
	    123456, 5, 5), -ENOSPC);
}

static int
call(struct runner_session *s, const char *code, int64_t timeout_s,
    uint64_t max_output, struct runner_result *res)
{
	struct runner_request q = { .code = code, .code_len = strlen(code),
	    .timeout_s = timeout_s, .max_output = max_output };
	char err[256];
	int rc = runner_session_call(s, &q, res, err, sizeof(err));

	if (rc < 0)
		print_message("call: %s\n", err);
	return rc;
}

/* Entries of dir (not . and ..); -1 when it cannot be read. */
static int
dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

static struct runner_session *
start(void)
{
	struct runner_session_opts o = { .label = "t.ses_1" };
	struct runner_session *s = NULL;
	char err[256];

	if (runner_session_start(&fk.cfg, &o, &s, err, sizeof(err)) < 0)
		fail_msg("start: %s", err);
	return s;
}

static void
test_state_across_calls(void **state)
{
	struct runner_session *s = start();
	struct runner_result res;
	char name[RUNNER_NAME_MAX], *log;

	(void)state;
	util_strlcpy(name, runner_session_container(s), sizeof(name));
	assert_int_equal(call(s, "x = 40 # MARKER-91c2\n", 10, 0, &res), 0);
	assert_int_equal(res.status, RUNNER_OK);
	assert_int_equal(res.exit_code, 0);
	assert_string_equal(res.out, "");
	/* A call has none of a run's steps: -1, not 0. */
	assert_int_equal(res.timing.run_ms, -1);
	assert_int_equal(res.timing.stop_ms, -1);
	runner_result_cleanup(&res);
	assert_int_equal(call(s, "x += 1\n", 10, 0, &res), 0);
	runner_result_cleanup(&res);
	assert_int_equal(call(s, "import sys\nprint(x + 1)\n"
	    "print('e', file=sys.stderr)\n", 10, 0, &res), 0);
	assert_string_equal(res.out, "42\n");
	assert_string_equal(res.err, "e\n");
	assert_string_equal(res.container, runner_session_container(s));
	/* The limits that applied: the call's timeout and output cap, the
	 * session container's memory, cpus and process limit. */
	assert_int_equal(res.limits.timeout_s, 10);
	assert_int_equal(res.limits.max_output, fk.cfg.limits.max_output_bytes);
	assert_int_equal(res.limits.memory, fk.cfg.limits.memory_bytes);
	assert_true(res.limits.cpus == fk.cfg.limits.cpus);
	assert_int_equal(res.limits.pids, fk.cfg.limits.nproc);
	runner_result_cleanup(&res);
	/* Above the maximum: refused, naming it; the session goes on. */
	{
		struct runner_request q = { .code = "1", .code_len = 1,
		    .timeout_s = fk.cfg.limits.max_timeout_s + 1 };
		char err[256];

		assert_int_equal(runner_session_call(s, &q, &res, err,
		    sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "config limits.max_timeout_s"));
		runner_result_cleanup(&res);
	}
	/* An exception: exit 1, the traceback, and the session goes on. */
	assert_int_equal(call(s, "1/0\n", 10, 0, &res), 0);
	assert_int_equal(res.status, RUNNER_OK);
	assert_int_equal(res.exit_code, 1);
	assert_non_null(strstr(res.err, "ZeroDivisionError"));
	assert_null(strstr(res.err, "exec("));	/* the driver's frame cut */
	runner_result_cleanup(&res);
	assert_int_equal(call(s, "raise SystemExit(7)\n", 10, 0, &res), 0);
	assert_int_equal(res.exit_code, 7);
	runner_result_cleanup(&res);
	/* stdin is /dev/null, not the next request. */
	assert_int_equal(call(s, "import sys\nprint(repr(sys.stdin.read()), "
	    "x)\n", 10, 0, &res), 0);
	assert_string_equal(res.out, "'' 41\n");
	runner_result_cleanup(&res);
	assert_false(runner_session_ended(s));
	log = fake_docker_log(&fk);
	assert_null(strstr(log, "MARKER-91c2"));	/* never on argv */
	assert_non_null(strstr(log, "cordon.session=t.ses_1"));
	assert_non_null(strstr(log, "--network=none"));
	free(log);
	runner_session_free(s);
	log = fake_docker_log(&fk);
	assert_true(fake_docker_removed(log, name));
	free(log);
}

static void
test_caps_head_and_tail(void **state)
{
	struct runner_session *s = start();
	struct runner_result res;

	(void)state;
	assert_int_equal(call(s, "print('H' + 'x' * 5000 + 'T')\n", 10, 100,
	    &res), 0);
	assert_int_equal(res.status, RUNNER_OUTPUT_TRUNCATED);
	assert_true(res.out_truncated);
	assert_int_equal(res.out[0], 'H');
	assert_non_null(strstr(res.out, "bytes dropped"));
	assert_non_null(strstr(res.out, "T\n"));
	runner_result_cleanup(&res);
	/* The session is fine after a flood. */
	assert_int_equal(call(s, "print('ok')\n", 10, 0, &res), 0);
	assert_string_equal(res.out, "ok\n");
	assert_false(res.out_truncated);
	runner_result_cleanup(&res);
	runner_session_free(s);
}

static void
test_timeout_ends_session(void **state)
{
	struct runner_session *s = start();
	struct runner_result res;
	char name[RUNNER_NAME_MAX], err[128], *log;
	struct runner_request q = { .code = "1", .code_len = 1 };

	(void)state;
	util_strlcpy(name, runner_session_container(s), sizeof(name));
	assert_int_equal(call(s, "import time\ntime.sleep(30)\n", 1, 0, &res),
	    0);
	assert_int_equal(res.status, RUNNER_TIMEOUT);
	assert_true(runner_session_ended(s));
	runner_result_cleanup(&res);
	log = fake_docker_log(&fk);
	assert_true(fake_docker_removed(log, name));
	free(log);
	assert_int_equal(runner_session_call(s, &q, &res, err, sizeof(err)),
	    -ESHUTDOWN);
	runner_session_free(s);
}

/* Whether needle is anywhere in pid's readable memory (its maps, read
 * through /proc/PID/mem in 1 MiB steps that overlap by the needle's
 * length): 1, 0, or -1 when none of it could be read. */
static int
mem_has(long pid, const char *needle)
{
	size_t nl = strlen(needle), cap = (size_t)1 << 20;
	char path[64], line[512], *buf = malloc(cap), *end;
	int fd, found = 0, read_any = 0;
	FILE *maps;

	snprintf(path, sizeof(path), "/proc/%ld/maps", pid);
	maps = fopen(path, "r");
	snprintf(path, sizeof(path), "/proc/%ld/mem", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	while (maps != NULL && fd >= 0 && buf != NULL && !found &&
	    fgets(line, sizeof(line), maps) != NULL) {
		unsigned long lo = strtoul(line, &end, 16), hi;

		if (*end != '-')
			continue;
		hi = strtoul(end + 1, &end, 16);
		if (*end != ' ' || end[1] != 'r')
			continue;
		for (unsigned long at = lo; at < hi && !found; at += cap - nl) {
			size_t want = hi - at < cap ? hi - at : cap;
			ssize_t n = pread(fd, buf, want, (off_t)at);

			if (n <= 0)
				break;
			read_any = 1;
			found = memmem(buf, (size_t)n, needle, nl) != NULL;
		}
	}
	if (maps != NULL)
		fclose(maps);
	if (fd >= 0)
		close(fd);
	free(buf);
	return read_any ? found : -1;
}

/* Whether pid holds an fd on the pipe that fd is an end of. */
static bool
holds_pipe(long pid, int fd)
{
	char want[64], path[320], link[128];
	struct stat st;
	struct dirent *e;
	bool found = false;
	ssize_t n;
	DIR *d;

	if (fstat(fd, &st) < 0)
		return false;
	snprintf(want, sizeof(want), "pipe:[%lu]", (unsigned long)st.st_ino);
	snprintf(path, sizeof(path), "/proc/%ld/fd", pid);
	if ((d = opendir(path)) == NULL)
		return false;
	while (!found && (e = readdir(d)) != NULL) {
		snprintf(path, sizeof(path), "/proc/%ld/fd/%s", pid, e->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n > 0) {
			link[n] = '\0';
			found = strcmp(link, want) == 0;
		}
	}
	closedir(d);
	return found;
}

/* Whether the file holds needle (a missing file holds nothing). */
static bool
file_has(const char *path, const char *needle)
{
	char *text = NULL;
	size_t len = 0;
	bool found;

	if (util_read_file(path, 1 << 20, &text, &len) < 0)
		return false;
	found = memmem(text, len, needle, strlen(needle)) != NULL;
	free(text);
	return found;
}

/* The code runs in a process that holds neither the nonce (not in its
 * memory, nor its environment) nor the result stream nor the requests;
 * the driver holds all three (which shows the checks can see them). */
static void
test_worker_holds_no_secret(void **state)
{
	struct runner_session *s = start();
	struct runner_result res;
	char path[64];
	long pid = 0, ppid = 0;

	(void)state;
	assert_int_equal(call(s, "import os\nprint(os.getpid(), "
	    "os.getppid())\n", 10, 0, &res), 0);
	assert_int_equal(sscanf(res.out, "%ld %ld", &pid, &ppid), 2);
	runner_result_cleanup(&res);
	/* The fake docker execs python: the driver is s->pid. */
	assert_int_equal(mem_has(s->pid, s->nonce), 1);
	assert_int_equal(mem_has(pid, s->nonce), 0);
	assert_int_equal(ppid, s->pid);
	assert_true(holds_pipe(s->pid, s->out_fd));
	assert_true(holds_pipe(s->pid, s->in_fd));
	assert_false(holds_pipe(pid, s->out_fd));
	assert_false(holds_pipe(pid, s->in_fd));
	snprintf(path, sizeof(path), "/proc/%ld/environ", pid);
	assert_false(file_has(path, s->nonce));
	snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
	assert_false(file_has(path, s->nonce));
	runner_session_free(s);
}

/* The forging code: whole frames saying FORGED for seqs [from, to), with
 * the session's real nonce (a stronger attacker than a real one, who
 * cannot read it), written on every fd the code has. */
static void
forge_code(char *out, size_t outlen, const struct runner_session *s,
    uint64_t from, uint64_t to, bool later)
{
	snprintf(out, outlen,
	    "import os, time\n"
	    "def forge():\n"
	    "    for seq in range(%llu, %llu):\n"
	    "        f = b'\\0CSF1 %s %%d ok 0 7 7 0 0\\nFORGED\\n' %% seq\n"
	    "        for fd in range(1024):\n"
	    "            try:\n"
	    "                os.write(fd, f)\n"
	    "            except OSError:\n"
	    "                pass\n"
	    "%s"
	    "print('done')\n", (unsigned long long)from,
	    (unsigned long long)to, s->nonce, later ?
	    /* From a process left behind, while the next call runs: it lets
	     * go of the call's stdout and stderr first, so the call ends. */
	    "if os.fork() == 0:\n"
	    "    n = os.open('/dev/null', os.O_RDWR)\n"
	    "    for fd in (0, 1, 2):\n"
	    "        os.dup2(n, fd)\n"
	    "    time.sleep(0.5)\n"
	    "    forge()\n"
	    "    os._exit(0)\n" : "forge()\n");
}

/* The next call: slow enough for the forger left behind. */
static void
assert_true_result(struct runner_session *s)
{
	struct runner_result res;

	assert_int_equal(call(s, "import time\ntime.sleep(1.5)\n"
	    "print('true')\nraise SystemExit(3)\n", 10, 0, &res), 0);
	assert_string_equal(res.out, "true\n");
	assert_string_equal(res.err, "");
	assert_int_equal(res.exit_code, 3);
	assert_int_equal(res.status, RUNNER_OK);
	assert_false(runner_session_ended(s));
	runner_result_cleanup(&res);
}

/* Frames written on every fd the code has, by the call itself or by a
 * process it leaves running into the next call, change no call's result
 * but its own output. */
static void
test_forged_frames_change_nothing(void **state)
{
	struct runner_session *s = start();
	struct runner_result res;
	char code[1024];

	(void)state;
	assert_int_equal(call(s, "x = 1\n", 10, 0, &res), 0);
	runner_result_cleanup(&res);
	/* A process left behind forges the next call's frame. */
	forge_code(code, sizeof(code), s, s->seq + 2, s->seq + 3, true);
	assert_int_equal(call(s, code, 10, 0, &res), 0);
	assert_int_equal(res.exit_code, 0);
	assert_string_equal(res.out, "done\n");
	runner_result_cleanup(&res);
	assert_true_result(s);
	/* The call forges its own frame and the next three. */
	forge_code(code, sizeof(code), s, s->seq + 1, s->seq + 5, false);
	assert_int_equal(call(s, code, 10, 0, &res), 0);
	assert_int_equal(res.exit_code, 0);
	assert_int_equal(res.status, RUNNER_OK);
	/* Its own output: the frames it wrote on fd 1 (NULs and all). */
	assert_true(res.out_len > 5 && memcmp(res.out + res.out_len - 12,
	    "FORGED\ndone\n", 12) == 0);
	runner_result_cleanup(&res);
	assert_true_result(s);
	assert_int_equal(call(s, "print(x)\n", 10, 0, &res), 0);
	assert_string_equal(res.out, "1\n");
	runner_result_cleanup(&res);
	runner_session_free(s);
}

/* A process a call leaves behind that takes the next call's request from
 * the worker's control socket and answers it cannot make that answer the
 * call's result: the status is not from the worker, the session ends. The
 * call answers its own status early and keeps the worker busy, so that
 * the process left behind is the only reader of the next request. */
static void
test_left_process_cannot_answer(void **state)
{
	struct runner_session *s = start();
	struct runner_result res;

	(void)state;
	assert_int_equal(call(s, "import os, select, socket, time\n"
	    "if os.fork() == 0:\n"
	    "    ks = []\n"
	    "    for fd in range(3, 64):\n"
	    "        try:\n"
	    "            ks.append(socket.socket(fileno=os.dup(fd)))\n"
	    "        except OSError:\n"
	    "            pass\n"
	    "    while ks:\n"
	    "        for k in select.select(ks, [], [])[0]:\n"
	    "            m, fds, _, _ = socket.recv_fds(k, 20, 3)\n"
	    "            if len(fds) == 3:\n"
	    "                os.write(fds[0], b'FORGED\\n')\n"
	    "                os.write(fds[2], b'\\nok 0\\n')\n"
	    "                os._exit(0)\n"
	    "            if not m:\n"
	    "                ks.remove(k)\n"
	    "    os._exit(0)\n"
	    "for fd in range(3, 64):\n"
	    "    try:\n"
	    "        os.write(fd, b'\\nok 0\\n')\n"
	    "    except OSError:\n"
	    "        pass\n"
	    "time.sleep(5)\n", 10, 0, &res), 0);
	assert_int_equal(res.exit_code, 0);
	assert_false(runner_session_ended(s));
	runner_result_cleanup(&res);
	assert_int_equal(call(s, "print('true')\n", 10, 0, &res), 0);
	assert_null(strstr(res.out, "FORGED"));
	assert_int_equal(res.status, RUNNER_SANDBOX_ERROR);
	assert_int_equal(res.exit_code, 125);
	assert_true(runner_session_ended(s));
	runner_result_cleanup(&res);
	runner_session_free(s);
}

static void
test_driver_exit_ends_session(void **state)
{
	struct runner_session *s = start();
	struct runner_result res;

	(void)state;
	assert_int_equal(call(s, "import os\nos._exit(5)\n", 10, 0, &res), 0);
	assert_int_equal(res.status, RUNNER_OK);
	assert_int_equal(res.exit_code, 5);
	assert_true(runner_session_ended(s));
	runner_result_cleanup(&res);
	runner_session_free(s);
}

/* A container gone between calls (its `docker run` killed, as when
 * dockerd stops): seen without a call, with why; a live one is not. */
static void
test_gone_between_calls(void **state)
{
	struct runner_session *s = start();
	struct runner_result res;
	char why[160] = "";
	long pid;
	int64_t t0;

	(void)state;
	assert_false(runner_session_gone(s, why, sizeof(why)));
	/* FAKE_MODE=python: the driver is the `docker run` process, and
	 * the code runs in the worker it forked. */
	assert_int_equal(call(s, "import os\nprint(os.getppid())\n", 10, 0,
	    &res), 0);
	pid = strtol(res.out, NULL, 10);
	runner_result_cleanup(&res);
	assert_true(pid > 1);
	assert_false(runner_session_gone(s, why, sizeof(why)));
	assert_int_equal(kill((pid_t)pid, SIGKILL), 0);
	t0 = time_mono_ms();
	while (!runner_session_gone(s, why, sizeof(why)) &&
	    time_mono_ms() - t0 < 5000)
		usleep(20000);
	assert_non_null(strstr(why, "its container is gone"));
	assert_false(runner_session_ended(s));
	runner_session_end(s);
	assert_true(runner_session_ended(s));
	assert_false(runner_session_gone(s, why, sizeof(why)));
	runner_session_free(s);
}

/* --in paths are copied under the state dir, mounted read-only at /in,
 * and removed with the session. */
static void
test_in_files(void **state)
{
	char src[PATH_MAX], staged[PATH_MAX + 64], *log;
	const char *in[1] = { src };
	struct runner_session_opts o = { .label = "t.ses_in", .in = in,
	    .nin = 1 };
	struct runner_session *s = NULL;
	char err[256];

	(void)state;
	snprintf(src, sizeof(src), "%s/data.csv", fk.dir);
	assert_int_equal(util_write_file_atomic(src, "x,1\n", 4, 0644), 0);
	if (runner_session_start(&fk.cfg, &o, &s, err, sizeof(err)) < 0)
		fail_msg("start: %s", err);
	log = fake_docker_log(&fk);
	assert_non_null(strstr(log, ",dst=/in,readonly"));
	free(log);
	snprintf(staged, sizeof(staged), "%s/in", fk.cfg.state_dir);
	assert_true(dir_entries(staged) == 1);
	runner_session_free(s);
	assert_true(dir_entries(staged) == 0);
}

/* Net proxy needs the egress network up: without it the start is refused
 * before any container exists (the proxy-mode flow itself runs against a
 * real proxy in tests/netsetup/e2e_egress.sh). */
static void
test_proxy_needs_egress(void **state)
{
	struct runner_session_opts o = { .net = RUNNER_NET_PROXY };
	struct runner_session *s = NULL;
	char err[256], *log;

	(void)state;
	assert_true(runner_session_start(&fk.cfg, &o, &s, err,
	    sizeof(err)) < 0);
	assert_null(s);
	assert_non_null(strstr(err, "cordon net up"));
	log = fake_docker_log(&fk);
	assert_null(strstr(log, "run "));
	free(log);
}

/* A policy without net proxy is refused. */
static void
test_policy_needs_proxy(void **state)
{
	struct runner_session_opts o = { .net = RUNNER_NET_NONE,
	    .policy = "default" };
	struct runner_session *s = NULL;
	char err[256];

	(void)state;
	assert_int_equal(runner_session_start(&fk.cfg, &o, &s, err,
	    sizeof(err)), -EINVAL);
	assert_null(s);
	assert_non_null(strstr(err, "only for net proxy"));
}

/* An unknown profile is refused by name. */
static void
test_unknown_profile(void **state)
{
	struct runner_session_opts o = { .profile = "nosuch" };
	struct runner_session *s = NULL;
	char err[256];

	(void)state;
	assert_int_equal(runner_session_start(&fk.cfg, &o, &s, err,
	    sizeof(err)), -EINVAL);
	assert_null(s);
	assert_non_null(strstr(err, "nosuch"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frame_ok),
		cmocka_unit_test(test_frame_prefixes_want_more),
		cmocka_unit_test(test_frame_refused),
		cmocka_unit_test(test_frame_ready),
		cmocka_unit_test(test_call_header),
		cmocka_unit_test_setup_teardown(test_state_across_calls,
		    fake_suite_setup, fake_suite_teardown),
		cmocka_unit_test_setup_teardown(test_caps_head_and_tail,
		    fake_suite_setup, fake_suite_teardown),
		cmocka_unit_test_setup_teardown(test_timeout_ends_session,
		    fake_suite_setup, fake_suite_teardown),
		cmocka_unit_test_setup_teardown(test_worker_holds_no_secret,
		    fake_suite_setup, fake_suite_teardown),
		cmocka_unit_test_setup_teardown(test_forged_frames_change_nothing,
		    fake_suite_setup, fake_suite_teardown),
		cmocka_unit_test_setup_teardown(test_left_process_cannot_answer,
		    fake_suite_setup, fake_suite_teardown),
		cmocka_unit_test_setup_teardown(test_driver_exit_ends_session,
		    fake_suite_setup, fake_suite_teardown),
		cmocka_unit_test_setup_teardown(test_gone_between_calls,
		    fake_suite_setup, fake_suite_teardown),
		cmocka_unit_test_setup_teardown(test_in_files,
		    fake_suite_setup, fake_suite_teardown),
		cmocka_unit_test_setup_teardown(test_proxy_needs_egress,
		    fake_suite_setup, fake_suite_teardown),
		cmocka_unit_test_setup_teardown(test_policy_needs_proxy,
		    fake_suite_setup, fake_suite_teardown),
		cmocka_unit_test_setup_teardown(test_unknown_profile,
		    fake_suite_setup, fake_suite_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
