/*
 * The run registry of cordon-proxy's run mode: the proxy-mode runs the
 * runner registered over the control socket, found by run id (credential
 * check) and by source address ("is any run live here?"), with their
 * limits, live counters and egress report, and their expiry. Pure data
 * structure: no I/O, no clock of its own (callers pass the time).
 */
#ifndef CORDON_PROXY_RUNS_H
#define CORDON_PROXY_RUNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "proxy/cred.h"
#include "proxy/ctl.h"
#include "proxy/dnsrate.h"

struct proxy_synth;

struct proxy_egress;
struct proxy_runs;

/* Registry cap used by the daemon. */
#define PROXY_RUNS_MAX		4096
/* How long an expired run's record (and report) is kept for a late
 * unregister, in milliseconds. */
#define PROXY_RUNS_LINGER_MS	60000

/* Limits of one run; 0 bytes means unlimited. */
struct proxy_run_limits {
	unsigned max_conns;		/* >= 1 */
	uint64_t bytes_up;		/* client -> upstream */
	uint64_t bytes_down;		/* upstream -> client */
};

/*
 * One registered run. The registry owns it; fields are read by the daemon
 * and the counters (conns, bytes_*) updated by it. policy is a NAME, looked
 * up in the current allowlist set on every request (a reload swaps sets).
 */
struct proxy_run {
	char id[PROXY_CRED_RUN_MAX + 1];
	char addr_text[INET6_ADDRSTRLEN];
	struct in6_addr ip;		/* IPv4 as ::ffff:a.b.c.d */
	char policy[PROXY_CTL_POLICY_MAX + 1];
	char token[PROXY_CRED_TOKEN_MAX + 1];
	int64_t deadline_ms;		/* wall clock, epoch ms */
	bool expired;			/* set by proxy_runs_tick */
	int64_t forget_ms;		/* wall clock; valid once expired */
	struct proxy_run_limits lim;
	unsigned conns;			/* client connections tied to it */
	uint64_t bytes_up, bytes_down;	/* totals so far */
	struct proxy_egress *egress;
	/* cordon-proxy's parent: network child restarts during the run's
	 * life (its egress report lost what that child had noted). */
	unsigned restarts;
	/* The closed resolver (network child): the names it gave synthetic
	 * addresses (made on the first query, freed with the run), and the
	 * run's query rate. */
	struct proxy_synth *synth;
	struct proxy_dnsrate dnsrate;
	unsigned dns_pending;		/* its lookups waiting upstream */
	bool dns_refusing;		/* over its rate since the last query
					   it had a token for (logged once) */
	/* Registry links (private). */
	struct proxy_run *id_next, *ip_next;
};

/* An empty registry of at most max runs (1..65536). 0 and *out (free with
 * proxy_runs_free), -EINVAL or -ENOMEM. */
int proxy_runs_new(size_t max, struct proxy_runs **out);
/* Frees every run and the registry; accepts NULL. */
void proxy_runs_free(struct proxy_runs *rs);
size_t proxy_runs_count(const struct proxy_runs *rs);

/*
 * Registers req (a PROXY_CTL_REGISTER from proxy_ctl_parse): limits are
 * req's where given, else def's. now_ms is the wall clock. Returns 0 and
 * *out (borrowed), or -EEXIST (run id already registered, expired or
 * not), -ETIMEDOUT (deadline_ms <= now_ms), -ENOSPC (registry full),
 * -EINVAL (req is not a register request), -ENOMEM.
 */
int proxy_runs_add(struct proxy_runs *rs, const struct proxy_ctl_req *req,
    const struct proxy_run_limits *def, int64_t now_ms,
    struct proxy_run **out);
/* The run called id (expired or not), or NULL. */
struct proxy_run *proxy_runs_find(const struct proxy_runs *rs,
    const char *id);
/* True when some registered run with source address sa (AF_INET or
 * AF_INET6; IPv4 and IPv4-mapped IPv6 compare equal) is live at now_ms. */
bool proxy_runs_live_at(const struct proxy_runs *rs,
    const struct sockaddr *sa, int64_t now_ms);
/* The one live (not expired) run registered at sa's address, or NULL
 * when there is none or more than one (which run it was is then not
 * known). */
struct proxy_run *proxy_runs_at(const struct proxy_runs *rs,
    const struct sockaddr *sa, int64_t now_ms);
/* fn(run, arg) for every run (fn must not remove any but the run it is
 * given). */
void proxy_runs_each(struct proxy_runs *rs,
    void (*fn)(struct proxy_run *, void *), void *arg);
/* Forgets r (frees it and its report). */
void proxy_runs_remove(struct proxy_runs *rs, struct proxy_run *r);

/* r is past its deadline at now_ms (wall clock), or marked expired. */
bool proxy_run_expired(const struct proxy_run *r, int64_t now_ms);
/* r's source address is sa's (IPv4-mapped IPv6 equals IPv4). */
bool proxy_run_addr_match(const struct proxy_run *r,
    const struct sockaddr *sa);
/* r moved more bytes up or down than its limits allow. */
bool proxy_run_over_bytes(const struct proxy_run *r);

/*
 * Expiry, called periodically with the wall clock: every run newly past
 * its deadline is marked expired (forget_ms = now + PROXY_RUNS_LINGER_MS)
 * and expired(run, arg) is called for it (the daemon closes its
 * connections); every expired run whose forget_ms has passed is first
 * given to forget(run, arg) (may be NULL) and then removed. Returns the
 * number of runs removed.
 */
size_t proxy_runs_tick(struct proxy_runs *rs, int64_t now_ms,
    void (*expired)(struct proxy_run *, void *),
    void (*forget)(struct proxy_run *, void *), void *arg);

#endif
