/*
 * Prometheus text exposition (format 0.0.4) written into a capped buffer:
 * HELP/TYPE lines, samples with escaped label values and histograms. One
 * renderer for every /metrics endpoint (cordon-proxy, cordon serve).
 */
#ifndef CORDON_COMMON_PROM_H
#define CORDON_COMMON_PROM_H

#include <stddef.h>
#include <stdint.h>

struct cbuf;

/* A builder over a caller-owned cbuf. The first error sticks: later calls
 * append nothing and return it again, so a renderer checks once at the
 * end. */
struct prom {
	struct cbuf *buf;	/* borrowed */
	/* 0, -ENOSPC (buffer limit), -ENOMEM or -EINVAL (a value printf
	 * could not format). */
	int error;
};

void prom_init(struct prom *p, struct cbuf *buf);

/*
 * Every function below returns p->error: 0 or the first error.
 *
 * Names are written as given (the caller passes valid metric names).
 * labels is NULL (no labels) or name/value pairs ended by NULL, e.g.
 * (const char *[]){ "reason", r, NULL }; values are escaped (backslash,
 * double quote and newline become \\, \" and \n).
 */

/* "# HELP name help\n# TYPE name type\n"; help escapes backslash and
 * newline. */
int prom_help_type(struct prom *p, const char *name, const char *help,
    const char *type);
/* "name{labels} v\n" for an unsigned, a signed and a fixed-point value
 * (decimals digits after the point). */
int prom_sample_u64(struct prom *p, const char *name,
    const char *const *labels, uint64_t v);
int prom_sample_i64(struct prom *p, const char *name,
    const char *const *labels, int64_t v);
int prom_sample_fixed(struct prom *p, const char *name,
    const char *const *labels, int decimals, double v);

/*
 * A histogram's samples (after its HELP/TYPE): name_bucket{le="B"} with
 * the cumulative count for each of the n bounds (printed with %g), then
 * le="+Inf", name_sum (sum_decimals digits) and name_count. counts holds
 * n + 1 per-bucket (not cumulative) counts, the last one for observations
 * above every bound.
 */
int prom_histogram(struct prom *p, const char *name, const double *bounds,
    const uint64_t *counts, size_t n, double sum, int sum_decimals,
    uint64_t count);

#endif
