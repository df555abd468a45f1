/*
 * Diagnostics on stderr for Cordon's programs (never for libraries: they
 * return errors instead). log_warn adds strerror(errno); log_warnx does not.
 * fatal/fatalx exit(1) and are for start-up only.
 */
#ifndef CORDON_COMMON_LOG_H
#define CORDON_COMMON_LOG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdnoreturn.h>

enum log_level {
	LOG_LEVEL_ERROR = 0,
	LOG_LEVEL_WARN = 1,
	LOG_LEVEL_INFO = 2,
	LOG_LEVEL_DEBUG = 3,
};

#define LOG_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* progname is kept by pointer (pass a string literal or argv[0]). */
void log_init(const char *progname, enum log_level level);
void log_set_level(enum log_level level);
enum log_level log_get_level(void);
/* Parses "error|warn|info|debug"; returns 0 or -EINVAL. */
int log_level_parse(const char *s, enum log_level *out);

void log_warn(const char *fmt, ...) LOG_PRINTF(1, 2);
void log_warnx(const char *fmt, ...) LOG_PRINTF(1, 2);
void log_info(const char *fmt, ...) LOG_PRINTF(1, 2);
/* At a level chosen at run time (as log_warnx for LOG_LEVEL_WARN). */
void log_at(enum log_level level, const char *fmt, ...) LOG_PRINTF(2, 3);
void log_debug(const char *fmt, ...) LOG_PRINTF(1, 2);
noreturn void fatal(const char *fmt, ...) LOG_PRINTF(1, 2);
noreturn void fatalx(const char *fmt, ...) LOG_PRINTF(1, 2);

/* Formats one line into buf the way the functions above would (no newline);
 * exposed for tests. err is an errno value or 0. */
int log_format(char *buf, size_t len, enum log_level level, int err,
    const char *fmt, va_list ap) LOG_PRINTF(5, 0);

#endif
