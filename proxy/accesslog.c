/*
 * Access log writer. Lines are built in a stack buffer with a small JSON
 * string escaper (no allocation per request) and written with one write(2)
 * each, so concurrent readers never see half a line. Rotation by size
 * happens between two writes on the loop's one thread, so no line is ever
 * split across files or lost.
 */
#include "proxy/accesslog.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

struct accesslog {
	int fd;
	bool is_stdout;
	char *path;
	uint64_t size;		/* bytes in the open file */
	uint64_t max;		/* rotate at this size; 0: never */
	unsigned keep;		/* PATH.1 .. PATH.keep */
	bool rotate_off;	/* a rotation failed: off until a reopen */
	/* An adopted log (the network child): no path; past max, ask_rotate
	 * is called once, until a new descriptor comes. */
	void (*ask_rotate)(void *);
	void *ask_arg;
	bool asked;
};

/* Opens path for appending; *size gets its current size. fd or -errno. */
static int
log_open(const char *path, uint64_t *size)
{
	struct stat st;
	int fd;

	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	if (fd < 0)
		return -errno;
	*size = fstat(fd, &st) == 0 ? (uint64_t)st.st_size : 0;
	return fd;
}

int
proxy_accesslog_open(const char *path, struct accesslog **out)
{
	struct accesslog *al;

	*out = NULL;
	al = calloc(1, sizeof(*al));
	if (al == NULL)
		return -ENOMEM;
	if (strcmp(path, "-") == 0) {
		al->fd = STDOUT_FILENO;
		al->is_stdout = true;
	} else {
		al->path = strdup(path);
		al->fd = al->path != NULL ? log_open(path, &al->size) : -ENOMEM;
		if (al->fd < 0) {
			int rc = al->fd;
			free(al->path);
			free(al);
			return rc;
		}
	}
	*out = al;
	return 0;
}

int
proxy_accesslog_reopen(struct accesslog *al)
{
	uint64_t size = 0;
	int fd;

	if (al == NULL || al->is_stdout)
		return 0;
	if ((fd = log_open(al->path, &size)) < 0)
		return fd;
	close(al->fd);
	al->fd = fd;
	al->size = size;
	al->rotate_off = false;
	return 0;
}

int
proxy_accesslog_set_rotate(struct accesslog *al, uint64_t max,
    unsigned keep)
{
	if (al == NULL || al->is_stdout || keep < 1 ||
	    keep > PROXY_ACCESSLOG_KEEP_MAX ||
	    strlen(al->path) + 6 >= PATH_MAX)
		return -EINVAL;
	al->max = max;
	al->keep = keep;
	return 0;
}

/* PATH.n (n 0: PATH itself) into out, which holds PATH_MAX. */
static void
rotated_name(const struct accesslog *al, unsigned n, char *out)
{
	if (n == 0)
		snprintf(out, PATH_MAX, "%s", al->path);
	else
		snprintf(out, PATH_MAX, "%s.%u", al->path, n);
}

/* PATH.keep-1 -> PATH.keep, ..., PATH -> PATH.1, then a new PATH. Lines
 * until then still go to the open file, whatever its name: nothing lost. */
static int
rotate(struct accesslog *al)
{
	char from[PATH_MAX], to[PATH_MAX];
	uint64_t size = 0;
	int fd;

	for (unsigned n = al->keep; n >= 1; n--) {
		rotated_name(al, n - 1, from);
		rotated_name(al, n, to);
		if (rename(from, to) < 0 && (errno != ENOENT || n == 1))
			return -errno;
	}
	if ((fd = log_open(al->path, &size)) < 0)
		return fd;
	close(al->fd);
	al->fd = fd;
	al->size = size;
	return 0;
}

static void
maybe_rotate(struct accesslog *al)
{
	int rc;

	if (al->max == 0 || al->rotate_off || al->size < al->max)
		return;
	if (al->ask_rotate != NULL) {
		if (!al->asked) {
			al->asked = true;
			al->ask_rotate(al->ask_arg);
		}
		return;
	}
	if ((rc = rotate(al)) < 0) {
		al->rotate_off = true;
		log_warnx("access log %s: cannot rotate (%s): rotation off "
		    "until the next reopen (SIGUSR1); lines still go to the "
		    "open file", al->path, strerror(-rc));
	}
}

int
proxy_accesslog_adopt(int fd, uint64_t size, uint64_t max,
    void (*ask_rotate)(void *), void *arg, struct accesslog **out)
{
	struct accesslog *al;

	*out = NULL;
	if ((al = calloc(1, sizeof(*al))) == NULL)
		return -ENOMEM;
	al->fd = fd;
	al->is_stdout = fd == STDOUT_FILENO;
	al->size = size;
	al->max = ask_rotate != NULL ? max : 0;
	al->ask_rotate = ask_rotate;
	al->ask_arg = arg;
	*out = al;
	return 0;
}

void
proxy_accesslog_replace(struct accesslog *al, int fd, uint64_t size)
{
	if (!al->is_stdout && al->fd >= 0)
		close(al->fd);
	al->fd = fd;
	al->is_stdout = fd == STDOUT_FILENO;
	al->size = size;
	al->asked = false;
}

int
proxy_accesslog_rotate(struct accesslog *al)
{
	int rc;

	if (al == NULL || al->is_stdout || al->path == NULL || al->keep == 0)
		return -EINVAL;
	if ((rc = rotate(al)) < 0)
		log_warnx("access log %s: cannot rotate (%s)", al->path,
		    strerror(-rc));
	return rc;
}

int
proxy_accesslog_dup(const struct accesslog *al, uint64_t *size)
{
	int fd;

	*size = 0;
	if (al == NULL || al->is_stdout)
		return -EINVAL;
	if ((fd = fcntl(al->fd, F_DUPFD_CLOEXEC, 3)) < 0)
		return -errno;
	*size = al->size;
	return fd;
}

bool
proxy_accesslog_is_stdout(const struct accesslog *al)
{
	return al != NULL && al->is_stdout;
}

void
proxy_accesslog_free(struct accesslog *al)
{
	if (al == NULL)
		return;
	if (!al->is_stdout && al->fd >= 0)
		close(al->fd);
	free(al->path);
	free(al);
}

struct outbuf {
	char *p;
	size_t len, used;
	bool overflow;
};

static void
out_raw(struct outbuf *o, const char *s, size_t n)
{
	if (o->overflow || o->used + n >= o->len) {
		o->overflow = true;
		return;
	}
	memcpy(o->p + o->used, s, n);
	o->used += n;
}

static void
out_fmt(struct outbuf *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
out_fmt(struct outbuf *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->overflow)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->p + o->used, o->len - o->used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->len - o->used)
		o->overflow = true;
	else
		o->used += (size_t)n;
}

/* JSON string; bytes >= 0x80 and controls are \u-escaped per byte so the
 * line is always valid ASCII JSON whatever the client sent. */
static void
out_str(struct outbuf *o, const char *key, const char *s)
{
	char esc[8];

	out_fmt(o, ",\"%s\":", key);
	if (s == NULL) {
		out_raw(o, "null", 4);
		return;
	}
	out_raw(o, "\"", 1);
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (*c == '"' || *c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)*c;
			out_raw(o, esc, 2);
		} else if (*c < 0x20 || *c >= 0x7f) {
			snprintf(esc, sizeof(esc), "\\u%04x", *c);
			out_raw(o, esc, 6);
		} else {
			out_raw(o, (const char *)c, 1);
		}
	}
	out_raw(o, "\"", 1);
}

static void
out_num(struct outbuf *o, const char *key, int64_t v)
{
	if (v < 0)
		out_fmt(o, ",\"%s\":null", key);
	else
		out_fmt(o, ",\"%s\":%" PRId64, key, v);
}

int
proxy_accesslog_format(const struct accesslog_entry *e, char *buf, size_t len)
{
	struct outbuf o = { .p = buf, .len = len };
	char ts[32];

	time_format_utc(e->time_ms, ts);
	out_fmt(&o, "{\"time\":\"%s\"", ts);
	out_str(&o, "client", e->client);
	out_str(&o, "run", e->run);
	out_str(&o, "method", e->method);
	out_str(&o, "host", e->host);
	out_num(&o, "port", e->port);
	out_str(&o, "decision", e->decision);
	out_str(&o, "reason", e->reason);
	out_str(&o, "policy", e->policy);
	out_str(&o, "address", e->address);
	out_num(&o, "status", e->status);
	out_fmt(&o, ",\"bytes_up\":%" PRIu64 ",\"bytes_down\":%" PRIu64,
	    e->bytes_up, e->bytes_down);
	out_num(&o, "duration_ms", e->duration_ms);
	out_num(&o, "dns_ms", e->dns_ms);
	out_num(&o, "connect_ms", e->connect_ms);
	out_str(&o, "sni", e->sni);
	if (e->via != NULL)
		out_str(&o, "via", e->via);
	if (e->inspected) {
		if (e->path != NULL)
			out_str(&o, "path", e->path);
		out_fmt(&o, ",\"inspected\":true");
	}
	out_raw(&o, "}\n", 2);
	if (o.overflow)
		return -ENOSPC;
	buf[o.used] = '\0';
	return (int)o.used;
}

int
proxy_accesslog_write(struct accesslog *al, const struct accesslog_entry *e)
{
	/* A 255-byte server_name escaped byte by byte takes 1530, a
	 * 256-byte path 1536. */
	char line[6144];
	int n;
	ssize_t w;

	n = proxy_accesslog_format(e, line, sizeof(line));
	if (n < 0)
		return n;
	do
		w = write(al->fd, line, (size_t)n);
	while (w < 0 && errno == EINTR);
	if (w < 0)
		return -errno;
	al->size += (uint64_t)w;
	if (!al->is_stdout)
		maybe_rotate(al);
	return w == n ? 0 : -EIO;
}
