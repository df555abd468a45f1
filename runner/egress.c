/*
 * Egress per run (runner.h): the runner's side of the proxy's control
 * socket. Placeholder until the registration lands: it says so.
 */
#include "runner/runner.h"

#include <errno.h>
#include <stdio.h>

int
runner_egress_policies(const struct config *c, cJSON **out, char *err,
    size_t errlen)
{
	(void)c;
	*out = NULL;
	snprintf(err, errlen, "egress policies: not implemented yet");
	return -ENOSYS;
}
