/*
 * Tenants of `cordon serve`: a bearer token names a tenant of the
 * admission table (jobs/admission.h: names, tokens, limits and counters);
 * here is what serve keeps of each: its default net mode, the net modes
 * and egress policies it may ask for, its unsent reply bytes and its
 * budget of refused requests. Only the event loop's thread touches these,
 * so they have no locks; pure and unit-tested.
 */
#ifndef CORDON_SERVE_TENANT_H
#define CORDON_SERVE_TENANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "jobs/admission.h"
#include "runner/runner.h"

#define SERVE_LOCAL_TENANT JOBS_ADMIT_LOCAL	/* unix-socket callers with
						 * no token */

struct serve_tenant {
	const char *name;		/* the admission table's */
	enum runner_net net;
	/* Its entry in the config (borrowed: the config outlives the
	 * service); NULL for the local tenant. */
	const struct config_tenant *conf;
	/* Issue 39: bytes of its replies its clients have not read yet
	 * (serve/conn.h counts them), and what is left of its budget of
	 * refused requests (a token bucket refilled at refusals_per_min). */
	int64_t unsent;
	double refusals_left;
	int64_t refusals_ms;		/* last refill; 0: never (full) */
};

struct serve_tenants {
	struct serve_tenant t[CONFIG_MAX_TENANTS + 1];	/* [0]: local */
	size_t n;
	/* Borrowed (it outlives ts): the tenants' names, tokens, limits,
	 * counters and the queue of their work. */
	struct jobs_admission *adm;
};

/* From c->serve and adm (made from the same c): tenant 0 is "local", then
 * one per configured tenant. */
void serve_tenants_init(struct serve_tenants *ts, const struct config *c,
    struct jobs_admission *adm);

/* The tenant for an Authorization header value (NULL when absent): a
 * "Bearer TOKEN" naming a configured tenant (jobs_admission_by_token).
 * Without a header, unix-socket callers (tcp false) are the local tenant.
 * Returns the index, or -EACCES (missing, malformed or unknown token). */
int serve_tenants_lookup(const struct serve_tenants *ts, const char *authz,
    bool tcp);

/* Whether a run of tenant t (NULL: the local tenant, the host's operator,
 * who may use any net and any policy) may use net and policy (NULL or "":
 * none named). 0; -EINVAL (answer 400) when a policy is named for net
 * none; -EPERM (answer 403) when the tenant may not use the net, or, in
 * proxy mode, the policy (c->egress_default_policy when none is named).
 * The reason is in err, naming what the tenant may use. Pure. */
int serve_tenant_check(const struct config *c, const struct config_tenant *t,
    enum runner_net net, const char *policy, char *err, size_t errlen);

/* Counts one refused request (a 4xx) of tenant i at now_ms against
 * per_min (0: no bound). The local tenant is never counted. */
void serve_tenants_refused(struct serve_tenants *ts, size_t i, int64_t now_ms,
    int64_t per_min);
/* 0 when tenant i's refusals leave it room at now_ms; else the seconds
 * (at least 1) until they do. Always 0 for the local tenant. */
int64_t serve_tenants_refusal_wait(struct serve_tenants *ts, size_t i,
    int64_t now_ms, int64_t per_min);

#endif
