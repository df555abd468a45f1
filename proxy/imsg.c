/*
 * Parent-child messages (imsg.h): SOCK_SEQPACKET keeps each sendmsg one
 * record, so a message is one header and its payload in one read, and a
 * passed descriptor arrives with exactly its message. Large payloads go
 * in a sealed memfd (no write, grow or shrink after sending), read whole
 * by the receiver.
 */
#include "proxy/imsg.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#define IMSG_BLOB	0x1u	/* the payload is in the passed memfd */
#define IMSG_FD		0x2u	/* a descriptor of the caller's is passed */
#define IMSG_SEALS	(F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | \
			    F_SEAL_WRITE)

struct imsg_hdr {
	uint32_t type;
	uint32_t flags;
	uint64_t id;
	uint64_t len;		/* payload bytes (inline, or the blob's) */
};

struct imsg_out {
	struct imsg_out *next;
	struct imsg_hdr hdr;
	int fd;			/* the one descriptor sent (-1: none) */
	size_t len;		/* inline payload bytes in data */
	unsigned char data[];
};

struct proxy_chan {
	int fd;
	bool dead;		/* reported: fn(arg, NULL) was called */
	bool broken;		/* a send failed: report it from the loop */
	struct event *rd, *wr;
	proxy_chan_fn fn;
	void *arg;
	struct imsg_out *head, *tail;
	size_t queued;
	unsigned char *buf;	/* one record: header + inline payload */
};

static void
chan_die(struct proxy_chan *ch)
{
	if (ch->dead)
		return;
	ch->dead = true;
	event_del(ch->rd);
	event_del(ch->wr);
	ch->fn(ch->arg, NULL);	/* may free ch */
}

/* Sends queued messages until the socket would block. */
static int
chan_flush(struct proxy_chan *ch)
{
	struct imsg_out *o;

	while ((o = ch->head) != NULL) {
		union {
			struct cmsghdr h;
			char space[CMSG_SPACE(sizeof(int))];
		} cm;
		struct iovec iov[2] = {
			{ &o->hdr, sizeof(o->hdr) }, { o->data, o->len } };
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
		ssize_t n;

		memset(&cm, 0, sizeof(cm));
		if (o->fd >= 0) {
			struct cmsghdr *c;
			mh.msg_control = cm.space;
			mh.msg_controllen = sizeof(cm.space);
			c = CMSG_FIRSTHDR(&mh);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(c), &o->fd, sizeof(int));
		}
		n = sendmsg(ch->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		if (n < 0)
			return -errno;
		ch->head = o->next;
		if (ch->head == NULL)
			ch->tail = NULL;
		ch->queued -= o->len;
		if (o->fd >= 0)
			close(o->fd);
		free(o);
	}
	return 0;
}

static void
chan_arm_write(struct proxy_chan *ch)
{
	if (ch->head != NULL)
		event_add(ch->wr, NULL);
	else
		event_del(ch->wr);
}

static void
chan_write_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_chan *ch = arg;

	(void)fd;
	(void)what;
	if (chan_flush(ch) != 0) {
		chan_die(ch);
		return;
	}
	chan_arm_write(ch);
}

/* The whole sealed memfd blob of len bytes; NULL when it is not one. */
static unsigned char *
chan_read_blob(int fd, uint64_t len)
{
	unsigned char *p;
	struct stat st;
	size_t got = 0;
	ssize_t n;
	int seals;

	seals = fcntl(fd, F_GET_SEALS);
	if (len > PROXY_IMSG_MAX || seals < 0 ||
	    (seals & IMSG_SEALS) != IMSG_SEALS || fstat(fd, &st) != 0 ||
	    (uint64_t)st.st_size != len)
		return NULL;
	if ((p = malloc(len > 0 ? (size_t)len : 1)) == NULL)
		return NULL;
	while (got < len) {
		n = pread(fd, p + got, (size_t)len - got, (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(p);
			return NULL;
		}
		got += (size_t)n;
	}
	return p;
}

/* One record; false when the channel died (ch may be freed). */
static bool
chan_read_one(struct proxy_chan *ch, bool *again)
{
	union {
		struct cmsghdr h;
		char space[CMSG_SPACE(2 * sizeof(int))];
	} cm;
	struct iovec iov = { ch->buf, sizeof(struct imsg_hdr) +
	    PROXY_IMSG_INLINE };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
	    .msg_control = cm.space, .msg_controllen = sizeof(cm.space) };
	struct imsg_hdr hdr;
	struct proxy_imsg m = { .fd = -1 };
	unsigned char *blob = NULL;
	int fds[2] = { -1, -1 }, nfd = 0;
	struct cmsghdr *c;
	ssize_t n;

	*again = false;
	n = recvmsg(ch->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	for (c = n > 0 ? CMSG_FIRSTHDR(&mh) : NULL; c != NULL;
	    c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) /
		    sizeof(int); i++) {
			int f;
			memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (nfd < 2)
				fds[nfd++] = f;
			else
				close(f);
		}
	}
	if (n <= 0 || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
	    (size_t)n < sizeof(hdr))
		goto bad;
	memcpy(&hdr, ch->buf, sizeof(hdr));
	if (hdr.type == 0 || hdr.type > 0x7fffffffu ||
	    (hdr.flags & ~(IMSG_BLOB | IMSG_FD)) != 0 ||
	    hdr.flags == (IMSG_BLOB | IMSG_FD) ||
	    nfd != (hdr.flags != 0))
		goto bad;
	if (hdr.flags & IMSG_BLOB) {
		if ((size_t)n != sizeof(hdr) ||
		    (blob = chan_read_blob(fds[0], hdr.len)) == NULL)
			goto bad;
		close(fds[0]);
		fds[0] = -1;
		m.data = blob;
		m.len = (size_t)hdr.len;
	} else {
		if (hdr.len != (uint64_t)n - sizeof(hdr))
			goto bad;
		m.data = ch->buf + sizeof(hdr);
		m.len = (size_t)hdr.len;
	}
	m.type = hdr.type;
	m.id = hdr.id;
	m.fd = (hdr.flags & IMSG_FD) ? fds[0] : -1;
	*again = true;
	ch->fn(ch->arg, &m);	/* never frees ch (only fn(arg, NULL) may) */
	free(blob);
	return true;
bad:
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(blob);
	chan_die(ch);
	return false;
}

static void
chan_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_chan *ch = arg;
	bool again = true;

	(void)fd;
	(void)what;
	if (ch->broken) {
		chan_die(ch);	/* may free ch */
		return;
	}
	/* A handful per wake-up: the loop stays fair to the network. */
	for (int i = 0; i < 64 && again; i++)
		if (!chan_read_one(ch, &again))
			return;	/* died: ch may be freed */
}

int
proxy_chan_new(struct event_base *base, int fd, proxy_chan_fn fn,
    void *arg, struct proxy_chan **out)
{
	struct proxy_chan *ch = calloc(1, sizeof(*ch));
	int flags, sz = 4 * 1024 * 1024;

	*out = NULL;
	if (ch == NULL)
		return -ENOMEM;
	ch->buf = malloc(sizeof(struct imsg_hdr) + PROXY_IMSG_INLINE);
	ch->rd = event_new(base, fd, EV_READ | EV_PERSIST, chan_read_cb, ch);
	ch->wr = event_new(base, fd, EV_WRITE, chan_write_cb, ch);
	if (ch->buf == NULL || ch->rd == NULL || ch->wr == NULL) {
		if (ch->rd != NULL)
			event_free(ch->rd);
		if (ch->wr != NULL)
			event_free(ch->wr);
		free(ch->buf);
		free(ch);
		return -ENOMEM;
	}
	flags = fcntl(fd, F_GETFL);
	if (flags >= 0)
		(void)fcntl(fd, F_SETFL, flags | O_NONBLOCK);
	/* Room for many records before a sender must queue. */
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	ch->fd = fd;
	ch->fn = fn;
	ch->arg = arg;
	event_add(ch->rd, NULL);
	*out = ch;
	return 0;
}

void
proxy_chan_free(struct proxy_chan *ch)
{
	struct imsg_out *o;

	if (ch == NULL)
		return;
	event_free(ch->rd);
	event_free(ch->wr);
	while ((o = ch->head) != NULL) {
		ch->head = o->next;
		if (o->fd >= 0)
			close(o->fd);
		free(o);
	}
	close(ch->fd);
	free(ch->buf);
	free(ch);
}

/* A sealed memfd holding data. The descriptor, or a negative errno. */
static int
chan_blob(const void *data, size_t len)
{
	size_t done = 0;
	ssize_t n;
	int fd = memfd_create("cordon-imsg", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		return -errno;
	while (done < len) {
		n = write(fd, (const char *)data + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = n < 0 ? errno : EIO;
			close(fd);
			return -e;
		}
		done += (size_t)n;
	}
	if (fcntl(fd, F_ADD_SEALS, IMSG_SEALS) != 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

int
proxy_chan_send(struct proxy_chan *ch, uint32_t type, uint64_t id,
    const void *data, size_t len, int fd)
{
	struct imsg_out *o;
	bool blob = len > PROXY_IMSG_INLINE;
	size_t inl = blob ? 0 : len;
	int rc, bfd = -1;

	if (ch->dead || ch->broken)
		rc = -EPIPE;
	else if (type == 0 || type > 0x7fffffffu || len > PROXY_IMSG_MAX ||
	    (blob && fd >= 0))
		rc = len > PROXY_IMSG_MAX ? -EMSGSIZE : -EINVAL;
	else if (ch->queued + inl > PROXY_IMSG_QUEUE_MAX)
		rc = -ENOBUFS;
	else
		rc = 0;
	if (rc == 0 && blob && (bfd = chan_blob(data, len)) < 0)
		rc = bfd;
	if (rc == 0 && (o = malloc(sizeof(*o) + inl)) == NULL)
		rc = -ENOMEM;
	if (rc != 0) {
		if (fd >= 0)
			close(fd);
		if (bfd >= 0)
			close(bfd);
		return rc;
	}
	memset(&o->hdr, 0, sizeof(o->hdr));
	o->next = NULL;
	o->hdr.type = type;
	o->hdr.id = id;
	o->hdr.len = len;
	o->hdr.flags = (blob ? IMSG_BLOB : 0) | (fd >= 0 ? IMSG_FD : 0);
	o->fd = blob ? bfd : fd;
	o->len = inl;
	if (inl > 0)
		memcpy(o->data, data, inl);
	if (ch->tail != NULL)
		ch->tail->next = o;
	else
		ch->head = o;
	ch->tail = o;
	ch->queued += inl;
	if (chan_flush(ch) != 0) {
		/* Broken: reported from the loop, never from inside a send
		 * (the caller may be in the middle of something). */
		ch->broken = true;
		event_del(ch->wr);
		event_active(ch->rd, EV_READ, 0);
		return -EPIPE;
	}
	chan_arm_write(ch);
	return 0;
}

size_t
proxy_chan_queued(const struct proxy_chan *ch)
{
	return ch->queued;
}
