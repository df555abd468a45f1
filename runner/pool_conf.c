/*
 * The warm pool's options and the words for its notes, shared by the
 * front ends that keep one (pool_conf.h): `cordon serve` and `cordon mcp`
 * say the same things about their pools.
 */
#include "runner/pool_conf.h"

#include <stdio.h>

#include "runner/runner.h"

void
runner_pool_conf_opts(const struct config *c, int64_t size,
    struct runner_pool_opts *o)
{
	*o = (struct runner_pool_opts){
		.size = size,
		.max_age_s = c->serve.pool_max_age_s,
		.max_starts = c->serve.pool_starts,
		.modes = { true, true },
	};
}

enum log_level
runner_pool_conf_note(const struct runner_pool_note *n, char *buf,
    size_t len)
{
	const char *net = runner_net_name(n->net);
	long long ms = (long long)n->ms, idle = (long long)n->idle,
	    size = (long long)n->size;

	switch (n->ev) {
	case RUNNER_POOL_READY:
		snprintf(buf, len, "pool --net %s: %s ready in %lld ms, %lld "
		    "of %lld idle", net, n->name, ms, idle, size);
		return LOG_LEVEL_DEBUG;
	case RUNNER_POOL_FULL:
		snprintf(buf, len, "pool --net %s: filled, %lld of %lld idle "
		    "(last start %lld ms)", net, idle, size, ms);
		return LOG_LEVEL_INFO;
	case RUNNER_POOL_FAILED:
		snprintf(buf, len, "pool --net %s: start of %s failed after "
		    "%lld ms: %s (retried with back-off)", net, n->name, ms,
		    n->why);
		return LOG_LEVEL_WARN;
	case RUNNER_POOL_ABORTED:
		snprintf(buf, len, "pool --net %s: start of %s given up "
		    "(paused or stopping): %s", net, n->name, n->why);
		return LOG_LEVEL_INFO;
	case RUNNER_POOL_RETIRED:
		snprintf(buf, len, "pool --net %s: idle %s removed (%s)", net,
		    n->name, n->why);
		return LOG_LEVEL_DEBUG;
	case RUNNER_POOL_RM_FAILED:
		snprintf(buf, len, "pool --net %s: cannot remove %s: %s", net,
		    n->name, n->why);
		return LOG_LEVEL_WARN;
	case RUNNER_POOL_DAEMON_DOWN:
		snprintf(buf, len, "pool --net %s: no starts while dockerd "
		    "does not answer: %s", net, n->why);
		return LOG_LEVEL_WARN;
	case RUNNER_POOL_DAEMON_UP:
		snprintf(buf, len, "pool --net %s: dockerd answers again: "
		    "refilling", net);
		return LOG_LEVEL_INFO;
	}
	snprintf(buf, len, "pool --net %s: event %d", net, (int)n->ev);
	return LOG_LEVEL_DEBUG;
}
