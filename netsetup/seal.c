/*
 * The per-container seal for `cordon run --net proxy`: checks that the
 * container is a running proxy-mode one (and learns its address on the
 * egress network from the same inspect), then loads the seal rules
 * (params.c) into its network namespace from the host with nsenter.
 */
#include "netsetup/internal.h"

#include <arpa/inet.h>
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

/* The container's IPv4 address on the egress network, or "" (the
 * network's name is checked by netsetup_params_init's rules: no quote
 * can end the template string). */
static int
seal_format(const struct config *c, char *buf, size_t len)
{
	int n = snprintf(buf, len, "{{.State.Running}} "
	    "{{.HostConfig.NetworkMode}} {{.NetworkSettings.SandboxKey}} "
	    "{{with index .NetworkSettings.Networks \"%s\"}}{{.IPAddress}}"
	    "{{end}}", c->egress_network);

	if (n < 0 || (size_t)n >= len || strpbrk(c->egress_network,
	    "\"\\{} ") != NULL)
		return -EINVAL;
	return 0;
}

int
netsetup_sandbox_seal(const struct config *c,
    const struct netsetup_endpoint *ep, const char *container, char *addr,
    char *err, size_t errlen)
{
	char fmt[256];
	const char *inspect[] = { c->docker, "inspect", "--format", fmt, "--",
	    container, NULL };
	char *out = NULL, running[16], mode[80], key[256], nsarg[280];
	char ip[64] = "", rules[512];
	struct in_addr in;
	int rc, n;

	if (addr != NULL)
		addr[0] = '\0';
	if (seal_format(c, fmt, sizeof(fmt)) < 0) {
		snprintf(err, errlen, "egress_network '%.80s': bad name",
		    c->egress_network);
		return -EINVAL;
	}
	rc = netsetup_exec(inspect, NULL, &out, NULL, err, errlen);
	if (rc != 0) {
		free(out);
		return rc == -EIO ? -ENOENT : rc;
	}
	n = sscanf(out, "%15s %79s %255s %63s", running, mode, key, ip);
	if (n < 3 || strcmp(running, "true") != 0 ||
	    strcmp(mode, c->egress_network) != 0 || !sandbox_key_ok(key) ||
	    (addr != NULL && (n != 4 || inet_pton(AF_INET, ip, &in) != 1 ||
	    strlen(ip) >= NETSETUP_ADDR_MAX))) {
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
	if (addr != NULL)
		snprintf(addr, NETSETUP_ADDR_MAX, "%s", ip);
	return 0;
}
