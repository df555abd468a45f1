/*
 * cordon-proxy: the allowlisting egress proxy daemon. Not implemented yet:
 * it refuses to start rather than pretend to filter anything.
 */
#include <stdio.h>

int
main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "cordon-proxy: not implemented yet\n");
	return 2;
}
