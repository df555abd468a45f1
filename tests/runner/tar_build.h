/*
 * Builds tar streams by hand for the tar reader's tests: ustar entries
 * (header + padded data) and PAX extended headers with any records, so
 * hostile archives need no tool.
 */
#ifndef CORDON_TESTS_RUNNER_TAR_BUILD_H
#define CORDON_TESTS_RUNNER_TAR_BUILD_H

#include <stdio.h>
#include <string.h>

/* Appends one header of type with len data bytes at *off; the data
 * (may be NULL when len is 0) follows, padded to 512. */
static inline void
put_raw(unsigned char *buf, size_t *off, const char *name, char type,
    const void *data, size_t len, const char *prefix)
{
	unsigned char *h = buf + *off;
	unsigned sum = 0;

	memset(h, 0, 512);
	memcpy(h, name, strnlen(name, 100));
	memcpy(h + 100, "0000644", 7);
	snprintf((char *)h + 124, 12, "%011o", (unsigned)len & 07777777u);
	h[156] = (unsigned char)type;
	memcpy(h + 257, "ustar", 6);
	if (prefix != NULL)
		memcpy(h + 345, prefix, strlen(prefix));
	memset(h + 148, ' ', 8);
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	*off += 512;
	if (len > 0) {
		memset(buf + *off, 0, (len + 511) / 512 * 512);
		memcpy(buf + *off, data, len);
		*off += (len + 511) / 512 * 512;
	}
}

/* Appends one ustar entry whose data is the string data (or none). */
static inline void
put_entry(unsigned char *buf, size_t *off, const char *name, char type,
    const char *data, const char *prefix)
{
	put_raw(buf, off, name, type, data, data != NULL ? strlen(data) : 0,
	    prefix);
}

/* Appends a PAX extended header ('x') whose data is records as given. */
static inline void
put_pax(unsigned char *buf, size_t *off, const char *records)
{
	put_raw(buf, off, "././@PaxHeader", 'x', records, strlen(records),
	    NULL);
}

/* Formats one PAX record "LEN key=value\n" into out (the length counts
 * itself); returns out. */
static inline char *
pax_record(char *out, size_t outlen, const char *key, const char *value)
{
	size_t n = strlen(key) + strlen(value) + 3, len = n + 1;

	while ((size_t)snprintf(NULL, 0, "%zu", len) + n != len)
		len++;
	snprintf(out, outlen, "%zu %s=%s\n", len, key, value);
	return out;
}

#endif
