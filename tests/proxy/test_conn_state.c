/* The proxy's connection state table (proxy/conn_state.c): every pair of
 * states is enumerated against the steps the connection files take (one
 * row per step, with where it happens), and the table's shape is checked:
 * every state is reachable from a new connection's head, every state but
 * linger can end in an answer (linger), linger leads nowhere, names are
 * distinct. A step outside the table is logged as a bug, and the proxy
 * suites fail on that line (tests/lib/proxy_fixture.c, px_stop). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdbool.h>
#include <string.h>

#include "proxy/conn.h"

#define N CONN_NSTATES

/* Each step, and where the connection files take it. */
static const struct step {
	enum conn_state from, to;
	const char *where;
} steps[] = {
	{ CONN_HEAD, CONN_HEAD, "request.c: a request path chosen; "
	  "transparent.c: its start" },
	{ CONN_HEAD, CONN_RESOLVING, "upstream.c: a name to resolve" },
	{ CONN_HEAD, CONN_PARENT, "inspect_tls.c: a leaf to ask for; "
	  "inspect.c: a secret" },
	{ CONN_HEAD, CONN_CONNECTING, "upstream.c: an IP literal; inspect.c: "
	  "an inspected request's upstream" },
	{ CONN_HEAD, CONN_LINGER, "conn_close.c: a refusal" },
	{ CONN_RESOLVING, CONN_CONNECTING, "upstream.c: resolved" },
	{ CONN_RESOLVING, CONN_LINGER, "conn_close.c: no address" },
	{ CONN_PARENT, CONN_HEAD, "inspect_tls.c: the leaf came, the "
	  "client's first head" },
	{ CONN_PARENT, CONN_CONNECTING, "inspect.c: the secret came" },
	{ CONN_PARENT, CONN_LINGER, "conn_close.c: the parent failed" },
	{ CONN_CONNECTING, CONN_CONNECTING, "upstream.c: the next address" },
	{ CONN_CONNECTING, CONN_TUNNEL, "tunnel.c: connected, a tunnel" },
	{ CONN_CONNECTING, CONN_FORWARD, "forward.c: connected, a request" },
	{ CONN_CONNECTING, CONN_LINGER, "conn_close.c: every address "
	  "failed" },
	{ CONN_TUNNEL, CONN_HEAD, "inspect_tls.c: the tunnel inspected, "
	  "its first head awaited" },
	{ CONN_FORWARD, CONN_HEAD, "request.c: the next head (keep-alive)" },
	{ CONN_FORWARD, CONN_LINGER, "conn_close.c: an error answer" },
};

static bool
listed(enum conn_state from, enum conn_state to)
{
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		if (steps[i].from == from && steps[i].to == to)
			return true;
	return false;
}

/* Every pair: allowed exactly when a step is listed for it. */
static void
test_every_pair(void **state)
{
	(void)state;
	for (int f = 0; f < N; f++)
		for (int t = 0; t < N; t++) {
			bool want = listed((enum conn_state)f,
			    (enum conn_state)t);

			if (proxy_conn_state_allowed((enum conn_state)f,
			    (enum conn_state)t) != want)
				fail_msg("%s -> %s: table says %s, the steps "
				    "say %s", proxy_conn_state_name(
				    (enum conn_state)f), proxy_conn_state_name(
				    (enum conn_state)t), want ? "no" : "yes",
				    want ? "yes" : "no");
		}
	/* Out of range: never. */
	assert_false(proxy_conn_state_allowed(N, CONN_HEAD));
	assert_false(proxy_conn_state_allowed(CONN_HEAD, N));
	assert_false(proxy_conn_state_allowed((enum conn_state)-1, CONN_HEAD));
}

/* reach[s]: the states reachable from s in the table (s included). */
static void
closure(bool reach[N][N])
{
	memset(reach, 0, sizeof(bool) * N * N);
	for (int s = 0; s < N; s++)
		reach[s][s] = true;
	for (int k = 0; k < N; k++)
		for (int i = 0; i < N; i++)
			for (int j = 0; j < N; j++)
				if (proxy_conn_state_allowed(
				    (enum conn_state)i, (enum conn_state)j))
					reach[i][j] = true;
	for (int k = 0; k < N; k++)
		for (int i = 0; i < N; i++)
			for (int j = 0; j < N; j++)
				if (reach[i][k] && reach[k][j])
					reach[i][j] = true;
}

static void
test_shape(void **state)
{
	bool reach[N][N];

	(void)state;
	closure(reach);
	for (int s = 0; s < N; s++) {
		/* Every state is entered from a new connection's head. */
		assert_true(reach[CONN_HEAD][s]);
		/* Every state can end with an answer and the drain. */
		assert_true(reach[s][CONN_LINGER]);
		/* Named, each with its own name. */
		assert_string_not_equal(proxy_conn_state_name(
		    (enum conn_state)s), "invalid");
		for (int t = 0; t < s; t++)
			assert_string_not_equal(proxy_conn_state_name(
			    (enum conn_state)s), proxy_conn_state_name(
			    (enum conn_state)t));
	}
	/* Linger leads nowhere, not even to itself. */
	for (int t = 0; t < N; t++)
		assert_false(proxy_conn_state_allowed(CONN_LINGER,
		    (enum conn_state)t));
	assert_string_equal(proxy_conn_state_name(N), "invalid");
}

/* A step outside the table is taken (the connection goes on as before)
 * and said: the line the proxy suites fail on. */
static void
test_outside_step_taken(void **state)
{
	struct conn c;

	(void)state;
	memset(&c, 0, sizeof(c));
	strcpy(c.client, "127.0.0.1:9");
	c.state = CONN_LINGER;
	proxy_conn_state_set(&c, CONN_HEAD);
	assert_int_equal(c.state, CONN_HEAD);
	proxy_conn_state_set(&c, CONN_RESOLVING);
	assert_int_equal(c.state, CONN_RESOLVING);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_pair),
		cmocka_unit_test(test_shape),
		cmocka_unit_test(test_outside_step_taken),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
