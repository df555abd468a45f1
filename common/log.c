/*
 * Minimal leveled logging to stderr, one line per call, prefixed with the
 * program name and level. Modelled on relayd's log.c.
 */
#include "common/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *log_progname = "cordon";
static enum log_level log_level = LOG_LEVEL_WARN;

static const char *const level_names[] = { "error", "warn", "info", "debug" };

void
log_init(const char *progname, enum log_level level)
{
	if (progname != NULL) {
		const char *slash = strrchr(progname, '/');
		log_progname = slash != NULL ? slash + 1 : progname;
	}
	log_level = level;
}

void
log_set_level(enum log_level level)
{
	log_level = level;
}

enum log_level
log_get_level(void)
{
	return log_level;
}

int
log_level_parse(const char *s, enum log_level *out)
{
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (s != NULL && strcmp(s, level_names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

int
log_format(char *buf, size_t len, enum log_level level, int err,
    const char *fmt, va_list ap)
{
	int n, m;

	if (len == 0)
		return 0;
	n = snprintf(buf, len, "%s: %s: ", log_progname, level_names[level]);
	if (n < 0 || (size_t)n >= len)
		return n;
	m = vsnprintf(buf + n, len - (size_t)n, fmt, ap);
	if (m < 0)
		return m;
	n += m;
	if (err != 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, ": %s", strerror(err));
	return n;
}

static void log_emit(enum log_level level, int err, const char *fmt,
    va_list ap) LOG_PRINTF(3, 0);

static void
log_emit(enum log_level level, int err, const char *fmt, va_list ap)
{
	char line[2048];

	if (level > log_level)
		return;
	(void)log_format(line, sizeof(line), level, err, fmt, ap);
	fprintf(stderr, "%s\n", line);
}

#define LOG_BODY(level, err)                    \
	do {                                    \
		va_list ap;                     \
		va_start(ap, fmt);              \
		log_emit((level), (err), fmt, ap); \
		va_end(ap);                     \
	} while (0)

void
log_warn(const char *fmt, ...)
{
	int saved = errno;
	LOG_BODY(LOG_LEVEL_WARN, saved);
	errno = saved;
}

void
log_warnx(const char *fmt, ...)
{
	LOG_BODY(LOG_LEVEL_WARN, 0);
}

void
log_at(enum log_level level, const char *fmt, ...)
{
	LOG_BODY(level, 0);
}

void
log_info(const char *fmt, ...)
{
	LOG_BODY(LOG_LEVEL_INFO, 0);
}

void
log_debug(const char *fmt, ...)
{
	LOG_BODY(LOG_LEVEL_DEBUG, 0);
}

void
fatal(const char *fmt, ...)
{
	int saved = errno;
	LOG_BODY(LOG_LEVEL_ERROR, saved);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	LOG_BODY(LOG_LEVEL_ERROR, 0);
	exit(1);
}
