/*
 * libFuzzer target for the probe's judge (probe.h probe_evaluate): both of
 * its inputs are hostile or half-trusted, the inside view being whatever
 * the sandboxed probe program printed and the outside one docker's
 * inspect JSON. Any bytes give a report, never a crash, and the report
 * fails closed: an inside or outside view that is not a JSON document of
 * the right kind never passes, the overall verdict is the AND of the
 * controls, and every text field is a terminated string. Input: one byte
 * choosing the mode and runtime facts, then the inside view, a NUL, the
 * inspect view.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/config.h"
#include "probe/probe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct config cfg;
static int inited;

/* True when buf[0..len) is one JSON value of the given kind. */
static int
is_json(const char *buf, size_t len, int want_array)
{
	cJSON *j = cJSON_ParseWithLength(buf, len);
	int ok = j != NULL && (want_array ? cJSON_IsArray(j) :
	    cJSON_IsObject(j));

	cJSON_Delete(j);
	return ok;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct probe_expect e = { .config = &cfg,
	    .host_release = "6.18.44-test", .runtime = "cordon-offline",
	    .marker_var = "CORDON_PROBE_MARKER_1" };
	struct probe_report rep;
	const char *inside, *inspect, *nul;
	size_t inside_len, inspect_len;
	bool all = true;
	cJSON *j;

	if (!inited) {
		config_defaults(&cfg);
		inited = 1;
	}
	if (size < 1)
		return 0;
	e.mode = (data[0] & 1) ? "proxy" : "none";
	e.proxy_url = (data[0] & 1) ? "http://10.213.249.1:3128" : NULL;
	e.runtime_is_runsc = (data[0] & 2) != 0;
	inside = (const char *)data + 1;
	nul = memchr(inside, '\0', size - 1);
	inside_len = nul != NULL ? (size_t)(nul - inside) : size - 1;
	inspect = nul != NULL ? nul + 1 : "";
	inspect_len = nul != NULL ? size - 1 - inside_len - 1 : 0;

	memset(&rep, 0x5a, sizeof(rep));
	probe_evaluate(&e, inside, inside_len, inspect, inspect_len, &rep);
	if (rep.ncontrols == 0 || rep.ncontrols > PROBE_MAX_CONTROLS)
		abort();
	for (size_t i = 0; i < rep.ncontrols; i++) {
		const struct probe_control *k = &rep.controls[i];

		if (k->name == NULL || memchr(k->expected, '\0',
		    sizeof(k->expected)) == NULL || memchr(k->observed, '\0',
		    sizeof(k->observed)) == NULL)
			abort();
		all = all && k->pass;
	}
	if (rep.pass != all || memchr(rep.mode, '\0', sizeof(rep.mode)) ==
	    NULL || memchr(rep.image, '\0', sizeof(rep.image)) == NULL)
		abort();
	/* Fail closed: neither view may be missing or malformed in a pass. */
	if (rep.pass && (!is_json(inside, inside_len, 0) ||
	    !is_json(inspect, inspect_len, 1)))
		abort();
	if ((j = probe_report_to_json(&rep)) == NULL)
		abort();
	cJSON_Delete(j);
	return 0;
}
