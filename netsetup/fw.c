/*
 * Firewall rules as data (fw.h): the plan for one address family, argv
 * builders for each iptables operation, and parsers for `iptables -S`.
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
plan_add(struct fw_plan *plan, const char *chain, int jump, ...)
{
	struct fw_rule *r;
	const char *w;
	va_list ap;
	int rc = 0;

	if (plan->nrules == FW_RULES_MAX)
		return -E2BIG;
	r = &plan->rules[plan->nrules];
	memset(r, 0, sizeof(*r));
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

int
fw_plan_build(struct fw_plan *plan, enum fw_family fam,
    const struct netsetup_params *p, bool docker_user)
{
	const char *in = p->chain_in, *fwd = p->chain_fwd, *br = p->bridge;
	char dst[24], port[8];
	int rc = 0;

	memset(plan, 0, sizeof(*plan));
	plan->family = fam;
	if (fam != FW_INET && fam != FW_INET6)
		return -EINVAL;
	if (p->bridge[0] == '\0' || p->gateway[0] == '\0' || p->port < 1 ||
	    p->port > 65535 ||
	    !util_strlcpy(plan->chains[0], in, sizeof(plan->chains[0])) ||
	    !util_strlcpy(plan->chains[1], fwd, sizeof(plan->chains[1])))
		return -EINVAL;
	snprintf(dst, sizeof(dst), "%s/32", p->gateway);
	snprintf(port, sizeof(port), "%d", p->port);

	/* Our chains: the whole policy for traffic from the bridge. */
	if (fam == FW_INET) {
		rc |= plan_add(plan, in, 0, "-d", dst, "-p", "tcp", "-m",
		    "tcp", "--dport", port, "-j", "ACCEPT", NULL);
		rc |= plan_add(plan, in, 0, "-m", "conntrack", "--ctstate",
		    "RELATED,ESTABLISHED", "-j", "ACCEPT", NULL);
	}
	rc |= plan_add(plan, in, 0, "-j", "DROP", NULL);
	rc |= plan_add(plan, fwd, 0, "-j", "DROP", NULL);

	/* Jumps, each inserted at position 1 so nothing can accept first. */
	rc |= plan_add(plan, "INPUT", 1, "-i", br, "-j", in, NULL);
	rc |= plan_add(plan, "FORWARD", 1, "-i", br, "-j", fwd, NULL);
	rc |= plan_add(plan, "FORWARD", 1, "-o", br, "-j", fwd, NULL);
	if (docker_user) {
		rc |= plan_add(plan, "DOCKER-USER", 1, "-i", br, "-j", fwd,
		    NULL);
		rc |= plan_add(plan, "DOCKER-USER", 1, "-o", br, "-j", fwd,
		    NULL);
	}
	return rc != 0 ? -EINVAL : 0;
}

const char *
fw_binary(enum fw_family fam)
{
	return fam == FW_INET6 ? "ip6tables" : "iptables";
}

int
fw_argv(const char **argv, size_t max, enum fw_family fam, enum fw_op op,
    const char *chain, const struct fw_rule *rule)
{
	static const char *const ops[] = {
		[FW_OP_NEW_CHAIN] = "-N", [FW_OP_FLUSH] = "-F",
		[FW_OP_DELETE_CHAIN] = "-X", [FW_OP_APPEND] = "-A",
		[FW_OP_INSERT1] = "-I", [FW_OP_CHECK] = "-C",
		[FW_OP_DELETE] = "-D", [FW_OP_LIST] = "-S",
	};
	size_t n = 0;

	if ((unsigned)op > FW_OP_LIST || max < 6)
		return -EINVAL;
	argv[n++] = fw_binary(fam);
	argv[n++] = "-w";
	argv[n++] = "-t";
	argv[n++] = "filter";
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
		if (rule == NULL || rule->nspec == 0)
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
