/* The front ends' warm pools (jobs/pools.c): sizes and options from each
 * front end's own config section; a --pool N for python wins over it. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/config.h"
#include "jobs/pools.h"

static void
test_sizes(void **state)
{
	struct config c;
	int64_t size[RUNNER_POOLS_LANGS];

	(void)state;
	config_defaults(&c);
	c.serve.pool = 2;
	c.serve.pool_bash = 3;
	c.serve.pool_node = 4;
	c.mcp.pool = 5;
	c.mcp.pool_bash = 6;
	c.mcp.pool_node = 7;
	jobs_pools_sizes(&c, JOBS_FRONT_SERVE, -1, size);
	assert_int_equal(size[0], 2);
	assert_int_equal(size[1], 3);
	assert_int_equal(size[2], 4);
	jobs_pools_sizes(&c, JOBS_FRONT_MCP, -1, size);
	assert_int_equal(size[0], 5);
	assert_int_equal(size[1], 6);
	assert_int_equal(size[2], 7);
	/* --pool N: python's only; 0 turns python's off. */
	jobs_pools_sizes(&c, JOBS_FRONT_MCP, 0, size);
	assert_int_equal(size[0], 0);
	assert_int_equal(size[1], 6);
	jobs_pools_sizes(&c, JOBS_FRONT_SERVE, 9, size);
	assert_int_equal(size[0], 9);
	assert_int_equal(size[2], 4);
	/* All of a front end's containers per mode, its pool_profiles'
	 * too (not the other front end's). */
	assert_int_equal(jobs_pools_total(&c, JOBS_FRONT_SERVE, -1), 9);
	c.serve.pool_profiles[0] = (struct config_pool_profile){
	    .profile = "data", .lang = CONFIG_LANG_PYTHON, .size = 10 };
	c.serve.npool_profiles = 1;
	assert_int_equal(jobs_pools_total(&c, JOBS_FRONT_SERVE, -1), 19);
	assert_int_equal(jobs_pools_total(&c, JOBS_FRONT_SERVE, 0), 17);
	assert_int_equal(jobs_pools_total(&c, JOBS_FRONT_MCP, -1), 18);
}

static void
test_opts(void **state)
{
	struct config c;
	struct runner_pool_opts o;

	(void)state;
	config_defaults(&c);
	c.serve.pool_max_age_s = 120;
	c.serve.pool_starts = 3;
	c.serve.pool_idle_s = 30;
	c.mcp.pool_idle_s = 600;
	jobs_pools_opts(&c, JOBS_FRONT_SERVE, &o);
	assert_int_equal(o.idle_s, 30);
	assert_int_equal(o.max_age_s, 120);
	assert_int_equal(o.max_starts, 3);
	assert_true(o.modes[0] && o.modes[1]);
	assert_ptr_equal(o.on_note, jobs_pools_log);
	/* MCP: its own idle time; max age and starts are serve's. */
	jobs_pools_opts(&c, JOBS_FRONT_MCP, &o);
	assert_int_equal(o.idle_s, 600);
	assert_int_equal(o.max_age_s, 120);
	assert_int_equal(o.max_starts, 3);
	assert_ptr_equal(o.on_note, jobs_pools_log);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_opts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
