/*
 * The privileged parent's control socket (parent.h): its ops (register,
 * unregister, report and policy relayed to the network child and answered
 * when it replies; policies and ping answered here; reload in
 * parent_gen.c), the requests waiting for the child, their answers, and
 * what a lost child means for them. The child's own questions are in
 * parent_child.c, the state file in parent_state.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "allowlist/allowlist.h"
#include "common/json.h"
#include "common/util.h"
#include "proxy/accesslog.h"
#include "proxy/ctl.h"
#include "proxy/ctlsrv.h"
#include "proxy/imsg.h"
#include "proxy/parent.h"
#include "proxy/psmsg.h"
#include "proxy/runs.h"

struct parent_wait *
proxy_parent_wait_add(struct parent *p, enum parent_wait_kind kind, uint64_t id,
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
		case PW_POLICY:
			/* PW_POLICY: the registry has it, the successor gets
			 * the run under its new policy, with no connection
			 * open. */
			proxy_ctl_reply_send(w->reply, proxy_ctl_error(
			    w->kind == PW_RELOAD ? "the network child died; "
			    "the new generation goes to its successor" : "the "
			    "network child died; the run's new policy goes to "
			    "its successor"));
			free(w);
			break;
		}
	}
}

void
proxy_parent_run_ack(struct parent *p, const struct proxy_imsg *m)
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

void
proxy_parent_report_msg(struct parent *p, const struct proxy_imsg *m)
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
	    strlen(line), -1) != 0 || proxy_parent_wait_add(p, PW_REGISTER, id,
	    reply, req->run) == NULL) {
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
	    line, strlen(line), -1) != 0 || proxy_parent_wait_add(p, PW_POLICY,
	    id, reply, req->run) == NULL) {
		free(line);
		return proxy_ctl_error("cannot reach the network child");
	}
	free(line);
	*later = true;
	return NULL;
}

void
proxy_parent_policy_ack(struct parent *p, const struct proxy_imsg *m)
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
	    strlen(text), -1) == 0 && proxy_parent_wait_add(p, forget ?
	    PW_UNREGISTER : PW_REPORT, id, reply, req->run) != NULL) {
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
