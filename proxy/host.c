/*
 * Request hosts for cordon-proxy (see host.h): the parse itself is the
 * allowlist's (allowlist_host_parse_n), so `cordon allowlist explain` and
 * the proxy can never disagree on what a host is; here only its result in
 * the proxy's form, and the authority split.
 */
#include "proxy/host.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "allowlist/allowlist.h"
#include "common/util.h"

int
proxy_host_parse_ipv4(const char *s, size_t len, struct in_addr *out)
{
	return allowlist_host_parse_ipv4(s, len, out);
}

int
proxy_host_parse(const char *s, size_t len, struct host_parsed *out)
{
	struct allowlist_host h;

	memset(out, 0, sizeof(*out));
	if (allowlist_host_parse_n(s, len, &h) != 0)
		return -EINVAL;
	if (h.family == AF_INET) {
		out->kind = HOST_IPV4;
		memcpy(&out->v4, h.addr, 4);
	} else if (h.family == AF_INET6) {
		out->kind = HOST_IPV6;
		memcpy(&out->v6, h.addr, 16);
	} else {
		out->kind = HOST_NAME;
	}
	/* A name is at most 253 bytes, an address's text far less. */
	if (strlen(h.text) >= sizeof(out->name)) {
		memset(out, 0, sizeof(*out));
		return -EINVAL;
	}
	memcpy(out->name, h.text, strlen(h.text) + 1);
	return 0;
}

bool
proxy_host_name_internal(const char *name)
{
	return allowlist_host_internal(name);
}

int
proxy_host_port_split(const char *authority, size_t len, const char **host,
    size_t *hostlen, uint16_t *port, bool port_required)
{
	const char *a = authority, *end, *colon;
	size_t hl;
	uint16_t v = 0;

	*host = NULL;
	*hostlen = 0;
	*port = 0;
	if (a == NULL || len == 0)
		return -EINVAL;
	if (a[0] == '[') {
		end = memchr(a, ']', len);
		if (end == NULL || end == a + 1)
			return -EINVAL;
		hl = (size_t)(end - a) + 1;
	} else {
		colon = memchr(a, ':', len);
		if (colon != NULL && memchr(colon + 1, ':',
		    len - (size_t)(colon - a) - 1) != NULL)
			return -EINVAL;
		hl = colon != NULL ? (size_t)(colon - a) : len;
	}
	if (hl == 0)
		return -EINVAL;
	if (hl == len) {
		if (port_required)
			return -EINVAL;
	} else {
		if (a[hl] != ':')
			return -EINVAL;
		/* The allowlist's parser too: one spelling per port. */
		if (util_port_parse(a + hl + 1, len - hl - 1, &v) != 0)
			return -ERANGE;
	}
	*host = a;
	*hostlen = hl;
	*port = v;
	return 0;
}
