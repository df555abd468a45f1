/*
 * `cordon doctor`: prints the checklist, one line per check, and exits 1
 * if any check failed (warnings do not).
 */
#include <stdio.h>

#include <stdbool.h>
#include <string.h>

#include "common/config.h"
#include "netsetup/netsetup.h"
#include "runner/doctor.h"
#include "cli/cmd.h"

/* Egress: INFO when nothing of it exists, OK when all is in place, FAIL
 * naming the first drift when it is partly there. */
static bool
doctor_egress(const struct config *c, struct doctor_line *l)
{
	struct netsetup_params p;
	char err[200];
	cJSON *st = NULL;
	const cJSON *drift, *first;
	int n;
	bool present;

	snprintf(l->what, sizeof(l->what), "egress (%s)", c->egress_network);
	if (netsetup_params_load(&p, c, err, sizeof(err)) < 0 ||
	    netsetup_status(&p, &st, err, sizeof(err)) < 0) {
		l->verdict = DOCTOR_FAIL;
		snprintf(l->detail, sizeof(l->detail), "cannot take its status: "
		    "%.200s", err);
		snprintf(l->hint, sizeof(l->hint), "check dockerd and iptables");
		return true;
	}
	drift = cJSON_GetObjectItemCaseSensitive(st, "drift");
	n = cJSON_GetArraySize(drift);
	present = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(st, "network"), "present"));
	first = cJSON_GetArrayItem(drift, 0);
	if (!present && n > 0 && cJSON_IsString(first) &&
	    strcmp(first->valuestring, "network missing") == 0 &&
	    !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(st, "proxy"), "listening"))) {
		cJSON_Delete(st);
		return false;	/* never brought up: fine unless --net proxy */
	}
	if (n == 0) {
		l->verdict = DOCTOR_OK;
		snprintf(l->detail, sizeof(l->detail), "network, firewall chains "
		    "and proxy on %s:%d in place", p.gateway, p.port);
	} else {
		l->verdict = DOCTOR_FAIL;
		snprintf(l->detail, sizeof(l->detail), "%d drift(s), first: %s",
		    n, cJSON_IsString(first) ? first->valuestring : "?");
		snprintf(l->hint, sizeof(l->hint), "run 'cordon net up' (it "
		    "repairs what is missing); 'cordon net status' lists all");
	}
	cJSON_Delete(st);
	return true;
}

int
cmd_doctor(int argc, char **argv)
{
	struct doctor_line lines[DOCTOR_MAX_LINES];
	struct config c;
	char err[512];
	size_t n;
	int failed = 0;

	if (cmd_help_asked(argc, argv)) {
		printf("usage: cordon doctor   (check the host set-up, with "
		    "hints)\n");
		return 0;
	}
	if (argc != 1) {
		fprintf(stderr, "usage: cordon doctor\n");
		return 2;
	}
	if (config_load(&c, NULL, err, sizeof(err)) < 0) {
		printf("FAIL config: %s\n     hint: fix the file or unset "
		    "CORDON_CONFIG\n", err);
		return 1;
	}
	n = doctor_run(&c, doctor_egress, lines, DOCTOR_MAX_LINES);
	for (size_t i = 0; i < n; i++) {
		printf("%-4s %s: %s\n", doctor_verdict_name(lines[i].verdict),
		    lines[i].what, lines[i].detail);
		if (lines[i].verdict == DOCTOR_FAIL ||
		    lines[i].verdict == DOCTOR_WARN)
			printf("     hint: %s\n", lines[i].hint);
		/* A warning is for a person; only failures fail. */
		if (lines[i].verdict == DOCTOR_FAIL)
			failed++;
	}
	return failed ? 1 : 0;
}
