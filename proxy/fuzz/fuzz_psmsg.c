/*
 * libFuzzer target for the parent's decoders of what the network child
 * sends (psmsg.h): the input goes to every decoder. A decoder either
 * refuses it (and leaves its output zeroed) or accepts a value that
 * re-encodes and decodes to itself; a leaf request's host is what the one
 * host parser makes of it; a report the check accepts is an object.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "allowlist/allowlist.h"
#include "proxy/psmsg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_leaf(const uint8_t *data, size_t size)
{
	struct proxy_psmsg_leaf_req a, b, zero;
	struct allowlist_host h;
	char *text;

	memset(&zero, 0, sizeof(zero));
	if (proxy_psmsg_leaf_req_decode(data, size, &a) != 0) {
		if (memcmp(&a, &zero, sizeof(a)) != 0)
			abort();
		return;
	}
	if (a.keylen == 0 || a.keylen > PSMSG_KEY_MAX || a.port == 0 ||
	    allowlist_host_parse(a.host, &h) != 0 ||
	    strcmp(h.text, a.host) != 0 || (h.family != 0) != a.is_ip)
		abort();
	if ((text = proxy_psmsg_leaf_req_encode(&a)) == NULL)
		return;		/* out of memory */
	if (proxy_psmsg_leaf_req_decode(text, strlen(text), &b) != 0 ||
	    memcmp(&a, &b, sizeof(a)) != 0)
		abort();
	free(text);
}

static void
check_secret(const uint8_t *data, size_t size)
{
	struct proxy_psmsg_secret_req a, b, zero;
	char *text;

	memset(&zero, 0, sizeof(zero));
	if (proxy_psmsg_secret_req_decode(data, size, &a) != 0) {
		if (memcmp(&a, &zero, sizeof(a)) != 0)
			abort();
		return;
	}
	if (a.port == 0 || a.policy[0] == '\0' || a.name[0] == '\0')
		abort();
	if ((text = proxy_psmsg_secret_req_encode(&a)) == NULL)
		return;
	if (proxy_psmsg_secret_req_decode(text, strlen(text), &b) != 0 ||
	    memcmp(&a, &b, sizeof(a)) != 0)
		abort();
	free(text);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t gen, again;
	bool ok;
	char *text;

	check_leaf(data, size);
	check_secret(data, size);
	if (proxy_psmsg_gen_ack_decode(data, size, &gen) == 0) {
		if (gen == 0 || (text = proxy_psmsg_gen_ack_encode(gen)) == NULL)
			abort();
		if (proxy_psmsg_gen_ack_decode(text, strlen(text), &again) !=
		    0 || again != gen)
			abort();
		free(text);
	}
	if (proxy_psmsg_report_check(data, size, &ok) == 0 &&
	    (size == 0 || memchr(data, '{', size) == NULL))
		abort();
	return 0;
}
