/*
 * Run mode on client connections: the credential check of every request
 * (407 reasons), tying a connection to its run and the run's connection
 * and byte limits (429 reasons), byte accounting and the egress report
 * note at log time, closing a run's connections (unregister, deadline,
 * byte limit) and the 1 s expiry timer. The token is never logged.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <event2/event.h>

#include "common/log.h"
#include "common/util.h"
#include "proxy/config.h"
#include "proxy/conn.h"
#include "proxy/cred.h"
#include "proxy/egress.h"
#include "proxy/http.h"
#include "proxy/runs.h"

#define RUN_TICK_MS	1000

static const struct sockaddr *
run_peer(const struct conn *c)
{
	return (const struct sockaddr *)&c->peer;
}

/* The single Proxy-Authorization header of hr; NULL when there is none,
 * and *many set when there is more than one. */
static const struct http_header *
run_auth_header(const struct http_request *hr, bool *many)
{
	static const char name[] = "Proxy-Authorization";
	const struct http_header *h = NULL;

	*many = false;
	for (size_t i = 0; i < hr->nheaders; i++) {
		if (hr->headers[i].name_len != sizeof(name) - 1 ||
		    strncasecmp(hr->headers[i].name, name, sizeof(name) - 1)
		    != 0)
			continue;
		if (h != NULL)
			*many = true;
		h = &hr->headers[i];
	}
	return h;
}

/* Which run hr's credential names, or NULL with the 407 reason in *why. */
static struct proxy_run *
run_identify(struct conn *c, const struct http_request *hr, const char **why)
{
	struct proxy_server *s = c->srv;
	const struct http_header *h;
	struct proxy_cred cred;
	struct proxy_run *run = NULL;
	int64_t now = time_wall_ms();
	bool many;

	h = run_auth_header(hr, &many);
	if (h == NULL) {
		*why = proxy_runs_live_at(s->runs, run_peer(c), now) ?
		    "credential-missing" : "no-live-run";
		return NULL;
	}
	if (many || proxy_cred_parse(h->value, h->value_len, &cred) != 0) {
		*why = "credential-malformed";
		return NULL;
	}
	run = proxy_runs_find(s->runs, cred.run);
	/* No such run and a wrong token look the same from outside. */
	if (run == NULL || !proxy_cred_token_equal(cred.token, run->token))
		*why = "credential-unknown";
	else if (proxy_run_expired(run, now))
		*why = "credential-expired";
	else if (!proxy_run_addr_match(run, run_peer(c)) ||
	    (c->run != NULL && c->run != run))
		*why = "credential-wrong-source";
	else
		*why = NULL;
	explicit_bzero(&cred, sizeof(cred));
	return *why == NULL ? run : NULL;
}

bool
proxy_run_admit(struct conn *c, const struct http_request *hr)
{
	struct proxy_run *run;
	const char *why;

	if (c->srv->runs == NULL)
		return true;
	/* The transparent listener's: the run registered at the source
	 * address, tied at accept (no credential travels). */
	if (c->transparent) {
		c->req->run = c->run;
		if (c->run == NULL) {
			proxy_conn_fail(c, 407, "deny", "no-live-run");
			return false;
		}
		if (proxy_run_over_bytes(c->run)) {
			proxy_conn_fail(c, 429, "deny", "run-bytes-limit");
			return false;
		}
		return true;
	}
	run = run_identify(c, hr, &why);
	if (run == NULL) {
		proxy_conn_fail(c, 407, "deny", why);
		return false;
	}
	/* From here on the request is the run's: noted in its report. */
	c->req->run = run;
	if (proxy_run_over_bytes(run)) {
		proxy_conn_fail(c, 429, "deny", "run-bytes-limit");
		return false;
	}
	if (c->run == NULL) {
		if (run->conns >= run->lim.max_conns) {
			proxy_conn_fail(c, 429, "deny", "run-connection-limit");
			return false;
		}
		c->run = run;
		run->conns++;
	}
	return true;
}

const char *
proxy_run_policy(const struct conn *c)
{
	if (c->srv->runs == NULL)
		return c->srv->cfg->policy;
	return c->req != NULL && c->req->run != NULL ? c->req->run->policy :
	    NULL;
}

static uint64_t
run_sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

/* Adds what r moved since the last call to its run's totals. */
static void
run_add_bytes(struct proxy_run *run, struct conn_req *r)
{
	run->bytes_up = run_sat_add(run->bytes_up, r->bytes_up - r->run_up);
	run->bytes_down = run_sat_add(run->bytes_down,
	    r->bytes_down - r->run_down);
	r->run_up = r->bytes_up;
	r->run_down = r->bytes_down;
}

bool
proxy_run_account(struct conn *c)
{
	struct proxy_run *run = c->req != NULL ? c->req->run : NULL;

	if (run == NULL)
		return true;
	run_add_bytes(run, c->req);
	if (!proxy_run_over_bytes(run))
		return true;
	log_info("run %s: byte limit passed (%" PRIu64 " up, %" PRIu64
	    " down): closing its connections", run->id, run->bytes_up,
	    run->bytes_down);
	proxy_run_close_conns(c->srv, run, "run-bytes-limit", true);
	return false;
}

void
proxy_run_request_done(struct conn *c, struct conn_req *r)
{
	struct proxy_run *run = r->run;
	enum proxy_egress_decision d;

	/* A refusal before the credential (a bad head, a missing or wrong
	 * credential, the pending cap) belongs to the run registered at
	 * the source address, when exactly one is: the sandbox's own
	 * attempts all show in its report. */
	if (run == NULL && c->srv->runs != NULL)
		run = r->run = proxy_runs_at(c->srv->runs, run_peer(c),
		    time_wall_ms());
	if (run == NULL)
		return;
	run_add_bytes(run, r);
	/* The access log's word: a failure (DNS, connect, upstream, the
	 * client gone before a decision) is an error, not a denial. */
	d = proxy_egress_decision_of(r->decision);
	/* -ENOSPC/-ENOMEM: counted as dropped by the report itself. */
	/* Noted as it ends, ordered by when it started; a request that
	 * never named a host (a malformed head) is noted under "-". */
	(void)proxy_egress_note_via(run->egress, r->host != NULL &&
	    r->host[0] != '\0' ? r->host : "-", r->port,
	    proxy_conn_req_via(r), d, r->reason, r->status,
	    r->start_mono_ms);
	if (d == PROXY_EGRESS_ALLOWED && (r->bytes_up > 0 || r->bytes_down > 0))
		(void)proxy_egress_bytes_via(run->egress, r->host, r->port,
		    proxy_conn_req_via(r), r->bytes_up, r->bytes_down);
}

void
proxy_run_detach(struct conn *c)
{
	if (c->run == NULL)
		return;
	c->run->conns--;
	c->run = NULL;
}

void
proxy_run_close_conns(struct proxy_server *s, struct proxy_run *run,
    const char *reason, bool force)
{
	struct conn *c, *next;

	for (c = s->conns; c != NULL; c = next) {
		next = c->next;
		if (c->run != run)
			continue;
		if (c->req != NULL && (c->req->decision == NULL || force)) {
			if (c->req->decision == NULL)
				c->req->decision = "error";
			snprintf(c->req->reason, sizeof(c->req->reason), "%s",
			    reason);
		}
		proxy_conn_free(c);
	}
}

/* Why c, decided under the run's old policy, may not stay open under its
 * policy now; NULL when it may. */
static const char *
repolicy_why(struct conn *c, char *why, size_t len)
{
	const struct allowlist_inspect *insp;
	struct conn_req *r = c->req;
	bool raw;

	if (!proxy_policy_decide(c, r->host, r->port, why, len, &insp, &raw))
		return why;
	/* Carried otherwise than the deciding entry now says. */
	if (r->raw && !raw)
		return "raw-not-allowed";
	if (r->inspect != (insp != NULL))
		return insp != NULL ? "inspect-required" : "inspect-removed";
	/* A tunnel to an address was let through on its ClientHello's
	 * name: that name must still pass. */
	if (r->host_kind != HOST_NAME && r->sni != NULL &&
	    !proxy_policy_decide(c, r->sni, r->port, why, len, NULL, NULL))
		return why;
	return NULL;
}

int
proxy_run_repolicy(struct proxy_server *s, struct proxy_run *run,
    cJSON *closed)
{
	struct conn *c, *next;
	char why[96];
	const char *reason;
	int n = 0;

	for (c = s->conns; c != NULL; c = next) {
		cJSON *e;

		next = c->next;
		/* Undecided requests are judged under the new policy when
		 * they are decided: only what was let through is looked at. */
		if (c->run != run || c->req == NULL || c->req->host == NULL ||
		    c->req->decision == NULL ||
		    strcmp(c->req->decision, "allow") != 0)
			continue;
		if ((reason = repolicy_why(c, why, sizeof(why))) == NULL)
			continue;
		if ((e = cJSON_CreateObject()) == NULL ||
		    !cJSON_AddItemToArray(closed, e) ||
		    cJSON_AddStringToObject(e, "host", c->req->host) == NULL ||
		    cJSON_AddNumberToObject(e, "port", c->req->port) == NULL ||
		    cJSON_AddStringToObject(e, "reason", reason) == NULL)
			return -ENOMEM;
		log_info("run %s: policy now %s: closing %s:%u (%s)", run->id,
		    run->policy, c->req->host, c->req->port, reason);
		c->req->decision = "deny";
		/* "policy-changed " + a reason cut to what fits. */
		snprintf(c->req->reason, sizeof(c->req->reason),
		    "policy-changed %.*s", (int)sizeof(c->req->reason) - 16,
		    reason);
		proxy_conn_free(c);
		n++;
	}
	return n;
}

bool
proxy_run_splice_ok(const struct conn *c)
{
	return c->run == NULL || (c->run->lim.bytes_up == 0 &&
	    c->run->lim.bytes_down == 0);
}

static void
run_expired_cb(struct proxy_run *run, void *arg)
{
	log_info("run %s: deadline passed: closing its %u connections",
	    run->id, run->conns);
	proxy_run_close_conns(arg, run, "run-expired", false);
}

static void
run_forget_cb(struct proxy_run *run, void *arg)
{
	log_info("run %s: forgotten %d s after its deadline (never "
	    "unregistered)", run->id, PROXY_RUNS_LINGER_MS / 1000);
	/* None are left (refused since expiry); be sure. */
	proxy_run_close_conns(arg, run, "run-expired", false);
}

static void
run_tick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_server *s = arg;

	(void)fd;
	(void)what;
	(void)proxy_runs_tick(s->runs, time_wall_ms(), run_expired_cb,
	    run_forget_cb, s);
}

int
proxy_run_tick_start(struct proxy_server *s)
{
	struct timeval tv = { RUN_TICK_MS / 1000, (RUN_TICK_MS % 1000) * 1000 };

	s->runs_tick = event_new(s->base, -1, EV_PERSIST, run_tick_cb, s);
	if (s->runs_tick == NULL || event_add(s->runs_tick, &tv) != 0)
		return -ENOMEM;
	return 0;
}
