/*
 * Tenant lookup, what each may use, and its budget of refusals (tenant.h).
 * The tokens are the admission table's, compared there in constant time.
 */
#include "serve/tenant.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>


void
serve_tenants_init(struct serve_tenants *ts, const struct config *c,
    struct jobs_admission *adm)
{
	const struct config_serve *s = &c->serve;

	memset(ts, 0, sizeof(*ts));
	ts->adm = adm;
	ts->n = jobs_admission_tenants(adm);
	for (size_t i = 0; i < ts->n; i++) {
		struct serve_tenant *t = &ts->t[i];

		t->name = jobs_admission_name(adm, i);
		t->net = RUNNER_NET_NONE;
		if (i == SERVE_LOCAL_TENANT || i > s->ntenants)
			continue;
		t->conf = &s->tenants[i - 1];
		if (strcmp(t->conf->net, "proxy") == 0)
			t->net = RUNNER_NET_PROXY;
	}
}

int
serve_tenants_lookup(const struct serve_tenants *ts, const char *authz,
    bool tcp)
{
	if (authz == NULL)
		return tcp ? -EACCES : SERVE_LOCAL_TENANT;
	if (strncasecmp(authz, "Bearer ", 7) != 0)
		return -EACCES;
	return jobs_admission_by_token(ts->adm, authz + 7);
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
