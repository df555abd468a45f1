/*
 * The control protocol's operations on the daemon: register a run (its
 * policy must exist in the current set), unregister it (its connections
 * closed first, then its egress report returned and the run forgotten),
 * report, the policy names, ping. Never logs a token.
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

/* `unknown policy "x" (policies: a, b)`, cut with "..." when long. */
static char *
ctlops_unknown_policy(const struct proxy_server *s, const char *name)
{
	char msg[1024];
	size_t n = s->set != NULL ? allowlist_set_count(s->set) : 0, used;

	used = (size_t)snprintf(msg, sizeof(msg),
	    "unknown policy \"%s\" (policies: ", name);
	for (size_t i = 0; i < n && used < sizeof(msg); i++) {
		const char *p = allowlist_set_name(s->set, i);
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

static char *
ctlops_register(struct proxy_server *s, const struct proxy_ctl_req *req)
{
	const struct proxy_config *cfg = s->cfg;
	struct proxy_run_limits def = { .max_conns = cfg->run_max_conns,
	    .bytes_up = cfg->run_bytes_up, .bytes_down = cfg->run_bytes_down };
	struct proxy_run *run;
	char msg[160];
	int64_t now = time_wall_ms();
	int rc;

	if (s->set == NULL || allowlist_set_policy(s->set, req->policy) ==
	    NULL)
		return ctlops_unknown_policy(s, req->policy);
	rc = proxy_runs_add(s->runs, req, &def, now, &run);
	switch (rc) {
	case 0:
		break;
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
	log_info("run %s registered: source %s, policy %s, deadline in "
	    "%" PRId64 " ms, max %u connections, bytes up %" PRIu64 " down %"
	    PRIu64 " (0: unlimited)", run->id, run->addr_text, run->policy,
	    run->deadline_ms - now, run->lim.max_conns, run->lim.bytes_up,
	    run->lim.bytes_down);
	return proxy_ctl_ok(NULL);
}

/* report, and unregister (forget = true). */
static char *
ctlops_report(struct proxy_server *s, const struct proxy_ctl_req *req,
    bool forget)
{
	struct proxy_run *run = proxy_runs_find(s->runs, req->run);
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

static char *
ctlops_policies(const struct proxy_server *s)
{
	size_t n = s->set != NULL ? allowlist_set_count(s->set) : 0;
	cJSON *o = cJSON_CreateObject(), *a = cJSON_CreateArray();

	if (o == NULL || a == NULL ||
	    !cJSON_AddItemToObject(o, "policies", a)) {
		cJSON_Delete(o);
		cJSON_Delete(a);
		return proxy_ctl_error("out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		cJSON *name = cJSON_CreateString(allowlist_set_name(s->set, i));
		if (name == NULL || !cJSON_AddItemToArray(a, name)) {
			cJSON_Delete(name);
			cJSON_Delete(o);
			return proxy_ctl_error("out of memory");
		}
	}
	return proxy_ctl_ok(o);
}

char *
proxy_ctlops_handle(struct proxy_server *s, const struct proxy_ctl_req *req)
{
	switch (req->op) {
	case PROXY_CTL_REGISTER:
		return ctlops_register(s, req);
	case PROXY_CTL_UNREGISTER:
		return ctlops_report(s, req, true);
	case PROXY_CTL_REPORT:
		return ctlops_report(s, req, false);
	case PROXY_CTL_POLICIES:
		return ctlops_policies(s);
	case PROXY_CTL_PING:
		return proxy_ctl_ok(NULL);
	default:
		return proxy_ctl_error("unknown op");
	}
}
