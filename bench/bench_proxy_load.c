/*
 * bench_proxy's load: the upstream every target tunnels to (one thread per
 * connection, blocking I/O, a command byte says what to send back), the
 * clients that measure a target (throughput, handshakes, idle tunnels) and
 * the proxy's CPU and RSS read from /proc. Apart from bench_proxy.c, which
 * starts the targets in turn and reports.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench_proxy.h"
#include "tests/proxy/hello_util.h"

#define BUFSZ (256 * 1024)

uint16_t bench_up_port;

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
	long long left = bench_opt.bytes;

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

int
bench_bind_local(int type, uint16_t *port, const char *what)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0), one = 1;

	inet_pton(AF_INET, "127.0.0.2", &sin.sin_addr);
	if (type == SOCK_STREAM)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0 ||
	    (type == SOCK_STREAM && listen(fd, 4096) != 0)) {
		perror(what);
		exit(1);
	}
	getsockname(fd, (struct sockaddr *)&sin, &sl);
	*port = ntohs(sin.sin_port);
	return fd;
}

pid_t
bench_up_start(void)
{
	int lfd = bench_bind_local(SOCK_STREAM, &bench_up_port, "upstream");
	pid_t pid = fork();

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
int
bench_tcp_connect(const char *ip, uint16_t port)
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
		return bench_tcp_connect("127.0.0.2", bench_up_port);
	if (t->transparent)
		return bench_tcp_connect(NOWHERE, bench_up_port);
	fd = bench_tcp_connect("127.0.0.1", t->port);
	if (fd < 0)
		return -1;
	snprintf(req, sizeof(req), "CONNECT %s:%u HTTP/1.1\r\n"
	    "Host: %s:%u\r\n%s\r\n", t->connect_host != NULL ?
	    t->connect_host : "127.0.0.2", bench_up_port,
	    t->connect_host != NULL ? t->connect_host : "127.0.0.2",
	    bench_up_port, t->auth != NULL ? t->auth : "");
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

void
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
	if (got != bench_opt.bytes)
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

void
bench_handshakes(struct target *t)
{
	pthread_t th[64];
	struct hs_arg args[64];
	int nt = bench_opt.threads, failed = 0, ok;
	double t0, u0 = 0, s0 = 0, u1, s1;

	if (t->pid > 0)
		proc_cpu_s(t->pid, &u0, &s0);
	t0 = now_s();
	for (int i = 0; i < nt; i++) {
		args[i] = (struct hs_arg){ .t = t,
		    .n = bench_opt.handshakes / nt };
		pthread_create(&th[i], NULL, hs_thread, &args[i]);
	}
	for (int i = 0; i < nt; i++) {
		pthread_join(th[i], NULL);
		failed += args[i].failed;
	}
	ok = bench_opt.handshakes - failed;
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

void
bench_idle(struct target *t)
{
	int *fds = calloc((size_t)bench_opt.idle, sizeof(int));
	long r0, r1;
	int ok = 0;

	if (t->pid <= 0 || fds == NULL) {
		free(fds);
		return;
	}
	/* Let the previous phase's connections finish closing. */
	sleep(1);
	r0 = proc_rss_kib(t->pid);
	for (int i = 0; i < bench_opt.idle; i++) {
		fds[i] = open_tunnel(t);
		if (fds[i] >= 0 && send(fds[i], "I", 1, MSG_NOSIGNAL) == 1)
			ok++;
	}
	r1 = proc_rss_kib(t->pid);
	t->rss_kib = ok > 0 ? (double)(r1 - r0) / ok : 0;
	if (ok < bench_opt.idle)
		snprintf(t->note + strlen(t->note),
		    sizeof(t->note) - strlen(t->note), " %d/%d idle tunnels", ok,
		    bench_opt.idle);
	for (int i = 0; i < bench_opt.idle; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(fds);
}
