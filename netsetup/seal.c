/*
 * The per-container seal for `cordon run --net proxy`: checks that the
 * container is a running proxy-mode one, then loads the seal rules
 * (params.c) into its network namespace from the host with nsenter.
 */
#include "netsetup/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Sandbox keys are Docker's netns bind mounts; nothing else is entered. */
static bool
sandbox_key_ok(const char *k)
{
	return (strncmp(k, "/var/run/docker/netns/", 22) == 0 ||
	    strncmp(k, "/run/docker/netns/", 18) == 0) &&
	    strstr(k, "..") == NULL && strchr(k, ' ') == NULL;
}

int
netsetup_sandbox_seal(const struct config *c,
    const struct netsetup_endpoint *ep, const char *container, char *err,
    size_t errlen)
{
	const char *inspect[] = { c->docker, "inspect", "--format",
	    "{{.State.Running}} {{.HostConfig.NetworkMode}} "
	    "{{.NetworkSettings.SandboxKey}}", "--", container, NULL };
	char *out = NULL, running[16], mode[80], key[256], nsarg[280];
	char rules[512];
	int rc;

	rc = netsetup_exec(inspect, NULL, &out, NULL, err, errlen);
	if (rc != 0) {
		free(out);
		return rc == -EIO ? -ENOENT : rc;
	}
	if (sscanf(out, "%15s %79s %255s", running, mode, key) != 3 ||
	    strcmp(running, "true") != 0 ||
	    strcmp(mode, c->egress_network) != 0 || !sandbox_key_ok(key)) {
		snprintf(err, errlen, "container %s is not a running "
		    "proxy-mode container (inspect: %.120s)", container, out);
		free(out);
		return -EINVAL;
	}
	free(out);
	snprintf(nsarg, sizeof(nsarg), "--net=%s", key);
	for (int fam = 4; fam <= 6; fam += 2) {
		const char *restore[] = { "nsenter", nsarg, "--",
		    fam == 4 ? "iptables-restore" : "ip6tables-restore", "-w",
		    "--noflush", NULL };
		if ((rc = netsetup_seal_rules(fam, ep, rules,
		    sizeof(rules))) < 0)
			return rc;
		rc = netsetup_exec(restore, rules, NULL, NULL, err, errlen);
		if (rc != 0) {
			char why[300];
			snprintf(why, sizeof(why), "%s", err);
			snprintf(err, errlen, "sealing %s (%s): %s", container,
			    restore[3], why);
			return rc;
		}
	}
	return 0;
}
