/*
 * Private to the doctor (doctor.c: the checks in order; doctor_runtime.c:
 * the runtime lines): how a line is filled and how a tool is called.
 */
#ifndef CORDON_RUNNER_DOCTOR_INTERNAL_H
#define CORDON_RUNNER_DOCTOR_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "runner/doctor.h"

struct cbuf;
struct config;

/* Fills l: verdict v, what, hint (kept for FAIL and WARN only), detail
 * from fmt. */
void doctor_set(struct doctor_line *l, enum doctor_verdict v,
    const char *what, const char *hint, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Runs argv with a deadline: 0 when it exited 0, else proc_call's
 * negative errno. On 0, *out (may be NULL) gets its stdout (caller frees). */
int doctor_call(const char *const *argv, int64_t ms, size_t outmax,
    struct cbuf **out);
/* The runtime lines (doctor_runtime.c) appended to l[*n], at most max. */
void doctor_check_runtimes(const struct config *c, struct doctor_line *l,
    size_t *n, size_t max);

#endif
