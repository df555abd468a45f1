/*
 * libFuzzer target for the --out tar reader (ustar and PAX) and the
 * wrapper's report after the archive: any bytes must be read (or refused)
 * without crashing, no accepted name may escape the output directory, and
 * a parsed report holds only well-formed items.
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
	const cJSON *it;
	cJSON *rep;
	int n;

	runner_tar_reader_init(&r, data, size);
	while ((n = runner_tar_next(&r, &e)) == 1) {
		if (runner_tar_entry_refusal(&e) != NULL)
			continue;
		size_t n = strlen(e.name);
		if (e.name[0] == '/' || strcmp(e.name, "..") == 0 ||
		    strncmp(e.name, "../", 3) == 0 ||
		    strstr(e.name, "/../") != NULL ||
		    (n >= 3 && strcmp(e.name + n - 3, "/..") == 0))
			abort();
		if (e.data + e.size > data + size ||
		    strlen(e.name) >= TAR_NAME_MAX)
			abort();
	}
	if (n == 0 && outwrap_report_parse(data + r.off, size - r.off, 100,
	    &rep) == 0) {
		if (cJSON_GetArraySize(rep) > 100)
			abort();
		cJSON_ArrayForEach(it, rep)
			if (outwrap_report_reason(cJSON_GetObjectItem(it,
			    "why")->valuestring) == NULL)
				abort();
		cJSON_Delete(rep);
	}
	(void)outwrap_split(data, size, "0123456789abcdef0123456789abcdef",
	    &sp);
	return 0;
}
