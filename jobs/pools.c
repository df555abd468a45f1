/*
 * The warm pools of a front end (pools.h).
 */
#include "jobs/pools.h"

#include "common/log.h"

void
jobs_pools_sizes(const struct config *c, enum jobs_front f, int64_t python,
    int64_t size[RUNNER_POOLS_LANGS])
{
	bool mcp = f == JOBS_FRONT_MCP;

	size[0] = python >= 0 ? python : mcp ? c->mcp.pool : c->serve.pool;
	size[1] = mcp ? c->mcp.pool_bash : c->serve.pool_bash;
	size[2] = mcp ? c->mcp.pool_node : c->serve.pool_node;
}

int64_t
jobs_pools_total(const struct config *c, enum jobs_front f, int64_t python)
{
	const struct config_pool_profile *v = f == JOBS_FRONT_MCP ?
	    c->mcp.pool_profiles : c->serve.pool_profiles;
	size_t n = f == JOBS_FRONT_MCP ? c->mcp.npool_profiles :
	    c->serve.npool_profiles;
	int64_t size[RUNNER_POOLS_LANGS], total = 0;

	jobs_pools_sizes(c, f, python, size);
	for (int i = 0; i < RUNNER_POOLS_LANGS; i++)
		total += size[i];
	for (size_t i = 0; i < n; i++)
		total += v[i].size;
	return total;
}

void
jobs_pools_opts(const struct config *c, enum jobs_front f,
    struct runner_pool_opts *o)
{
	runner_pool_conf_opts(c, 0, o);
	o->idle_s = f == JOBS_FRONT_MCP ? c->mcp.pool_idle_s :
	    c->serve.pool_idle_s;
	o->on_note = jobs_pools_log;
	o->note_arg = NULL;
}

void
jobs_pools_log(void *arg, const struct runner_pool_note *n)
{
	char line[512];
	enum log_level level = runner_pool_conf_note(n, line, sizeof(line));

	(void)arg;
	log_at(level, "%s", line);
}

int
jobs_pools_start(const struct config *c, enum jobs_front f, int64_t python,
    struct runner_pools **out, char *err, size_t errlen)
{
	int64_t size[RUNNER_POOLS_LANGS];
	struct runner_pool_opts o;

	jobs_pools_sizes(c, f, python, size);
	jobs_pools_opts(c, f, &o);
	return runner_pools_new(c, size, f == JOBS_FRONT_MCP ?
	    c->mcp.pool_profiles : c->serve.pool_profiles, f ==
	    JOBS_FRONT_MCP ? c->mcp.npool_profiles : c->serve.npool_profiles,
	    &o, out, err, errlen);
}
