/*
 * Test helpers for TLS ClientHellos: load the captured fixtures
 * (tests/proxy/data/hello-*.bin), take the handshake message out of its
 * records, put it back into records of any size, and rebuild it with
 * extensions dropped or added (another server_name, an ECH extension).
 * Used by the parser's table (test_tlshello.c) and the daemon's SNI tests.
 */
#ifndef CORDON_TESTS_PROXY_HELLO_UTIL_H
#define CORDON_TESTS_PROXY_HELLO_UTIL_H

#include <stddef.h>
#include <stdint.h>

#define HELLO_CAP (64 * 1024)

/* Reads tests/proxy/data/NAME (via CORDON_SOURCE_ROOT) into buf; returns
 * its length, or 0 when it cannot be read. */
size_t hello_load(const char *name, uint8_t *buf, size_t cap);

/* The handshake message (header included) carried by the records in raw;
 * returns its length, 0 when raw is not well-framed. */
size_t hello_message(const uint8_t *raw, size_t n, uint8_t *msg, size_t cap);

/* msg in handshake records of at most recsize payload bytes each (record
 * version 0x0301); returns the length written, 0 when it did not fit. */
size_t hello_frame(const uint8_t *msg, size_t n, size_t recsize, uint8_t *out,
    size_t cap);

/* The server_name extension's data for names (each "" allowed). */
size_t hello_sni_data(const char *const *names, size_t nnames, uint8_t *out,
    size_t cap);

/* Rebuilds the ClientHello message msg: extensions of type drop (-1: none)
 * are left out, then one of type add (-1: none) with add_data is appended.
 * Returns the new message's length, 0 when msg does not parse. */
size_t hello_rebuild(const uint8_t *msg, size_t n, int drop, int add,
    const uint8_t *add_data, size_t add_len, uint8_t *out, size_t cap);

/* A whole ClientHello (one record) from fixture name with its server_name
 * replaced by names (nnames 0: none). Returns the length, 0 on failure. */
size_t hello_with_names(const char *fixture, const char *const *names,
    size_t nnames, uint8_t *out, size_t cap);

#endif
