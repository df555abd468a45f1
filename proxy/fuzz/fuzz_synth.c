/*
 * libFuzzer target for the synthetic address map (synth.c), the closed
 * resolver's name <-> address mapping that the transparent listener reads
 * back: the input is a map size and a list of operations (assign a name,
 * look an address up), checked against a plain model after every step:
 * the same name keeps its address while held, no two names share one,
 * every address is in 198.18.0.0/15, an address maps back to exactly its
 * name, the least recently assigned name is the one evicted, and the
 * count never passes the size.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proxy/synth.h"

#define MODEL_MAX	64

struct slot {
	char name[64];
	uint32_t addr;		/* host order */
	uint64_t last;		/* assignment clock */
};

static struct slot model[MODEL_MAX];
static size_t nmodel;

static struct slot *
model_find(const char *name)
{
	for (size_t i = 0; i < nmodel; i++)
		if (strcasecmp(model[i].name, name) == 0)
			return &model[i];
	return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proxy_synth *s;
	size_t max, i = 1;
	uint64_t clock = 0;

	if (size < 1)
		return 0;
	max = (size_t)(data[0] % MODEL_MAX) + 1;
	if (proxy_synth_new(max, &s) != 0)
		abort();
	nmodel = 0;
	while (i < size) {
		uint8_t op = data[i++];
		if ((op & 1) == 0) {
			/* Assign a name of up to 8 bytes from the input
			 * (letters only: a-h, so names repeat often). */
			char name[64];
			size_t len = (size_t)(op >> 1) % 8 + 1, k;
			struct in_addr a;
			struct slot *m;

			for (k = 0; k < len && i < size; k++)
				name[k] = (char)('a' + data[i++] % 8);
			if (k == 0)
				break;
			name[k] = '\0';
			if (op & 0x80)
				name[0] = (char)(name[0] - 'a' + 'A');
			if (proxy_synth_assign(s, name, &a) != 0)
				abort();
			if (!proxy_synth_in_block(&a))
				abort();
			m = model_find(name);
			if (m != NULL) {
				if (m->addr != ntohl(a.s_addr))
					abort();	/* a held name moved */
			} else {
				if (nmodel == max) {
					/* The least recently assigned goes. */
					size_t old = 0;
					for (size_t j = 1; j < nmodel; j++)
						if (model[j].last <
						    model[old].last)
							old = j;
					model[old] = model[--nmodel];
				}
				for (size_t j = 0; j < nmodel; j++)
					if (model[j].addr == ntohl(a.s_addr))
						abort();	/* shared */
				m = &model[nmodel++];
				snprintf(m->name, sizeof(m->name), "%s", name);
				m->addr = ntohl(a.s_addr);
			}
			m->last = ++clock;
		} else {
			/* Look up an address near the ones handed out. */
			struct in_addr a;
			const char *got;
			uint32_t want = PROXY_SYNTH_NET + (uint32_t)(op >> 1);
			struct slot *m = NULL;

			a.s_addr = htonl(want);
			got = proxy_synth_name(s, &a);
			for (size_t j = 0; j < nmodel; j++)
				if (model[j].addr == want)
					m = &model[j];
			if ((m == NULL) != (got == NULL) ||
			    (m != NULL && strcasecmp(m->name, got) != 0))
				abort();
		}
		if (proxy_synth_count(s) != nmodel)
			abort();
	}
	/* Every held name maps back from its address. */
	for (size_t j = 0; j < nmodel; j++) {
		struct in_addr a = { htonl(model[j].addr) };
		const char *got = proxy_synth_name(s, &a);
		if (got == NULL || strcasecmp(got, model[j].name) != 0)
			abort();
	}
	proxy_synth_free(s);
	return 0;
}
