/*
 * cordon-proxy's command line: option parsing into a plain struct, with
 * every value validated (addresses, exceptions, durations, sizes). Pure: no
 * I/O, so it is unit-tested with tables; the daemon acts on the result.
 */
#ifndef CORDON_PROXY_CONFIG_H
#define CORDON_PROXY_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "proxy/addr.h"

#define CONFIG_MAX_LISTEN	8
#define CONFIG_MAX_EXCEPTIONS	64
#define CONFIG_RESOLVERS_MAX	512	/* bytes of the c-ares server list */

struct proxy_config_addr {
	struct sockaddr_storage ss;
	socklen_t len;
};

struct proxy_config {
	struct proxy_config_addr listen[CONFIG_MAX_LISTEN];
	size_t nlisten;
	const char *allowlist;		/* path (borrowed from argv) */
	const char *policy;		/* policy name, default "default";
					   standalone mode only */
	/* Run mode (--control): the control socket's path, NULL for
	 * standalone mode, and the per-run limits a register may override
	 * (bytes 0 = unlimited). */
	const char *control;
	unsigned run_max_conns;
	/* Connections from one source address not yet admitted (their
	 * first request head accepted), at most; 0: no cap. */
	unsigned source_max_pending;
	uint64_t run_bytes_up;
	uint64_t run_bytes_down;
	char resolvers[CONFIG_RESOLVERS_MAX];	/* c-ares csv, "" = system */
	struct addr_exception exceptions[CONFIG_MAX_EXCEPTIONS];
	size_t nexceptions;
	const char *access_log;		/* NULL: none; "-": stdout */
	uint64_t access_log_max;	/* rotate past this size; 0: never */
	unsigned access_log_keep;	/* rotated files kept (.1 .. .N) */
	bool has_metrics;
	struct proxy_config_addr metrics;
	/* Egress for every client: the transparent listener (connections
	 * the host firewall redirected to it) and the closed resolver. */
	bool has_transparent;
	struct proxy_config_addr transparent;
	bool has_dns_listen;
	struct proxy_config_addr dns_listen;
	long max_connections;
	int connect_timeout_ms;
	int idle_timeout_ms;
	int dns_timeout_ms;
	int header_timeout_ms;
	int grace_ms;			/* SIGTERM drain period */
	int self_refresh_ms;		/* rereading the local addresses */
	size_t max_header;		/* request/response head bytes */
	const char *user;		/* --user, or NULL */
	bool check;
	bool no_splice;			/* relay tunnels through user space */
	/* The SNI check of CONNECT tunnels: on unless
	 * --insecure-no-sni-check; the time a client has to finish its
	 * ClientHello once it started sending. */
	bool no_sni_check;
	int sni_timeout_ms;
	/* TLS inspection: the Cordon egress CA (both or neither; without
	 * them an inspected entry's CONNECT gets 502 inspect-unavailable),
	 * the roots to verify upstream with (NULL: the system's), and the
	 * secrets store the allowlist's inject= options name. */
	const char *ca_cert;
	const char *ca_key;
	const char *upstream_ca;
	const char *secrets;
	/* --make-ca DIR: make the CA (and its bundle from --ca-roots) and
	 * exit; nothing else is needed. */
	const char *make_ca;
	const char *ca_roots;
	bool help;
	int log_level;			/* enum log_level */
	/* The network child (privilege separation): the listeners its
	 * parent bound, by index of listen[], and the metrics listener;
	 * -1: none (bind here). Never set from the command line. */
	int listen_fd[CONFIG_MAX_LISTEN];
	int metrics_fd;
	int transparent_fd, dns_udp_fd, dns_tcp_fd;
	/* --state FILE: the parent keeps the run registry there (root
	 * only), so a restarted parent knows the live runs. */
	const char *state;
};

/* Defaults for every field (no listen address, no allowlist). */
void proxy_config_init(struct proxy_config *c);

/*
 * Parses argv[1..argc) into c (call proxy_config_init first). Strings are
 * borrowed from argv. Returns 0, or -EINVAL with a one-line message in err
 * (naming the option and the bad value). --listen and --allowlist are
 * required unless --help.
 */
int proxy_config_parse(struct proxy_config *c, int argc, char *const argv[],
    char *err, size_t errlen);

/* Parses "IPV4:PORT" or "[IPV6]:PORT" (numeric, port 0-65535). */
int proxy_config_parse_sockaddr(const char *s, struct proxy_config_addr *out);
/* Parses seconds "S" or "S.FFF" (up to milliseconds) into ms, > 0 and at
 * most one day. */
int proxy_config_parse_seconds(const char *s, int *ms);

/* Usage text (static). */
const char *proxy_config_usage(void);

#endif
