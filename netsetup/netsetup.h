/*
 * Netsetup: the egress network for proxy-mode jobs. One Docker bridge
 * network (not internal: its sandboxes have a default route to the
 * gateway), host firewall chains owned by Cordon that redirect every TCP
 * connection and DNS query from the bridge to the proxy on the gateway
 * (nat) and accept nothing else from it nor forward anything (filter), the
 * sandbox's resolv.conf, and the supervised cordon-proxy. Also what the
 * runner needs for `cordon run --net proxy`: a readiness check, the extra
 * docker run arguments, and the per-container seal that takes Docker's
 * embedded DNS away from the sandbox.
 * A library: it never prints and never exits.
 */
#ifndef CORDON_NETSETUP_NETSETUP_H
#define CORDON_NETSETUP_NETSETUP_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "common/config.h"
#include "netsetup/params.h"

#define NETSETUP_LABEL "cordon.netsetup"	/* on networks we create */

/* Like netsetup_params_init, then takes the subnet recorded by the last
 * `net up` if there is one. */
int netsetup_params_load(struct netsetup_params *p, const struct config *c,
    char *err, size_t errlen);

/* ---- `cordon net up|down|status` ---- */

struct netsetup_up_opts {
	const char *allowlist;		/* file or dir; NULL: shipped default */
	const char *proxy_bin;		/* cordon-proxy executable */
	const char *const *proxy_args;	/* extra proxy arguments, or NULL */
	size_t nproxy_args;
	const char *secrets;		/* config egress_secrets, or NULL */
	/* config egress_source_max_pending (--source-max-pending). */
	int source_max_pending;
	/* config egress_access_log (NULL: STATE_DIR/access.log), and its
	 * rotation (--access-log-max, 0: none; --access-log-keep). */
	const char *access_log;
	uint64_t access_log_max;
	int access_log_keep;
};

/*
 * Checks `net up --proxy-arg` values: none may name (or abbreviate, as
 * getopt_long allows) an option that up sets itself (--listen,
 * --allowlist, --control, --user, ...) or one that stops the proxy from
 * serving (--help, --check, --make-ca, --ca-roots), and none may be "--".
 * The proxy's --check judges the rest. Pure. 0 or -EINVAL with a reason.
 */
int netsetup_proxy_args_check(const char *const *args, size_t n, char *err,
    size_t errlen);

/*
 * Brings everything up or repairs what is missing. Everything is checked
 * first (netsetup_up_check: the proxy's arguments and binary, the
 * allowlist, the proxy's --check), before anything is created; when a
 * later step fails on a host where nothing of the set-up existed before,
 * what this call created is removed again (as by netsetup_down). *changes
 * receives a malloc'd, newline-separated list of what was done ("" when
 * already up; caller frees), also on failure (what was done before it, and
 * undone). 0 or a negative errno with a reason in err.
 */
int netsetup_up(const struct netsetup_params *p,
    const struct netsetup_up_opts *o, char **changes, char *err,
    size_t errlen);

/* Removes exactly what up added. *changes as for netsetup_up. */
int netsetup_down(const struct netsetup_params *p, char **changes,
    char *err, size_t errlen);

/*
 * Inspects everything. *out receives a JSON object (caller cJSON_Deletes)
 * with "ok", "set_up" (netsetup_status_set_up) and a "drift" array naming
 * each problem. 0 when the status could be taken (look at "ok"), or a
 * negative errno.
 */
int netsetup_status(const struct netsetup_params *p, cJSON **out, char *err,
    size_t errlen);

/*
 * Whether any part of what `up` creates is there in a status object
 * (netsetup_status's): the network, one of Cordon's chains or rules of
 * either family, the sandbox's resolv.conf, a proxy supervisor, the
 * control socket, or the state `up` recorded. false: nothing is, `up` was
 * never run (or `down` removed it all). Pure.
 */
bool netsetup_status_set_up(const cJSON *st);

/* ---- for the runner: `cordon run --net proxy` ---- */

/* A unix socket path: sun_path holds 108 bytes with its NUL. */
#define NETSETUP_CONTROL_MAX 108

/* Where the sandbox finds the proxy, and where the runner registers its
 * runs (the proxy's control socket, root only). */
struct netsetup_endpoint {
	char gateway[16];
	int port;
	char control[NETSETUP_CONTROL_MAX];
};

/* The proxy's control socket for p: <state_dir>/control.sock. Pure. 0, or
 * -ENAMETOOLONG when it does not fit a unix socket address. */
int netsetup_control_path(const struct netsetup_params *p, char *buf,
    size_t len);

/*
 * Whether the egress network, the firewall and the proxy are up and right
 * (the same checks as status, ~0.1-0.3 s; the proxy's control socket must
 * exist). Returns 0 and fills ep (may be NULL), or -ENETDOWN with a
 * one-line reason ("... run 'cordon net up'") in err, or another negative
 * errno.
 */
int netsetup_ready(const struct config *c, struct netsetup_endpoint *ep,
    char *err, size_t errlen);

/* The endpoint netsetup_ready fills, without its checks (from the config
 * and net.json alone: no process): for a run that checks the network
 * while its container starts. 0 or a negative errno with err. */
int netsetup_endpoint_load(const struct config *c,
    struct netsetup_endpoint *ep, char *err, size_t errlen);

#define NETSETUP_RUN_ARGS_MAX 24

/* What a proxy-mode `docker run` needs besides the hardening set. All
 * strings point into buf. */
struct netsetup_run_args {
	const char *network;		/* for --network= (config egress_network) */
	const char *runtime;		/* for --runtime= (config runtime_egress) */
	size_t argc;			/* further options, before the image: */
	const char *argv[NETSETUP_RUN_ARGS_MAX + 1];	/* NULL-terminated */
	char buf[1024];
	/* The CA bundle (system roots + the egress CA) to mount read-only
	 * in the container: <state_dir>/egress-ca/ca-bundle.pem. */
	char ca_bundle[320];
	/* The resolv.conf to mount read-only at /etc/resolv.conf:
	 * <state_dir>/net-<bridge>/resolv.conf, naming the proxy's resolver
	 * on the gateway (netsetup_resolv_conf_text). */
	char resolv_conf[320];
};

/*
 * The docker run settings for a proxy-mode job: network and runtime, the
 * CA bundle and resolv.conf to mount, and in argv: --dns=<gateway>
 * (Docker's embedded DNS, which the sandbox never reaches: the seal rejects
 * it under --network=host, netstack cannot reach it, would forward only to
 * the proxy's resolver) and the pairs "--env" "K=V" for
 * NO_PROXY= and no_proxy= (empty). No HTTP(S)_PROXY: the proxy URL carries
 * the run's credential, which never goes on an argv (ps) or into the
 * container's configuration (docker inspect); the runner hands it over on
 * stdin. Pure. 0, or -EINVAL/-ENOSPC with out zeroed.
 */
int netsetup_run_args(const struct config *c,
    const struct netsetup_endpoint *ep, struct netsetup_run_args *out);

/*
 * Seals one running proxy-mode container: in the container's network
 * namespace (from the host, with nsenter), packets to Docker's embedded DNS
 * 127.0.0.11 are rejected and nothing leaves except loopback, TCP (to any
 * address: the host redirects it to the proxy) and DNS (UDP 53, to any
 * address: redirected to the proxy's resolver likewise); IPv6 only
 * loopback. With runsc --network=host these rules apply to the sandbox;
 * under runsc's own netstack they do nothing (gVisor issue 7168) and the
 * host's rules alone hold the boundary. Call after the container is
 * running and before the job's code is written to its stdin; on failure,
 * remove the container.
 * addr (may be NULL; NETSETUP_ADDR_MAX bytes) receives the container's
 * IPv4 address on the egress network, from the same `docker inspect`: the
 * source address the proxy sees. 0 or a negative errno with a reason in
 * err.
 */
#define NETSETUP_ADDR_MAX 16
int netsetup_sandbox_seal(const struct config *c,
    const struct netsetup_endpoint *ep, const char *container, char *addr,
    char *err, size_t errlen);

/* What the seal reads of a container, from `docker inspect` or the
 * Engine API's GET /containers/NAME/json. */
struct netsetup_sandbox_view {
	bool running;			/* State.Running */
	char mode[80];			/* HostConfig.NetworkMode */
	char key[256];			/* NetworkSettings.SandboxKey */
	char ip[64];			/* its IPv4 address on c's egress
					 * network; "" when not on it */
};

/* The view from the Engine API's inspect JSON (len bytes) of a container,
 * its address on c's egress network. Pure. 0, or -EINVAL (not an
 * inspect object, a field of the wrong type or too long). */
int netsetup_sandbox_view_parse(const struct config *c, const char *json,
    size_t len, struct netsetup_sandbox_view *v);

/* netsetup_sandbox_seal with the view already read: the same checks (a
 * running container on the egress network, a Docker netns key, an IPv4
 * address when addr is wanted), then the same rules; the IPv4 and IPv6
 * restores run at once. */
int netsetup_sandbox_seal_view(const struct config *c,
    const struct netsetup_endpoint *ep, const char *container,
    const struct netsetup_sandbox_view *v, char *addr, char *err,
    size_t errlen);

/* ---- `cordon net reload` ---- */

/* The allowlist path the running proxy was started with (its --allowlist
 * argument as recorded in net.json by the last `up`). 0, -ENOENT when
 * there is no record, -ENAMETOOLONG. */
int netsetup_proxy_access_log(const struct netsetup_params *p, char *buf,
    size_t len);
int netsetup_proxy_allowlist(const struct netsetup_params *p, char *buf,
    size_t len);

/* Tells the running proxy to reload its allowlist (SIGHUP to the proxy
 * process: the pid file's, or the systemd unit's main pid). 0, or -ESRCH
 * with a reason when no proxy runs. */
int netsetup_proxy_reload(const struct netsetup_params *p, char *err,
    size_t errlen);

/* The sandbox's resolver: `net up` writes NETSETUP_RESOLV_CONF in the
 * bridge's state dir (0644), and every proxy-mode container has it
 * read-only at /etc/resolv.conf (netsetup_run_args). */
#define NETSETUP_RESOLV_CONF "resolv.conf"

/* Pure: its text, "nameserver GATEWAY\noptions edns0 ndots:1\n": the
 * proxy's resolver on the gateway, the only one; edns0 so that glibc
 * sends an OPT record and the answer can carry an RFC 8914 Extended DNS
 * Error; ndots:1 (glibc's default) so a dotted name is asked as given
 * first. 0, -EINVAL (gateway not an IPv4 address) or -ENOSPC. */
int netsetup_resolv_conf_text(const char *gateway, char *buf, size_t len);

/* The iptables-restore input used by the seal, for one family (4 or 6).
 * Pure. 0 or -ENOSPC. */
int netsetup_seal_rules(int family, const struct netsetup_endpoint *ep,
    char *buf, size_t len);

#endif
