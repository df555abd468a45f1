/* Unit tests for runner/oomlog.c: which kernel log records prove that a
 * given container's memory cgroup hit its limit. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "runner/oomlog.h"

#define ID "ce32ed6d402daa455e3ea3760f5a6a4cc7274c78dbc9d48022d3320b71895e37"
#define OTHER "dc9844ea2466cd9ef1112d2cf1fd4f37309ea3653624f4d2f3d26927bd82e580"

static const struct {
	const char *record;
	const char *id;
	bool want;
} rows[] = {
	/* The kmsg record measured on a cgroupfs (v1) host. */
	{ "6,1234,860238737,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),"
	  "cpuset=" ID ",mems_allowed=0,oom_memcg=/docker/" ID ",task_memcg=/docker/"
	  ID ",task=exe,pid=25931,uid=65534\n", ID, true },
	/* The same as a dmesg line. */
	{ "[  860.238737] oom-kill:constraint=CONSTRAINT_MEMCG,oom_memcg=/docker/" ID
	  ",task_memcg=/docker/" ID ",task=exe,pid=1,uid=65534", ID, true },
	/* systemd cgroup driver. */
	{ "oom-kill:constraint=CONSTRAINT_MEMCG,oom_memcg=/system.slice/docker-" ID
	  ".scope,task_memcg=/system.slice/docker-" ID ".scope,task=exe", ID, true },
	/* oom_memcg last in the record. */
	{ "oom-kill:constraint=CONSTRAINT_MEMCG,oom_memcg=/docker/" ID, ID, true },
	/* Another container's OOM. */
	{ "oom-kill:constraint=CONSTRAINT_MEMCG,oom_memcg=/docker/" OTHER
	  ",task_memcg=/docker/" OTHER ",task=exe", ID, false },
	/* Our id only in task_memcg/cpuset: the limit hit was another cgroup's. */
	{ "oom-kill:constraint=CONSTRAINT_MEMCG,cpuset=" ID ",oom_memcg=/docker,"
	  "task_memcg=/docker/" ID ",task=exe", ID, false },
	/* A global OOM (no memcg) is not the container's limit. */
	{ "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,"
	  "mems_allowed=0,global_oom,task_memcg=/docker/" ID ",task=exe", ID, false },
	/* Not an oom-kill record. */
	{ "Memory cgroup out of memory: Killed process 25931 (exe) oom_memcg=/docker/"
	  ID, ID, false },
	/* The id as a prefix of a longer name, or with junk after it. */
	{ "oom-kill:oom_memcg=/docker/" ID "ff,task=exe", ID, false },
	{ "oom-kill:oom_memcg=/docker/x" ID ",task=exe", ID, false },
	/* Bad ids never match. */
	{ "oom-kill:oom_memcg=/docker/abc,task=exe", "abc", false },
	{ "oom-kill:oom_memcg=/docker/" ID, "", false },
	{ "oom-kill:oom_memcg=/docker/" ID, NULL, false },
	{ "oom-kill:oom_memcg=/docker/CE32ED6D402DAA455E3EA3760F5A6A4CC7274C78DBC9D48022D3320B71895E37",
	  "CE32ED6D402DAA455E3EA3760F5A6A4CC7274C78DBC9D48022D3320B71895E37", false },
	{ "", ID, false },
};

static void
test_match_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		bool got = runner_oomlog_match(rows[i].record,
		    strlen(rows[i].record), rows[i].id);
		if (got != rows[i].want)
			fail_msg("row %zu: got %d for %s", i, got, rows[i].record);
	}
}

/* A record cut before the id ends must not match. */
static void
test_match_respects_length(void **state)
{
	const char *r = "oom-kill:oom_memcg=/docker/" ID ",task=exe";

	(void)state;
	assert_true(runner_oomlog_match(r, strlen(r), ID));
	assert_false(runner_oomlog_match(r, strlen(r) - 20, ID));
}

/* Reading the real log with a made-up id finds nothing and never fails. */
static void
test_find_unknown_id(void **state)
{
	(void)state;
	assert_false(runner_oomlog_find(
	    "0000000000000000000000000000000000000000000000000000000000000000"));
	assert_false(runner_oomlog_find("not-an-id"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_match_table),
		cmocka_unit_test(test_match_respects_length),
		cmocka_unit_test(test_find_unknown_id),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
