/*
 * cordon-proxy: the allowlisting egress proxy daemon. The process started
 * is the privileged parent (parent.c); it execs itself as the network
 * child (child.c) with `--network-child` first, which only it passes.
 */
#include <string.h>

#include "proxy/daemon.h"

int
main(int argc, char **argv)
{
	if (argc > 2 && strcmp(argv[1], "--network-child") == 0)
		return proxy_child_main(argc, argv);
	return proxy_parent_main(argc, argv);
}
