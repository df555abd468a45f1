/*
 * libFuzzer target for netsetup's parsers of outside text: `iptables -S`
 * listings of the filter and nat tables (chain presence, counts, jump
 * position), `docker network inspect` JSON (the network check),
 * /proc/net/{tcp,udp} listings, CIDR strings, `net up --proxy-arg`
 * values (the input split at newlines, one argument each) and the Engine
 * API's container inspect JSON the seal reads (its strings always
 * NUL-terminated within their fields).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/config.h"
#include "netsetup/fw.h"
#include "netsetup/internal.h"
#include "netsetup/netsetup.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct netsetup_params p;
	struct fw_plan plan;
	struct config c;
	char err[256], why[512], norm[32], gw[16];
	char *text = malloc(size + 1);
	cJSON *net;

	if (text == NULL)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	config_defaults(&c);
	if (netsetup_params_init(&p, &c, NULL, err, sizeof(err)) == 0 &&
	    fw_plan_build(&plan, FW_INET, &p, true) == 0) {
		(void)fw_listing_has_chain(text, p.chain_in);
		(void)fw_listing_count(text, p.chain_in);
		(void)fw_listing_has_chain(text, p.chain_nat);
		(void)fw_listing_count(text, p.chain_nat);
		for (size_t i = 0; i < plan.nrules; i++)
			(void)fw_listing_jump_first(text, &plan.rules[i]);
		if ((net = cJSON_Parse(text)) != NULL) {
			(void)dnet_check(net, &p, why, sizeof(why));
			(void)dnet_ours(net);
			(void)dnet_containers(net);
			cJSON_Delete(net);
		}
	}
	{
		struct netsetup_sandbox_view v;
		if (netsetup_sandbox_view_parse(&c, text, size, &v) == 0 &&
		    (strnlen(v.mode, sizeof(v.mode)) == sizeof(v.mode) ||
		    strnlen(v.key, sizeof(v.key)) == sizeof(v.key) ||
		    strnlen(v.ip, sizeof(v.ip)) == sizeof(v.ip)))
			abort();
	}
	(void)nssuper_listed(text, "10.213.0.1", 53, true);
	(void)nssuper_listed(text, "10.213.0.1", 3129, false);
	(void)fw_backend_parse(text);
	(void)netsetup_subnet_parse(text, norm, gw);
	{
		const char *args[16];
		size_t n = 0;
		char *save = NULL, *a;

		for (a = strtok_r(text, "\n", &save); a != NULL && n < 16;
		    a = strtok_r(NULL, "\n", &save))
			args[n++] = a;
		(void)netsetup_proxy_args_check(args, n, err, sizeof(err));
	}
	free(text);
	return 0;
}
