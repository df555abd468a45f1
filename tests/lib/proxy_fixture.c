/*
 * The integration fixture: stub DNS, echo, HTTP, flood and sink servers on one
 * libevent loop in a thread (state shared with the test thread under a
 * mutex), and the helpers that start cordon-proxy and speak to it.
 */
#include "proxy_fixture.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/dns.h>
#include <event2/dns_struct.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "common/util.h"

#define FX_MAX_NAMES 64
#define FX_FLOOD_CHUNK (16 * 1024)

/* What the stub DNS server answers. */
static const struct fx_dns_row {
	const char *name;
	const char *a[3];	/* IPv4 answers */
	const char *aaaa;	/* one IPv6 answer */
	int mode;		/* 0 normal, 1 NXDOMAIN, 2 drop, 3 rebind */
	int ttl;		/* of the A answers; 0: not cacheable */
} fx_dns_rows[] = {
	{ "echo.cordon-test.net", { "127.0.0.2" }, NULL, 0, 0 },
	{ "web.cordon-test.net", { "127.0.0.2" }, NULL, 0, 0 },
	{ "denied.cordon-test.net", { "127.0.0.2" }, NULL, 0, 0 },
	{ "flood.cordon-test.net", { "127.0.0.2" }, NULL, 0, 0 },
	{ "sink.cordon-test.net", { "127.0.0.2" }, NULL, 0, 0 },
	{ "refused.cordon-test.net", { "127.0.0.2" }, NULL, 0, 0 },
	{ "loop1.cordon-test.net", { "127.0.0.1" }, NULL, 0, 0 },
	{ "meta.cordon-test.net", { "169.254.169.254" }, NULL, 0, 0 },
	{ "priv.cordon-test.net", { "10.0.0.1" }, NULL, 0, 0 },
	{ "v6loop.cordon-test.net", { NULL }, "::1", 0, 0 },
	{ "mixed.cordon-test.net", { "169.254.169.254", "127.0.0.2" }, NULL,
	    0, 0 },
	{ "allbad.cordon-test.net", { "10.1.2.3", "169.254.169.254" }, "fe80::1",
	    0, 0 },
	{ "nx.cordon-test.net", { NULL }, NULL, 1, 0 },
	{ "slow.cordon-test.net", { NULL }, NULL, 2, 0 },
	{ "rebind.cordon-test.net", { NULL }, NULL, 3, 0 },
	{ "x.other-test.net", { "127.0.0.2" }, NULL, 0, 0 },
	{ "loop9.cordon-test.net", { "127.0.0.9" }, NULL, 0, 0 },
	/* Addresses test_self.c puts on an interface of its own: a public
	 * one of each family and loopback aliases (no traffic goes there:
	 * they are refused as the proxy's own, or as loopback before). */
	{ "hostpub.cordon-test.net", { "192.175.48.77" }, NULL, 0, 0 },
	{ "hostpub6.cordon-test.net", { NULL }, "2001:4:112::77", 0, 0 },
	{ "hostlo.cordon-test.net", { "127.0.0.3" }, NULL, 0, 0 },
	{ "hostlate.cordon-test.net", { "127.0.0.4" }, NULL, 0, 0 },
	{ "hosttick.cordon-test.net", { "127.0.0.5" }, NULL, 0, 0 },
	/* Cacheable answers (the proxy keeps them for their TTL): one
	 * permitted by --allow-address, one private. */
	{ "cached.cordon-test.net", { "127.0.0.2" }, NULL, 0, 30 },
	{ "cachedpriv.cordon-test.net", { "10.0.0.7" }, NULL, 0, 30 },
};

static struct {
	struct event_base *base;
	pthread_t thread;
	int stop_pipe[2];
	struct event *stop_ev;
	struct evdns_server_port *dns;
	evutil_socket_t dns_fd;
	struct evconnlistener *echo, *http, *flood, *sink;
	uint16_t dns_port, echo_port, http_port, flood_port, closed_port,
	    sink_port;
	pthread_mutex_t mu;
	unsigned total;
	struct { char name[128]; unsigned a, all; } q[FX_MAX_NAMES];
	size_t nq;
	char last_head[8192];
	long flood_conns;
	long long flood_bytes;
	long sink_conns;
	long long sink_bytes;
	bool started;
} fx = { .mu = PTHREAD_MUTEX_INITIALIZER };

static char fx_allowlist_text[1024];
static char fx_tls_allowlist_text[1024];
/* Daemons started and not yet reaped, and their temp dirs, for
 * px_kill_all after a failed test. */
static pid_t px_pids[16];
static char px_dirs[16][256];

/* --- stub DNS ----------------------------------------------------------- */

/* Counts the query; returns how many A queries name had (this one too). */
static unsigned
fx_count(const char *name, int type)
{
	unsigned a = 0;
	size_t i;

	pthread_mutex_lock(&fx.mu);
	fx.total++;
	for (i = 0; i < fx.nq; i++)
		if (strcasecmp(fx.q[i].name, name) == 0)
			break;
	if (i == fx.nq && fx.nq < FX_MAX_NAMES) {
		snprintf(fx.q[i].name, sizeof(fx.q[i].name), "%s", name);
		fx.nq++;
	}
	if (i < fx.nq) {
		fx.q[i].all++;
		if (type == EVDNS_TYPE_A)
			fx.q[i].a++;
		a = fx.q[i].a;
	}
	pthread_mutex_unlock(&fx.mu);
	return a;
}

static void
fx_dns_cb(struct evdns_server_request *req, void *arg)
{
	const struct fx_dns_row *row = NULL;
	struct evdns_server_question *q;
	struct in_addr v4[3];
	struct in6_addr v6;
	unsigned nth;
	int n = 0;

	(void)arg;
	if (req->nquestions != 1) {
		evdns_server_request_respond(req, DNS_ERR_FORMAT);
		return;
	}
	q = req->questions[0];
	nth = fx_count(q->name, q->type);
	for (size_t i = 0; i < sizeof(fx_dns_rows) / sizeof(fx_dns_rows[0]); i++)
		if (strcasecmp(fx_dns_rows[i].name, q->name) == 0)
			row = &fx_dns_rows[i];
	if (row == NULL || row->mode == 1) {
		evdns_server_request_respond(req, DNS_ERR_NOTEXIST);
		return;
	}
	if (row->mode == 2) {
		evdns_server_request_drop(req);
		return;
	}
	if (q->type == EVDNS_TYPE_A) {
		if (row->mode == 3) {
			/* Rebinding: a permitted address first, then the
			 * metadata address to anyone who asks again. */
			inet_pton(AF_INET, nth == 1 ? "127.0.0.2" :
			    "169.254.169.254", &v4[0]);
			n = 1;
		} else {
			for (; n < 3 && row->a[n] != NULL; n++)
				inet_pton(AF_INET, row->a[n], &v4[n]);
		}
		/* One RR per address: with n > 1 evdns packs them all into
		 * a single (malformed) RR. */
		for (int i = 0; i < n; i++)
			evdns_server_request_add_a_reply(req, q->name, 1, &v4[i],
			    row->ttl);
	} else if (q->type == EVDNS_TYPE_AAAA && row->aaaa != NULL) {
		inet_pton(AF_INET6, row->aaaa, &v6);
		evdns_server_request_add_aaaa_reply(req, q->name, 1, &v6, 0);
	}
	evdns_server_request_respond(req, 0);
}

/* --- upstream servers --------------------------------------------------- */

static void
fx_close_cb(struct bufferevent *bev, short what, void *arg)
{
	(void)what;
	(void)arg;
	bufferevent_free(bev);
}

static void
fx_echo_read_cb(struct bufferevent *bev, void *arg)
{
	(void)arg;
	bufferevent_write_buffer(bev, bufferevent_get_input(bev));
}

static void
fx_echo_accept(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int len, void *arg)
{
	struct bufferevent *bev;

	(void)l;
	(void)sa;
	(void)len;
	(void)arg;
	bev = bufferevent_socket_new(fx.base, fd, BEV_OPT_CLOSE_ON_FREE);
	bufferevent_setcb(bev, fx_echo_read_cb, NULL, fx_close_cb, NULL);
	bufferevent_enable(bev, EV_READ | EV_WRITE);
}

static void
fx_http_done_cb(struct bufferevent *bev, void *arg)
{
	(void)arg;
	bufferevent_free(bev);
}

/* One request per connection (the proxy sends Connection: close). The
 * answer's body is "PATH|BODY" so tests see what arrived upstream. */
static void
fx_http_read_cb(struct bufferevent *bev, void *arg)
{
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer_ptr end;
	size_t headlen, bodylen;
	char text[8192], *head, *p, *path;
	long cl = 0;

	(void)arg;
	end = evbuffer_search(in, "\r\n\r\n", 4, NULL);
	if (end.pos < 0)
		return;
	headlen = (size_t)end.pos + 4;
	if (headlen >= sizeof(text)) {
		bufferevent_free(bev);
		return;
	}
	evbuffer_copyout(in, text, headlen);
	text[headlen] = '\0';
	p = strcasestr(text, "\r\ncontent-length:");
	if (p != NULL)
		cl = strtol(p + 17, NULL, 10);
	p = strcasestr(text, "\r\ntransfer-encoding: chunked");
	if (p != NULL) {
		struct evbuffer_ptr z = evbuffer_search(in, "\r\n0\r\n\r\n", 7,
		    NULL);
		if (z.pos < 0)
			return;
		cl = (long)((size_t)z.pos + 7 - headlen);
	}
	if (evbuffer_get_length(in) < headlen + (size_t)cl)
		return;
	head = (char *)evbuffer_pullup(in, (ssize_t)(headlen + (size_t)cl));
	pthread_mutex_lock(&fx.mu);
	snprintf(fx.last_head, sizeof(fx.last_head), "%.*s", (int)headlen,
	    head);
	pthread_mutex_unlock(&fx.mu);
	path = strchr(head, ' ');
	bodylen = path != NULL ? strcspn(path + 1, " ") : 0;
	evbuffer_add_printf(bufferevent_get_output(bev),
	    "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\nConnection: close\r\n"
	    "X-Upstream: yes\r\n\r\n%.*s|%.*s", bodylen + 1 + (size_t)cl,
	    (int)bodylen, path != NULL ? path + 1 : "", (int)cl, head + headlen);
	evbuffer_drain(in, headlen + (size_t)cl);
	bufferevent_disable(bev, EV_READ);
	bufferevent_setcb(bev, NULL, fx_http_done_cb, fx_close_cb, NULL);
}

static void
fx_http_accept(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int len, void *arg)
{
	struct bufferevent *bev;

	(void)l;
	(void)sa;
	(void)len;
	(void)arg;
	bev = bufferevent_socket_new(fx.base, fd, BEV_OPT_CLOSE_ON_FREE);
	bufferevent_setcb(bev, fx_http_read_cb, NULL, fx_close_cb, NULL);
	bufferevent_enable(bev, EV_READ | EV_WRITE);
}

static void
fx_flood_write_cb(struct bufferevent *bev, void *arg)
{
	static char chunk[FX_FLOOD_CHUNK];

	(void)arg;
	memset(chunk, 'x', sizeof(chunk));
	bufferevent_write(bev, chunk, sizeof(chunk));
	pthread_mutex_lock(&fx.mu);
	fx.flood_bytes += FX_FLOOD_CHUNK;
	pthread_mutex_unlock(&fx.mu);
}

static void
fx_flood_drop_cb(struct bufferevent *bev, void *arg)
{
	(void)arg;
	evbuffer_drain(bufferevent_get_input(bev),
	    evbuffer_get_length(bufferevent_get_input(bev)));
}

static void
fx_flood_accept(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int len, void *arg)
{
	struct bufferevent *bev;

	(void)l;
	(void)sa;
	(void)len;
	(void)arg;
	bev = bufferevent_socket_new(fx.base, fd, BEV_OPT_CLOSE_ON_FREE);
	bufferevent_setcb(bev, fx_flood_drop_cb, fx_flood_write_cb,
	    fx_close_cb, NULL);
	bufferevent_enable(bev, EV_READ | EV_WRITE);
	pthread_mutex_lock(&fx.mu);
	fx.flood_conns++;
	pthread_mutex_unlock(&fx.mu);
	fx_flood_write_cb(bev, NULL);
}

/* The sink: counts every byte it receives and never answers, so a test
 * can tell that nothing at all reached an upstream. */
static void
fx_sink_read_cb(struct bufferevent *bev, void *arg)
{
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t n = evbuffer_get_length(in);

	(void)arg;
	evbuffer_drain(in, n);
	pthread_mutex_lock(&fx.mu);
	fx.sink_bytes += (long long)n;
	pthread_mutex_unlock(&fx.mu);
}

static void
fx_sink_accept(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int len, void *arg)
{
	struct bufferevent *bev;

	(void)l;
	(void)sa;
	(void)len;
	(void)arg;
	bev = bufferevent_socket_new(fx.base, fd, BEV_OPT_CLOSE_ON_FREE);
	bufferevent_setcb(bev, fx_sink_read_cb, NULL, fx_close_cb, NULL);
	bufferevent_enable(bev, EV_READ);
	pthread_mutex_lock(&fx.mu);
	fx.sink_conns++;
	pthread_mutex_unlock(&fx.mu);
}

static struct evconnlistener *
fx_listen(evconnlistener_cb cb, uint16_t *port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	struct evconnlistener *l;

	inet_pton(AF_INET, "127.0.0.2", &sin.sin_addr);
	l = evconnlistener_new_bind(fx.base, cb, NULL,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 4096,
	    (struct sockaddr *)&sin, sizeof(sin));
	if (l == NULL)
		return NULL;
	getsockname(evconnlistener_get_fd(l), (struct sockaddr *)&sin, &sl);
	*port = ntohs(sin.sin_port);
	return l;
}

static void
fx_stop_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	event_base_loopbreak(fx.base);
}

static void *
fx_thread(void *arg)
{
	(void)arg;
	event_base_dispatch(fx.base);
	return NULL;
}

int
fx_start(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	int fd;

	if (fx.started)
		return 0;
	signal(SIGPIPE, SIG_IGN);
	fx.base = event_base_new();
	if (fx.base == NULL || pipe2(fx.stop_pipe, O_CLOEXEC) != 0)
		return -ENOMEM;
	fx.stop_ev = event_new(fx.base, fx.stop_pipe[0], EV_READ, fx_stop_cb,
	    NULL);
	event_add(fx.stop_ev, NULL);

	fx.dns_fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	if (fx.dns_fd < 0 || bind(fx.dns_fd, (struct sockaddr *)&sin,
	    sizeof(sin)) != 0)
		return -errno;
	getsockname(fx.dns_fd, (struct sockaddr *)&sin, &sl);
	fx.dns_port = ntohs(sin.sin_port);
	fx.dns = evdns_add_server_port_with_base(fx.base, fx.dns_fd, 0,
	    fx_dns_cb, NULL);
	fx.echo = fx_listen(fx_echo_accept, &fx.echo_port);
	fx.http = fx_listen(fx_http_accept, &fx.http_port);
	fx.flood = fx_listen(fx_flood_accept, &fx.flood_port);
	fx.sink = fx_listen(fx_sink_accept, &fx.sink_port);
	if (fx.dns == NULL || fx.echo == NULL || fx.http == NULL ||
	    fx.flood == NULL || fx.sink == NULL)
		return -EIO;

	/* A port on 127.0.0.2 with nothing behind it. */
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	inet_pton(AF_INET, "127.0.0.2", &sin.sin_addr);
	sin.sin_port = 0;
	sl = sizeof(sin);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0)
		return -errno;
	getsockname(fd, (struct sockaddr *)&sin, &sl);
	fx.closed_port = ntohs(sin.sin_port);
	close(fd);

	/* The fixture's servers speak plain bytes and HTTP, so their entry
	 * is raw (a tunnel without it must carry TLS); the TLS list is the
	 * same without raw, for the tests of what tunnels may carry. */
	snprintf(fx_tls_allowlist_text, sizeof(fx_tls_allowlist_text),
	    "# cordon-proxy integration test policy (tunnels carry TLS)\n"
	    "*.cordon-test.net:%u,%u,%u,%u,%u\n"
	    "!denied.cordon-test.net\n", fx.echo_port, fx.http_port,
	    fx.flood_port, fx.closed_port, fx.sink_port);
	snprintf(fx_allowlist_text, sizeof(fx_allowlist_text),
	    "# cordon-proxy integration test policy\n"
	    "*.cordon-test.net:%u,%u,%u,%u,%u raw\n"
	    "!denied.cordon-test.net\n", fx.echo_port, fx.http_port,
	    fx.flood_port, fx.closed_port, fx.sink_port);
	if (pthread_create(&fx.thread, NULL, fx_thread, NULL) != 0)
		return -EAGAIN;
	fx.started = true;
	return 0;
}

void
fx_stop(void)
{
	if (!fx.started)
		return;
	(void)!write(fx.stop_pipe[1], "x", 1);
	pthread_join(fx.thread, NULL);
	evconnlistener_free(fx.echo);
	evconnlistener_free(fx.http);
	evconnlistener_free(fx.flood);
	evconnlistener_free(fx.sink);
	evdns_close_server_port(fx.dns);
	close(fx.dns_fd);
	event_free(fx.stop_ev);
	event_base_free(fx.base);
	close(fx.stop_pipe[0]);
	close(fx.stop_pipe[1]);
	fx.started = false;
}

uint16_t fx_dns_port(void) { return fx.dns_port; }
uint16_t fx_echo_port(void) { return fx.echo_port; }
uint16_t fx_http_port(void) { return fx.http_port; }
uint16_t fx_flood_port(void) { return fx.flood_port; }
uint16_t fx_closed_port(void) { return fx.closed_port; }
uint16_t fx_sink_port(void) { return fx.sink_port; }
const char *px_default_allowlist(void) { return fx_allowlist_text; }
const char *px_tls_allowlist(void) { return fx_tls_allowlist_text; }

static unsigned
fx_queries_of(const char *name, bool only_a)
{
	unsigned n = 0;

	pthread_mutex_lock(&fx.mu);
	if (name == NULL) {
		n = fx.total;
	} else {
		for (size_t i = 0; i < fx.nq; i++)
			if (strcasecmp(fx.q[i].name, name) == 0)
				n = only_a ? fx.q[i].a : fx.q[i].all;
	}
	pthread_mutex_unlock(&fx.mu);
	return n;
}

unsigned fx_queries(const char *name) { return fx_queries_of(name, false); }
unsigned fx_queries_a(const char *name) { return fx_queries_of(name, true); }

void
fx_last_http_head(char *buf, size_t len)
{
	pthread_mutex_lock(&fx.mu);
	snprintf(buf, len, "%s", fx.last_head);
	pthread_mutex_unlock(&fx.mu);
}

long
fx_flood_conns(void)
{
	long n;

	pthread_mutex_lock(&fx.mu);
	n = fx.flood_conns;
	pthread_mutex_unlock(&fx.mu);
	return n;
}

long
fx_sink_conns(void)
{
	long n;

	pthread_mutex_lock(&fx.mu);
	n = fx.sink_conns;
	pthread_mutex_unlock(&fx.mu);
	return n;
}

long long
fx_sink_bytes(void)
{
	long long n;

	pthread_mutex_lock(&fx.mu);
	n = fx.sink_bytes;
	pthread_mutex_unlock(&fx.mu);
	return n;
}

long long
fx_flood_bytes(void)
{
	long long n;

	pthread_mutex_lock(&fx.mu);
	n = fx.flood_bytes;
	pthread_mutex_unlock(&fx.mu);
	return n;
}

/* --- the daemon --------------------------------------------------------- */

static int
px_read_some(struct px *p, int timeout_ms)
{
	struct pollfd pfd = { .fd = p->errfd, .events = POLLIN };
	ssize_t n;

	if (p->errfd < 0)
		return -1;
	if (poll(&pfd, 1, timeout_ms) <= 0)
		return 0;
	if (p->errlen + 1 >= sizeof(p->err)) {
		/* Keep the tail: tests look for recent lines. */
		memmove(p->err, p->err + sizeof(p->err) / 2,
		    p->errlen - sizeof(p->err) / 2);
		p->errlen -= sizeof(p->err) / 2;
	}
	n = read(p->errfd, p->err + p->errlen, sizeof(p->err) - 1 - p->errlen);
	if (n <= 0) {
		close(p->errfd);
		p->errfd = -1;
		return -1;
	}
	p->errlen += (size_t)n;
	p->err[p->errlen] = '\0';
	fwrite(p->err + p->errlen - (size_t)n, 1, (size_t)n, stderr);
	return 1;
}

bool
px_wait_err(struct px *p, size_t from, const char *needle, int timeout_ms)
{
	int64_t deadline = time_mono_ms() + timeout_ms;

	for (;;) {
		if (from <= p->errlen && strstr(p->err + from, needle) != NULL)
			return true;
		int64_t left = deadline - time_mono_ms();
		if (left <= 0 || px_read_some(p, (int)left) < 0) {
			return from <= p->errlen &&
			    strstr(p->err + from, needle) != NULL;
		}
	}
}

int
px_start(struct px *p, const char *allowlist_text,
    const char *const *extra)
{
	char dns[32], bin[512];
	const char *argv[64];
	const char *root = getenv("CORDON_BUILD_ROOT");
	int pipefd[2], argc = 0;
	FILE *f;
	char *s;

	memset(p, 0, sizeof(*p));
	p->errfd = -1;
	if (root == NULL)
		return -ENOENT;
	snprintf(p->dir, sizeof(p->dir), "/tmp/cordon-pxtest-XXXXXX");
	if (mkdtemp(p->dir) == NULL)
		return -errno;
	snprintf(p->allowlist, sizeof(p->allowlist), "%s/allow.list", p->dir);
	snprintf(p->accesslog, sizeof(p->accesslog), "%s/access.log", p->dir);
	f = fopen(p->allowlist, "w");
	if (f == NULL)
		return -errno;
	fputs(allowlist_text != NULL ? allowlist_text : fx_allowlist_text, f);
	fclose(f);
	snprintf(bin, sizeof(bin), "%s/proxy/cordon-proxy", root);
	snprintf(dns, sizeof(dns), "127.0.0.1:%u", fx.dns_port);
	argv[argc++] = bin;
	argv[argc++] = "--listen";
	argv[argc++] = "127.0.0.1:0";
	argv[argc++] = "--allowlist";
	argv[argc++] = p->allowlist;
	argv[argc++] = "--resolver";
	argv[argc++] = dns;
	argv[argc++] = "--allow-address";
	argv[argc++] = "127.0.0.2";
	argv[argc++] = "--access-log";
	argv[argc++] = p->accesslog;
	argv[argc++] = "--dns-timeout";
	argv[argc++] = "0.8";
	for (size_t i = 0; extra != NULL && extra[i] != NULL && argc < 62; i++)
		argv[argc++] = extra[i];
	argv[argc] = NULL;

	if (pipe2(pipefd, O_CLOEXEC) != 0)
		return -errno;
	p->pid = fork();
	if (p->pid < 0)
		return -errno;
	if (p->pid == 0) {
		int null = open("/dev/null", O_RDWR);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(null, 0);
		dup2(null, 1);
		dup2(pipefd[1], 2);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	close(pipefd[1]);
	p->errfd = pipefd[0];
	/* A slot is free once its proxy is stopped (px_stop), not when it
	 * exits (px_wait_exit): its directory is still to be removed. */
	for (size_t i = 0; i < sizeof(px_pids) / sizeof(px_pids[0]); i++)
		if (px_pids[i] == 0 && px_dirs[i][0] == '\0') {
			px_pids[i] = p->pid;
			snprintf(px_dirs[i], sizeof(px_dirs[i]), "%s", p->dir);
			break;
		}
	if (!px_wait_err(p, 0, "listening on 127.0.0.1:", 15000))
		return -ETIMEDOUT;
	s = strstr(p->err, "listening on 127.0.0.1:");
	p->port = (uint16_t)atoi(s + strlen("listening on 127.0.0.1:"));
	s = strstr(p->err, "metrics on 127.0.0.1:");
	if (s != NULL)
		p->metrics_port = (uint16_t)atoi(s + strlen("metrics on 127.0.0.1:"));
	return p->port != 0 ? 0 : -EINVAL;
}

int
px_wait_exit(struct px *p, int timeout_ms)
{
	int64_t deadline = time_mono_ms() + timeout_ms;
	int status;
	pid_t r;

	while ((r = waitpid(p->pid, &status, WNOHANG)) == 0) {
		if (time_mono_ms() >= deadline)
			return -2;
		/* Drain stderr while waiting (also a short wait). */
		if (px_read_some(p, 20) < 0) {
			struct timespec ts = { 0, 20 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
	}
	if (r < 0)
		return -1;
	while (px_read_some(p, 0) > 0)
		;
	for (size_t i = 0; i < sizeof(px_pids) / sizeof(px_pids[0]); i++)
		if (px_pids[i] == p->pid)
			px_pids[i] = 0;
	p->pid = 0;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int
px_stop(struct px *p)
{
	int rc;

	if (p->pid > 0) {
		kill(p->pid, SIGTERM);
		rc = px_wait_exit(p, 20000);
		if (rc == -2) {
			kill(p->pid, SIGKILL);
			(void)px_wait_exit(p, 5000);
			rc = -1;
		}
	} else {
		rc = 0;
	}
	if (p->errfd >= 0)
		close(p->errfd);
	p->errfd = -1;
	/* A step between connection states that proxy/conn_state.c's table
	 * does not list is a bug, whatever the test checked. */
	if (strstr(p->err, "is not in the state table") != NULL) {
		fprintf(stderr, "px_stop: the proxy took a step outside its "
		    "connection state table:\n%s\n", p->err);
		rc = -3;
	}
	/* The whole directory: a test may have left rotated logs, a state
	 * file or another list there. */
	for (size_t i = 0; i < sizeof(px_dirs) / sizeof(px_dirs[0]); i++)
		if (strcmp(px_dirs[i], p->dir) == 0)
			px_dirs[i][0] = '\0';
	if (p->dir[0] != '\0')
		(void)util_rm_rf(p->dir);
	return rc;
}

long
px_rss_kb(const struct px *p)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)p->pid);
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "VmRSS:", 6) == 0)
			kb = strtol(line + 6, NULL, 10);
	fclose(f);
	return kb;
}

/* --- client side -------------------------------------------------------- */

int
cli_connect(uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
	    .sin_port = htons(port) };
	struct timeval tv = { 10, 0 };
	int fd;

	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int
cli_send_n(int fd, const void *s, size_t n)
{
	const char *p = s;

	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int
cli_send(int fd, const char *s)
{
	return cli_send_n(fd, s, strlen(s));
}

int
cli_read_head(int fd, char *head, size_t len)
{
	size_t n = 0;

	head[0] = '\0';
	while (n + 1 < len) {
		ssize_t r = recv(fd, head + n, 1, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		n++;
		head[n] = '\0';
		if (n >= 4 && memcmp(head + n - 4, "\r\n\r\n", 4) == 0)
			break;
	}
	if (strncmp(head, "HTTP/1.", 7) != 0 || n < 12)
		return -1;
	return atoi(head + 9);
}

int
cli_read_n(int fd, void *buf, size_t n)
{
	char *p = buf;

	while (n > 0) {
		ssize_t r = recv(fd, p, n, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

long
head_content_length(const char *head)
{
	const char *p = strcasestr(head, "\r\ncontent-length:");

	return p != NULL ? strtol(p + 17, NULL, 10) : -1;
}

bool
head_has(const char *head, const char *name, const char *value)
{
	char want[256];

	snprintf(want, sizeof(want), "\r\n%s: %s\r\n", name, value);
	return strcasestr(head, want) != NULL;
}

int
px_connect(struct px *p, const char *authority, int *status, char *head,
    size_t headlen)
{
	char req[512];
	int fd = cli_connect(p->port);

	*status = -1;
	if (fd < 0)
		return -1;
	snprintf(req, sizeof(req), "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n",
	    authority, authority);
	if (cli_send(fd, req) != 0) {
		close(fd);
		return -1;
	}
	*status = cli_read_head(fd, head, headlen);
	if (*status != 200) {
		close(fd);
		return -1;
	}
	return fd;
}

void
px_kill_all(void)
{
	for (size_t i = 0; i < sizeof(px_pids) / sizeof(px_pids[0]); i++) {
		if (px_pids[i] > 0) {
			kill(px_pids[i], SIGKILL);
			waitpid(px_pids[i], NULL, 0);
			px_pids[i] = 0;
		}
		/* Also a proxy that exited by itself (px_wait_exit) in a
		 * test that failed before its px_stop. */
		if (px_dirs[i][0] != '\0') {
			(void)util_rm_rf(px_dirs[i]);
			px_dirs[i][0] = '\0';
		}
	}
}
