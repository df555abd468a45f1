/*
 * Test helpers for the closed resolver's suites: wire bytes from hex
 * written by hand after the RFCs, and queries put together byte by byte
 * (not with ldns, so that they check the codec rather than echo it).
 */
#ifndef CORDON_TESTS_PROXY_DNS_UTIL_H
#define CORDON_TESTS_PROXY_DNS_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes of hex (pairs of hex digits; spaces and '|' ignored, and so is
 * text in single quotes, which stands for its own bytes: "07 'example'").
 * Fails the test on anything else or over cap. Returns the length. */
size_t dns_hex(const char *hex, uint8_t *out, size_t cap);

/* A query: id, RD set, one question (name: dot-separated labels, no
 * escapes, "" for the root), and an OPT when edns_udp >= 0 (its version
 * and DO bit as given, no options). Returns the length. */
size_t dns_query(uint8_t *out, size_t cap, uint16_t id, const char *name,
    uint16_t qtype, uint16_t qclass, int edns_udp, uint8_t version,
    bool do_bit);

/* Lowercase hex of p[0..n) into a static buffer, for failure messages. */
const char *dns_tohex(const uint8_t *p, size_t n);

#endif
