/*
 * libFuzzer target for reading a runtime from `docker info --format
 * '{{json .Runtimes}}'` (docker_runtime_parse) and naming its network stack
 * (docker_runtime_stack): any bytes are parsed or refused without crashing;
 * the stack is always one of "netstack", "host", "none", and it is "host"
 * or "none" only when that exact --network= word is among the arguments.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runner/docker.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check(const char *args)
{
	const char *s = docker_runtime_stack(args);

	if (strcmp(s, "netstack") != 0 && strcmp(s, "host") != 0 &&
	    strcmp(s, "none") != 0)
		abort();
	if (strcmp(s, "host") == 0 && strstr(args, "--network=host") == NULL)
		abort();
	if (strcmp(s, "none") == 0 && strstr(args, "--network=none") == NULL)
		abort();
	if (strstr(args, "--network=") == NULL && strcmp(s, "netstack") != 0)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct docker_runtime rt;
	char args[512];

	/* The bytes as runtimeArgs text, and as docker info's JSON. */
	if (size < sizeof(args)) {
		memcpy(args, data, size);
		args[size] = '\0';
		check(args);
	}
	if (docker_runtime_parse((const char *)data, size, "cordon-egress",
	    &rt) == 0)
		check(rt.args);
	return 0;
}
