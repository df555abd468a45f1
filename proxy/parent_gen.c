/*
 * The privileged parent's policies (parent.h): the allowlist loaded as root
 * with its secrets, each generation sent to the network child, reloads
 * (SIGHUP or the control socket's reload op, answered once the child
 * acknowledges the generation). Apart from the control socket's other ops
 * (parent_ops.c): a generation is the one thing every policy change makes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "allowlist/allowlist.h"
#include "common/log.h"
#include "proxy/accesslog.h"
#include "proxy/ctl.h"
#include "proxy/ctlsrv.h"
#include "proxy/imsg.h"
#include "proxy/parent.h"
#include "proxy/psmsg.h"

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
proxy_parent_gen_ack(struct parent *p, const struct proxy_imsg *m)
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
	/* "reload ok" once the child has it (proxy_parent_gen_ack). */
	p->announce_gen = p->gen;
	if (reply != NULL) {
		/* Answered once the child has it: reload_answer's text is
		 * rebuilt then (cheap), this one dropped. */
		free(answer);
		if ((w = proxy_parent_wait_add(p, PW_RELOAD, id, reply,
		    NULL)) == NULL)
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
