/*
 * `cordon gc` (remove expired or orphaned Cordon containers) and `cordon
 * kill-all` (remove every Cordon container now): both print how many were
 * removed.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/config.h"
#include "cli/cmd.h"
#include "runner/runner.h"

static int
gc_common(int argc, char **argv, bool all)
{
	struct config c;
	char err[512];
	int removed = 0;

	if (cmd_help_asked(argc, argv)) {
		printf("usage: cordon %s   (%s)\n", argv[0], all ?
		    "remove every Cordon container now" : "remove expired or "
		    "orphaned Cordon containers");
		return 0;
	}
	if (argc > 1) {
		fprintf(stderr, "usage: cordon %s\n", argv[0]);
		return 2;
	}
	if (config_load(&c, NULL, err, sizeof(err)) < 0) {
		fprintf(stderr, "cordon %s: config: %s\n", argv[0], err);
		return 1;
	}
	if (runner_gc(&c, all, &removed, err, sizeof(err)) < 0) {
		fprintf(stderr, "cordon %s: %s (removed %d)\n", argv[0], err,
		    removed);
		return 1;
	}
	printf("removed %d container%s\n", removed, removed == 1 ? "" : "s");
	return 0;
}

int
cmd_gc(int argc, char **argv)
{
	return gc_common(argc, argv, false);
}

int
cmd_kill_all(int argc, char **argv)
{
	return gc_common(argc, argv, true);
}
