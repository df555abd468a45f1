/*
 * The firewall as applied: reads `iptables -t TABLE -S` (filter, and nat
 * for IPv4), adds what is missing from the plan (fw.c), repairs our own
 * chains, moves jumps back to the top, removes exactly our chains and
 * jumps, and reports drift. Uses the host's
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

/* "ipv4", "ipv6", "ipv4 nat": where a note or drift line is about. */
static const char *
where(enum fw_family fam, enum fw_table table)
{
	if (table == FW_NAT)
		return fam == FW_INET6 ? "ipv6 nat" : "ipv4 nat";
	return fam_name(fam);
}

static int
fw_do(enum fw_family fam, enum fw_table table, enum fw_op op,
    const char *chain, const struct fw_rule *rule, char **out, char *err,
    size_t errlen)
{
	const char *argv[FW_ARGV_MAX];
	int rc = fw_argv(argv, FW_ARGV_MAX, fam, table, op, chain, rule);

	if (rc < 0) {
		snprintf(err, errlen, "internal: bad firewall rule");
		return rc;
	}
	return netsetup_exec(argv, NULL, out, NULL, err, errlen);
}

/* Runs an operation that must succeed. */
static int
fw_must(enum fw_family fam, enum fw_table table, enum fw_op op,
    const char *chain, const struct fw_rule *rule, char *err, size_t errlen)
{
	char line[512] = "";
	int rc = fw_do(fam, table, op, chain, rule, NULL, err, errlen);

	if (rc == 0)
		return 0;
	if (rule != NULL)
		(void)fw_rule_line(rule, line, sizeof(line));
	if (rc == -EIO) {
		char why[256];
		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "%s -t %s %s%s%s: %s", fw_binary(fam),
		    fw_table_name(table), chain != NULL ? chain : "",
		    chain != NULL ? " " : "", line, why);
		return -EIO;
	}
	return rc;
}

/* Whether a rule is in place: the exact -S line in its table's listing,
 * else iptables -C. */
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
	return fw_do(fam, r->table, FW_OP_CHECK, NULL, r, NULL, err,
	    sizeof(err)) == 0;
}

/* Reads one table. 0, or -ENODEV when this family is unusable (no
 * ip6tables or no IPv6 in the kernel), or another negative errno. */
static int
fw_listing(enum fw_family fam, enum fw_table table, char **out, char *err,
    size_t errlen)
{
	int rc = fw_do(fam, table, FW_OP_LIST, NULL, NULL, out, err, errlen);

	if (rc == -ENOENT || (rc == -EIO && fam == FW_INET6))
		return -ENODEV;
	if (rc == -EIO) {
		/* A copy as large as what err holds, so nothing is cut twice. */
		char *why = strdup(err);
		snprintf(err, errlen, "%s -t %s -S: %s", fw_binary(fam),
		    fw_table_name(table), why != NULL ? why : "(out of memory)");
		free(why);
		return -EIO;
	}
	return rc;
}

/* The plan of one family and the listing of each table it writes. */
struct fwa {
	struct fw_plan plan;
	char *listing[FW_TABLES];	/* NULL: a table the plan leaves alone */
};

static void
fwa_cleanup(struct fwa *f)
{
	for (size_t t = 0; t < FW_TABLES; t++) {
		free(f->listing[t]);
		f->listing[t] = NULL;
	}
}

static bool
plan_uses(const struct fw_plan *plan, enum fw_table table)
{
	for (size_t c = 0; c < plan->nchains; c++)
		if (plan->chains[c].table == table)
			return true;
	return false;
}

/* Whether our chain holds exactly the planned rules. */
static bool
chain_right(const struct fwa *f, const struct fw_chain *ch)
{
	const char *listing = f->listing[ch->table];
	size_t want = 0;

	for (size_t i = 0; i < f->plan.nrules; i++) {
		const struct fw_rule *r = &f->plan.rules[i];
		if (r->jump || r->table != ch->table ||
		    strcmp(r->chain, ch->name) != 0)
			continue;
		want++;
		if (!rule_present(f->plan.family, listing, r))
			return false;
	}
	return fw_listing_count(listing, ch->name) == want;
}

static int
chain_fill(const struct fw_plan *plan, const struct fw_chain *ch, char *err,
    size_t errlen)
{
	for (size_t i = 0; i < plan->nrules; i++) {
		const struct fw_rule *r = &plan->rules[i];
		int rc;
		if (r->jump || r->table != ch->table ||
		    strcmp(r->chain, ch->name) != 0)
			continue;
		if ((rc = fw_must(plan->family, r->table, FW_OP_APPEND, NULL,
		    r, err, errlen)) < 0)
			return rc;
	}
	return 0;
}

/* The current listings of fam and the plan for p, with DOCKER-USER
 * whenever it exists: jumps put there by an earlier up must also go in
 * remove even if Docker's chains came back since. -ENODEV when fam's tool
 * is not there (no IPv6). On failure nothing is left to clean up. */
static int
fwa_load(const struct netsetup_params *p, enum fw_family fam,
    struct fwa *f, char *err, size_t errlen)
{
	int rc;

	memset(f, 0, sizeof(*f));
	if ((rc = fw_listing(fam, FW_FILTER, &f->listing[FW_FILTER], err,
	    errlen)) < 0)
		goto bad;
	if ((rc = fw_plan_build(&f->plan, fam, p,
	    fw_listing_has_chain(f->listing[FW_FILTER], "DOCKER-USER"))) < 0) {
		snprintf(err, errlen, "cannot build the firewall rules");
		goto bad;
	}
	if (plan_uses(&f->plan, FW_NAT) && (rc = fw_listing(fam, FW_NAT,
	    &f->listing[FW_NAT], err, errlen)) < 0) {
		/* An IPv4 host without the nat table cannot redirect. */
		if (rc == -ENODEV)
			rc = -EIO;
		goto bad;
	}
	return 0;
bad:
	fwa_cleanup(f);
	return rc;
}

int
fwa_apply(const struct netsetup_params *p, enum fw_family fam,
    struct cbuf *changes, char *err, size_t errlen)
{
	struct fwa f;
	char line[512];
	int rc;

	if ((rc = fwa_load(p, fam, &f, err, errlen)) == -ENODEV) {
		netsetup_note(changes, "%s: %s unavailable, skipped (no IPv6 "
		    "here)", fam_name(fam), fw_binary(fam));
		return 0;
	}
	if (rc < 0)
		return rc;
	/* Our chains first, so the jumps never point at a missing chain. */
	for (size_t c = 0; c < f.plan.nchains; c++) {
		const struct fw_chain *ch = &f.plan.chains[c];
		const char *w = where(fam, ch->table);
		if (!fw_listing_has_chain(f.listing[ch->table], ch->name)) {
			if ((rc = fw_must(fam, ch->table, FW_OP_NEW_CHAIN,
			    ch->name, NULL, err, errlen)) < 0 ||
			    (rc = chain_fill(&f.plan, ch, err, errlen)) < 0)
				goto out;
			netsetup_note(changes, "%s: created chain %s", w,
			    ch->name);
		} else if (!chain_right(&f, ch)) {
			if ((rc = fw_must(fam, ch->table, FW_OP_FLUSH, ch->name,
			    NULL, err, errlen)) < 0 ||
			    (rc = chain_fill(&f.plan, ch, err, errlen)) < 0)
				goto out;
			netsetup_note(changes, "%s: rewrote chain %s (its "
			    "rules had drifted)", w, ch->name);
		}
	}
	for (size_t i = 0; i < f.plan.nrules; i++) {
		const struct fw_rule *r = &f.plan.rules[i];
		const char *listing = f.listing[r->table];
		const char *w = where(fam, r->table);
		if (!r->jump)
			continue;
		(void)fw_rule_line(r, line, sizeof(line));
		if (!rule_present(fam, listing, r)) {
			if ((rc = fw_must(fam, r->table, FW_OP_INSERT1, NULL, r,
			    err, errlen)) < 0)
				goto out;
			netsetup_note(changes, "%s: added %s", w, line);
		} else if (!fw_listing_jump_first(listing, r)) {
			if ((rc = fw_must(fam, r->table, FW_OP_DELETE, NULL, r,
			    err, errlen)) < 0 ||
			    (rc = fw_must(fam, r->table, FW_OP_INSERT1, NULL, r,
			    err, errlen)) < 0)
				goto out;
			netsetup_note(changes, "%s: moved to the top: %s", w,
			    line);
		}
	}
	rc = 0;
out:
	fwa_cleanup(&f);
	return rc;
}

int
fwa_remove(const struct netsetup_params *p, enum fw_family fam,
    struct cbuf *changes, char *err, size_t errlen)
{
	struct fwa f;
	char line[512];
	int rc;

	if ((rc = fwa_load(p, fam, &f, err, errlen)) == -ENODEV)
		return 0;
	if (rc < 0)
		return rc;
	/* In the reverse order of up: the redirects go before the filter
	 * rules that the redirected traffic meets. */
	for (size_t i = f.plan.nrules; i-- > 0;) {
		const struct fw_rule *r = &f.plan.rules[i];
		char e2[64];
		if (!r->jump)
			continue;
		(void)fw_rule_line(r, line, sizeof(line));
		/* Duplicates are possible after manual edits: remove all. */
		for (int k = 0; k < 16 && fw_do(fam, r->table, FW_OP_CHECK,
		    NULL, r, NULL, e2, sizeof(e2)) == 0; k++) {
			if ((rc = fw_must(fam, r->table, FW_OP_DELETE, NULL, r,
			    err, errlen)) < 0)
				goto out;
			netsetup_note(changes, "%s: deleted %s",
			    where(fam, r->table), line);
		}
	}
	for (size_t c = f.plan.nchains; c-- > 0;) {
		const struct fw_chain *ch = &f.plan.chains[c];
		if (!fw_listing_has_chain(f.listing[ch->table], ch->name))
			continue;
		if ((rc = fw_must(fam, ch->table, FW_OP_FLUSH, ch->name, NULL,
		    err, errlen)) < 0 ||
		    (rc = fw_must(fam, ch->table, FW_OP_DELETE_CHAIN, ch->name,
		    NULL, err, errlen)) < 0)
			goto out;
		netsetup_note(changes, "%s: deleted chain %s",
		    where(fam, ch->table), ch->name);
	}
	rc = 0;
out:
	fwa_cleanup(&f);
	return rc;
}

/* Our chains: the names of those present into chains, a drift line for
 * each that is missing or not exactly ours. */
static int
status_chains(const struct fwa *f, cJSON *chains, cJSON *drift)
{
	cJSON *v;
	int rc = 0;

	for (size_t c = 0; rc == 0 && c < f->plan.nchains; c++) {
		const struct fw_chain *ch = &f->plan.chains[c];
		const char *w = where(f->plan.family, ch->table);
		if (!fw_listing_has_chain(f->listing[ch->table], ch->name)) {
			rc = netsetup_drift(drift, "%s: chain %s missing", w,
			    ch->name);
			continue;
		}
		if ((v = cJSON_CreateString(ch->name)) == NULL)
			return -ENOMEM;
		if (!cJSON_AddItemToArray(chains, v)) {
			cJSON_Delete(v);
			return -ENOMEM;
		}
		if (!chain_right(f, ch))
			rc = netsetup_drift(drift, "%s: chain %s does not hold "
			    "exactly Cordon's rules", w, ch->name);
	}
	return rc;
}

/* Each planned rule: into rules (the filter table's) or nat_rules when
 * present; for jumps, a drift line when missing or not first. */
static int
status_rules(const struct fwa *f, cJSON *rules, cJSON *nat_rules,
    cJSON *drift)
{
	char line[512];
	cJSON *v;
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < f->plan.nrules; i++) {
		const struct fw_rule *r = &f->plan.rules[i];
		const char *listing = f->listing[r->table];
		const char *w = where(f->plan.family, r->table);
		bool present = rule_present(f->plan.family, listing, r);
		(void)fw_rule_line(r, line, sizeof(line));
		if (present) {
			if ((v = cJSON_CreateString(line)) == NULL)
				return -ENOMEM;
			if (!cJSON_AddItemToArray(r->table == FW_NAT ?
			    nat_rules : rules, v)) {
				cJSON_Delete(v);
				return -ENOMEM;
			}
		}
		if (!r->jump)
			continue;
		if (!present)
			rc = netsetup_drift(drift, "%s: rule missing: %s", w,
			    line);
		else if (!fw_listing_jump_first(listing, r))
			rc = netsetup_drift(drift, "%s: rule not first in %s: "
			    "%s", w, r->chain, line);
	}
	return rc;
}

int
fwa_status(const struct netsetup_params *p, enum fw_family fam, cJSON *obj,
    cJSON *drift)
{
	const char *fn = fam_name(fam);
	struct fwa f;
	char err[256];
	cJSON *rules, *nat_rules = NULL, *chains;
	int rc, nf;

	rc = fwa_load(p, fam, &f, err, sizeof(err));
	if (rc == -ENODEV)
		return cJSON_AddStringToObject(obj, "state", "unavailable") ==
		    NULL ? -ENOMEM : 0;
	if (rc == -EINVAL)
		return rc;
	if (rc < 0)
		return netsetup_drift(drift, "%s: cannot list the firewall: %s",
		    fn, err);
	if ((chains = cJSON_AddArrayToObject(obj, "chains")) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = status_chains(&f, chains, drift)) < 0)
		goto out;
	if ((rules = cJSON_AddArrayToObject(obj, "rules")) == NULL ||
	    (plan_uses(&f.plan, FW_NAT) &&
	    (nat_rules = cJSON_AddArrayToObject(obj, "nat_rules")) == NULL)) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = status_rules(&f, rules, nat_rules, drift)) < 0)
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
	fwa_cleanup(&f);
	return rc;
}
