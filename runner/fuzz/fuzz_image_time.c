/*
 * libFuzzer target for image_time_parse (the image's build time, from the
 * record or from dockerd): any bytes are parsed or refused without
 * crashing, and an accepted time prints back (as UTC) to one that parses
 * to the same millisecond.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "runner/image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char s[64], back[32];
	int64_t ms, again;

	if (size >= sizeof(s))
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (image_time_parse(s, &ms) != 0)
		return 0;
	/* time_format_utc covers years 0-9999 only. */
	if (ms < 0 || ms >= 253402300800000LL)
		return 0;
	time_format_utc(ms, back);
	if (image_time_parse(back, &again) != 0 || again != ms)
		abort();
	return 0;
}
