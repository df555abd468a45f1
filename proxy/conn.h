/*
 * Private to the daemon's connection files: one client connection and the
 * request it is serving, and the steps it goes through. Calls go one way:
 * server.c (listeners) -> request.c (heads) -> upstream.c (decision,
 * connect) -> tunnel.c / forward.c (relays), every one of them -> conn.c
 * (life cycle); conn.c calls none of them (the next request on a kept-alive
 * connection and the connect deadline go through the hooks below).
 * Nothing outside proxy/ includes this header; main.c sees server.h only.
 */
#ifndef CORDON_PROXY_CONN_H
#define CORDON_PROXY_CONN_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cjson/cJSON.h>
#include <event2/event_struct.h>

#include "proxy/config.h"
#include "proxy/host.h"
#include "proxy/http.h"
#include "proxy/tlshello.h"

struct accesslog;
struct allowlist_inspect;
struct allowlist_set;
struct bufferevent;
struct cbuf;
struct dns;
struct dns_query;
struct event;
struct evconnlistener;
struct helloread;
struct inspect;
struct conn;

/* How a request head, once parsed, is judged and carried out: the
 * forward path's (request.c) or an inspected tunnel's (inspect.c). Both
 * run request.c's one pipeline (proxy_request_wait_path): the head
 * awaited against the header deadline, parsed, a malformed or oversized
 * one answered, then decide; on yes the client is held (what it sends
 * meanwhile is only kept) and go carries the request on. */
struct proxy_request_next {
	struct host_parsed hp;	/* forward: the host to decide on */
	const char *secret;	/* inspected: a secret to ask the parent
				   for first (borrowed: use it in go) */
};
struct proxy_request_path {
	/* NULL, or called once a head is parsed, before it is judged (the
	 * log's fields); false when it answered. */
	bool (*prepare)(struct conn *c);
	/* Judges hr: false when it answered (a refusal). */
	bool (*decide)(struct conn *c, const struct http_request *hr,
	    struct proxy_request_next *next);
	/* The head is still the input's first head_len bytes. */
	void (*go)(struct conn *c, size_t head_len,
	    struct proxy_request_next *next);
	/* NULL, or told that the client's stream failed (BEV_EVENT_ERROR)
	 * while a head was awaited, before c is freed. */
	void (*failed)(struct conn *c);
};
struct proxy_metrics;
struct proxy_pending;
struct proxy_run;
struct proxy_runs;
struct proxy_selfaddr;
struct proxy_tls;
struct zerocopy;

/* Relay limits: bytes queued towards one side before reading from the
 * other stops, and the largest single read. Reads are capped to the room
 * left below CONN_OUT_MAX, so a tunnel whose client never reads pins about
 * one buffer chain per direction. libevent 2.1 reads at most 4096 bytes
 * per call (EVBUFFER_MAX_READ) into chains it rounds (data plus header) up
 * to a power of two, 8 KiB: the limit stays just under one such chain. */
#define CONN_OUT_MAX	(8 * 1024 - 128)
#define CONN_READ_MAX	CONN_OUT_MAX
#define CONN_READ_MIN	1024	/* less room than this: wait for a drain */

/* Where a connection is. Every change goes through proxy_conn_state_set
 * (conn_state.c), which checks it against the one table of allowed
 * steps; the timer (conn.c) acts on the state. */
enum conn_state {
	CONN_HEAD,		/* reading a request head (the timer: the
				 * head's deadline, keep-alive idle) */
	CONN_RESOLVING,		/* the resolver has the name (its own
				 * deadline) */
	CONN_PARENT,		/* an inspected tunnel waits for its parent:
				 * a leaf certificate or a secret (nothing
				 * timed: it answers or dies with the child) */
	CONN_CONNECTING,	/* to upstream (connect_timeout) */
	CONN_TUNNEL,		/* relaying a tunnel (idle timeout) */
	CONN_FORWARD,		/* relaying a forwarded request (idle) */
	CONN_LINGER,		/* answer sent; draining input, then close */
	CONN_NSTATES
};

/* conn_state.c: the state's name ("head", ...; "invalid"); whether the
 * table allows from -> to; and the one way to change c->state (a step
 * the table does not allow is logged as a bug, then taken). */
const char *proxy_conn_state_name(enum conn_state s);
bool proxy_conn_state_allowed(enum conn_state from, enum conn_state to);
void proxy_conn_state_set(struct conn *c, enum conn_state to);

/* One request: what the access log line needs, and the upstream plan. */
struct conn_req {
	int64_t start_wall_ms;
	int64_t start_mono_ms;
	char method[24];
	/* The strings are on the heap at their length (a tunnel keeps its
	 * record for its whole life: inline arrays sized for the longest
	 * name made most of an idle tunnel's memory). */
	char *host;		/* normalised; NULL until the head is parsed */
	enum host_kind host_kind;	/* a name or an IP literal */
	uint16_t port;
	bool is_connect;
	bool is_head;		/* HEAD: response has no body */
	bool keep_alive;	/* client wants to keep the connection */
	bool logged;
	const char *decision;	/* "allow", "deny", "error"; NULL: pending */
	char reason[96];	/* "not-on-policy NAME" fits */
	/* Run mode: the run this request is noted in (its credential was
	 * accepted), or NULL; and the bytes already added to its totals. */
	struct proxy_run *run;
	uint64_t run_up, run_down;
	int status;
	int64_t dns_ms, connect_ms;
	char address[INET6_ADDRSTRLEN + 8];	/* connected to */
	/* CONNECT: the server_name of the client's ClientHello, as sent
	 * (for the log), or NULL. */
	char *sni;
	/* TLS inspection: the deciding entry has `inspect` (a CONNECT is
	 * then terminated, tunnel.c -> inspect.c); the request was checked
	 * against its options (logged "inspected"), its path for the log
	 * (query stripped, at most CONN_PATH_MAX bytes; NULL: none), and a
	 * plain-HTTP request's target as sent (for the check; NULL for
	 * CONNECT). */
	bool inspect;
	bool inspected;
	/* The deciding entry has `raw`: the tunnel carries any bytes, and
	 * its first ones are not checked. */
	bool raw;
	/* The request carries a method or URL override header
	 * (allowlist_override_header). */
	bool override_header;
	/* Came through the transparent listener: a "tunnel" gets no 200 (the
	 * client never asked for one); how the name was learnt is via. */
	bool transparent;
	const char *via;	/* egress.h's words (static); NULL: not
				   known yet (proxy_conn_req_via) */
	char *path;
	char *target;

	/* Candidate addresses (permitted only), tried in order. */
	struct sockaddr_storage *addrs;
	size_t naddrs, next_addr;
	int last_err;		/* errno of the last failed attempt */
	int64_t attempt_ms;	/* start of the current attempt */

	/* HTTP forwarding: the head for upstream, request body framing and
	 * response framing. */
	struct cbuf *uphead;
	int64_t body_left;	/* Content-Length bytes still to send */
	bool body_chunked;
	struct http_chunk_state req_chunk;
	bool req_done;
	bool resp_head_done;
	bool resp_started;	/* something was sent to the client */
	enum http_body_kind resp_body;
	int64_t resp_left;
	struct http_chunk_state resp_chunk;
	bool resp_done;
	bool close_client;	/* no further request on this connection */
	bool client_http10;

	uint64_t bytes_up, bytes_down;
};

struct conn {
	struct proxy_server *srv;
	struct conn *prev, *next;
	struct bufferevent *cli;
	struct bufferevent *up;
	enum conn_state state;
	struct event timer;	/* head deadline, connect deadline, idle */
	struct dns_query *dq;
	struct conn_req *req;
	struct zerocopy *zc;	/* spliced tunnel (cli/up are then NULL) */
	/* A tunnel whose client's first bytes the SNI check is reading:
	 * nothing goes upstream until its verdict. NULL otherwise. */
	struct helloread *hr;
	/* An inspected tunnel (inspect.c): its fixed facts, how the next
	 * request is awaited (NULL: srv->request_wait) and what to release
	 * when c is freed (NULL: nothing). */
	struct inspect *insp;
	/* The pipeline of the head now awaited (request.c's or inspect.c's). */
	const struct proxy_request_path *path;
	void (*wait_next)(struct conn *c);
	void (*on_free)(struct conn *c);
	/* CONN_CONNECTING: what the timer calls (upstream.c sets it). */
	void (*connect_timeout)(struct conn *c);
	int64_t last_active_ms;	/* tunnel idle timeout */
	unsigned nrequests;
	uint32_t head_scanned;	/* bytes searched for the head's end */
	bool cli_eof;
	bool up_eof;
	bool close_after_flush;
	char client[INET6_ADDRSTRLEN + 8];
	union {			/* the client's address */
		struct sockaddr sa;
		struct sockaddr_in sin;
		struct sockaddr_in6 sin6;
	} peer;
	/* Run mode: the run of the first accepted request, counted in its
	 * conns until c closes; later requests must name the same run. */
	struct proxy_run *run;
	/* Counted in srv->pending until its first request is admitted. */
	bool pending;
	/* The transparent listener's connections (transparent.c): the
	 * address the client meant (SO_ORIGINAL_DST), and what it speaks,
	 * so a refusal is said in its protocol (an HTTP answer, a TLS
	 * alert, or only the close). */
	bool transparent;
	enum { SPEAKS_HTTP = 0, SPEAKS_TLS, SPEAKS_RAW } speaks;
	struct sockaddr_storage orig;
	uint16_t orig_port;
	/* The name the run's resolver gave orig (or orig as an IP literal)
	 * when it decided no raw tunnel, and why: what a refusal of plain
	 * bytes is noted under. NULL: none. */
	char *orig_name;
	char orig_why[96];
};

/* The server (server.h gives everyone else an opaque pointer). */
struct proxy_server {
	const struct proxy_config *cfg;
	struct event_base *base;
	struct dns *dns;
	struct accesslog *alog;
	struct proxy_metrics *m;
	struct allowlist_set *set;
	/* TLS inspection (--ca-cert/--ca-key), or NULL: unavailable. */
	struct proxy_tls *tls;
	/* The network child's link to its parent (leaves, secrets), or
	 * NULL: both are here (tls's CA has its key, the set its secrets). */
	struct proxy_psep *psep;
	/* Run mode (cfg->control set): the registry and its expiry timer;
	 * NULL in standalone mode. */
	struct proxy_runs *runs;
	struct event *runs_tick;
	/* Connections not yet admitted, per source address (pending.h). */
	struct proxy_pending *pending;
	/* The closed resolver (dnsd.c), or NULL; standalone mode's one
	 * synthetic address map (in run mode each run has its own). */
	struct proxy_dnsd *dnsd;
	struct proxy_synth *synth;
	struct evconnlistener *lev[CONFIG_MAX_LISTEN];
	struct evconnlistener *tlev;	/* --transparent, or NULL */
	struct proxy_config_addr bound[CONFIG_MAX_LISTEN];
	size_t nlisten;
	struct proxy_selfaddr *self;	/* its own addresses (selfaddr.h) */
	struct event *self_tick;	/* refreshes the local ones */
	struct conn *conns;
	size_t nconns;
	struct event *accept_retry;
	bool draining;
	bool drain_called;
	void (*drain_done)(void *);
	void *drain_arg;
	/* Waits for (the next) request head on c and serves what is already
	 * buffered (request.c's proxy_request_wait; set by server.c). */
	void (*request_wait)(struct conn *c);
};

/* conn.c: the life cycle. */

/* A new connection on the accepted socket fd from sa, counted and linked
 * into s. Returns 0 and *out, or -ENOMEM (fd is then the caller's). */
int proxy_conn_new(struct proxy_server *s, int fd, const struct sockaddr *sa,
    struct conn **out);
void proxy_conn_format_addr(const struct sockaddr *sa, char *buf, size_t len);
void proxy_conn_timer_arm(struct conn *c, int ms);
/* The path r took, as the egress report and the access log say it:
 * r->via, else "proxy" (refused before a request line was read). */
const char *proxy_conn_req_via(const struct conn_req *r);
/* Closes both sides and frees c (and its request, logged first). */
void proxy_conn_free(struct conn *c);
/* A new request record (start times set); NULL on ENOMEM. */
struct conn_req *proxy_conn_req_new(void);
/* Sets *dst (a string of a request record) to a copy of the first n bytes
 * of src, freeing what it held. 0, or -ENOMEM (*dst is then NULL). */
int proxy_conn_req_str(char **dst, const char *src, size_t n);
/* Sets r->path, the request's path for the log, from the len bytes of its
 * target: up to the query, at most CONN_PATH_MAX bytes. 0 or -ENOMEM. */
int proxy_conn_req_path(struct conn_req *r, const char *target, size_t len);
#define CONN_PATH_MAX	256
/* Answers status with X-Cordon-Error: reason and a one-line body, logs
 * the request, and closes the connection after a lingering drain. */
void proxy_conn_fail(struct conn *c, int status, const char *decision,
    const char *reason);
/* Logs the current request (once) and frees it. */
void proxy_conn_request_done(struct conn *c);
/* Counts c as pending for its source address; false when the address
 * already has --source-max-pending of them (c is then not counted). */
bool proxy_conn_pending_start(struct conn *c);
/* c's request was admitted: it is no longer pending. */
void proxy_conn_admitted(struct conn *c);
/* Refuses c at once without reading: one best-effort answer, the access
 * log line (and the run's report, by source address), then the close. */
void proxy_conn_refuse_now(struct conn *c, int status, const char *reason);
/* Closes once the client output is flushed. */
void proxy_conn_close_when_flushed(struct conn *c);
/* Back to reading the next request on a kept-alive connection. */
void proxy_conn_next_request(struct conn *c);
int proxy_conn_idle_timeout_ms(const struct conn *c);
int proxy_conn_max_header(const struct conn *c);
int proxy_conn_head_parse(struct conn *c, struct http_request **hrp,
    int *rcp);
struct proxy_metrics *proxy_conn_metrics(const struct conn *c);
bool proxy_conn_draining(const struct conn *c);
struct event_base *proxy_conn_base(const struct conn *c);
bool proxy_conn_splice_enabled(const struct conn *c);

/* runconn.c: run mode on connections (conn.c and the steps call it). */

/* Checks hr's credential against the registry and ties c to its run; on
 * refusal answers 407/429 (c is then lingering) and returns false. True
 * at once in standalone mode. */
bool proxy_run_admit(struct conn *c, const struct http_request *hr);
/* The policy name that decides c's current request: its run's in run
 * mode, --policy in standalone mode. */
const char *proxy_run_policy(const struct conn *c);
/* Adds the request's new bytes to its run's totals. When the run is over
 * a byte limit, closes every connection of the run (c included) and
 * returns false. */
bool proxy_run_account(struct conn *c);
/* At log time: final byte totals, and the request noted in its run's
 * egress report. Closes nothing. */
void proxy_run_request_done(struct conn *c, struct conn_req *r);
/* c is closing: no longer counted against its run. */
void proxy_run_detach(struct conn *c);
/* Closes every client connection of run. A pending request is logged as
 * an "error" with reason; with force, a request already decided (a live
 * tunnel) keeps its decision but is logged with reason too. */
void proxy_run_close_conns(struct proxy_server *s, struct proxy_run *run,
    const char *reason, bool force);
/* run's policy was changed (the policy op): each of its connections let
 * through under the old one is judged again (host and port, how it is
 * carried: raw or inspected, and a tunnel's ClientHello name); those the
 * new one denies are closed, logged as "deny" with reason "policy-changed
 * WHY", and added to closed as {"host","port","reason"}. The number
 * closed, or -ENOMEM. */
int proxy_run_repolicy(struct proxy_server *s, struct proxy_run *run,
    cJSON *closed);
/* False when c's run limits bytes (its tunnels are then relayed in user
 * space, where the limit is enforced). */
bool proxy_run_splice_ok(const struct conn *c);
/* Starts the 1 s expiry timer of s->runs. 0 or -ENOMEM. */
int proxy_run_tick_start(struct proxy_server *s);

/* policy.c: policy decisions (the request's host and the SNI check). */

/* Whether host:port passes c's policy (its run's in run mode, --policy in
 * standalone mode). why gets the allowlist's reason either way; a refusal
 * by no entry is "not-on-policy NAME", and a run whose policy a reload
 * removed gets "policy-removed". */
bool proxy_policy_check(struct conn *c, const char *host, uint16_t port,
    char *why, size_t len);
/* The same, and *inspect (may be NULL) gets the deciding allow entry's
 * inspect options (borrowed from the current set: valid until the next
 * reload, so use them at once), or NULL; *raw (may be NULL) whether that
 * entry says `raw`. */
bool proxy_policy_decide(struct conn *c, const char *host, uint16_t port,
    char *why, size_t len, const struct allowlist_inspect **inspect,
    bool *raw);
/* The SNI check's verdict on h, a final parse of what c's tunnel client
 * sent first: NULL to let the tunnel go on, else the refusal reason
 * (static, or written into buf). See proxy/README.md for the rules. */
const char *proxy_sni_verdict(struct conn *c, const struct proxy_tlshello *h,
    char *buf, size_t len);

/* request.c: whether hr carries a method or URL override header. */
bool proxy_request_has_override(const struct http_request *hr);
/* request.c: waits for a request head on c, checks it and hands it on
 * (the forward path). */
void proxy_request_wait(struct conn *c);
/* request.c: the same pipeline with path's steps (inspect.c's inside a
 * tunnel); serves what is already buffered. */
void proxy_request_wait_path(struct conn *c,
    const struct proxy_request_path *path);
/* upstream.c: NULL when the proxy may connect to sa:port, else the reason
 * ("address-self", "address-CLASS") written into buf. Port 0: on some
 * port (the closed resolver's question). */
const char *proxy_upstream_blocked(const struct proxy_server *s,
    const struct sockaddr *sa, uint16_t port, char *buf, size_t len);
/* upstream.c: decides and connects (hp is the parsed request host). */
void proxy_upstream_decide(struct conn *c, const struct host_parsed *hp);
/* tunnel.c: upstream connected for a CONNECT: answers 200 and relays both
 * ways (spliced when it can) until both sides end. */
void proxy_tunnel_start(struct conn *c);
/* forward.c: upstream connected; send the head and relay the exchange. */
void proxy_forward_start(struct conn *c);
/* transparent.c: a connection the host redirected to the transparent
 * listener (accepted and counted by server.c): learns the destination and
 * the run, then the name (by synthetic address, ClientHello or Host) and
 * hands it to upstream.c or request.c. */
void proxy_transparent_begin(struct conn *c);
/* The TLS alert a refused TLS client reads (7 bytes). */
extern const char proxy_tls_alert[7];

/* inspect.c: the SNI check passed on a tunnel to an inspected entry
 * (c->cli holds the unread ClientHello, c->up the checked connection):
 * terminates TLS and serves the requests inside. */
void proxy_inspect_begin(struct conn *c);

#endif
