/*
 * Host firewall rules for the egress bridge, as data: Cordon's own chains
 * with their exact contents, and the jump rules into them from INPUT,
 * FORWARD and DOCKER-USER. Builders turn them into iptables argv arrays;
 * parsers read `iptables -S` listings. Pure: no I/O.
 */
#ifndef CORDON_NETSETUP_FW_H
#define CORDON_NETSETUP_FW_H

#include <stdbool.h>
#include <stddef.h>

#include "netsetup/netsetup.h"

enum fw_family { FW_INET = 4, FW_INET6 = 6 };

#define FW_SPEC_MAX	14
#define FW_RULES_MAX	12
#define FW_ARGV_MAX	32

struct fw_rule {
	char chain[32];
	bool jump;		/* in a chain we do not own: inserted at 1 */
	size_t nspec;
	char spec[FW_SPEC_MAX][48];	/* e.g. "-i", "cordon0", "-j", ... */
};

struct fw_plan {
	enum fw_family family;
	char chains[2][32];	/* our chains: input, forward */
	size_t nrules;
	struct fw_rule rules[FW_RULES_MAX];	/* chain contents, then jumps */
};

/*
 * IPv4: <in>: ACCEPT tcp to gateway:port, ACCEPT RELATED,ESTABLISHED,
 * DROP. <fwd>: DROP. IPv6: both chains only DROP (the proxy is IPv4).
 * Jumps: INPUT -i bridge -> in; FORWARD -i bridge and -o bridge -> fwd;
 * the same two in DOCKER-USER when docker_user is true. 0 or -EINVAL.
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
	FW_OP_LIST,		/* -S (whole filter table) */
};

/* "iptables" or "ip6tables". */
const char *fw_binary(enum fw_family fam);

/*
 * Fills argv (NULL-terminated, at most max entries with the NULL) for one
 * operation: `<bin> -w -t filter <op> ...`. Chain operations take chain,
 * rule operations take rule (the other may be NULL). Strings point into
 * chain, rule or constants. 0, -EINVAL or -E2BIG.
 */
int fw_argv(const char **argv, size_t max, enum fw_family fam, enum fw_op op,
    const char *chain, const struct fw_rule *rule);

/* Writes the rule as `iptables -S` prints it ("-A CHAIN spec..."). 0 or
 * -ENOSPC. */
int fw_rule_line(const struct fw_rule *r, char *buf, size_t len);

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
