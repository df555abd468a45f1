/*
 * `cordon mcp`: the MCP stdio transport. Reads newline-delimited JSON-RPC
 * messages from stdin (at most MCP_MAX_MESSAGE bytes each: a longer one is
 * answered with an error and skipped) and answers on stdout; logs only to
 * stderr. run_code calls run one at a time on a worker thread, each with
 * its own cancel flag (mcp/queue.c, admitted by jobs/admission), so ping
 * and notifications/cancelled are served while a sandbox runs. A call
 * whose client asked for progress sends its output as
 * notifications/progress while it runs (mcp/progress.c). At EOF the
 * queued calls finish, then it exits 0; SIGINT/SIGTERM/SIGHUP cancel the
 * running call (its container is removed), drop the rest and end.
 * With --pool N (or mcp.pool) run_code calls take pre-started containers
 * from a warm pool, as `cordon serve --pool` runs do; at the end the pool
 * is stopped and whatever still carries this process's pid is removed.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/log.h"
#include "common/util.h"
#include "mcp/mcp.h"
#include "mcp/queue.h"
#include "cli/cmd.h"
#include "jobs/pools.h"
#include "runner/pool.h"
#include "runner/pool_conf.h"
#include "runner/runner.h"

/* The queue of run_code calls, for the signal handler (which may only set
 * atomics: mcp_queue_signal does no more). */
static struct mcp_queue *_Atomic signal_queue;
static atomic_int mcp_signal;

struct transport {
	struct mcp_server *s;
	struct mcp_queue *q;		/* run_code calls (mcp/queue.h) */
	pthread_mutex_t out;		/* one reply line at a time */
	int write_error;
};

static void
on_signal(int sig)
{
	struct mcp_queue *q = signal_queue;

	mcp_signal = sig;
	if (q != NULL)
		mcp_queue_signal(q);
}

static const int handled_signals[] = { SIGINT, SIGTERM, SIGHUP };

static void
install_handlers(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: a blocked read() returns EINTR and we stop. */
	for (size_t i = 0; i < sizeof(handled_signals) / sizeof(int); i++)
		sigaction(handled_signals[i], &sa, NULL);
}

/* The runner's notes (an automatic probe) on stderr: stdout is the
 * protocol's. */
static void
run_note(void *arg, const char *msg)
{
	(void)arg;
	log_warnx("%s", msg);
}

/* A call's run, staged and given its pool and note by jobs_run. */
static int
run_with_runner(const struct config *c, const struct runner_request *req,
    struct runner_result *res, char *err, size_t errlen, void *arg)
{
	(void)arg;
	return runner_run(c, req, res, err, errlen);
}

/* tools/list asks the running proxy which policies it has. */
static int
policies_with_runner(const struct config *c, cJSON **out, char *err,
    size_t errlen, void *arg)
{
	(void)arg;
	return runner_egress_policies(c, out, err, errlen);
}

/* Writes one reply line (or the out-of-memory reply when line is NULL) and
 * frees it. The first write error is kept; later replies are dropped. */
static void
emit(struct transport *t, char *line)
{
	const char *p = line != NULL ? line : mcp_static_internal_error;
	size_t n = strlen(p);
	ssize_t w;

	pthread_mutex_lock(&t->out);
	while (n > 0 && t->write_error == 0) {
		w = write(STDOUT_FILENO, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			t->write_error = -errno;
			break;
		}
		p += w;
		n -= (size_t)w;
	}
	pthread_mutex_unlock(&t->out);
	free(line);
}

/* Progress notifications of a running call (mcp_notify_fn), written from
 * that call's own thread like any reply line. */
static void
notify_line(void *arg, char *line)
{
	emit(arg, line);
}

static void
handle_now(struct transport *t, const char *msg, size_t len)
{
	char *reply = NULL;

	if (mcp_handle(t->s, msg, len, &reply) < 0) {
		log_warnx("out of memory handling a message");
		emit(t, NULL);
	} else if (reply != NULL) {
		emit(t, reply);
	}
}

/* The queue's run: one call on its worker thread. */
static int
run_call(void *arg, const char *msg, size_t len, const atomic_int *cancel,
    char **reply)
{
	struct transport *t = arg;

	return mcp_handle_cancellable(t->s, msg, len, cancel, reply);
}

static void
emit_line(void *arg, char *line)
{
	emit(arg, line);
}

/* One complete message from the read loop. Every tools/call with a valid
 * id, whatever its length, goes through the queue once initialize was
 * answered; before, mcp_handle refuses it at once (nothing runs). */
static void
serve_line(struct transport *t, const char *line, size_t len)
{
	enum mcp_kind kind;
	char *id = NULL;

	if (len > 0 && line[len - 1] == '\r')
		len--;
	if (len == 0)
		return;
	if (mcp_classify(line, len, &kind, &id) < 0) {
		log_warnx("out of memory classifying a message");
		emit(t, NULL);
		return;
	}
	if (kind == MCP_KIND_CALL && mcp_server_initialized(t->s)) {
		mcp_queue_call(t->q, line, len, id);
		return;
	}
	if (kind == MCP_KIND_CANCEL)
		mcp_queue_cancel(t->q, id);
	else
		handle_now(t, line, len);
	free(id);
}

static int
write_error(struct transport *t)
{
	int rc;

	pthread_mutex_lock(&t->out);
	rc = t->write_error;
	pthread_mutex_unlock(&t->out);
	return rc;
}

/* The read loop: splits stdin into lines of at most MCP_MAX_MESSAGE bytes.
 * Returns 0 at EOF, or a negative errno (stdout gone, read error, signal). */
static int
serve(struct transport *t)
{
	static char chunk[65536];
	char *line;
	const char *p, *nl, *end;
	size_t len = 0, take;
	bool skipping = false;
	ssize_t r;
	int rc = 0;

	if ((line = malloc(MCP_MAX_MESSAGE)) == NULL)
		return -ENOMEM;
	while (mcp_signal == 0 && (rc = write_error(t)) == 0) {
		r = read(STDIN_FILENO, chunk, sizeof(chunk));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -errno;
			break;
		}
		if (r == 0) {
			/* A last message without its newline still counts. */
			if (!skipping && len > 0)
				serve_line(t, line, len);
			break;
		}
		for (p = chunk, end = chunk + r; p < end; ) {
			nl = memchr(p, '\n', (size_t)(end - p));
			take = (size_t)((nl != NULL ? nl : end) - p);
			if (!skipping && take > MCP_MAX_MESSAGE - len) {
				memcpy(line + len, p, MCP_MAX_MESSAGE - len);
				log_warnx("skipping a message larger than %u "
				    "bytes", MCP_MAX_MESSAGE);
				emit(t, mcp_oversized_reply(line,
				    MCP_MAX_MESSAGE));
				skipping = true;
			} else if (!skipping) {
				memcpy(line + len, p, take);
				len += take;
			}
			if (nl == NULL)
				break;
			if (!skipping)
				serve_line(t, line, len);
			skipping = false;
			len = 0;
			p = nl + 1;
		}
	}
	free(line);
	return rc;
}

/* Starts the calls' worker with our signals blocked, so that they reach
 * the reading thread (whose read() they interrupt). */
static int
start_worker(struct transport *t)
{
	sigset_t set, old;
	int rc;

	sigemptyset(&set);
	for (size_t i = 0; i < sizeof(handled_signals) / sizeof(int); i++)
		sigaddset(&set, handled_signals[i]);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	rc = mcp_queue_start(t->q);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

/* The warm pools (jobs/pools.h: mcp.pool*; python's python when >= 0,
 * --pool N), containers per net mode (all 0: none, *out NULL). Their threads (and theirs) start with our signals blocked, so
 * that they reach the reading thread, as the worker's do. */
static int
pool_start(const struct config *c, int64_t python, struct runner_pools **out)
{
	sigset_t set, old;
	char err[256];
	int rc;

	*out = NULL;
	sigemptyset(&set);
	for (size_t i = 0; i < sizeof(handled_signals) / sizeof(int); i++)
		sigaddset(&set, handled_signals[i]);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	rc = jobs_pools_start(c, JOBS_FRONT_MCP, python, out, err,
	    sizeof(err));
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc < 0)
		log_warnx("cannot start the warm pool: %s", err);
	return rc;
}

/* At the end: the pool stopped (its starts in flight given up, its idle
 * containers removed), then whatever still carries our pid was left
 * behind: removed, and said. */
static void
pool_end(const struct config *c, struct runner_pools *pools)
{
	char names[256], err[256];
	int left = 0;

	if (pools == NULL)
		return;
	runner_pools_free(pools);
	if (runner_gc_owner(c, (long)getpid(), &left, names, sizeof(names),
	    err, sizeof(err)) < 0)
		log_warnx("cannot look for leftover containers: %s", err);
	else if (left > 0)
		log_warnx("%d leftover container(s) found and removed: %s",
		    left, names);
}

static int
usage(FILE *f, int status)
{
	fprintf(f, "usage: cordon mcp [--session ID] [--pool N]\n"
	    "Serves the Model Context Protocol (revision %s) on stdin/stdout "
	    "with one tool, run_code.\n"
	    "  --session ID  label of this server's containers (default "
	    "mcp-PID)\n"
	    "  --pool N      warm python containers per net mode, 0-64 "
	    "(default: mcp.pool, 0: none):\n"
	    "                a call takes one when idle, else starts cold; "
	    "bash and node:\n"
	    "                mcp.pool_bash, mcp.pool_node\n",
	    MCP_PROTOCOL_LATEST);
	return status;
}

int
cmd_mcp(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "session", required_argument, NULL, 's' },
		{ "pool", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct transport t;
	const struct mcp_queue_ops ops = { .run = run_call,
	    .emit = emit_line, .arg = &t };
	struct runner_pools *pool = NULL;
	/* The pools are set before the worker thread starts (NULL: cold). */
	struct mcp_server_opts o = { .run = run_with_runner, .pools = &pool,
	    .note = run_note,
	    .policies = policies_with_runner, .notify = notify_line,
	    .notify_arg = &t };
	struct mcp_server *s = NULL;
	int64_t pool_size = -1;
	struct config c;
	char err[512], session[RUNNER_SESSION_MAX + 1];
	int opt, rc;

	optind = 1;
	opterr = 0;
	snprintf(session, sizeof(session), "mcp-%ld", (long)getpid());
	o.session = session;
	while ((opt = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		if (opt == 'h')
			return usage(stdout, 0);
		if (opt == 'p') {
			if (util_parse_i64(optarg, 0, 64, &pool_size) < 0) {
				fprintf(stderr, "cordon mcp: bad --pool '%s' "
				    "(a whole number, at most 64)\n", optarg);
				return 2;
			}
			continue;
		}
		if (opt != 's')
			return usage(stderr, 2);
		o.session = optarg;
	}
	if (optind != argc)
		return usage(stderr, 2);
	if (config_load(&c, NULL, err, sizeof(err)) < 0) {
		log_warnx("config: %s", err);
		return 1;
	}
	o.config = &c;
	if ((rc = mcp_server_new(&o, &s)) < 0) {
		log_warnx("%s", rc == -EINVAL ? "bad --session (1-64 characters "
		    "of [A-Za-z0-9._-])" : strerror(-rc));
		return rc == -EINVAL ? 2 : 1;
	}
	install_handlers();
	if (pool_start(&c, pool_size, &pool) < 0) {
		mcp_server_free(s);
		return 1;
	}
	memset(&t, 0, sizeof(t));
	t.s = s;
	pthread_mutex_init(&t.out, NULL);
	if ((rc = mcp_queue_new(&c, &ops, &t.q)) == 0) {
		signal_queue = t.q;
		if (mcp_signal != 0)	/* before the handler could see it */
			mcp_queue_signal(t.q);
		rc = start_worker(&t);
	}
	if (rc == 0) {
		rc = serve(&t);
		mcp_queue_end(t.q);	/* at EOF they run, on a signal not */
		if (rc == 0)
			rc = t.write_error;
	}
	signal_queue = NULL;
	mcp_queue_free(t.q);
	pthread_mutex_destroy(&t.out);
	mcp_server_free(s);
	pool_end(&c, pool);
	if (mcp_signal != 0)
		return 128 + mcp_signal;
	if (rc == -EPIPE)
		return 0;	/* the client went away */
	if (rc < 0) {
		log_warnx("stdio: %s", strerror(-rc));
		return 1;
	}
	return 0;
}
