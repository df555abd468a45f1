/*
 * libFuzzer target for the --out tar reader: any bytes must be read (or
 * refused) without crashing, and no accepted name may escape the output
 * directory.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runner/outwrap.h"
#include "runner/tar.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tar_reader r;
	struct tar_entry e;
	struct outwrap_split sp;

	runner_tar_reader_init(&r, data, size);
	while (runner_tar_next(&r, &e) == 1) {
		if (runner_tar_entry_refusal(&e) != NULL)
			continue;
		size_t n = strlen(e.name);
		if (e.name[0] == '/' || strcmp(e.name, "..") == 0 ||
		    strncmp(e.name, "../", 3) == 0 ||
		    strstr(e.name, "/../") != NULL ||
		    (n >= 3 && strcmp(e.name + n - 3, "/..") == 0))
			abort();
		if (e.data + e.size > data + size)
			abort();
	}
	(void)outwrap_split(data, size, "0123456789abcdef0123456789abcdef",
	    &sp);
	return 0;
}
