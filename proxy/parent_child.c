/*
 * The privileged parent's side of the network child's messages (parent.h):
 * a new child's greeting (INIT, the generation, the live runs), the
 * dispatch of what it sends, and its two questions, answered under the
 * parent's own checks: a leaf is signed only for a name some policy
 * inspects, a secret's value goes out only for the entry that injects it,
 * under a policy a live run uses. The messages are decoded strictly
 * (psmsg.c). Apart from the control socket (parent_ops.c): this is the
 * one place a confined process can ask for key material.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <openssl/crypto.h>

#include "allowlist/allowlist.h"
#include "common/log.h"
#include "common/util.h"
#include "proxy/accesslog.h"
#include "proxy/ca.h"
#include "proxy/imsg.h"
#include "proxy/parent.h"
#include "proxy/psmsg.h"
#include "proxy/runs.h"

static void
greet_run(struct proxy_run *r, void *arg)
{
	struct parent *p = arg;
	char *line;

	if (r->expired || r->deadline_ms <= time_wall_ms())
		return;
	if ((line = proxy_parent_run_line(r)) == NULL) {
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
		proxy_parent_gen_ack(p, m);
		break;
	case PSMSG_RUN_ACK:
		proxy_parent_run_ack(p, m);
		break;
	case PSMSG_POLICY_ACK:
		proxy_parent_policy_ack(p, m);
		break;
	case PSMSG_REPORT:
		proxy_parent_report_msg(p, m);
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
