/*
 * The run registry's operations in the network child, as its parent
 * relays them from the control socket (parent.c): register a run (its
 * policy must exist in the current set), unregister it (its connections
 * closed first, then its egress report returned and the run forgotten),
 * report; and the policy names list, which the parent answers from its
 * own set. Never logs a token.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "allowlist/allowlist.h"
#include "common/log.h"
#include "common/util.h"
#include "proxy/config.h"
#include "proxy/conn.h"
#include "proxy/ctl.h"
#include "proxy/ctlsrv.h"
#include "proxy/egress.h"
#include "proxy/runs.h"
#include "proxy/server.h"

char *
proxy_ctl_unknown_policy(const struct allowlist_set *set, const char *name)
{
	char msg[1024];
	size_t n = set != NULL ? allowlist_set_count(set) : 0, used;

	used = (size_t)snprintf(msg, sizeof(msg),
	    "unknown policy \"%s\" (policies: ", name);
	for (size_t i = 0; i < n && used < sizeof(msg); i++) {
		const char *p = allowlist_set_name(set, i);
		if (used + strlen(p) + 8 >= sizeof(msg)) {
			used += (size_t)snprintf(msg + used, sizeof(msg) - used,
			    "...");
			break;
		}
		used += (size_t)snprintf(msg + used, sizeof(msg) - used,
		    "%s%s", i > 0 ? ", " : "", p);
	}
	if (used < sizeof(msg))
		snprintf(msg + used, sizeof(msg) - used, ")");
	return proxy_ctl_error(msg);
}

char *
proxy_ctl_runs_add(struct proxy_runs *rs, const struct allowlist_set *set,
    const struct proxy_ctl_req *req, const struct proxy_run_limits *def,
    int64_t now, struct proxy_run **out)
{
	char msg[160];
	int rc;

	*out = NULL;
	if (set == NULL || allowlist_set_policy(set, req->policy) == NULL)
		return proxy_ctl_unknown_policy(set, req->policy);
	rc = proxy_runs_add(rs, req, def, now, out);
	switch (rc) {
	case 0:
		return NULL;
	case -EEXIST:
		snprintf(msg, sizeof(msg), "run \"%s\" already registered",
		    req->run);
		return proxy_ctl_error(msg);
	case -ETIMEDOUT:
		return proxy_ctl_error("deadline_ms is already past "
		    "(epoch milliseconds, CLOCK_REALTIME)");
	case -ENOSPC:
		snprintf(msg, sizeof(msg), "registry full (%d runs)",
		    PROXY_RUNS_MAX);
		return proxy_ctl_error(msg);
	default:
		return proxy_ctl_error(rc == -ENOMEM ? "out of memory" :
		    "bad register request");
	}
}

char *
proxy_server_run_add(struct proxy_server *s, const struct proxy_ctl_req *req)
{
	const struct proxy_config *cfg = s->cfg;
	struct proxy_run_limits def = { .max_conns = cfg->run_max_conns,
	    .bytes_up = cfg->run_bytes_up, .bytes_down = cfg->run_bytes_down };
	struct proxy_run *run;
	int64_t now = time_wall_ms();
	char *err;

	if (s->runs == NULL)
		return proxy_ctl_error("not in run mode");
	if ((err = proxy_ctl_runs_add(s->runs, s->set, req, &def, now,
	    &run)) != NULL)
		return err;
	log_info("run %s registered: source %s, policy %s, deadline in "
	    "%" PRId64 " ms, max %u connections, bytes up %" PRIu64 " down %"
	    PRIu64 " (0: unlimited)", run->id, run->addr_text, run->policy,
	    run->deadline_ms - now, run->lim.max_conns, run->lim.bytes_up,
	    run->lim.bytes_down);
	return proxy_ctl_ok(NULL);
}

char *
proxy_server_run_policy(struct proxy_server *s, const struct proxy_ctl_req *req)
{
	struct proxy_run *run = s->runs != NULL ? proxy_runs_find(s->runs,
	    req->run) : NULL;
	char was[PROXY_CTL_POLICY_MAX + 1];
	cJSON *o, *closed;
	int n;

	if (run == NULL)
		return proxy_ctl_error("unknown run");
	if (s->set == NULL || allowlist_set_policy(s->set, req->policy) == NULL)
		return proxy_ctl_unknown_policy(s->set, req->policy);
	snprintf(was, sizeof(was), "%s", run->policy);
	snprintf(run->policy, sizeof(run->policy), "%s", req->policy);
	if ((o = cJSON_CreateObject()) == NULL ||
	    cJSON_AddStringToObject(o, "policy", run->policy) == NULL ||
	    cJSON_AddStringToObject(o, "was", was) == NULL ||
	    (closed = cJSON_AddArrayToObject(o, "closed")) == NULL) {
		cJSON_Delete(o);
		/* The policy stays changed: the parent's registry has it. */
		return proxy_ctl_error("out of memory");
	}
	n = proxy_run_repolicy(s, run, closed);
	log_info("run %s: policy %s -> %s, %d open connection(s) closed",
	    run->id, was, run->policy, n);
	if (n < 0) {
		cJSON_Delete(o);
		return proxy_ctl_error("out of memory");
	}
	return proxy_ctl_ok(o);
}

char *
proxy_server_run_report(struct proxy_server *s, const char *id, bool forget)
{
	struct proxy_run *run = s->runs != NULL ? proxy_runs_find(s->runs, id) :
	    NULL;
	cJSON *j;
	char *line;

	if (run == NULL)
		return proxy_ctl_error("unknown run");
	/* Live tunnels end now, so their bytes are in the report. */
	if (forget)
		proxy_run_close_conns(s, run, "run-unregistered", false);
	j = proxy_egress_to_json(run->egress);
	line = j != NULL ? proxy_ctl_ok(j) : NULL;
	if (line == NULL)	/* the run stays: the runner may ask again */
		return proxy_ctl_error("out of memory");
	if (forget) {
		log_info("run %s unregistered: %" PRIu64 " bytes up, %" PRIu64
		    " down", run->id, run->bytes_up, run->bytes_down);
		proxy_runs_remove(s->runs, run);
	}
	return line;
}

char *
proxy_ctl_policies(const struct allowlist_set *set)
{
	size_t n = set != NULL ? allowlist_set_count(set) : 0;
	cJSON *o = cJSON_CreateObject(), *a = cJSON_CreateArray();

	if (o == NULL || a == NULL ||
	    !cJSON_AddItemToObject(o, "policies", a)) {
		cJSON_Delete(o);
		cJSON_Delete(a);
		return proxy_ctl_error("out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		cJSON *name = cJSON_CreateString(allowlist_set_name(set, i));
		if (name == NULL || !cJSON_AddItemToArray(a, name)) {
			cJSON_Delete(name);
			cJSON_Delete(o);
			return proxy_ctl_error("out of memory");
		}
	}
	return proxy_ctl_ok(o);
}
