/*
 * MCP's warm path beside serve's, in one run: `cordon mcp --pool P` (the
 * stdio JSON-RPC server, spoken to over its pipes) and `cordon serve --pool
 * P` on a temporary socket, each given the same print(1) alternately, each
 * call only once its pool is full again (so no refill runs beside it).
 * Prints both warm medians and MCP's ratio to serve's (targets: MCP warm
 * median <= 60 ms and <= 1.5x serve's). Usage: bench_mcp [CORDON [N [P]]]
 * (N calls per figure, default 10; P default 1).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_svc.h"
#include "common/cbuf.h"
#include "common/proc.h"
#include "common/util.h"

#define MAX_N 200
#define LINE_MAX_BYTES (1 << 20)

static const char run_body[] = "{\"code\":\"print(1)\\n\",\"timeout_s\":60}";

/* The MCP server: a child on two pipes. */
struct mcp {
	pid_t pid;
	int in, out;		/* its stdin (we write), its stdout */
	char *buf;
	size_t len;
};

static int
mcp_start(struct mcp *m, const char *cordon, const char *cfg,
    const char *pool)
{
	int a[2], b[2];

	if (pipe2(a, O_CLOEXEC) < 0 || pipe2(b, O_CLOEXEC) < 0 ||
	    (m->buf = malloc(LINE_MAX_BYTES)) == NULL)
		return -1;
	if ((m->pid = fork()) < 0)
		return -1;
	if (m->pid == 0) {
		if (dup2(a[0], 0) < 0 || dup2(b[1], 1) < 0)
			_exit(127);
		setenv("CORDON_CONFIG", cfg, 1);
		execl(cordon, cordon, "mcp", "--pool", pool, (char *)NULL);
		_exit(127);
	}
	close(a[0]);
	close(b[1]);
	m->in = a[1];
	m->out = b[0];
	m->len = 0;
	return 0;
}

/* One line from the server (NUL-terminated in m->buf, newline cut), within
 * ms; 0 or -1. */
static int
mcp_read_line(struct mcp *m, int64_t ms)
{
	int64_t end = time_mono_ms() + ms;
	char *nl;
	ssize_t n;

	for (;;) {
		if ((nl = memchr(m->buf, '\n', m->len)) != NULL) {
			*nl = '\0';
			return 0;
		}
		struct pollfd p = { .fd = m->out, .events = POLLIN };
		int64_t left = end - time_mono_ms();

		if (left <= 0 || m->len + 1 >= LINE_MAX_BYTES ||
		    poll(&p, 1, (int)left) <= 0)
			return -1;
		if ((n = read(m->out, m->buf + m->len,
		    LINE_MAX_BYTES - 1 - m->len)) <= 0)
			return -1;
		m->len += (size_t)n;
	}
}

/* Drops the line mcp_read_line returned. */
static void
mcp_consume(struct mcp *m)
{
	size_t used = strlen(m->buf) + 1;

	memmove(m->buf, m->buf + used, m->len - used);
	m->len -= used;
}

static int
mcp_send(struct mcp *m, const char *line)
{
	size_t n = strlen(line);

	return write(m->in, line, n) == (ssize_t)n ? 0 : -1;
}

static int
mcp_init(struct mcp *m)
{
	if (mcp_send(m, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":"
	    "\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\","
	    "\"capabilities\":{},\"clientInfo\":{\"name\":\"bench\","
	    "\"version\":\"1\"}}}\n") < 0 || mcp_read_line(m, 10000) < 0)
		return -1;
	mcp_consume(m);
	return mcp_send(m, "{\"jsonrpc\":\"2.0\",\"method\":"
	    "\"notifications/initialized\"}\n");
}

/* Wall ms of one warm run_code print(1), or -1. */
static int64_t
mcp_run(struct mcp *m, int id)
{
	char req[256];
	int64_t t0, ms;

	snprintf(req, sizeof(req), "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":"
	    "\"tools/call\",\"params\":{\"name\":\"run_code\",\"arguments\":"
	    "{\"code\":\"print(1)\\n\"}}}\n", id);
	t0 = time_mono_ms();
	if (mcp_send(m, req) < 0 || mcp_read_line(m, 60000) < 0)
		return -1;
	ms = time_mono_ms() - t0;
	if (strstr(m->buf, "\"isError\":false") == NULL ||
	    strstr(m->buf, "\"warm\":true") == NULL ||
	    strstr(m->buf, "\"stdout\":\"1\\n\"") == NULL) {
		fprintf(stderr, "bench_mcp: the MCP call was not a warm ok "
		    "run: %.400s\n", m->buf);
		ms = -1;
	}
	mcp_consume(m);
	return ms;
}

/* stdin EOF, then waits for its exit (it stops its pool first). */
static void
mcp_stop(struct mcp *m)
{
	int st;

	if (m->pid <= 0)
		return;
	close(m->in);
	for (int i = 0; i < 600; i++) {
		if (waitpid(m->pid, &st, WNOHANG) == m->pid)
			goto done;
		usleep(100 * 1000);
	}
	kill(m->pid, SIGTERM);
	(void)waitpid(m->pid, &st, 0);
done:
	close(m->out);
	free(m->buf);
	m->pid = 0;
}

/* Runs argv (docker), its stdout into out; 0 or -1. */
static int
docker_out(const char *const *argv, char *out, size_t len)
{
	struct proc_opts o = { .argv = argv, .stdout_max = 1 << 16,
	    .stderr_max = 4096 };
	struct proc_result r;
	int rc;

	if (proc_run(&o, 30000, &r) < 0)
		return -1;
	rc = r.exit_code == 0 ? 0 : -1;
	util_strlcpy(out, cbuf_data(r.out), len);
	proc_result_cleanup(&r);
	return rc;
}

/* Ready offline pool containers of the process pid (running, its one exec
 * known to the daemon), from Docker; -1 when it cannot be asked. */
static int
pool_ready(pid_t pid)
{
	char owner[64], ids[4096], execs[4096];
	const char *ps[] = { "docker", "ps", "-q", "--filter", "label=cordon=1",
	    "--filter", owner, "--filter", "label=cordon.session=pool",
	    "--filter", "network=none", "--filter", "status=running", NULL };
	const char *insp[4 + 64 + 1] = { "docker", "inspect", "-f",
	    "{{len .ExecIDs}}" };
	size_t k = 4;
	int n = 0;

	snprintf(owner, sizeof(owner), "label=cordon.owner_pid=%ld",
	    (long)pid);
	if (docker_out(ps, ids, sizeof(ids)) < 0)
		return -1;
	for (char *t = strtok(ids, "\n"); t != NULL && k < 4 + 64;
	    t = strtok(NULL, "\n"))
		insp[k++] = t;
	insp[k] = NULL;
	if (k == 4)
		return 0;
	if (docker_out(insp, execs, sizeof(execs)) < 0)
		return 0;	/* one went away in between: ask again */
	for (char *t = strtok(execs, "\n"); t != NULL; t = strtok(NULL, "\n"))
		n += strcmp(t, "1") == 0;
	return n;
}

static int
serve_pool_idle(const struct bench_svc *sv)
{
	char resp[4096];
	const char *q;
	int n;

	if (bench_svc_http(sv, "GET", "/v1/health", NULL, resp,
	    sizeof(resp)) != 200 || (q = strstr(resp, "\"pool\":{")) == NULL ||
	    (q = strstr(q, "\"none\":")) == NULL || sscanf(q + 7, "%d", &n) != 1)
		return -1;
	return n;
}

/* Until both pools hold want ready containers (120 s); then a margin for
 * the pool's own list, which is set once the exec is spawned. */
static int
wait_pools(const struct mcp *m, const struct bench_svc *sv, int want)
{
	for (int i = 0; i < 1200; i++) {
		if (pool_ready(m->pid) >= want && serve_pool_idle(sv) >= want) {
			usleep(300 * 1000);
			return 0;
		}
		usleep(100 * 1000);
	}
	fprintf(stderr, "bench_mcp: the pools did not fill in 120 s\n");
	return -1;
}

static int64_t
serve_run(const struct bench_svc *sv)
{
	char resp[8192];
	int64_t t0 = time_mono_ms();
	int code = bench_svc_http(sv, "POST", "/v1/runs", run_body, resp,
	    sizeof(resp));
	int64_t ms = time_mono_ms() - t0;

	if (code != 200 || strstr(resp, "\"warm\":true") == NULL ||
	    strstr(resp, "\"stdout\":\"1\\n\"") == NULL) {
		fprintf(stderr, "bench_mcp: the serve run was not a warm ok "
		    "run (HTTP %d): %.300s\n", code, resp);
		return -1;
	}
	return ms;
}

int
main(int argc, char **argv)
{
	const char *cordon = argc > 1 ? argv[1] : "./cordon";
	int n = argc > 2 ? atoi(argv[2]) : 10;
	int pool = argc > 3 ? atoi(argv[3]) : 1, rc = 1;
	char dir[] = "/tmp/cordon-bench-mcp.XXXXXX", cfg[160], text[512];
	char pool_arg[16];
	int64_t mw[MAX_N], sw[MAX_N];
	struct bench_svc sv = { .name = "serve" };
	struct mcp m = { .pid = 0 };
	double ratio;

	if (n < 2 || n > MAX_N || pool < 1 || pool > 64) {
		fprintf(stderr, "usage: bench_mcp [CORDON [N (2..%d) [POOL "
		    "(1..64)]]]\n", MAX_N);
		return 2;
	}
	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(cfg, sizeof(cfg), "%s/cordon.json", dir);
	snprintf(text, sizeof(text), "{\"audit_log\":\"%s/audit.log\"}", dir);
	snprintf(pool_arg, sizeof(pool_arg), "%d", pool);
	if (util_write_file_atomic(cfg, text, strlen(text), 0644) < 0 ||
	    bench_svc_start(&sv, cordon, dir, cfg, pool_arg) < 0 ||
	    mcp_start(&m, cordon, cfg, pool_arg) < 0 || mcp_init(&m) < 0) {
		fprintf(stderr, "bench_mcp: cannot start the services\n");
		goto out;
	}
	/* One of each first, not measured: the page cache. */
	if (wait_pools(&m, &sv, pool) < 0 || serve_run(&sv) < 0 ||
	    wait_pools(&m, &sv, pool) < 0 || mcp_run(&m, 1) < 0)
		goto out;
	for (int i = 0; i < n; i++)
		if (wait_pools(&m, &sv, pool) < 0 ||
		    (sw[i] = serve_run(&sv)) < 0 ||
		    wait_pools(&m, &sv, pool) < 0 ||
		    (mw[i] = mcp_run(&m, 2 + i)) < 0)
			goto out;
	(void)bench_pct(sw, n, 50);
	(void)bench_pct(mw, n, 50);
	ratio = (double)mw[n / 2] / (double)sw[n / 2];
	printf("serve warm print(1)    median %4lld ms, p90 %4lld ms (n=%d, "
	    "pool %d)\n", (long long)sw[n / 2], (long long)bench_pct(sw, n, 90),
	    n, pool);
	printf("mcp warm run_code      median %4lld ms, p90 %4lld ms (n=%d, "
	    "pool %d)\n", (long long)mw[n / 2], (long long)bench_pct(mw, n, 90),
	    n, pool);
	printf("mcp warm/serve warm median ratio: %.2fx (target <= 1.5x); mcp "
	    "warm median %lld ms (target <= 60 ms): %s\n", ratio,
	    (long long)mw[n / 2], ratio <= 1.5 && mw[n / 2] <= 60 ? "met" :
	    "not met");
	rc = 0;
out:
	mcp_stop(&m);
	bench_svc_stop(&sv);
	(void)util_rm_rf(dir);
	return rc;
}
