/*
 * The control socket: bind (stale socket replaced, mode 0600), accept up
 * to PROXY_CTLSRV_CONNS_MAX connections, read one request per line (a bad
 * line gets an error answer and the connection goes on; a line over
 * PROXY_CTL_LINE_MAX gets an error and the connection is closed), answer
 * each through ctlops.c, and close connections idle for
 * PROXY_CTLSRV_IDLE_S seconds.
 */
#include "proxy/ctlsrv.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "common/log.h"
#include "proxy/ctl.h"

/* Answers queued beyond this: stop reading until the client reads. */
#define CTLSRV_OUT_MAX	(256 * 1024)

struct ctlconn {
	struct proxy_ctlsrv *cs;
	struct ctlconn *prev, *next;
	struct bufferevent *bev;
	bool closing;		/* last answer queued: close once written */
	/* A request answered later (the handler took it): no further
	 * request is read until its answer is queued. */
	struct proxy_ctl_reply *waiting;
};

struct proxy_ctl_reply {
	struct ctlconn *cc;	/* NULL once the connection went */
};

struct proxy_ctlsrv {
	proxy_ctlsrv_fn fn;
	void *arg;
	struct event_base *base;
	struct evconnlistener *lev;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	dev_t dev;
	ino_t ino;
	struct ctlconn *conns;
	size_t nconns;
};

static void ctlconn_read_cb(struct bufferevent *bev, void *arg);
static void ctlconn_event_cb(struct bufferevent *bev, short what, void *arg);

static void
ctlconn_free(struct ctlconn *cc)
{
	struct proxy_ctlsrv *cs = cc->cs;

	if (cc->waiting != NULL)
		cc->waiting->cc = NULL;
	bufferevent_free(cc->bev);
	if (cc->prev != NULL)
		cc->prev->next = cc->next;
	else
		cs->conns = cc->next;
	if (cc->next != NULL)
		cc->next->prev = cc->prev;
	cs->nconns--;
	free(cc);
}

static void
ctlconn_write_cb(struct bufferevent *bev, void *arg)
{
	struct ctlconn *cc = arg;

	if (cc->closing) {
		ctlconn_free(cc);
		return;
	}
	/* Backpressure over: read requests again. */
	bufferevent_setwatermark(bev, EV_WRITE, 0, 0);
	bufferevent_setcb(bev, ctlconn_read_cb, NULL, ctlconn_event_cb, cc);
	if (cc->waiting != NULL)
		return;
	bufferevent_enable(bev, EV_READ);
	ctlconn_read_cb(bev, cc);
}

static void
ctlconn_event_cb(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	if (what & BEV_EVENT_TIMEOUT)
		log_debug("control connection idle: closed");
	ctlconn_free(arg);
}

/* Queues answer (taken; NULL is ENOMEM) and, with last or on failure,
 * closes once it is written. False when the connection is closing. */
static bool
ctlconn_answer(struct ctlconn *cc, char *answer, bool last)
{
	struct evbuffer *out = bufferevent_get_output(cc->bev);

	if (answer == NULL || evbuffer_add(out, answer, strlen(answer)) != 0)
		last = true;
	free(answer);
	if (last && evbuffer_get_length(out) == 0) {
		ctlconn_free(cc);
		return false;
	} else if (last) {
		cc->closing = true;
		bufferevent_disable(cc->bev, EV_READ);
	} else if (evbuffer_get_length(out) > CTLSRV_OUT_MAX) {
		bufferevent_disable(cc->bev, EV_READ);
	} else {
		return true;
	}
	bufferevent_setwatermark(cc->bev, EV_WRITE, 0, 0);
	bufferevent_setcb(cc->bev, ctlconn_read_cb, ctlconn_write_cb,
	    ctlconn_event_cb, cc);
	return false;
}

/* One request line in[0..len] (the '\n' included). */
static bool
ctlconn_line(struct ctlconn *cc, struct evbuffer *in, size_t len)
{
	struct proxy_ctl_req req;
	struct proxy_ctl_reply *later;
	char err[256], *answer;
	const char *line;
	bool wait = false;
	int rc;

	line = (const char *)evbuffer_pullup(in, (ssize_t)len);
	if (line == NULL)
		return ctlconn_answer(cc, NULL, true);
	rc = proxy_ctl_parse(line, len, &req, err, sizeof(err));
	evbuffer_drain(in, len);
	if (rc != 0) {
		log_debug("control: bad request: %s", err);
		return ctlconn_answer(cc, proxy_ctl_error(err), false);
	}
	if ((later = calloc(1, sizeof(*later))) == NULL) {
		explicit_bzero(req.token, sizeof(req.token));
		return ctlconn_answer(cc, NULL, true);
	}
	later->cc = cc;
	answer = cc->cs->fn(cc->cs->arg, &req, later, &wait);
	explicit_bzero(req.token, sizeof(req.token));
	if (wait) {
		/* The handler owns later now and answers through it. */
		cc->waiting = later;
		bufferevent_disable(cc->bev, EV_READ);
		return false;
	}
	free(later);
	return ctlconn_answer(cc, answer, false);
}

static void
ctlconn_read_cb(struct bufferevent *bev, void *arg)
{
	struct ctlconn *cc = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer_ptr p;
	size_t eol;
	char msg[80];

	while (!cc->closing && cc->waiting == NULL &&
	    evbuffer_get_length(in) > 0) {
		p = evbuffer_search_eol(in, NULL, &eol, EVBUFFER_EOL_LF);
		/* PROXY_CTL_LINE_MAX counts the '\n'. */
		if ((p.pos < 0 && evbuffer_get_length(in) >= PROXY_CTL_LINE_MAX)
		    || (p.pos >= 0 && (size_t)p.pos >= PROXY_CTL_LINE_MAX)) {
			snprintf(msg, sizeof(msg), "line too long (at most %d "
			    "bytes): closing", PROXY_CTL_LINE_MAX);
			(void)ctlconn_answer(cc, proxy_ctl_error(msg), true);
			return;
		}
		if (p.pos < 0)
			return;
		if (!ctlconn_line(cc, in, (size_t)p.pos + eol))
			return;
	}
}

static void
ctlsrv_accept_cb(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct proxy_ctlsrv *cs = arg;
	struct timeval tv = { PROXY_CTLSRV_IDLE_S, 0 };
	struct ctlconn *cc;

	(void)l;
	(void)sa;
	(void)salen;
	if (cs->nconns >= PROXY_CTLSRV_CONNS_MAX) {
		log_warnx("control: %d connections already: refusing one",
		    PROXY_CTLSRV_CONNS_MAX);
		evutil_closesocket(fd);
		return;
	}
	cc = calloc(1, sizeof(*cc));
	if (cc != NULL)
		cc->bev = bufferevent_socket_new(cs->base, fd,
		    BEV_OPT_CLOSE_ON_FREE);
	if (cc == NULL || cc->bev == NULL) {
		log_warnx("control: out of memory");
		free(cc);
		evutil_closesocket(fd);
		return;
	}
	cc->cs = cs;
	cc->next = cs->conns;
	if (cs->conns != NULL)
		cs->conns->prev = cc;
	cs->conns = cc;
	cs->nconns++;
	bufferevent_set_timeouts(cc->bev, &tv, &tv);
	bufferevent_setcb(cc->bev, ctlconn_read_cb, NULL, ctlconn_event_cb,
	    cc);
	bufferevent_enable(cc->bev, EV_READ | EV_WRITE);
}

/* Removes a stale socket at path; refuses any other file. */
static int
ctlsrv_clear(const char *path)
{
	struct stat st;

	if (lstat(path, &st) != 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode)) {
		log_warnx("--control %s: exists and is not a socket", path);
		return -EEXIST;
	}
	if (unlink(path) != 0)
		return -errno;
	return 0;
}

static int
ctlsrv_bind(struct proxy_ctlsrv *cs, const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct stat st;
	mode_t old;
	int fd, rc;

	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	if ((rc = ctlsrv_clear(path)) != 0)
		return rc;
	memcpy(sun.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* Never a moment with a connectable mode: umask before bind, then
	 * the exact mode. */
	old = umask(0177);
	rc = bind(fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (rc != 0 || chmod(path, 0600) != 0 || lstat(path, &st) != 0 ||
	    listen(fd, PROXY_CTLSRV_CONNS_MAX) != 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	cs->dev = st.st_dev;
	cs->ino = st.st_ino;
	cs->lev = evconnlistener_new(cs->base, ctlsrv_accept_cb, cs,
	    LEV_OPT_CLOSE_ON_FREE, -1, fd);
	if (cs->lev == NULL) {
		close(fd);
		return -ENOMEM;
	}
	return 0;
}

void
proxy_ctl_reply_send(struct proxy_ctl_reply *r, char *answer)
{
	struct ctlconn *cc = r->cc;

	free(r);
	if (cc == NULL) {	/* the client is gone */
		free(answer);
		return;
	}
	cc->waiting = NULL;
	if (!ctlconn_answer(cc, answer, false))
		return;		/* closing, or backpressure: it resumes */
	bufferevent_enable(cc->bev, EV_READ);
	ctlconn_read_cb(cc->bev, cc);	/* requests that came meanwhile */
}

int
proxy_ctlsrv_new(struct event_base *base, const char *path,
    proxy_ctlsrv_fn fn, void *arg, struct proxy_ctlsrv **out)
{
	struct proxy_ctlsrv *cs;
	int rc;

	*out = NULL;
	cs = calloc(1, sizeof(*cs));
	if (cs == NULL)
		return -ENOMEM;
	cs->fn = fn;
	cs->arg = arg;
	cs->base = base;
	snprintf(cs->path, sizeof(cs->path), "%s", path);
	rc = ctlsrv_bind(cs, path);
	if (rc != 0) {
		errno = -rc;
		log_warn("--control %s", path);
		free(cs);
		return rc;
	}
	*out = cs;
	return 0;
}

void
proxy_ctlsrv_free(struct proxy_ctlsrv *cs)
{
	struct stat st;

	if (cs == NULL)
		return;
	while (cs->conns != NULL)
		ctlconn_free(cs->conns);
	if (cs->lev != NULL)
		evconnlistener_free(cs->lev);
	/* Only our own socket (another daemon may have replaced it); after
	 * --user this may fail, which leaves a stale socket for the next
	 * start to replace. */
	if (lstat(cs->path, &st) == 0 && st.st_dev == cs->dev &&
	    st.st_ino == cs->ino)
		(void)unlink(cs->path);
	free(cs);
}
