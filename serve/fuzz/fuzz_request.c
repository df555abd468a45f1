/*
 * libFuzzer target for `POST /v1/runs` bodies: any bytes must parse or be
 * refused (-EINVAL/-EFBIG) with a reason, never crash or leak; an accepted
 * body has safe paths and stays within the configured caps, and its net and
 * policy go through the tenant check (0, 400 or 403 with a reason) for a
 * tenant with proxy and one policy. The same bytes also go through the
 * strict base64 decoder.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "runner/stage.h"
#include "serve/request.h"
#include "serve/tenant.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The tenant rules must answer any parsed request with 0 or a reason. */
static void
check_tenant(const struct config *c, const struct jobs_req *r)
{
	enum runner_net net = r->has_net ? r->net : RUNNER_NET_PROXY;
	char err[512] = "";
	int rc;

	if (!config_policy_name_valid(r->policy) && r->policy[0] != '\0')
		abort();
	for (int i = -1; i < (int)c->serve.ntenants; i++) {
		err[0] = '\0';
		rc = serve_tenant_check(c, i < 0 ? NULL : &c->serve.tenants[i],
		    net, r->policy, err, sizeof(err));
		if ((rc != 0 && rc != -EINVAL && rc != -EPERM) ||
		    (rc != 0) != (err[0] != '\0'))
			abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct config c;
	static int ready;
	struct jobs_req r;
	unsigned char *out;
	size_t outlen, total = 0;
	char err[512] = "";
	int rc;

	if (!ready) {
		static const char tenants[] = "{\"serve\":{\"tenants\":["
		    "{\"name\":\"p\",\"token\":\"pppppppppppppppp\",\"nets\":"
		    "[\"proxy\",\"none\"],\"policies\":[\"pypi\"]},"
		    "{\"name\":\"n\",\"token\":\"nnnnnnnnnnnnnnnn\"}]}}";

		if (config_parse(&c, tenants, sizeof(tenants) - 1, "fuzz", err,
		    sizeof(err)) != 0)
			abort();
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
		check_tenant(&c, &r);
		jobs_req_cleanup(&r);
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
