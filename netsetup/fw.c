/*
 * Firewall rules as data (fw.h): the plan for one address family (filter
 * and nat), argv builders for each iptables operation, and parsers for
 * `iptables -S`.
 * Everything here is pure, so the exact rules are unit-tested.
 */
#include "netsetup/fw.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"

/* Appends one rule; spec is a NULL-terminated list of words. (jump is an
 * int: va_start after a promoted type would be undefined.) */
static int
plan_add(struct fw_plan *plan, enum fw_table table, const char *chain,
    int jump, ...)
{
	struct fw_rule *r;
	const char *w;
	va_list ap;
	int rc = 0;

	if (plan->nrules == FW_RULES_MAX)
		return -E2BIG;
	r = &plan->rules[plan->nrules];
	memset(r, 0, sizeof(*r));
	r->table = table;
	if (!util_strlcpy(r->chain, chain, sizeof(r->chain)))
		return -EINVAL;
	r->jump = jump != 0;
	va_start(ap, jump);
	while ((w = va_arg(ap, const char *)) != NULL) {
		if (r->nspec == FW_SPEC_MAX ||
		    !util_strlcpy(r->spec[r->nspec], w, sizeof(r->spec[0]))) {
			rc = -EINVAL;
			break;
		}
		r->nspec++;
	}
	va_end(ap);
	if (rc == 0)
		plan->nrules++;
	return rc;
}

static int
plan_chain(struct fw_plan *plan, enum fw_table table, const char *name)
{
	struct fw_chain *ch;

	if (plan->nchains == FW_CHAINS_MAX)
		return -E2BIG;
	ch = &plan->chains[plan->nchains];
	ch->table = table;
	if (!util_strlcpy(ch->name, name, sizeof(ch->name)))
		return -EINVAL;
	plan->nchains++;
	return 0;
}

static bool
port_ok(int port)
{
	return port >= 1 && port <= 65535;
}

/* IPv4 filter <in>: what the gateway accepts from the bridge. The nat
 * redirects come first on the packet's path, so the DNS and transparent
 * rules see the port a packet was redirected to. */
static int
plan_input_v4(struct fw_plan *plan, const struct netsetup_params *p)
{
	const char *in = p->chain_in;
	char dst[24], port[8], tport[8], dport[8];
	int rc = 0;

	snprintf(dst, sizeof(dst), "%s/32", p->gateway);
	snprintf(port, sizeof(port), "%d", p->port);
	snprintf(tport, sizeof(tport), "%d", p->tport);
	snprintf(dport, sizeof(dport), "%d", p->dns_port);
	rc |= plan_add(plan, FW_FILTER, in, 0, "-d", dst, "-p", "tcp", "-m",
	    "tcp", "--dport", port, "-j", "ACCEPT", NULL);
	rc |= plan_add(plan, FW_FILTER, in, 0, "-d", dst, "-p", "tcp", "-m",
	    "tcp", "--dport", tport, "-j", "ACCEPT", NULL);
	rc |= plan_add(plan, FW_FILTER, in, 0, "-d", dst, "-p", "udp", "-m",
	    "udp", "--dport", dport, "-j", "ACCEPT", NULL);
	rc |= plan_add(plan, FW_FILTER, in, 0, "-d", dst, "-p", "tcp", "-m",
	    "tcp", "--dport", dport, "-j", "ACCEPT", NULL);
	rc |= plan_add(plan, FW_FILTER, in, 0, "-m", "conntrack", "--ctstate",
	    "RELATED,ESTABLISHED", "-j", "ACCEPT", NULL);
	return rc;
}

/* IPv4 nat <nat>: every TCP connection and every DNS query from the
 * bridge goes to the proxy on the gateway, whatever address it was for,
 * before routing (so nothing is ever forwarded for it). */
static int
plan_nat_v4(struct fw_plan *plan, const struct netsetup_params *p)
{
	const char *nat = p->chain_nat;
	char dst[24], port[8], tport[8], dport[8];
	int rc = 0;

	snprintf(dst, sizeof(dst), "%s/32", p->gateway);
	snprintf(port, sizeof(port), "%d", p->port);
	snprintf(tport, sizeof(tport), "%d", p->tport);
	snprintf(dport, sizeof(dport), "%d", p->dns_port);
	rc |= plan_add(plan, FW_NAT, nat, 0, "-d", dst, "-p", "tcp", "-m",
	    "tcp", "--dport", port, "-j", "RETURN", NULL);
	rc |= plan_add(plan, FW_NAT, nat, 0, "-p", "udp", "-m", "udp",
	    "--dport", "53", "-j", "REDIRECT", "--to-ports", dport, NULL);
	rc |= plan_add(plan, FW_NAT, nat, 0, "-p", "tcp", "-m", "tcp",
	    "--dport", "53", "-j", "REDIRECT", "--to-ports", dport, NULL);
	rc |= plan_add(plan, FW_NAT, nat, 0, "-p", "tcp", "-j", "REDIRECT",
	    "--to-ports", tport, NULL);
	return rc;
}

int
fw_plan_build(struct fw_plan *plan, enum fw_family fam,
    const struct netsetup_params *p, bool docker_user)
{
	const char *in = p->chain_in, *fwd = p->chain_fwd, *br = p->bridge;
	int rc = 0;

	memset(plan, 0, sizeof(*plan));
	plan->family = fam;
	if (fam != FW_INET && fam != FW_INET6)
		return -EINVAL;
	if (p->bridge[0] == '\0' || p->gateway[0] == '\0' ||
	    !port_ok(p->port) || !port_ok(p->tport) || !port_ok(p->dns_port) ||
	    p->port == p->tport || p->port == p->dns_port ||
	    p->tport == p->dns_port || plan_chain(plan, FW_FILTER, in) < 0 ||
	    plan_chain(plan, FW_FILTER, fwd) < 0 ||
	    (fam == FW_INET && plan_chain(plan, FW_NAT, p->chain_nat) < 0))
		return -EINVAL;

	/* Our chains: the whole policy for traffic from the bridge. */
	if (fam == FW_INET)
		rc |= plan_input_v4(plan, p);
	rc |= plan_add(plan, FW_FILTER, in, 0, "-j", "DROP", NULL);
	rc |= plan_add(plan, FW_FILTER, fwd, 0, "-j", "DROP", NULL);
	if (fam == FW_INET)
		rc |= plan_nat_v4(plan, p);

	/* Jumps, each inserted at position 1 so nothing can accept first;
	 * the filter ones before the nat one, which only makes sense with
	 * them in place. */
	rc |= plan_add(plan, FW_FILTER, "INPUT", 1, "-i", br, "-j", in, NULL);
	rc |= plan_add(plan, FW_FILTER, "FORWARD", 1, "-i", br, "-j", fwd,
	    NULL);
	rc |= plan_add(plan, FW_FILTER, "FORWARD", 1, "-o", br, "-j", fwd,
	    NULL);
	if (docker_user) {
		rc |= plan_add(plan, FW_FILTER, "DOCKER-USER", 1, "-i", br,
		    "-j", fwd, NULL);
		rc |= plan_add(plan, FW_FILTER, "DOCKER-USER", 1, "-o", br,
		    "-j", fwd, NULL);
	}
	if (fam == FW_INET)
		rc |= plan_add(plan, FW_NAT, "PREROUTING", 1, "-i", br, "-j",
		    p->chain_nat, NULL);
	return rc != 0 ? -EINVAL : 0;
}

const char *
fw_binary(enum fw_family fam)
{
	return fam == FW_INET6 ? "ip6tables" : "iptables";
}

const char *
fw_table_name(enum fw_table table)
{
	return table == FW_NAT ? "nat" : "filter";
}

int
fw_argv(const char **argv, size_t max, enum fw_family fam,
    enum fw_table table, enum fw_op op, const char *chain,
    const struct fw_rule *rule)
{
	static const char *const ops[] = {
		[FW_OP_NEW_CHAIN] = "-N", [FW_OP_FLUSH] = "-F",
		[FW_OP_DELETE_CHAIN] = "-X", [FW_OP_APPEND] = "-A",
		[FW_OP_INSERT1] = "-I", [FW_OP_CHECK] = "-C",
		[FW_OP_DELETE] = "-D", [FW_OP_LIST] = "-S",
	};
	size_t n = 0;

	if ((unsigned)op > FW_OP_LIST || max < 6 ||
	    (table != FW_FILTER && table != FW_NAT))
		return -EINVAL;
	argv[n++] = fw_binary(fam);
	argv[n++] = "-w";
	argv[n++] = "-t";
	argv[n++] = fw_table_name(table);
	argv[n++] = ops[op];
	switch (op) {
	case FW_OP_LIST:
		break;
	case FW_OP_NEW_CHAIN:
	case FW_OP_FLUSH:
	case FW_OP_DELETE_CHAIN:
		if (chain == NULL || chain[0] == '\0')
			return -EINVAL;
		argv[n++] = chain;
		break;
	default:
		if (rule == NULL || rule->nspec == 0 || rule->table != table)
			return -EINVAL;
		if (n + rule->nspec + 3 > max)
			return -E2BIG;
		argv[n++] = rule->chain;
		if (op == FW_OP_INSERT1)
			argv[n++] = "1";
		for (size_t i = 0; i < rule->nspec; i++)
			argv[n++] = rule->spec[i];
		break;
	}
	argv[n] = NULL;
	return 0;
}

int
fw_rule_line(const struct fw_rule *r, char *buf, size_t len)
{
	size_t used;
	int n;

	n = snprintf(buf, len, "-A %s", r->chain);
	if (n < 0 || (size_t)n >= len)
		return -ENOSPC;
	used = (size_t)n;
	for (size_t i = 0; i < r->nspec; i++) {
		n = snprintf(buf + used, len - used, " %s", r->spec[i]);
		if (n < 0 || (size_t)n >= len - used)
			return -ENOSPC;
		used += (size_t)n;
	}
	return 0;
}

/* Calls fn for each line of listing (without its newline); stops when fn
 * returns non-zero and returns that. */
static int
each_line(const char *listing, int (*fn)(const char *, size_t, void *),
    void *arg)
{
	const char *s = listing;

	while (s != NULL && *s != '\0') {
		const char *nl = strchr(s, '\n');
		size_t len = nl != NULL ? (size_t)(nl - s) : strlen(s);
		int rc = fn(s, len, arg);
		if (rc != 0)
			return rc;
		s = nl != NULL ? nl + 1 : s + len;
	}
	return 0;
}

/* True if line[0..len) starts with "<op> <chain>" followed by end or ' '. */
static bool
line_is(const char *line, size_t len, const char *op, const char *chain)
{
	size_t ol = strlen(op), cl = strlen(chain);

	return len >= ol + 1 + cl && memcmp(line, op, ol) == 0 &&
	    line[ol] == ' ' && memcmp(line + ol + 1, chain, cl) == 0 &&
	    (len == ol + 1 + cl || line[ol + 1 + cl] == ' ');
}

struct count_arg {
	const char *op, *chain;
	size_t n;
};

static int
count_fn(const char *line, size_t len, void *arg)
{
	struct count_arg *a = arg;

	if (line_is(line, len, a->op, a->chain))
		a->n++;
	return 0;
}

bool
fw_listing_has_chain(const char *listing, const char *chain)
{
	struct count_arg a = { "-N", chain, 0 };

	(void)each_line(listing, count_fn, &a);
	return a.n > 0;
}

size_t
fw_listing_count(const char *listing, const char *chain)
{
	struct count_arg a = { "-A", chain, 0 };

	(void)each_line(listing, count_fn, &a);
	return a.n;
}

struct first_arg {
	const char *chain;
	const char *want;
	int result;		/* 1 first, -1 something decides before */
};

static bool
ends_with_word(const char *line, size_t len, const char *prefix)
{
	const char *j = NULL;

	/* the target is the word after the last " -j " */
	for (size_t i = 0; i + 4 <= len; i++)
		if (memcmp(line + i, " -j ", 4) == 0)
			j = line + i + 4;
	return j != NULL && strncmp(j, prefix, strlen(prefix)) == 0;
}

/* True if the rule's target is exactly word. */
static bool
target_is(const char *line, size_t len, const char *word)
{
	size_t wl = strlen(word);

	return ends_with_word(line, len, word) && len >= wl + 4 &&
	    memcmp(line + len - wl - 4, " -j ", 4) == 0 &&
	    memcmp(line + len - wl, word, wl) == 0;
}

static const char *const harmless[] = {
	"DROP", "REJECT", "DOCKER-USER", "DOCKER-ISOLATION-STAGE-1",
};

static int
first_fn(const char *line, size_t len, void *arg)
{
	struct first_arg *a = arg;

	if (!line_is(line, len, "-A", a->chain))
		return 0;
	if (len == strlen(a->want) && memcmp(line, a->want, len) == 0)
		return 1;
	/* Rules that can only drop or hand over to chains that only drop or
	 * return (Docker's isolation chains, DOCKER-USER, ours) may come
	 * first: Docker re-inserts those at the top when it starts or makes
	 * a network. Anything else could accept before us. */
	for (size_t i = 0; i < sizeof(harmless) / sizeof(harmless[0]); i++)
		if (target_is(line, len, harmless[i]))
			return 0;
	if (ends_with_word(line, len, "CORDON-"))
		return 0;
	return -1;
}

bool
fw_listing_jump_first(const char *listing, const struct fw_rule *jump)
{
	char want[512];
	struct first_arg a;

	if (fw_rule_line(jump, want, sizeof(want)) < 0)
		return false;
	a = (struct first_arg){ jump->chain, want, 0 };
	return each_line(listing, first_fn, &a) == 1;
}

const char *
fw_backend_parse(const char *v)
{
	if (v == NULL)
		return "unknown";
	if (strstr(v, "(nf_tables)") != NULL)
		return "nf_tables";
	if (strstr(v, "(legacy)") != NULL)
		return "legacy";
	return "unknown";
}
