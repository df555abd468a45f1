/*
 * Reading a tunnel client's first bytes for the SNI check (helloread.h).
 * The 16.5 KiB parser is allocated only for a hello that takes more than
 * one read, so the many tunnels whose client is silent (or waits for the
 * server to speak) pin only this small struct and two events, and the
 * usual hello (one read) costs no allocation at all.
 */
#include "proxy/helloread.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/event.h>
#include <event2/event_struct.h>

struct helloread {
	int fd;			/* -1: push mode */
	struct event rd;
	struct event timer;
	bool rd_on;
	bool timer_on;		/* the deadline runs */
	struct proxy_tlshello *h;	/* NULL until the first byte */
	struct helloread_sink sink;
};

/* Starts the deadline, once. */
static void
helloread_timer_start(struct helloread *hr)
{
	struct timeval tv = { .tv_sec = hr->sink.timeout_ms / 1000,
	    .tv_usec = (hr->sink.timeout_ms % 1000) * 1000 };

	if (hr->timer_on)
		return;
	evtimer_add(&hr->timer, &tv);
	hr->timer_on = true;
}

/* Keeps h (a parser on the stack after its first read) for more reads:
 * on the heap, with the deadline from now unless it already runs. */
static int
helloread_keep(struct helloread *hr, const struct proxy_tlshello *h)
{
	hr->h = malloc(sizeof(*hr->h));
	if (hr->h == NULL)
		return -ENOMEM;
	memcpy(hr->h, h, offsetof(struct proxy_tlshello, buf) + h->len);
	helloread_timer_start(hr);
	return 0;
}

static void
helloread_end(struct helloread *hr, enum helloread_end end,
    const struct proxy_tlshello *h)
{
	if (hr->rd_on) {
		event_del(&hr->rd);
		hr->rd_on = false;
	}
	event_del(&hr->timer);
	hr->sink.done(hr->sink.arg, end, h);	/* may free hr */
}

static void
helloread_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct helloread *hr = arg;

	(void)fd;
	(void)what;
	helloread_end(hr, HELLOREAD_TIMEOUT, hr->h);
}

/* Socket mode: reads at most the parser's room, so nothing past the cap
 * leaves the socket before the verdict. The first read parses on the
 * stack. */
static void
helloread_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct helloread *hr = arg;
	struct proxy_tlshello first, *h = hr->h;
	uint8_t buf[PROXY_TLSHELLO_MAX];
	ssize_t n;

	(void)what;
	if (h == NULL) {
		proxy_tlshello_init(&first);
		h = &first;
	}
	n = recv(fd, buf, proxy_tlshello_room(h), MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n < 0) {
		helloread_end(hr, HELLOREAD_ERROR, NULL);
		return;
	}
	if (n == 0) {
		(void)proxy_tlshello_finish(h);
		helloread_end(hr, HELLOREAD_EOF, h->len > 0 ? h : NULL);
		return;
	}
	if (proxy_tlshello_feed(h, buf, (size_t)n, NULL) != TLSHELLO_NEED_MORE)
		helloread_end(hr, HELLOREAD_PARSED, h);
	else if (h == &first && helloread_keep(hr, h) != 0)
		helloread_end(hr, HELLOREAD_ERROR, NULL);
}

/* Push mode: the parser on the heap from the first byte, and the
 * deadline. */
static int
helloread_begin(struct helloread *hr)
{
	struct proxy_tlshello empty;

	if (hr->h != NULL)
		return 0;
	proxy_tlshello_init(&empty);
	return helloread_keep(hr, &empty);
}

int
proxy_helloread_new(struct event_base *base, int fd,
    const struct helloread_sink *sink, struct helloread **out)
{
	struct helloread *hr = calloc(1, sizeof(*hr));

	*out = hr;
	if (hr == NULL)
		return -ENOMEM;
	hr->fd = fd;
	hr->sink = *sink;
	evtimer_assign(&hr->timer, base, helloread_timer_cb, hr);
	if (fd >= 0) {
		event_assign(&hr->rd, base, fd, EV_READ | EV_PERSIST,
		    helloread_read_cb, hr);
		event_add(&hr->rd, NULL);
		hr->rd_on = true;
	}
	if (sink->from_start)
		helloread_timer_start(hr);
	return 0;
}

void
proxy_helloread_free(struct helloread *hr)
{
	if (hr == NULL)
		return;
	if (hr->rd_on)
		event_del(&hr->rd);
	event_del(&hr->timer);
	free(hr->h);
	free(hr);
}

enum proxy_tlshello_status
proxy_helloread_push(struct helloread *hr, const void *data, size_t n,
    size_t *taken)
{
	if (taken != NULL)
		*taken = 0;
	if (n == 0)
		return hr->h != NULL ? hr->h->status : TLSHELLO_NEED_MORE;
	if (helloread_begin(hr) != 0)
		return TLSHELLO_TOO_LARGE;
	return proxy_tlshello_feed(hr->h, data, n, taken);
}

enum proxy_tlshello_status
proxy_helloread_finish(struct helloread *hr)
{
	event_del(&hr->timer);
	return hr->h != NULL ? proxy_tlshello_finish(hr->h) :
	    TLSHELLO_NEED_MORE;
}

size_t
proxy_helloread_room(const struct helloread *hr)
{
	return hr->h != NULL ? proxy_tlshello_room(hr->h) : PROXY_TLSHELLO_MAX;
}

const struct proxy_tlshello *
proxy_helloread_hello(const struct helloread *hr)
{
	return hr->h;
}
