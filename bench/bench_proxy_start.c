/*
 * bench_proxy's targets started and stopped: cordon-proxy standalone, in
 * run mode (control socket, one registered run) and with the transparent
 * listener (its stub DNS server and network namespace), tinyproxy and
 * squid, each with its files in bench_tmpdir. Apart from the load
 * (bench_proxy_load.c) and the report (bench_proxy.c).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_proxy.h"
#include "bench_proxy_ctl.h"

#define BENCH_TOKEN \
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* --- starting the proxies ---------------------------------------------- */

char bench_tmpdir[] = "/tmp/cordon-bench-XXXXXX";

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
		int fd = bench_tcp_connect("127.0.0.1", port);
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
bool
bench_start_cordon(struct target *t, const char *bin, bool raw)
{
	char list[300], alog[300], listen[64], allow[64], text[256];

	snprintf(list, sizeof(list), "%s/cordon-%u.list", bench_tmpdir,
	    t->port = free_port());
	snprintf(alog, sizeof(alog), "%s/cordon-%u-access.log", bench_tmpdir,
	    t->port);
	snprintf(text, sizeof(text), "127.0.0.2:%u%s\n" SNI_NAME ":%u\n",
	    bench_up_port, raw ? " raw" : "", bench_up_port);
	write_file(list, text);
	snprintf(listen, sizeof(listen), "127.0.0.1:%u", t->port);
	snprintf(allow, sizeof(allow), "127.0.0.2:%u", bench_up_port);
	const char *argv[] = { bin, "--listen", listen, "--allowlist", list,
	    "--allow-address", allow, "--access-log", alog, "--log-level",
	    "warn", "--max-connections", "10000", t->extra, NULL };
	t->pid = spawn(argv);
	return wait_port(t->port, t->pid);
}

/* Run mode: a policy directory with "bench", the control socket, one
 * registered run whose credential goes with every CONNECT; then the
 * register+unregister round trip into *rt_us. */
bool
bench_start_cordon_run(struct target *t, const char *bin, double *rt_us)
{
	static char auth[512];
	char dir[300], list[340], alog[300], sock[300], listen[64], allow[64],
	    text[128];

	snprintf(dir, sizeof(dir), "%s/policies", bench_tmpdir);
	snprintf(list, sizeof(list), "%s/bench.list", dir);
	snprintf(alog, sizeof(alog), "%s/cordon-run-access.log", bench_tmpdir);
	snprintf(sock, sizeof(sock), "%s/ctl.sock", bench_tmpdir);
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return false;
	snprintf(text, sizeof(text), "127.0.0.2:%u raw\n", bench_up_port);
	write_file(list, text);
	t->port = free_port();
	snprintf(listen, sizeof(listen), "127.0.0.1:%u", t->port);
	snprintf(allow, sizeof(allow), "127.0.0.2:%u", bench_up_port);
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
pid_t
bench_dns_start(void)
{
	int fd = bench_bind_local(SOCK_DGRAM, &dns_port, "dns stub");
	pid_t pid = fork();

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
bool
bench_netns_enter(void)
{
	if (geteuid() != 0 || unshare(CLONE_NEWNET) != 0)
		return false;
	return system("ip link set lo up && ip route add 203.0.113.0/24 "
	    "dev lo src 127.0.0.1") == 0;
}

/* One cordon-proxy with --listen and --transparent (the stub as its
 * resolver; SNI_NAME allowed, TLS only) for both rows; the redirect of
 * NOWHERE to its transparent port. */
bool
bench_start_cordon_transparent(struct target *c, struct target *tr,
    const char *bin)
{
	char list[300], alog[300], listen[64], tlisten[64], allow[64],
	    res[64], text[256], cmd[256];
	uint16_t tport = free_port();

	snprintf(list, sizeof(list), "%s/cordon-tr.list", bench_tmpdir);
	snprintf(alog, sizeof(alog), "%s/cordon-tr-access.log", bench_tmpdir);
	snprintf(text, sizeof(text), SNI_NAME ":%u\n", bench_up_port);
	write_file(list, text);
	c->port = free_port();
	snprintf(listen, sizeof(listen), "127.0.0.1:%u", c->port);
	snprintf(tlisten, sizeof(tlisten), "127.0.0.1:%u", tport);
	snprintf(allow, sizeof(allow), "127.0.0.2:%u", bench_up_port);
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

/* An anchor: text into bench_tmpdir/NAME.conf, then "argv0 fg cflag
 * CONF" (in the foreground). */
static bool
start_anchor(struct target *t, const char *name, const char *text,
    const char *argv0, const char *fg, const char *cflag)
{
	char conf[300];

	snprintf(conf, sizeof(conf), "%s/%s.conf", bench_tmpdir, name);
	write_file(conf, text);
	const char *argv[] = { argv0, fg, cflag, conf, NULL };
	t->pid = spawn(argv);
	return wait_port(t->port, t->pid);
}

bool
bench_start_tinyproxy(struct target *t)
{
	char text[1024];

	t->port = free_port();
	snprintf(text, sizeof(text),
	    "Port %u\nListen 127.0.0.1\nTimeout 600\nMaxClients 4000\n"
	    "LogLevel Error\nLogFile \"%s/tinyproxy.log\"\n"
	    "PidFile \"%s/tinyproxy.pid\"\nConnectPort %u\n"
	    "Allow 127.0.0.1\n", t->port, bench_tmpdir, bench_tmpdir,
	    bench_up_port);
	return start_anchor(t, "tinyproxy", text, "/usr/bin/tinyproxy", "-d",
	    "-c");
}

bool
bench_start_squid(struct target *t)
{
	char text[2048];

	t->port = free_port();
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
	    t->port, bench_tmpdir, bench_tmpdir, bench_tmpdir, bench_tmpdir);
	return start_anchor(t, "squid", text, "/usr/sbin/squid", "-N", "-f");
}

void
bench_stop(struct target *t)
{
	if (t->pid > 0) {
		kill(-t->pid, SIGKILL);
		kill(t->pid, SIGKILL);
		waitpid(t->pid, NULL, 0);
	}
}
