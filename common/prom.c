/*
 * Prometheus text exposition (see prom.h): everything goes through
 * prom_put, which keeps the first error, so one failed append ends the
 * rendering instead of leaving a hole in the middle of it.
 */
#include "common/prom.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/cbuf.h"

void
prom_init(struct prom *p, struct cbuf *buf)
{
	p->buf = buf;
	p->error = 0;
}

static int
prom_put(struct prom *p, const char *s, size_t n)
{
	long r;

	if (p->error != 0 || n == 0)
		return p->error;
	r = cbuf_append(p->buf, s, n);
	if (r < 0)
		p->error = (int)r;
	else if ((size_t)r < n)
		p->error = -ENOSPC;
	return p->error;
}

static int
prom_puts(struct prom *p, const char *s)
{
	return prom_put(p, s, strlen(s));
}

/* Appends s with each character of esc written as a backslash and its
 * letter in rep ("\\\"\n" -> "\\\"n"). */
static int
prom_put_escaped(struct prom *p, const char *s, const char *esc,
    const char *rep)
{
	const char *e;
	char pair[2];
	size_t run;

	while (*s != '\0' && p->error == 0) {
		run = strcspn(s, esc);
		prom_put(p, s, run);
		s += run;
		if (*s == '\0')
			break;
		e = strchr(esc, *s);
		pair[0] = '\\';
		pair[1] = rep[e - esc];
		prom_put(p, pair, 2);
		s++;
	}
	return p->error;
}

int
prom_help_type(struct prom *p, const char *name, const char *help,
    const char *type)
{
	prom_puts(p, "# HELP ");
	prom_puts(p, name);
	prom_puts(p, " ");
	prom_put_escaped(p, help, "\\\n", "\\n");
	prom_puts(p, "\n# TYPE ");
	prom_puts(p, name);
	prom_puts(p, " ");
	prom_puts(p, type);
	return prom_puts(p, "\n");
}

/* "name{a="x",b="y"} value\n" (no braces without labels); n is value's
 * length, negative when it could not be formatted. */
static int
prom_line(struct prom *p, const char *name, const char *suffix,
    const char *const *labels, const char *value, int n)
{
	if (n < 0 && p->error == 0)
		p->error = -EINVAL;
	prom_puts(p, name);
	prom_puts(p, suffix);
	if (labels != NULL && labels[0] != NULL) {
		for (size_t i = 0; labels[i] != NULL; i += 2) {
			/* A name without its value (a NULL where a string
			 * was meant) is the caller's bug: an error, not a
			 * list cut short (which once rendered
			 * `cordon_pool_idle} 1`). */
			if (labels[i + 1] == NULL) {
				if (p->error == 0)
					p->error = -EINVAL;
				break;
			}
			prom_puts(p, i == 0 ? "{" : ",");
			prom_puts(p, labels[i]);
			prom_puts(p, "=\"");
			prom_put_escaped(p, labels[i + 1], "\\\"\n", "\\\"n");
			prom_puts(p, "\"");
		}
		prom_puts(p, "}");
	}
	prom_puts(p, " ");
	if (n >= 0)
		prom_put(p, value, (size_t)n);
	return prom_puts(p, "\n");
}

static int
prom_u64(struct prom *p, const char *name, const char *suffix,
    const char *const *labels, uint64_t v)
{
	char text[32];

	return prom_line(p, name, suffix, labels, text,
	    snprintf(text, sizeof(text), "%" PRIu64, v));
}

static int
prom_fixed(struct prom *p, const char *name, const char *suffix,
    const char *const *labels, int decimals, double v)
{
	char text[512];	/* %f of the largest double: 309 digits */
	int n = snprintf(text, sizeof(text), "%.*f", decimals, v);

	return prom_line(p, name, suffix, labels, text,
	    n < (int)sizeof(text) ? n : -1);
}

int
prom_sample_u64(struct prom *p, const char *name, const char *const *labels,
    uint64_t v)
{
	return prom_u64(p, name, "", labels, v);
}

int
prom_sample_i64(struct prom *p, const char *name, const char *const *labels,
    int64_t v)
{
	char text[32];

	return prom_line(p, name, "", labels, text,
	    snprintf(text, sizeof(text), "%" PRId64, v));
}

int
prom_sample_fixed(struct prom *p, const char *name,
    const char *const *labels, int decimals, double v)
{
	return prom_fixed(p, name, "", labels, decimals, v);
}

int
prom_histogram(struct prom *p, const char *name, const double *bounds,
    const uint64_t *counts, size_t n, double sum, int sum_decimals,
    uint64_t count)
{
	char le[32];
	uint64_t cum = 0;

	for (size_t i = 0; i < n; i++) {
		cum += counts[i];
		snprintf(le, sizeof(le), "%g", bounds[i]);
		prom_u64(p, name, "_bucket", (const char *[]){ "le", le, NULL },
		    cum);
	}
	cum += counts[n];
	prom_u64(p, name, "_bucket", (const char *[]){ "le", "+Inf", NULL },
	    cum);
	prom_fixed(p, name, "_sum", NULL, sum_decimals, sum);
	return prom_u64(p, name, "_count", NULL, count);
}
