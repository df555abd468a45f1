/*
 * Live output between the runner's read loop and the caller's output
 * callback (runner_request.output): per stream at most `cap` bytes in all,
 * in chunks that end on UTF-8 character boundaries (an incomplete sequence
 * at a chunk's end waits for the next chunk of its stream), and with --out
 * only the job's own stdout (forwarding stops at the wrapper's marker, so
 * the archive is never shown). Pure: no I/O, no allocation. Internal to
 * the runner.
 */
#ifndef CORDON_RUNNER_RELAY_H
#define CORDON_RUNNER_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RELAY_PIECE 4096		/* bytes handled at a time */
#define RELAY_MARKER_MAX 64

typedef void (*relay_fn)(void *arg, int stream, const void *data,
    size_t len);

struct runner_relay {
	relay_fn fn;
	void *arg;
	uint64_t cap;			/* per stream, in all */
	uint64_t sent[3];		/* by stream (1, 2) */
	bool full[3];			/* the cap was reached */
	unsigned char carry[3][4];	/* incomplete UTF-8 sequence */
	size_t ncarry[3];
	char marker[RELAY_MARKER_MAX];	/* --out: stdout ends here */
	size_t mlen;			/* 0: no marker to look for */
	unsigned char hold[RELAY_MARKER_MAX];	/* may start the marker */
	size_t nhold;
	bool ended;			/* the marker was seen */
	unsigned char work[RELAY_MARKER_MAX + RELAY_PIECE];
	unsigned char work2[4 + RELAY_MARKER_MAX + RELAY_PIECE];
};

/* Sets r up to pass chunks on to fn(arg, ...). marker (may be NULL) is
 * the --out wrapper's marker of mlen bytes (at most RELAY_MARKER_MAX): on
 * stdout, nothing from it on is passed. */
void runner_relay_init(struct runner_relay *r, relay_fn fn, void *arg,
    uint64_t cap, const void *marker, size_t mlen);

/* A chunk of stream 1 (stdout) or 2 (stderr), as read: a proc_output_fn
 * (arg is the relay). */
void runner_relay_chunk(void *arg, int stream, const void *data, size_t len);

/* At the end: passes on what was held back (a stdout tail that only
 * looked like the start of the marker; incomplete UTF-8 sequences, which
 * the caller's encoder then replaces). */
void runner_relay_flush(struct runner_relay *r);

#endif
