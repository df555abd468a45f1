/*
 * `cordon serve` instances for the service benchmarks (bench_svc.h):
 * spawned by argv, HTTP/1.1 with Connection: close over a unix socket.
 */
#include "bench_svc.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/util.h"

int
bench_svc_http(const struct bench_svc *sv, const char *method,
    const char *path, const char *data, char *resp, size_t len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char req[512];
	size_t got = 0;
	ssize_t n;
	int fd, code = -1, rl;

	resp[0] = '\0';
	util_strlcpy(sa.sun_path, sv->sock, sizeof(sa.sun_path));
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		goto out;
	rl = snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\nHost: cordon\r\n"
	    "Content-Type: application/json\r\nContent-Length: %zu\r\n"
	    "Connection: close\r\n\r\n%s", method, path,
	    data != NULL ? strlen(data) : 0, data != NULL ? data : "");
	if (rl < 0 || (size_t)rl >= sizeof(req) ||
	    write(fd, req, (size_t)rl) != rl)
		goto out;
	while (got + 1 < len && (n = read(fd, resp + got, len - 1 - got)) > 0)
		got += (size_t)n;
	resp[got] = '\0';
	if (sscanf(resp, "HTTP/1.1 %d", &code) != 1)
		code = -1;
out:
	close(fd);
	return code;
}

int
bench_svc_start(struct bench_svc *sv, const char *cordon, const char *dir,
    const char *cfg, const char *pool)
{
	const char *av[] = { cordon, "serve", "--config", cfg, "--socket",
	    sv->sock, "--pool", pool, NULL };
	struct proc_opts o = { .argv = av, .stdout_max = 4096,
	    .stderr_max = 4096 };
	char resp[4096];

	snprintf(sv->sock, sizeof(sv->sock), "%s/%s.sock", dir, sv->name);
	if (proc_spawn(&o, &sv->p) < 0) {
		fprintf(stderr, "bench: cannot start %s serve\n", cordon);
		return -1;
	}
	for (int i = 0; i < 100; i++) {
		if (bench_svc_http(sv, "GET", "/v1/health", NULL, resp,
		    sizeof(resp)) == 200)
			return 0;
		usleep(100 * 1000);
	}
	fprintf(stderr, "bench: the %s service did not answer\n", sv->name);
	return -1;
}

void
bench_svc_stop(struct bench_svc *sv)
{
	if (sv->p == NULL)
		return;
	proc_kill(sv->p, SIGTERM);
	(void)proc_communicate(sv->p, time_mono_ms() + 60000, NULL);
	(void)proc_reap(sv->p, time_mono_ms() + 5000);
	proc_free(sv->p);
	sv->p = NULL;
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

int
bench_svc_pool_idle(const struct bench_svc *sv, const char *mode)
{
	char resp[4096];
	const char *q;
	int n, m;

	if (bench_svc_http(sv, "GET", "/v1/health", NULL, resp,
	    sizeof(resp)) != 200 || (q = strstr(resp, "\"pool\":{")) == NULL ||
	    (q = strstr(q, "\"none\":")) == NULL || sscanf(q + 7, "%d", &n) != 1 ||
	    (q = strstr(q, "\"proxy\":")) == NULL ||
	    sscanf(q + 8, "%d", &m) != 1)
		return -1;
	if (mode == NULL)
		return n < m ? n : m;
	return strcmp(mode, "proxy") == 0 ? m : n;
}

int
bench_svc_wait_pool(const struct bench_svc *sv, const char *mode, int want,
    int secs)
{
	char resp[4096];
	const char *b;

	for (int i = 0; i < 10 * secs; i++) {
		if (bench_svc_pool_idle(sv, mode) >= want)
			return 0;
		usleep(100 * 1000);
	}
	resp[0] = '\0';
	(void)bench_svc_http(sv, "GET", "/v1/health", NULL, resp,
	    sizeof(resp));
	b = strstr(resp, "\r\n\r\n");
	fprintf(stderr, "%s: the pool did not refill to %d idle (%s) in %d "
	    "s; the service's health (a mode whose probe is failed or older "
	    "than probe_max_age_s gets no pooled containers): %.3000s\n",
	    sv->name, want, mode != NULL ? mode : "each mode", secs,
	    b != NULL ? b + 4 : resp);
	return -1;
}

int64_t
bench_pct(int64_t *v, int n, int pc)
{
	int k = (n * pc + 99) / 100;

	qsort(v, (size_t)n, sizeof(v[0]), cmp_i64);
	return v[k < 1 ? 0 : k - 1];
}
