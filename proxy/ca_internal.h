/*
 * Private to the egress CA (ca.c: loading and leaves at run time;
 * ca_make.c: making the CA on disk): the X.509 building blocks both use.
 */
#ifndef CORDON_PROXY_CA_INTERNAL_H
#define CORDON_PROXY_CA_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

/* err gets what, then OpenSSL's first queued error (the queue is
 * cleared); returns rc. */
int proxy_ca_fail(char *err, size_t errlen, int rc, const char *what);
/* A new P-256 key, or NULL. */
EVP_PKEY *proxy_ca_key_new(void);
/* Adds extension nid with value (v3 config syntax), issuer issuer. */
bool proxy_ca_ext(X509 *x, X509 *issuer, int nid, const char *value);
/* A certificate for key, valid [now - back, now + secs), subject CN cn
 * (NULL: none), a random serial. Issuer: itself when issuer is NULL. */
X509 *proxy_ca_cert_new(EVP_PKEY *key, const char *cn, int64_t now,
    long back, long secs, X509 *issuer);
/* A PEM certificate or private key read from path, or NULL. */
X509 *proxy_ca_read_cert(const char *path);
EVP_PKEY *proxy_ca_read_key(const char *path);

#endif
