/*
 * Pure parts of netsetup.h: the subnet and gateway, the parameters derived
 * from the config, the docker run options for a proxy-mode job, the
 * sandbox's resolv.conf, and the iptables-restore text that seals one
 * container's network namespace.
 */
#include "netsetup/netsetup.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
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

/* Docker network and Linux interface names we are willing to put on an
 * argv or into a chain name. */
static bool
name_ok(const char *s, size_t max)
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
	if (!name_ok(c->egress_network, 63)) {
		snprintf(err, errlen, "egress_network '%s': bad name",
		    c->egress_network);
		return -EINVAL;
	}
	/* Linux allows 15 bytes; the chain names must fit in 28. */
	if (!name_ok(c->egress_bridge, 15)) {
		snprintf(err, errlen, "egress_bridge '%s': want 1-15 of "
		    "[A-Za-z0-9_.-]", c->egress_bridge);
		return -EINVAL;
	}
	if (netsetup_subnet_parse(sn, p->subnet, p->gateway) < 0) {
		snprintf(err, errlen, "subnet '%s': want an IPv4 network "
		    "a.b.c.d/8..29 with no host bits set", sn);
		return -EINVAL;
	}
	if (!name_ok(c->proxy_user, 31)) {
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

/* Adds one formatted argument copied into out->buf. */
static int args_addf(struct netsetup_run_args *out, size_t *used,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int
args_addf(struct netsetup_run_args *out, size_t *used, const char *fmt, ...)
{
	char *dst = out->buf + *used;
	size_t left = sizeof(out->buf) - *used;
	va_list ap;
	int n;

	if (out->argc == NETSETUP_RUN_ARGS_MAX)
		return -ENOSPC;
	va_start(ap, fmt);
	n = vsnprintf(dst, left, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= left)
		return -ENOSPC;
	out->argv[out->argc++] = dst;
	*used += (size_t)n + 1;
	return 0;
}

int
netsetup_control_path(const struct netsetup_params *p, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/control.sock", p->state_dir);

	if (n < 0 || (size_t)n >= len || n >= NETSETUP_CONTROL_MAX) {
		if (len > 0)
			buf[0] = '\0';
		return -ENAMETOOLONG;
	}
	return 0;
}

int
netsetup_run_args(const struct config *c, const struct netsetup_endpoint *ep,
    struct netsetup_run_args *out)
{
	struct in_addr in;
	size_t used = 0;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (ep == NULL || inet_pton(AF_INET, ep->gateway, &in) != 1 ||
	    ep->port < 1 || ep->port > 65535 || !name_ok(c->egress_network, 63) ||
	    !name_ok(c->runtime_egress, 63))
		return -EINVAL;
	rc |= args_addf(out, &used, "%s", c->egress_network);
	rc |= args_addf(out, &used, "%s", c->runtime_egress);
	/* The sandbox's resolv.conf is ours (resolv_conf below, mounted over
	 * the one Docker writes, which then names no 127.0.0.11), but Docker
	 * still runs its embedded DNS for the container; its upstream becomes
	 * the gateway, so even a query that reached it would only ever be
	 * forwarded to the proxy's resolver, never out. */
	rc |= args_addf(out, &used, "--dns=%s", ep->gateway);
	/* HTTP(S)_PROXY carry the run's credential: they come on stdin
	 * (runner/egress.c), never here. */
	rc |= args_addf(out, &used, "--env");
	rc |= args_addf(out, &used, "NO_PROXY=");
	rc |= args_addf(out, &used, "--env");
	rc |= args_addf(out, &used, "no_proxy=");
	if (rc != 0) {
		memset(out, 0, sizeof(*out));
		return -ENOSPC;
	}
	if ((size_t)snprintf(out->ca_bundle, sizeof(out->ca_bundle),
	    "%s/egress-ca/ca-bundle.pem", c->state_dir) >=
	    sizeof(out->ca_bundle) ||
	    (size_t)snprintf(out->resolv_conf, sizeof(out->resolv_conf),
	    "%s/net-%s/%s", c->state_dir, c->egress_bridge,
	    NETSETUP_RESOLV_CONF) >= sizeof(out->resolv_conf)) {
		memset(out, 0, sizeof(*out));
		return -ENOSPC;
	}
	/* The first two were network and runtime: move them out of argv. */
	out->network = out->argv[0];
	out->runtime = out->argv[1];
	out->argc -= 2;
	memmove(out->argv, out->argv + 2, out->argc * sizeof(out->argv[0]));
	out->argv[out->argc] = NULL;
	return 0;
}

int
netsetup_resolv_conf_text(const char *gateway, char *buf, size_t len)
{
	struct in_addr in;
	int n;

	if (len > 0)
		buf[0] = '\0';
	if (gateway == NULL || inet_pton(AF_INET, gateway, &in) != 1)
		return -EINVAL;
	n = snprintf(buf, len, "nameserver %s\noptions edns0 ndots:1\n",
	    gateway);
	if (n < 0 || (size_t)n >= len) {
		if (len > 0)
			buf[0] = '\0';
		return -ENOSPC;
	}
	return 0;
}

int
netsetup_seal_rules(int family, const struct netsetup_endpoint *ep,
    char *buf, size_t len)
{
	int n;

	if (family == 6) {
		n = snprintf(buf, len, "*filter\n"
		    "-A OUTPUT -o lo -j ACCEPT\n"
		    "-A OUTPUT -j REJECT\n"
		    "COMMIT\n");
	} else {
		if (ep == NULL)
			return -EINVAL;
		/* Order matters: 127.0.0.11 is on lo, so it goes first. TCP
		 * and DNS may leave for any address: the host's nat rules send
		 * them to the proxy's transparent and DNS listeners on the
		 * gateway (ep->gateway) before routing, and its filter rules
		 * drop anything else; what this seal adds is that nothing
		 * else even leaves (UDP to other ports, ICMP) and that Docker's
		 * embedded DNS is out of reach. */
		n = snprintf(buf, len, "*filter\n"
		    "-A OUTPUT -d 127.0.0.11/32 -j REJECT\n"
		    "-A OUTPUT -o lo -j ACCEPT\n"
		    "-A OUTPUT -p tcp -j ACCEPT\n"
		    "-A OUTPUT -p udp -m udp --dport 53 -j ACCEPT\n"
		    "-A OUTPUT -j REJECT\n"
		    "COMMIT\n");
	}
	if (n < 0 || (size_t)n >= len)
		return -ENOSPC;
	return 0;
}
