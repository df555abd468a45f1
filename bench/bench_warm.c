/*
 * The warm paths side by side, in one run: `cordon mcp --pool P` (the
 * stdio JSON-RPC server, spoken to over its pipes) and `cordon serve` on a
 * temporary socket with P warm python, bash and node containers per mode
 * (serve.pool, serve.pool_bash, serve.pool_node), in a state_dir of its own
 * (minimal and node pinned by the operator's image IDs, probed first, not
 * measured). In turn: serve python print(1), MCP run_code print(1), serve
 * bash `echo 1`, serve node console.log(1), each only once every pool is
 * full again (no refill beside it). Prints the four warm medians, MCP's
 * ratio to serve's python (targets: MCP <= 60 ms and <= 1.5x serve's) and
 * bash's and node's against 60 ms. Usage: bench_warm [CORDON [N [P]]] (N
 * runs per figure, default 10; P default 1).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_svc.h"
#include "common/cbuf.h"
#include "common/proc.h"
#include "common/util.h"

#define MAX_N 200
#define LINE_MAX_BYTES (1 << 20)

/* What serve runs, per language; each prints 1. */
static const char *const bodies[3] = {
	"{\"code\":\"print(1)\\n\",\"timeout_s\":60}",
	"{\"code\":\"echo 1\\n\",\"language\":\"bash\",\"timeout_s\":60}",
	("{\"code\":\"console.log(1)\\n\",\"language\":\"node\","
	    "\"timeout_s\":60}"),
};
static const char *const lang_names[3] = { "python", "bash", "node" };

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
		fprintf(stderr, "bench_warm: the MCP call was not a warm ok "
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

/* Until the pools hold their ready containers (120 s): mcp's P python,
 * serve's P each of python, bash and node (offline, from Docker); then a
 * margin for a pool's own list, which is set once the exec is spawned. */
static int
wait_pools(const struct mcp *m, const struct bench_svc *sv, int want)
{
	for (int i = 0; i < 1200; i++) {
		if (pool_ready(m->pid) >= want &&
		    pool_ready(proc_pid(sv->p)) >= 3 * want) {
			usleep(300 * 1000);
			return 0;
		}
		usleep(100 * 1000);
	}
	fprintf(stderr, "bench_warm: the pools did not fill in 120 s\n");
	return -1;
}

/* Wall ms of one warm serve run of language k, or -1. */
static int64_t
serve_run(const struct bench_svc *sv, int k)
{
	char resp[8192];
	int64_t t0 = time_mono_ms();
	int code = bench_svc_http(sv, "POST", "/v1/runs", bodies[k], resp,
	    sizeof(resp));
	int64_t ms = time_mono_ms() - t0;

	if (code != 200 || strstr(resp, "\"warm\":true") == NULL ||
	    strstr(resp, "\"stdout\":\"1\\n\"") == NULL) {
		fprintf(stderr, "bench_warm: the serve %s run was not a warm ok "
		    "run (HTTP %d): %.300s\n", lang_names[k], code, resp);
		return -1;
	}
	return ms;
}

/* The pinned image ID of profile, from `cordon image show`; 0 or -1. */
static int
image_id(const char *cordon, const char *profile, char *out, size_t len)
{
	const char *av[] = { cordon, "image", "show", "--profile", profile,
	    NULL };
	char json[8192];
	const char *q;
	size_t n;

	if (docker_out(av, json, sizeof(json)) < 0 ||
	    (q = strstr(json, "\"id\":\"")) == NULL)
		return -1;
	q += 6;
	n = strcspn(q, "\"");
	if (n == 0 || n >= len)
		return -1;
	memcpy(out, q, n);
	out[n] = '\0';
	return 0;
}

/* A config of our own (CORDON_CONFIG, for us and our children), its
 * state_dir probed for minimal and node; 0 or -1. */
static int
setup(const char *cordon, const char *dir, int pool, char *cfg,
    size_t cfglen)
{
	char min[96], node[96], text[1024], state[160], out[16384];
	const char *pr[] = { cordon, "probe", "--net", "none", "--profile",
	    NULL, NULL };

	if (image_id(cordon, "minimal", min, sizeof(min)) < 0 ||
	    image_id(cordon, "node", node, sizeof(node)) < 0) {
		fprintf(stderr, "bench_warm: no pinned image of minimal or "
		    "node (cordon image build --profile P)\n");
		return -1;
	}
	snprintf(state, sizeof(state), "%s/state", dir);
	snprintf(cfg, cfglen, "%s/cordon.json", dir);
	snprintf(text, sizeof(text), "{\"state_dir\":\"%s\",\"audit_log\":"
	    "\"%s/audit.log\",\"image\":{\"id\":\"%s\",\"profiles\":{\"node\":"
	    "{\"id\":\"%s\"}}},\"serve\":{\"pool\":%d,\"pool_bash\":%d,"
	    "\"pool_node\":%d}}", state, dir, min, node, pool, pool, pool);
	if (mkdir(state, 0700) < 0 || util_write_file_atomic(cfg, text,
	    strlen(text), 0644) < 0 || setenv("CORDON_CONFIG", cfg, 1) < 0)
		return -1;
	for (int i = 0; i < 2; i++) {
		pr[5] = i == 0 ? "minimal" : "node";
		if (docker_out(pr, out, sizeof(out)) < 0) {
			fprintf(stderr, "bench_warm: cordon probe --profile "
			    "%s failed: %.300s\n", pr[5], out);
			return -1;
		}
	}
	return 0;
}

static void
print_row(const char *what, int64_t *ms, int n)
{
	printf("%-24s median %4lld ms, p90 %4lld ms (n=%d)\n", what,
	    (long long)bench_pct(ms, n, 50), (long long)bench_pct(ms, n, 90),
	    n);
}

int
main(int argc, char **argv)
{
	const char *cordon = argc > 1 ? argv[1] : "./cordon";
	int n = argc > 2 ? atoi(argv[2]) : 10;
	int pool = argc > 3 ? atoi(argv[3]) : 1, rc = 1;
	char dir[] = "/tmp/cordon-bench-warm.XXXXXX", cfg[160], pool_arg[16];
	int64_t mw[MAX_N], sw[3][MAX_N], med[4];
	struct bench_svc sv = { .name = "serve" };
	struct mcp m = { .pid = 0 };
	double ratio;

	if (n < 2 || n > MAX_N || pool < 1 || pool > 64) {
		fprintf(stderr, "usage: bench_warm [CORDON [N (2..%d) [POOL "
		    "(1..64)]]]\n", MAX_N);
		return 2;
	}
	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(pool_arg, sizeof(pool_arg), "%d", pool);
	if (setup(cordon, dir, pool, cfg, sizeof(cfg)) < 0 ||
	    bench_svc_start(&sv, cordon, dir, cfg, pool_arg) < 0 ||
	    mcp_start(&m, cordon, cfg, pool_arg) < 0 || mcp_init(&m) < 0) {
		fprintf(stderr, "bench_warm: cannot start the services\n");
		goto out;
	}
	/* One of each first, not measured: the page cache. */
	for (int k = 0; k < 3; k++)
		if (wait_pools(&m, &sv, pool) < 0 || serve_run(&sv, k) < 0)
			goto out;
	if (wait_pools(&m, &sv, pool) < 0 || mcp_run(&m, 1) < 0)
		goto out;
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < 3; k++)
			if (wait_pools(&m, &sv, pool) < 0 ||
			    (sw[k][i] = serve_run(&sv, k)) < 0)
				goto out;
		if (wait_pools(&m, &sv, pool) < 0 ||
		    (mw[i] = mcp_run(&m, 2 + i)) < 0)
			goto out;
	}
	print_row("serve warm python", sw[0], n);
	print_row("mcp warm run_code python", mw, n);
	print_row("serve warm bash", sw[1], n);
	print_row("serve warm node", sw[2], n);
	med[0] = bench_pct(sw[0], n, 50);
	med[1] = bench_pct(mw, n, 50);
	med[2] = bench_pct(sw[1], n, 50);
	med[3] = bench_pct(sw[2], n, 50);
	ratio = (double)med[1] / (double)med[0];
	printf("mcp warm/serve warm python median ratio: %.2fx (target <= "
	    "1.5x); mcp warm median %lld ms (target <= 60 ms): %s\n", ratio,
	    (long long)med[1], ratio <= 1.5 && med[1] <= 60 ? "met" :
	    "not met");
	printf("warm bash median %lld ms, warm node median %lld ms (target "
	    "<= 60 ms each): %s (pool %d per language and mode)\n",
	    (long long)med[2], (long long)med[3], med[2] <= 60 &&
	    med[3] <= 60 ? "met" : "not met", pool);
	rc = 0;
out:
	mcp_stop(&m);
	bench_svc_stop(&sv);
	(void)util_rm_rf(dir);
	return rc;
}
