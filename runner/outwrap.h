/*
 * --out support. The container then runs a fixed Python wrapper (on argv:
 * it is ours, with the per-stream cap) that reads a line "NONCE HEAD" and
 * then the job's code from stdin, runs the code as a child (python3 -I -,
 * or the interpreter argv given after the cap: bash, node), and relays its
 * stdout and stderr capped as the host would keep them (common/cbuf.h,
 * --keep): the first HEAD bytes of each stream at once (HEAD is
 * cbuf_keep_head of the cap and mode), and of the rest only the last
 * cap - HEAD bytes, held back and written when the job has ended. The
 * host rebuilds the marker between them from the counts below. Then it
 * kills every straggler, and finally writes a marker carrying the nonce,
 * a PAX stream of /tmp/out, and after the archive's end a report line
 * listing every file it could not pack:
 *
 *   \0CORDON-OUT-<nonce>\0<stdout bytes> <stderr bytes>\n
 *   <PAX archive, zero-padded to 10240 bytes>
 *   CORDON-UNPACKED [{"path":"a/b","size":12,"why":"unreadable"},...]\n
 *
 * The report sits where the job has no say: after the end marker of an
 * archive whose layout the wrapper alone decides (the job is dead by
 * then), so no file name or content can fake it. The nonce never appears
 * on argv, and the wrapper makes itself non-dumpable, so the job cannot
 * forge the marker; and even a forged stream or report is only untrusted
 * data for the strict unpacker and report parser.
 */
#ifndef CORDON_RUNNER_OUTWRAP_H
#define CORDON_RUNNER_OUTWRAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#define OUTWRAP_NONCE_LEN 32	/* hex characters */

extern const char outwrap_program[];

struct outwrap_split {
	size_t stdout_len;		/* job stdout = buf[0..stdout_len) */
	const unsigned char *tar;	/* the archive, untrusted */
	size_t tar_len;
	uint64_t out_seen, err_seen;	/* bytes the job wrote per stream */
};

#define OUTWRAP_MARKER_LEN (1 + 11 + OUTWRAP_NONCE_LEN + 1)

/* The marker "\0CORDON-OUT-<nonce>\0" into out (OUTWRAP_MARKER_LEN
 * bytes, no NUL added); nonce is OUTWRAP_NONCE_LEN characters. */
void outwrap_marker(const char *nonce, char out[OUTWRAP_MARKER_LEN]);

/* Finds the last marker for nonce in the captured stdout and splits it.
 * 0, or -ENOENT when there is no (complete) marker: the wrapper never got
 * to write it (killed, timed out, flooded past the cap). Pure. */
int outwrap_split(const void *buf, size_t len, const char *nonce,
    struct outwrap_split *out);

#define OUTWRAP_REPORT_TAG "CORDON-UNPACKED "

/*
 * The report after the archive: rest[0..len) is what follows the archive's
 * end marker (r->off once runner_tar_next returned 0). Zero bytes are
 * skipped, then exactly one line "CORDON-UNPACKED JSON\n" must end the
 * data. JSON is an array of at most max objects, each with a string "path"
 * (1 to TAR_NAME_MAX - 1 bytes), a number "size" (0 to 2^53) and a string
 * "why". Returns 0 with *out the array (caller frees with cJSON_Delete),
 * -ENOENT when there is no complete line (cut short, or not written),
 * -E2BIG when it lists more than max, -EBADMSG for anything else, or
 * -ENOMEM. Pure.
 */
int outwrap_report_parse(const void *rest, size_t len, size_t max,
    cJSON **out);

/* The reason shown in a result's "files" for a report's "why": one of a
 * few static strings, whatever the sandbox sent. */
const char *outwrap_report_reason(const char *why);

#endif
