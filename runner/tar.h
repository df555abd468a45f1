/*
 * A strict reader for the ustar/PAX stream that comes back from /tmp/out
 * (and for the doctor's image export), and a safe unpacker for it. The
 * reader is pure (bytes in, entries out) so it is unit-tested with hostile
 * archives and fuzzed. Everything in the stream is untrusted: only plain
 * relative names of regular files and directories are ever unpacked.
 *
 * PAX: an extended header ('x') is merged into the entry that follows it;
 * its "path" and "size" records replace the header's fields, records that
 * change nothing here (times, owners, hdrcharset, comment, linkpath) are
 * ignored, and any other record marks the entry so the refusal rules
 * refuse it. A malformed or oversized extended header, one that is not
 * followed by an entry, or two in a row make the archive malformed.
 * Global headers ('g') are entries of their own, always refused.
 */
#ifndef CORDON_RUNNER_TAR_H
#define CORDON_RUNNER_TAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TAR_NAME_MAX 4096	/* bytes of a name, with its NUL (PATH_MAX) */
#define TAR_PAX_MAX (64u * 1024)	/* bytes of one extended header */

enum tar_type { TAR_FILE, TAR_DIR, TAR_OTHER };

struct tar_entry {
	char name[TAR_NAME_MAX];	/* PAX path, or ustar prefix/name;
					 * NUL-terminated */
	enum tar_type type;
	char typeflag;
	int32_t mode;			/* the mode field (permission, sticky
					 * and set-id bits), -1 when it is not
					 * octal (never judged by the refusal
					 * rules: unpacked files get 0644) */
	uint64_t size;			/* PAX size, or the header's */
	const unsigned char *data;	/* size bytes inside the stream */
	bool pax_unknown;		/* a PAX record this reader does not
					 * know applied to it: refused */
};

struct tar_reader {
	const unsigned char *buf;
	size_t len, off;
};

void runner_tar_reader_init(struct tar_reader *r, const void *buf, size_t len);

/* Next entry (a PAX extended header and its entry count as one): 1 with
 * *e filled, 0 at the end-of-archive marker (or a clean end of data), or a
 * negative errno: -EBADMSG for a malformed header (bad checksum, bad octal,
 * name too long, bad PAX records), -EPIPE when the data is cut short.
 * After an error the reader stays at the error. After 0, r->off is at the
 * end-of-archive marker (or the end of data). Pure. */
int runner_tar_next(struct tar_reader *r, struct tar_entry *e);

/* NULL when the entry may be unpacked, else a static reason: not a regular
 * file or directory, a PAX global header, an unknown PAX record, absolute
 * name, a ".." component, control characters, empty name. Names are
 * normalised in place (leading "./" and trailing "/" removed). Pure. */
const char *runner_tar_entry_refusal(struct tar_entry *e);

/* Writes one accepted entry under the directory fd dirfd without ever
 * following a link (each component opened with O_NOFOLLOW; files created
 * with O_EXCL, mode 0644; dirs 0755). 0 or a negative errno (-EEXIST when
 * something is already there). */
int runner_tar_write_entry(int dirfd, const struct tar_entry *e);

#endif
