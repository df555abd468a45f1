/*
 * The service's listeners (conn.h): each accepted socket becomes a
 * connection (conn.c). On TCP, one from an address at its cap is closed at
 * once. A listener at its cap makes room by closing its oldest connection
 * still reading a head (not yet past the token, or idle between requests:
 * nginx's rule for reusable connections), so that a flood of idle
 * connections from many addresses cannot keep a new client out for a whole
 * head deadline; with none to close, the new one is closed at once. A
 * failed accept (EMFILE above all: libevent would retry and log it in a
 * busy loop) closes the spare descriptor to accept and close what waits,
 * pauses accepting on every listener for pause_ms, and is logged once per
 * log_ms with how often it happened.
 */
#include "serve/conn.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "common/log.h"
#include "common/util.h"

#define PEER_BUCKETS 256
#define SHED_MAX 64			/* accepted and closed per pause */

struct peer {
	struct peer *next;
	unsigned char addr[16];
	size_t len;
	int64_t n;
};

struct lis {
	struct serve_accept *a;
	struct evconnlistener *lev;	/* NULL once stopped */
	struct serve_conn_cfg cfg;
	bool tcp;
	int64_t n, max;
};

/* One connection, as its tag. */
struct rec {
	TAILQ_ENTRY(rec) link;
	struct serve_conn *c;
	struct lis *l;
	struct peer *p;
};

/* A warning at most once per interval, with the count since the last. */
struct ratelog {
	int64_t last_ms;
	uint64_t since;
};

struct serve_accept {
	struct serve_accept_opts o;
	struct lis lis[2];		/* [0] unix, [1] TCP */
	TAILQ_HEAD(, rec) conns;
	struct peer *peers[PEER_BUCKETS];
	struct event *resume;
	bool paused;
	int spare;			/* /dev/null, given up on EMFILE */
	struct serve_accept_stats st;
	struct ratelog log_err, log_peer, log_full;
};

/* True when the line should be written now; counts the event. */
static bool
ratelog_due(struct ratelog *r, int64_t every_ms, uint64_t *count)
{
	int64_t now = time_mono_ms();

	r->since++;
	if (r->last_ms != 0 && now - r->last_ms < every_ms)
		return false;
	*count = r->since;
	r->since = 0;
	r->last_ms = now;
	return true;
}

static size_t
peer_hash(const unsigned char *a, size_t len)
{
	return util_fnv1a(a, len) % PEER_BUCKETS;
}

/* The peer record of sa (made on first use); NULL on ENOMEM or for an
 * address family without one. */
static struct peer *
peer_get(struct serve_accept *a, const struct sockaddr *sa)
{
	const unsigned char *addr;
	struct peer *p;
	size_t len, h;

	if (sa->sa_family == AF_INET) {
		addr = (const unsigned char *)
		    &((const struct sockaddr_in *)sa)->sin_addr;
		len = 4;
	} else if (sa->sa_family == AF_INET6) {
		addr = (const unsigned char *)
		    &((const struct sockaddr_in6 *)sa)->sin6_addr;
		len = 16;
	} else {
		return NULL;
	}
	h = peer_hash(addr, len);
	for (p = a->peers[h]; p != NULL; p = p->next)
		if (p->len == len && memcmp(p->addr, addr, len) == 0)
			return p;
	if ((p = calloc(1, sizeof(*p))) == NULL)
		return NULL;
	memcpy(p->addr, addr, len);
	p->len = len;
	p->next = a->peers[h];
	a->peers[h] = p;
	return p;
}

static void
peer_put(struct serve_accept *a, struct peer *p)
{
	struct peer **pp;

	if (p == NULL || --p->n > 0)
		return;
	for (pp = &a->peers[peer_hash(p->addr, p->len)]; *pp != NULL;
	    pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			free(p);
			return;
		}
}

static void
peer_text(const struct peer *p, char *out, size_t len)
{
	if (inet_ntop(p->len == 4 ? AF_INET : AF_INET6, p->addr, out,
	    (socklen_t)len) == NULL)
		util_strlcpy(out, "?", len);
}

/* Accepting on l again, unless paused. */
static void
lis_enable(struct lis *l)
{
	if (l->lev == NULL || l->a->paused)
		return;
	evconnlistener_enable(l->lev);
}

static void
on_closed(void *tag, void *arg)
{
	struct rec *r = tag;
	struct serve_accept *a = arg;

	TAILQ_REMOVE(&a->conns, r, link);
	r->l->n--;
	a->st.conns[r->l->tcp]--;
	peer_put(a, r->p);
	free(r);
}

/* l is at its cap: closes its oldest connection still reading a head.
 * False when it has none (every one is past its token). */
static bool
evict(struct serve_accept *a, struct lis *l)
{
	struct rec *r;
	uint64_t n;

	TAILQ_FOREACH(r, &a->conns, link)
		if (r->l == l && serve_conn_reading_head(r->c))
			break;
	a->st.full++;
	if (r != NULL)
		a->st.evicted++;
	if (ratelog_due(&a->log_full, a->o.log_ms, &n))
		log_warnx("%s listener at its cap of %lld connections, %llu "
		    "time(s) in the last %lld s: %s", l->tcp ? "TCP" :
		    "unix-socket", (long long)l->max, (unsigned long long)n,
		    (long long)(a->o.log_ms / 1000), r != NULL ? "its oldest "
		    "connection still reading a head closed for the new one" :
		    "every connection is past its token, the new one closed");
	if (r == NULL)
		return false;
	serve_conn_close(r->c);		/* on_closed frees r */
	return true;
}

static void
accept_cb(struct evconnlistener *lev, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct lis *l = arg;
	struct serve_accept *a = l->a;
	struct rec *r;
	struct peer *p = NULL;
	uint64_t n;
	char text[64];

	(void)salen;
	(void)lev;
	if (l->tcp && (p = peer_get(a, sa)) != NULL &&
	    p->n >= a->o.peer_max) {
		a->st.refused_peer++;
		if (ratelog_due(&a->log_peer, a->o.log_ms, &n)) {
			peer_text(p, text, sizeof(text));
			log_warnx("connections refused at once: over "
			    "serve.max_connections_per_peer (%lld), %llu in "
			    "the last %lld s, the last from %s",
			    (long long)a->o.peer_max, (unsigned long long)n,
			    (long long)(a->o.log_ms / 1000), text);
		}
		evutil_closesocket(fd);
		return;
	}
	/* Counted first: an eviction below must not free p. */
	if (p != NULL)
		p->n++;
	if ((l->n >= l->max && !evict(a, l)) ||
	    (r = calloc(1, sizeof(*r))) == NULL) {
		evutil_closesocket(fd);
		peer_put(a, p);
		return;
	}
	r->l = l;
	r->p = p;
	/* Listed first: a connection may close while it is set up. */
	TAILQ_INSERT_TAIL(&a->conns, r, link);
	a->st.conns[l->tcp]++;
	l->n++;
	if (serve_conn_new(&l->cfg, fd, r, &r->c) < 0)
		on_closed(r, a);
}

static void
resume_cb(evutil_socket_t fd, short what, void *arg)
{
	struct serve_accept *a = arg;

	(void)fd;
	(void)what;
	a->paused = false;
	for (size_t i = 0; i < 2; i++)
		lis_enable(&a->lis[i]);
}

/* Out of descriptors: give up the spare one to accept and close what
 * waits on lev (its clients see a close, not a hang), then take it back. */
static uint64_t
shed(struct serve_accept *a, struct evconnlistener *lev)
{
	evutil_socket_t lfd = evconnlistener_get_fd(lev);
	uint64_t n = 0;
	int fd;

	if (a->spare >= 0) {
		close(a->spare);
		a->spare = -1;
	}
	while (n < SHED_MAX && (fd = accept4(lfd, NULL, NULL,
	    SOCK_CLOEXEC)) >= 0) {
		close(fd);
		n++;
	}
	a->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return n;
}

static void
error_cb(struct evconnlistener *lev, void *arg)
{
	struct lis *l = arg;
	struct serve_accept *a = l->a;
	struct timeval tv = { .tv_sec = a->o.pause_ms / 1000,
	    .tv_usec = (a->o.pause_ms % 1000) * 1000 };
	int err = EVUTIL_SOCKET_ERROR();
	uint64_t n, sh = 0;

	a->st.accept_errors++;
	if (err == EMFILE || err == ENFILE)
		a->st.shed += (sh = shed(a, lev));
	a->paused = true;
	for (size_t i = 0; i < 2; i++)
		if (a->lis[i].lev != NULL)
			evconnlistener_disable(a->lis[i].lev);
	evtimer_add(a->resume, &tv);
	if (ratelog_due(&a->log_err, a->o.log_ms, &n))
		log_warnx("accept: %s: %llu time(s) in the last %lld s; "
		    "accepting paused for %lld ms each time, %llu waiting "
		    "connection(s) closed (too few descriptors: raise "
		    "LimitNOFILE or lower serve.max_connections)",
		    strerror(err), (unsigned long long)n,
		    (long long)(a->o.log_ms / 1000), (long long)a->o.pause_ms,
		    (unsigned long long)sh);
}

int
serve_accept_new(const struct serve_accept_opts *o,
    struct serve_accept **out)
{
	struct serve_accept *a = calloc(1, sizeof(*a));

	*out = NULL;
	if (a == NULL)
		return -ENOMEM;
	a->spare = -1;
	a->o = *o;
	TAILQ_INIT(&a->conns);
	for (size_t i = 0; i < 2; i++) {
		a->lis[i].a = a;
		a->lis[i].tcp = i == 1;
		a->lis[i].max = i == 1 ? o->tcp_max : o->unix_max;
		a->lis[i].cfg = o->conn;
		a->lis[i].cfg.tcp = i == 1;
		a->lis[i].cfg.on_closed = on_closed;
		a->lis[i].cfg.closed_arg = a;
	}
	if ((a->resume = evtimer_new(o->base, resume_cb, a)) == NULL ||
	    (a->spare = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
		serve_accept_free(a);
		return -ENOMEM;
	}
	*out = a;
	return 0;
}

int
serve_accept_listen(struct serve_accept *a, int fd, bool tcp)
{
	struct lis *l = &a->lis[tcp];

	if ((l->lev = evconnlistener_new(a->o.base, accept_cb, l,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1, fd)) == NULL) {
		close(fd);
		return -ENOMEM;
	}
	evconnlistener_set_error_cb(l->lev, error_cb);
	return 0;
}

void
serve_accept_stop(struct serve_accept *a)
{
	for (size_t i = 0; i < 2; i++)
		if (a->lis[i].lev != NULL) {
			evconnlistener_free(a->lis[i].lev);
			a->lis[i].lev = NULL;
		}
}

void
serve_accept_stats(const struct serve_accept *a,
    struct serve_accept_stats *st)
{
	*st = a->st;
}

void
serve_accept_free(struct serve_accept *a)
{
	struct rec *r;
	struct peer *p;

	if (a == NULL)
		return;
	serve_accept_stop(a);
	/* Each close removes its record (on_closed). */
	while ((r = TAILQ_FIRST(&a->conns)) != NULL)
		serve_conn_close(r->c);
	for (size_t i = 0; i < PEER_BUCKETS; i++)
		while ((p = a->peers[i]) != NULL) {
			a->peers[i] = p->next;
			free(p);
		}
	if (a->resume != NULL)
		event_free(a->resume);
	if (a->spare >= 0)
		close(a->spare);
	free(a);
}
