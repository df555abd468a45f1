/*
 * Live output for the front ends (`cordon run --stream`, the service's
 * NDJSON replies, MCP progress notifications): a bounded queue of output
 * events between the runner's read loop, which produces them through
 * jobs_stream_output (set as runner_request.output), and one consumer
 * (a writer thread, or an event loop told by the notify callback).
 *
 * The producer never blocks, so a consumer that stops reading can neither
 * hold up the run (its deadline still fires) nor grow memory: an event
 * that does not fit under the queue's bound is dropped and its bytes
 * counted, and the next event that fits is preceded by a "dropped" event
 * saying how many bytes are missing there. The total also goes into the
 * final result ("stream_dropped"). The result itself keeps the output as
 * usual (caps and --keep), whatever was dropped from the live events.
 */
#ifndef CORDON_JOBS_STREAM_H
#define CORDON_JOBS_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runner/result.h"

/* Default bound: bytes of queued event data (plus ~64 per event). */
#define JOBS_STREAM_MAX (4u << 20)

enum jobs_stream_kind {
	JOBS_STREAM_STDOUT = 1,
	JOBS_STREAM_STDERR = 2,
	JOBS_STREAM_DROPPED = 3,	/* bytes were dropped here */
};

struct jobs_stream_event {
	enum jobs_stream_kind kind;
	char *data;			/* stdout/stderr: valid UTF-8 (invalid
					 * bytes and NULs made U+FFFD),
					 * NUL-terminated; DROPPED: NULL */
	size_t len;
	uint64_t dropped;		/* DROPPED: bytes of output missing */
	struct jobs_stream_event *next;	/* the queue's */
};

struct jobs_stream;

/* A queue holding at most max_bytes (0: JOBS_STREAM_MAX). notify (may be
 * NULL) is called with notify_arg from the producer's thread after each
 * event is queued and after jobs_stream_close, without the queue's lock
 * held: e.g. event_active for a libevent loop. NULL on ENOMEM. */
struct jobs_stream *jobs_stream_new(size_t max_bytes,
    void (*notify)(void *), void *notify_arg);
/* Frees the queue and what is still in it; accepts NULL. */
void jobs_stream_free(struct jobs_stream *s);

/* The producer: runner_request.output with output_arg = the queue. */
void jobs_stream_output(void *arg, int stream, const void *data,
    size_t len);
/* The producer is done (runner_run returned): a consumer's pop then ends
 * once the queue is empty. Bytes dropped since the last notice get a last
 * "dropped" event. */
void jobs_stream_close(struct jobs_stream *s);

/* Takes the oldest event into *ev (free it with jobs_stream_event_free):
 * 1; or 0 when there is none: with wait, only once the queue is closed and
 * empty (it blocks until then); without, at once. */
int jobs_stream_pop(struct jobs_stream *s, bool wait,
    struct jobs_stream_event **ev);
void jobs_stream_event_free(struct jobs_stream_event *ev);

/* Bytes of output dropped so far. */
uint64_t jobs_stream_dropped(struct jobs_stream *s);

/* NDJSON lines (caller frees; NULL on ENOMEM), each ending in '\n':
 *   {"event":"stdout","data":"..."}   {"event":"stderr","data":"..."}
 *   {"event":"dropped","bytes":N}
 *   {"event":"result", ...runner_result_to_json...[,"stream_dropped":N]}
 *     (stream_dropped only when N > 0)
 *   {"event":"error","error":"..."}   (a run that failed after events) */
char *jobs_stream_event_line(const struct jobs_stream_event *ev);
char *jobs_stream_result_line(const struct runner_result *res,
    uint64_t dropped);
char *jobs_stream_error_line(const char *why);

#endif
