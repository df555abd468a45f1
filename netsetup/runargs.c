/*
 * Pure parts of netsetup.h for the runner: the proxy's control socket
 * path, the docker run options for a proxy-mode job, the sandbox's
 * resolv.conf, and the iptables-restore text that seals one container's
 * network namespace.
 */
#include "netsetup/netsetup.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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
	    ep->port < 1 || ep->port > 65535 ||
	    !netsetup_name_ok(c->egress_network, 63) ||
	    !netsetup_name_ok(c->runtime_egress, 63))
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
