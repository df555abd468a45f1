/*
 * Host firewall rules for the egress bridge, as data: Cordon's own chains
 * with their exact contents, in the filter table (the boundary) and the
 * nat table (the redirects to the proxy), and the jump rules into them
 * from INPUT, FORWARD, DOCKER-USER and nat PREROUTING. Builders turn them
 * into iptables argv arrays; parsers read `iptables -S` listings (one
 * table's). Pure: no I/O.
 */
#ifndef CORDON_NETSETUP_FW_H
#define CORDON_NETSETUP_FW_H

#include <stdbool.h>
#include <stddef.h>

#include "netsetup/params.h"

enum fw_family { FW_INET = 4, FW_INET6 = 6 };

/* The two tables we write: filter (the boundary: what is accepted from
 * the bridge) and nat (the redirects to the proxy's listeners, IPv4). */
enum fw_table { FW_FILTER = 0, FW_NAT = 1 };
#define FW_TABLES 2

#define FW_SPEC_MAX	14
#define FW_CHAINS_MAX	3
#define FW_RULES_MAX	24
#define FW_ARGV_MAX	32

struct fw_rule {
	enum fw_table table;
	char chain[32];
	bool jump;		/* in a chain we do not own: inserted at 1 */
	size_t nspec;
	char spec[FW_SPEC_MAX][48];	/* e.g. "-i", "cordon0", "-j", ... */
};

/* A chain we own, and its table. */
struct fw_chain {
	enum fw_table table;
	char name[32];
};

struct fw_plan {
	enum fw_family family;
	size_t nchains;
	struct fw_chain chains[FW_CHAINS_MAX];	/* input, forward[, nat] */
	size_t nrules;
	struct fw_rule rules[FW_RULES_MAX];	/* chain contents, then jumps */
};

/*
 * IPv4, filter: <in>: ACCEPT to the gateway tcp proxy port, tcp
 * transparent port, udp and tcp DNS port; ACCEPT RELATED,ESTABLISHED;
 * DROP (after the nat redirects below, INPUT sees the redirected port).
 * <fwd>: DROP. nat: <nat>: RETURN tcp to gateway:proxy port (the explicit
 * proxy, unchanged), REDIRECT udp 53 and tcp 53 to the DNS port, REDIRECT
 * every other tcp to the transparent port (REDIRECT goes to the address of
 * the incoming interface: the gateway).
 * IPv6: both filter chains only DROP and no nat (the network has no IPv6).
 * Jumps: INPUT -i bridge -> in; FORWARD -i bridge and -o bridge -> fwd;
 * the same two in DOCKER-USER when docker_user is true; IPv4 nat
 * PREROUTING -i bridge -> nat. 0 or -EINVAL.
 */
int fw_plan_build(struct fw_plan *plan, enum fw_family fam,
    const struct netsetup_params *p, bool docker_user);

enum fw_op {
	FW_OP_NEW_CHAIN,	/* -N chain */
	FW_OP_FLUSH,		/* -F chain */
	FW_OP_DELETE_CHAIN,	/* -X chain */
	FW_OP_APPEND,		/* -A rule */
	FW_OP_INSERT1,		/* -I rule 1 */
	FW_OP_CHECK,		/* -C rule */
	FW_OP_DELETE,		/* -D rule */
	FW_OP_LIST,		/* -S (the whole table) */
};

/* "iptables" or "ip6tables". */
const char *fw_binary(enum fw_family fam);

/* "filter" or "nat". */
const char *fw_table_name(enum fw_table table);

/*
 * Fills argv (NULL-terminated, at most max entries with the NULL) for one
 * operation: `<bin> -w -t <table> <op> ...`. Chain operations take chain,
 * rule operations take rule (the other may be NULL), whose table must be
 * table. Strings point into chain, rule or constants. 0, -EINVAL or
 * -E2BIG.
 */
int fw_argv(const char **argv, size_t max, enum fw_family fam,
    enum fw_table table, enum fw_op op, const char *chain,
    const struct fw_rule *rule);

/* Writes the rule as `iptables -S` prints it ("-A CHAIN spec..."). 0 or
 * -ENOSPC. */
int fw_rule_line(const struct fw_rule *r, char *buf, size_t len);

/* The parsers below take one table's listing (`-t TABLE -S`). */

/* True if listing (output of -S) declares chain ("-N chain"). */
bool fw_listing_has_chain(const char *listing, const char *chain);

/* Number of rules ("-A chain ...") listing has in chain. */
size_t fw_listing_count(const char *listing, const char *chain);

/*
 * True if jump (a rule of a chain we do not own) is present and no rule
 * before it in that chain could accept first: every earlier rule drops,
 * rejects, or jumps to DOCKER-USER, DOCKER-ISOLATION-STAGE-1 or a CORDON-
 * chain (Docker puts only drops and returns in those). Matches the rule's
 * line exactly.
 */
bool fw_listing_jump_first(const char *listing, const struct fw_rule *jump);

/* "nf_tables", "legacy" or "unknown" from `iptables -V` output. */
const char *fw_backend_parse(const char *version_output);

#endif
