/*
 * `cordon serve` under hostile and careless clients (issue 39): the
 * service's memory and the latency of GET /v1/health, on the unix socket
 * and as another tenant over TCP (a new connection each time), under each
 * load the issue measured, next to the same figures idle:
 *   - 1100 idle TCP connections from one address (127.0.0.2);
 *   - 200 idle TCP connections from twenty addresses (the listener's cap);
 *   - 64 connections without a token, each offering 16 MiB of body;
 *   - 15.8 MiB JSON bodies that will be refused (8 M values), two at a
 *     time, sent for as long as the figure is measured;
 *   - a run whose reply is ~200 MB (16 MiB of control bytes on each
 *     stream) to a client that reads nothing, measured while the reply is
 *     built and then while it stays unsent (needs dockerd, runsc and a
 *     passing probe, as bench_serve).
 * One service, pool 0, on 127.0.0.1 and a temporary unix socket.
 * Usage: bench_hostile [CORDON [N]] (N health requests per path and
 * figure, default 40).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench_svc.h"
#include "common/proc.h"
#include "common/util.h"

#define MAX_N 400
#define MAX_CONNS 1400
#define TOKEN_A "aaaaaaaaaaaaaaaa"
#define TOKEN_B "bbbbbbbbbbbbbbbb"

static struct bench_svc sv = { .name = "hostile" };
static uint16_t port;

/* One request over TCP from src; the status, or -1. */
static int
tcp_http(const char *src, const char *req, size_t reqlen, char *resp,
    size_t len)
{
	struct sockaddr_in sa = { .sin_family = AF_INET }, me = {
	    .sin_family = AF_INET };
	struct timeval tv = { 30, 0 };
	size_t got = 0, sent = 0;
	ssize_t n;
	int fd, code = -1;

	resp[0] = '\0';
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	inet_pton(AF_INET, src, &me.sin_addr);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons(port);
	if (bind(fd, (struct sockaddr *)&me, sizeof(me)) < 0 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		goto out;
	while (sent < reqlen && (n = send(fd, req + sent, reqlen - sent,
	    MSG_NOSIGNAL)) > 0)
		sent += (size_t)n;
	while (got + 1 < len && (n = read(fd, resp + got, len - 1 - got)) > 0)
		got += (size_t)n;
	resp[got] = '\0';
	if (sscanf(resp, "HTTP/1.1 %d", &code) != 1)
		code = -1;
out:
	close(fd);
	return code;
}

static int
health_tcp(void)
{
	static const char req[] = "GET /v1/health HTTP/1.1\r\nHost: c\r\n"
	    "Authorization: Bearer " TOKEN_B "\r\nConnection: close\r\n\r\n";
	char resp[2048];

	return tcp_http("127.0.0.1", req, sizeof(req) - 1, resp, sizeof(resp));
}

static int
health_unix(void)
{
	char resp[4096];

	return bench_svc_http(&sv, "GET", "/v1/health", NULL, resp,
	    sizeof(resp));
}

static int64_t
vm(const char *key)
{
	char path[64], line[256];
	int64_t kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)proc_pid(sv.p));
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, key, strlen(key)) == 0)
			sscanf(line + strlen(key) + 1, "%lld", (long long *)&kb);
	fclose(f);
	return kb / 1024;
}

struct figure {
	const char *load;
	int64_t rss, hwm;	/* MB */
	int64_t u50, u99, umax, t50, t99, tmax;	/* microseconds */
	int n, fails;
};

static struct figure idle;

static int64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Health requests on each path, 20 ms apart, interleaved: at least n,
 * and on while more() says so (at most MAX_N). */
static void
measure(struct figure *f, int n, bool (*more)(void))
{
	static int64_t u[MAX_N], t[MAX_N];
	int64_t t0;
	int i;

	f->fails = 0;
	for (i = 0; i < MAX_N && (i < n || (more != NULL && more())); i++) {
		t0 = now_us();
		f->fails += health_unix() != 200;
		u[i] = now_us() - t0;
		t0 = now_us();
		f->fails += health_tcp() != 200;
		t[i] = now_us() - t0;
		usleep(20 * 1000);
	}
	f->n = i;
	f->u50 = bench_pct(u, i, 50);
	f->u99 = bench_pct(u, i, 99);
	f->umax = u[i - 1];
	f->t50 = bench_pct(t, i, 50);
	f->t99 = bench_pct(t, i, 99);
	f->tmax = t[i - 1];
	f->rss = vm("VmRSS");
	f->hwm = vm("VmHWM");
}

static void
print(const struct figure *f)
{
	printf("%-34s %5lld %+5lld %5lld | %5.1f %6.1f %6.1f | %5.1f %6.1f "
	    "%6.1f | %6.1fx %6.1fx %3d %d\n", f->load, (long long)f->rss,
	    (long long)(f->rss - idle.rss), (long long)f->hwm,
	    (double)f->u50 / 1000, (double)f->u99 / 1000,
	    (double)f->umax / 1000, (double)f->t50 / 1000,
	    (double)f->t99 / 1000, (double)f->tmax / 1000,
	    idle.u99 > 0 ? (double)f->u99 / (double)idle.u99 : 0,
	    idle.t99 > 0 ? (double)f->t99 / (double)idle.t99 : 0, f->n,
	    f->fails);
}

/* n idle connections, spread over naddr addresses from 127.0.0.base. */
static int
open_idle(int *fds, int n, int base, int naddr)
{
	struct sockaddr_in sa = { .sin_family = AF_INET }, me = {
	    .sin_family = AF_INET };
	struct timeval tv = { 1, 0 };
	int got = 0;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons(port);
	for (int i = 0; i < n; i++) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		me.sin_addr.s_addr = htonl(0x7f000000u | (uint32_t)(base +
		    i % naddr));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (fd < 0 || bind(fd, (struct sockaddr *)&me,
		    sizeof(me)) < 0 || connect(fd, (struct sockaddr *)&sa,
		    sizeof(sa)) < 0) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		fds[got++] = fd;
	}
	return got;
}

static void
close_all(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

/* 64 connections with no token, each offering 16 MiB of body until the
 * socket takes no more. */
static int
open_preauth(int *fds)
{
	static const char head[] = "POST /v1/runs HTTP/1.1\r\nHost: c\r\n"
	    "Content-Length: 16777216\r\n\r\n";
	static char chunk[65536];
	int n = open_idle(fds, 64, 60, 8);

	for (int i = 0; i < n; i++) {
		(void)send(fds[i], head, sizeof(head) - 1, MSG_NOSIGNAL);
		fcntl(fds[i], F_SETFL, O_NONBLOCK);
		for (int k = 0; k < 256; k++)
			if (send(fds[i], chunk, sizeof(chunk), MSG_NOSIGNAL) <= 0)
				break;
	}
	return n;
}

/* Refused bodies, two threads, until stop. */
static atomic_int stop_refused;
static char *big;
static size_t biglen;
static atomic_int refused_sent;

static void *
refused_loop(void *arg)
{
	char r[1024];

	(void)arg;
	while (!stop_refused) {
		(void)tcp_http("127.0.0.3", big, biglen, r, sizeof(r));
		refused_sent++;
	}
	return NULL;
}

static int
make_big(void)
{
	static const char pre[] = "{\"code\":\"1\",\"nope\":[";
	size_t vals = 8280000, body = sizeof(pre) - 1 + vals * 2 + 1 + 2;
	char head[256];
	int hl = snprintf(head, sizeof(head), "POST /v1/runs HTTP/1.1\r\n"
	    "Host: c\r\nAuthorization: Bearer " TOKEN_A "\r\nContent-Length: "
	    "%zu\r\nConnection: close\r\n\r\n", body);
	char *p;

	if ((big = malloc((size_t)hl + body)) == NULL)
		return -1;
	p = big;
	memcpy(p, head, (size_t)hl);
	p += hl;
	memcpy(p, pre, sizeof(pre) - 1);
	p += sizeof(pre) - 1;
	for (size_t i = 0; i < vals; i++) {
		*p++ = '0';
		*p++ = ',';
	}
	memcpy(p, "0]}", 3);
	p += 3;
	biglen = (size_t)(p - big);
	return 0;
}

/* The unread reply: a run from tenant a on a socket never read. */
static int
start_unread(void)
{
	static const char body[] = "{\"code\":\"import sys\\n"
	    "sys.stdout.buffer.write(b'\\\\x01' * (16 << 20))\\n"
	    "sys.stderr.buffer.write(b'\\\\x01' * (16 << 20))\",\"max_output\":"
	    "16777216,\"timeout_s\":120}";
	struct sockaddr_in sa = { .sin_family = AF_INET };
	char req[1024];
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), rcv = 4096;
	int rl;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons(port);
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	rl = snprintf(req, sizeof(req), "POST /v1/runs HTTP/1.1\r\nHost: c\r\n"
	    "Authorization: Bearer " TOKEN_A "\r\nContent-Length: %zu\r\n\r\n"
	    "%s", sizeof(body) - 1, body);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    write(fd, req, (size_t)rl) != rl) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static int active(void);

/* While tenant a's run is in flight (its ~200 MB reply being built). */
static bool
running(void)
{
	return active() > 0;
}

/* "active" of the unix socket's /v1/health, or -1. */
static int
active(void)
{
	char resp[4096];
	const char *q;
	int n;

	if (bench_svc_http(&sv, "GET", "/v1/health", NULL, resp,
	    sizeof(resp)) != 200 || (q = strstr(resp, "\"active\":")) == NULL ||
	    sscanf(q + 9, "%d", &n) != 1)
		return -1;
	return n;
}

int
main(int argc, char **argv)
{
	const char *cordon = argc > 1 ? argv[1] : "./cordon";
	int n = argc > 2 ? atoi(argv[2]) : 40;
	char dir[] = "/tmp/cordon-bench-hostile.XXXXXX", cfg[128], text[1024];
	static int fds[MAX_CONNS];
	struct figure f;
	struct rlimit rl;
	pthread_t th[2];
	int got, fd;
	FILE *cf;

	if (n < 2 || n > MAX_N || mkdtemp(dir) == NULL)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	signal(SIGPIPE, SIG_IGN);
	port = (uint16_t)(30000 + getpid() % 20000);
	snprintf(cfg, sizeof(cfg), "%s/cordon.json", dir);
	snprintf(text, sizeof(text), "{\"audit_log\": \"%s/audit.log\", "
	    "\"limits\": {\"max_output_cap\": \"16m\"}, \"serve\": {"
	    "\"listen\": \"127.0.0.1:%u\", \"head_timeout_s\": 10, "
	    "\"write_timeout_s\": 60, \"refusals_per_min\": 100000, "
	    "\"max_connections\": 128, \"tenants\": ["
	    "{\"name\": \"a\", \"token\": \"" TOKEN_A "\", \"max_concurrent\": "
	    "1, \"max_queue\": 1}, {\"name\": \"b\", \"token\": \"" TOKEN_B
	    "\", \"max_concurrent\": 2}]}}", dir, port);
	if ((cf = fopen(cfg, "w")) == NULL || fputs(text, cf) < 0 ||
	    fclose(cf) != 0 || bench_svc_start(&sv, cordon, dir, cfg, "0") < 0 ||
	    make_big() < 0)
		return 1;
	printf("bench_hostile: cordon serve under the loads of issue 39: RSS, "
	    "its change from idle and the peak so far in MB; GET /v1/health on "
	    "the unix socket (u) and as tenant b over TCP on a new connection "
	    "(t): p50/p99/max in ms, at least %d each, 20 ms apart; p99 over "
	    "idle's; requests; failures\n", n);
	printf("%-34s %5s %5s %5s | %5s %6s %6s | %5s %6s %6s | %7s %7s %3s %s\n",
	    "load", "RSS", "idle+", "peak", "u50", "u99", "umax", "t50", "t99",
	    "tmax", "u99/idl", "t99/idl", "n", "fail");
	idle.load = "idle";
	measure(&idle, n, NULL);
	print(&idle);

	got = open_idle(fds, 1100, 2, 1);
	f.load = "1100 idle conns, one address";
	measure(&f, n, NULL);
	print(&f);
	close_all(fds, got);

	got = open_idle(fds, 200, 10, 20);
	f.load = "200 idle conns, 20 addr, cap 128";
	measure(&f, n, NULL);
	print(&f);
	close_all(fds, got);

	got = open_preauth(fds);
	f.load = "64 pre-auth bodies of 16 MiB";
	measure(&f, n, NULL);
	print(&f);
	close_all(fds, got);

	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, refused_loop, NULL);
	f.load = "refused 15.8 MiB bodies, 2 at once";
	measure(&f, n, NULL);
	stop_refused = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	print(&f);
	printf("  (%d refused bodies sent while measured)\n",
	    (int)refused_sent);

	if ((fd = start_unread()) < 0) {
		printf("unread reply: cannot send the run\n");
	} else {
		/* While the ~200 MB reply is built (the run's end), then
		 * while it stays unsent. */
		for (int i = 0; i < 600 && active() == 0; i++)
			usleep(50 * 1000);
		f.load = "unread reply: run, JSON built";
		measure(&f, n, running);
		print(&f);
		f.load = "unread ~200 MB reply, held";
		measure(&f, n, NULL);
		print(&f);
		close(fd);
	}
	bench_svc_stop(&sv);
	free(big);
	snprintf(text, sizeof(text), "%s/audit.log", dir);
	unlink(text);
	unlink(cfg);
	rmdir(dir);
	return 0;
}
