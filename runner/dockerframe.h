/*
 * Docker's multiplexed attach stream (a container without a TTY, Engine
 * API `POST /containers/NAME/attach` after the upgrade): frames of an
 * 8-byte header, [stream, 0, 0, 0, size as 32-bit big-endian], then size
 * bytes of that stream (1 stdout, 2 stderr). The bytes come from the
 * daemon but what they carry is the job's; the parser is pure, holds no
 * allocation, takes the stream in pieces cut anywhere, and passes each
 * payload piece on at once, so the caller's per-stream caps (cbuf) apply
 * exactly as to the CLI's pipes. Groundwork for the Engine API cold path
 * (issue 16, part 3): nothing uses it yet.
 */
#ifndef CORDON_RUNNER_DOCKERFRAME_H
#define CORDON_RUNNER_DOCKERFRAME_H

#include <stddef.h>
#include <stdint.h>

/* Gets each payload piece: stream 1 or 2, never empty. */
typedef void (*dockerapi_frame_fn)(void *arg, int stream, const void *data,
    size_t len);

struct dockerapi_frames {
	unsigned char hdr[8];
	size_t nhdr;		/* header bytes seen of the next frame */
	uint32_t left;		/* payload bytes still to come */
	int stream;		/* the current frame's */
	int error;		/* sticky: 0 or -EBADMSG */
	uint64_t frames;	/* headers accepted */
};

void dockerapi_frames_init(struct dockerapi_frames *f);

/* Feeds len bytes. 0, or -EBADMSG (sticky; nothing more is passed on)
 * for a header whose stream is not 1 or 2 or whose padding is not zero. A
 * frame of size 0 is accepted and passes nothing. */
int dockerapi_frames_feed(struct dockerapi_frames *f, const void *data,
    size_t len, dockerapi_frame_fn fn, void *arg);

/* At the stream's end: 0 when it ended between frames, -EBADMSG inside a
 * header or a payload (cut short), or the sticky error. */
int dockerapi_frames_end(const struct dockerapi_frames *f);

#endif
