/* Unit tests for the run registry (proxy/runs.h): add, lookups by id and
 * by source address, limits, expiry and forgetting. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "proxy/ctl.h"
#include "proxy/runs.h"

#define T0	((int64_t)1700000000000)	/* a wall-clock "now" */
#define TOKEN	"0123456789abcdef0123456789abcdef"

static const struct proxy_run_limits def = { .max_conns = 32 };

/* A register request through the real parser. */
static void
reg(struct proxy_ctl_req *req, const char *run, const char *addr,
    int64_t deadline, const char *extra)
{
	char line[512], err[128];

	snprintf(line, sizeof(line), "{\"op\":\"register\",\"run\":\"%s\","
	    "\"addr\":\"%s\",\"policy\":\"pypi\",\"token\":\"%s\","
	    "\"deadline_ms\":%lld%s}", run, addr, TOKEN, (long long)deadline,
	    extra != NULL ? extra : "");
	if (proxy_ctl_parse(line, strlen(line), req, err, sizeof(err)) != 0)
		fail_msg("%s: %s", line, err);
}

static struct sockaddr_storage
sa_of(const char *ip)
{
	struct sockaddr_storage ss;

	memset(&ss, 0, sizeof(ss));
	if (strchr(ip, ':') != NULL) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
		s6->sin6_family = AF_INET6;
		assert_int_equal(inet_pton(AF_INET6, ip, &s6->sin6_addr), 1);
		s6->sin6_port = htons(40000);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
		s4->sin_family = AF_INET;
		assert_int_equal(inet_pton(AF_INET, ip, &s4->sin_addr), 1);
		s4->sin_port = htons(40001);
	}
	return ss;
}

static void
test_runs_add_find(void **state)
{
	struct proxy_runs *rs;
	struct proxy_ctl_req req;
	struct proxy_run *r, *r2;
	struct sockaddr_storage a = sa_of("10.0.0.5"),
	    mapped = sa_of("::ffff:10.0.0.5"), other = sa_of("10.0.0.6");

	(void)state;
	assert_int_equal(proxy_runs_new(0, &rs), -EINVAL);
	assert_int_equal(proxy_runs_new(8, &rs), 0);
	reg(&req, "run-1", "10.0.0.5", T0 + 5000, NULL);
	assert_int_equal(proxy_runs_add(rs, &req, &def, T0, &r), 0);
	assert_string_equal(r->id, "run-1");
	assert_string_equal(r->policy, "pypi");
	assert_string_equal(r->token, TOKEN);
	assert_string_equal(r->addr_text, "10.0.0.5");
	assert_int_equal(r->deadline_ms, T0 + 5000);
	assert_non_null(r->egress);
	assert_ptr_equal(proxy_runs_find(rs, "run-1"), r);
	assert_null(proxy_runs_find(rs, "run-2"));
	assert_null(proxy_runs_find(rs, "run-"));
	/* Source address: IPv4 and IPv4-mapped IPv6 are the same; ports do
	 * not matter. */
	assert_true(proxy_run_addr_match(r, (struct sockaddr *)&a));
	assert_true(proxy_run_addr_match(r, (struct sockaddr *)&mapped));
	assert_false(proxy_run_addr_match(r, (struct sockaddr *)&other));
	assert_true(proxy_runs_live_at(rs, (struct sockaddr *)&a, T0));
	assert_true(proxy_runs_live_at(rs, (struct sockaddr *)&mapped, T0));
	assert_false(proxy_runs_live_at(rs, (struct sockaddr *)&other, T0));
	/* Same id again: refused, even with other fields. */
	reg(&req, "run-1", "10.0.0.6", T0 + 5000, NULL);
	assert_int_equal(proxy_runs_add(rs, &req, &def, T0, &r2), -EEXIST);
	assert_null(r2);
	/* A second run at the same address is fine. */
	reg(&req, "run-2", "::ffff:10.0.0.5", T0 + 9000, NULL);
	assert_int_equal(proxy_runs_add(rs, &req, &def, T0, &r2), 0);
	assert_true(proxy_run_addr_match(r2, (struct sockaddr *)&a));
	assert_int_equal(proxy_runs_count(rs), 2);
	/* IPv6 proper. */
	reg(&req, "v6", "fd00::7", T0 + 9000, NULL);
	assert_int_equal(proxy_runs_add(rs, &req, &def, T0, &r2), 0);
	other = sa_of("fd00::7");
	assert_true(proxy_run_addr_match(r2, (struct sockaddr *)&other));
	assert_false(proxy_run_addr_match(r, (struct sockaddr *)&other));
	assert_true(proxy_runs_live_at(rs, (struct sockaddr *)&other, T0));
	/* Remove: gone by id and by address. */
	proxy_runs_remove(rs, r2);
	assert_null(proxy_runs_find(rs, "v6"));
	assert_false(proxy_runs_live_at(rs, (struct sockaddr *)&other, T0));
	assert_int_equal(proxy_runs_count(rs), 2);
	proxy_runs_free(rs);
}

static void
test_runs_refusals(void **state)
{
	struct proxy_runs *rs;
	struct proxy_ctl_req req;
	struct proxy_run *r;
	char id[16];

	(void)state;
	assert_int_equal(proxy_runs_new(3, &rs), 0);
	/* A deadline at or before now. */
	reg(&req, "late", "10.0.0.1", T0, NULL);
	assert_int_equal(proxy_runs_add(rs, &req, &def, T0, &r), -ETIMEDOUT);
	reg(&req, "late", "10.0.0.1", T0 - 1, NULL);
	assert_int_equal(proxy_runs_add(rs, &req, &def, T0, &r), -ETIMEDOUT);
	/* Not a register request. */
	proxy_ctl_req_reset(&req);
	req.op = PROXY_CTL_PING;
	assert_int_equal(proxy_runs_add(rs, &req, &def, T0, &r), -EINVAL);
	/* Full at 3. */
	for (int i = 0; i < 3; i++) {
		snprintf(id, sizeof(id), "r%d", i);
		reg(&req, id, "10.0.0.1", T0 + 1, NULL);
		assert_int_equal(proxy_runs_add(rs, &req, &def, T0, &r), 0);
	}
	reg(&req, "r3", "10.0.0.1", T0 + 1, NULL);
	assert_int_equal(proxy_runs_add(rs, &req, &def, T0, &r), -ENOSPC);
	/* Room again after a remove. */
	proxy_runs_remove(rs, proxy_runs_find(rs, "r1"));
	assert_int_equal(proxy_runs_add(rs, &req, &def, T0, &r), 0);
	assert_int_equal(proxy_runs_count(rs), 3);
	proxy_runs_free(rs);
}

static void
test_runs_limits(void **state)
{
	const struct proxy_run_limits d = { .max_conns = 7, .bytes_up = 100,
	    .bytes_down = 200 };
	struct proxy_runs *rs;
	struct proxy_ctl_req req;
	struct proxy_run *r;

	(void)state;
	assert_int_equal(proxy_runs_new(8, &rs), 0);
	/* Defaults. */
	reg(&req, "a", "10.0.0.1", T0 + 1, NULL);
	assert_int_equal(proxy_runs_add(rs, &req, &d, T0, &r), 0);
	assert_int_equal(r->lim.max_conns, 7);
	assert_int_equal(r->lim.bytes_up, 100);
	assert_int_equal(r->lim.bytes_down, 200);
	/* Over: strictly more than the limit, each way. */
	r->bytes_up = 100;
	assert_false(proxy_run_over_bytes(r));
	r->bytes_up = 101;
	assert_true(proxy_run_over_bytes(r));
	r->bytes_up = 0;
	r->bytes_down = 201;
	assert_true(proxy_run_over_bytes(r));
	/* Per-run overrides, 0 meaning unlimited. */
	reg(&req, "b", "10.0.0.1", T0 + 1, ",\"max_conns\":2,\"bytes_up\":0,"
	    "\"bytes_down\":5");
	assert_int_equal(proxy_runs_add(rs, &req, &d, T0, &r), 0);
	assert_int_equal(r->lim.max_conns, 2);
	assert_int_equal(r->lim.bytes_up, 0);
	assert_int_equal(r->lim.bytes_down, 5);
	r->bytes_up = UINT64_MAX;
	assert_false(proxy_run_over_bytes(r));
	r->bytes_down = 6;
	assert_true(proxy_run_over_bytes(r));
	proxy_runs_free(rs);
}

struct tick_seen {
	char expired[8][PROXY_CRED_RUN_MAX + 1];
	char forgot[8][PROXY_CRED_RUN_MAX + 1];
	int nexpired, nforgot;
};

static void
on_expired(struct proxy_run *r, void *arg)
{
	struct tick_seen *t = arg;

	snprintf(t->expired[t->nexpired++], sizeof(t->expired[0]), "%s",
	    r->id);
}

static void
on_forget(struct proxy_run *r, void *arg)
{
	struct tick_seen *t = arg;

	snprintf(t->forgot[t->nforgot++], sizeof(t->forgot[0]), "%s",
	    r->id);
}

static void
test_runs_expiry(void **state)
{
	struct proxy_runs *rs;
	struct proxy_ctl_req req;
	struct proxy_run *r;
	struct tick_seen t = { 0 };
	struct sockaddr_storage a = sa_of("10.0.0.9");

	(void)state;
	assert_int_equal(proxy_runs_new(8, &rs), 0);
	reg(&req, "short", "10.0.0.9", T0 + 1000, NULL);
	assert_int_equal(proxy_runs_add(rs, &req, &def, T0, &r), 0);
	reg(&req, "long", "10.0.0.8", T0 + 100000, NULL);
	assert_int_equal(proxy_runs_add(rs, &req, &def, T0, &r), 0);
	/* Before the deadline: nothing. */
	assert_int_equal(proxy_runs_tick(rs, T0 + 999, on_expired, on_forget,
	    &t), 0);
	assert_int_equal(t.nexpired, 0);
	r = proxy_runs_find(rs, "short");
	assert_false(proxy_run_expired(r, T0 + 999));
	/* At the deadline it is expired even before a tick sees it. */
	assert_true(proxy_run_expired(r, T0 + 1000));
	assert_false(proxy_runs_live_at(rs, (struct sockaddr *)&a, T0 + 1000));
	assert_true(proxy_runs_live_at(rs, (struct sockaddr *)&a, T0 + 999));
	/* The tick marks it once, and keeps the record. */
	assert_int_equal(proxy_runs_tick(rs, T0 + 1500, on_expired, on_forget,
	    &t), 0);
	assert_int_equal(t.nexpired, 1);
	assert_string_equal(t.expired[0], "short");
	assert_true(r->expired);
	assert_int_equal(r->forget_ms, T0 + 1500 + PROXY_RUNS_LINGER_MS);
	assert_int_equal(proxy_runs_tick(rs, T0 + 2500, on_expired, on_forget,
	    &t), 0);
	assert_int_equal(t.nexpired, 1);
	assert_ptr_equal(proxy_runs_find(rs, "short"), r);
	/* Expired stays expired, whatever the clock says later. */
	assert_true(proxy_run_expired(r, T0));
	/* Linger over: forgotten (callback first), the other run stays. */
	assert_int_equal(proxy_runs_tick(rs, T0 + 1500 + PROXY_RUNS_LINGER_MS,
	    on_expired, on_forget, &t), 1);
	assert_int_equal(t.nforgot, 1);
	assert_string_equal(t.forgot[0], "short");
	assert_null(proxy_runs_find(rs, "short"));
	assert_non_null(proxy_runs_find(rs, "long"));
	assert_int_equal(proxy_runs_count(rs), 1);
	/* The id may be registered again once forgotten. */
	reg(&req, "short", "10.0.0.9", T0 + 200000, NULL);
	assert_int_equal(proxy_runs_add(rs, &req, &def, T0 + 100000, &r), 0);
	proxy_runs_free(rs);
}

/* Many runs: every one found by id and address after removals. */
static void
test_runs_many(void **state)
{
	struct proxy_runs *rs;
	struct proxy_ctl_req req;
	struct proxy_run *r;
	char id[16], ip[32];

	(void)state;
	assert_int_equal(proxy_runs_new(PROXY_RUNS_MAX, &rs), 0);
	for (int i = 0; i < PROXY_RUNS_MAX; i++) {
		snprintf(id, sizeof(id), "run%d", i);
		snprintf(ip, sizeof(ip), "10.1.%d.%d", i / 256, i % 256);
		reg(&req, id, ip, T0 + 1 + i, NULL);
		assert_int_equal(proxy_runs_add(rs, &req, &def, T0, &r), 0);
	}
	for (int i = 0; i < PROXY_RUNS_MAX; i += 2) {
		snprintf(id, sizeof(id), "run%d", i);
		proxy_runs_remove(rs, proxy_runs_find(rs, id));
	}
	for (int i = 0; i < PROXY_RUNS_MAX; i++) {
		struct sockaddr_storage a;

		snprintf(id, sizeof(id), "run%d", i);
		snprintf(ip, sizeof(ip), "10.1.%d.%d", i / 256, i % 256);
		a = sa_of(ip);
		r = proxy_runs_find(rs, id);
		if (i % 2 == 0) {
			assert_null(r);
			assert_false(proxy_runs_live_at(rs,
			    (struct sockaddr *)&a, T0));
		} else {
			assert_non_null(r);
			assert_string_equal(r->id, id);
			assert_true(proxy_runs_live_at(rs,
			    (struct sockaddr *)&a, T0));
		}
	}
	/* Everything expires in one tick and is forgotten in another. */
	assert_int_equal(proxy_runs_tick(rs, T0 + PROXY_RUNS_MAX + 1, NULL,
	    NULL, NULL), 0);
	assert_int_equal(proxy_runs_tick(rs, T0 + PROXY_RUNS_MAX + 1 +
	    PROXY_RUNS_LINGER_MS, NULL, NULL, NULL), PROXY_RUNS_MAX / 2);
	assert_int_equal(proxy_runs_count(rs), 0);
	proxy_runs_free(rs);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_runs_add_find),
		cmocka_unit_test(test_runs_refusals),
		cmocka_unit_test(test_runs_limits),
		cmocka_unit_test(test_runs_expiry),
		cmocka_unit_test(test_runs_many),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
