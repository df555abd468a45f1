/*
 * libFuzzer target for the config parser (common/config.c): any bytes as
 * a config file must parse or fail with a reason, never crash; a parsed
 * config's profiles then go through config_profile_pick and _use for
 * every language, and must stay consistent (the picked profile offers
 * the language; use makes it current).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const langs[] = { NULL, "python", "bash", "node",
	    "ruby" };
	const struct config_profile *p;
	struct config *c = malloc(sizeof(*c)), *u = malloc(sizeof(*u));
	char err[512];

	if (c == NULL || u == NULL)
		goto out;
	if (config_parse(c, (const char *)data, size, "fuzz.json", err,
	    sizeof(err)) < 0)
		goto out;
	for (size_t i = 0; i <= c->image.nprofiles; i++) {
		const char *name = i < c->image.nprofiles ?
		    c->image.profiles[i].name : NULL;
		for (size_t k = 0; k < sizeof(langs) / sizeof(langs[0]); k++) {
			if (config_profile_pick(c, name, langs[k], &p, err,
			    sizeof(err)) < 0)
				continue;
			if ((p->langs & config_lang_bit(langs[k])) == 0)
				abort();
			*u = *c;
			if (config_profile_use(u, name, langs[k], err,
			    sizeof(err)) < 0 ||
			    strcmp(config_profile_current(u), p->name) != 0)
				abort();
		}
	}
out:
	free(c);
	free(u);
	return 0;
}
