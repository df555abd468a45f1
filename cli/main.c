/*
 * cordon: the command-line front end. Dispatches to one subcommand per
 * part; subcommands that have not landed yet say so and exit 2 instead of
 * pretending.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "cli/cmd.h"

struct command {
	const char *name;
	int (*fn)(int, char **);
	const char *usage;
};

static const struct command commands[] = {
	{ "run", cmd_run, "run untrusted code under gVisor (code on stdin)" },
	{ "probe", cmd_probe, "prove every sandbox control holds" },
	{ "net", cmd_net, "up|down|status|reload: the egress network, firewall and proxy" },
	{ "allowlist", cmd_allowlist, "check|explain|replay|suggest: lint, explain, replay, suggest" },
	{ "gc", cmd_gc, "remove expired or orphaned Cordon containers" },
	{ "kill-all", cmd_kill_all, "remove every Cordon container now" },
	{ "doctor", cmd_doctor, "check the host set-up, with hints" },
	{ "image", cmd_image, "build|show: the pinned sandbox image" },
	{ "serve", cmd_serve, "HTTP/JSON service: runs, tenants, warm pool, kill switch" },
	{ "mcp", cmd_mcp, "Model Context Protocol server on stdio (tool run_code)" },
};

bool
cmd_help_asked(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return true;
	return false;
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: cordon COMMAND [ARGS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].usage);
	fprintf(f, "  %-10s %s\n", "version", "print the version");
}

int
main(int argc, char **argv)
{
	log_init("cordon", LOG_LEVEL_WARN);
	/* Writes to exited children must fail with EPIPE, not kill us. */
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "version") == 0 || strcmp(argv[1], "--version") == 0) {
		printf("cordon %s\n", CORDON_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "cordon: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
