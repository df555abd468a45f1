/*
 * Command-line parsing for cordon-proxy. Every option is checked here so
 * that --check can report all mistakes without touching the network, and
 * the daemon only ever sees validated values.
 */
#include "proxy/config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "proxy/accesslog.h"

enum {
	OPT_LISTEN = 256, OPT_ALLOWLIST, OPT_POLICY, OPT_RESOLVER,
	OPT_ALLOW_ADDRESS, OPT_ACCESS_LOG, OPT_METRICS, OPT_MAX_CONN,
	OPT_CONNECT_TIMEOUT, OPT_IDLE_TIMEOUT, OPT_DNS_TIMEOUT,
	OPT_HEADER_TIMEOUT, OPT_GRACE, OPT_MAX_HEADER, OPT_USER, OPT_CHECK,
	OPT_LOG_LEVEL, OPT_HELP, OPT_NO_SPLICE, OPT_CONTROL, OPT_RUN_MAX_CONNS,
	OPT_RUN_BYTES_UP, OPT_RUN_BYTES_DOWN, OPT_SNI_TIMEOUT, OPT_NO_SNI_CHECK,
	OPT_ACCESS_LOG_MAX, OPT_ACCESS_LOG_KEEP, OPT_SELF_REFRESH,
	OPT_CA_CERT, OPT_CA_KEY, OPT_UPSTREAM_CA, OPT_SECRETS, OPT_MAKE_CA,
	OPT_CA_ROOTS, OPT_SOURCE_MAX_PENDING, OPT_STATE, OPT_TRANSPARENT,
	OPT_DNS_LISTEN,
};

static const struct option config_options[] = {
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "allowlist", required_argument, NULL, OPT_ALLOWLIST },
	{ "policy", required_argument, NULL, OPT_POLICY },
	{ "resolver", required_argument, NULL, OPT_RESOLVER },
	{ "allow-address", required_argument, NULL, OPT_ALLOW_ADDRESS },
	{ "access-log", required_argument, NULL, OPT_ACCESS_LOG },
	{ "metrics", required_argument, NULL, OPT_METRICS },
	{ "max-connections", required_argument, NULL, OPT_MAX_CONN },
	{ "connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT },
	{ "idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT },
	{ "dns-timeout", required_argument, NULL, OPT_DNS_TIMEOUT },
	{ "header-timeout", required_argument, NULL, OPT_HEADER_TIMEOUT },
	{ "grace", required_argument, NULL, OPT_GRACE },
	{ "self-refresh", required_argument, NULL, OPT_SELF_REFRESH },
	{ "max-header", required_argument, NULL, OPT_MAX_HEADER },
	{ "user", required_argument, NULL, OPT_USER },
	{ "check", no_argument, NULL, OPT_CHECK },
	{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "no-splice", no_argument, NULL, OPT_NO_SPLICE },
	{ "control", required_argument, NULL, OPT_CONTROL },
	{ "run-max-conns", required_argument, NULL, OPT_RUN_MAX_CONNS },
	{ "run-bytes-up", required_argument, NULL, OPT_RUN_BYTES_UP },
	{ "run-bytes-down", required_argument, NULL, OPT_RUN_BYTES_DOWN },
	{ "access-log-max", required_argument, NULL, OPT_ACCESS_LOG_MAX },
	{ "access-log-keep", required_argument, NULL, OPT_ACCESS_LOG_KEEP },
	{ "sni-timeout", required_argument, NULL, OPT_SNI_TIMEOUT },
	{ "insecure-no-sni-check", no_argument, NULL, OPT_NO_SNI_CHECK },
	{ "ca-cert", required_argument, NULL, OPT_CA_CERT },
	{ "ca-key", required_argument, NULL, OPT_CA_KEY },
	{ "upstream-ca", required_argument, NULL, OPT_UPSTREAM_CA },
	{ "secrets", required_argument, NULL, OPT_SECRETS },
	{ "make-ca", required_argument, NULL, OPT_MAKE_CA },
	{ "ca-roots", required_argument, NULL, OPT_CA_ROOTS },
	{ "source-max-pending", required_argument, NULL,
	    OPT_SOURCE_MAX_PENDING },
	{ "state", required_argument, NULL, OPT_STATE },
	{ "transparent", required_argument, NULL, OPT_TRANSPARENT },
	{ "dns-listen", required_argument, NULL, OPT_DNS_LISTEN },
	{ NULL, 0, NULL, 0 },
};

const char *
proxy_config_usage(void)
{
	return
	    "usage: cordon-proxy --listen ADDR:PORT --allowlist FILE|DIR\n"
	    "    [--policy NAME] [--resolver IP[:PORT]]...\n"
	    "    [--allow-address IP[/PREFIX][:PORT]]... [--access-log FILE|-]\n"
	    "    [--metrics ADDR:PORT] [--max-connections N]\n"
	    "    [--connect-timeout S] [--idle-timeout S] [--dns-timeout S]\n"
	    "    [--header-timeout S] [--grace S] [--max-header SIZE]\n"
	    "    [--self-refresh S] [--source-max-pending N]\n"
	    "    [--transparent ADDR:PORT] [--dns-listen ADDR:PORT]\n"
	    "    [--user NAME] [--log-level error|warn|info|debug] [--no-splice]\n"
	    "    [--control PATH [--state FILE] [--run-max-conns N]\n"
	    "    [--run-bytes-up SIZE] [--run-bytes-down SIZE]]\n"
	    "    [--sni-timeout S]\n"
	    "    [--insecure-no-sni-check] [--check]\n"
	    "    [--access-log-max SIZE [--access-log-keep N]]\n"
	    "    [--ca-cert FILE --ca-key FILE] [--upstream-ca FILE]\n"
	    "    [--secrets FILE|DIR]\n"
	    "   or: cordon-proxy --make-ca DIR [--ca-roots FILE]\n"
	    "ADDR:PORT is IPV4:PORT or [IPV6]:PORT; port 0 picks a free port.\n"
	    "The bound address is logged as \"listening on ADDR:PORT\".\n"
	    "--control PATH: run mode (per-run credentials and policies,\n"
	    "registered over a root-only unix socket at PATH); --state FILE\n"
	    "keeps the registry (root only) for a restarted proxy.\n"
	    "--access-log-max SIZE: rotate the access log FILE to FILE.1 (up to\n"
	    "FILE.N, --access-log-keep, default 5) when it reaches SIZE.\n"
	    "SIGUSR1 (and SIGHUP) reopen the access log after an outside\n"
	    "rotation (logrotate).\n"
	    "--source-max-pending N: connections from one address that have\n"
	    "not yet had a request accepted, at most (default 32; 0: no cap).\n"
	    "--transparent ADDR:PORT: connections redirected to it (nat\n"
	    "REDIRECT) are decided by their TLS server name, their HTTP Host,\n"
	    "or (for raw entries) the name the resolver gave their address.\n"
	    "--dns-listen ADDR:PORT: the closed resolver (UDP and TCP): it\n"
	    "answers only names a run's policy allows, never forwarding others.\n"
	    "Every local interface address is refused as the proxy's own\n"
	    "(address-self) unless --allow-address opens it; they are reread\n"
	    "on SIGHUP and every --self-refresh seconds (default 30).\n"
	    "--insecure-no-sni-check: WEAKENS egress: tunnels no longer\n"
	    "check that the TLS server_name matches the CONNECT host.\n"
	    "--ca-cert/--ca-key: the egress CA that TLS inspection (allowlist\n"
	    "entries with `inspect`) mints its leaves with; --upstream-ca\n"
	    "replaces the system roots for upstream verification; --secrets:\n"
	    "the store inject= options name (root-only).\n"
	    "--make-ca DIR: make the CA once in DIR (ca.key, ca.crt) and\n"
	    "rewrite DIR/ca-bundle.pem (--ca-roots, default\n"
	    "/etc/ssl/certs/ca-certificates.crt, then ca.crt), then exit.\n";
}

void
proxy_config_init(struct proxy_config *c)
{
	memset(c, 0, sizeof(*c));
	c->policy = "default";
	c->max_connections = 4096;
	c->connect_timeout_ms = 10000;
	c->idle_timeout_ms = 300000;
	c->dns_timeout_ms = 5000;
	c->header_timeout_ms = 10000;
	c->grace_ms = 30000;
	c->self_refresh_ms = 30000;
	c->max_header = 32 * 1024;
	c->log_level = LOG_LEVEL_INFO;
	c->run_max_conns = 32;
	c->access_log_keep = 5;
	c->sni_timeout_ms = 5000;
	c->source_max_pending = 32;
	for (size_t i = 0; i < CONFIG_MAX_LISTEN; i++)
		c->listen_fd[i] = -1;
	c->metrics_fd = -1;
	c->transparent_fd = c->dns_udp_fd = c->dns_tcp_fd = -1;
}

static int
config_port(const char *s, unsigned *port)
{
	int64_t v;

	if (util_parse_i64(s, 0, 65535, &v) != 0)
		return -EINVAL;
	*port = (unsigned)v;
	return 0;
}

int
proxy_config_parse_sockaddr(const char *s, struct proxy_config_addr *out)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon, *h, *end;
	unsigned port;
	size_t hl;

	memset(out, 0, sizeof(*out));
	if (s[0] == '[') {
		end = strchr(s, ']');
		if (end == NULL || end[1] != ':')
			return -EINVAL;
		h = s + 1;
		hl = (size_t)(end - h);
		colon = end + 1;
	} else {
		colon = strrchr(s, ':');
		if (colon == NULL)
			return -EINVAL;
		h = s;
		hl = (size_t)(colon - s);
	}
	if (hl == 0 || hl >= sizeof(host) || config_port(colon + 1, &port) != 0)
		return -EINVAL;
	memcpy(host, h, hl);
	host[hl] = '\0';
	if (s[0] == '[') {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&out->ss;
		if (inet_pton(AF_INET6, host, &sin6->sin6_addr) != 1)
			goto bad;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)port);
		out->len = sizeof(*sin6);
	} else {
		struct sockaddr_in *sin = (struct sockaddr_in *)&out->ss;
		if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
			goto bad;
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)port);
		out->len = sizeof(*sin);
	}
	return 0;
bad:
	memset(out, 0, sizeof(*out));
	return -EINVAL;
}

int
proxy_config_parse_seconds(const char *s, int *ms)
{
	int64_t whole = 0, frac = 0;
	int fdigits = 0;
	const char *p = s;

	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		whole = whole * 10 + (*p - '0');
		if (whole > 86400)
			return -ERANGE;
	}
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return -EINVAL;
		for (; *p >= '0' && *p <= '9'; p++) {
			if (++fdigits > 3)
				return -EINVAL;
			frac = frac * 10 + (*p - '0');
		}
		for (int i = fdigits; i < 3; i++)
			frac *= 10;
	}
	if (*p != '\0')
		return -EINVAL;
	whole = whole * 1000 + frac;
	if (whole <= 0 || whole > 86400 * 1000LL)
		return -ERANGE;
	*ms = (int)whole;
	return 0;
}

/* "IP" or "IP:PORT" or "[V6]" or "[V6]:PORT" appended to the c-ares csv. */
static int
config_add_resolver(struct proxy_config *c, const char *s)
{
	char host[INET6_ADDRSTRLEN + 2], item[INET6_ADDRSTRLEN + 16];
	unsigned char buf[sizeof(struct in6_addr)];
	unsigned port = 53;
	size_t hl, used;
	const char *colon;
	bool v6;

	if (s[0] == '[') {
		const char *end = strchr(s, ']');
		if (end == NULL || (end[1] != '\0' && end[1] != ':'))
			return -EINVAL;
		hl = (size_t)(end - s - 1);
		if (hl == 0 || hl >= sizeof(host))
			return -EINVAL;
		memcpy(host, s + 1, hl);
		host[hl] = '\0';
		if (end[1] == ':' && config_port(end + 2, &port) != 0)
			return -EINVAL;
		v6 = true;
	} else if (strchr(s, ':') != strrchr(s, ':')) {
		if (!util_strlcpy(host, s, sizeof(host)))	/* bare IPv6 */
			return -EINVAL;
		v6 = true;
	} else {
		colon = strchr(s, ':');
		hl = colon != NULL ? (size_t)(colon - s) : strlen(s);
		if (hl == 0 || hl >= sizeof(host))
			return -EINVAL;
		memcpy(host, s, hl);
		host[hl] = '\0';
		if (colon != NULL && config_port(colon + 1, &port) != 0)
			return -EINVAL;
		v6 = false;
	}
	if (port == 0 || inet_pton(v6 ? AF_INET6 : AF_INET, host, buf) != 1)
		return -EINVAL;
	snprintf(item, sizeof(item), v6 ? "[%s]:%u" : "%s:%u", host, port);
	used = strlen(c->resolvers);
	if (used + strlen(item) + 2 > sizeof(c->resolvers))
		return -ENOSPC;
	if (used > 0)
		strcat(c->resolvers, ",");
	strcat(c->resolvers, item);
	return 0;
}

static int
config_fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int
config_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* --access-log-max and --access-log-keep. */
static int
config_access_log_option(struct proxy_config *c, int opt, const char *arg,
    char *err, size_t errlen)
{
	uint64_t sz;
	int64_t v;

	if (opt == OPT_ACCESS_LOG_MAX) {
		if (util_parse_size(arg, &sz) != 0 || sz < 4096)
			return config_fail(err, errlen, "--access-log-max %s: "
			    "want a size of at least 4k", arg);
		c->access_log_max = sz;
		return 0;
	}
	if (util_parse_i64(arg, 1, PROXY_ACCESSLOG_KEEP_MAX, &v) != 0)
		return config_fail(err, errlen, "--access-log-keep %s: want "
		    "1-%d", arg, PROXY_ACCESSLOG_KEEP_MAX);
	c->access_log_keep = (unsigned)v;
	return 0;
}

/* Size rotation needs a file to rotate. */
static int
config_check_access_log(const struct proxy_config *c, char *err,
    size_t errlen)
{
	if (c->access_log_max > 0 && (c->access_log == NULL ||
	    strcmp(c->access_log, "-") == 0))
		return config_fail(err, errlen, "--access-log-max needs "
		    "--access-log FILE (not stdout)");
	return 0;
}

static int
config_option(struct proxy_config *c, int opt, const char *arg, char *err,
    size_t errlen)
{
	int64_t v;
	uint64_t sz;
	int *ms = NULL;
	enum log_level lvl;

	if (opt == OPT_ACCESS_LOG_MAX || opt == OPT_ACCESS_LOG_KEEP)
		return config_access_log_option(c, opt, arg, err, errlen);
	switch (opt) {
	case OPT_LISTEN:
		if (c->nlisten == CONFIG_MAX_LISTEN)
			return config_fail(err, errlen, "too many --listen");
		if (proxy_config_parse_sockaddr(arg,
		    &c->listen[c->nlisten]) != 0)
			return config_fail(err, errlen,
			    "--listen %s: want IPV4:PORT or [IPV6]:PORT", arg);
		c->nlisten++;
		return 0;
	case OPT_ALLOWLIST:
		c->allowlist = arg;
		return 0;
	case OPT_POLICY:
		if (arg[0] == '\0' || strlen(arg) > 64)
			return config_fail(err, errlen, "--policy: bad name");
		c->policy = arg;
		return 0;
	case OPT_RESOLVER:
		if (config_add_resolver(c, arg) != 0)
			return config_fail(err, errlen,
			    "--resolver %s: want IP, IP:PORT or [IPV6]:PORT",
			    arg);
		return 0;
	case OPT_ALLOW_ADDRESS:
		if (c->nexceptions == CONFIG_MAX_EXCEPTIONS)
			return config_fail(err, errlen,
			    "too many --allow-address");
		if (proxy_addr_exception_parse(arg,
		    &c->exceptions[c->nexceptions]) != 0)
			return config_fail(err, errlen,
			    "--allow-address %s: want IP[/PREFIX][:PORT]", arg);
		c->nexceptions++;
		return 0;
	case OPT_ACCESS_LOG:
		c->access_log = arg;
		return 0;
	case OPT_TRANSPARENT:
		if (proxy_config_parse_sockaddr(arg, &c->transparent) != 0)
			return config_fail(err, errlen, "--transparent %s: want "
			    "IPV4:PORT or [IPV6]:PORT", arg);
		c->has_transparent = true;
		return 0;
	case OPT_DNS_LISTEN:
		if (proxy_config_parse_sockaddr(arg, &c->dns_listen) != 0)
			return config_fail(err, errlen, "--dns-listen %s: want "
			    "IPV4:PORT or [IPV6]:PORT", arg);
		c->has_dns_listen = true;
		return 0;
	case OPT_METRICS:
		if (proxy_config_parse_sockaddr(arg, &c->metrics) != 0)
			return config_fail(err, errlen,
			    "--metrics %s: want IPV4:PORT or [IPV6]:PORT", arg);
		c->has_metrics = true;
		return 0;
	case OPT_MAX_CONN:
		if (util_parse_i64(arg, 1, 1000000, &v) != 0)
			return config_fail(err, errlen,
			    "--max-connections %s: want 1-1000000", arg);
		c->max_connections = (long)v;
		return 0;
	case OPT_MAX_HEADER:
		if (util_parse_size(arg, &sz) != 0 || sz < 1024 ||
		    sz > 1024 * 1024)
			return config_fail(err, errlen,
			    "--max-header %s: want 1k-1m", arg);
		c->max_header = (size_t)sz;
		return 0;
	case OPT_USER:
		c->user = arg;
		return 0;
	case OPT_CHECK:
		c->check = true;
		return 0;
	case OPT_HELP:
		c->help = true;
		return 0;
	case OPT_NO_SPLICE:
		c->no_splice = true;
		return 0;
	case OPT_NO_SNI_CHECK:
		c->no_sni_check = true;
		return 0;
	case OPT_CA_CERT: c->ca_cert = arg; return 0;
	case OPT_CA_KEY: c->ca_key = arg; return 0;
	case OPT_UPSTREAM_CA: c->upstream_ca = arg; return 0;
	case OPT_SECRETS: c->secrets = arg; return 0;
	case OPT_MAKE_CA: c->make_ca = arg; return 0;
	case OPT_CA_ROOTS: c->ca_roots = arg; return 0;
	case OPT_CONTROL:
		if (arg[0] == '\0' || strlen(arg) >= 108)
			return config_fail(err, errlen,
			    "--control: want a path of 1-107 bytes");
		c->control = arg;
		return 0;
	case OPT_STATE:
		if (arg[0] != '/')
			return config_fail(err, errlen,
			    "--state %s: want an absolute path", arg);
		c->state = arg;
		return 0;
	case OPT_SOURCE_MAX_PENDING:
		if (util_parse_i64(arg, 0, 65535, &v) != 0)
			return config_fail(err, errlen,
			    "--source-max-pending %s: want 0-65535", arg);
		c->source_max_pending = (unsigned)v;
		return 0;
	case OPT_RUN_MAX_CONNS:
		if (util_parse_i64(arg, 1, 65535, &v) != 0)
			return config_fail(err, errlen,
			    "--run-max-conns %s: want 1-65535", arg);
		c->run_max_conns = (unsigned)v;
		return 0;
	case OPT_RUN_BYTES_UP:
	case OPT_RUN_BYTES_DOWN:
		if (util_parse_size(arg, &sz) != 0)
			return config_fail(err, errlen, "--run-bytes-%s %s: "
			    "want a size (0 = unlimited)",
			    opt == OPT_RUN_BYTES_UP ? "up" : "down", arg);
		if (opt == OPT_RUN_BYTES_UP)
			c->run_bytes_up = sz;
		else
			c->run_bytes_down = sz;
		return 0;
	case OPT_LOG_LEVEL:
		if (log_level_parse(arg, &lvl) != 0)
			return config_fail(err, errlen,
			    "--log-level %s: want error|warn|info|debug", arg);
		c->log_level = (int)lvl;
		return 0;
	case OPT_CONNECT_TIMEOUT: ms = &c->connect_timeout_ms; break;
	case OPT_IDLE_TIMEOUT: ms = &c->idle_timeout_ms; break;
	case OPT_DNS_TIMEOUT: ms = &c->dns_timeout_ms; break;
	case OPT_HEADER_TIMEOUT: ms = &c->header_timeout_ms; break;
	case OPT_GRACE: ms = &c->grace_ms; break;
	case OPT_SELF_REFRESH: ms = &c->self_refresh_ms; break;
	case OPT_SNI_TIMEOUT: ms = &c->sni_timeout_ms; break;
	default:
		return config_fail(err, errlen, "unknown option (see --help)");
	}
	if (proxy_config_parse_seconds(arg, ms) != 0)
		return config_fail(err, errlen,
		    "bad duration '%s': want seconds (e.g. 5 or 0.5)", arg);
	return 0;
}

int
proxy_config_parse(struct proxy_config *c, int argc, char *const argv[],
    char *err, size_t errlen)
{
	int opt, rc;

	err[0] = '\0';
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "", config_options, NULL)) != -1) {
		if (opt == '?' || opt == ':')
			return config_fail(err, errlen, "bad option '%s'",
			    argv[optind - 1]);
		rc = config_option(c, opt, optarg, err, errlen);
		if (rc != 0)
			return rc;
	}
	if (optind < argc)
		return config_fail(err, errlen, "unexpected argument '%s'",
		    argv[optind]);
	if (c->help)
		return 0;
	if (c->make_ca != NULL) {
		if (c->make_ca[0] == '\0')
			return config_fail(err, errlen, "--make-ca: empty path");
		return 0;
	}
	if ((c->ca_cert == NULL) != (c->ca_key == NULL))
		return config_fail(err, errlen,
		    "--ca-cert and --ca-key go together");
	if (c->ca_roots != NULL)
		return config_fail(err, errlen,
		    "--ca-roots is for --make-ca only");
	if (c->nlisten == 0)
		return config_fail(err, errlen, "--listen is required");
	if (c->allowlist == NULL)
		return config_fail(err, errlen, "--allowlist is required");
	return config_check_access_log(c, err, errlen);
}
