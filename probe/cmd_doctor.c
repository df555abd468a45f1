/*
 * `cordon doctor`: prints the checklist, one line per check, and exits 1
 * if any check failed.
 */
#include <stdio.h>

#include "common/config.h"
#include "probe/doctor.h"
#include "runner/cmd.h"

int
cmd_doctor(int argc, char **argv)
{
	struct doctor_line lines[DOCTOR_MAX_LINES];
	struct config c;
	char err[512];
	size_t n;
	int failed = 0;

	(void)argv;
	if (argc != 1) {
		fprintf(stderr, "usage: cordon doctor\n");
		return 2;
	}
	if (config_load(&c, NULL, err, sizeof(err)) < 0) {
		printf("FAIL config: %s\n     hint: fix the file or unset "
		    "CORDON_CONFIG\n", err);
		return 1;
	}
	n = doctor_run(&c, NULL, lines, DOCTOR_MAX_LINES);
	for (size_t i = 0; i < n; i++) {
		printf("%-4s %s: %s\n", doctor_verdict_name(lines[i].verdict),
		    lines[i].what, lines[i].detail);
		if (lines[i].verdict == DOCTOR_FAIL) {
			printf("     hint: %s\n", lines[i].hint);
			failed++;
		}
	}
	return failed ? 1 : 0;
}
