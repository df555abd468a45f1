/*
 * The parameters every part of netsetup works from (params.h): the subnet
 * and gateway, names, ports and paths derived from the config. Pure.
 */
#include "netsetup/params.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"

int
netsetup_subnet_parse(const char *cidr, char norm[32], char gateway[16])
{
	char addr[INET_ADDRSTRLEN], text[INET_ADDRSTRLEN];
	const char *slash;
	struct in_addr in;
	int64_t prefix;
	uint32_t a, mask;
	size_t al;

	if (cidr == NULL || (slash = strchr(cidr, '/')) == NULL)
		return -EINVAL;
	al = (size_t)(slash - cidr);
	if (al == 0 || al >= sizeof(addr))
		return -EINVAL;
	memcpy(addr, cidr, al);
	addr[al] = '\0';
	if (inet_pton(AF_INET, addr, &in) != 1 ||
	    util_parse_i64(slash + 1, 8, 29, &prefix) < 0)
		return -EINVAL;
	a = ntohl(in.s_addr);
	mask = 0xffffffffu << (32 - prefix);
	if ((a & ~mask) != 0)
		return -EINVAL;
	if (inet_ntop(AF_INET, &in, text, sizeof(text)) == NULL)
		return -EINVAL;
	snprintf(norm, 32, "%s/%d", text, (int)prefix);
	in.s_addr = htonl(a + 1);
	if (inet_ntop(AF_INET, &in, gateway, 16) == NULL)
		return -EINVAL;
	return 0;
}

bool
netsetup_name_ok(const char *s, size_t max)
{
	size_t n = strlen(s);

	return n > 0 && n <= max && s[0] != '-' &&
	    strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789_.-") == n;
}

int
netsetup_params_init(struct netsetup_params *p, const struct config *c,
    const char *subnet, char *err, size_t errlen)
{
	const char *sn = subnet != NULL ? subnet : c->egress_subnet;

	memset(p, 0, sizeof(*p));
	if (!netsetup_name_ok(c->egress_network, 63)) {
		snprintf(err, errlen, "egress_network '%s': bad name",
		    c->egress_network);
		return -EINVAL;
	}
	/* Linux allows 15 bytes; the chain names must fit in 28. */
	if (!netsetup_name_ok(c->egress_bridge, 15)) {
		snprintf(err, errlen, "egress_bridge '%s': want 1-15 of "
		    "[A-Za-z0-9_.-]", c->egress_bridge);
		return -EINVAL;
	}
	if (netsetup_subnet_parse(sn, p->subnet, p->gateway) < 0) {
		snprintf(err, errlen, "subnet '%s': want an IPv4 network "
		    "a.b.c.d/8..29 with no host bits set", sn);
		return -EINVAL;
	}
	if (!netsetup_name_ok(c->proxy_user, 31)) {
		snprintf(err, errlen, "proxy_user '%s': bad name", c->proxy_user);
		return -EINVAL;
	}
	/* config_parse checks them too; a config built in code may not be. */
	if (c->proxy_port < 1 || c->proxy_port > 65535 ||
	    c->proxy_transparent_port < 1 ||
	    c->proxy_transparent_port > 65535 || c->proxy_dns_port < 1 ||
	    c->proxy_dns_port > 65535 ||
	    c->proxy_port == c->proxy_transparent_port ||
	    c->proxy_port == c->proxy_dns_port ||
	    c->proxy_transparent_port == c->proxy_dns_port) {
		snprintf(err, errlen, "proxy_port, proxy_transparent_port and "
		    "proxy_dns_port: want three different ports 1-65535");
		return -EINVAL;
	}
	snprintf(p->docker, sizeof(p->docker), "%s", c->docker);
	snprintf(p->network, sizeof(p->network), "%s", c->egress_network);
	snprintf(p->bridge, sizeof(p->bridge), "%s", c->egress_bridge);
	snprintf(p->proxy_user, sizeof(p->proxy_user), "%s", c->proxy_user);
	p->port = (int)c->proxy_port;
	p->tport = (int)c->proxy_transparent_port;
	p->dns_port = (int)c->proxy_dns_port;
	snprintf(p->state_dir, sizeof(p->state_dir), "%s/net-%s", c->state_dir,
	    c->egress_bridge);
	if ((size_t)snprintf(p->ca_dir, sizeof(p->ca_dir), "%s/egress-ca",
	    c->state_dir) >= sizeof(p->ca_dir) - 16) {
		snprintf(err, errlen, "state_dir '%s': too long", c->state_dir);
		return -EINVAL;
	}
	snprintf(p->chain_in, sizeof(p->chain_in), "CORDON-IN-%s", p->bridge);
	snprintf(p->chain_fwd, sizeof(p->chain_fwd), "CORDON-FWD-%s",
	    p->bridge);
	snprintf(p->chain_nat, sizeof(p->chain_nat), "CORDON-NAT-%s",
	    p->bridge);
	return 0;
}
