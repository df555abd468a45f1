/*
 * bench_proxy's run-mode helpers: one request line over cordon-proxy's
 * control socket (blocking, with a timeout), the register+unregister round
 * trip timing, and the Proxy-Authorization line for a run's credential.
 */
#include "bench_proxy_ctl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"

int
bench_ctl_call(const char *sock, const char *line, char *answer, size_t len)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct timeval tv = { 10, 0 };
	size_t n = 0;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || len == 0)
		return -1;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", sock);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0 ||
	    send(fd, line, strlen(line), MSG_NOSIGNAL) !=
	    (ssize_t)strlen(line)) {
		close(fd);
		return -1;
	}
	while (n + 1 < len && recv(fd, answer + n, 1, 0) == 1 &&
	    answer[n] != '\n')
		n++;
	answer[n] = '\0';
	close(fd);
	return strncmp(answer, "{\"ok\":true", 10) == 0 ? 0 : -1;
}

int
bench_ctl_register(const char *sock, const char *run, const char *token,
    unsigned max_conns)
{
	char line[512], answer[512];

	snprintf(line, sizeof(line), "{\"op\":\"register\",\"run\":\"%s\","
	    "\"addr\":\"127.0.0.1\",\"policy\":\"bench\",\"token\":\"%s\","
	    "\"deadline_ms\":%lld,\"max_conns\":%u}\n", run, token,
	    (long long)(time_wall_ms() + 3600 * 1000), max_conns);
	if (bench_ctl_call(sock, line, answer, sizeof(answer)) != 0) {
		fprintf(stderr, "bench_proxy: register %s: %s\n", run, answer);
		return -1;
	}
	return 0;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double
bench_ctl_roundtrip_us(const char *sock, const char *token, int n)
{
	double v[64];
	char run[32], line[128], answer[65536];
	struct timespec a, b;

	if (n > 64)
		n = 64;
	for (int i = 0; i < n; i++) {
		snprintf(run, sizeof(run), "rt-%d", i);
		snprintf(line, sizeof(line), "{\"op\":\"unregister\","
		    "\"run\":\"%s\"}\n", run);
		clock_gettime(CLOCK_MONOTONIC, &a);
		if (bench_ctl_register(sock, run, token, 32) != 0 ||
		    bench_ctl_call(sock, line, answer, sizeof(answer)) != 0)
			return -1;
		clock_gettime(CLOCK_MONOTONIC, &b);
		v[i] = (double)(b.tv_sec - a.tv_sec) * 1e6 +
		    (double)(b.tv_nsec - a.tv_nsec) / 1e3;
	}
	qsort(v, (size_t)n, sizeof(v[0]), cmp_double);
	return v[n / 2];
}

void
bench_auth_line(const char *run, const char *token, char *out, size_t len)
{
	static const char tab[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char plain[256], enc[400];
	size_t n, o = 0;

	snprintf(plain, sizeof(plain), "%s:%s", run, token);
	n = strlen(plain);
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned char)plain[i] << 16;
		if (i + 1 < n)
			v |= (unsigned char)plain[i + 1] << 8;
		if (i + 2 < n)
			v |= (unsigned char)plain[i + 2];
		enc[o++] = tab[(v >> 18) & 63];
		enc[o++] = tab[(v >> 12) & 63];
		enc[o++] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
		enc[o++] = i + 2 < n ? tab[v & 63] : '=';
	}
	enc[o] = '\0';
	snprintf(out, len, "Proxy-Authorization: Basic %s\r\n", enc);
}
