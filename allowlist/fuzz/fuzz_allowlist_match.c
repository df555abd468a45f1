/*
 * libFuzzer target for the matcher: the first two bytes are a port, the
 * rest a request host. The hashed matcher is checked against a naive
 * linear scan over the same entries (each allow wildcard asking libpsl
 * for the registrable domain, loaded from the same list file), and against
 * case and authority forms.
 */
#include <ctype.h>
#include <libpsl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allowlist/allowlist.h"
#include "allowlist/internal.h"	/* AL_PSL_FILE */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char policy_text[] =
    "example.com\n"
    "*.example.com\n"
    "api.example.com:8443\n"
    "!internal.example.com\n"
    "!*.corp.example.com:443\n"
    "*.deep.a.example.org:80,8080\n"
    "b.example.org:1\n"
    "!*.example.net\n"
    "www.example.net\n"
    "203.0.113.7\n"
    "!203.0.113.8\n"
    "2001:db8::1\n"
    "[2001:db8::2]:8443\n"
    "localhost:3000\n"
    "xn--bcher-kva.example:443\n"
    "*.multi.example:8000,1,65535,22\n"
    "*.amazonaws.com\n"
    "*.bucket.s3.amazonaws.com:443\n";

/* The same entries, normalised by hand; ports 0-terminated, none = all. */
static const struct ref {
	bool deny, wild;
	const char *name;
	unsigned ports[5];
} refs[] = {
	{ false, false, "example.com", { 80, 443 } },
	{ false, true, "example.com", { 80, 443 } },
	{ false, false, "api.example.com", { 8443 } },
	{ true, false, "internal.example.com", { 0 } },
	{ true, true, "corp.example.com", { 443 } },
	{ false, true, "deep.a.example.org", { 80, 8080 } },
	{ false, false, "b.example.org", { 1 } },
	{ true, true, "example.net", { 0 } },
	{ false, false, "www.example.net", { 80, 443 } },
	{ false, false, "203.0.113.7", { 80, 443 } },
	{ true, false, "203.0.113.8", { 0 } },
	{ false, false, "2001:db8::1", { 80, 443 } },
	{ false, false, "2001:db8::2", { 8443 } },
	{ false, false, "localhost", { 3000 } },
	{ false, false, "xn--bcher-kva.example", { 443 } },
	{ false, true, "multi.example", { 8000, 1, 65535, 22 } },
	{ false, true, "amazonaws.com", { 80, 443 } },
	{ false, true, "bucket.s3.amazonaws.com", { 443 } },
};

static psl_ctx_t *psl;

/* A wildcard covers a host only when the host's registrable domain is the
 * base or above it. */
static bool
ref_psl(const struct ref *r, const char *host)
{
	const char *reg = psl_registrable_domain(psl, host);

	return reg != NULL && strlen(reg) <= strlen(r->name);
}

static bool
ref_host(const struct ref *r, const struct allowlist_host *h)
{
	size_t n = strlen(r->name), hl = strlen(h->text);

	if (!r->wild)
		return strcmp(h->text, r->name) == 0;
	return h->family == 0 && hl > n + 1 && h->text[hl - n - 1] == '.' &&
	    strcmp(h->text + hl - n, r->name) == 0;
}

static bool
ref_port(const struct ref *r, long port)
{
	if (r->ports[0] == 0)
		return true;
	for (size_t i = 0; i < 5 && r->ports[i] != 0; i++)
		if (r->ports[i] == port)
			return true;
	return false;
}

static bool
ref_match(const char *host, long port)
{
	struct allowlist_host h;

	if (allowlist_host_parse(host, &h) != 0 || port < 1 || port > 65535)
		return false;
	for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]); i++)
		if (refs[i].deny && ref_host(&refs[i], &h) &&
		    ref_port(&refs[i], port))
			return false;
	for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]); i++)
		if (!refs[i].deny && ref_host(&refs[i], &h) &&
		    ref_port(&refs[i], port) &&
		    (!refs[i].wild || ref_psl(&refs[i], h.text)))
			return true;
	return false;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct allowlist_set *set;
	const struct allowlist *al;
	struct allowlist_decision d, d2;
	struct allowlist_host h, h2;
	char host[600], upper[600], auth[620];
	long port;
	bool ok;

	if (set == NULL && allowlist_set_parse("fuzz", policy_text,
	    sizeof(policy_text) - 1, &set, NULL) != 0)
		abort();
	if (psl == NULL && (psl = psl_load_file(AL_PSL_FILE)) == NULL)
		abort();
	al = allowlist_set_policy(set, NULL);
	if (size < 2)
		return 0;
	port = (long)data[0] << 8 | data[1];
	if (port > 65000)
		port = 65536 + (port - 65000) * 1000000L;  /* out of range */
	size -= 2;
	data += 2;
	if (size >= sizeof(host))
		size = sizeof(host) - 1;
	memcpy(host, data, size);
	host[size] = '\0';

	ok = allowlist_match(al, host, port, &d);
	if (ok != ref_match(host, port) || ok != d.allowed)
		abort();
	if (ok && (d.entry == NULL || d.line == 0 ||
	    strcmp(d.reason, "allowed-by-entry") != 0))
		abort();
	if (allowlist_host_parse(host, &h) == 0) {
		/* Normalisation is idempotent. */
		if (allowlist_host_parse(h.text, &h2) != 0 ||
		    strcmp(h.text, h2.text) != 0 || h.family != h2.family)
			abort();
	} else if (strcmp(d.reason, "invalid-host") != 0) {
		abort();
	}
	for (size_t i = 0; i <= strlen(host); i++)
		upper[i] = (char)toupper((unsigned char)host[i]);
	if (allowlist_match(al, upper, port, &d2) != ok)
		abort();
	if (strchr(host, ':') == NULL || host[0] == '[') {
		snprintf(auth, sizeof(auth), "%s:%ld", host, port);
		if (strchr(host, ']') == NULL || host[0] == '[')
			if (allowlist_match_authority(al, auth, 1, &d2) != ok)
				abort();
	}
	return 0;
}
