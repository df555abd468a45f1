/*
 * Shared helpers (see util.h). All pure or thin syscall wrappers that return
 * negative errno values, so every part of Cordon reports errors the same way.
 */
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int64_t
time_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
time_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
time_format_utc(int64_t wall_ms, char out[32])
{
	time_t secs = (time_t)(wall_ms / 1000);
	unsigned ms = (unsigned)(wall_ms % 1000);
	struct tm tm;
	size_t n;

	gmtime_r(&secs, &tm);
	n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
	out[n] = '.';
	out[n + 1] = (char)('0' + ms / 100);
	out[n + 2] = (char)('0' + ms / 10 % 10);
	out[n + 3] = (char)('0' + ms % 10);
	out[n + 4] = 'Z';
	out[n + 5] = '\0';
}

int
util_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out)
{
	char *end;
	long long v;

	if (s == NULL || *s == '\0' || (*s != '-' && (*s < '0' || *s > '9')))
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (*end != '\0')
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int
util_port_parse(const char *s, size_t len, uint16_t *port)
{
	uint32_t v = 0;

	if (len == 0)
		return -EINVAL;
	for (size_t i = 0; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
	if (s[0] == '0' && len > 1)
		return -EDOM;
	for (size_t i = 0; i < len; i++) {
		v = v * 10 + (uint32_t)(s[i] - '0');
		if (v > 65535)
			return -ERANGE;
	}
	if (v == 0)
		return -ERANGE;
	*port = (uint16_t)v;
	return 0;
}

int
util_parse_size(const char *s, uint64_t *out)
{
	unsigned long long v, mult = 1;
	char *end;

	if (s == NULL || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	switch (*end) {
	case 'k': case 'K': mult = 1ULL << 10; end++; break;
	case 'm': case 'M': mult = 1ULL << 20; end++; break;
	case 'g': case 'G': mult = 1ULL << 30; end++; break;
	default: break;
	}
	if (mult != 1 && (*end == 'b' || *end == 'B'))
		end++;
	if (*end != '\0')
		return -EINVAL;
	if (v > UINT64_MAX / mult)
		return -ERANGE;
	*out = v * mult;
	return 0;
}

int
util_random_hex(char *out, size_t nbytes)
{
	static const char digits[] = "0123456789abcdef";
	unsigned char buf[64];
	size_t got = 0;

	if (nbytes > sizeof(buf))
		return -EINVAL;
	while (got < nbytes) {
		ssize_t r = getrandom(buf + got, nbytes - got, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)r;
	}
	for (size_t i = 0; i < nbytes; i++) {
		out[2 * i] = digits[buf[i] >> 4];
		out[2 * i + 1] = digits[buf[i] & 15];
	}
	out[2 * nbytes] = '\0';
	return 0;
}

int
util_read_file(const char *path, size_t max, char **out, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = NULL, *p;
	int fd, rc;

	*out = NULL;
	if (len != NULL)
		*len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if ((buf = malloc(cap + 1)) == NULL) {
		rc = -ENOMEM;
		goto bad;
	}
	for (;;) {
		ssize_t r;
		if (n == cap) {
			if (cap > max) {
				rc = -EFBIG;
				goto bad;
			}
			cap *= 2;
			if ((p = realloc(buf, cap + 1)) == NULL) {
				rc = -ENOMEM;
				goto bad;
			}
			buf = p;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			goto bad;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > max) {
			rc = -EFBIG;
			goto bad;
		}
	}
	close(fd);
	buf[n] = '\0';
	*out = buf;
	if (len != NULL)
		*len = n;
	return 0;
bad:
	free(buf);
	close(fd);
	return rc;
}

int
util_write_file_atomic(const char *path, const void *data, size_t len,
    unsigned mode)
{
	char tmp[PATH_MAX];
	const char *p = data;
	int fd, rc = 0;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path,
	    (long)getpid()) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		p += w;
		len -= (size_t)w;
	}
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) < 0)
		rc = -errno;
	if (rc != 0)
		unlink(tmp);
	return rc;
}

int
util_mkdir_p(const char *path, unsigned mode)
{
	char buf[PATH_MAX];
	size_t n = strlen(path);

	if (n == 0 || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; ; p++) {
		if (*p == '/' || *p == '\0') {
			char c = *p;
			*p = '\0';
			if (mkdir(buf, mode) < 0 && errno != EEXIST)
				return -errno;
			*p = c;
			if (c == '\0')
				break;
		}
	}
	return 0;
}

static int
rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (type == FTW_DP)
		return rmdir(path) < 0 ? -1 : 0;
	return unlink(path) < 0 ? -1 : 0;
}

int
util_rm_rf(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlink(path) < 0 ? -errno : 0;
	if (nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) != 0)
		return errno ? -errno : -EIO;
	return 0;
}

bool
util_strlcpy(char *dst, const char *src, size_t dstlen)
{
	size_t n = strlen(src);

	if (dstlen == 0)
		return false;
	if (n >= dstlen) {
		memcpy(dst, src, dstlen - 1);
		dst[dstlen - 1] = '\0';
		return false;
	}
	memcpy(dst, src, n + 1);
	return true;
}

size_t
util_utf8_partial_end(const void *p, size_t len)
{
	const unsigned char *s = p;

	for (size_t k = 1; k <= 3 && k <= len; k++) {
		unsigned c = s[len - k];
		size_t want;

		if ((c & 0xC0) == 0x80)
			continue;	/* a continuation byte: look further */
		if (c >= 0xC2 && c <= 0xDF)
			want = 2;
		else if (c >= 0xE0 && c <= 0xEF)
			want = 3;
		else if (c >= 0xF0 && c <= 0xF4)
			want = 4;
		else
			return 0;
		return k < want ? k : 0;
	}
	return 0;
}

uint32_t
util_fnv1a(const void *p, size_t len)
{
	const unsigned char *b = p;
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

uint32_t
util_fnv1a_lower(const char *s)
{
	uint32_t h = 2166136261u;

	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		unsigned char ch = *p >= 'A' && *p <= 'Z' ? *p + 32 : *p;
		h = (h ^ ch) * 16777619u;
	}
	return h;
}

int
util_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}
