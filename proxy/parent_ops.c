/*
 * The privileged parent's requests (parent.h): the control socket's ops
 * (register, unregister and report relayed to the network child and
 * answered when it replies; policies, ping and reload answered here),
 * the child's questions (a leaf signed only for a name some policy
 * inspects; a secret's value only for the entry that injects it, under a
 * policy a live run uses), the generations of policies, the access log's
 * descriptor, and the state file that lets a restarted parent know the
 * live runs. The child's messages are decoded strictly (psmsg.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <openssl/crypto.h>

#include "allowlist/allowlist.h"
#include "common/json.h"
#include "common/log.h"
#include "common/util.h"
#include "proxy/accesslog.h"
#include "proxy/ca.h"
#include "proxy/ctl.h"
#include "proxy/ctlsrv.h"
#include "proxy/imsg.h"
#include "proxy/daemon.h"
#include "proxy/parent.h"
#include "proxy/psmsg.h"
#include "proxy/runs.h"

#define STATE_MAX	(16u * 1024 * 1024)

/* --- loading and generations --------------------------------------------- */

int
proxy_parent_load(struct parent *p, struct allowlist_set **out, char *msg,
    size_t msglen)
{
	struct allowlist_load_opts opts = { .secrets = p->cfg.secrets };
	struct allowlist_diag diag;
	struct allowlist_set *set = NULL;
	size_t used = 0;
	int rc;

	*out = NULL;
	if (msg != NULL && msglen > 0)
		msg[0] = '\0';
	allowlist_diag_init(&diag);
	rc = allowlist_set_load_opts(p->cfg.allowlist, &opts, &set, &diag);
	for (size_t i = 0; i < diag.count; i++) {
		log_warnx("%s", diag.items[i].text);
		if (msg != NULL && !diag.items[i].warning && used + 2 < msglen)
			used += (size_t)snprintf(msg + used, msglen - used,
			    "%s%s", used > 0 ? "; " : "", diag.items[i].text);
	}
	if (diag.dropped > 0)
		log_warnx("%s: %zu more diagnostics not shown",
		    p->cfg.allowlist, diag.dropped);
	allowlist_diag_cleanup(&diag);
	if (rc != 0) {
		log_warnx("%s: allowlist rejected (%s)", p->cfg.allowlist,
		    strerror(-rc));
		if (msg != NULL && used == 0)
			snprintf(msg, msglen, "%s: %s", p->cfg.allowlist,
			    strerror(-rc));
		return rc;
	}
	/* Run mode: each run names its policy at register; --policy is not
	 * used, and the set need not have it. */
	if (p->cfg.control == NULL &&
	    allowlist_set_policy(set, p->cfg.policy) == NULL) {
		log_warnx("%s: no policy named \"%s\"", p->cfg.allowlist,
		    p->cfg.policy);
		if (msg != NULL)
			snprintf(msg, msglen, "%s: no policy named \"%s\"",
			    p->cfg.allowlist, p->cfg.policy);
		allowlist_set_free(set);
		return -ENOENT;
	}
	*out = set;
	return 0;
}

int
proxy_parent_send_gen(struct parent *p, uint64_t *id)
{
	cJSON *o = cJSON_CreateObject(), *a;
	struct allowlist_source src;
	char *text = NULL;
	int rc = -ENOMEM;

	*id = ++p->next_id;
	if (p->chan == NULL) {
		cJSON_Delete(o);
		return -EPIPE;
	}
	if (o == NULL || cJSON_AddNumberToObject(o, "gen", (double)p->gen) ==
	    NULL || (a = cJSON_AddArrayToObject(o, "policies")) == NULL)
		goto out;
	for (size_t i = 0; allowlist_set_source(p->set, i, &src) == 0; i++) {
		cJSON *e = cJSON_CreateObject(), *t;
		char *copy = malloc(src.len + 1);
		if (e == NULL || copy == NULL ||
		    !cJSON_AddItemToArray(a, e)) {
			cJSON_Delete(e);
			free(copy);
			goto out;
		}
		/* The text as parsed; a NUL in it was a parse error, so it
		 * holds none. */
		memcpy(copy, src.text, src.len);
		copy[src.len] = '\0';
		t = cJSON_AddStringToObject(e, "text", copy);
		free(copy);
		if (t == NULL || cJSON_AddStringToObject(e, "name", src.name) ==
		    NULL || cJSON_AddStringToObject(e, "file", src.file) == NULL)
			goto out;
	}
	if ((text = cJSON_PrintUnformatted(o)) == NULL)
		goto out;
	rc = proxy_chan_send(p->chan, PSMSG_GEN, *id, text, strlen(text), -1);
out:
	free(text);
	cJSON_Delete(o);
	return rc;
}

/* A run as the register line that made it (with its token: the caller
 * wipes and frees it), or NULL (no memory). Greeting a new child and the
 * state file both hand runs on this way. */
static char *
run_register_line(const struct proxy_run *r)
{
	struct proxy_ctl_req req;
	char *line;

	proxy_ctl_req_reset(&req);
	req.op = PROXY_CTL_REGISTER;
	snprintf(req.run, sizeof(req.run), "%s", r->id);
	snprintf(req.addr_text, sizeof(req.addr_text), "%s", r->addr_text);
	snprintf(req.policy, sizeof(req.policy), "%s", r->policy);
	snprintf(req.token, sizeof(req.token), "%s", r->token);
	req.deadline_ms = r->deadline_ms;
	req.max_conns = r->lim.max_conns;
	req.bytes_up = (int64_t)r->lim.bytes_up;
	req.bytes_down = (int64_t)r->lim.bytes_down;
	line = proxy_ctl_format(&req);
	explicit_bzero(req.token, sizeof(req.token));
	return line;
}

static void
greet_run(struct proxy_run *r, void *arg)
{
	struct parent *p = arg;
	char *line;

	if (r->expired || r->deadline_ms <= time_wall_ms())
		return;
	if ((line = run_register_line(r)) == NULL) {
		log_warnx("run %s: cannot be handed to the network child",
		    r->id);
		return;
	}
	/* id 0: its ack is not waited for. */
	(void)proxy_chan_send(p->chan, PSMSG_RUN_ADD, 0, line, strlen(line),
	    -1);
	explicit_bzero(line, strlen(line));
	free(line);
}

int
proxy_parent_child_greet(struct parent *p)
{
	cJSON *o = cJSON_CreateObject();
	char *pem = NULL, *text = NULL;
	size_t len;
	uint64_t id;
	int rc = -ENOMEM;

	if (o == NULL)
		return -ENOMEM;
	if (p->ca != NULL) {
		if (proxy_ca_cert_pem(p->ca, &pem, &len) != 0 ||
		    cJSON_AddStringToObject(o, "ca_cert", pem) == NULL)
			goto out;
	} else if (cJSON_AddNullToObject(o, "ca_cert") == NULL) {
		goto out;
	}
	if ((text = cJSON_PrintUnformatted(o)) == NULL)
		goto out;
	if ((rc = proxy_chan_send(p->chan, PSMSG_INIT, 0, text, strlen(text),
	    -1)) != 0 || (rc = proxy_parent_send_gen(p, &id)) != 0)
		goto out;
	if (p->runs != NULL)
		proxy_runs_each(p->runs, greet_run, p);
out:
	free(pem);
	free(text);
	cJSON_Delete(o);
	return rc;
}

/* --- waiting requests ------------------------------------------------------ */

static struct parent_wait *
wait_add(struct parent *p, enum parent_wait_kind kind, uint64_t id,
    struct proxy_ctl_reply *reply, const char *run)
{
	struct parent_wait *w = calloc(1, sizeof(*w));

	if (w == NULL)
		return NULL;
	w->kind = kind;
	w->id = id;
	w->reply = reply;
	snprintf(w->run, sizeof(w->run), "%s", run != NULL ? run : "");
	w->next = p->waits;
	p->waits = w;
	return w;
}

static struct parent_wait *
wait_take(struct parent *p, uint64_t id, enum parent_wait_kind kind)
{
	struct parent_wait **ww, *w;

	for (ww = &p->waits; (w = *ww) != NULL; ww = &w->next)
		if (w->id == id && w->kind == kind) {
			*ww = w->next;
			return w;
		}
	return NULL;
}

/* {"ok":true,"egress":[],...} with the restarts the run lived through. */
static char *
report_answer(struct proxy_run *r, const void *data, size_t len)
{
	cJSON *o = data != NULL ? cJSON_ParseWithLength(data, len) : NULL;

	if (o == NULL) {
		o = cJSON_CreateObject();
		if (o == NULL || cJSON_AddArrayToObject(o, "egress") == NULL ||
		    cJSON_AddNumberToObject(o, "allowed", 0) == NULL ||
		    cJSON_AddNumberToObject(o, "denied", 0) == NULL ||
		    cJSON_AddNumberToObject(o, "errors", 0) == NULL) {
			cJSON_Delete(o);
			return NULL;
		}
	} else {
		cJSON_DeleteItemFromObjectCaseSensitive(o, "ok");
	}
	if (r != NULL && r->restarts > 0 && cJSON_AddNumberToObject(o,
	    "proxy_restarts", r->restarts) == NULL) {
		cJSON_Delete(o);
		return NULL;
	}
	return proxy_ctl_ok(o);
}

static void
report_done(struct parent *p, struct parent_wait *w, const void *data,
    size_t len)
{
	struct proxy_run *r = proxy_runs_find(p->runs, w->run);
	char *answer = report_answer(r, data, len);

	if (w->kind == PW_UNREGISTER && r != NULL && answer != NULL) {
		proxy_runs_remove(p->runs, r);
		proxy_parent_state_save(p);
	}
	proxy_ctl_reply_send(w->reply, answer != NULL ? answer :
	    proxy_ctl_error("out of memory"));
	free(w);
}

static void
lost_run(struct proxy_run *r, void *arg)
{
	struct parent *p = arg;
	struct accesslog_entry e;

	if (r->expired)
		return;
	r->restarts++;
	if (p->alog == NULL)
		return;
	memset(&e, 0, sizeof(e));
	e.time_ms = time_wall_ms();
	e.client = r->addr_text;
	e.run = r->id;
	e.port = -1;
	e.decision = "error";
	e.reason = "proxy-restarted";
	e.policy = r->policy;
	e.status = -1;
	e.dns_ms = e.connect_ms = -1;
	(void)proxy_accesslog_write(p->alog, &e);
}

void
proxy_parent_child_lost(struct parent *p)
{
	struct parent_wait *w;

	if (p->runs != NULL)
		proxy_runs_each(p->runs, lost_run, p);
	proxy_parent_state_save(p);
	while ((w = p->waits) != NULL) {
		p->waits = w->next;
		switch (w->kind) {
		case PW_REGISTER:
			/* It is in the registry: the next child gets it. */
			proxy_ctl_reply_send(w->reply, proxy_ctl_ok(NULL));
			free(w);
			break;
		case PW_REPORT:
		case PW_UNREGISTER:
			report_done(p, w, NULL, 0);
			break;
		case PW_RELOAD:
			proxy_ctl_reply_send(w->reply, proxy_ctl_error("the "
			    "network child died; the new generation goes to "
			    "its successor"));
			free(w);
			break;
		case PW_POLICY:
			/* The registry has it: the successor gets the run
			 * under its new policy, with no connection open. */
			proxy_ctl_reply_send(w->reply, proxy_ctl_error("the "
			    "network child died; the run's new policy goes to "
			    "its successor"));
			free(w);
			break;
		}
	}
}

/* "N policies: a, b" (run mode) or "policy "P" has N entries". */
static void
describe_set(const struct parent *p, char *buf, size_t len)
{
	size_t n = allowlist_set_count(p->set), used;

	if (p->cfg.control == NULL) {
		snprintf(buf, len, "policy \"%s\" has %zu entries",
		    p->cfg.policy, allowlist_entry_count(allowlist_set_policy(
		    p->set, p->cfg.policy)));
		return;
	}
	used = (size_t)snprintf(buf, len, "%zu policies:", n);
	for (size_t i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s %s",
		    i > 0 ? "," : "", allowlist_set_name(p->set, i));
}

static char *reload_answer(const struct parent *p);

/* --- the child's messages -------------------------------------------------- */

struct inspectable {
	const char *host;
	uint16_t port;
	bool found;
};

/* Whether some policy inspects host:port: the only leaves signed. */
static bool
parent_inspectable(const struct parent *p, const char *host, uint16_t port)
{
	struct allowlist_decision d;

	for (size_t i = 0; i < allowlist_set_count(p->set); i++)
		if (allowlist_match(allowlist_set_policy(p->set,
		    allowlist_set_name(p->set, i)), host, port, &d) &&
		    d.inspect != NULL)
			return true;
	return false;
}

static void
leaf_req(struct parent *p, const struct proxy_imsg *m)
{
	struct proxy_psmsg_leaf_req q;
	unsigned char *der = NULL;
	size_t len = 0;

	if (proxy_psmsg_leaf_req_decode(m->data, m->len, &q) != 0) {
		log_warnx("network child: malformed leaf request: refused");
	} else if (p->ca == NULL || !parent_inspectable(p, q.host, q.port)) {
		log_warnx("network child asked for a leaf for %s:%u, which no "
		    "policy inspects: refused", q.host, q.port);
	} else if (proxy_ca_sign(p->ca, q.host, q.is_ip, q.key, q.keylen,
	    (int64_t)time(NULL), &der, &len) != 0) {
		log_warnx("leaf for %s: cannot sign", q.host);
	}
	(void)proxy_chan_send(p->chan, PSMSG_LEAF, m->id, der, len, -1);
	OPENSSL_free(der);
}

struct live_policy {
	const char *policy;
	bool found;
};

static void
live_policy_cb(struct proxy_run *r, void *arg)
{
	struct live_policy *lp = arg;

	if (!r->expired && r->deadline_ms > time_wall_ms() &&
	    strcmp(r->policy, lp->policy) == 0)
		lp->found = true;
}

static void
secret_req(struct parent *p, const struct proxy_imsg *m)
{
	struct proxy_psmsg_secret_req q;
	struct allowlist_decision d;
	struct live_policy lp = { NULL, false };
	const char *value = NULL, *why = NULL;

	if (proxy_psmsg_secret_req_decode(m->data, m->len, &q) != 0) {
		why = "malformed request";
	} else if (p->runs != NULL) {
		lp.policy = q.policy;
		proxy_runs_each(p->runs, live_policy_cb, &lp);
		if (!lp.found)
			why = "no live run uses that policy";
	} else if (strcmp(q.policy, p->cfg.policy) != 0) {
		why = "not the proxy's policy";
	}
	if (why == NULL && (!allowlist_match(allowlist_set_policy(p->set,
	    q.policy), q.host, q.port, &d) || d.inspect == NULL ||
	    d.inspect->inject_secret == NULL ||
	    strcmp(d.inspect->inject_secret, q.name) != 0 ||
	    d.inspect->inject_value == NULL))
		why = "no entry injects that secret there";
	if (why == NULL)
		value = d.inspect->inject_value;
	else
		log_warnx("network child asked for a secret (%s:%u): refused: "
		    "%s", q.host, q.port, why);
	if (value != NULL)
		(void)proxy_chan_send(p->chan, PSMSG_SECRET, m->id, value,
		    strlen(value), -1);
	else
		(void)proxy_chan_send(p->chan, PSMSG_NO_SECRET, m->id, NULL, 0,
		    -1);
}

void
proxy_parent_alog_to_child(struct parent *p)
{
	uint64_t size;
	char text[48];
	int fd;

	if (p->alog == NULL || proxy_accesslog_is_stdout(p->alog) ||
	    p->chan == NULL)
		return;
	if ((fd = proxy_accesslog_dup(p->alog, &size)) < 0)
		return;
	snprintf(text, sizeof(text), "{\"size\":%" PRIu64 "}", size);
	(void)proxy_chan_send(p->chan, PSMSG_ALOG_FD, 0, text, strlen(text), fd);
}

static void
gen_ack(struct parent *p, const struct proxy_imsg *m)
{
	struct parent_wait **ww, *w;
	uint64_t gen;

	if (proxy_psmsg_gen_ack_decode(m->data, m->len, &gen) != 0)
		return;
	if (p->announce_gen != 0 && gen >= p->announce_gen) {
		char msg[1024];
		describe_set(p, msg, sizeof(msg));
		log_info("reload ok: %s (generation %" PRIu64 ")", msg, gen);
		p->announce_gen = 0;
	}
	for (ww = &p->waits; (w = *ww) != NULL;) {
		if (w->kind != PW_RELOAD || w->gen > gen) {
			ww = &w->next;
			continue;
		}
		*ww = w->next;
		proxy_ctl_reply_send(w->reply, reload_answer(p));
		free(w);
	}
}

static void
run_ack(struct parent *p, const struct proxy_imsg *m)
{
	struct parent_wait *w = wait_take(p, m->id, PW_REGISTER);
	cJSON *o;
	struct proxy_run *r;

	if (w == NULL)
		return;		/* a replayed run's ack */
	o = cJSON_ParseWithLength(m->data, m->len);
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "ok"))) {
		proxy_ctl_reply_send(w->reply, proxy_ctl_ok(NULL));
	} else {
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "error");
		if ((r = proxy_runs_find(p->runs, w->run)) != NULL) {
			proxy_runs_remove(p->runs, r);
			proxy_parent_state_save(p);
		}
		proxy_ctl_reply_send(w->reply, proxy_ctl_error(cJSON_IsString(e) ?
		    e->valuestring : "the network child refused the run"));
	}
	cJSON_Delete(o);
	free(w);
}

static void
report_msg(struct parent *p, const struct proxy_imsg *m)
{
	struct parent_wait *w = wait_take(p, m->id, PW_REPORT);
	bool ok;

	if (w == NULL && (w = wait_take(p, m->id, PW_UNREGISTER)) == NULL)
		return;
	/* The child's "unknown run" (it was restarted and the run was past
	 * its deadline) is an empty report here: the registry knows it. */
	if (proxy_psmsg_report_check(m->data, m->len, &ok) != 0 || !ok)
		report_done(p, w, NULL, 0);
	else
		report_done(p, w, m->data, m->len);
}

static void policy_ack(struct parent *p, const struct proxy_imsg *m);

void
proxy_parent_child_msg(void *arg, const struct proxy_imsg *m)
{
	struct parent *p = arg;

	if (m == NULL) {
		proxy_parent_child_lost_channel();
		return;
	}
	if (m->fd >= 0)
		close(m->fd);	/* the child passes none */
	switch (m->type) {
	case PSMSG_READY:
		p->ready = true;
		proxy_parent_announce();
		break;
	case PSMSG_GEN_ACK:
		gen_ack(p, m);
		break;
	case PSMSG_RUN_ACK:
		run_ack(p, m);
		break;
	case PSMSG_POLICY_ACK:
		policy_ack(p, m);
		break;
	case PSMSG_REPORT:
		report_msg(p, m);
		break;
	case PSMSG_LEAF_REQ:
		leaf_req(p, m);
		break;
	case PSMSG_SECRET_REQ:
		secret_req(p, m);
		break;
	case PSMSG_ROTATE:
		if (p->alog != NULL && proxy_accesslog_rotate(p->alog) == 0)
			proxy_parent_alog_to_child(p);
		break;
	default:
		log_warnx("network child: unknown message %u: ignored",
		    m->type);
		break;
	}
}

/* --- the control socket ---------------------------------------------------- */

static char *
ctl_register(struct parent *p, const struct proxy_ctl_req *req,
    struct proxy_ctl_reply *reply, bool *later)
{
	struct proxy_run_limits def = { .max_conns = p->cfg.run_max_conns,
	    .bytes_up = p->cfg.run_bytes_up, .bytes_down = p->cfg.run_bytes_down };
	struct proxy_run *run;
	char *err, *line;
	uint64_t id;

	if ((err = proxy_ctl_runs_add(p->runs, p->set, req, &def,
	    time_wall_ms(), &run)) != NULL)
		return err;
	proxy_parent_state_save(p);
	if (p->chan == NULL)
		return proxy_ctl_ok(NULL);	/* the next child gets it */
	line = proxy_ctl_format(req);
	id = ++p->next_id;
	if (line == NULL || proxy_chan_send(p->chan, PSMSG_RUN_ADD, id, line,
	    strlen(line), -1) != 0 || wait_add(p, PW_REGISTER, id, reply,
	    req->run) == NULL) {
		if (line != NULL)
			explicit_bzero(line, strlen(line));
		free(line);
		proxy_runs_remove(p->runs, run);
		proxy_parent_state_save(p);
		return proxy_ctl_error("cannot reach the network child");
	}
	explicit_bzero(line, strlen(line));
	free(line);
	*later = true;
	return NULL;
}

/* The policy op: the registry (and its state file) first, so a child
 * started later gets the new policy; then the child, which closes what
 * the new policy denies and answers with the closures. */
static char *
ctl_policy(struct parent *p, const struct proxy_ctl_req *req,
    struct proxy_ctl_reply *reply, bool *later)
{
	struct proxy_run *r = p->runs != NULL ? proxy_runs_find(p->runs,
	    req->run) : NULL;
	char *line;
	uint64_t id;

	if (r == NULL)
		return proxy_ctl_error("unknown run");
	if (r->expired)
		return proxy_ctl_error("run past its deadline");
	if (p->set == NULL || allowlist_set_policy(p->set, req->policy) ==
	    NULL)
		return proxy_ctl_unknown_policy(p->set, req->policy);
	snprintf(r->policy, sizeof(r->policy), "%s", req->policy);
	proxy_parent_state_save(p);
	if (p->chan == NULL) {
		cJSON *o = cJSON_CreateObject();
		/* No child now: the next one gets the run with it. */
		if (o == NULL || cJSON_AddStringToObject(o, "policy",
		    req->policy) == NULL ||
		    cJSON_AddArrayToObject(o, "closed") == NULL) {
			cJSON_Delete(o);
			return proxy_ctl_error("out of memory");
		}
		return proxy_ctl_ok(o);
	}
	line = proxy_ctl_format(req);
	id = ++p->next_id;
	if (line == NULL || proxy_chan_send(p->chan, PSMSG_RUN_POLICY, id,
	    line, strlen(line), -1) != 0 || wait_add(p, PW_POLICY, id, reply,
	    req->run) == NULL) {
		free(line);
		return proxy_ctl_error("cannot reach the network child");
	}
	free(line);
	*later = true;
	return NULL;
}

static void
policy_ack(struct parent *p, const struct proxy_imsg *m)
{
	struct parent_wait *w = wait_take(p, m->id, PW_POLICY);
	cJSON *o;
	char *line;

	if (w == NULL)
		return;
	/* The child's answer as it is, once it is a valid one. */
	o = cJSON_ParseWithLength(m->data, m->len);
	if (cJSON_IsObject(o) && cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(o,
	    "ok")) && (line = json_print_line(o)) != NULL)
		proxy_ctl_reply_send(w->reply, line);
	else
		proxy_ctl_reply_send(w->reply, proxy_ctl_error("the network "
		    "child sent a malformed answer"));
	cJSON_Delete(o);
	free(w);
}

static char *
ctl_report(struct parent *p, const struct proxy_ctl_req *req, bool forget,
    struct proxy_ctl_reply *reply, bool *later)
{
	struct proxy_run *r = proxy_runs_find(p->runs, req->run);
	cJSON *o = NULL;
	char *text = NULL, *answer;
	uint64_t id;

	if (r == NULL)
		return proxy_ctl_error("unknown run");
	if (p->chan != NULL && (o = cJSON_CreateObject()) != NULL &&
	    cJSON_AddStringToObject(o, "run", req->run) != NULL &&
	    cJSON_AddBoolToObject(o, "forget", forget) != NULL)
		text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	id = ++p->next_id;
	if (text != NULL && proxy_chan_send(p->chan, PSMSG_RUN_DEL, id, text,
	    strlen(text), -1) == 0 && wait_add(p, forget ? PW_UNREGISTER :
	    PW_REPORT, id, reply, req->run) != NULL) {
		free(text);
		*later = true;
		return NULL;
	}
	free(text);
	/* No child now: what the registry knows. */
	answer = report_answer(r, NULL, 0);
	if (forget && answer != NULL) {
		proxy_runs_remove(p->runs, r);
		proxy_parent_state_save(p);
	}
	return answer;
}

char *
proxy_parent_ctl(void *arg, const struct proxy_ctl_req *req,
    struct proxy_ctl_reply *reply, bool *later)
{
	struct parent *p = arg;

	*later = false;
	switch (req->op) {
	case PROXY_CTL_REGISTER:
		return ctl_register(p, req, reply, later);
	case PROXY_CTL_UNREGISTER:
		return ctl_report(p, req, true, reply, later);
	case PROXY_CTL_REPORT:
		return ctl_report(p, req, false, reply, later);
	case PROXY_CTL_POLICIES:
		return proxy_ctl_policies(p->set);
	case PROXY_CTL_PING:
		return proxy_ctl_ok(NULL);
	case PROXY_CTL_RELOAD:
		*later = true;
		proxy_parent_reload(p, reply);
		return NULL;
	case PROXY_CTL_POLICY:
		return ctl_policy(p, req, reply, later);
	default:
		return proxy_ctl_error("unknown op");
	}
}

/* --- reload ---------------------------------------------------------------- */

/* {"ok":true,"generation":N,"policies":[...],"entries":N,...} */
static char *
reload_answer(const struct parent *p)
{
	cJSON *o = cJSON_CreateObject(), *a;
	size_t entries = 0, inspected = 0, raw = 0;

	if (o == NULL || cJSON_AddNumberToObject(o, "generation",
	    (double)p->gen) == NULL ||
	    (a = cJSON_AddArrayToObject(o, "policies")) == NULL)
		goto fail;
	for (size_t i = 0; i < allowlist_set_count(p->set); i++) {
		const char *name = allowlist_set_name(p->set, i);
		const struct allowlist *al = allowlist_set_policy(p->set, name);
		cJSON *s = cJSON_CreateString(name);
		if (s == NULL || !cJSON_AddItemToArray(a, s)) {
			cJSON_Delete(s);
			goto fail;
		}
		entries += allowlist_entry_count(al);
		inspected += allowlist_inspect_count(al);
		raw += allowlist_raw_count(al);
	}
	if (cJSON_AddNumberToObject(o, "entries", (double)entries) == NULL ||
	    cJSON_AddNumberToObject(o, "inspected", (double)inspected) ==
	    NULL || cJSON_AddNumberToObject(o, "raw", (double)raw) == NULL ||
	    cJSON_AddNumberToObject(o, "secrets",
	    (double)allowlist_set_inject_count(p->set)) == NULL)
		goto fail;
	return proxy_ctl_ok(o);
fail:
	cJSON_Delete(o);
	return proxy_ctl_error("out of memory");
}

void
proxy_parent_reload(struct parent *p, struct proxy_ctl_reply *reply)
{
	struct allowlist_set *set;
	struct parent_wait *w;
	char msg[2048], *answer;
	uint64_t id;

	if (proxy_parent_load(p, &set, msg, sizeof(msg)) != 0) {
		log_warnx("reload failed: keeping the previous allowlist "
		    "(generation %" PRIu64 ")", p->gen);
		if (reply != NULL)
			proxy_ctl_reply_send(reply, proxy_ctl_error(msg));
		goto also;
	}
	allowlist_set_free(p->set);
	p->set = set;
	p->gen++;
	answer = reload_answer(p);
	describe_set(p, msg, sizeof(msg));
	if (p->chan == NULL || proxy_parent_send_gen(p, &id) != 0) {
		log_info("reload ok: %s (generation %" PRIu64 "; the next "
		    "network child starts with it)", msg, p->gen);
		/* The next child starts with it. */
		if (reply != NULL)
			proxy_ctl_reply_send(reply, answer);
		else
			free(answer);
		goto also;
	}
	/* "reload ok" once the child has it (gen_ack). */
	p->announce_gen = p->gen;
	if (reply != NULL) {
		/* Answered once the child has it: reload_answer's text is
		 * rebuilt then (cheap), this one dropped. */
		free(answer);
		if ((w = wait_add(p, PW_RELOAD, id, reply, NULL)) == NULL)
			proxy_ctl_reply_send(reply, proxy_ctl_error(
			    "out of memory"));
		else
			w->gen = p->gen;
	} else {
		free(answer);
	}
also:
	/* SIGHUP's other duties: the access log, the local addresses. */
	if (p->alog != NULL && proxy_accesslog_reopen(p->alog) == 0)
		proxy_parent_alog_to_child(p);
	if (p->chan != NULL)
		(void)proxy_chan_send(p->chan, PSMSG_REFRESH, 0, "{}", 2, -1);
}

/* --- the state file -------------------------------------------------------- */

struct state_buf {
	char *p;
	size_t len, cap;
	bool fail;
};

static void
state_line(struct proxy_run *r, void *arg)
{
	struct state_buf *b = arg;
	char *line, *np;
	size_t n;

	if (b->fail || r->expired || r->deadline_ms <= time_wall_ms())
		return;
	if ((line = run_register_line(r)) == NULL) {
		b->fail = true;
		return;
	}
	n = strlen(line) + 16;
	if (b->len + n >= b->cap) {
		size_t cap = (b->cap + n) * 2;
		if ((np = realloc(b->p, cap)) == NULL) {
			b->fail = true;
			free(line);
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	/* "RESTARTS LINE": the restarts the run lived through so far. */
	b->len += (size_t)snprintf(b->p + b->len, b->cap - b->len, "%u %s",
	    r->restarts, line);
	explicit_bzero(line, strlen(line));
	free(line);
}

void
proxy_parent_state_save(struct parent *p)
{
	struct state_buf b = { NULL, 0, 0, false };
	char tmp[PATH_MAX];
	int fd;

	if (p->cfg.state == NULL || p->runs == NULL)
		return;
	proxy_runs_each(p->runs, state_line, &b);
	snprintf(tmp, sizeof(tmp), "%s.tmp", p->cfg.state);
	fd = b.fail ? -1 : open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
	    O_NOFOLLOW, 0600);
	if (fd < 0 || (b.len > 0 && write(fd, b.p, b.len) != (ssize_t)b.len) ||
	    fchmod(fd, 0600) != 0 || close(fd) != 0 ||
	    rename(tmp, p->cfg.state) != 0) {
		log_warn("--state %s: not written", p->cfg.state);
		if (fd >= 0)
			(void)unlink(tmp);
	}
	if (b.p != NULL)
		explicit_bzero(b.p, b.len);
	free(b.p);
}

int
proxy_parent_state_load(struct parent *p)
{
	struct proxy_run_limits def = { .max_conns = p->cfg.run_max_conns };
	struct proxy_ctl_req req;
	struct proxy_run *run;
	char *text = NULL, *line, *save = NULL, *sp, err[160];
	size_t len = 0, n = 0;
	struct stat st;
	int rc;

	if (p->cfg.state == NULL)
		return 0;
	rc = util_read_file(p->cfg.state, STATE_MAX, &text, &len);
	if (rc == -ENOENT)
		return 0;
	/* Tokens: root's own file only. */
	if (rc == 0 && (stat(p->cfg.state, &st) != 0 || st.st_uid != geteuid() ||
	    (st.st_mode & 077) != 0)) {
		log_warnx("--state %s: not owned by us or not private: ignored",
		    p->cfg.state);
		rc = -EPERM;
	}
	for (line = rc == 0 ? strtok_r(text, "\n", &save) : NULL; line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		unsigned long restarts = strtoul(line, &sp, 10);
		char *e;
		if (sp == line || *sp != ' ' || restarts > 1000000 ||
		    proxy_ctl_parse(sp + 1, strlen(sp + 1), &req, err,
		    sizeof(err)) != 0 || req.op != PROXY_CTL_REGISTER) {
			log_warnx("--state %s: a bad line: skipped", p->cfg.state);
			continue;
		}
		e = proxy_ctl_runs_add(p->runs, p->set, &req, &def,
		    time_wall_ms(), &run);
		explicit_bzero(req.token, sizeof(req.token));
		if (e != NULL) {	/* past its deadline, policy gone... */
			free(e);
			continue;
		}
		/* This parent's predecessor died: so did its child. */
		run->restarts = (unsigned)restarts + 1;
		n++;
	}
	if (text != NULL)
		explicit_bzero(text, len);
	free(text);
	if (rc == 0)
		log_info("--state %s: %zu live runs restored", p->cfg.state, n);
	proxy_parent_state_save(p);
	return rc;
}
