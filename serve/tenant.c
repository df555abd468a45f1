/*
 * Tenant lookup and limit accounting (tenant.h). Tokens are compared in
 * constant time over their full length so a caller cannot learn a prefix.
 */
#include "serve/tenant.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"

void
serve_tenants_init(struct serve_tenants *ts, const struct config *c)
{
	const struct config_serve *s = &c->serve;

	memset(ts, 0, sizeof(*ts));
	ts->global_limit = s->global_limit;
	strcpy(ts->t[0].name, "local");
	ts->t[0].max_concurrent = s->global_limit;
	ts->t[0].max_queue = s->queue_max;
	ts->t[0].net = RUNNER_NET_NONE;
	for (size_t i = 0; i < s->ntenants; i++) {
		struct serve_tenant *t = &ts->t[i + 1];
		const struct config_tenant *ct = &s->tenants[i];

		util_strlcpy(t->name, ct->name, sizeof(t->name));
		util_strlcpy(t->token, ct->token, sizeof(t->token));
		t->max_concurrent = ct->max_concurrent;
		t->max_queue = ct->max_queue >= 0 ? ct->max_queue : s->queue_max;
		t->net = strcmp(ct->net, "proxy") == 0 ? RUNNER_NET_PROXY :
		    RUNNER_NET_NONE;
		t->conf = ct;
	}
	ts->n = s->ntenants + 1;
}

static bool
token_equal(const char *a, size_t alen, const char *b)
{
	size_t blen = strlen(b);
	unsigned char d = alen != blen;

	for (size_t i = 0; i < alen; i++)
		d |= (unsigned char)a[i] ^ (unsigned char)b[i < blen ? i : 0];
	return d == 0 && blen > 0;
}

int
serve_tenants_lookup(const struct serve_tenants *ts, const char *authz,
    bool tcp)
{
	const char *tok;
	int found = -EACCES;

	if (authz == NULL)
		return tcp ? -EACCES : SERVE_LOCAL_TENANT;
	if (strncasecmp(authz, "Bearer ", 7) != 0)
		return -EACCES;
	tok = authz + 7;
	if (*tok == '\0' || strlen(tok) >= sizeof(ts->t[0].token))
		return -EACCES;
	for (size_t i = 1; i < ts->n; i++)
		if (token_equal(tok, strlen(tok), ts->t[i].token))
			found = (int)i;
	return found;
}

/* Appends ", name" (or "name" first) to buf; a name that would not fit,
 * with room left for the ellipsis, ends the list with "...". */
static void
list_add(char *buf, size_t len, const char *name)
{
	size_t n = strlen(buf);

	if (n >= 3 && strcmp(buf + n - 3, "...") == 0)
		return;
	if (n + 2 + strlen(name) + 5 < len)
		snprintf(buf + n, len - n, "%s%s", n > 0 ? ", " : "", name);
	else
		snprintf(buf + n, len - n, "%s...", n > 0 ? ", " : "");
}

int
serve_tenant_check(const struct config *c, const struct config_tenant *t,
    enum runner_net net, const char *policy, char *err, size_t errlen)
{
	const char *netname = net == RUNNER_NET_PROXY ? "proxy" : "none";
	char list[300] = "";	/* fits a 512-byte err with the rest */

	if (policy != NULL && policy[0] == '\0')
		policy = NULL;
	if (policy != NULL && net != RUNNER_NET_PROXY) {
		snprintf(err, errlen, "'policy' applies only to net \"proxy\" "
		    "(this run's net is \"none\")");
		return -EINVAL;
	}
	if (t == NULL)
		return 0;
	if (!config_tenant_allows_net(t, netname)) {
		if (t->nets & CONFIG_NET_NONE)
			list_add(list, sizeof(list), "\"none\"");
		if (t->nets & CONFIG_NET_PROXY)
			list_add(list, sizeof(list), "\"proxy\"");
		snprintf(err, errlen, "tenant '%s' may not use net \"%s\" (its "
		    "nets: %s)", t->name, netname, list);
		return -EPERM;
	}
	if (net != RUNNER_NET_PROXY)
		return 0;
	if (policy == NULL)
		policy = c->egress_default_policy;
	if (config_tenant_allows_policy(c, t, policy))
		return 0;
	if (!t->policies_set)
		list_add(list, sizeof(list), c->egress_default_policy);
	for (size_t i = 0; i < t->npolicies; i++)
		list_add(list, sizeof(list), t->policies[i]);
	snprintf(err, errlen, "tenant '%s' may not use egress policy '%s' "
	    "(its policies: %s)", t->name, policy, list[0] != '\0' ? list :
	    "none at all");
	return -EPERM;
}

bool
serve_tenants_can_start(const struct serve_tenants *ts, size_t i)
{
	return ts->active < ts->global_limit &&
	    ts->t[i].active < ts->t[i].max_concurrent;
}

enum serve_admit
serve_tenants_admit(struct serve_tenants *ts, size_t i)
{
	struct serve_tenant *t = &ts->t[i];

	if (t->queued == 0 && serve_tenants_can_start(ts, i)) {
		t->active++;
		ts->active++;
		return SERVE_ADMIT_RUN;
	}
	if (t->queued < t->max_queue) {
		t->queued++;
		return SERVE_ADMIT_QUEUE;
	}
	return SERVE_ADMIT_REJECT;
}

void
serve_tenants_start_queued(struct serve_tenants *ts, size_t i)
{
	ts->t[i].queued--;
	ts->t[i].active++;
	ts->active++;
}

void
serve_tenants_unqueue(struct serve_tenants *ts, size_t i)
{
	ts->t[i].queued--;
}

void
serve_tenants_finish(struct serve_tenants *ts, size_t i)
{
	ts->t[i].active--;
	ts->active--;
}

/* Refills tenant i's refusal budget up to per_min at per_min a minute. */
static void
refill(struct serve_tenant *t, int64_t now_ms, int64_t per_min)
{
	if (t->refusals_ms == 0) {
		t->refusals_left = (double)per_min;
	} else if (now_ms > t->refusals_ms) {
		t->refusals_left += (double)(now_ms - t->refusals_ms) *
		    (double)per_min / 60000.0;
		if (t->refusals_left > (double)per_min)
			t->refusals_left = (double)per_min;
	}
	t->refusals_ms = now_ms > 0 ? now_ms : 1;
}

void
serve_tenants_refused(struct serve_tenants *ts, size_t i, int64_t now_ms,
    int64_t per_min)
{
	struct serve_tenant *t = &ts->t[i];

	if (i == SERVE_LOCAL_TENANT || per_min <= 0)
		return;
	refill(t, now_ms, per_min);
	t->refusals_left = t->refusals_left >= 1 ? t->refusals_left - 1 : 0;
}

int64_t
serve_tenants_refusal_wait(struct serve_tenants *ts, size_t i,
    int64_t now_ms, int64_t per_min)
{
	struct serve_tenant *t = &ts->t[i];
	double ms;

	if (i == SERVE_LOCAL_TENANT || per_min <= 0)
		return 0;
	refill(t, now_ms, per_min);
	if (t->refusals_left >= 1)
		return 0;
	ms = (1 - t->refusals_left) * 60000.0 / (double)per_min;
	return ms < 1000 ? 1 : (int64_t)(ms / 1000 + 0.999);
}

bool
serve_tenants_would_reject(const struct serve_tenants *ts, size_t i)
{
	const struct serve_tenant *t = &ts->t[i];

	return !(t->queued == 0 && serve_tenants_can_start(ts, i)) &&
	    t->queued >= t->max_queue;
}
