/*
 * Replay tests: the access-log line parser (records, skips, malformed
 * lines), the decision under a new set (host, port, DNS, inspected
 * method and path), and the grouping of changes over a small log corpus
 * with malformed lines, --since and first/last times.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "allowlist/replay.h"

/* The policy "after the edit": new.list. */
static const char after[] =
    "example.com\n"					/* 1 */
    "newly.example.org\n"				/* 2 */
    "!gone.example.com\n"				/* 3 */
    "api.example.net:443 inspect methods=GET paths=/v1/*,/v2/*\n" /* 4 */
    "git.example.net:22 raw\n";				/* 5 */

static struct allowlist_set *
load_after(void)
{
	struct allowlist_set *set = NULL;

	assert_int_equal(allowlist_set_parse("new.list", after,
	    sizeof(after) - 1, &set, NULL), 0);
	return set;
}

#define LINE(s) s, sizeof(s) - 1

static void
test_parse_kinds(void **state)
{
	struct allowlist_replay_rec r;
	const char *why;

	(void)state;
	assert_int_equal(allowlist_replay_parse_line(LINE(
	    "{\"time\":\"2026-12-04T10:00:00.000Z\",\"method\":\"CONNECT\","
	    "\"host\":\"example.com\",\"port\":443,\"decision\":\"allow\","
	    "\"reason\":\"allowed-by-entry\",\"policy\":\"web\"}"), &r, &why),
	    REPLAY_LINE_RECORD);
	assert_true(r.was_allowed);
	assert_string_equal(r.policy, "web");
	assert_string_equal(r.host, "example.com");
	assert_int_equal(r.port, 443);
	assert_false(r.dns);
	allowlist_replay_rec_clear(&r);

	/* A policy denial; policy null is "default". */
	assert_int_equal(allowlist_replay_parse_line(LINE(
	    "{\"host\":\"x.example\",\"port\":443,\"decision\":\"deny\","
	    "\"reason\":\"not-on-policy default\",\"policy\":null}"), &r,
	    &why), REPLAY_LINE_RECORD);
	assert_false(r.was_allowed);
	assert_string_equal(r.policy, "default");
	allowlist_replay_rec_clear(&r);

	/* A network error came after the policy allowed. */
	assert_int_equal(allowlist_replay_parse_line(LINE(
	    "{\"host\":\"nx.example\",\"port\":53,\"method\":\"DNS\","
	    "\"decision\":\"error\",\"reason\":\"dns-nxdomain\"}"), &r, &why),
	    REPLAY_LINE_RECORD);
	assert_true(r.was_allowed);
	assert_true(r.dns);
	allowlist_replay_rec_clear(&r);

	/* Denials no allowlist edit changes: skipped by reason. */
	assert_int_equal(allowlist_replay_parse_line(LINE(
	    "{\"host\":\"169.254.169.254\",\"port\":80,\"decision\":\"deny\","
	    "\"reason\":\"address-blocked\"}"), &r, &why), REPLAY_LINE_SKIP);
	assert_string_equal(why, "address-blocked");
	assert_int_equal(allowlist_replay_parse_line(LINE(
	    "{\"host\":\"a\",\"port\":80,\"decision\":\"error\","
	    "\"reason\":\"malformed-request\"}"), &r, &why), REPLAY_LINE_SKIP);
	assert_string_equal(why, "malformed-request");
	/* A supervisor's own JSON line is not an access-log line. */
	assert_int_equal(allowlist_replay_parse_line(LINE(
	    "{\"level\":\"info\",\"msg\":\"started\"}"), &r, &why),
	    REPLAY_LINE_SKIP);
	assert_string_equal(why, "not-access-log");

	/* Malformed. */
	assert_int_equal(allowlist_replay_parse_line(LINE("cordon: started"),
	    &r, &why), REPLAY_LINE_MALFORMED);
	assert_int_equal(allowlist_replay_parse_line(LINE("[1,2]"), &r, &why),
	    REPLAY_LINE_MALFORMED);
	assert_int_equal(allowlist_replay_parse_line(LINE(
	    "{\"host\":\"a\",\"port\":\"80\",\"decision\":\"allow\"}"), &r,
	    &why), REPLAY_LINE_MALFORMED);
	assert_string_equal(why, "bad-port");
	assert_int_equal(allowlist_replay_parse_line(LINE(
	    "{\"host\":\"a\",\"port\":70000,\"decision\":\"allow\"}"), &r,
	    &why), REPLAY_LINE_MALFORMED);
	assert_int_equal(allowlist_replay_parse_line(LINE(
	    "{\"host\":\"\",\"port\":80,\"decision\":\"allow\"}"), &r, &why),
	    REPLAY_LINE_MALFORMED);
	assert_string_equal(why, "bad-host");
	assert_int_equal(allowlist_replay_parse_line(LINE(
	    "{\"host\":\"a\",\"port\":80,\"decision\":\"maybe\"}"), &r, &why),
	    REPLAY_LINE_MALFORMED);
	assert_string_equal(why, "bad-decision");
	assert_int_equal(allowlist_replay_parse_line(LINE(
	    "{\"host\":\"a\",\"port\":80,\"decision\":\"allow\","
	    "\"policy\":7}"), &r, &why), REPLAY_LINE_MALFORMED);
	/* A truncated line (a log cut mid-write). */
	assert_int_equal(allowlist_replay_parse_line(LINE(
	    "{\"host\":\"a\",\"port\":80,\"deci"), &r, &why),
	    REPLAY_LINE_MALFORMED);
}

static void
test_decide(void **state)
{
	struct allowlist_set *set = load_after();
	struct allowlist_replay_verdict v;
	struct allowlist_replay_rec r;
	const char *why;

	(void)state;
	assert_int_equal(allowlist_replay_parse_line(LINE(
	    "{\"host\":\"newly.example.org\",\"port\":443,"
	    "\"decision\":\"deny\",\"reason\":\"not-on-policy default\"}"),
	    &r, &why), REPLAY_LINE_RECORD);
	allowlist_replay_decide(set, &r, &v);
	assert_true(v.allowed);
	assert_string_equal(v.rule, "new.list:2: newly.example.org");
	allowlist_replay_rec_clear(&r);

	/* Port 8080 is not among an exact entry's defaults. */
	assert_int_equal(allowlist_replay_parse_line(LINE(
	    "{\"host\":\"example.com\",\"port\":8080,\"decision\":\"allow\"}"),
	    &r, &why), REPLAY_LINE_RECORD);
	allowlist_replay_decide(set, &r, &v);
	assert_false(v.allowed);
	assert_string_equal(v.reason, "port-not-allowed");
	allowlist_replay_rec_clear(&r);

	/* DNS: a name allowed only on port 22 still resolves. */
	assert_int_equal(allowlist_replay_parse_line(LINE(
	    "{\"host\":\"git.example.net\",\"port\":53,\"method\":\"DNS\","
	    "\"decision\":\"deny\",\"reason\":\"not-on-policy\"}"), &r, &why),
	    REPLAY_LINE_RECORD);
	allowlist_replay_decide(set, &r, &v);
	assert_true(v.allowed);
	allowlist_replay_rec_clear(&r);

	/* Inspected: the method and path are judged by the new options. */
	assert_int_equal(allowlist_replay_parse_line(LINE(
	    "{\"host\":\"api.example.net\",\"port\":443,\"method\":\"GET\","
	    "\"decision\":\"deny\",\"reason\":\"path-not-allowed\","
	    "\"path\":\"/v2/items?x=1\",\"inspected\":true}"), &r, &why),
	    REPLAY_LINE_RECORD);
	allowlist_replay_decide(set, &r, &v);
	assert_true(v.allowed);
	allowlist_replay_rec_clear(&r);
	assert_int_equal(allowlist_replay_parse_line(LINE(
	    "{\"host\":\"api.example.net\",\"port\":443,\"method\":\"POST\","
	    "\"decision\":\"allow\",\"path\":\"/v1/x\",\"inspected\":true}"),
	    &r, &why), REPLAY_LINE_RECORD);
	allowlist_replay_decide(set, &r, &v);
	assert_false(v.allowed);
	assert_string_equal(v.reason, "method-not-allowed");
	allowlist_replay_rec_clear(&r);

	/* A policy the new set lacks denies. */
	assert_int_equal(allowlist_replay_parse_line(LINE(
	    "{\"host\":\"example.com\",\"port\":443,\"decision\":\"allow\","
	    "\"policy\":\"gone\"}"), &r, &why), REPLAY_LINE_RECORD);
	allowlist_replay_decide(set, &r, &v);
	assert_false(v.allowed);
	assert_string_equal(v.reason, "no-policy");
	allowlist_replay_rec_clear(&r);
	allowlist_set_free(set);
}

/* A small log: what the old policy decided, with noise in between. */
static const char *const corpus[] = {
	/* 1 */ "{\"time\":\"2026-12-04T10:00:02.000Z\",\"host\":\"gone.example.com\",\"port\":443,\"decision\":\"allow\",\"policy\":\"default\"}\n",
	/* 2 */ "cordon-netsetup: supervisor: proxy started\n",
	/* 3 */ "{\"time\":\"2026-12-04T10:00:01.000Z\",\"host\":\"gone.example.com\",\"port\":443,\"decision\":\"allow\",\"policy\":\"default\"}\n",
	/* 4 */ "\n",
	/* 5 */ "{\"time\":\"2026-12-04T10:00:03.000Z\",\"host\":\"example.com\",\"port\":443,\"decision\":\"allow\",\"policy\":\"default\"}\n",
	/* 6 */ "{\"time\":\"2026-12-04T10:00:04.000Z\",\"host\":\"newly.example.org\",\"port\":443,\"decision\":\"deny\",\"reason\":\"not-on-policy default\",\"policy\":\"default\"}\n",
	/* 7 */ "{\"host\":\"x\",\"port\":\n",
	/* 8 */ "{\"time\":\"2026-12-04T10:00:05.000Z\",\"host\":\"10.0.0.1\",\"port\":443,\"decision\":\"deny\",\"reason\":\"address-private\",\"policy\":\"default\"}\n",
	/* 9 */ "{\"time\":\"2026-12-04T09:00:00.000Z\",\"host\":\"gone.example.com\",\"port\":443,\"decision\":\"allow\",\"policy\":\"default\"}\n",
	/* 10 */ "{\"time\":\"2026-12-04T10:00:06.000Z\",\"host\":\"still.denied.example\",\"port\":443,\"decision\":\"deny\",\"reason\":\"not-on-policy default\",\"policy\":\"default\"}\n",
};

static void
feed_all(struct allowlist_replay_stats *st, const struct allowlist_set *set,
    const char *since)
{
	for (size_t i = 0; i < sizeof(corpus) / sizeof(corpus[0]); i++)
		assert_int_equal(allowlist_replay_feed(st, set, corpus[i],
		    strlen(corpus[i]), i + 1, since), 0);
	allowlist_replay_sort(st);
}

static void
test_feed_groups(void **state)
{
	struct allowlist_set *set = load_after();
	struct allowlist_replay_stats st;

	(void)state;
	allowlist_replay_stats_init(&st);
	feed_all(&st, set, NULL);
	assert_int_equal(st.lines, 10);
	assert_int_equal(st.replayed, 6);
	assert_int_equal(st.changed, 4);
	assert_int_equal(st.unchanged, 2);
	assert_int_equal(st.malformed, 2);
	assert_int_equal(st.malformed_kept, 2);
	assert_int_equal(st.malformed_lines[0], 2);
	assert_int_equal(st.malformed_lines[1], 7);
	assert_int_equal(st.nskipped, 1);
	assert_string_equal(st.skipped[0].reason, "address-private");
	assert_int_equal(st.nchanges, 2);
	/* Sorted by host: gone.example.com, then newly.example.org. */
	assert_string_equal(st.changes[0].host, "gone.example.com");
	assert_true(st.changes[0].from_allowed);
	assert_false(st.changes[0].to_allowed);
	assert_int_equal(st.changes[0].count, 3);
	assert_string_equal(st.changes[0].first, "2026-12-04T09:00:00.000Z");
	assert_string_equal(st.changes[0].last, "2026-12-04T10:00:02.000Z");
	assert_string_equal(st.changes[0].rule,
	    "new.list:3: !gone.example.com");
	assert_string_equal(st.changes[0].reason, "denied-by-entry");
	assert_string_equal(st.changes[1].host, "newly.example.org");
	assert_false(st.changes[1].from_allowed);
	assert_true(st.changes[1].to_allowed);
	assert_int_equal(st.changes[1].count, 1);
	allowlist_replay_stats_free(&st);

	/* --since drops the 09:00 line. */
	allowlist_replay_stats_init(&st);
	feed_all(&st, set, "2026-12-04T10:00:00.000Z");
	assert_int_equal(st.too_old, 1);
	assert_int_equal(st.replayed, 5);
	assert_int_equal(st.changes[0].count, 2);
	assert_string_equal(st.changes[0].first, "2026-12-04T10:00:01.000Z");
	allowlist_replay_stats_free(&st);
	allowlist_set_free(set);
}

static void
test_malformed_cap(void **state)
{
	struct allowlist_set *set = load_after();
	struct allowlist_replay_stats st;

	(void)state;
	allowlist_replay_stats_init(&st);
	for (uint64_t i = 1; i <= REPLAY_MALFORMED_KEPT + 5; i++)
		assert_int_equal(allowlist_replay_feed(&st, set, "garbage", 7, i, NULL),
		    0);
	assert_int_equal(st.malformed, REPLAY_MALFORMED_KEPT + 5);
	assert_int_equal(st.malformed_kept, REPLAY_MALFORMED_KEPT);
	assert_int_equal(st.malformed_lines[REPLAY_MALFORMED_KEPT - 1],
	    REPLAY_MALFORMED_KEPT);
	allowlist_replay_stats_free(&st);
	allowlist_set_free(set);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_kinds),
		cmocka_unit_test(test_decide),
		cmocka_unit_test(test_feed_groups),
		cmocka_unit_test(test_malformed_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
