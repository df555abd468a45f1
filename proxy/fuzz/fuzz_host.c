/*
 * libFuzzer target for host parsing: proxy_host_parse, proxy_host_port_split
 * (its port by util_port_parse: printed back, it is the text it came from),
 * classification of the results, --allow-address round trips, and a
 * differential check of the IPv4 literal parser against inet_aton.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/addr.h"
#include "proxy/host.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_parsed(const struct host_parsed *hp)
{
	size_t n = strlen(hp->name);

	switch (hp->kind) {
	case HOST_NAME:
		if (n == 0 || n > HOST_NAME_MAXLEN)
			abort();
		for (size_t i = 0; i < n; i++)
			if (!(islower((unsigned char)hp->name[i]) ||
			    isdigit((unsigned char)hp->name[i]) ||
			    hp->name[i] == '-' || hp->name[i] == '.'))
				abort();
		(void)proxy_host_name_internal(hp->name);
		break;
	case HOST_IPV4: {
		struct in_addr a;
		/* the canonical text is a dotted quad of the same address */
		if (inet_pton(AF_INET, hp->name, &a) != 1 ||
		    a.s_addr != hp->v4.s_addr)
			abort();
		(void)proxy_addr_class_name(proxy_addr_classify_in(&hp->v4));
		break;
	}
	case HOST_IPV6: {
		struct in6_addr a;
		if (inet_pton(AF_INET6, hp->name, &a) != 1 ||
		    memcmp(&a, &hp->v6, sizeof(a)) != 0)
			abort();
		(void)proxy_addr_class_name(proxy_addr_classify_in6(&hp->v6));
		break;
	}
	default:
		abort();
	}
}

/* proxy_host_parse_ipv4 and inet_aton agree on inputs of digits, dots, x and
 * hex letters (inet_aton also takes trailing whitespace; we never do). */
static void
check_ipv4_differential(const char *s, size_t size, const char *z)
{
	struct in_addr a, b;
	int ra, rb;

	for (size_t i = 0; i < size; i++)
		if (!isxdigit((unsigned char)s[i]) && s[i] != '.' &&
		    s[i] != 'x' && s[i] != 'X')
			return;
	ra = inet_aton(z, &a);
	rb = proxy_host_parse_ipv4(s, size, &b);
	if ((ra != 0) != (rb == 0))
		abort();
	if (rb == 0 && a.s_addr != b.s_addr)
		abort();
}

static void
check_exception(const char *z, size_t size)
{
	struct addr_exception e, e2;
	char text[64];
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;

	if (proxy_addr_exception_parse(z, &e) != 0)
		return;
	if (proxy_addr_exception_format(&e, text, sizeof(text)) != 0 ||
	    proxy_addr_exception_parse(text, &e2) != 0 ||
	    memcmp(&e, &e2, sizeof(e)) != 0)
		abort();
	/* an exception matches its own network address */
	if (e.family == AF_INET) {
		memset(&sin, 0, sizeof(sin));
		sin.sin_family = AF_INET;
		sin.sin_addr = e.addr.v4;
		if (!proxy_addr_exception_match(&e, 1, (struct sockaddr *)&sin,
		    e.port ? e.port : 1))
			abort();
	} else {
		memset(&sin6, 0, sizeof(sin6));
		sin6.sin6_family = AF_INET6;
		sin6.sin6_addr = e.addr.v6;
		if (!proxy_addr_exception_match(&e, 1, (struct sockaddr *)&sin6,
		    e.port ? e.port : 1))
			abort();
	}
	(void)size;
}

/* Raw addresses: mapped IPv6 must classify like its IPv4. */
static void
check_classify_raw(const uint8_t *data, size_t size)
{
	struct in6_addr a6;
	struct in_addr a4;

	if (size < 4)
		return;
	memcpy(&a4, data, 4);
	memset(&a6, 0, sizeof(a6));
	a6.s6_addr[10] = a6.s6_addr[11] = 0xff;
	memcpy(a6.s6_addr + 12, data, 4);
	if (proxy_addr_classify_in(&a4) != proxy_addr_classify_in6(&a6))
		abort();
	if (size >= 16) {
		memcpy(&a6, data, 16);
		(void)proxy_addr_class_name(proxy_addr_classify_in6(&a6));
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	struct host_parsed hp;
	const char *host;
	size_t hostlen;
	uint16_t port;
	char *z;

	if (proxy_host_parse(s, size, &hp) == 0)
		check_parsed(&hp);
	if (proxy_host_port_split(s, size, &host, &hostlen, &port,
	    size & 1) == 0) {
		if (host < s || host + hostlen > s + size || hostlen == 0 ||
		    (size & 1 && port == 0))
			abort();
		/* A port has one spelling: the text after ':' is exactly
		 * the number printed back (what the allowlist accepts). */
		if (hostlen < size) {
			char back[8];
			int n = snprintf(back, sizeof(back), "%u", port);
			if (port == 0 || (size_t)n != size - hostlen - 1 ||
			    memcmp(back, s + hostlen + 1, (size_t)n) != 0)
				abort();
		}
		if (proxy_host_parse(host, hostlen, &hp) == 0)
			check_parsed(&hp);
	}
	z = malloc(size + 1);
	if (z == NULL)
		return 0;
	memcpy(z, data, size);
	z[size] = '\0';
	if (strlen(z) == size) {
		check_ipv4_differential(s, size, z);
		check_exception(z, size);
		(void)proxy_host_name_internal(z);
	}
	free(z);
	check_classify_raw(data, size);
	return 0;
}
