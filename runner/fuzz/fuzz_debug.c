/*
 * libFuzzer target for the debug runtime's arguments (runner/debug.h): any
 * bytes are accepted or refused without crashing, and an accepted
 * --debug-log pattern gives, for a container ID, a directory that starts
 * with the pattern's part before %ID%, then the ID, with no ".."
 * component.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runner/debug.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char id[] = "0123456789abcdef";
	char args[400], pat[RUNNER_DEBUG_PAT_MAX], dir[320];
	const char *at, *why;
	size_t pre;

	if (size >= sizeof(args))
		return 0;
	memcpy(args, data, size);
	args[size] = '\0';
	if (runner_debug_pattern(args, pat, sizeof(pat), &why) != 0)
		return 0;
	if (pat[0] != '/' || (at = strstr(pat, "%ID%")) == NULL)
		abort();
	if (runner_debug_dir(pat, id, dir, sizeof(dir)) != 0)
		return 0;
	pre = (size_t)(at - pat);
	if (strncmp(dir, pat, pre) != 0 ||
	    strncmp(dir + pre, id, sizeof(id) - 1) != 0 ||
	    strstr(dir, "/../") != NULL)
		abort();
	return 0;
}
