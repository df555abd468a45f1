/*
 * BIND's dig (bind9-dnsutils) as the tests' independent DNS client: runs
 * it against a resolver on 127.0.0.1 and returns what it printed.
 */
#ifndef CORDON_TESTS_PROXY_DIG_UTIL_H
#define CORDON_TESTS_PROXY_DIG_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* dig @127.0.0.1 -p PORT +tries=1 +time=3 ARGS... (NULL-terminated):
 * its output (static, valid until the next call); fails the test when
 * dig cannot run or exits non-zero. */
const char *dig_run(uint16_t port, const char *const *args);
/* Fails the test unless text has want (present) or lacks it. */
void dig_check(const char *text, const char *want, bool present);
/* The address of the A answer for name with TTL ttl ("198.18.0.1"),
 * into out; fails the test when there is none. */
void dig_answer_a(const char *text, const char *name, unsigned ttl,
    char *out, size_t len);

#endif
