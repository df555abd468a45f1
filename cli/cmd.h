/*
 * Subcommands of the `cordon` CLI, one cli/cmd_*.c each, linked into the
 * executable only. Each takes argv after the subcommand name (argv[0] is
 * the subcommand) and returns the process exit status. Libraries never
 * include this header.
 */
#ifndef CORDON_CLI_CMD_H
#define CORDON_CLI_CMD_H

#include <stdbool.h>

/* True when argv[1..] holds "--help" or "-h": the subcommand then prints
 * its usage on stdout and exits 0. */
bool cmd_help_asked(int argc, char **argv);

int cmd_run(int argc, char **argv);
int cmd_probe(int argc, char **argv);
int cmd_net(int argc, char **argv);
int cmd_allowlist(int argc, char **argv);
int cmd_allowlist_replay(int argc, char **argv);
/* `cordon net reload --replay`: replays access_log (and its rotated
 * files .1 to .keep) under allowlist and prints a summary on stdout. 0,
 * or -1 after saying why on stderr. */
int cmd_allowlist_replay_log(const char *allowlist, const char *access_log,
    unsigned keep);
int cmd_allowlist_suggest(int argc, char **argv);
int cmd_gc(int argc, char **argv);
int cmd_kill_all(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_image(int argc, char **argv);
int cmd_mcp(int argc, char **argv);
int cmd_serve(int argc, char **argv);

#endif
