/*
 * The firewall as applied: reads `iptables -S`, adds what is missing from
 * the plan (fw.c), repairs our own chains, moves jumps back to the top,
 * removes exactly our chains and jumps, and reports drift. Uses the host's
 * iptables binary, so it works with whichever backend Docker uses.
 */
#include "netsetup/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *
fam_name(enum fw_family fam)
{
	return fam == FW_INET6 ? "ipv6" : "ipv4";
}

const char *
fwa_backend(void)
{
	static char backend[16];
	const char *argv[] = { "iptables", "-V", NULL };
	char err[128], *out = NULL;
	int rc;

	if (backend[0] != '\0')
		return backend;
	rc = netsetup_exec(argv, NULL, &out, NULL, err, sizeof(err));
	snprintf(backend, sizeof(backend), "%s",
	    rc == 0 ? fw_backend_parse(out) : "unknown");
	free(out);
	return backend;
}

int
fwa_bridge_nf(enum fw_family fam)
{
	const char *path = fam == FW_INET6 ?
	    "/proc/sys/net/bridge/bridge-nf-call-ip6tables" :
	    "/proc/sys/net/bridge/bridge-nf-call-iptables";
	char c = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (read(fd, &c, 1) != 1)
		c = 0;
	close(fd);
	return c == '1' ? 1 : 0;
}

static int
fw_do(enum fw_family fam, enum fw_op op, const char *chain,
    const struct fw_rule *rule, char **out, char *err, size_t errlen)
{
	const char *argv[FW_ARGV_MAX];
	int rc = fw_argv(argv, FW_ARGV_MAX, fam, op, chain, rule);

	if (rc < 0) {
		snprintf(err, errlen, "internal: bad firewall rule");
		return rc;
	}
	return netsetup_exec(argv, NULL, out, NULL, err, errlen);
}

/* Runs an operation that must succeed. */
static int
fw_must(enum fw_family fam, enum fw_op op, const char *chain,
    const struct fw_rule *rule, char *err, size_t errlen)
{
	char line[512] = "";
	int rc = fw_do(fam, op, chain, rule, NULL, err, errlen);

	if (rc == 0)
		return 0;
	if (rule != NULL)
		(void)fw_rule_line(rule, line, sizeof(line));
	if (rc == -EIO) {
		char why[256];
		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "%s %s%s%s: %s", fw_binary(fam),
		    chain != NULL ? chain : "", chain != NULL ? " " : "", line,
		    why);
		return -EIO;
	}
	return rc;
}

/* Whether a rule is in place: the exact -S line, else iptables -C. */
static bool
rule_present(enum fw_family fam, const char *listing, const struct fw_rule *r)
{
	char line[512], err[64];
	const char *s;
	size_t n;

	if (fw_rule_line(r, line, sizeof(line)) == 0) {
		n = strlen(line);
		for (s = strstr(listing, line); s != NULL;
		    s = strstr(s + 1, line))
			if ((s == listing || s[-1] == '\n') &&
			    (s[n] == '\n' || s[n] == '\0'))
				return true;
	}
	return fw_do(fam, FW_OP_CHECK, NULL, r, NULL, err, sizeof(err)) == 0;
}

/* Reads the filter table. 0, or -ENODEV when this family is unusable
 * (no ip6tables or no IPv6 in the kernel), or another negative errno. */
static int
fw_listing(enum fw_family fam, char **out, char *err, size_t errlen)
{
	int rc = fw_do(fam, FW_OP_LIST, NULL, NULL, out, err, errlen);

	if (rc == -ENOENT || (rc == -EIO && fam == FW_INET6))
		return -ENODEV;
	if (rc == -EIO) {
		/* A copy as large as what err holds, so nothing is cut twice. */
		char *why = strdup(err);
		snprintf(err, errlen, "%s -S: %s", fw_binary(fam),
		    why != NULL ? why : "(out of memory)");
		free(why);
		return -EIO;
	}
	return rc;
}

/* Whether our chain holds exactly the planned rules. */
static bool
chain_right(const struct fw_plan *plan, const char *chain,
    const char *listing)
{
	size_t want = 0;

	for (size_t i = 0; i < plan->nrules; i++) {
		const struct fw_rule *r = &plan->rules[i];
		if (r->jump || strcmp(r->chain, chain) != 0)
			continue;
		want++;
		if (!rule_present(plan->family, listing, r))
			return false;
	}
	return fw_listing_count(listing, chain) == want;
}

static int
chain_fill(const struct fw_plan *plan, const char *chain, char *err,
    size_t errlen)
{
	for (size_t i = 0; i < plan->nrules; i++) {
		const struct fw_rule *r = &plan->rules[i];
		int rc;
		if (r->jump || strcmp(r->chain, chain) != 0)
			continue;
		if ((rc = fw_must(plan->family, FW_OP_APPEND, NULL, r, err,
		    errlen)) < 0)
			return rc;
	}
	return 0;
}

/* The current listing of fam (*listing, caller frees) and the plan for
 * p, with DOCKER-USER whenever it exists: jumps put there by an earlier up
 * must also go in remove even if Docker's chains came back since.
 * -ENODEV when fam's tool is not there (no IPv6). On failure *listing is
 * NULL. */
static int
fwa_load(const struct netsetup_params *p, enum fw_family fam,
    char **listing, struct fw_plan *plan, char *err, size_t errlen)
{
	int rc;

	*listing = NULL;
	if ((rc = fw_listing(fam, listing, err, errlen)) == 0 &&
	    (rc = fw_plan_build(plan, fam, p,
	    fw_listing_has_chain(*listing, "DOCKER-USER"))) < 0)
		snprintf(err, errlen, "cannot build the firewall rules");
	if (rc < 0) {
		free(*listing);
		*listing = NULL;
	}
	return rc;
}

int
fwa_apply(const struct netsetup_params *p, enum fw_family fam,
    struct cbuf *changes, char *err, size_t errlen)
{
	const char *fn = fam_name(fam);
	struct fw_plan plan;
	char *listing, line[512];
	int rc;

	if ((rc = fwa_load(p, fam, &listing, &plan, err, errlen)) == -ENODEV) {
		netsetup_note(changes, "%s: %s unavailable, skipped (no IPv6 "
		    "here)", fn, fw_binary(fam));
		rc = 0;
	}
	if (rc < 0 || listing == NULL)
		goto out;
	/* Our chains first, so the jumps never point at a missing chain. */
	for (size_t c = 0; c < 2; c++) {
		const char *chain = plan.chains[c];
		if (!fw_listing_has_chain(listing, chain)) {
			if ((rc = fw_must(fam, FW_OP_NEW_CHAIN, chain, NULL, err,
			    errlen)) < 0 ||
			    (rc = chain_fill(&plan, chain, err, errlen)) < 0)
				goto out;
			netsetup_note(changes, "%s: created chain %s", fn,
			    chain);
		} else if (!chain_right(&plan, chain, listing)) {
			if ((rc = fw_must(fam, FW_OP_FLUSH, chain, NULL, err,
			    errlen)) < 0 ||
			    (rc = chain_fill(&plan, chain, err, errlen)) < 0)
				goto out;
			netsetup_note(changes, "%s: rewrote chain %s (its "
			    "rules had drifted)", fn, chain);
		}
	}
	for (size_t i = 0; i < plan.nrules; i++) {
		const struct fw_rule *r = &plan.rules[i];
		if (!r->jump)
			continue;
		(void)fw_rule_line(r, line, sizeof(line));
		if (!rule_present(fam, listing, r)) {
			if ((rc = fw_must(fam, FW_OP_INSERT1, NULL, r, err,
			    errlen)) < 0)
				goto out;
			netsetup_note(changes, "%s: added %s", fn, line);
		} else if (!fw_listing_jump_first(listing, r)) {
			if ((rc = fw_must(fam, FW_OP_DELETE, NULL, r, err,
			    errlen)) < 0 ||
			    (rc = fw_must(fam, FW_OP_INSERT1, NULL, r, err,
			    errlen)) < 0)
				goto out;
			netsetup_note(changes, "%s: moved to the top: %s", fn,
			    line);
		}
	}
	rc = 0;
out:
	free(listing);
	return rc;
}

int
fwa_remove(const struct netsetup_params *p, enum fw_family fam,
    struct cbuf *changes, char *err, size_t errlen)
{
	const char *fn = fam_name(fam);
	struct fw_plan plan;
	char *listing, line[512];
	int rc;

	if ((rc = fwa_load(p, fam, &listing, &plan, err, errlen)) == -ENODEV)
		rc = 0;
	if (rc < 0 || listing == NULL)
		goto out;
	for (size_t i = 0; i < plan.nrules; i++) {
		const struct fw_rule *r = &plan.rules[i];
		char e2[64];
		if (!r->jump)
			continue;
		(void)fw_rule_line(r, line, sizeof(line));
		/* Duplicates are possible after manual edits: remove all. */
		for (int k = 0; k < 16 && fw_do(fam, FW_OP_CHECK, NULL, r, NULL,
		    e2, sizeof(e2)) == 0; k++) {
			if ((rc = fw_must(fam, FW_OP_DELETE, NULL, r, err,
			    errlen)) < 0)
				goto out;
			netsetup_note(changes, "%s: deleted %s", fn, line);
		}
	}
	for (size_t c = 0; c < 2; c++) {
		if (!fw_listing_has_chain(listing, plan.chains[c]))
			continue;
		if ((rc = fw_must(fam, FW_OP_FLUSH, plan.chains[c], NULL, err,
		    errlen)) < 0 ||
		    (rc = fw_must(fam, FW_OP_DELETE_CHAIN, plan.chains[c], NULL,
		    err, errlen)) < 0)
			goto out;
		netsetup_note(changes, "%s: deleted chain %s", fn,
		    plan.chains[c]);
	}
	rc = 0;
out:
	free(listing);
	return rc;
}

/* Our chains: a drift line for each that is missing or not exactly ours. */
static int
status_chains(const struct fw_plan *plan, const char *listing,
    const char *fn, cJSON *drift)
{
	int rc = 0;

	for (size_t c = 0; rc == 0 && c < 2; c++) {
		const char *chain = plan->chains[c];
		if (!fw_listing_has_chain(listing, chain))
			rc = netsetup_drift(drift, "%s: chain %s missing", fn,
			    chain);
		else if (!chain_right(plan, chain, listing))
			rc = netsetup_drift(drift, "%s: chain %s does not hold "
			    "exactly Cordon's rules", fn, chain);
	}
	return rc;
}

/* Each planned rule: into rules when present; for jumps, a drift line
 * when missing or not first. */
static int
status_rules(const struct fw_plan *plan, const char *listing,
    const char *fn, cJSON *rules, cJSON *drift)
{
	char line[512];
	cJSON *v;
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < plan->nrules; i++) {
		const struct fw_rule *r = &plan->rules[i];
		bool present = rule_present(plan->family, listing, r);
		(void)fw_rule_line(r, line, sizeof(line));
		if (present) {
			if ((v = cJSON_CreateString(line)) == NULL)
				return -ENOMEM;
			if (!cJSON_AddItemToArray(rules, v)) {
				cJSON_Delete(v);
				return -ENOMEM;
			}
		}
		if (!r->jump)
			continue;
		if (!present)
			rc = netsetup_drift(drift, "%s: rule missing: %s", fn,
			    line);
		else if (!fw_listing_jump_first(listing, r))
			rc = netsetup_drift(drift, "%s: rule not first in %s: "
			    "%s", fn, r->chain, line);
	}
	return rc;
}

int
fwa_status(const struct netsetup_params *p, enum fw_family fam, cJSON *obj,
    cJSON *drift)
{
	const char *fn = fam_name(fam);
	struct fw_plan plan;
	char *listing = NULL, err[256];
	cJSON *rules;
	int rc, nf;

	rc = fw_listing(fam, &listing, err, sizeof(err));
	if (rc == -ENODEV) {
		rc = cJSON_AddStringToObject(obj, "state", "unavailable") ==
		    NULL ? -ENOMEM : 0;
		goto out;
	}
	if (rc < 0) {
		rc = netsetup_drift(drift, "%s: cannot list the firewall: %s",
		    fn, err);
		goto out;
	}
	if (fw_plan_build(&plan, fam, p,
	    fw_listing_has_chain(listing, "DOCKER-USER")) < 0) {
		rc = -EINVAL;
		goto out;
	}
	if ((rc = status_chains(&plan, listing, fn, drift)) < 0)
		goto out;
	if ((rules = cJSON_AddArrayToObject(obj, "rules")) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = status_rules(&plan, listing, fn, rules, drift)) < 0)
		goto out;
	nf = fwa_bridge_nf(fam);
	if (cJSON_AddBoolToObject(obj, "bridge_netfilter", nf == 1) == NULL)
		rc = -ENOMEM;
	else if (nf != 1)
		rc = netsetup_drift(drift, "%s: bridge netfilter is off "
		    "(net.bridge.bridge-nf-call-%s != 1): traffic between "
		    "containers on %s bypasses the firewall", fn,
		    fam == FW_INET6 ? "ip6tables" : "iptables", p->bridge);
out:
	free(listing);
	return rc;
}
