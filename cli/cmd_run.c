/*
 * `cordon run [FILE]`: reads the code from FILE or stdin (either way it
 * reaches the sandbox on its stdin, never on argv), runs it with
 * runner_run and prints ONE JSON object. Exit 0 when a result was
 * produced; otherwise a one-line message on stderr and a non-zero exit
 * (2: the request itself, e.g. a limit above the maximum or an empty
 * program). SIGINT/SIGTERM/SIGHUP
 * cancel the run (the container is removed) and exit 128+signal.
 * --stream prints NDJSON events instead (jobs/stream.h): output as it
 * arrives, written by a thread of its own from a bounded queue, so a
 * reader that stops reading never holds up the run; the result last. A
 * refusal before the run is then one error event on stdout (and its line
 * on stderr, with the same exit code).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/json.h"
#include "common/util.h"
#include "cli/cmd.h"
#include "runner/runner.h"
#include "jobs/stream.h"

static atomic_int run_cancel;
static atomic_int run_signal;
static bool run_stream;		/* --stream */

static void
on_signal(int sig)
{
	run_signal = sig;
	run_cancel = 1;
}

static void
install_handlers(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: poll() returns EINTR and sees the flag at once. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

static void
run_usage(FILE *f)
{
	fprintf(f, "usage: cordon run [--net none|proxy [--policy NAME]] "
	    "[--timeout S] "
	    "[--max-output BYTES] [--memory SIZE] [--cpus N] [--in PATH]... "
	    "[--out DIR] [--session ID] [--lang python|bash|node] "
	    "[--profile NAME] [--keep head|tail|both] [--stream] [--debug] "
	    "[FILE | < FILE]\n"
	    "  FILE       the program (without FILE, or with -: stdin); "
	    "either way it\n             reaches the sandbox on its stdin, "
	    "never on argv\n"
	    "  --timeout, --max-output, --memory, --cpus: at most the "
	    "config's limits;\n             more is an error naming the "
	    "maximum\n"
	    "  --lang     the code's language (default python); the profile "
	    "must offer it\n"
	    "  --profile  the image profile (default minimal; without it, "
	    "--lang node\n"
	    "             picks the first profile with node, e.g. node)\n"
	    "  --debug  root only: runsc's debug runtime (--debug --strace); "
	    "the result\n           names the log directory (debug_log)\n");
}

static int write_line(const char *line);

/* A refusal before the run: its one line on stderr and, with --stream,
 * the same reason as the one NDJSON event on stdout
 * ({"event":"error","error":...}, jobs_stream_error_line). */
static void __attribute__((format(printf, 1, 2)))
run_error(const char *fmt, ...)
{
	char why[768], *line;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	fprintf(stderr, "cordon run: %s\n", why);
	if (!run_stream)
		return;
	if ((line = jobs_stream_error_line(why)) != NULL)
		(void)write_line(line);
	free(line);
}

static int
usage_error(const char *msg, const char *arg)
{
	run_error("%s%s%s", msg, arg ? ": " : "", arg ? arg : "");
	run_usage(stderr);
	return 2;
}

static int
parse_cpus(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	/* Above the config's limits.cpus is runner_limits_check's error. */
	if (errno != 0 || end == s || *end != '\0' || !(v > 0) || v > 1e6)
		return -EINVAL;
	*out = v;
	return 0;
}

static int
parse_flag(int opt, const char *arg, struct runner_request *q)
{
	uint64_t sz;

	switch (opt) {
	case 'n':
		if (strcmp(arg, "none") == 0)
			q->net = RUNNER_NET_NONE;
		else if (strcmp(arg, "proxy") == 0)
			q->net = RUNNER_NET_PROXY;
		else
			return usage_error("--net must be none or proxy", arg);
		return 0;
	case 't':
		/* Above limits.max_timeout_s is runner_limits_check's error,
		 * which names the maximum. */
		return util_parse_i64(arg, 1, INT32_MAX, &q->timeout_s) < 0 ?
		    usage_error("bad --timeout (whole seconds, at least 1)",
		    arg) : 0;
	case 'o':
		if (util_parse_size(arg, &sz) < 0 || sz == 0)
			return usage_error("bad --max-output (bytes, or e.g. "
			    "64k, 1m)", arg);
		q->max_output = sz;
		return 0;
	case 'm':
		if (util_parse_size(arg, &q->memory) < 0 || q->memory == 0)
			return usage_error("bad --memory (bytes, or e.g. 128m, "
			    "1g)", arg);
		return 0;
	case 'c':
		return parse_cpus(arg, &q->cpus) < 0 ?
		    usage_error("bad --cpus (a number above 0, e.g. 0.5)",
		    arg) : 0;
	case 'i':
		if (q->nin == RUNNER_MAX_IN) {
			run_error("more than %d --in paths (the maximum is "
			    "%d)", RUNNER_MAX_IN,
			    RUNNER_MAX_IN);
			return 2;
		}
		q->in[q->nin++] = arg;
		return 0;
	case 'O':
		q->out_dir = arg;
		return 0;
	case 's':
		q->session = arg;
		return 0;
	case 'l':
		if (config_lang_bit(arg) == 0)
			return usage_error("--lang must be python, bash or node",
			    arg);
		q->lang = arg;
		return 0;
	case 'P':
		if (!config_profile_name_valid(arg))
			return usage_error("bad --profile (1-32 of [a-z0-9_-])",
			    arg);
		q->profile = arg;
		return 0;
	case 'p':
		q->policy = arg;
		return 0;
	case 'D':
		/* The runner refuses it unless we are root. */
		q->debug = true;
		return 0;
	case 'k':
		if (strcmp(arg, "head") != 0 && strcmp(arg, "tail") != 0 &&
		    strcmp(arg, "both") != 0)
			return usage_error("--keep must be head, tail or both",
			    arg);
		q->keep = arg;
		return 0;
	}
	return usage_error("unknown option", NULL);
}

/* The program's file (cordon run FILE), or NULL: stdin. */
static const char *run_file;

static int
parse_args(int argc, char **argv, struct runner_request *q)
{
	static const struct option longopts[] = {
		{ "net", required_argument, NULL, 'n' },
		{ "timeout", required_argument, NULL, 't' },
		{ "max-output", required_argument, NULL, 'o' },
		{ "memory", required_argument, NULL, 'm' },
		{ "cpus", required_argument, NULL, 'c' },
		{ "in", required_argument, NULL, 'i' },
		{ "out", required_argument, NULL, 'O' },
		{ "session", required_argument, NULL, 's' },
		{ "lang", required_argument, NULL, 'l' },
		{ "profile", required_argument, NULL, 'P' },
		{ "policy", required_argument, NULL, 'p' },
		{ "debug", no_argument, NULL, 'D' },
		{ "keep", required_argument, NULL, 'k' },
		{ "stream", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt, rc;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (opt == 'h') {
			run_usage(stdout);
			return -1;
		}
		if (opt == '?' || opt == ':')
			return usage_error("bad option", argv[optind - 1]);
		if (opt == 'S') {
			run_stream = true;
			continue;
		}
		if ((rc = parse_flag(opt, optarg, q)) != 0)
			return rc;
	}
	/* FILE, or "-": stdin, as without FILE. */
	if (optind < argc && strcmp(argv[optind++], "-") != 0)
		run_file = argv[optind - 1];
	if (optind != argc) {
		run_error("unexpected argument '%s': the program is one FILE "
		    "(cordon run FILE) or stdin (cordon run < FILE)",
		    argv[optind]);
		return 2;
	}
	if (q->policy != NULL && q->net != RUNNER_NET_PROXY)
		return usage_error("--policy needs --net proxy", q->policy);
	return 0;
}

/* Reads all of fd, at most RUNNER_CODE_MAX bytes. */
static int
read_code(int fd, char **out, size_t *len)
{
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap), *nb;
	ssize_t r;

	if (buf == NULL)
		return -ENOMEM;
	for (;;) {
		if (n == cap) {
			if (cap >= RUNNER_CODE_MAX || (nb = realloc(buf,
			    cap * 2)) == NULL) {
				free(buf);
				return cap >= RUNNER_CODE_MAX ? -EFBIG : -ENOMEM;
			}
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR && !run_cancel)
			continue;
		if (r < 0) {
			free(buf);
			return -errno;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	*out = buf;
	*len = n;
	return 0;
}

/* What can be refused before the program is read and anything started,
 * as a usage error (exit 2): a limit above the config's maximum, an
 * unknown profile or one without the language, an unusable --out. */
static int
run_check(const struct config *c, const struct runner_request *q)
{
	const struct config_profile *p;
	char err[512];

	if (runner_limits_check(c, q, err, sizeof(err)) < 0 ||
	    config_profile_pick(c, q->profile, q->lang, &p, err,
	    sizeof(err)) < 0 || (q->out_dir != NULL &&
	    runner_out_dir_check(q->out_dir, err, sizeof(err)) < 0)) {
		run_error("%s", err);
		return 2;
	}
	return 0;
}

/* The program: from run_file, or from stdin (with a hint when stdin is
 * a terminal). An empty program is a usage error (exit 2). */
static int
run_read(char **code, size_t *len)
{
	const char *from = run_file != NULL ? run_file : "stdin";
	int fd = STDIN_FILENO, rc;

	if (run_file != NULL &&
	    (fd = open(run_file, O_RDONLY | O_CLOEXEC)) < 0) {
		run_error("cannot read %s: %s", run_file, strerror(errno));
		return 2;
	}
	if (run_file == NULL && isatty(STDIN_FILENO))
		fprintf(stderr, "cordon run: reading the program from stdin; "
		    "end it with Ctrl-D (or: cordon run FILE)\n");
	rc = read_code(fd, code, len);
	if (fd != STDIN_FILENO)
		close(fd);
	if (rc < 0) {
		run_error("reading the program from %s: %s", from,
		    rc == -EFBIG ? "larger than 16 MiB" : strerror(-rc));
		return rc == -EFBIG || rc == -EISDIR ? 2 : 1;
	}
	if (*len == 0) {
		run_error("the program is empty (nothing on %s): give the "
		    "code as FILE or on stdin", from);
		free(*code);
		*code = NULL;
		return 2;
	}
	return 0;
}

static int
print_result(const struct runner_result *res)
{
	cJSON *o = runner_result_to_json(res);
	char *line = o != NULL ? json_print_line(o) : NULL;
	int rc = 0;

	cJSON_Delete(o);
	if (line == NULL || fputs(line, stdout) == EOF || fflush(stdout) != 0)
		rc = -EIO;
	free(line);
	return rc;
}

/* Writes all of line to stdout; -errno on failure. */
static int
write_line(const char *line)
{
	size_t n = strlen(line);
	ssize_t w;

	while (n > 0) {
		w = write(STDOUT_FILENO, line, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		line += w;
		n -= (size_t)w;
	}
	return 0;
}

/* --stream: the writer thread. Blocking writes happen here, never in the
 * runner's read loop; once stdout fails, events are only taken off the
 * queue (and the run goes on). */
struct writer {
	struct jobs_stream *s;
	pthread_t th;
	int error;
};

static void *
writer_main(void *arg)
{
	struct writer *w = arg;
	struct jobs_stream_event *ev;
	char *line;

	while (jobs_stream_pop(w->s, true, &ev) == 1) {
		line = w->error == 0 ? jobs_stream_event_line(ev) : NULL;
		if (line != NULL)
			w->error = write_line(line);
		else if (w->error == 0)
			w->error = -ENOMEM;
		free(line);
		jobs_stream_event_free(ev);
	}
	return NULL;
}

/* Starts the writer with the handled signals blocked: they stay the
 * main thread's, whose run they cancel. */
static int
writer_start(struct writer *w)
{
	sigset_t set, old;
	int rc;

	if ((w->s = jobs_stream_new(0, NULL, NULL)) == NULL)
		return -ENOMEM;
	/* A reader that went away is a write error, not the end of us: the
	 * container must still be removed. */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	rc = pthread_create(&w->th, NULL, writer_main, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		jobs_stream_free(w->s);
		w->s = NULL;
		return -rc;
	}
	return 0;
}

/* After the run: the rest of the queue, then the result (or the error)
 * as the last event. */
static int
writer_finish(struct writer *w, const struct runner_result *res,
    const char *err)
{
	char *line;
	int rc;

	jobs_stream_close(w->s);
	pthread_join(w->th, NULL);
	line = res != NULL ? jobs_stream_result_line(res,
	    jobs_stream_dropped(w->s)) : jobs_stream_error_line(err);
	rc = line == NULL ? -ENOMEM : write_line(line);
	free(line);
	jobs_stream_free(w->s);
	return rc;
}

/* The runner's notes (an automatic probe before the run) go to stderr;
 * stdout carries only the result. */
static void
run_note(void *arg, const char *msg)
{
	(void)arg;
	fprintf(stderr, "cordon run: %s\n", msg);
}

int
cmd_run(int argc, char **argv)
{
	struct runner_request q = { .cancel = &run_cancel, .note = run_note };
	struct runner_result res;
	struct writer w = { .s = NULL };
	struct config c;
	char err[512], *code = NULL;
	size_t len = 0;
	int rc;

	install_handlers();
	/* Known before the flags are: a refusal of any of them is then
	 * an NDJSON event too. */
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		run_stream = run_stream || strcmp(argv[i], "--stream") == 0;
	if ((rc = parse_args(argc, argv, &q)) != 0)
		return rc < 0 ? 0 : rc;		/* -1: --help */
	if (config_load(&c, NULL, err, sizeof(err)) < 0) {
		run_error("config: %s", err);
		return 1;
	}
	if ((rc = run_check(&c, &q)) != 0)
		return rc;
	if ((rc = run_read(&code, &len)) != 0)
		return rc;
	q.code = code;
	q.code_len = len;
	if (run_stream && (rc = writer_start(&w)) < 0) {
		run_error("cannot start the output writer: %s",
		    strerror(-rc));
		free(code);
		return 1;
	}
	if (w.s != NULL) {
		q.output = jobs_stream_output;
		q.output_arg = w.s;
	}
	rc = runner_run(&c, &q, &res, err, sizeof(err));
	free(code);
	if (rc < 0) {
		fprintf(stderr, "cordon run: %s\n", err);
		if (w.s != NULL)
			(void)writer_finish(&w, NULL, err);
		return 1;
	}
	if (res.audit_error[0] != '\0')
		fprintf(stderr, "cordon run: warning: %s\n", res.audit_error);
	rc = w.s != NULL ? writer_finish(&w, &res, NULL) : print_result(&res);
	runner_result_cleanup(&res);
	if (rc < 0) {
		fprintf(stderr, "cordon run: cannot write the result\n");
		return 1;
	}
	return run_signal != 0 ? 128 + run_signal : 0;
}
