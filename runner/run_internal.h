/*
 * One run's state, shared by runner.c (the run), run_egress.c (its
 * proxy-mode steps), run_end.c and its sandbox (sandbox*.c). Internal to
 * the runner.
 */
#ifndef CORDON_RUNNER_RUN_INTERNAL_H
#define CORDON_RUNNER_RUN_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/cbuf.h"
#include "common/proc.h"
#include "netsetup/netsetup.h"
#include "proxy/cred.h"
#include "runner/debug.h"
#include "runner/image.h"
#include "runner/outwrap.h"
#include "runner/relay.h"
#include "runner/result.h"
#include "runner/sandbox.h"
#include "runner/slot.h"

/* A warm run: how long its exec may outlive its sandbox's holder. */
#define RUN_HOLDER_GRACE_MS 500

/* Proxy mode, a run without the pool's recent check: netsetup_ready on a
 * thread of its own while the container starts (run_egress.c). */
struct run_netcheck {
	pthread_t thread;
	bool started, joined;
	int rc;
	char err[400];
	const struct config *c;
};

struct run {
	const struct config *c;		/* own, or the caller's */
	struct config *own;		/* the caller's, at the run's profile */
	unsigned lang;			/* CONFIG_LANG_* */
	const struct runner_request *req;
	struct runner_limits lim;
	enum cbuf_keep keep;		/* of both streams past the cap */
	char image[IMAGE_ID_MAX];
	char nonce[OUTWRAP_NONCE_LEN + 1];
	char in_dir[PATH_MAX];
	unsigned char *input;		/* what goes to the container's stdin */
	size_t input_len;
	struct runner_sandbox sb;	/* the container it runs in */
	int64_t start, deadline;
	bool finished, timed_out, cancelled, oom, sandbox_error;
	bool cut;			/* --keep head: a stream passed its cap,
					 * so the run was stopped there */
	int64_t halt_at;		/* when it was stopped; 0: it was not */
	bool not_started;		/* docker's own failure, no job ran */
	int cli_exit;
	bool proxy;			/* --net proxy: egress settings below */
	bool ep_pooled;			/* ep is the pool's recent check's, not
					 * this run's (runner_run_egress_admit) */
	struct run_netcheck check;	/* this run's own check of it */
	struct netsetup_endpoint ep;
	struct netsetup_run_args na;
	char token[PROXY_CRED_TOKEN_NEW_LEN + 1];	/* the run's credential */
	char addr[NETSETUP_ADDR_MAX];	/* the container's, from the seal */
	char run_id[RUNNER_NAME_MAX];	/* registered under this name */
	bool registered;		/* unregister before returning */
	cJSON *egress;			/* the proxy's report, until moved */
	char egress_error[128];
	int64_t reg_ms, unreg_ms;
	struct runner_slot slot;	/* host-wide; held until the end */
	char debug_pat[RUNNER_DEBUG_PAT_MAX];	/* debug: --debug-log */
	char id[72];			/* debug: the container's full ID */
	struct runner_relay relay;	/* live output (req->output) */
	struct runner_timing *tm;	/* res->timing */
	int64_t t_begin;		/* code handed over (fed or spawned) */
};

/* Proxy mode (run_egress.c): the policy must exist in the running proxy
 * before any container starts, and the egress network must be up before
 * the container is sealed (runner_run_egress_admit: for a run that may
 * take a pooled container, the network as the pool's thread found it at
 * most POOL_NET_FRESH_MS ago; a run that then misses the pool calls it
 * again; a run that checks for itself does it on a thread while its
 * container starts, joined by runner_run_egress_join before the seal);
 * the run is registered after the seal and
 * before any code is written, and unregistered (keeping its egress
 * report, or why there is none) on every path once registered. */
int runner_run_policy(struct run *r, struct runner_result *res, char *err,
    size_t errlen);
int runner_run_egress_admit(struct run *r, struct runner_result *res,
    char *err, size_t errlen);
/* Waits for the run's own network check, if one was started (once; again
 * it only says the result): 0, or its error, with its reason in err (err
 * may be NULL). Before the seal, so before any code; and before its
 * config goes (run_cleanup). */
int runner_run_egress_join(struct run *r, char *err, size_t errlen);
int runner_run_register(struct run *r, const char *name, const char *addr,
    const char *policy, char *err, size_t errlen);
void runner_run_unregister(struct run *r);

/* How a run ends (run_end.c). stop: removes a container that never ran
 * the code (a start cut short or failed), by name, even while its create
 * may still be under way; the CLI is killed and reaped. halt: a run that
 * did not end by itself (deadline, cancel, its cap, a broken stream):
 * the container is killed while its streams are still drained, then they
 * are closed, then it is removed (stop); timing_ms says so. finish: a run
 * that ended by itself: its times, its end state (OOM, not started,
 * gone), then its removal (a warm one's after the answer). */
void runner_run_stop(struct run *r, const char *name);
void runner_run_halt(struct run *r, const char *name);
void runner_run_finish(struct run *r, const char *name);

#endif
