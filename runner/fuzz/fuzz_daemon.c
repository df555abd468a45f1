/*
 * libFuzzer target for the doctor's reading of the daemon: any bytes as
 * `docker info` JSON and as /etc/subuid are parsed or refused without
 * crashing; the line built from them is always a whole string, and a
 * remapped root is never reported outside userns mode.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runner/doctor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct doctor_daemon d;
	struct doctor_line l;
	char *text;
	long n;

	if (doctor_daemon_parse((const char *)data, size, &d) == 0 &&
	    d.mode != DOCTOR_DAEMON_USERNS && d.remap_uid != -1)
		abort();
	if ((text = malloc(size + 1)) == NULL)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	n = doctor_subid_count(text, d.remap_uid >= 0 ? d.remap_uid : 100000);
	if (n == 0 || n < -1)
		abort();
	doctor_daemon_line(&d, n, &l);
	if (strnlen(l.detail, sizeof(l.detail)) == sizeof(l.detail) ||
	    strcmp(l.what, "daemon") != 0)
		abort();
	free(text);
	return 0;
}
