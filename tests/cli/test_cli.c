/*
 * The `cordon` CLI's flag and limit parsing, driven from outside: the built
 * binary is run (argv, no shell) with a config of its own whose docker does
 * not exist, so nothing here can start a container: every refusal must come
 * before the run. Exit code, stdout and stderr are compared exactly; --help
 * on every subcommand prints usage on stdout and exits 0; a terminal on
 * stdin gets a one-line hint (through a pseudo-terminal).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/proc.h"
#include "common/util.h"

#define ARGS_MAX 40

extern char **environ;

static char tmpdir[] = "/tmp/cordon-test-cli-run-XXXXXX";
static char cordon[512];
static char cfgenv[600];

/* What every run below refuses before it reads the program, and how. */
#define USAGE_RUN "usage: cordon run "

static void
put(const char *name, const char *text)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	assert_int_equal(util_write_file_atomic(path, text, strlen(text),
	    0644), 0);
}

/* Expands "@S@/" in an argument or an expected message. */
static char *
subst(const char *want)
{
	const char *p = strstr(want, "@S@/");
	char *s;

	if (p == NULL)
		return strdup(want);
	s = malloc(strlen(want) + strlen(tmpdir) + 1);
	sprintf(s, "%.*s%s/%s", (int)(p - want), want, tmpdir, p + 4);
	return s;
}

/* Runs cordon with args (NULL-terminated; "@S@/" in one is the test's
 * directory) and stdin; fills exit code, stdout, stderr. */
static void
run(const char *const *args, const char *in, int *code, char **out,
    char **err)
{
	const char *argv[ARGS_MAX + 2], *envp[512];
	char *own[ARGS_MAX] = { NULL };
	struct proc_opts o = { .argv = argv, .envp = envp, .stdin_data = in,
	    .stdin_len = in != NULL ? strlen(in) : 0, .stdout_max = 65536,
	    .stderr_max = 65536 };
	struct proc_result res;
	size_t n = 0, ne = 0;

	argv[n++] = cordon;
	for (size_t i = 0; args[i] != NULL && i < ARGS_MAX; i++)
		argv[n++] = own[i] = subst(args[i]);
	argv[n] = NULL;
	for (char **e = environ; *e != NULL && ne < 510; e++)
		if (strncmp(*e, "CORDON_CONFIG=", 14) != 0)
			envp[ne++] = *e;
	envp[ne++] = cfgenv;
	envp[ne] = NULL;
	assert_int_equal(proc_run(&o, 30000, &res), 0);
	*code = res.exit_code;
	*out = strdup(cbuf_data(res.out));
	*err = strdup(cbuf_data(res.err));
	proc_result_cleanup(&res);
	for (size_t i = 0; i < ARGS_MAX; i++)
		free(own[i]);
}

static const struct row {
	const char *args[8];
	const char *in;			/* stdin */
	const char *err;		/* exact stderr (one line) */
} rows[] = {
	/* Limits above the configured maximum: named, not lowered. */
	{ { "run", "--timeout", "3600" }, "print(1)\n",
	  "cordon run: timeout 3600 s is above the maximum of 300 s (config "
	  "limits.max_timeout_s)\n" },
	{ { "run", "--timeout", "86401" }, "print(1)\n",
	  "cordon run: timeout 86401 s is above the maximum of 300 s (config "
	  "limits.max_timeout_s)\n" },
	{ { "run", "--memory", "64g" }, "print(1)\n",
	  "cordon run: memory 64g is above the maximum of 256m (config "
	  "limits.memory)\n" },
	{ { "run", "--memory", "1k" }, "print(1)\n",
	  "cordon run: memory 1k is below the minimum of 16m\n" },
	{ { "run", "--cpus", "100" }, "print(1)\n",
	  "cordon run: cpus 100 is above the maximum of 1 (config "
	  "limits.cpus)\n" },
	{ { "run", "--max-output", "1g" }, "print(1)\n",
	  "cordon run: max_output 1g is above the maximum of 16m (config "
	  "limits.max_output_cap)\n" },
	/* Names: the valid ones are listed. */
	{ { "run", "--profile", "dat" }, "print(1)\n",
	  "cordon run: unknown profile 'dat' (profiles: minimal, data, "
	  "node)\n" },
	{ { "run", "--profile", "minimal", "--lang", "node" }, "1\n",
	  "cordon run: profile 'minimal' has no node (it offers python, "
	  "bash): use a profile with nodejs in its packages, e.g. node\n" },
	/* --out: a usable directory, checked before the run. */
	{ { "run", "--out", "@S@/afile" }, "print(1)\n",
	  "cordon run: --out @S@/afile: not a directory\n" },
	{ { "run", "--out", "@S@/afile/sub" }, "print(1)\n",
	  "cordon run: --out @S@/afile/sub: cannot create it: Not a "
	  "directory\n" },
	/* The program: FILE or stdin, never empty. */
	{ { "run" }, "",
	  "cordon run: the program is empty (nothing on stdin): give the "
	  "code as FILE or on stdin\n" },
	{ { "run", "@S@/empty.py" }, "print(1)\n",
	  "cordon run: the program is empty (nothing on @S@/empty.py): give "
	  "the code as FILE or on stdin\n" },
	{ { "run", "@S@/missing.py" }, "",
	  "cordon run: cannot read @S@/missing.py: No such file or "
	  "directory\n" },
	{ { "run", "@S@/hello.py", "@S@/hello.py" }, "",
	  "cordon run: unexpected argument '@S@/hello.py': the program is "
	  "one FILE (cordon run FILE) or stdin (cordon run < FILE)\n" },
	{ { "run", "-" }, "",
	  "cordon run: the program is empty (nothing on stdin): give the "
	  "code as FILE or on stdin\n" },
	{ { "run", "@S@/" }, "",
	  "cordon run: reading the program from @S@/: Is a directory\n" },
};

/* Other commands' values and names: the bound or the valid ones named
 * (stderr starts with the line; usage may follow). */
static void
test_other_refusals(void **state)
{
	static const struct {
		const char *args[5];
		int code;
		const char *err;
	} r[] = {
		{ { "serve", "--pool", "65" }, 2, "cordon serve: bad --pool "
		  "'65' (a whole number, at most 64)\n" },
		{ { "mcp", "--pool", "65" }, 2, "cordon mcp: bad --pool '65' "
		  "(a whole number, at most 64)\n" },
		{ { "mcp", "--pool", "-1" }, 2, "cordon mcp: bad --pool '-1' "
		  "(a whole number, at most 64)\n" },
		{ { "mcp", "--pool", "2x" }, 2, "cordon mcp: bad --pool '2x' "
		  "(a whole number, at most 64)\n" },
		{ { "mcp", "--pool" }, 2, "usage: cordon mcp [--session ID] "
		  "[--pool N]\n" },
		{ { "probe", "--net", "host" }, 2, "cordon probe: --net must be "
		  "none or proxy, not 'host'\nusage: cordon probe" },
		{ { "probe", "--profile", "dat" }, 1, "cordon probe: unknown "
		  "profile 'dat' (profiles: minimal, data, node)\n" },
		{ { "image", "show", "--profile", "dat" }, 1, "cordon image: "
		  "unknown profile 'dat' (profiles: minimal, data, node)\n" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
		char *out, *err;
		int code;

		run(r[i].args, "", &code, &out, &err);
		if (code != r[i].code || out[0] != '\0' ||
		    strncmp(err, r[i].err, strlen(r[i].err)) != 0)
			fail_msg("cordon %s %s %s: exit %d (want %d)\n"
			    "stdout:\n%s\nstderr:\n%s\nwant:\n%s",
			    r[i].args[0], r[i].args[1], r[i].args[2], code,
			    r[i].code, out, err, r[i].err);
		free(out);
		free(err);
	}
}

static void
test_run_refusals(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char *out, *err, *want = subst(rows[i].err);
		int code;

		run(rows[i].args, rows[i].in, &code, &out, &err);
		if (code != 2 || out[0] != '\0' || strcmp(err, want) != 0)
			fail_msg("row %zu (%s %s %s): exit %d (want 2)\n"
			    "stdout:\n%s\nstderr:\n%s\nwant:\n%s", i,
			    rows[i].args[0], rows[i].args[1] ?
			    rows[i].args[1] : "", rows[i].args[1] &&
			    rows[i].args[2] ? rows[i].args[2] : "", code, out,
			    err, want);
		free(out);
		free(err);
		free(want);
	}
}

/* With --stream (given last, after the refused flag), each refusal is
 * also one NDJSON error event on stdout, with the same reason. */
static void
test_run_stream_refusals(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const char *args[ARGS_MAX];
		char *out, *err, *want = subst(rows[i].err), *nl;
		const cJSON *ev, *why;
		cJSON *o;
		size_t n = 0;
		int code;

		while (rows[i].args[n] != NULL) {
			args[n] = rows[i].args[n];
			n++;
		}
		args[n++] = "--stream";
		args[n] = NULL;
		run(args, rows[i].in, &code, &out, &err);
		/* The reason: stderr's line without "cordon run: " and
		 * its newline. */
		want[strlen(want) - 1] = '\0';
		nl = strchr(out, '\n');
		o = cJSON_Parse(out);
		ev = cJSON_GetObjectItemCaseSensitive(o, "event");
		why = cJSON_GetObjectItemCaseSensitive(o, "error");
		if (code != 2 || nl == NULL || nl[1] != '\0' ||
		    !cJSON_IsString(ev) || strcmp(ev->valuestring, "error") !=
		    0 || !cJSON_IsString(why) || strcmp(why->valuestring,
		    want + strlen("cordon run: ")) != 0 ||
		    strncmp(err, want, strlen(want)) != 0)
			fail_msg("row %zu: exit %d\nstdout:\n%s\nstderr:\n%s\n"
			    "want:\n%s", i, code, out, err, want);
		cJSON_Delete(o);
		free(out);
		free(err);
		free(want);
	}
}

/* 33 --in paths: more than the maximum, which the message names. */
static void
test_run_too_many_in(void **state)
{
	const char *args[ARGS_MAX] = { "run" };
	char *out, *err;
	size_t n = 1;
	int code;

	(void)state;
	while (n <= 33)
		args[n++] = "--in=@S@/hello.py";
	args[n] = NULL;
	run(args, "print(1)\n", &code, &out, &err);
	assert_int_equal(code, 2);
	assert_string_equal(out, "");
	assert_string_equal(err, "cordon run: more than 32 --in paths (the "
	    "maximum is 32)\n");
	free(out);
	free(err);
}

/* --help on every subcommand: usage on stdout, nothing on stderr, 0. */
static void
test_help_everywhere(void **state)
{
	static const struct {
		const char *args[5];
		const char *usage;	/* stdout starts with it */
	} h[] = {
		{ { "--help" }, "usage: cordon COMMAND" },
		{ { "run", "--help" }, USAGE_RUN },
		{ { "run", "-h" }, USAGE_RUN },
		{ { "run", "--timeout", "5", "--help" }, USAGE_RUN },
		{ { "serve", "--help" }, "usage: cordon serve" },
		{ { "mcp", "--help" },
		  "usage: cordon mcp [--session ID] [--pool N]\n" },
		{ { "probe", "--help" }, "usage: cordon probe" },
		{ { "probe", "--net", "proxy", "-h" }, "usage: cordon probe" },
		{ { "doctor", "--help" }, "usage: cordon doctor" },
		{ { "gc", "--help" }, "usage: cordon gc" },
		{ { "kill-all", "--help" }, "usage: cordon kill-all" },
		{ { "image", "--help" }, "usage: cordon image" },
		{ { "image", "build", "--help" }, "usage: cordon image" },
		{ { "image", "show", "--help" }, "usage: cordon image" },
		{ { "net", "--help" }, "usage: cordon net" },
		{ { "net", "up", "--help" }, "usage: cordon net" },
		{ { "net", "down", "--help" }, "usage: cordon net" },
		{ { "net", "status", "--help" }, "usage: cordon net" },
		{ { "net", "reload", "--help" }, "usage: cordon net" },
		{ { "net", "seal", "--help" }, "usage: cordon net" },
		{ { "net", "run-args", "--help" }, "usage: cordon net" },
		{ { "allowlist", "--help" }, "usage: cordon allowlist" },
		{ { "allowlist", "check", "--help" }, "usage: cordon allowlist" },
		{ { "allowlist", "explain", "--help" },
		  "usage: cordon allowlist" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(h) / sizeof(h[0]); i++) {
		char *out, *err;
		int code;

		run(h[i].args, "", &code, &out, &err);
		if (code != 0 || err[0] != '\0' ||
		    strncmp(out, h[i].usage, strlen(h[i].usage)) != 0)
			fail_msg("cordon %s %s %s: exit %d\nstdout:\n%s\n"
			    "stderr:\n%s", h[i].args[0], h[i].args[1] ?
			    h[i].args[1] : "", h[i].args[1] && h[i].args[2] ?
			    h[i].args[2] : "", code, out, err);
		free(out);
		free(err);
	}
}

/* At a terminal with no FILE: one line on stderr says where the program
 * comes from; Ctrl-D at once then ends an empty program (exit 2). */
static void
test_tty_hint(void **state)
{
	static const char want[] = "cordon run: reading the program from "
	    "stdin; end it with Ctrl-D (or: cordon run FILE)\n"
	    "cordon run: the program is empty (nothing on stdin): give the "
	    "code as FILE or on stdin\n";
	char errbuf[1024];
	int master, slave, errp[2], status;
	size_t n = 0;
	ssize_t r;
	pid_t pid;

	(void)state;
	assert_true((master = posix_openpt(O_RDWR | O_NOCTTY)) >= 0);
	assert_int_equal(grantpt(master), 0);
	assert_int_equal(unlockpt(master), 0);
	assert_true((slave = open(ptsname(master), O_RDWR | O_NOCTTY)) >= 0);
	assert_int_equal(pipe(errp), 0);
	if ((pid = fork()) == 0) {
		dup2(slave, 0);
		dup2(errp[1], 2);
		dup2(errp[1], 1);
		close(master);
		close(errp[0]);
		putenv(cfgenv);
		execl(cordon, cordon, "run", (char *)NULL);
		_exit(127);
	}
	assert_true(pid > 0);
	close(slave);
	close(errp[1]);
	/* The hint first, then the end of input. */
	for (;;) {
		struct pollfd p = { .fd = errp[0], .events = POLLIN };
		assert_true(poll(&p, 1, 20000) == 1);
		r = read(errp[0], errbuf + n, sizeof(errbuf) - 1 - n);
		assert_true(r > 0);
		n += (size_t)r;
		if (memchr(errbuf, '\n', n) != NULL)
			break;
	}
	assert_int_equal(write(master, "\x04", 1), 1);
	while ((r = read(errp[0], errbuf + n, sizeof(errbuf) - 1 - n)) > 0)
		n += (size_t)r;
	errbuf[n] = '\0';
	assert_int_equal(waitpid(pid, &status, 0), pid);
	close(errp[0]);
	close(master);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 2);
	assert_string_equal(errbuf, want);
}

/* Not at a terminal: no hint (a pipe with the program). */
static void
test_no_hint_from_pipe(void **state)
{
	static const char *const args[] = { "run", "--cpus", "2", NULL };
	char *out, *err;
	int code;

	(void)state;
	run(args, "print(1)\n", &code, &out, &err);
	assert_int_equal(code, 2);
	assert_null(strstr(err, "Ctrl-D"));
	free(out);
	free(err);
}

static int
setup(void **state)
{
	const char *root = getenv("CORDON_BUILD_ROOT");
	char text[700];

	(void)state;
	snprintf(cordon, sizeof(cordon), "%s/cordon",
	    root != NULL ? root : ".");
	if (mkdtemp(tmpdir) == NULL)
		return -1;
	/* A docker that does not exist: a run that got past its checks
	 * would fail with exit 1 and docker's error, never exit 2. */
	snprintf(text, sizeof(text), "{\"docker\":\"%s/no-docker\","
	    "\"state_dir\":\"%s/state\",\"cache_dir\":\"%s/cache\","
	    "\"audit_log\":\"%s/audit.log\"}", tmpdir, tmpdir, tmpdir, tmpdir);
	put("cordon.json", text);
	put("afile", "not a directory\n");
	put("empty.py", "");
	put("hello.py", "print('hello')\n");
	snprintf(cfgenv, sizeof(cfgenv), "CORDON_CONFIG=%s/cordon.json",
	    tmpdir);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	return util_rm_rf(tmpdir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_run_refusals),
		cmocka_unit_test(test_run_stream_refusals),
		cmocka_unit_test(test_run_too_many_in),
		cmocka_unit_test(test_other_refusals),
		cmocka_unit_test(test_help_everywhere),
		cmocka_unit_test(test_tty_hint),
		cmocka_unit_test(test_no_hint_from_pipe),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
