/*
 * The connection's states and the one table of the steps between them
 * (conn.h: enum conn_state, proxy_conn_state_set). Every change of
 * c->state goes through proxy_conn_state_set, which checks it against
 * the table: a step the table does not list is a bug, logged as a
 * warning with both states' names (the connection goes on as before: one
 * client's odd path never stops the proxy), and the proxy suites fail on
 * that line (tests/lib/proxy_fixture.c, px_stop). tests/proxy/test_conn_state.c
 * enumerates the table.
 */
#include "proxy/conn.h"

#include "common/log.h"

static const char *const state_names[CONN_NSTATES] = {
	[CONN_HEAD] = "head",
	[CONN_RESOLVING] = "resolving",
	[CONN_PARENT] = "parent",
	[CONN_CONNECTING] = "connecting",
	[CONN_TUNNEL] = "tunnel",
	[CONN_FORWARD] = "forward",
	[CONN_LINGER] = "linger",
};

#define S(x) (1u << (x))

/* to-states allowed from each state. Freeing a connection is no state:
 * it may happen in any. */
static const unsigned state_next[CONN_NSTATES] = {
	/* A head: its own pipeline again (transparent start, a request
	 * path chosen); decided: a name to resolve, an IP literal or an
	 * inspected request's upstream to connect to, a leaf or a secret
	 * to ask the parent for; or a refusal. */
	[CONN_HEAD] = S(CONN_HEAD) | S(CONN_RESOLVING) | S(CONN_PARENT) |
	    S(CONN_CONNECTING) | S(CONN_LINGER),
	/* Resolved: connect; no address or a refusal: answer. */
	[CONN_RESOLVING] = S(CONN_CONNECTING) | S(CONN_LINGER),
	/* The parent answered (a leaf: the client's TLS, then its first
	 * head; a secret: connect) or failed (answer). */
	[CONN_PARENT] = S(CONN_HEAD) | S(CONN_CONNECTING) | S(CONN_LINGER),
	/* Connected: a tunnel or a forwarded request; the next address;
	 * all failed: answer. */
	[CONN_CONNECTING] = S(CONN_CONNECTING) | S(CONN_TUNNEL) |
	    S(CONN_FORWARD) | S(CONN_LINGER),
	/* A tunnel is inspected once its ClientHello is checked (its first
	 * head awaited, tunnel.c -> inspect_tls.c). Otherwise it ends in a
	 * free: a refusal of its first bytes (tunnel_refuse), an idle
	 * timeout or either side's close; it is entered once, from
	 * connecting, spliced or buffered (proxy_tunnel_start). */
	[CONN_TUNNEL] = S(CONN_HEAD),
	/* Answered: the next head on a kept-alive connection, or an error
	 * answer and the drain. */
	[CONN_FORWARD] = S(CONN_HEAD) | S(CONN_LINGER),
	/* Only the close. */
	[CONN_LINGER] = 0,
};

const char *
proxy_conn_state_name(enum conn_state s)
{
	return (unsigned)s < CONN_NSTATES ? state_names[s] : "invalid";
}

bool
proxy_conn_state_allowed(enum conn_state from, enum conn_state to)
{
	return (unsigned)from < CONN_NSTATES && (unsigned)to < CONN_NSTATES &&
	    (state_next[from] & S(to)) != 0;
}

void
proxy_conn_state_set(struct conn *c, enum conn_state to)
{
	if (!proxy_conn_state_allowed(c->state, to))
		log_warnx("%s: bug: connection state %s -> %s is not in the "
		    "state table", c->client, proxy_conn_state_name(c->state),
		    proxy_conn_state_name(to));
	c->state = to;
}
