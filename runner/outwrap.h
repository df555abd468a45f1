/*
 * --out support. The container then runs a fixed Python wrapper (on argv:
 * it is ours, not the job's) that reads a per-run nonce line and then the
 * job's code from stdin, runs the code as a child, relays its stdout and
 * stderr up to the cap, kills every straggler, and finally writes a marker
 * carrying the nonce plus a ustar stream of /tmp/out to stdout. The nonce
 * never appears on argv, and the wrapper makes itself non-dumpable, so the
 * job cannot forge the marker; and even a forged stream is only untrusted
 * data for the strict unpacker.
 */
#ifndef CORDON_RUNNER_OUTWRAP_H
#define CORDON_RUNNER_OUTWRAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OUTWRAP_NONCE_LEN 32	/* hex characters */

extern const char outwrap_program[];

struct outwrap_split {
	size_t stdout_len;		/* job stdout = buf[0..stdout_len) */
	const unsigned char *tar;	/* the archive, untrusted */
	size_t tar_len;
	uint64_t out_seen, err_seen;	/* bytes the job wrote per stream */
};

/* Finds the last marker for nonce in the captured stdout and splits it.
 * 0, or -ENOENT when there is no (complete) marker: the wrapper never got
 * to write it (killed, timed out, flooded past the cap). Pure. */
int outwrap_split(const void *buf, size_t len, const char *nonce,
    struct outwrap_split *out);

#endif
