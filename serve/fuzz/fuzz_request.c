/*
 * libFuzzer target for `POST /v1/runs` bodies: any bytes must parse or be
 * refused (-EINVAL/-EFBIG) with a reason, never crash or leak; an accepted
 * body has safe paths and stays within the configured caps. The same bytes
 * also go through the strict base64 decoder.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "runner/stage.h"
#include "serve/request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct config c;
	static int ready;
	struct serve_req r;
	unsigned char *out;
	size_t outlen, total = 0;
	char err[512] = "";
	int rc;

	if (!ready) {
		config_defaults(&c);
		c.serve.body_max_bytes = 1 << 16;
		c.limits.in_max_bytes = 4096;
		c.limits.in_max_files = 8;
		ready = 1;
	}
	rc = serve_req_parse(&c, (const char *)data, size, &r, err, sizeof(err));
	if (rc == 0) {
		if (r.code == NULL || r.nfiles > 8)
			abort();
		for (size_t i = 0; i < r.nfiles; i++) {
			if (!stage_path_safe(r.files[i].path))
				abort();
			total += r.files[i].len;
		}
		if (total > 4096)
			abort();
		serve_req_cleanup(&r);
	} else if ((rc != -EINVAL && rc != -EFBIG && rc != -ENOMEM) ||
	    err[0] == '\0' || r.code != NULL) {
		abort();
	}
	if (stage_base64_decode((const char *)data, size, &out, &outlen) == 0) {
		if (outlen > size / 4 * 3)
			abort();
		free(out);
	}
	return 0;
}
