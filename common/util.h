/*
 * Small shared helpers: monotonic clock, size and number parsing, random
 * identifiers, whole-file reads with a cap, mkdir -p.
 */
#ifndef CORDON_COMMON_UTIL_H
#define CORDON_COMMON_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Milliseconds on CLOCK_MONOTONIC. */
int64_t time_mono_ms(void);
/* Milliseconds since the epoch (CLOCK_REALTIME). */
int64_t time_wall_ms(void);
/* RFC 3339 UTC with milliseconds, e.g. 2026-11-29T10:51:00.123Z. */
void time_format_utc(int64_t wall_ms, char out[32]);

/* "64m", "1g", "512k", "1024" (bytes; k/m/g are powers of 1024, either
 * case, optional trailing 'b'). Returns 0 or -EINVAL / -ERANGE. */
int util_parse_size(const char *s, uint64_t *out);
/* Whole decimal number within [min, max]; 0 or -EINVAL / -ERANGE. */
int util_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out);

/*
 * A TCP port as written after ':' in an authority, s[0..len) (need not be
 * NUL-terminated): canonical decimal, 1-65535, so one port has one
 * spelling everywhere (the proxy's CONNECT and absolute URIs, the
 * allowlist's entries and `explain`). Returns 0 and *port, or, with *port
 * untouched:
 *   -EINVAL  empty, or a byte other than 0-9 (sign, space, "0x", ...);
 *   -EDOM    a leading zero before other digits ("0443", "00");
 *   -ERANGE  0, or above 65535 (however many digits).
 */
int util_port_parse(const char *s, size_t len, uint16_t *port);

/* n random bytes as 2n lowercase hex digits plus NUL (out must hold 2n+1).
 * 0 or a negative errno. */
int util_random_hex(char *out, size_t nbytes);

/* Reads a whole file of at most max bytes into a NUL-terminated malloc'd
 * buffer (caller frees). -EFBIG when larger, or a negative errno. */
int util_read_file(const char *path, size_t max, char **out, size_t *len);
/* Writes data to path atomically (temp file + rename) with mode. */
int util_write_file_atomic(const char *path, const void *data, size_t len,
    unsigned mode);
/* mkdir -p with mode for each created component; 0 or a negative errno. */
int util_mkdir_p(const char *path, unsigned mode);
/* rm -rf that never follows symlinks; 0 or a negative errno. */
int util_rm_rf(const char *path);

/* How many bytes at the end of p[0..len) (0-3) are the start of a UTF-8
 * multibyte sequence that the end cuts short: a lead byte (C2-F4) and
 * fewer continuation bytes than it announces. Cutting them off leaves the
 * text ending on a character boundary. Pure. */
size_t util_utf8_partial_end(const void *p, size_t len);

/* Copies at most dstlen-1 bytes and NUL-terminates; true if it all fit. */
bool util_strlcpy(char *dst, const char *src, size_t dstlen);

/* 32-bit FNV-1a of p[0..len), for hash tables (not for anything an
 * attacker must not be able to collide). util_fnv1a_lower: of the string
 * s with ASCII letters lowercased (names, which compare without case). */
uint32_t util_fnv1a(const void *p, size_t len);
uint32_t util_fnv1a_lower(const char *s);

/* The value of the hex digit c (either case), or -1. */
int util_hexval(char c);

#endif
