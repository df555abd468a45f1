/*
 * bench_proxy: cordon-proxy side by side with no proxy, tinyproxy and squid
 * on loopback, against the same upstream (cordon-proxy in standalone mode
 * and in run mode, a credential on every CONNECT): CONNECT tunnel throughput,
 * handshakes per second, the proxy's own CPU time per handshake (utime +
 * stime from /proc), and RSS per idle tunnel. Not a test: run it by hand.
 *
 *   bench_proxy [--cordon PATH] [--mib N] [--handshakes N] [--idle N]
 *               [--threads N] [--runs N]
 *               [--skip tinyproxy,squid,runmode,sni,transparent]
 *
 * Throughput, handshakes/s and CPU per handshake are medians of --runs
 * (default 3) runs. Run mode also reports the control socket's
 * register+unregister round trip (median of 20).
 *
 * The SNI check: two more cordon-proxy rows whose clients send a real
 * ClientHello (tests/proxy/data, its server_name rewritten) as their first
 * bytes, one with the check (the default) and one with
 * --insecure-no-sni-check (today's tunnels), their runs interleaved. A
 * handshake there is CONNECT, 200, the ClientHello and one byte back from
 * the upstream, so the check is inside what is timed. CONNECT goes to the
 * upstream's IP literal, so the check also matches the name against the
 * policy (its longer path).
 *
 * The transparent path (issue 31): two rows on one cordon-proxy with both
 * listeners, their runs interleaved: "CONNECT by name" (CONNECT
 * SNI_NAME:port, then the ClientHello) and "transparent" (the ClientHello
 * sent straight to 203.0.113.7:port, which a nat REDIRECT gives the
 * --transparent listener: the name comes from the SNI alone). Both resolve
 * SNI_NAME through a stub DNS server of the bench's (127.0.0.2, cached by
 * the proxy for its TTL). Needs root: the whole bench then runs in a
 * network namespace of its own (loopback only), where the redirect is
 * set; without root (or with --skip transparent) the rows are skipped.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_proxy_ctl.h"
#include "common/util.h"
#include "tests/proxy/hello_util.h"

#define BUFSZ (256 * 1024)
#define NTARGETS 9
#define NOWHERE "203.0.113.7"	/* routed to lo; REDIRECTed */
#define SNI_NAME "bench.cordon-bench.net"
#define BENCH_TOKEN \
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static uint16_t up_port;
static long long opt_bytes = 1024LL * 1024 * 1024;
static int opt_handshakes = 2000;
static int opt_idle = 1000;
static int opt_threads = 4;
static int opt_runs = 3;

/* --- upstream: one thread per connection, blocking I/O ------------------ */

static bool
recv_all(int fd, void *p, size_t n)
{
	char *b = p;

	while (n > 0) {
		ssize_t r = recv(fd, b, n, 0);
		if (r <= 0)
			return false;
		b += r;
		n -= (size_t)r;
	}
	return true;
}

/* The command byte; a TLS record first (the SNI rows' ClientHello) is
 * read and skipped. */
static bool
up_command(int fd, char *cmd)
{
	unsigned char hdr[4];
	char rec[16384];
	size_t n;

	if (recv(fd, cmd, 1, 0) != 1)
		return false;
	if (*cmd != 0x16)
		return true;
	if (!recv_all(fd, hdr, 4))
		return false;
	n = (size_t)hdr[2] << 8 | hdr[3];
	if (n > sizeof(rec) || !recv_all(fd, rec, n))
		return false;
	return recv(fd, cmd, 1, 0) == 1;
}

static void *
up_conn(void *arg)
{
	static char buf[BUFSZ];
	int fd = (int)(intptr_t)arg;
	char cmd = 0;
	long long left = opt_bytes;

	if (!up_command(fd, &cmd)) {
		close(fd);
		return NULL;
	}
	if (cmd == 'H') {
		(void)send(fd, "h", 1, MSG_NOSIGNAL);
	} else if (cmd == 'T') {
		while (left > 0) {
			ssize_t w = send(fd, buf, left < BUFSZ ? (size_t)left :
			    BUFSZ, MSG_NOSIGNAL);
			if (w <= 0)
				break;
			left -= w;
		}
	} else if (cmd == 'I') {
		while (recv(fd, &cmd, 1, 0) > 0)
			;
	}
	close(fd);
	return NULL;
}

static void
up_serve(int lfd)
{
	pthread_attr_t attr;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (;;) {
		pthread_t t;
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == EMFILE || errno == ECONNABORTED)
				continue;
			_exit(1);
		}
		if (pthread_create(&t, &attr, up_conn, (void *)(intptr_t)fd) != 0)
			close(fd);
	}
}

static pid_t
up_start(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	int lfd, one = 1;
	pid_t pid;

	inet_pton(AF_INET, "127.0.0.2", &sin.sin_addr);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) != 0 ||
	    listen(lfd, 4096) != 0) {
		perror("upstream");
		exit(1);
	}
	getsockname(lfd, (struct sockaddr *)&sin, &sl);
	up_port = ntohs(sin.sin_port);
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		up_serve(lfd);
	}
	close(lfd);
	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	return pid;
}

/* --- targets ------------------------------------------------------------ */

struct target {
	const char *name;
	uint16_t port;		/* 0: direct to the upstream */
	pid_t pid;		/* the proxy (whose CPU and RSS we read) */
	bool skip;
	const char *auth;	/* header line sent with CONNECT, or "" */
	const uint8_t *hello;	/* sent first in every tunnel, or NULL */
	size_t hello_len;
	const char *extra;	/* one more cordon-proxy option, or NULL */
	const char *connect_host;	/* CONNECT this name, not 127.0.0.2 */
	bool transparent;	/* no CONNECT: to NOWHERE, redirected */
	double mbps, hps, cpu_us, rss_kib;
	double user_us, sys_us;	/* cpu_us split: user space, kernel */
	double run_mbps[16], run_hps[16], run_cpu[16];	/* each run's */
	double run_user[16], run_sys[16];
	char note[128];
};

static int
tcp_connect(const char *ip, uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
	    .sin_port = htons(port) };
	struct timeval tv = { 30, 0 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	inet_pton(AF_INET, ip, &sin.sin_addr);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A connection to the upstream, through t (CONNECT) unless direct. */
static int
open_tunnel(const struct target *t)
{
	char req[512], head[1024];
	size_t n = 0;
	int fd;

	if (t->port == 0)
		return tcp_connect("127.0.0.2", up_port);
	if (t->transparent)
		return tcp_connect(NOWHERE, up_port);
	fd = tcp_connect("127.0.0.1", t->port);
	if (fd < 0)
		return -1;
	snprintf(req, sizeof(req), "CONNECT %s:%u HTTP/1.1\r\n"
	    "Host: %s:%u\r\n%s\r\n", t->connect_host != NULL ?
	    t->connect_host : "127.0.0.2", up_port, t->connect_host != NULL ?
	    t->connect_host : "127.0.0.2", up_port,
	    t->auth != NULL ? t->auth : "");
	if (send(fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req))
		goto bad;
	while (n + 1 < sizeof(head)) {
		if (recv(fd, head + n, 1, 0) != 1)
			goto bad;
		n++;
		if (n >= 4 && memcmp(head + n - 4, "\r\n\r\n", 4) == 0)
			break;
	}
	head[n] = '\0';
	if (strncmp(head, "HTTP/1.", 7) != 0 || atoi(head + 9) != 200)
		goto bad;
	return fd;
bad:
	close(fd);
	return -1;
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* pid's children (cordon-proxy's network child does the work since
 * privilege separation), at most max; returns how many. */
static int
proc_children(pid_t pid, pid_t *out, int max)
{
	char path[96];
	FILE *f;
	int n = 0;
	long c;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid,
	    (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return 0;
	while (n < max && fscanf(f, "%ld", &c) == 1)
		out[n++] = (pid_t)c;
	fclose(f);
	return n;
}

static void proc_cpu_one(pid_t pid, double *user, double *sys);

/* utime and stime in seconds (all threads) of pid and its children: the
 * CPU they spent in user space and in the kernel. */
static void
proc_cpu_s(pid_t pid, double *user, double *sys)
{
	pid_t kids[8];
	int n = proc_children(pid, kids, 8);

	proc_cpu_one(pid, user, sys);
	for (int i = 0; i < n; i++) {
		double u, k;
		proc_cpu_one(kids[i], &u, &k);
		*user += u;
		*sys += k;
	}
}

static void
proc_cpu_one(pid_t pid, double *user, double *sys)
{
	char path[64], buf[2048], *p;
	unsigned long ut = 0, st = 0;
	FILE *f;

	*user = *sys = 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (f == NULL)
		return;
	if (fgets(buf, sizeof(buf), f) == NULL)
		buf[0] = '\0';
	fclose(f);
	p = strrchr(buf, ')');
	if (p == NULL ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
	    &ut, &st) != 2)
		return;
	*user = (double)ut / (double)sysconf(_SC_CLK_TCK);
	*sys = (double)st / (double)sysconf(_SC_CLK_TCK);
}

static long proc_rss_one(pid_t pid);

/* The RSS of pid and its children. */
static long
proc_rss_kib(pid_t pid)
{
	pid_t kids[8];
	int n = proc_children(pid, kids, 8);
	long kb = proc_rss_one(pid);

	for (int i = 0; i < n; i++)
		kb += proc_rss_one(kids[i]);
	return kb;
}

static long
proc_rss_one(pid_t pid)
{
	char path[64], line[256];
	long kb = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "VmRSS:", 6) == 0)
			kb = strtol(line + 6, NULL, 10);
	fclose(f);
	return kb;
}

/* The ClientHello and the command byte in one write, as a TLS client
 * sends its hello (two writes would meet Nagle's algorithm and the
 * peer's delayed ACK: 40 ms that measure TCP, not the proxy). */
static bool
send_hello(int fd, const struct target *t, char cmd)
{
	uint8_t buf[HELLO_CAP + 1];

	if (t->hello_len >= sizeof(buf))
		return false;
	memcpy(buf, t->hello, t->hello_len);
	buf[t->hello_len] = (uint8_t)cmd;
	return send(fd, buf, t->hello_len + 1, MSG_NOSIGNAL) ==
	    (ssize_t)t->hello_len + 1;
}

static void
bench_throughput(struct target *t)
{
	static char buf[BUFSZ];
	long long got = 0;
	double t0;
	int fd = open_tunnel(t);

	if (fd >= 0 && t->hello != NULL && !send_hello(fd, t, 'T')) {
		close(fd);
		fd = -1;
	} else if (fd >= 0 && t->hello == NULL &&
	    send(fd, "T", 1, MSG_NOSIGNAL) != 1) {
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		snprintf(t->note, sizeof(t->note), "tunnel failed");
		if (fd >= 0)
			close(fd);
		return;
	}
	t0 = now_s();
	for (;;) {
		ssize_t r = recv(fd, buf, sizeof(buf), 0);
		if (r == 7 && got == 0 && buf[0] == 0x15) {
			snprintf(t->note, sizeof(t->note), "refused (alert)");
			break;
		}
		if (r <= 0)
			break;
		got += r;
	}
	t->mbps = (double)got / (1024.0 * 1024.0) / (now_s() - t0);
	if (got != opt_bytes)
		snprintf(t->note, sizeof(t->note), "short read %lld", got);
	close(fd);
}

struct hs_arg {
	const struct target *t;
	int n, failed;
};

static void *
hs_thread(void *arg)
{
	struct hs_arg *a = arg;

	for (int i = 0; i < a->n; i++) {
		int fd = open_tunnel(a->t);
		char c;

		if (fd >= 0 && a->t->hello != NULL &&
		    (!send_hello(fd, a->t, 'H') || recv(fd, &c, 1, 0) != 1 ||
		    c != 'h')) {
			close(fd);
			fd = -1;
		}
		if (fd < 0)
			a->failed++;
		else
			close(fd);
	}
	return NULL;
}

static void
bench_handshakes(struct target *t)
{
	pthread_t th[64];
	struct hs_arg args[64];
	int nt = opt_threads, failed = 0, ok;
	double t0, u0 = 0, s0 = 0, u1, s1;

	if (t->pid > 0)
		proc_cpu_s(t->pid, &u0, &s0);
	t0 = now_s();
	for (int i = 0; i < nt; i++) {
		args[i] = (struct hs_arg){ .t = t, .n = opt_handshakes / nt };
		pthread_create(&th[i], NULL, hs_thread, &args[i]);
	}
	for (int i = 0; i < nt; i++) {
		pthread_join(th[i], NULL);
		failed += args[i].failed;
	}
	ok = opt_handshakes - failed;
	t->hps = (double)ok / (now_s() - t0);
	if (t->pid > 0 && ok > 0) {
		proc_cpu_s(t->pid, &u1, &s1);
		t->user_us = (u1 - u0) * 1e6 / (double)ok;
		t->sys_us = (s1 - s0) * 1e6 / (double)ok;
		t->cpu_us = t->user_us + t->sys_us;
	}
	if (failed > 0)
		snprintf(t->note + strlen(t->note),
		    sizeof(t->note) - strlen(t->note), " %d handshakes failed",
		    failed);
}

static void
bench_idle(struct target *t)
{
	int *fds = calloc((size_t)opt_idle, sizeof(int));
	long r0, r1;
	int ok = 0;

	if (t->pid <= 0 || fds == NULL) {
		free(fds);
		return;
	}
	/* Let the previous phase's connections finish closing. */
	sleep(1);
	r0 = proc_rss_kib(t->pid);
	for (int i = 0; i < opt_idle; i++) {
		fds[i] = open_tunnel(t);
		if (fds[i] >= 0 && send(fds[i], "I", 1, MSG_NOSIGNAL) == 1)
			ok++;
	}
	r1 = proc_rss_kib(t->pid);
	t->rss_kib = ok > 0 ? (double)(r1 - r0) / ok : 0;
	if (ok < opt_idle)
		snprintf(t->note + strlen(t->note),
		    sizeof(t->note) - strlen(t->note), " %d/%d idle tunnels", ok,
		    opt_idle);
	for (int i = 0; i < opt_idle; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(fds);
}

/* --- starting the proxies ---------------------------------------------- */

static char tmpdir[] = "/tmp/cordon-bench-XXXXXX";

static pid_t
spawn(const char *const argv[])
{
	pid_t pid = fork();

	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		setpgid(0, 0);
		dup2(null, 0);
		dup2(null, 1);
		if (getenv("BENCH_VERBOSE") == NULL)
			dup2(null, 2);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

static bool
wait_port(uint16_t port, pid_t pid)
{
	for (int i = 0; i < 400; i++) {
		int fd = tcp_connect("127.0.0.1", port);
		if (fd >= 0) {
			close(fd);
			return true;
		}
		if (waitpid(pid, NULL, WNOHANG) != 0)
			return false;
		usleep(50 * 1000);
	}
	return false;
}

static uint16_t
free_port(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	bind(fd, (struct sockaddr *)&sin, sizeof(sin));
	getsockname(fd, (struct sockaddr *)&sin, &sl);
	close(fd);
	return ntohs(sin.sin_port);
}

static void
write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f == NULL) {
		perror(path);
		exit(1);
	}
	fputs(text, f);
	fclose(f);
}

/* raw: the upstream's entry takes any bytes (the plain tunnels, as the
 * anchors relay them); else its tunnels must carry TLS (the SNI rows). */
static bool
start_cordon(struct target *t, const char *bin, bool raw)
{
	char list[300], alog[300], listen[64], allow[64], text[256];

	snprintf(list, sizeof(list), "%s/cordon-%u.list", tmpdir, t->port =
	    free_port());
	snprintf(alog, sizeof(alog), "%s/cordon-%u-access.log", tmpdir,
	    t->port);
	snprintf(text, sizeof(text), "127.0.0.2:%u%s\n" SNI_NAME ":%u\n",
	    up_port, raw ? " raw" : "", up_port);
	write_file(list, text);
	snprintf(listen, sizeof(listen), "127.0.0.1:%u", t->port);
	snprintf(allow, sizeof(allow), "127.0.0.2:%u", up_port);
	const char *argv[] = { bin, "--listen", listen, "--allowlist", list,
	    "--allow-address", allow, "--access-log", alog, "--log-level",
	    "warn", "--max-connections", "10000", t->extra, NULL };
	t->pid = spawn(argv);
	return wait_port(t->port, t->pid);
}

/* Run mode: a policy directory with "bench", the control socket, one
 * registered run whose credential goes with every CONNECT; then the
 * register+unregister round trip into *rt_us. */
static bool
start_cordon_run(struct target *t, const char *bin, double *rt_us)
{
	static char auth[512];
	char dir[300], list[340], alog[300], sock[300], listen[64], allow[64],
	    text[128];

	snprintf(dir, sizeof(dir), "%s/policies", tmpdir);
	snprintf(list, sizeof(list), "%s/bench.list", dir);
	snprintf(alog, sizeof(alog), "%s/cordon-run-access.log", tmpdir);
	snprintf(sock, sizeof(sock), "%s/ctl.sock", tmpdir);
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return false;
	snprintf(text, sizeof(text), "127.0.0.2:%u raw\n", up_port);
	write_file(list, text);
	t->port = free_port();
	snprintf(listen, sizeof(listen), "127.0.0.1:%u", t->port);
	snprintf(allow, sizeof(allow), "127.0.0.2:%u", up_port);
	const char *argv[] = { bin, "--listen", listen, "--allowlist", dir,
	    "--control", sock, "--allow-address", allow, "--access-log", alog,
	    "--log-level", "warn", "--max-connections", "10000", NULL };
	t->pid = spawn(argv);
	if (!wait_port(t->port, t->pid) ||
	    bench_ctl_register(sock, "bench", BENCH_TOKEN, 65535) != 0)
		return false;
	bench_auth_line("bench", BENCH_TOKEN, auth, sizeof(auth));
	t->auth = auth;
	*rt_us = bench_ctl_roundtrip_us(sock, BENCH_TOKEN, 20);
	return true;
}

/* --- the transparent path ------------------------------------------------ */

static uint16_t dns_port;

/* A stub DNS server on 127.0.0.2: every A question gets 127.0.0.2 (TTL
 * 60), every other type an empty NOERROR. */
static pid_t
dns_start(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	pid_t pid;

	inet_pton(AF_INET, "127.0.0.2", &sin.sin_addr);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0) {
		perror("dns stub");
		exit(1);
	}
	getsockname(fd, (struct sockaddr *)&sin, &sl);
	dns_port = ntohs(sin.sin_port);
	pid = fork();
	if (pid == 0) {
		static const uint8_t ans[] = { 0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0,
		    60, 0, 4, 127, 0, 0, 2 };
		uint8_t b[600];

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;) {
			struct sockaddr_storage from;
			socklen_t fl = sizeof(from);
			ssize_t n = recvfrom(fd, b, 512, 0,
			    (struct sockaddr *)&from, &fl);
			size_t q = 12, end;
			if (n < 17)
				continue;
			while (q < (size_t)n && b[q] != 0)
				q += (size_t)b[q] + 1;
			end = q + 5;	/* root label, type, class */
			if (end > (size_t)n)
				continue;
			b[2] = 0x81, b[3] = 0x80;	/* QR RD, RA */
			b[6] = b[7] = b[8] = b[9] = b[10] = b[11] = 0;
			if (b[q + 1] == 0 && b[q + 2] == 1) {
				memcpy(b + end, ans, sizeof(ans));
				b[7] = 1;
				end += sizeof(ans);
			}
			(void)sendto(fd, b, end, 0, (struct sockaddr *)&from,
			    fl);
		}
	}
	close(fd);
	return pid;
}

/* The bench's own network namespace (root): loopback, and 203.0.113.0/24
 * routed to it for the redirect. False: no transparent rows. */
static bool
netns_enter(void)
{
	if (geteuid() != 0 || unshare(CLONE_NEWNET) != 0)
		return false;
	return system("ip link set lo up && ip route add 203.0.113.0/24 "
	    "dev lo src 127.0.0.1") == 0;
}

/* One cordon-proxy with --listen and --transparent (the stub as its
 * resolver; SNI_NAME allowed, TLS only) for both rows; the redirect of
 * NOWHERE to its transparent port. */
static bool
start_cordon_transparent(struct target *c, struct target *tr, const char *bin)
{
	char list[300], alog[300], listen[64], tlisten[64], allow[64],
	    res[64], text[256], cmd[256];
	uint16_t tport = free_port();

	snprintf(list, sizeof(list), "%s/cordon-tr.list", tmpdir);
	snprintf(alog, sizeof(alog), "%s/cordon-tr-access.log", tmpdir);
	snprintf(text, sizeof(text), SNI_NAME ":%u\n", up_port);
	write_file(list, text);
	c->port = free_port();
	snprintf(listen, sizeof(listen), "127.0.0.1:%u", c->port);
	snprintf(tlisten, sizeof(tlisten), "127.0.0.1:%u", tport);
	snprintf(allow, sizeof(allow), "127.0.0.2:%u", up_port);
	snprintf(res, sizeof(res), "127.0.0.2:%u", dns_port);
	const char *argv[] = { bin, "--listen", listen, "--transparent",
	    tlisten, "--allowlist", list, "--allow-address", allow,
	    "--resolver", res, "--access-log", alog, "--log-level", "warn",
	    "--max-connections", "10000", NULL };
	c->pid = spawn(argv);
	if (!wait_port(c->port, c->pid) || !wait_port(tport, c->pid))
		return false;
	tr->pid = c->pid;
	tr->port = tport;
	snprintf(cmd, sizeof(cmd), "iptables -w -t nat -A OUTPUT -p tcp -d "
	    "203.0.113.0/24 -j REDIRECT --to-ports %u", tport);
	return system(cmd) == 0;
}

static void
report_transparent(const struct target tg[NTARGETS])
{
	const struct target *c = &tg[7], *tr = &tg[8];

	if (c->skip || tr->skip || c->mbps <= 0 || c->hps <= 0)
		return;
	printf("\nTransparent path, each run (the same daemon; a handshake is "
	    "the ClientHello, the name's check, a connect and one byte back; "
	    "CONNECT also has its request and 200):\n");
	for (int i = 0; i < opt_runs; i++)
		printf("  run %d: CONNECT %6.0f MB/s %6.0f hs/s %5.1f us/hs | "
		    "transparent %6.0f MB/s %6.0f hs/s %5.1f us/hs | tr/CONNECT "
		    "%.3f %.3f\n", i + 1, c->run_mbps[i], c->run_hps[i],
		    c->run_cpu[i], tr->run_mbps[i], tr->run_hps[i],
		    tr->run_cpu[i], tr->run_mbps[i] / c->run_mbps[i],
		    tr->run_hps[i] / c->run_hps[i]);
	printf("transparent vs CONNECT (medians): throughput %.3fx (target "
	    ">= 0.9: %s), handshakes/s %.3fx (>= 0.9: %s), CPU/handshake "
	    "%.3fx\n", tr->mbps / c->mbps, tr->mbps / c->mbps >= 0.9 ? "met" :
	    "NOT met", tr->hps / c->hps, tr->hps / c->hps >= 0.9 ? "met" :
	    "NOT met", c->cpu_us > 0 ? tr->cpu_us / c->cpu_us : 0);
}

static bool
start_tinyproxy(struct target *t)
{
	char conf[300], text[1024];

	t->port = free_port();
	snprintf(conf, sizeof(conf), "%s/tinyproxy.conf", tmpdir);
	snprintf(text, sizeof(text),
	    "Port %u\nListen 127.0.0.1\nTimeout 600\nMaxClients 4000\n"
	    "LogLevel Error\nLogFile \"%s/tinyproxy.log\"\n"
	    "PidFile \"%s/tinyproxy.pid\"\nConnectPort %u\n"
	    "Allow 127.0.0.1\n", t->port, tmpdir, tmpdir, up_port);
	write_file(conf, text);
	const char *argv[] = { "/usr/bin/tinyproxy", "-d", "-c", conf, NULL };
	t->pid = spawn(argv);
	return wait_port(t->port, t->pid);
}

static bool
start_squid(struct target *t)
{
	char conf[300], text[2048];

	t->port = free_port();
	snprintf(conf, sizeof(conf), "%s/squid.conf", tmpdir);
	snprintf(text, sizeof(text),
	    "http_port 127.0.0.1:%u\n"
	    "acl local src 127.0.0.0/8\n"
	    "http_access allow local\nhttp_access deny all\n"
	    "cache deny all\ncache_mem 8 MB\n"
	    "access_log stdio:%s/squid-access.log\n"
	    "cache_log %s/squid-cache.log\n"
	    "pid_filename %s/squid.pid\ncoredump_dir %s\n"
	    "cache_effective_user proxy\nshutdown_lifetime 1 seconds\n"
	    "max_filedesc 16384\nworkers 1\n",
	    t->port, tmpdir, tmpdir, tmpdir, tmpdir);
	write_file(conf, text);
	const char *argv[] = { "/usr/sbin/squid", "-N", "-f", conf, NULL };
	t->pid = spawn(argv);
	return wait_port(t->port, t->pid);
}

static void
stop(struct target *t)
{
	if (t->pid > 0) {
		kill(-t->pid, SIGKILL);
		kill(t->pid, SIGKILL);
		waitpid(t->pid, NULL, 0);
	}
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

/* One run of t (throughput, then handshakes), kept as run i. */
static void
run_once(struct target *t, int i)
{
	fprintf(stderr, "bench_proxy: %s, run %d/%d...\n", t->name, i + 1,
	    opt_runs);
	bench_throughput(t);
	bench_handshakes(t);
	t->run_mbps[i] = t->mbps;
	t->run_hps[i] = t->hps;
	t->run_cpu[i] = t->cpu_us;
	t->run_user[i] = t->user_us;
	t->run_sys[i] = t->sys_us;
}

static double
median_of(const double *runs)
{
	double v[16];

	memcpy(v, runs, sizeof(v));
	return median(v, opt_runs);
}

/* The targets take turns, run by run (the order reversed every other
 * run), so that a noisy moment of the shared machine falls on all of them
 * alike and each ratio compares runs made side by side; then each figure
 * is the median of its target's runs (user and kernel CPU each on its
 * own: they need not add up to the median of the total). */
static void
run_interleaved(struct target *const *ts, int n)
{
	for (int i = 0; i < opt_runs; i++)
		for (int k = 0; k < n; k++)
			run_once(ts[i % 2 == 0 ? k : n - 1 - k], i);
	for (int k = 0; k < n; k++) {
		struct target *t = ts[k];

		t->mbps = median_of(t->run_mbps);
		t->hps = median_of(t->run_hps);
		t->cpu_us = median_of(t->run_cpu);
		t->user_us = median_of(t->run_user);
		t->sys_us = median_of(t->run_sys);
	}
}

/* A ClientHello naming SNI_NAME: the Python ssl capture with its
 * server_name rewritten (tests/proxy/hello_util.c). */
static size_t
sni_hello(uint8_t *out, size_t cap)
{
	static const char *const name[] = { SNI_NAME };

	if (getenv("CORDON_SOURCE_ROOT") == NULL)
		setenv("CORDON_SOURCE_ROOT", CORDON_SOURCE_ROOT, 1);
	return hello_with_names("hello-python-pypi.bin", name, 1, out, cap);
}

/* --cordon PATH --mib N --handshakes N --idle N --threads N --skip LIST
 * --runs N; unknown options are ignored. */
static void
parse_args(int argc, char **argv, const char **cordon, const char **skip)
{
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--cordon") == 0)
			*cordon = argv[i + 1];
		else if (strcmp(argv[i], "--mib") == 0)
			opt_bytes = atoll(argv[i + 1]) * 1024 * 1024;
		else if (strcmp(argv[i], "--handshakes") == 0)
			opt_handshakes = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--idle") == 0)
			opt_idle = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--threads") == 0)
			opt_threads = atoi(argv[i + 1]) > 64 ? 64 :
			    atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--skip") == 0)
			*skip = argv[i + 1];
		else if (strcmp(argv[i], "--runs") == 0)
			opt_runs = atoi(argv[i + 1]) < 1 ? 1 :
			    atoi(argv[i + 1]) > 15 ? 15 : atoi(argv[i + 1]);
	}
}

static void
report_sni(const struct target tg[NTARGETS])
{
	const struct target *on = &tg[5], *off = &tg[6];

	if (on->skip || off->skip || off->mbps <= 0 || off->hps <= 0)
		return;
	printf("\nSNI check, each run (ClientHello of %zu bytes first; "
	    "CONNECT to an IP literal, the name judged by the policy):\n",
	    on->hello_len);
	for (int i = 0; i < opt_runs; i++)
		printf("  run %d: on %6.0f MB/s %6.0f hs/s %5.1f us/hs | off "
		    "%6.0f MB/s %6.0f hs/s %5.1f us/hs | on/off %.3f %.3f\n",
		    i + 1, on->run_mbps[i], on->run_hps[i], on->run_cpu[i],
		    off->run_mbps[i], off->run_hps[i], off->run_cpu[i],
		    on->run_mbps[i] / off->run_mbps[i],
		    on->run_hps[i] / off->run_hps[i]);
	printf("SNI check on vs off (medians): throughput %.3fx, handshakes/s "
	    "%.3fx (target >= 0.95 each), CPU/handshake %.3fx\n",
	    on->mbps / off->mbps, on->hps / off->hps,
	    off->cpu_us > 0 ? on->cpu_us / off->cpu_us : 0);
}

static const char *
met(bool ok)
{
	return ok ? "met" : "NOT met";
}

/* The table of figures, then the ratios against cordon-proxy (tg[3]). */
static void
report(const struct target tg[NTARGETS], double rt_us)
{
	printf("\n%d MiB through one tunnel; %d CONNECT handshakes (%d threads);"
	    " %d idle tunnels; medians of %d runs, the targets' runs "
	    "interleaved\n\n", (int)(opt_bytes >> 20), opt_handshakes,
	    opt_threads, opt_idle, opt_runs);
	printf("%-22s %11s %13s %15s %14s %15s  %s\n", "target", "tunnel MB/s",
	    "handshakes/s", "CPU us/handshk", "user/kernel us", "RSS KiB/tunnel",
	    "notes");
	for (int i = 0; i < NTARGETS; i++) {
		char split[32];

		if (tg[i].skip && tg[i].mbps == 0) {
			printf("%-22s %11s %13s %15s %14s %15s  %s\n", tg[i].name,
			    "-", "-", "-", "-", "-", tg[i].note[0] ? tg[i].note :
			    "skipped");
			continue;
		}
		if (i == 0) {
			printf("%-22s %11.0f %13.0f %15s %14s %15s  %s\n",
			    tg[i].name, tg[i].mbps, tg[i].hps, "-", "-", "-",
			    tg[i].note);
			continue;
		}
		snprintf(split, sizeof(split), "%.0f/%.0f", tg[i].user_us,
		    tg[i].sys_us);
		printf("%-22s %11.0f %13.0f %15.1f %14s %15.2f  %s\n",
		    tg[i].name, tg[i].mbps, tg[i].hps, tg[i].cpu_us, split,
		    tg[i].rss_kib, tg[i].note);
	}
	if (!tg[1].skip && tg[1].mbps > 0 && !tg[3].skip) {
		double thr = tg[3].mbps / tg[1].mbps, hs = tg[3].hps / tg[1].hps,
		    cpu = tg[1].cpu_us > 0 ? tg[3].cpu_us / tg[1].cpu_us : 0;

		/* Issue 16's targets, each against its anchor of this run. */
		printf("\ncordon-proxy vs tinyproxy: throughput %.2fx (target "
		    ">= 2: %s), handshakes/s %.2fx (>= 1.3: %s), CPU/handshake "
		    "%.2fx (<= 0.5: %s)\n", thr, met(thr >= 2), hs,
		    met(hs >= 1.3), cpu, met(cpu > 0 && cpu <= 0.5));
		printf("cordon-proxy RSS per idle tunnel: %.2f KiB (target <= 2:"
		    " %s), tinyproxy %.1f KiB (%.3fx)\n", tg[3].rss_kib,
		    met(tg[3].rss_kib <= 2), tg[1].rss_kib, tg[1].rss_kib > 0 ?
		    tg[3].rss_kib / tg[1].rss_kib : 0);
		/* The kernel's TCP work for the two connections of a
		 * handshake is the same whichever program asks for it. */
		if (tg[1].cpu_us > 0)
			printf("CPU per handshake, kernel part: cordon-proxy %.0f "
			    "us = %.2fx tinyproxy's total (%.0f us); the 0.5x "
			    "target leaves %.0f us for both parts\n",
			    tg[3].sys_us, tg[3].sys_us / tg[1].cpu_us,
			    tg[1].cpu_us, tg[1].cpu_us / 2);
	}
	if (!tg[2].skip && tg[2].mbps > 0 && !tg[3].skip)
		printf("cordon-proxy vs squid: throughput %.2fx, handshakes/s "
		    "%.2fx, CPU/handshake %.2fx\n", tg[3].mbps / tg[2].mbps,
		    tg[3].hps / tg[2].hps, tg[2].cpu_us > 0 ?
		    tg[3].cpu_us / tg[2].cpu_us : 0);
	if (!tg[3].skip && tg[0].mbps > 0)
		printf("cordon-proxy vs direct: throughput %.2fx (target >= 0.5:"
		    " %s), handshakes/s %.2fx\n", tg[3].mbps / tg[0].mbps,
		    met(tg[3].mbps / tg[0].mbps >= 0.5), tg[3].hps / tg[0].hps);
	if (!tg[3].skip && !tg[4].skip && tg[3].hps > 0 && tg[3].cpu_us > 0)
		printf("run mode vs standalone: handshakes/s %.2fx, CPU/handshake"
		    " %.2fx (budget: within 10 %%)\n", tg[4].hps / tg[3].hps,
		    tg[4].cpu_us / tg[3].cpu_us);
	if (!tg[4].skip)
		printf("control socket: register+unregister round trip %.0f us "
		    "(median of 20)\n", rt_us);
	report_sni(tg);
	report_transparent(tg);
}

int
main(int argc, char **argv)
{
	const char *cordon = NULL, *skip = "";
	struct target tg[NTARGETS] = {
		{ .name = "direct (no proxy)" }, { .name = "tinyproxy 1.11" },
		{ .name = "squid 5.7" }, { .name = "cordon-proxy" },
		{ .name = "cordon-proxy run mode" },
		{ .name = "cordon SNI check on" },
		{ .name = "cordon SNI check off" },
		{ .name = "cordon CONNECT by name" },
		{ .name = "cordon transparent" },
	};
	bool netns = false;
	pid_t dns = -1;
	static uint8_t hello[HELLO_CAP];
	double rt_us = -1;
	struct target *live[5];
	int nlive = 0;
	struct rlimit rl;
	pid_t up;
	char path[512];

	parse_args(argc, argv, &cordon, &skip);
	if (cordon == NULL) {
		const char *root = getenv("CORDON_BUILD_ROOT");
		snprintf(path, sizeof(path), "%s/proxy/cordon-proxy",
		    root != NULL ? root : ".");
		cordon = path;
	}
	signal(SIGPIPE, SIG_IGN);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (mkdtemp(tmpdir) == NULL || chmod(tmpdir, 0777) != 0) {
		perror("mkdtemp");
		return 1;
	}
	/* Before anything starts: all of it then runs in the namespace. */
	if (strstr(skip, "transparent") == NULL && !(netns = netns_enter()))
		fprintf(stderr, "bench_proxy: no network namespace of its own "
		    "(needs root): the transparent rows are skipped\n");
	up = up_start();
	if (netns)
		dns = dns_start();

	/* Every anchor and cordon-proxy up at once (idle ones cost nothing),
	 * then their runs interleaved; the idle-tunnel RSS of each last. */
	if (strstr(skip, "tinyproxy") != NULL)
		tg[1].skip = true;
	else if (!start_tinyproxy(&tg[1]))
		snprintf(tg[1].note, sizeof(tg[1].note), "did not start"),
		    tg[1].skip = true;
	if (strstr(skip, "squid") != NULL)
		tg[2].skip = true;
	else if (!start_squid(&tg[2]))
		snprintf(tg[2].note, sizeof(tg[2].note), "did not start"),
		    tg[2].skip = true;
	if (!start_cordon(&tg[3], cordon, true))
		snprintf(tg[3].note, sizeof(tg[3].note), "did not start"),
		    tg[3].skip = true;
	if (strstr(skip, "runmode") != NULL)
		tg[4].skip = true;
	else if (!start_cordon_run(&tg[4], cordon, &rt_us))
		snprintf(tg[4].note, sizeof(tg[4].note), "did not start"),
		    tg[4].skip = true;
	for (int i = 0; i < 5; i++)
		if (!tg[i].skip)
			live[nlive++] = &tg[i];
	run_interleaved(live, nlive);
	for (int i = 0; i < nlive; i++)
		bench_idle(live[i]);
	for (int i = 1; i < 5; i++)
		stop(&tg[i]);
	/* The SNI check, on and off, the same ClientHello; both daemons
	 * up at once, their runs interleaved. */
	tg[5].hello = tg[6].hello = hello;
	tg[5].hello_len = tg[6].hello_len = sni_hello(hello, sizeof(hello));
	tg[6].extra = "--insecure-no-sni-check";
	if (strstr(skip, "sni") != NULL || tg[5].hello_len == 0) {
		tg[5].skip = tg[6].skip = true;
		if (tg[5].hello_len == 0)
			snprintf(tg[5].note, sizeof(tg[5].note),
			    "no ClientHello fixture");
	} else if (!start_cordon(&tg[5], cordon, false) ||
	    !start_cordon(&tg[6], cordon, false)) {
		snprintf(tg[5].note, sizeof(tg[5].note), "did not start");
		tg[5].skip = tg[6].skip = true;
	} else {
		struct target *pair[] = { &tg[5], &tg[6] };
		run_interleaved(pair, 2);
		snprintf(tg[5].note, sizeof(tg[5].note), "idle not measured");
		snprintf(tg[6].note, sizeof(tg[6].note), "idle not measured");
	}
	stop(&tg[5]);
	stop(&tg[6]);
	/* The transparent path beside CONNECT by name: one daemon. */
	tg[7].hello = tg[8].hello = hello;
	tg[7].hello_len = tg[8].hello_len = tg[5].hello_len;
	tg[7].connect_host = SNI_NAME;
	tg[8].transparent = true;
	if (!netns || tg[7].hello_len == 0) {
		tg[7].skip = tg[8].skip = true;
		snprintf(tg[8].note, sizeof(tg[8].note), "%s", !netns ?
		    "skipped (root: a network namespace)" :
		    "no ClientHello fixture");
	} else if (!start_cordon_transparent(&tg[7], &tg[8], cordon)) {
		snprintf(tg[8].note, sizeof(tg[8].note), "did not start");
		tg[7].skip = tg[8].skip = true;
	} else {
		struct target *pair[] = { &tg[7], &tg[8] };
		run_interleaved(pair, 2);
		snprintf(tg[7].note, sizeof(tg[7].note), "idle not measured");
		snprintf(tg[8].note, sizeof(tg[8].note), "idle not measured");
	}
	stop(&tg[7]);
	if (dns > 0) {
		kill(dns, SIGKILL);
		waitpid(dns, NULL, 0);
	}
	kill(up, SIGKILL);
	waitpid(up, NULL, 0);

	report(tg, rt_us);
	(void)util_rm_rf(tmpdir);
	return 0;
}
