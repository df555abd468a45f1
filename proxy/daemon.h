/*
 * cordon-proxy's two programs: the privileged parent (parent.c), which
 * main.c runs, and the network child (child.c), which the parent execs
 * as `cordon-proxy --network-child SPEC ARGS...`. The split, and what
 * each holds, is in proxy/README.md ("Privilege separation").
 */
#ifndef CORDON_PROXY_DAEMON_H
#define CORDON_PROXY_DAEMON_H

int proxy_parent_main(int argc, char **argv);
int proxy_child_main(int argc, char **argv);

#endif
