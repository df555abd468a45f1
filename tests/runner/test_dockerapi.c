/*
 * The Engine API client (runner/dockerapi.h, runner/apirun.h): the
 * response parser and request formatter by tables, the create body's
 * fields, and whole API sessions against a fake daemon on a unix socket
 * in a temp dir (threads in this process): output frames into capped
 * buffers, stdin and its EOF, the wait's code, refusals passed through,
 * a daemon that closes early, a start that never answers.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/config.h"
#include "common/util.h"
#include "runner/apirun.h"
#include "runner/dockerapi.h"

struct prow {
	const char *what, *in;
	bool eof;
	unsigned flags;
	int rc, status;
	const char *body;
};

#define OK200 "HTTP/1.1 200 OK\r\n"
static const struct prow prows[] = {
	{ "content-length whole", OK200 "Content-Length: 2\r\n\r\nhi", false,
	    0, 1, 200, "hi" },
	{ "content-length short", OK200 "Content-Length: 3\r\n\r\nhi", false,
	    0, 0, 0, NULL },
	{ "content-length cut by eof", OK200 "Content-Length: 3\r\n\r\nhi",
	    true, 0, -EBADMSG, 0, NULL },
	{ "extra bytes after the body ignored", OK200 "content-length: 1\r\n"
	    "\r\nxyz", false, 0, 1, 200, "x" },
	{ "chunked", OK200 "Transfer-Encoding: chunked\r\n\r\n2\r\nab\r\n"
	    "a;ext=1\r\n0123456789\r\n0\r\n\r\n", false, 0, 1, 200,
	    "ab0123456789" },
	{ "chunked incomplete", OK200 "Transfer-Encoding: chunked\r\n\r\n"
	    "2\r\nab\r\n", false, 0, 0, 0, NULL },
	{ "chunked cut by eof", OK200 "Transfer-Encoding: chunked\r\n\r\n"
	    "2\r\nab\r\n", true, 0, -EBADMSG, 0, NULL },
	{ "chunk size not hex", OK200 "Transfer-Encoding: chunked\r\n\r\n"
	    "zz\r\nab\r\n0\r\n\r\n", false, 0, -EBADMSG, 0, NULL },
	{ "chunk without its CRLF", OK200 "Transfer-Encoding: chunked\r\n\r\n"
	    "2\r\nabX\r\n0\r\n\r\n", false, 0, -EBADMSG, 0, NULL },
	{ "chunk past max", OK200 "Transfer-Encoding: chunked\r\n\r\n"
	    "ffff\r\n", false, 0, -E2BIG, 0, NULL },
	{ "chunked with trailer", OK200 "Transfer-Encoding: chunked\r\n\r\n"
	    "1\r\nq\r\n0\r\nX-T: 1\r\n\r\n", false, 0, 1, 200, "q" },
	{ "no length: to eof", OK200 "\r\nuntil close", true, 0, 1, 200,
	    "until close" },
	{ "no length: not yet", OK200 "\r\nuntil", false, 0, 0, 0, NULL },
	{ "204 has no body", "HTTP/1.1 204 No Content\r\n\r\n", false, 0, 1,
	    204, "" },
	{ "101 upgrade, stream follows", "HTTP/1.1 101 UPGRADED\r\n"
	    "Upgrade: tcp\r\n\r\n\1\0\0\0", false, DOCKERAPI_HEAD_ONLY, 1,
	    101, "" },
	{ "head only on a 200", OK200 "Content-Length: 9\r\n\r\n", false,
	    DOCKERAPI_HEAD_ONLY, 1, 200, "" },
	{ "head incomplete", OK200 "Content-Len", false, 0, 0, 0, NULL },
	{ "head cut by eof", OK200 "Content-Len", true, 0, -EBADMSG, 0, NULL },
	{ "not http", "SSH-2.0-x\r\n\r\n", false, 0, -EBADMSG, 0, NULL },
	{ "status not digits", "HTTP/1.1 2x0 OK\r\n\r\n", false, 0, -EBADMSG,
	    0, NULL },
	{ "two different lengths", OK200 "Content-Length: 1\r\n"
	    "Content-Length: 2\r\n\r\nab", false, 0, -EBADMSG, 0, NULL },
	{ "length not digits", OK200 "Content-Length: -1\r\n\r\n", false, 0,
	    -EBADMSG, 0, NULL },
	{ "length past max", OK200 "Content-Length: 99999\r\n\r\n", false, 0,
	    -E2BIG, 0, NULL },
	{ "bare LF in head", OK200 "A: b\nC: d\r\n\r\n", false, 0, -EBADMSG, 0,
	    NULL },
	{ "gzip coding refused", OK200 "Transfer-Encoding: gzip\r\n\r\n",
	    false, 0, -EBADMSG, 0, NULL },
};

static void
test_response_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(prows) / sizeof(prows[0]); i++) {
		const struct prow *w = &prows[i];
		struct dockerapi_resp r;
		int rc = dockerapi_response_parse(w->in, strlen(w->in), w->eof,
		    w->flags, 4096, &r);
		if (rc != w->rc)
			fail_msg("%s: rc %d, want %d", w->what, rc, w->rc);
		if (rc == 1 && (r.status != w->status ||
		    strcmp(r.body, w->body) != 0 ||
		    r.body_len != strlen(w->body)))
			fail_msg("%s: %d '%s'", w->what, r.status, r.body);
		if (rc != 1 && (r.body != NULL || r.status != 0))
			fail_msg("%s: output not reset", w->what);
		dockerapi_resp_cleanup(&r);
	}
}

/* Every cut of a chunked answer is "more needed" until the last byte. */
static void
test_response_every_cut(void **state)
{
	static const char in[] = OK200 "Transfer-Encoding: chunked\r\n\r\n"
	    "1e\r\n{\"Error\":null,\"StatusCode\":3}\n\r\n0\r\n\r\n";
	struct dockerapi_resp r;

	(void)state;
	for (size_t n = 0; n < sizeof(in) - 1; n++)
		assert_int_equal(dockerapi_response_parse(in, n, false, 0, 4096,
		    &r), 0);
	assert_int_equal(dockerapi_response_parse(in, sizeof(in) - 1, false,
	    0, 4096, &r), 1);
	assert_string_equal(r.body, "{\"Error\":null,\"StatusCode\":3}\n");
	dockerapi_resp_cleanup(&r);
}

static void
test_request_format(void **state)
{
	char *s;
	size_t n;

	(void)state;
	assert_int_equal(dockerapi_request_format("POST", "/containers/create"
	    "?name=cordon-1", "{}", false, &s, &n), 0);
	assert_string_equal(s, "POST /containers/create?name=cordon-1 "
	    "HTTP/1.1\r\nHost: docker\r\nConnection: close\r\nContent-Type: "
	    "application/json\r\nContent-Length: 2\r\n\r\n{}");
	assert_int_equal(n, strlen(s));
	free(s);
	assert_int_equal(dockerapi_request_format("POST", "/containers/c/"
	    "attach?stream=1", NULL, true, &s, &n), 0);
	assert_non_null(strstr(s, "\r\nConnection: Upgrade\r\nUpgrade: tcp"
	    "\r\n"));
	free(s);
	assert_int_equal(dockerapi_request_format("POST", "/a b", NULL, false,
	    &s, &n), -EINVAL);
	assert_int_equal(dockerapi_request_format("POST", "/a\r\nX: y", NULL,
	    false, &s, &n), -EINVAL);
	assert_int_equal(dockerapi_request_format("PO ST", "/a", NULL, false,
	    &s, &n), -EINVAL);
	assert_int_equal(dockerapi_request_format("GET", "a", NULL, false, &s,
	    &n), -EINVAL);
	assert_null(s);
	assert_false(dockerapi_name_ok("a/b"));
	assert_false(dockerapi_name_ok(""));
	assert_true(dockerapi_name_ok("cordon-0123abcd"));
}

static void
test_error_message(void **state)
{
	struct dockerapi_resp r = { .status = 404 };
	char m[64];

	(void)state;
	r.body = strdup("{\"message\":\"No such image: sha256:00\"}");
	r.body_len = strlen(r.body);
	dockerapi_error_message(&r, m, sizeof(m));
	assert_string_equal(m, "No such image: sha256:00");
	free(r.body);
	r.body = strdup("plain\x1b[31m text\nsecond");
	r.body_len = strlen(r.body);
	dockerapi_error_message(&r, m, sizeof(m));
	assert_string_equal(m, "plain?[31m text");
	free(r.body);
	r.body = NULL;
	r.body_len = 0;
	dockerapi_error_message(&r, m, sizeof(m));
	assert_string_equal(m, "HTTP 404");
}

/* The create body: every hardening field, from one spec. */
static struct config cfg;

/* docker_api "never", or another CLI binary: the CLI path. */
static void
test_cold_usable(void **state)
{
	struct config c = cfg;

	(void)state;
	assert_string_equal(c.docker_api, "auto");
	strcpy(c.docker_api, "never");
	assert_false(dockerapi_cold_usable(&c));
	strcpy(c.docker_api, "auto");
	strcpy(c.docker, "/opt/other/docker");
	assert_false(dockerapi_cold_usable(&c));
	assert_false(dockerapi_usable(&c));
	strcpy(c.docker, "docker");
	setenv("DOCKER_HOST", "tcp://127.0.0.1:2375", 1);
	assert_false(dockerapi_cold_usable(&c));
	unsetenv("DOCKER_HOST");
	/* With the defaults, as the socket's presence says. */
	assert_int_equal(dockerapi_cold_usable(&c),
	    access(DOCKERAPI_SOCKET, W_OK) == 0);
}

static cJSON *
body_of(const struct docker_spec *s)
{
	char *b;
	cJSON *o;

	assert_int_equal(dockerapi_create_body(&cfg, s, &b), 0);
	o = cJSON_Parse(b);
	free(b);
	assert_non_null(o);
	return o;
}

static const char *
jpath_str(const cJSON *o, const char *a, const char *b)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, a);

	if (b != NULL)
		x = cJSON_GetObjectItemCaseSensitive(x, b);
	if (!cJSON_IsString(x))
		fail_msg("no string %s.%s", a, b != NULL ? b : "");
	return x->valuestring;
}

static double
jpath_num(const cJSON *o, const char *a, const char *b)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, a);

	if (b != NULL)
		x = cJSON_GetObjectItemCaseSensitive(x, b);
	if (!cJSON_IsNumber(x))
		fail_msg("no number %s.%s", a, b != NULL ? b : "");
	return x->valuedouble;
}

static char *
jprint(const cJSON *o, const char *a, const char *b)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, a);

	if (b != NULL)
		x = cJSON_GetObjectItemCaseSensitive(x, b);
	assert_non_null(x);
	return cJSON_PrintUnformatted(x);
}

#define ASSERT_JSON(o, a, b, want) do {					\
	char *_s = jprint(o, a, b);					\
	if (strcmp(_s, want) != 0)					\
		fail_msg("%s.%s: %s, want %s", a, b != NULL ? b : "",	\
		    _s, want);						\
	free(_s);							\
} while (0)

static const struct docker_spec base = {
	.name = "cordon-0011223344556677", .image_id = "sha256:abc",
	.runtime = "runsc", .network = "none", .session = "s1",
	.owner_pid = 42, .deadline_epoch_s = 1700000000,
	.memory = 268435456, .cpus = 1.25,
};

static void
test_create_body(void **state)
{
	struct docker_spec s = base;
	const struct config_limits *l = &cfg.limits;
	char want[160];
	cJSON *o;

	(void)state;
	o = body_of(&s);
	assert_string_equal(jpath_str(o, "Image", NULL), "sha256:abc");
	assert_string_equal(jpath_str(o, "User", NULL), cfg.user);
	assert_string_equal(jpath_str(o, "WorkingDir", NULL), "/tmp");
	ASSERT_JSON(o, "Cmd", NULL, "[\"python3\",\"-I\",\"-\"]");
	ASSERT_JSON(o, "Env", NULL, "[\"PATH=/usr/local/sbin:/usr/local/bin:"
	    "/usr/sbin:/usr/bin:/sbin:/bin\",\"HOME=/tmp\",\"LANG=C.UTF-8\","
	    "\"PYTHONDONTWRITEBYTECODE=1\",\"PYTHONUNBUFFERED=1\"]");
	ASSERT_JSON(o, "Labels", NULL, "{\"cordon\":\"1\",\"cordon.owner_pid\":"
	    "\"42\",\"cordon.deadline\":\"1700000000\",\"cordon.session\":"
	    "\"s1\"}");
	ASSERT_JSON(o, "OpenStdin", NULL, "true");
	ASSERT_JSON(o, "StdinOnce", NULL, "true");
	ASSERT_JSON(o, "AttachStdin", NULL, "true");
	ASSERT_JSON(o, "Tty", NULL, "false");
	assert_string_equal(jpath_str(o, "HostConfig", "Runtime"), "runsc");
	assert_string_equal(jpath_str(o, "HostConfig", "NetworkMode"), "none");
	ASSERT_JSON(o, "HostConfig", "CapDrop", "[\"ALL\"]");
	ASSERT_JSON(o, "HostConfig", "SecurityOpt", "[\"no-new-privileges\"]");
	ASSERT_JSON(o, "HostConfig", "ReadonlyRootfs", "true");
	snprintf(want, sizeof(want), "{\"/tmp\":\"rw,noexec,nosuid,nodev,"
	    "size=%llu\"}", (unsigned long long)l->tmpfs_bytes);
	ASSERT_JSON(o, "HostConfig", "Tmpfs", want);
	assert_true(jpath_num(o, "HostConfig", "Memory") == 268435456.0);
	assert_true(jpath_num(o, "HostConfig", "MemorySwap") == 268435456.0);
	assert_true(jpath_num(o, "HostConfig", "NanoCpus") == 1250000000.0);
	snprintf(want, sizeof(want), "[{\"Name\":\"fsize\",\"Hard\":%llu,"
	    "\"Soft\":%llu},{\"Name\":\"nofile\",\"Hard\":%lld,\"Soft\":%lld},"
	    "{\"Name\":\"nproc\",\"Hard\":%lld,\"Soft\":%lld}]",
	    (unsigned long long)l->fsize_bytes,
	    (unsigned long long)l->fsize_bytes,
	    (long long)l->nofile, (long long)l->nofile, (long long)l->nproc,
	    (long long)l->nproc);
	ASSERT_JSON(o, "HostConfig", "Ulimits", want);
	assert_true(jpath_num(o, "HostConfig", "PidsLimit") ==
	    (double)l->pids_limit);
	assert_string_equal(jpath_str(o, "HostConfig", "IpcMode"), "none");
	ASSERT_JSON(o, "HostConfig", "LogConfig", "{\"Type\":\"none\","
	    "\"Config\":{}}");
	assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "HostConfig"),
	    "Mounts"));
	cJSON_Delete(o);
}

struct crow {
	const char *what;
	double cpus;
	const char *in_dir;
	bool wrapper;
	unsigned lang;
	bool holder;
	const char *cmd, *mounts;
	double nano;
};

static const struct crow crows[] = {
	{ "half a cpu", 0.5, NULL, false, 0, false,
	    "[\"python3\",\"-I\",\"-\"]", NULL, 500000000.0 },
	{ "cpus rounded as --cpus=%.3f", 0.0004, NULL, false, 0, false,
	    "[\"python3\",\"-I\",\"-\"]", NULL, 0.0 },
	{ "/in bind read-only", 2, "/var/lib/cordon/in/x", false, 0, false,
	    "[\"python3\",\"-I\",\"-\"]", "[{\"Type\":\"bind\",\"Source\":"
	    "\"/var/lib/cordon/in/x\",\"Target\":\"/in\",\"ReadOnly\":true}]",
	    2e9 },
	{ "bash", 1, NULL, false, CONFIG_LANG_BASH, false,
	    "[\"/bin/bash\",\"-s\"]", NULL, 1e9 },
	{ "node", 1, NULL, false, CONFIG_LANG_NODE, false,
	    "[\"/usr/bin/node\",\"-\"]", NULL, 1e9 },
	{ "holder", 1, NULL, false, 0, true, "[\"python3\",\"-I\",\"-c\","
	    "\"import sys; sys.stdin.buffer.read()\"]", NULL, 1e9 },
};

static void
test_create_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(crows) / sizeof(crows[0]); i++) {
		const struct crow *w = &crows[i];
		struct docker_spec s = base;
		cJSON *o;
		s.cpus = w->cpus;
		s.in_dir = w->in_dir;
		s.lang = w->lang;
		s.holder = w->holder;
		o = body_of(&s);
		ASSERT_JSON(o, "Cmd", NULL, w->cmd);
		if (w->mounts != NULL)
			ASSERT_JSON(o, "HostConfig", "Mounts", w->mounts);
		if (jpath_num(o, "HostConfig", "NanoCpus") != w->nano)
			fail_msg("%s: NanoCpus %f", w->what,
			    jpath_num(o, "HostConfig", "NanoCpus"));
		cJSON_Delete(o);
	}
}

static void
test_create_refusals(void **state)
{
	static const char *const bad_extra[][5] = {
		{ "--privileged", NULL },
		{ "--dns=", NULL },
		{ "--env", NULL },
		{ "--env", "NOEQUALS", NULL },
		{ "--dns=10.0.0.1", "--env", "A=1", "--cap-add=ALL", NULL },
		{ "--dns=10.0.0.1", "--network=host", NULL },
		{ "--dns", "10.0.0.1", NULL },
	};
	struct docker_spec s = base;
	char *b = (char *)"x";

	(void)state;
	s.name = "bad name";
	assert_int_equal(dockerapi_create_body(&cfg, &s, &b), -EINVAL);
	assert_null(b);
	s = base;
	s.memory = 0;
	assert_int_equal(dockerapi_create_body(&cfg, &s, &b), -EINVAL);
	s = base;
	s.in_dir = "relative";
	assert_int_equal(dockerapi_create_body(&cfg, &s, &b), -EINVAL);
	/* An extra option the mapping does not know is refused, never
	 * dropped: each one alone, and after ones it knows. */
	for (size_t i = 0; i < sizeof(bad_extra) / sizeof(bad_extra[0]);
	    i++) {
		s = base;
		s.extra = bad_extra[i];
		s.nextra = 0;
		while (bad_extra[i][s.nextra] != NULL)
			s.nextra++;
		if (dockerapi_create_body(&cfg, &s, &b) != -ENOTSUP)
			fail_msg("extra option row %zu accepted", i);
		assert_null(b);
	}
}

/* Proxy mode's spec (container_spec with netsetup_run_args' options):
 * the network and runtime, --dns into Dns, each --env after the job's and
 * the CA bundle's variables, the CA bundle and resolv.conf mounted after
 * /in, the prelude before the job's command; exactly the argv's. */
static void
test_create_proxy(void **state)
{
	static const char *const extra[] = { "--dns=172.30.0.1", "--env",
	    "NO_PROXY=", "--env", "no_proxy=", NULL };
	struct docker_spec s = base;
	cJSON *o;

	(void)state;
	s.network = "cordon-egress";
	s.runtime = "cordon-egress";
	s.extra = extra;
	s.nextra = 5;
	s.prelude = "import os";
	s.in_dir = "/var/lib/cordon/in/x";
	s.ca_bundle = "/var/lib/cordon/egress-ca/ca-bundle.pem";
	s.resolv_conf = "/var/lib/cordon/net-cordon0/resolv.conf";
	o = body_of(&s);
	assert_string_equal(jpath_str(o, "HostConfig", "NetworkMode"),
	    "cordon-egress");
	assert_string_equal(jpath_str(o, "HostConfig", "Runtime"),
	    "cordon-egress");
	ASSERT_JSON(o, "HostConfig", "Dns", "[\"172.30.0.1\"]");
	ASSERT_JSON(o, "Env", NULL, "[\"PATH=/usr/local/sbin:/usr/local/bin:"
	    "/usr/sbin:/usr/bin:/sbin:/bin\",\"HOME=/tmp\",\"LANG=C.UTF-8\","
	    "\"PYTHONDONTWRITEBYTECODE=1\",\"PYTHONUNBUFFERED=1\","
	    "\"SSL_CERT_FILE=/etc/cordon/ca-bundle.pem\","
	    "\"REQUESTS_CA_BUNDLE=/etc/cordon/ca-bundle.pem\","
	    "\"PIP_CERT=/etc/cordon/ca-bundle.pem\","
	    "\"CURL_CA_BUNDLE=/etc/cordon/ca-bundle.pem\","
	    "\"NODE_EXTRA_CA_CERTS=/etc/cordon/ca-bundle.pem\","
	    "\"NO_PROXY=\",\"no_proxy=\"]");
	ASSERT_JSON(o, "HostConfig", "Mounts", "[{\"Type\":\"bind\","
	    "\"Source\":\"/var/lib/cordon/in/x\",\"Target\":\"/in\","
	    "\"ReadOnly\":true},{\"Type\":\"bind\",\"Source\":"
	    "\"/var/lib/cordon/egress-ca/ca-bundle.pem\",\"Target\":"
	    "\"/etc/cordon/ca-bundle.pem\",\"ReadOnly\":true},{\"Type\":"
	    "\"bind\",\"Source\":\"/var/lib/cordon/net-cordon0/resolv.conf\","
	    "\"Target\":\"/etc/resolv.conf\",\"ReadOnly\":true}]");
	ASSERT_JSON(o, "Cmd", NULL, "[\"python3\",\"-I\",\"-c\","
	    "\"import os\",\"-\"]");
	cJSON_Delete(o);
}

/* ---- a fake daemon ---- */

enum mode { M_OK, M_CREATE_404, M_CLOSE_EARLY, M_START_HANGS, M_FLOOD,
    M_BAD_FRAME };

struct fake {
	char dir[64], sock[128];
	int lfd;
	enum mode mode;
	pthread_t thr;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool started, attach_done, stop;
	char stdin_got[256];
	size_t stdin_len;
	int attach_fd;			/* -1 until the attach came */
	int pending_at_start;		/* stdin bytes in the attach when the
					 * start came; -1: no attach then */
	char create_body[8192];
	int conns;
};

static void
say(int fd, const char *s)
{
	(void)!write(fd, s, strlen(s));
}

/* Reads one request head (and a Content-Length body) into buf. */
static ssize_t
read_request(int fd, char *buf, size_t cap, char **body)
{
	size_t len = 0;
	char *e;

	for (;;) {
		ssize_t n = read(fd, buf + len, cap - 1 - len);
		if (n <= 0)
			return -1;
		len += (size_t)n;
		buf[len] = '\0';
		if ((e = strstr(buf, "\r\n\r\n")) != NULL) {
			const char *cl = strcasestr(buf, "Content-Length: ");
			size_t want = cl != NULL && cl < e ?
			    strtoul(cl + 16, NULL, 10) : 0;
			if (len >= (size_t)(e + 4 - buf) + want) {
				*body = e + 4;
				return (ssize_t)len;
			}
		}
		if (len >= cap - 1)
			return -1;
	}
}

static void
frame(int fd, int stream, const char *s, size_t n)
{
	unsigned char h[8] = { (unsigned char)stream, 0, 0, 0,
	    (unsigned char)(n >> 24), (unsigned char)(n >> 16),
	    (unsigned char)(n >> 8), (unsigned char)n };

	(void)!write(fd, h, 8);
	(void)!write(fd, s, n);
}

static void
serve_attach(struct fake *f, int fd)
{
	char buf[256];
	ssize_t n;

	say(fd, "HTTP/1.1 101 UPGRADED\r\nContent-Type: application/"
	    "vnd.docker.raw-stream\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n"
	    "\r\n");
	pthread_mutex_lock(&f->mu);
	f->attach_fd = fd;
	while (!f->started && !f->stop)
		pthread_cond_wait(&f->cv, &f->mu);
	pthread_mutex_unlock(&f->mu);
	if (f->mode == M_CLOSE_EARLY || f->stop)
		return;
	/* stdin to its EOF (the client's SHUT_WR), then the output. */
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		pthread_mutex_lock(&f->mu);
		if (f->stdin_len + (size_t)n < sizeof(f->stdin_got)) {
			memcpy(f->stdin_got + f->stdin_len, buf, (size_t)n);
			f->stdin_len += (size_t)n;
		}
		pthread_mutex_unlock(&f->mu);
	}
	if (f->mode == M_BAD_FRAME) {
		say(fd, "\3\0\0\0\0\0\0\1x");
	} else if (f->mode == M_FLOOD) {
		char big[1000];
		memset(big, 'a', sizeof(big));
		for (int i = 0; i < 100; i++)
			frame(fd, 1, big, sizeof(big));
		frame(fd, 2, "tail\n", 5);
	} else {
		frame(fd, 1, "hello ", 6);
		frame(fd, 2, "warn\n", 5);
		frame(fd, 1, "world\n", 6);
	}
	pthread_mutex_lock(&f->mu);
	f->attach_done = true;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

static void
serve_wait(struct fake *f, int fd)
{
	static const char body[] = "{\"Error\":null,\"StatusCode\":3}\n";
	char chunk[128];

	say(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n");
	pthread_mutex_lock(&f->mu);
	while (!f->attach_done && !f->stop && f->mode != M_CLOSE_EARLY)
		pthread_cond_wait(&f->cv, &f->mu);
	pthread_mutex_unlock(&f->mu);
	if (f->mode == M_CLOSE_EARLY || f->stop)
		return;
	snprintf(chunk, sizeof(chunk), "%zx\r\n%s\r\n0\r\n\r\n",
	    sizeof(body) - 1, body);
	say(fd, chunk);
}

static void *
conn_main(void *arg)
{
	struct fake *f = ((void **)arg)[0];
	int fd = (int)(intptr_t)((void **)arg)[1];
	char buf[16384], *body = NULL;

	free(arg);
	if (read_request(fd, buf, sizeof(buf), &body) < 0)
		goto done;
	if (strncmp(buf, "POST /containers/create?name=", 29) == 0) {
		util_strlcpy(f->create_body, body, sizeof(f->create_body));
		if (f->mode == M_CREATE_404)
			say(fd, "HTTP/1.1 404 Not Found\r\nContent-Type: "
			    "application/json\r\nContent-Length: 44\r\n\r\n"
			    "{\"message\":\"No such image: sha256:0000000\"}\n");
		else	/* chunked, as dockerd may answer */
			say(fd, "HTTP/1.1 201 Created\r\nTransfer-Encoding: "
			    "chunked\r\n\r\n8\r\n{\"Id\":1}\r\n0\r\n\r\n");
	} else if (strstr(buf, "/attach?") != NULL) {
		serve_attach(f, fd);
	} else if (strstr(buf, "/wait?condition=next-exit") != NULL) {
		serve_wait(f, fd);
	} else if (strstr(buf, "/start ") != NULL) {
		if (f->mode == M_START_HANGS) {
			pthread_mutex_lock(&f->mu);
			while (!f->stop)
				pthread_cond_wait(&f->cv, &f->mu);
			pthread_mutex_unlock(&f->mu);
			goto done;
		}
		pthread_mutex_lock(&f->mu);
		if (f->attach_fd < 0 || ioctl(f->attach_fd, FIONREAD,
		    &f->pending_at_start) < 0)
			f->pending_at_start = -1;
		pthread_mutex_unlock(&f->mu);
		say(fd, "HTTP/1.1 204 No Content\r\n\r\n");
		pthread_mutex_lock(&f->mu);
		f->started = true;
		pthread_cond_broadcast(&f->cv);
		pthread_mutex_unlock(&f->mu);
	} else {
		say(fd, "HTTP/1.1 500 x\r\nContent-Length: 0\r\n\r\n");
	}
done:
	close(fd);
	return NULL;
}

static void *
accept_main(void *arg)
{
	struct fake *f = arg;
	pthread_t t[16];
	int n = 0, fd;

	while (n < 16 && (fd = accept(f->lfd, NULL, NULL)) >= 0) {
		void **a = malloc(2 * sizeof(void *));
		a[0] = f;
		a[1] = (void *)(intptr_t)fd;
		pthread_create(&t[n++], NULL, conn_main, a);
	}
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	f->conns = n;
	return NULL;
}

/* The one fake of the session tests: static, so that fake_teardown can
 * still stop it after a failed assertion has left the test (a fake on the
 * test's stack would be used by its threads after the longjmp). */
static struct fake fake_g;
static bool fake_running;

static void
fake_start(struct fake *f, enum mode m)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	memset(f, 0, sizeof(*f));
	f->mode = m;
	f->attach_fd = -1;
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
	strcpy(f->dir, "/tmp/cordon-apitest.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	fake_running = true;
	snprintf(f->sock, sizeof(f->sock), "%s/docker.sock", f->dir);
	util_strlcpy(sa.sun_path, f->sock, sizeof(sa.sun_path));
	f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(f->lfd >= 0);
	assert_int_equal(bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(f->lfd, 16), 0);
	assert_int_equal(pthread_create(&f->thr, NULL, accept_main, f), 0);
}

static void
fake_stop(struct fake *f)
{
	pthread_mutex_lock(&f->mu);
	f->stop = true;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	shutdown(f->lfd, SHUT_RDWR);
	pthread_join(f->thr, NULL);
	close(f->lfd);
	(void)util_rm_rf(f->dir);
	fake_running = false;
}

/* After each session test: the fake stopped (its threads joined, its
 * directory removed) when an assertion left the test before fake_stop. */
static int
fake_teardown(void **state)
{
	(void)state;
	if (fake_running)
		fake_stop(&fake_g);
	return 0;
}

static struct apirun *
session_held(struct fake *f, size_t cap, bool hold)
{
	struct apirun_opts o = { .sock = f->sock, .name = "cordon-0a1b",
	    .body = "{\"Image\":\"x\"}", .input = "print(1)\n",
	    .input_len = 9, .stdout_max = cap, .stderr_max = cap,
	    .stdout_keep = CBUF_KEEP_BOTH, .stderr_keep = CBUF_KEEP_BOTH,
	    .hold_input = hold };
	struct apirun *a;

	assert_int_equal(apirun_new(&o, &a), 0);
	return a;
}

static struct apirun *
session(struct fake *f, size_t cap)
{
	return session_held(f, cap, false);
}

/* Proxy mode's hold: not a byte of the job's stdin reaches the daemon
 * before apirun_communicate (the code never waits inside a container not
 * yet sealed); without it, the input is there when the start comes, as
 * `docker run -i` sends it. */
static void
test_session_hold_input(void **state)
{
	for (int hold = 0; hold <= 1; hold++) {
		struct fake *const fp = &fake_g;
		struct apirun *a;
		char err[256] = "";
		size_t after;
		fake_start(fp, M_OK);
		a = session_held(fp, 1024, hold);
		assert_int_equal(apirun_start(a, time_mono_ms() + 5000, NULL,
		    err, sizeof(err)), 0);
		/* The fake reads the attach from the start on. */
		(void)poll(NULL, 0, 50);
		pthread_mutex_lock(&fp->mu);
		after = fp->stdin_len;
		pthread_mutex_unlock(&fp->mu);
		if (hold && (fp->pending_at_start != 0 || after != 0))
			fail_msg("held input: %d bytes at the start, %zu after "
			    "it", fp->pending_at_start, after);
		if (!hold && fp->pending_at_start != 9)
			fail_msg("input at the start: %d bytes, want 9",
			    fp->pending_at_start);
		assert_int_equal(apirun_communicate(a, time_mono_ms() + 5000,
		    NULL), 0);
		assert_int_equal(fp->stdin_len, 9);
		assert_memory_equal(fp->stdin_got, "print(1)\n", 9);
		apirun_free(a);
		fake_stop(fp);
	}
}

static void
test_session_ok(void **state)
{
	struct fake *const fp = &fake_g;
	struct apirun *a;
	struct proc_times t;
	char err[256] = "";

	(void)state;
	fake_start(fp, M_OK);
	a = session(fp, 1024);
	assert_int_equal(apirun_start(a, time_mono_ms() + 5000, NULL, err,
	    sizeof(err)), 0);
	assert_true(apirun_created(a));
	assert_int_equal(apirun_communicate(a, time_mono_ms() + 5000, NULL),
	    0);
	assert_int_equal(apirun_exit_code(a), 3);
	assert_string_equal(cbuf_data(apirun_stdout(a)), "hello world\n");
	assert_string_equal(cbuf_data(apirun_stderr(a)), "warn\n");
	assert_false(cbuf_truncated(apirun_stdout(a)));
	apirun_get_times(a, &t);
	assert_true(t.stdin_closed > 0 && t.first_output > 0 &&
	    t.outputs_closed > 0 && t.exited > 0);
	apirun_free(a);
	fake_stop(fp);
	/* Everything written, then EOF (the server's read loop ended). */
	assert_int_equal(fp->stdin_len, 9);
	assert_memory_equal(fp->stdin_got, "print(1)\n", 9);
	assert_string_equal(fp->create_body, "{\"Image\":\"x\"}");
	assert_int_equal(fp->conns, 4);
}

static void
test_session_create_refused(void **state)
{
	struct fake *const fp = &fake_g;
	struct apirun *a;
	char err[256] = "";

	(void)state;
	fake_start(fp, M_CREATE_404);
	a = session(fp, 1024);
	assert_int_equal(apirun_start(a, time_mono_ms() + 5000, NULL, err,
	    sizeof(err)), -EIO);
	assert_false(apirun_created(a));
	assert_int_equal(apirun_http_status(a), 404);
	assert_string_equal(err, "docker API create: HTTP 404: No such "
	    "image: sha256:0000000");
	apirun_free(a);
	fake_stop(fp);
}

/* The daemon hangs up on both streams without an answer: no exit code
 * (-1), never a clean result. */
static void
test_session_closes_early(void **state)
{
	struct fake *const fp = &fake_g;
	struct apirun *a;
	char err[256] = "";

	(void)state;
	fake_start(fp, M_CLOSE_EARLY);
	a = session(fp, 1024);
	assert_int_equal(apirun_start(a, time_mono_ms() + 5000, NULL, err,
	    sizeof(err)), 0);
	assert_int_equal(apirun_communicate(a, time_mono_ms() + 5000, NULL),
	    0);
	assert_int_equal(apirun_exit_code(a), -1);
	assert_int_equal(cbuf_len(apirun_stdout(a)), 0);
	apirun_free(a);
	fake_stop(fp);
}

static void
test_session_bad_frame(void **state)
{
	struct fake *const fp = &fake_g;
	struct apirun *a;
	char err[256] = "";

	(void)state;
	fake_start(fp, M_BAD_FRAME);
	a = session(fp, 1024);
	assert_int_equal(apirun_start(a, time_mono_ms() + 5000, NULL, err,
	    sizeof(err)), 0);
	assert_int_equal(apirun_communicate(a, time_mono_ms() + 5000, NULL),
	    0);
	/* The wait said 3, but the stream was not docker's: untrusted. */
	assert_int_equal(apirun_exit_code(a), -1);
	apirun_free(a);
	fake_stop(fp);
}

/* A start that never answers: the run's deadline ends it. */
static void
test_session_deadline(void **state)
{
	struct fake *const fp = &fake_g;
	struct apirun *a;
	char err[256] = "";
	int64_t t0 = time_mono_ms();

	(void)state;
	fake_start(fp, M_START_HANGS);
	a = session(fp, 1024);
	assert_int_equal(apirun_start(a, t0 + 300, NULL, err, sizeof(err)),
	    -ETIMEDOUT);
	assert_true(time_mono_ms() - t0 >= 290 && time_mono_ms() - t0 < 3000);
	assert_true(apirun_created(a));
	apirun_free(a);
	fake_stop(fp);
}

/* The caps: 100,000 bytes of stdout into 1000 kept (head, marker, tail),
 * all of stderr. */
static void
test_session_cap(void **state)
{
	struct fake *const fp = &fake_g;
	struct apirun *a;
	char err[256] = "";

	(void)state;
	fake_start(fp, M_FLOOD);
	a = session(fp, 1000);
	assert_int_equal(apirun_start(a, time_mono_ms() + 5000, NULL, err,
	    sizeof(err)), 0);
	assert_int_equal(apirun_communicate(a, time_mono_ms() + 5000, NULL),
	    0);
	assert_int_equal(apirun_exit_code(a), 3);
	assert_true(cbuf_truncated(apirun_stdout(a)));
	assert_true(cbuf_len(apirun_stdout(a)) <= 1000);
	assert_int_equal(cbuf_seen(apirun_stdout(a)), 100000);
	assert_non_null(strstr(cbuf_data(apirun_stdout(a)), "bytes dropped"));
	assert_string_equal(cbuf_data(apirun_stderr(a)), "tail\n");
	apirun_free(a);
	fake_stop(fp);
}

/* --keep head's cut: stdout past its head-kept cap shuts the attach
 * stream (both streams ride on it) and says -EFBIG once; the connections
 * are closed, so calling again ends at once; nothing after the cut is
 * kept, stderr's later frame included. */
static void
test_session_stop_at_cap(void **state)
{
	struct apirun_opts o = { .name = "cordon-0a1b",
	    .body = "{\"Image\":\"x\"}", .input = "x", .input_len = 1,
	    .stdout_max = 4096, .stderr_max = 4096, .stop_at_cap = true };
	struct fake *const fp = &fake_g;
	struct apirun *a;
	char err[256] = "";

	(void)state;
	fake_start(fp, M_FLOOD);
	o.sock = fp->sock;
	assert_int_equal(apirun_new(&o, &a), 0);
	assert_int_equal(apirun_start(a, time_mono_ms() + 5000, NULL, err,
	    sizeof(err)), 0);
	assert_int_equal(apirun_communicate(a, time_mono_ms() + 5000, NULL),
	    -EFBIG);
	assert_int_equal(cbuf_len(apirun_stdout(a)), 4096);
	assert_true(cbuf_truncated(apirun_stdout(a)));
	assert_true(cbuf_seen(apirun_stdout(a)) < 100000);
	assert_int_equal(cbuf_len(apirun_stderr(a)), 0);
	assert_int_equal(apirun_communicate(a, time_mono_ms() + 5000, NULL),
	    -EPIPE);
	assert_int_equal(apirun_exit_code(a), -1);
	apirun_free(a);
	fake_stop(fp);
}

static int
setup(void **state)
{
	(void)state;
	/* The fake daemon writes to connections this side closed. */
	signal(SIGPIPE, SIG_IGN);
	config_defaults(&cfg);
	return 0;
}

#define TF(t) cmocka_unit_test_teardown(t, fake_teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_response_table),
		cmocka_unit_test(test_response_every_cut),
		cmocka_unit_test(test_request_format),
		cmocka_unit_test(test_error_message),
		cmocka_unit_test(test_cold_usable),
		cmocka_unit_test(test_create_body),
		cmocka_unit_test(test_create_table),
		cmocka_unit_test(test_create_refusals),
		cmocka_unit_test(test_create_proxy),
		TF(test_session_hold_input),
		TF(test_session_ok),
		TF(test_session_create_refused),
		TF(test_session_closes_early),
		TF(test_session_bad_frame),
		TF(test_session_stop_at_cap),
		TF(test_session_deadline),
		TF(test_session_cap),
	};

	/* The fake daemon writes to clients that may have hung up. */
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, setup, NULL);
}
