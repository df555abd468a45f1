/*
 * Private to cordon-proxy's privileged parent (parent.c: life cycle,
 * the network child's spawn and restarts, signals; parent_ops.c: the
 * control socket's requests; parent_child.c: the child's messages and
 * questions; parent_gen.c: loads, generations, reloads; parent_state.c:
 * the state file). The parent reads the allowlists, the secrets store
 * and the CA key, owns the control socket and the run registry, and never
 * reads a byte a sandbox sent.
 */
#ifndef CORDON_PROXY_PARENT_H
#define CORDON_PROXY_PARENT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <event2/util.h>

#include "proxy/config.h"

struct accesslog;
struct allowlist_set;
struct event;
struct event_base;
struct proxy_ca;
struct proxy_chan;
struct proxy_ctl_reply;
struct proxy_ctl_req;
struct proxy_ctlsrv;
struct proxy_imsg;
struct proxy_run;
struct proxy_runs;

/* A control request waiting for the child's answer. */
enum parent_wait_kind { PW_REGISTER, PW_REPORT, PW_UNREGISTER, PW_RELOAD,
    PW_POLICY };
struct parent_wait {
	struct parent_wait *next;
	uint64_t id;		/* of the message to the child */
	enum parent_wait_kind kind;
	struct proxy_ctl_reply *reply;
	char run[80];
	uint64_t gen;		/* PW_RELOAD: the generation sent */
};

struct parent {
	struct proxy_config cfg;
	char **argv;
	int argc;
	struct event_base *base;
	struct allowlist_set *set;
	uint64_t gen;			/* of set */
	uint64_t announce_gen;		/* a reload's: "reload ok" once the
					   child acknowledges it; 0: none */
	struct proxy_ca *ca;		/* with its key, or NULL */
	struct accesslog *alog;		/* NULL: none */
	struct proxy_ctlsrv *ctl;	/* run mode */
	struct proxy_runs *runs;	/* run mode: the registry */
	int lfd[CONFIG_MAX_LISTEN];
	int metrics_fd;
	int tfd, dns_udp, dns_tcp;	/* transparent, resolver; -1: none */
	long uid, gid;			/* the child's; -1: unchanged */
	char root[256];			/* the child's empty root, or "" */
	/* The network child. */
	pid_t pid;			/* 0: none running */
	struct proxy_chan *chan;
	bool ready;			/* it said READY (listening) */
	bool announced;			/* "listening on" logged once */
	uint64_t next_id;
	struct parent_wait *waits;
	unsigned restarts;
	int backoff_ms;
	int64_t started_ms;
	struct event *respawn, *tick, *grace, *stray;
	bool draining;
};

/* parent.c */
/* The first READY: "listening on ADDR:PORT" for each listener (tests and
 * supervisors wait for it), once. */
void proxy_parent_announce(void);
/* The channel died: the child is killed (if it is not gone already) so
 * that its reaping restarts it. */
void proxy_parent_child_lost_channel(void);

/* parent_ops.c */
/* The control socket's handler (ctlsrv.h). */
char *proxy_parent_ctl(void *arg, const struct proxy_ctl_req *req,
    struct proxy_ctl_reply *reply, bool *later);
/* The child is gone: waiting requests get their answers now, live runs
 * count a restart (and the access log says so). */
void proxy_parent_child_lost(struct parent *p);
/* A request now waiting for the child's answer to message id; NULL: no
 * memory. */
struct parent_wait *proxy_parent_wait_add(struct parent *p,
    enum parent_wait_kind kind, uint64_t id, struct proxy_ctl_reply *reply,
    const char *run);
/* The child's answers to waiting register, report/unregister and policy
 * requests. */
void proxy_parent_run_ack(struct parent *p, const struct proxy_imsg *m);
void proxy_parent_report_msg(struct parent *p, const struct proxy_imsg *m);
void proxy_parent_policy_ack(struct parent *p, const struct proxy_imsg *m);

/* parent_child.c */
/* A message from the network child (imsg.h); m NULL: the channel died. */
void proxy_parent_child_msg(void *arg, const struct proxy_imsg *m);
/* Everything the new child needs, in order: INIT, GEN, the live runs. */
int proxy_parent_child_greet(struct parent *p);
/* The access log's descriptor to the child again (after a reopen or a
 * rotation). */
void proxy_parent_alog_to_child(struct parent *p);

/* parent_gen.c */
/* Reloads the allowlist (and secrets) as root; on success sends the new
 * generation. reply (may be NULL: SIGHUP) gets the answer. */
void proxy_parent_reload(struct parent *p, struct proxy_ctl_reply *reply);
/* The allowlist, loaded as root with the secrets; diagnostics logged and
 * (when msg is not NULL) the first ones joined into msg. */
int proxy_parent_load(struct parent *p, struct allowlist_set **out, char *msg,
    size_t msglen);
/* Sends the current generation to the child; 0 and *id, or an errno. */
int proxy_parent_send_gen(struct parent *p, uint64_t *id);
/* The child has a generation: "reload ok" logged once, waiting reloads
 * answered. */
void proxy_parent_gen_ack(struct parent *p, const struct proxy_imsg *m);

/* parent_state.c */
/* The state file: read at start (the live runs of a previous parent),
 * written on every change. */
int proxy_parent_state_load(struct parent *p);
void proxy_parent_state_save(struct parent *p);
/* A run as the register line that made it (with its token: the caller
 * wipes and frees it), or NULL (no memory). Greeting a new child and the
 * state file both hand runs on this way. */
char *proxy_parent_run_line(const struct proxy_run *r);

/* parent_signal.c: libevent callbacks, each with the parent as arg. */
void proxy_parent_on_sighup(evutil_socket_t sig, short what, void *arg);
void proxy_parent_on_sigusr1(evutil_socket_t sig, short what, void *arg);
void proxy_parent_on_sigterm(evutil_socket_t sig, short what, void *arg);
/* The drain's grace period is over: the child is killed, the loop ends. */
void proxy_parent_on_grace(evutil_socket_t fd, short what, void *arg);
/* Every second: the run registry's expiry (the state file saved when a
 * run expired). */
void proxy_parent_on_tick(evutil_socket_t fd, short what, void *arg);

#endif
