/*
 * runner/pool_conf.c: the warm pool's options from the config, and the
 * one line (and level) each pool note is logged as by serve and mcp.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "runner/pool_conf.h"

static void
test_opts(void **state)
{
	struct config c;
	struct runner_pool_opts o;

	(void)state;
	config_defaults(&c);
	c.serve.pool_max_age_s = 120;
	c.serve.pool_starts = 3;
	c.serve.pool = 7;	/* not used: the caller gives the size */
	runner_pool_conf_opts(&c, 2, &o);
	assert_int_equal(o.size, 2);
	assert_int_equal(o.max_age_s, 120);
	assert_int_equal(o.max_starts, 3);
	assert_true(o.modes[RUNNER_NET_NONE]);
	assert_true(o.modes[RUNNER_NET_PROXY]);
	assert_false(o.skip_probe_check);
	assert_null(o.on_note);
	assert_null(o.session);
}

static void
test_notes(void **state)
{
	static const struct {
		enum runner_pool_event ev;
		enum log_level level;
		const char *line;
	} rows[] = {
		{ RUNNER_POOL_READY, LOG_LEVEL_DEBUG, "pool --net proxy: "
		  "cordon-ab ready in 812 ms, 1 of 2 idle" },
		{ RUNNER_POOL_FULL, LOG_LEVEL_INFO, "pool --net proxy: filled, "
		  "1 of 2 idle (last start 812 ms)" },
		{ RUNNER_POOL_FAILED, LOG_LEVEL_WARN, "pool --net proxy: start "
		  "of cordon-ab failed after 812 ms: no such image (retried "
		  "with back-off)" },
		{ RUNNER_POOL_ABORTED, LOG_LEVEL_INFO, "pool --net proxy: start "
		  "of cordon-ab given up (paused or stopping): no such image" },
		{ RUNNER_POOL_RETIRED, LOG_LEVEL_DEBUG, "pool --net proxy: idle "
		  "cordon-ab removed (no such image)" },
		{ RUNNER_POOL_RM_FAILED, LOG_LEVEL_WARN, "pool --net proxy: "
		  "cannot remove cordon-ab: no such image" },
		{ RUNNER_POOL_DAEMON_DOWN, LOG_LEVEL_WARN, "pool --net proxy: "
		  "no starts while dockerd does not answer: no such image" },
		{ RUNNER_POOL_DAEMON_UP, LOG_LEVEL_INFO, "pool --net proxy: "
		  "dockerd answers again: refilling" },
		{ RUNNER_POOL_SHRUNK, LOG_LEVEL_INFO, "pool --net proxy: no "
		  "run asked for it in 0 s: shrunk to 0 (refilled when one "
		  "asks)" },
	};
	char buf[512], small[16];

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct runner_pool_note n = { .ev = rows[i].ev,
		    .net = RUNNER_NET_PROXY, .name = "cordon-ab",
		    .why = "no such image", .ms = 812, .idle = 1, .size = 2 };

		assert_int_equal(runner_pool_conf_note(&n, buf, sizeof(buf)),
		    rows[i].level);
		assert_string_equal(buf, rows[i].line);
		/* Truncated, never overrun. */
		(void)runner_pool_conf_note(&n, small, sizeof(small));
		assert_int_equal(strlen(small), sizeof(small) - 1);
	}
}

/* A language's pool says its language; python's keeps its old words. */
static void
test_note_lang(void **state)
{
	struct runner_pool_note n = { .ev = RUNNER_POOL_FULL,
	    .net = RUNNER_NET_NONE, .name = "cordon-ab", .why = "", .ms = 9,
	    .idle = 1, .size = 1, .lang = CONFIG_LANG_NODE };
	char buf[256];

	(void)state;
	(void)runner_pool_conf_note(&n, buf, sizeof(buf));
	assert_string_equal(buf, "pool node --net none: filled, 1 of 1 idle "
	    "(last start 9 ms)");
	n.lang = CONFIG_LANG_BASH;
	(void)runner_pool_conf_note(&n, buf, sizeof(buf));
	assert_string_equal(buf, "pool bash --net none: filled, 1 of 1 idle "
	    "(last start 9 ms)");
	n.lang = CONFIG_LANG_PYTHON;
	(void)runner_pool_conf_note(&n, buf, sizeof(buf));
	assert_string_equal(buf, "pool --net none: filled, 1 of 1 idle "
	    "(last start 9 ms)");
	/* A pool in another profile than its language's names it. */
	n.profile = "data";
	(void)runner_pool_conf_note(&n, buf, sizeof(buf));
	assert_string_equal(buf, "pool python@data --net none: filled, 1 of "
	    "1 idle (last start 9 ms)");
}

/* No size, no pools (and nothing started); no pools, no pool to take. */
static void
test_pools_none(void **state)
{
	static const int64_t zero[RUNNER_POOLS_LANGS] = { 0, 0, 0 };
	struct runner_pools *ps = (struct runner_pools *)1;
	struct runner_pool_opts o;
	struct config c;
	char err[256] = "";

	(void)state;
	config_defaults(&c);
	runner_pool_conf_opts(&c, 0, &o);
	assert_int_equal(runner_pools_new(&c, zero, NULL, 0, &o, &ps, err,
	    sizeof(err)), 0);
	assert_null(ps);
	assert_null(runner_pools_get(NULL, "node", NULL));
	assert_null(runner_pools_get(NULL, NULL, "data"));
	assert_null(runner_pools_at(NULL, 0, NULL, NULL));
	runner_pools_pause(NULL, true);
	runner_pools_free(NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_opts),
		cmocka_unit_test(test_notes),
		cmocka_unit_test(test_note_lang),
		cmocka_unit_test(test_pools_none),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
