/*
 * Netsetup's internal interfaces between its files: running iptables and
 * docker through proc_call, the state directory, the proxy as `up` starts
 * it, the Docker network, the firewall as applied, the proxy supervisor
 * and its systemd unit. Not for other parts of Cordon. Calls between the
 * files go one way: netsetup.c (up, down) -> proxy.c; netsetup.c, status.c
 * and proxy.c -> state.c (-> params.c), dnet.c, fwapply.c (-> fw.c),
 * sdunit.c, super.c; reload.c -> state.c, sdunit.c, super.c;
 * seal.c -> params.c; everything that runs a tool ->
 * nsexec.c, which calls nothing in netsetup.
 */
#ifndef CORDON_NETSETUP_INTERNAL_H
#define CORDON_NETSETUP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "common/cbuf.h"
#include "netsetup/fw.h"
#include "netsetup/netsetup.h"

#define NS_CMD_TIMEOUT_MS 30000

/* ---- running tools and noting what was done (nsexec.c) ---- */

/*
 * Runs argv (never a shell; in, if not NULL, is written to its stdin)
 * through proc_call, with its convention: 0 when it exited 0; -EIO when it
 * exited non-zero or was killed (err: the first stderr line, else
 * "ARGV0 exited with N"); -ETIMEDOUT after NS_CMD_TIMEOUT_MS; another
 * negative errno when it could not be started (err says why). *status
 * (may be NULL) gets the exit code, 128 + signal, or -1 when it did not run
 * to an exit: `iptables -C` exits 1 when a rule is absent. *out (may be
 * NULL) gets its stdout, malloc'd and NUL-terminated (caller frees),
 * whenever it ran to an exit (0 or -EIO), else NULL; -ENOMEM when that copy
 * fails.
 */
int netsetup_exec(const char *const *argv, const char *in, char **out,
    int *status, char *err, size_t errlen);

/* Appends "what\n" to changes (ignores ENOSPC: the list is informative). */
void netsetup_note(struct cbuf *changes, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Appends the formatted line to drift (a JSON array). 0 or -ENOMEM: a
 * status that lost a drift line would look better than it is. */
int netsetup_drift(cJSON *drift, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- the state directory (state.c) ---- */

/* buf = p->state_dir "/" name. */
void netsetup_state_path(const struct netsetup_params *p, const char *name,
    char *buf, size_t len);
/* The record of the last `up` (net.json), or NULL (caller deletes). */
cJSON *netsetup_state_read(const struct netsetup_params *p);
/* Writes the record of an `up` (atomically; nothing on failure). 0,
 * -ENOMEM or another negative errno. */
int netsetup_state_write(const struct netsetup_params *p,
    const struct netsetup_up_opts *o, const cJSON *proxy_argv, bool ours);
/* Serialises up and down for one bridge: a lock file in the state dir,
 * waited for up to 60 s. Returns the locked fd or a negative errno. */
int netsetup_state_lock(const struct netsetup_params *p, char *err,
    size_t errlen);

/* ---- the proxy as `up` starts it (proxy.c) ---- */

/* Pure: the proxy argv as a JSON array of strings (the recorded form):
 * proxy_bin --listen GW:PORT --transparent GW:TPORT --dns-listen
 * GW:DNSPORT --allowlist FILE --access-log ACCESS_LOG [--access-log-max
 * N --access-log-keep K] --control
 * STATE_DIR/control.sock --state STATE_DIR/proxy-runs.state --user USER
 * --ca-cert, --ca-key, --source-max-pending N [--secrets FILE], then o's
 * extra arguments. 0 and *out (caller deletes), -EINVAL, or -ENOMEM with
 * *out NULL. */
int netsetup_proxy_argv(const struct netsetup_params *p,
    const struct netsetup_up_opts *o, cJSON **out);
/* Starts (or restarts, when want differs from recorded) the supervised
 * proxy and waits until it listens; notes changes. */
int netsetup_proxy_up(const struct netsetup_params *p,
    const struct netsetup_up_opts *o, const cJSON *recorded,
    const cJSON *want, struct cbuf *changes, char *err, size_t errlen);

/* ---- what `up` checks before it creates anything (upcheck.c) ---- */

/* The extra proxy arguments (netsetup_proxy_args_check), the proxy
 * binary, the allowlist, then `cordon-proxy --check` on want (the argv
 * netsetup_proxy_argv made; without the CA options while the CA does not
 * exist yet). Creates nothing. 0 or a negative errno with a reason in err
 * (the proxy's own, FILE:LINE for the allowlist). */
int netsetup_up_check(const struct netsetup_params *p,
    const struct netsetup_up_opts *o, const cJSON *want, char *err,
    size_t errlen);

/* ---- docker network (dnet.c) ---- */

/* Checks an inspect object against p; writes "; "-separated problems to
 * why. Returns the number of problems. Pure. */
int dnet_check(const cJSON *net, const struct netsetup_params *p, char *why,
    size_t len);
bool dnet_ours(const cJSON *net);
int dnet_containers(const cJSON *net);
/* 0 and *net (caller deletes), -ENOENT when absent, or a negative errno. */
int dnet_inspect(const struct netsetup_params *p, cJSON **net, char *err,
    size_t errlen);
int dnet_create(const struct netsetup_params *p, char *err, size_t errlen);
int dnet_remove(const struct netsetup_params *p, char *err, size_t errlen);
/* Pure: the `docker network create` argv (points into p, bufs and
 * constants; argv holds at least DNET_ARGV_MAX, bufs at least 480 bytes).
 * 0 or -E2BIG. */
#define DNET_ARGV_MAX 18
int dnet_create_argv(const struct netsetup_params *p, const char **argv,
    size_t max, char *bufs, size_t buflen);

/* ---- firewall as applied (fwapply.c) ---- */

/* `iptables -V`: "nf_tables", "legacy" or "unknown". */
const char *fwa_backend(void);
/* Makes the firewall of one family right; notes changes. */
int fwa_apply(const struct netsetup_params *p, enum fw_family fam,
    struct cbuf *changes, char *err, size_t errlen);
/* Removes our chains and jumps of one family; notes changes. */
int fwa_remove(const struct netsetup_params *p, enum fw_family fam,
    struct cbuf *changes, char *err, size_t errlen);
/* Adds one drift line per problem to drift (a JSON array); fills obj with
 * what is there. 0, -ENOMEM or another negative errno. */
int fwa_status(const struct netsetup_params *p, enum fw_family fam,
    cJSON *obj, cJSON *drift);
/* Reads /proc/sys/net/bridge/bridge-nf-call-ip{,6}tables: 1, 0, or -1
 * when absent (br_netfilter not loaded). */
int fwa_bridge_nf(enum fw_family fam);

/* ---- proxy supervisor (super.c) ---- */

struct nssuper_spec {
	const char *const *argv;	/* proxy argv, NULL-terminated */
	const char *const *envp;	/* its whole environment */
	const char *user;		/* run the proxy as this user */
	const char *log_path;		/* supervisor + proxy output */
	const char *pid_path;		/* supervisor pid (locked while alive) */
	const char *child_pid_path;	/* current proxy pid */
};

/* Starts the supervisor, detached (setsid). Returns 0 once it runs and
 * holds its pid file, with *pid; or a negative errno. */
int nssuper_start(const struct nssuper_spec *s, pid_t *pid, char *err,
    size_t errlen);
/* 0 and *pid when a supervisor holds pid_path; -ESRCH when none does. */
int nssuper_alive(const char *pid_path, pid_t *pid);
/* Reads a pid file and checks the process exists: 0 or -ESRCH. */
int nssuper_child_alive(const char *child_pid_path, pid_t *pid);
/* SIGTERMs the supervisor (which stops the proxy) and waits up to
 * timeout_ms, then SIGKILLs both. 0, or -ESRCH when none ran. */
int nssuper_stop(const char *pid_path, const char *child_pid_path,
    int timeout_ms);
/* Tries a TCP connect to addr:port within timeout_ms: true if accepted. */
bool nssuper_port_open(const char *addr, int port, int timeout_ms);
/* Pure: whether text (the contents of /proc/net/tcp or /proc/net/udp)
 * lists a socket bound to the IPv4 addr:port exactly: for TCP one that
 * listens, for UDP an unconnected one. */
bool nssuper_listed(const char *text, const char *addr, int port, bool udp);
/* The same for this network namespace's /proc/net/tcp or udp: whether the
 * proxy's transparent and DNS sockets are there, without sending anything
 * to them (a connect would be a refused transparent connection in the
 * proxy's log). */
bool nssuper_bound(const char *addr, int port, bool udp);

/* ---- the same as a systemd unit (sdunit.c), where systemd runs ---- */

/* True when systemd is the init system (sd_booted(3)). */
bool sdunit_booted(void);
/* "cordon-proxy-<bridge>.service" */
void sdunit_name(const struct netsetup_params *p, char *buf, size_t len);
/* Pure: the unit file for s (argv, envp, user, log_path). 0, -EINVAL
 * (a value systemd would misread) or -ENOSPC. */
int sdunit_text(const struct nssuper_spec *s, const char *bridge, char *buf,
    size_t len);
/* Writes the unit if it changed and (re)starts it unless it is already
 * active and unchanged. */
int sdunit_start(const struct netsetup_params *p,
    const struct nssuper_spec *s, struct cbuf *changes, char *err,
    size_t errlen);
bool sdunit_active(const struct netsetup_params *p);
bool sdunit_installed(const struct netsetup_params *p);
pid_t sdunit_main_pid(const struct netsetup_params *p);
/* Stops and removes the unit if it is installed. */
int sdunit_stop(const struct netsetup_params *p, struct cbuf *changes,
    char *err, size_t errlen);

#endif
