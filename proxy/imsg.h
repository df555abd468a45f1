/*
 * Typed messages between cordon-proxy's privileged parent and its network
 * child (privilege separation, as OpenBSD's imsg): one message per
 * SOCK_SEQPACKET record, a fixed header (type, payload length, request
 * id) and the payload, optionally one descriptor passed with it. A payload
 * over PROXY_IMSG_INLINE travels in a sealed memfd instead, so a policy
 * set of any size goes in one message. Sends never block: what the socket
 * cannot take now is queued, up to PROXY_IMSG_QUEUE_MAX bytes.
 */
#ifndef CORDON_PROXY_IMSG_H
#define CORDON_PROXY_IMSG_H

#include <stddef.h>
#include <stdint.h>

struct event_base;
struct proxy_chan;

/* Payload bytes sent inline; larger payloads go through a memfd. */
#define PROXY_IMSG_INLINE	(48 * 1024)
/* The largest payload accepted at all (a memfd's size). */
#define PROXY_IMSG_MAX		(256u * 1024 * 1024)
/* Bytes queued for a peer that does not read, at most. */
#define PROXY_IMSG_QUEUE_MAX	(512u * 1024 * 1024)

/* One received message, valid during the callback. fd: a descriptor
 * passed with it (the callback owns it: close it or keep it), or -1. */
struct proxy_imsg {
	uint32_t type;
	uint64_t id;
	const void *data;
	size_t len;
	int fd;
};

/*
 * Called for each message read; m is NULL once the peer closed the
 * channel, broke the protocol (a truncated record, a bad header, a
 * payload over PROXY_IMSG_MAX, a blob that is not a sealed memfd) or a
 * send failed: the channel is then dead, free it (only then: a message
 * callback must not free the channel).
 */
typedef void (*proxy_chan_fn)(void *arg, const struct proxy_imsg *m);

/*
 * A channel over fd (one end of a SOCK_SEQPACKET socketpair, made
 * non-blocking here; the channel owns and closes it). 0 and *out, or
 * -ENOMEM.
 */
int proxy_chan_new(struct event_base *base, int fd, proxy_chan_fn fn,
    void *arg, struct proxy_chan **out);
/* Closes the socket, drops what is queued, closes passed descriptors not
 * yet sent; accepts NULL. */
void proxy_chan_free(struct proxy_chan *ch);

/*
 * Sends (or queues) one message: type (1..0x7fffffff), id, len bytes of
 * data (may be NULL when len is 0) and fd (-1: none; otherwise taken:
 * closed once sent, or on failure). 0, or -EMSGSIZE (len over
 * PROXY_IMSG_MAX), -ENOBUFS (queue full), -EPIPE (channel dead), -ENOMEM,
 * or another errno of memfd_create/write.
 */
int proxy_chan_send(struct proxy_chan *ch, uint32_t type, uint64_t id,
    const void *data, size_t len, int fd);

/* Bytes queued and not yet sent. */
size_t proxy_chan_queued(const struct proxy_chan *ch);

#endif
