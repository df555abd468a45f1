/* Unit tests of the credential's way into the sandbox (runner/egress.h):
 * the credential line's fixed-length format, the container's stdin layout,
 * and the prelude that reads the line, run by the host's python3: lines
 * from the writer round-trip, short reads are waited for, and a line of
 * any other length or shape is refused before the job's code runs. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/proc.h"
#include "runner/egress.h"

static const char token[] = "00112233445566778899aabbccddeeff";
static const char url[] = "http://cordon-0011223344556677:"
    "00112233445566778899aabbccddeeff@10.213.0.1:3128";

/* buf (RUNNER_EGRESS_CRED_LEN + 1 bytes): the writer's line for url. */
static void
cred_make(char *buf)
{
	struct netsetup_endpoint ep = { "10.213.0.1", 3128, "" };

	assert_int_equal(runner_egress_cred_line(buf,
	    RUNNER_EGRESS_CRED_LEN + 1, "cordon-0011223344556677", token,
	    &ep), 0);
}

static void
test_cred_line(void **state)
{
	struct netsetup_endpoint ep = { "10.213.0.1", 3128, "" };
	char buf[RUNNER_EGRESS_CRED_LEN + 1], want[RUNNER_EGRESS_CRED_LEN + 1];
	char run[65], tok[129];

	(void)state;
	/* The URL, spaces, '\n' as the last of exactly CRED_LEN bytes. */
	cred_make(buf);
	memset(want, ' ', sizeof(want));
	memcpy(want, url, strlen(url));
	want[RUNNER_EGRESS_CRED_LEN - 1] = '\n';
	want[RUNNER_EGRESS_CRED_LEN] = '\0';
	assert_int_equal(strlen(buf), RUNNER_EGRESS_CRED_LEN);
	assert_string_equal(buf, want);
	/* The longest URL proxy/cred.h and netsetup.h allow still fits. */
	memset(run, 'r', 64);
	run[64] = '\0';
	memset(tok, 'f', 128);
	tok[128] = '\0';
	struct netsetup_endpoint big = { "255.255.255.255", 65535, "" };
	assert_int_equal(runner_egress_cred_line(buf, sizeof(buf), run, tok,
	    &big), 0);
	assert_int_equal(strlen(buf), RUNNER_EGRESS_CRED_LEN);
	assert_int_equal(buf[RUNNER_EGRESS_CRED_LEN - 2], ' ');
	assert_int_equal(buf[RUNNER_EGRESS_CRED_LEN - 1], '\n');
	/* The rules of proxy/cred.h: no ':' '@' or '/' can get in. */
	assert_int_equal(runner_egress_cred_line(buf, sizeof(buf), "a:b",
	    token, &ep), -EINVAL);
	assert_int_equal(runner_egress_cred_line(buf, sizeof(buf), "a@b",
	    token, &ep), -EINVAL);
	assert_int_equal(runner_egress_cred_line(buf, sizeof(buf), "run",
	    "00112233445566778899AABBCCDDEEFF", &ep), -EINVAL);
	assert_int_equal(runner_egress_cred_line(buf, sizeof(buf), "run",
	    "0011", &ep), -EINVAL);
	assert_int_equal(runner_egress_cred_line(buf, sizeof(buf), "run",
	    token, NULL), -EINVAL);
	ep.port = 0;
	assert_int_equal(runner_egress_cred_line(buf, sizeof(buf), "run",
	    token, &ep), -EINVAL);
	ep.port = 3128;
	/* A buffer that cannot hold the whole padded line. */
	assert_int_equal(runner_egress_cred_line(buf, 40, "run", token, &ep),
	    -ENOSPC);
	assert_string_equal(buf, "");
	assert_int_equal(runner_egress_cred_line(buf, RUNNER_EGRESS_CRED_LEN,
	    "run", token, &ep), -ENOSPC);
	assert_string_equal(buf, "");
}

static void
test_stdin_layout(void **state)
{
	static const struct {
		const char *cred, *nonce, *code, *want;
	} rows[] = {
		{ NULL, NULL, "print(1)\n", "print(1)\n" },
		{ NULL, "n0nce", "print(1)\n", "n0nce\nprint(1)\n" },
		{ "http://r:t@gw:1\n", NULL, "print(1)\n",
		  "http://r:t@gw:1\nprint(1)\n" },
		{ "http://r:t@gw:1\n", "n0nce", "print(1)\n",
		  "http://r:t@gw:1\nn0nce\nprint(1)\n" },
		{ "http://r:t@gw:1\n", "n0nce", "", "http://r:t@gw:1\nn0nce\n" },
		{ NULL, NULL, "", "" },
	};
	unsigned char *b;
	size_t n;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		assert_int_equal(runner_egress_stdin(rows[i].cred,
		    rows[i].nonce, rows[i].code, strlen(rows[i].code), &b,
		    &n), 0);
		assert_int_equal(n, strlen(rows[i].want));
		assert_memory_equal(b, rows[i].want, n);
		free(b);
	}
}

/* Runs the prelude with python3 -I and args after it, stdin in. */
static int
run_prelude(const char *const *args, const char *in, struct proc_result *r)
{
	const char *argv[12] = { "python3", "-I", "-c",
	    runner_egress_prelude };
	size_t n = 4;

	for (size_t i = 0; args[i] != NULL && n < 11; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	struct proc_opts o = { .argv = argv, .stdin_data = in,
	    .stdin_len = strlen(in), .stdout_max = 65536,
	    .stderr_max = 65536 };
	return proc_run(&o, 20000, r);
}

/* The prelude refuses in: exit 1, its message, and the job never ran. */
static void
assert_refused(const char *in, const char *what)
{
	const char *dash[] = { "-", NULL };
	struct proc_result r;

	assert_int_equal(run_prelude(dash, in, &r), 0);
	if (r.exit_code != 1 || strcmp(cbuf_data(r.out), "") != 0 ||
	    strstr(cbuf_data(r.err), "no proxy settings") == NULL)
		fail_msg("%s: exit %d, out [%s], err [%s]", what, r.exit_code,
		    cbuf_data(r.out), cbuf_data(r.err));
	proc_result_cleanup(&r);
}

static void
test_prelude(void **state)
{
	/* What the job sees: its stdin untouched after the line, the four
	 * variables, python's -I flags, argv as without the prelude. */
	static const char job[] = "import os,sys\n"
	    "print(sorted(set(os.environ[k] for k in ('HTTP_PROXY',"
	    "'HTTPS_PROXY','http_proxy','https_proxy'))))\n"
	    "print(sys.flags.isolated, sys.argv)\n"
	    "print(repr(sys.stdin.read()))\n";
	const char *c_args[] = { "-c", job, "7", NULL };
	const char *dash[] = { "-", NULL };
	char in[1024], want[512];
	struct proc_result r;

	(void)state;
	cred_make(in);
	strcat(in, "n0nce\nrest of stdin");
	assert_int_equal(run_prelude(c_args, in, &r), 0);
	assert_int_equal(r.exit_code, 0);
	snprintf(want, sizeof(want), "['%s']\n1 ['-c', '7']\n"
	    "'n0nce\\nrest of stdin'\n", url);
	assert_string_equal(cbuf_data(r.out), want);
	proc_result_cleanup(&r);
	/* "-": the code itself follows the line. */
	cred_make(in);
	strcat(in, "import os,sys\nprint(os.environ['https_proxy'], "
	    "sys.argv)\n");
	assert_int_equal(run_prelude(dash, in, &r), 0);
	assert_int_equal(r.exit_code, 0);
	snprintf(want, sizeof(want), "%s ['-']\n", url);
	assert_string_equal(cbuf_data(r.out), want);
	proc_result_cleanup(&r);
}

/* Any line but the writer's exact length and shape: refused, and the
 * code after it never runs (each job would print "ran"). */
static void
test_prelude_refuses(void **state)
{
	static const char code[] = "print('ran')\n"
	    "#.........................................................\n"
	    "#.........................................................\n"
	    "#.........................................................\n"
	    "#.........................................................\n"
	    "#.........................................................\n";
	char line[RUNNER_EGRESS_CRED_LEN + 1], in[1024];
	size_t n;

	(void)state;
	/* The old unpadded line: its '\n' comes early. */
	snprintf(in, sizeof(in), "%s\n%s", url, code);
	assert_refused(in, "unpadded");
	/* One byte short: the line's '\n' is byte CRED_LEN - 1. */
	cred_make(line);
	n = strlen(line);
	memmove(line + n - 2, "\n", 2);
	snprintf(in, sizeof(in), "%s%s", line, code);
	assert_refused(in, "one byte short");
	/* One byte long: byte CRED_LEN is a space, the '\n' after it. */
	cred_make(line);
	line[n - 1] = ' ';
	snprintf(in, sizeof(in), "%s\n%s", line, code);
	assert_refused(in, "one byte long");
	/* EOF inside the line, the old line alone, and no input at all. */
	cred_make(line);
	line[100] = '\0';
	assert_refused(line, "cut at 100 bytes");
	snprintf(in, sizeof(in), "%s\n", url);
	assert_refused(in, "unpadded, then EOF");
	assert_refused("", "empty stdin");
	/* Right length, wrong shape: all spaces, a space inside the URL,
	 * a '\n' inside the URL or the padding. */
	memset(line, ' ', n - 1);
	line[n - 1] = '\n';
	line[n] = '\0';
	snprintf(in, sizeof(in), "%s%s", line, code);
	assert_refused(in, "all spaces");
	cred_make(line);
	line[10] = ' ';
	snprintf(in, sizeof(in), "%s%s", line, code);
	assert_refused(in, "space in the URL");
	cred_make(line);
	line[10] = '\n';
	snprintf(in, sizeof(in), "%s%s", line, code);
	assert_refused(in, "newline in the URL");
	cred_make(line);
	line[200] = '\n';
	snprintf(in, sizeof(in), "%s%s", line, code);
	assert_refused(in, "newline in the padding");
}

/* The line arriving in small pieces (a pipe's short reads): the prelude
 * waits for all of it. A python parent feeds the prelude its own stdin
 * 7 bytes per write, each only once the pipe is empty again (FIONREAD on
 * its end), so every read the prelude makes returns at most 7 bytes. */
static void
test_prelude_short_reads(void **state)
{
	static const char feeder[] = "import fcntl,subprocess,sys,termios,"
	    "time,array\n"
	    "d=sys.stdin.buffer.read()\n"
	    "p=subprocess.Popen(sys.argv[1:],stdin=subprocess.PIPE,bufsize=0)\n"
	    "def queued():\n"
	    " a=array.array('i',[0]);fcntl.ioctl(p.stdin,termios.FIONREAD,a)\n"
	    " return a[0]\n"
	    "try:\n"
	    " for i in range(0,len(d),7):\n"
	    "  p.stdin.write(d[i:i+7]);t=time.monotonic()+10\n"
	    "  while queued() and time.monotonic()<t:time.sleep(0.001)\n"
	    " p.stdin.close()\n"
	    "except BrokenPipeError:pass\n"
	    "sys.exit(p.wait())\n";
	const char *argv[] = { "python3", "-I", "-c", feeder, "python3", "-I",
	    "-c", runner_egress_prelude, "-", NULL };
	char in[1024], want[512];
	struct proc_result r;

	(void)state;
	cred_make(in);
	strcat(in, "import os\nprint(os.environ['HTTPS_PROXY'])\n");
	struct proc_opts o = { .argv = argv, .stdin_data = in,
	    .stdin_len = strlen(in), .stdout_max = 65536,
	    .stderr_max = 65536 };
	assert_int_equal(proc_run(&o, 20000, &r), 0);
	snprintf(want, sizeof(want), "%s\n", url);
	if (r.exit_code != 0 || strcmp(cbuf_data(r.out), want) != 0)
		fail_msg("exit %d, out [%s], err [%s]", r.exit_code,
		    cbuf_data(r.out), cbuf_data(r.err));
	proc_result_cleanup(&r);
}

/* A python job through the prelude runs as under python3 -I - itself:
 * the same output, errors (tracebacks without the prelude's frame, a
 * syntax error, chained exceptions) and exit status. */
static void
test_prelude_as_python(void **state)
{
	static const char *const jobs[] = {
		"print(sorted(dir()))\n"
		"import sys,__main__\n"
		"print(sys.argv, sys.orig_argv[1:], __name__, __file__, "
		"__cached__, __doc__, __spec__, __loader__, __package__, "
		"__annotations__, type(__builtins__), sorted(vars(__main__)))\n",
		"def f(): 1/0\nf()\n",
		"x=\n",
		"import sys; sys.exit(3)\n",
		"raise SystemExit('bye')\n",
		"import pickle\nclass A: pass\n"
		"print(len(pickle.dumps(A())) > 0)\n"
		"import __main__; print(__main__.A is A)\n",
		"try:\n    1/0\nexcept Exception as e:\n"
		"    raise ValueError('v') from e\n",
		"import sys; print(repr(sys.stdin.read()))\n",
		"import sys\n"
		"sys.excepthook=lambda t,v,tb: print('hook', t.__name__)\n"
		"raise KeyError(1)\n",
		"print(os)\n",
		"import threading,time\n"
		"def w(): time.sleep(0.2); print('thread done')\n"
		"threading.Thread(target=w).start()\nprint('main done')\n",
		"import atexit; atexit.register(lambda: print('atexit'))\n",
		"import warnings; warnings.warn('w')\n",
		"import traceback\ntry:\n  1/0\nexcept Exception:\n"
		"  traceback.print_exc()\n",
		"import sys; print(sys.flags.isolated, sys.flags.safe_path)\n",
	};
	const char *plain[] = { "python3", "-I", "-", NULL };
	const char *dash[] = { "-", NULL };
	char in[2048];
	char cred[RUNNER_EGRESS_CRED_LEN + 1];

	(void)state;
	cred_make(cred);
	for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++) {
		struct proc_opts o = { .argv = plain, .stdin_data = jobs[i],
		    .stdin_len = strlen(jobs[i]), .stdout_max = 65536,
		    .stderr_max = 65536 };
		struct proc_result want, got;

		snprintf(in, sizeof(in), "%s%s", cred, jobs[i]);
		assert_int_equal(proc_run(&o, 20000, &want), 0);
		assert_int_equal(run_prelude(dash, in, &got), 0);
		if (want.exit_code != got.exit_code ||
		    strcmp(cbuf_data(want.out), cbuf_data(got.out)) != 0 ||
		    strcmp(cbuf_data(want.err), cbuf_data(got.err)) != 0)
			fail_msg("job %zu: python3 -I - exit %d, out [%s], err "
			    "[%s]; the prelude exit %d, out [%s], err [%s]", i,
			    want.exit_code, cbuf_data(want.out),
			    cbuf_data(want.err), got.exit_code,
			    cbuf_data(got.out), cbuf_data(got.err));
		proc_result_cleanup(&want);
		proc_result_cleanup(&got);
	}
}

/* ... in the prelude's own interpreter: no second python start. */
static void
test_prelude_in_process(void **state)
{
	const char *dash[] = { "-", NULL };
	char in[512];
	struct proc_result r;

	(void)state;
	cred_make(in);
	strcat(in, "print('no proxy settings' in "
	    "open('/proc/self/cmdline').read())\n");
	assert_int_equal(run_prelude(dash, in, &r), 0);
	assert_int_equal(r.exit_code, 0);
	assert_string_equal(cbuf_data(r.out), "True\n");
	proc_result_cleanup(&r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cred_line),
		cmocka_unit_test(test_stdin_layout),
		cmocka_unit_test(test_prelude),
		cmocka_unit_test(test_prelude_refuses),
		cmocka_unit_test(test_prelude_short_reads),
		cmocka_unit_test(test_prelude_as_python),
		cmocka_unit_test(test_prelude_in_process),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
