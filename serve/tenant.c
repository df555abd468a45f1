/*
 * Tenant lookup and limit accounting (tenant.h). Tokens are compared in
 * constant time over their full length so a caller cannot learn a prefix.
 */
#include "serve/tenant.h"

#include <errno.h>
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
