/*
 * Netsetup's internal interfaces between its files: running iptables and
 * docker through proc.h, the Docker network, the firewall as applied, and
 * the proxy supervisor. Not for other parts of Cordon.
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

/* Runs argv (stdin may be NULL). On success *out (may be NULL) receives
 * stdout, malloc'd and NUL-terminated (caller frees). Returns the exit
 * code (>= 0), or a negative errno when it could not run or timed out;
 * err then holds a reason, and on a non-zero exit the first stderr line. */
int ns_run(const char *const *argv, const char *in, char **out, char *err,
    size_t errlen);

/* Appends "what\n" to changes (ignores ENOSPC: the list is informative). */
void ns_note(struct cbuf *changes, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

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
/* Pure: the `docker network create` argv (points into p and constants). */
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
 * what is there. 0 or a negative errno. */
int fwa_status(const struct netsetup_params *p, enum fw_family fam,
    cJSON *obj, cJSON *drift);
/* Reads /proc/sys/net/bridge/bridge-nf-call-ip{,6}tables: 1, 0, or -1
 * when absent (br_netfilter not loaded). */
int fwa_bridge_nf(enum fw_family fam);

/* ---- proxy supervisor (super.c) ---- */

struct super_spec {
	const char *const *argv;	/* proxy argv, NULL-terminated */
	const char *const *envp;	/* its whole environment */
	const char *user;		/* run the proxy as this user */
	const char *log_path;		/* supervisor + proxy output */
	const char *pid_path;		/* supervisor pid (locked while alive) */
	const char *child_pid_path;	/* current proxy pid */
};

/* Starts the supervisor, detached (setsid). Returns 0 once it runs and
 * holds its pid file, with *pid; or a negative errno. */
int super_start(const struct super_spec *s, pid_t *pid, char *err,
    size_t errlen);
/* 0 and *pid when a supervisor holds pid_path; -ESRCH when none does. */
int super_alive(const char *pid_path, pid_t *pid);
/* Reads a pid file and checks the process exists: 0 or -ESRCH. */
int super_child_alive(const char *child_pid_path, pid_t *pid);
/* SIGTERMs the supervisor (which stops the proxy) and waits up to
 * timeout_ms, then SIGKILLs both. 0, or -ESRCH when none ran. */
int super_stop(const char *pid_path, const char *child_pid_path,
    int timeout_ms);
/* Tries a TCP connect to addr:port within timeout_ms: true if accepted. */
bool super_port_open(const char *addr, int port, int timeout_ms);

/* ---- the same as a systemd unit (sdunit.c), where systemd runs ---- */

/* True when systemd is the init system (sd_booted(3)). */
bool sd_booted(void);
/* "cordon-proxy-<bridge>.service" */
void sd_unit_name(const struct netsetup_params *p, char *buf, size_t len);
/* Pure: the unit file for s (argv, envp, user, log_path). 0, -EINVAL
 * (a value systemd would misread) or -ENOSPC. */
int sd_unit_text(const struct super_spec *s, const char *bridge, char *buf,
    size_t len);
/* Writes the unit if it changed and (re)starts it unless it is already
 * active and unchanged. */
int sd_start(const struct netsetup_params *p, const struct super_spec *s,
    struct cbuf *changes, char *err, size_t errlen);
bool sd_active(const struct netsetup_params *p);
bool sd_installed(const struct netsetup_params *p);
pid_t sd_main_pid(const struct netsetup_params *p);
/* Stops and removes the unit if it is installed. */
int sd_stop(const struct netsetup_params *p, struct cbuf *changes,
    char *err, size_t errlen);

#endif
