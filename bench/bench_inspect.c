/*
 * bench_inspect: TLS inspection next to the raw tunnel, one run, loopback.
 * The same TLS upstream (127.0.0.2, a P-256 certificate from a CA made
 * here) is reached through cordon-proxy two ways: a raw tunnel (the
 * client's TLS goes end to end, splice) and an inspected one (TLS
 * terminated with a minted leaf, the request checked, a verified TLS
 * connection upstream). Reports throughput of one large GET, handshakes
 * per second (CONNECT + TLS + one small GET, Connection: close) and the
 * proxy's own CPU per handshake (utime + stime from /proc), with ratios.
 * Medians of --runs. Not a test: run it by hand (scripts/bench).
 * Also beside socat terminating TLS and relaying over a second verified
 * TLS connection (OPENSSL-LISTEN,fork -> OPENSSL), when /usr/bin/socat is
 * there (scripts/setup installs it): an inspecting relay without HTTP.
 * Measured (clang release, 2 shared CPUs, 256 MiB, 1000 handshakes on 2
 * threads, medians of 3): raw 1073 MiB/s, 1276 hs/s, 0.23 ms proxy CPU/hs;
 * inspected 486 MiB/s (0.45x), 680 hs/s (0.53x), 0.91 ms CPU/hs (4.0x: a
 * leaf signature, an upstream handshake with chain verification, user-space
 * copies); socat 567 MiB/s, 44 hs/s, 4.9 ms CPU/hs (a fork and the CA file
 * loaded per connection): inspected/socat 0.86x throughput, 15x hs/s.
 *
 *   bench_inspect [--cordon PATH] [--mib N] [--handshakes N] [--threads N]
 *                 [--runs N]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

static long long opt_mib = 256;
static int opt_handshakes = 400, opt_threads = 2, opt_runs = 3;
static const char *opt_cordon;
static uint16_t up_port, raw_port, px_port, socat_port;
static pid_t socat_pid;
static SSL_CTX *up_ctx, *cli_raw, *cli_insp;
static char dir[64];
static pid_t px_pid;

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
die(const char *what)
{
	fprintf(stderr, "bench_inspect: %s\n", what);
	ERR_print_errors_fp(stderr);
	if (px_pid > 0)
		kill(px_pid, SIGKILL);
	exit(1);
}

/* --- certificates -------------------------------------------------------- */

static X509 *
mkcert(EVP_PKEY *key, const char *cn, const char *san, X509 *ca,
    EVP_PKEY *cakey)
{
	X509 *x = X509_new();
	X509V3_CTX ctx;
	X509_EXTENSION *e;

	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), (long)getpid() + (san != NULL));
	X509_gmtime_adj(X509_getm_notBefore(x), -3600);
	X509_gmtime_adj(X509_getm_notAfter(x), 86400);
	X509_set_pubkey(x, key);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
	    (const unsigned char *)cn, -1, -1, 0);
	X509_set_issuer_name(x, X509_get_subject_name(ca != NULL ? ca : x));
	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, ca != NULL ? ca : x, x, NULL, NULL, 0);
	e = X509V3_EXT_conf_nid(NULL, &ctx, NID_basic_constraints,
	    san == NULL ? "critical,CA:TRUE" : "critical,CA:FALSE");
	X509_add_ext(x, e, -1);
	X509_EXTENSION_free(e);
	if (san != NULL) {
		e = X509V3_EXT_conf_nid(NULL, &ctx, NID_subject_alt_name, san);
		X509_add_ext(x, e, -1);
		X509_EXTENSION_free(e);
	}
	X509_sign(x, cakey != NULL ? cakey : key, EVP_sha256());
	return x;
}

/* --- upstream: thread per connection, one request each ------------------ */

static bool
ssl_write_all(SSL *s, const char *p, size_t n)
{
	while (n > 0) {
		int w = SSL_write(s, p, n > 65536 ? 65536 : (int)n);
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

static void *
up_conn(void *arg)
{
	static char chunk[65536];
	SSL *s = arg;
	char req[4096], out[256];
	size_t n = 0;
	long long big;

	if (SSL_accept(s) != 1)
		goto done;
	while (n + 1 < sizeof(req)) {
		int r = SSL_read(s, req + n, (int)(sizeof(req) - 1 - n));
		if (r <= 0)
			goto done;
		n += (size_t)r;
		req[n] = '\0';
		if (strstr(req, "\r\n\r\n") != NULL)
			break;
	}
	big = strncmp(req, "GET /big", 8) == 0 ? opt_mib << 20 : 2;
	snprintf(out, sizeof(out), "HTTP/1.1 200 OK\r\nContent-Length: %lld\r\n"
	    "Connection: close\r\n\r\n", big);
	if (!ssl_write_all(s, out, strlen(out)))
		goto done;
	if (big == 2)
		(void)ssl_write_all(s, "ok", 2);
	for (long long left = big > 2 ? big : 0; left > 0;
	    left -= (long long)sizeof(chunk))
		if (!ssl_write_all(s, chunk, left < (long long)sizeof(chunk) ?
		    (size_t)left : sizeof(chunk)))
			break;
	(void)SSL_shutdown(s);
done:
	close(SSL_get_fd(s));
	SSL_free(s);
	return NULL;
}

static void *
up_accept(void *arg)
{
	int lfd = (int)(long)arg;

	for (;;) {
		int fd = accept(lfd, NULL, NULL);
		pthread_t t;
		SSL *s;

		if (fd < 0)
			continue;
		s = SSL_new(up_ctx);
		SSL_set_fd(s, fd);
		if (pthread_create(&t, NULL, up_conn, s) != 0) {
			SSL_free(s);
			close(fd);
			continue;
		}
		pthread_detach(t);
	}
	return NULL;
}

/* --- the proxy ----------------------------------------------------------- */

static void
px_start(void)
{
	char al[128], ca[128], key[128], upca[128], cmd[512], line[512];
	int pipefd[2];
	FILE *f;

	snprintf(al, sizeof(al), "%s/allow.list", dir);
	snprintf(ca, sizeof(ca), "%s/egress/ca.crt", dir);
	snprintf(key, sizeof(key), "%s/egress/ca.key", dir);
	snprintf(upca, sizeof(upca), "%s/upca.pem", dir);
	snprintf(cmd, sizeof(cmd), "%s --make-ca %s/egress --ca-roots %s "
	    ">/dev/null 2>&1", opt_cordon, dir, upca);
	if (system(cmd) != 0)
		die("cordon-proxy --make-ca failed");
	/* The same upstream on two ports: one entry inspected, one raw. */
	f = fopen(al, "w");
	fprintf(f, "127.0.0.2:%u inspect methods=GET\n127.0.0.2:%u\n",
	    up_port, raw_port);
	fclose(f);
	if (pipe(pipefd) != 0)
		die("pipe");
	px_pid = fork();
	if (px_pid == 0) {
		char *argv[] = { (char *)opt_cordon, "--listen", "127.0.0.1:0",
		    "--allowlist", al, "--allow-address", "127.0.0.2",
		    "--ca-cert", ca,
		    "--ca-key", key, "--upstream-ca", upca, "--max-connections",
		    "100000", NULL };
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(pipefd[1], 2);
		execv(opt_cordon, argv);
		_exit(127);
	}
	close(pipefd[1]);
	f = fdopen(pipefd[0], "r");
	while (fgets(line, sizeof(line), f) != NULL) {
		char *p = strstr(line, "listening on 127.0.0.1:");
		if (p != NULL) {
			px_port = (uint16_t)atoi(p + 23);
			break;
		}
	}
	if (px_port == 0)
		die("cordon-proxy did not start");
	/* Its stderr goes on being drained so it never blocks. */
	if (fork() == 0) {
		while (fgets(line, sizeof(line), f) != NULL)
			;
		_exit(0);
	}
	fclose(f);
}

/* The anchor: socat terminating TLS (the upstream's own certificate) and
 * relaying over a second, verified TLS connection: what an inspecting
 * relay costs without any HTTP parsing. One process per connection. */
static bool
socat_start(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	char listen[300], conn[300];
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (access("/usr/bin/socat", X_OK) != 0)
		return false;
	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	bind(fd, (struct sockaddr *)&sin, sizeof(sin));
	getsockname(fd, (struct sockaddr *)&sin, &sl);
	socat_port = ntohs(sin.sin_port);
	close(fd);
	snprintf(listen, sizeof(listen), "OPENSSL-LISTEN:%u,bind=127.0.0.1,"
	    "reuseaddr,fork,backlog=1024,cert=%s/up.pem,key=%s/up.key,verify=0",
	    socat_port, dir, dir);
	snprintf(conn, sizeof(conn), "OPENSSL:127.0.0.2:%u,cafile=%s/upca.pem,"
	    "commonname=127.0.0.2", up_port, dir);
	socat_pid = fork();
	if (socat_pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(null, 2);
		execl("/usr/bin/socat", "socat", listen, conn, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 100; i++) {
		struct sockaddr_in a = { .sin_family = AF_INET,
		    .sin_port = htons(socat_port) };
		int c = socket(AF_INET, SOCK_STREAM, 0);
		inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
		if (connect(c, (struct sockaddr *)&a, sizeof(a)) == 0) {
			close(c);
			return true;
		}
		close(c);
		usleep(20000);
	}
	return false;
}

/* utime + stime (+ reaped children's: socat's forks) of pid, seconds. */
static double
cpu_s(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut = 0, st = 0, cut = 0, cst = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (f == NULL || fgets(buf, sizeof(buf), f) == NULL)
		die("proc stat");
	fclose(f);
	p = strrchr(buf, ')');
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu "
	    "%lu %lu", &ut, &st, &cut, &cst) != 4)
		die("proc stat format");
	return (double)(ut + st + cut + cst) / (double)sysconf(_SC_CLK_TCK);
}

static double
px_cpu_s(void)
{
	char path[64], buf[1024], *p;
	unsigned long ut = 0, st = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)px_pid);
	f = fopen(path, "r");
	if (f == NULL || fgets(buf, sizeof(buf), f) == NULL)
		die("proc stat");
	fclose(f);
	p = strrchr(buf, ')');
	/* fields 14, 15 after the ")" (field 2) */
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
	    &ut, &st) != 2)
		die("proc stat format");
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* --- the client ---------------------------------------------------------- */

/* CONNECT, TLS, GET path, read the whole response; bytes of body. */
static long long
exchange(int mode, const char *path)
{
	char buf[1 << 16], req[256];
	struct sockaddr_in sin = { .sin_family = AF_INET,
	    .sin_port = htons(mode == 2 ? socat_port : px_port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	bool inspected = mode == 1;
	long long body = 0;
	size_t n = 0;
	SSL *s;

	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0)
		die("connect to the proxy");
	snprintf(req, sizeof(req), "CONNECT 127.0.0.2:%u HTTP/1.1\r\n\r\n",
	    inspected ? up_port : raw_port);
	if (mode != 2 && send(fd, req, strlen(req), 0) < 0)
		die("send");
	while (mode != 2 && (n < 4 || memcmp(buf + n - 4, "\r\n\r\n", 4) != 0))
		if (recv(fd, buf + n++, 1, 0) != 1)
			die("CONNECT answer");
	if (mode != 2 && strncmp(buf, "HTTP/1.1 200", 12) != 0) {
		fprintf(stderr, "%.*s", (int)n, buf);
		die("CONNECT refused");
	}
	s = SSL_new(inspected ? cli_insp : cli_raw);
	SSL_set_fd(s, fd);
	X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(s), "127.0.0.2");
	if (SSL_connect(s) != 1)
		die("TLS through the proxy");
	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nConnection: close\r\n\r\n",
	    path);
	if (!ssl_write_all(s, req, strlen(req)))
		die("request");
	for (;;) {
		int r = SSL_read(s, buf, sizeof(buf));
		if (r <= 0)
			break;
		body += r;
	}
	SSL_free(s);
	close(fd);
	return body;
}

struct hs_arg {
	int mode;
	int n;
};

static void *
hs_thread(void *arg)
{
	struct hs_arg *a = arg;

	for (int i = 0; i < a->n; i++)
		if (exchange(a->mode, "/") < 2)
			die("short response");
	return NULL;
}

static int
cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double
median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	return v[n / 2];
}

/* One row: MiB/s of one GET /big, handshakes/s, proxy CPU ms/handshake. */
static void
row(int mode, double *mibs, double *hps, double *cpu_ms)
{
	double m[16], h[16], c[16];

	for (int r = 0; r < opt_runs; r++) {
		pthread_t t[64];
		struct hs_arg a = { mode, opt_handshakes / opt_threads };
		double t0 = now_s(), c0;
		long long got = exchange(mode, "/big");

		m[r] = (double)got / (1 << 20) / (now_s() - t0);
		c0 = mode == 2 ? cpu_s(socat_pid) : px_cpu_s();
		t0 = now_s();
		for (int i = 0; i < opt_threads; i++)
			pthread_create(&t[i], NULL, hs_thread, &a);
		for (int i = 0; i < opt_threads; i++)
			pthread_join(t[i], NULL);
		h[r] = (double)(a.n * opt_threads) / (now_s() - t0);
		c[r] = ((mode == 2 ? cpu_s(socat_pid) : px_cpu_s()) - c0) *
		    1000.0 / (double)(a.n * opt_threads);
	}
	*mibs = median(m, opt_runs);
	*hps = median(h, opt_runs);
	*cpu_ms = median(c, opt_runs);
}

int
main(int argc, char **argv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	double rm, rh, rc, im, ih, ic, sm = 0, sh = 0, sc = 0;
	bool have_socat;
	EVP_PKEY *cak, *k;
	X509 *ca, *leaf;
	pthread_t t;
	char path[128];
	FILE *f;
	int lfd;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--cordon") == 0 && i + 1 < argc)
			opt_cordon = argv[++i];
		else if (strcmp(argv[i], "--mib") == 0 && i + 1 < argc)
			opt_mib = atoll(argv[++i]);
		else if (strcmp(argv[i], "--handshakes") == 0 && i + 1 < argc)
			opt_handshakes = atoi(argv[++i]);
		else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
			opt_threads = atoi(argv[++i]);
		else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
			opt_runs = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: bench_inspect [--cordon PATH] "
			    "[--mib N] [--handshakes N] [--threads N] "
			    "[--runs N]\n");
			return 2;
		}
	}
	if (opt_cordon == NULL)
		opt_cordon = "proxy/cordon-proxy";
	if (opt_mib < 1 || opt_handshakes < 1 || opt_threads < 1 ||
	    opt_threads > 64 || opt_runs < 1 || opt_runs > 16)
		die("bad option value");
	signal(SIGPIPE, SIG_IGN);
	snprintf(dir, sizeof(dir), "/tmp/cordon-bench-inspect-XXXXXX");
	if (mkdtemp(dir) == NULL)
		die("mkdtemp");
	cak = EVP_EC_gen("P-256");
	ca = mkcert(cak, "bench upstream CA", NULL, NULL, NULL);
	k = EVP_EC_gen("P-256");
	leaf = mkcert(k, "127.0.0.2", "IP:127.0.0.2", ca, cak);
	snprintf(path, sizeof(path), "%s/upca.pem", dir);
	f = fopen(path, "w");
	PEM_write_X509(f, ca);
	fclose(f);
	snprintf(path, sizeof(path), "%s/up.pem", dir);
	f = fopen(path, "w");
	PEM_write_X509(f, leaf);
	fclose(f);
	snprintf(path, sizeof(path), "%s/up.key", dir);
	f = fopen(path, "w");
	PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL);
	fclose(f);
	snprintf(path, sizeof(path), "%s/upca.pem", dir);
	up_ctx = SSL_CTX_new(TLS_server_method());
	SSL_CTX_use_certificate(up_ctx, leaf);
	SSL_CTX_use_PrivateKey(up_ctx, k);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	inet_pton(AF_INET, "127.0.0.2", &sin.sin_addr);
	if (bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) != 0 ||
	    listen(lfd, 1024) != 0)
		die("upstream listen");
	getsockname(lfd, (struct sockaddr *)&sin, &sl);
	up_port = ntohs(sin.sin_port);
	pthread_create(&t, NULL, up_accept, (void *)(long)lfd);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	sin.sin_port = 0;
	if (bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) != 0 ||
	    listen(lfd, 1024) != 0)
		die("upstream listen");
	sl = sizeof(sin);
	getsockname(lfd, (struct sockaddr *)&sin, &sl);
	raw_port = ntohs(sin.sin_port);
	pthread_create(&t, NULL, up_accept, (void *)(long)lfd);
	px_start();
	/* Raw: the client verifies upstream itself; inspected: the Cordon
	 * CA's leaf. */
	cli_raw = SSL_CTX_new(TLS_client_method());
	SSL_CTX_set_verify(cli_raw, SSL_VERIFY_PEER, NULL);
	SSL_CTX_load_verify_locations(cli_raw, path, NULL);
	cli_insp = SSL_CTX_new(TLS_client_method());
	SSL_CTX_set_verify(cli_insp, SSL_VERIFY_PEER, NULL);
	snprintf(path, sizeof(path), "%s/egress/ca.crt", dir);
	SSL_CTX_load_verify_locations(cli_insp, path, NULL);
	SSL_CTX_set_session_cache_mode(cli_raw, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_session_cache_mode(cli_insp, SSL_SESS_CACHE_OFF);

	have_socat = socat_start();
	row(0, &rm, &rh, &rc);
	row(1, &im, &ih, &ic);
	if (have_socat)
		row(2, &sm, &sh, &sc);
	printf("bench_inspect: %lld MiB GET, %d handshakes on %d threads, "
	    "median of %d runs\n", opt_mib, opt_handshakes, opt_threads,
	    opt_runs);
	printf("%-22s %10s %14s %18s\n", "", "MiB/s", "handshakes/s",
	    "proxy CPU ms/hs");
	printf("%-22s %10.0f %14.0f %18.3f\n", "raw tunnel (splice)", rm, rh,
	    rc);
	printf("%-22s %10.0f %14.0f %18.3f\n", "inspected tunnel", im, ih, ic);
	if (have_socat)
		printf("%-22s %10.0f %14.0f %18.3f\n", "socat TLS->TLS relay", sm,
		    sh, sc);
	else
		printf("socat TLS->TLS relay: /usr/bin/socat missing (scripts/"
		    "setup installs it)\n");
	printf("%-22s %10.2f %14.2f %18.1f\n", "inspected / raw", im / rm,
	    ih / rh, rc > 0 ? ic / rc : 0.0);
	if (have_socat)
		printf("%-22s %10.2f %14.2f %18.1f\n", "inspected / socat",
		    im / sm, ih / sh, sc > 0 ? ic / sc : 0.0);
	kill(px_pid, SIGTERM);
	waitpid(px_pid, NULL, 0);
	if (socat_pid > 0) {
		kill(socat_pid, SIGTERM);
		waitpid(socat_pid, NULL, 0);
	}
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	(void)system(path);
	return 0;
}
