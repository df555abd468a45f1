/*
 * The parameters of the egress set-up, derived from the config (and from
 * `net up --subnet`, recorded in the state directory): what the network,
 * the firewall rules (fw.h), the proxy and the runner's calls are built
 * from. Pure; netsetup.h includes it.
 */
#ifndef CORDON_NETSETUP_PARAMS_H
#define CORDON_NETSETUP_PARAMS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/config.h"

/* Everything derived from the config (and from `net up --subnet`, which
 * is recorded in the state directory so later calls agree). */
struct netsetup_params {
	char docker[256];
	char network[64];
	char bridge[16];
	char subnet[32];		/* normalised a.b.c.d/n */
	char gateway[16];		/* first host address of subnet */
	int port;			/* proxy port on the gateway */
	int tport;			/* its transparent port (nat REDIRECT
					   of every other TCP connection) */
	int dns_port;			/* its DNS port (REDIRECT of UDP and
					   TCP 53 to any address) */
	char proxy_user[32];
	char state_dir[300];		/* <state_dir>/net-<bridge> */
	char ca_dir[300];		/* <state_dir>/egress-ca: the egress
					   CA (TLS inspection), made once by
					   net up, kept by net down */
	char chain_in[32];		/* CORDON-IN-<bridge> */
	char chain_fwd[32];		/* CORDON-FWD-<bridge> */
	char chain_nat[32];		/* CORDON-NAT-<bridge> (nat table) */
};

/*
 * Parses an IPv4 CIDR with a prefix of 8-29 and no host bits set; writes
 * the normalised form and the gateway (network + 1). Pure. 0 or -EINVAL.
 */
int netsetup_subnet_parse(const char *cidr, char norm[32], char gateway[16]);

/*
 * Fills p from c; subnet (may be NULL) overrides c->egress_subnet. Pure.
 * 0 or -EINVAL with a reason in err.
 */
int netsetup_params_init(struct netsetup_params *p, const struct config *c,
    const char *subnet, char *err, size_t errlen);

/* Whether s is a Docker network or Linux interface name we are willing to
 * put on an argv or into a chain name: 1 to max of [A-Za-z0-9_.-], not
 * starting with '-'. Pure. */
bool netsetup_name_ok(const char *s, size_t max);

#endif
