/*
 * Subcommands of the `cordon` CLI. Each lives beside the part it drives
 * (runner/cmd_run.c, allowlist/cmd_allowlist.c, ...) and is linked into the
 * executable only. Each takes argv after the subcommand name (argv[0] is the
 * subcommand) and returns the process exit status.
 */
#ifndef CORDON_RUNNER_CMD_H
#define CORDON_RUNNER_CMD_H

int cmd_run(int argc, char **argv);
int cmd_probe(int argc, char **argv);
int cmd_net(int argc, char **argv);
int cmd_allowlist(int argc, char **argv);
int cmd_gc(int argc, char **argv);
int cmd_kill_all(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_image(int argc, char **argv);
int cmd_mcp(int argc, char **argv);
int cmd_serve(int argc, char **argv);

#endif
