/*
 * Unit tests for netsetup's pure parts: subnet parsing, the exact firewall
 * rules (filter and nat) and their iptables argv, `iptables -S` parsing
 * (chain presence, counts, jump position, behind Docker's own rules), the
 * Docker network check, the create argv, the docker run options for --net
 * proxy, the sandbox's resolv.conf, /proc/net listings, the seal rules,
 * the proxy's argv and the state record (whole or, under ENOMEM, not at
 * all).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/config.h"
#include "common/util.h"
#include "netsetup/fw.h"
#include "netsetup/internal.h"
#include "netsetup/netsetup.h"

static void
params(struct netsetup_params *p)
{
	struct config c;
	char err[256];

	config_defaults(&c);
	assert_int_equal(netsetup_params_init(p, &c, NULL, err, sizeof(err)), 0);
}

static void
test_subnet(void **state)
{
	static const struct {
		const char *in, *norm, *gw;
	} ok[] = {
		{ "10.213.0.0/24", "10.213.0.0/24", "10.213.0.1" },
		{ "192.168.8.0/22", "192.168.8.0/22", "192.168.8.1" },
		{ "10.0.0.0/8", "10.0.0.0/8", "10.0.0.1" },
		{ "172.30.5.8/29", "172.30.5.8/29", "172.30.5.9" },
	};
	static const char *const bad[] = {
		"10.213.0.1/24",	/* host bits */
		"10.213.0.0",		/* no prefix */
		"10.213.0.0/30",	/* too small for a network */
		"10.0.0.0/7", "10.213.0.0/", "10.213.0.0/24x", "/24",
		"fd00::/64", "10.213.0/24", "10.213.0.0/-1", "",
		"999.1.1.0/24", " 10.213.0.0/24",
	};
	char norm[32], gw[16];

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(netsetup_subnet_parse(ok[i].in, norm, gw), 0);
		assert_string_equal(norm, ok[i].norm);
		assert_string_equal(gw, ok[i].gw);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(netsetup_subnet_parse(bad[i], norm, gw),
		    -EINVAL);
	assert_int_equal(netsetup_subnet_parse(NULL, norm, gw), -EINVAL);
}

static void
test_params(void **state)
{
	struct netsetup_params p;
	struct config c;
	char err[256];

	(void)state;
	params(&p);
	assert_string_equal(p.network, "cordon-egress");
	assert_string_equal(p.bridge, "cordon0");
	assert_string_equal(p.gateway, "10.213.0.1");
	assert_int_equal(p.port, 3128);
	assert_int_equal(p.tport, 3129);
	assert_int_equal(p.dns_port, 53);
	assert_string_equal(p.chain_in, "CORDON-IN-cordon0");
	assert_string_equal(p.chain_fwd, "CORDON-FWD-cordon0");
	assert_string_equal(p.chain_nat, "CORDON-NAT-cordon0");
	assert_string_equal(p.state_dir, "/var/lib/cordon/net-cordon0");

	config_defaults(&c);
	assert_int_equal(netsetup_params_init(&p, &c, "10.9.8.0/24", err,
	    sizeof(err)), 0);
	assert_string_equal(p.gateway, "10.9.8.1");
	assert_int_equal(netsetup_params_init(&p, &c, "10.9.8.1/24", err,
	    sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "subnet"));
	strcpy(c.egress_bridge, "a-very-long-bridge");	/* > 15 */
	assert_int_equal(netsetup_params_init(&p, &c, NULL, err, sizeof(err)),
	    -EINVAL);
	config_defaults(&c);
	strcpy(c.egress_bridge, "-i");
	assert_int_equal(netsetup_params_init(&p, &c, NULL, err, sizeof(err)),
	    -EINVAL);
	config_defaults(&c);
	strcpy(c.egress_network, "x y");
	assert_int_equal(netsetup_params_init(&p, &c, NULL, err, sizeof(err)),
	    -EINVAL);
	/* The longest bridge name still fits every chain name (28). */
	config_defaults(&c);
	strcpy(c.egress_bridge, "abcdefghijklmno");
	assert_int_equal(netsetup_params_init(&p, &c, NULL, err, sizeof(err)),
	    0);
	assert_string_equal(p.chain_nat, "CORDON-NAT-abcdefghijklmno");
	/* Three different ports, as config_parse wants them. */
	config_defaults(&c);
	c.proxy_dns_port = 3128;
	assert_int_equal(netsetup_params_init(&p, &c, NULL, err, sizeof(err)),
	    -EINVAL);
	assert_string_equal(err, "proxy_port, proxy_transparent_port and "
	    "proxy_dns_port: want three different ports 1-65535");
	config_defaults(&c);
	c.proxy_transparent_port = 0;
	assert_int_equal(netsetup_params_init(&p, &c, NULL, err, sizeof(err)),
	    -EINVAL);
	config_defaults(&c);
	c.proxy_transparent_port = 8443;
	c.proxy_dns_port = 5353;
	assert_int_equal(netsetup_params_init(&p, &c, NULL, err, sizeof(err)),
	    0);
	assert_int_equal(p.tport, 8443);
	assert_int_equal(p.dns_port, 5353);
}

static void
lines_equal(const struct fw_plan *plan, const char *const *want, size_t n)
{
	char line[512];

	assert_int_equal(plan->nrules, n);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(fw_rule_line(&plan->rules[i], line,
		    sizeof(line)), 0);
		assert_string_equal(line, want[i]);
	}
}

static void
test_plan_v4(void **state)
{
	static const char *const want[] = {
		/* filter: what the gateway accepts from the bridge */
		"-A CORDON-IN-cordon0 -d 10.213.0.1/32 -p tcp -m tcp --dport "
		    "3128 -j ACCEPT",
		"-A CORDON-IN-cordon0 -d 10.213.0.1/32 -p tcp -m tcp --dport "
		    "3129 -j ACCEPT",
		"-A CORDON-IN-cordon0 -d 10.213.0.1/32 -p udp -m udp --dport "
		    "53 -j ACCEPT",
		"-A CORDON-IN-cordon0 -d 10.213.0.1/32 -p tcp -m tcp --dport "
		    "53 -j ACCEPT",
		"-A CORDON-IN-cordon0 -m conntrack --ctstate "
		    "RELATED,ESTABLISHED -j ACCEPT",
		"-A CORDON-IN-cordon0 -j DROP",
		"-A CORDON-FWD-cordon0 -j DROP",
		/* nat: the redirects, the explicit proxy left alone */
		"-A CORDON-NAT-cordon0 -d 10.213.0.1/32 -p tcp -m tcp --dport "
		    "3128 -j RETURN",
		"-A CORDON-NAT-cordon0 -p udp -m udp --dport 53 -j REDIRECT "
		    "--to-ports 53",
		"-A CORDON-NAT-cordon0 -p tcp -m tcp --dport 53 -j REDIRECT "
		    "--to-ports 53",
		"-A CORDON-NAT-cordon0 -p tcp -j REDIRECT --to-ports 3129",
		/* jumps */
		"-A INPUT -i cordon0 -j CORDON-IN-cordon0",
		"-A FORWARD -i cordon0 -j CORDON-FWD-cordon0",
		"-A FORWARD -o cordon0 -j CORDON-FWD-cordon0",
		"-A DOCKER-USER -i cordon0 -j CORDON-FWD-cordon0",
		"-A DOCKER-USER -o cordon0 -j CORDON-FWD-cordon0",
		"-A PREROUTING -i cordon0 -j CORDON-NAT-cordon0",
	};
	/* Not static: want[i] is no constant expression in C (gcc takes it,
	 * clang refuses it). */
	const char *const no_du[] = {
		want[0], want[1], want[2], want[3], want[4], want[5], want[6],
		want[7], want[8], want[9], want[10], want[11], want[12],
		want[13], want[16],
	};
	struct netsetup_params p;
	struct fw_plan plan;

	(void)state;
	params(&p);
	assert_int_equal(fw_plan_build(&plan, FW_INET, &p, true), 0);
	lines_equal(&plan, want, 17);
	assert_int_equal(plan.nchains, 3);
	assert_string_equal(plan.chains[0].name, "CORDON-IN-cordon0");
	assert_int_equal(plan.chains[0].table, FW_FILTER);
	assert_string_equal(plan.chains[1].name, "CORDON-FWD-cordon0");
	assert_int_equal(plan.chains[1].table, FW_FILTER);
	assert_string_equal(plan.chains[2].name, "CORDON-NAT-cordon0");
	assert_int_equal(plan.chains[2].table, FW_NAT);
	for (size_t i = 0; i < plan.nrules; i++) {
		assert_int_equal(plan.rules[i].jump, i >= 11);
		assert_int_equal(plan.rules[i].table,
		    (i >= 7 && i <= 10) || i == 16 ? FW_NAT : FW_FILTER);
	}
	/* Without DOCKER-USER (dockerd never ran): no jumps there. */
	assert_int_equal(fw_plan_build(&plan, FW_INET, &p, false), 0);
	lines_equal(&plan, no_du, 15);
}

/* Other ports from the config: each rule takes its own. */
static void
test_plan_ports(void **state)
{
	static const char *const want[] = {
		"-A CORDON-IN-cordon0 -d 10.213.0.1/32 -p tcp -m tcp --dport "
		    "8080 -j ACCEPT",
		"-A CORDON-IN-cordon0 -d 10.213.0.1/32 -p tcp -m tcp --dport "
		    "8443 -j ACCEPT",
		"-A CORDON-IN-cordon0 -d 10.213.0.1/32 -p udp -m udp --dport "
		    "5353 -j ACCEPT",
		"-A CORDON-IN-cordon0 -d 10.213.0.1/32 -p tcp -m tcp --dport "
		    "5353 -j ACCEPT",
		"-A CORDON-IN-cordon0 -m conntrack --ctstate "
		    "RELATED,ESTABLISHED -j ACCEPT",
		"-A CORDON-IN-cordon0 -j DROP",
		"-A CORDON-FWD-cordon0 -j DROP",
		"-A CORDON-NAT-cordon0 -d 10.213.0.1/32 -p tcp -m tcp --dport "
		    "8080 -j RETURN",
		"-A CORDON-NAT-cordon0 -p udp -m udp --dport 53 -j REDIRECT "
		    "--to-ports 5353",
		"-A CORDON-NAT-cordon0 -p tcp -m tcp --dport 53 -j REDIRECT "
		    "--to-ports 5353",
		"-A CORDON-NAT-cordon0 -p tcp -j REDIRECT --to-ports 8443",
		"-A INPUT -i cordon0 -j CORDON-IN-cordon0",
		"-A FORWARD -i cordon0 -j CORDON-FWD-cordon0",
		"-A FORWARD -o cordon0 -j CORDON-FWD-cordon0",
		"-A PREROUTING -i cordon0 -j CORDON-NAT-cordon0",
	};
	struct netsetup_params p;
	struct fw_plan plan;

	(void)state;
	params(&p);
	p.port = 8080;
	p.tport = 8443;
	p.dns_port = 5353;
	assert_int_equal(fw_plan_build(&plan, FW_INET, &p, false), 0);
	lines_equal(&plan, want, 15);
	/* Two listeners on one port cannot be told apart after a
	 * redirect: refused. So are ports out of range. */
	p.tport = 8080;
	assert_int_equal(fw_plan_build(&plan, FW_INET, &p, false), -EINVAL);
	p.tport = 5353;
	assert_int_equal(fw_plan_build(&plan, FW_INET, &p, false), -EINVAL);
	p.tport = 65536;
	assert_int_equal(fw_plan_build(&plan, FW_INET, &p, false), -EINVAL);
	p.tport = 8443;
	p.dns_port = 0;
	assert_int_equal(fw_plan_build(&plan, FW_INET, &p, false), -EINVAL);
}

static void
test_plan_v6(void **state)
{
	static const char *const want[] = {
		"-A CORDON-IN-cordon0 -j DROP",
		"-A CORDON-FWD-cordon0 -j DROP",
		"-A INPUT -i cordon0 -j CORDON-IN-cordon0",
		"-A FORWARD -i cordon0 -j CORDON-FWD-cordon0",
		"-A FORWARD -o cordon0 -j CORDON-FWD-cordon0",
	};
	struct netsetup_params p;
	struct fw_plan plan;

	(void)state;
	params(&p);
	/* No IPv6 on the network: everything from the bridge is dropped,
	 * and nothing is redirected (no nat chain, no PREROUTING jump). */
	assert_int_equal(fw_plan_build(&plan, FW_INET6, &p, false), 0);
	lines_equal(&plan, want, 5);
	assert_int_equal(plan.nchains, 2);
	for (size_t i = 0; i < plan.nrules; i++)
		assert_int_equal(plan.rules[i].table, FW_FILTER);
	p.port = 0;
	assert_int_equal(fw_plan_build(&plan, FW_INET, &p, false), -EINVAL);
	assert_int_equal(fw_plan_build(&plan, (enum fw_family)5, &p, false),
	    -EINVAL);
}

static void
argv_is(const char *const *argv, const char *want)
{
	char buf[512] = "";

	for (size_t i = 0; argv[i] != NULL; i++) {
		if (i > 0)
			strcat(buf, " ");
		strcat(buf, argv[i]);
	}
	assert_string_equal(buf, want);
}

static void
test_argv(void **state)
{
	struct netsetup_params p;
	struct fw_plan plan;
	const char *argv[FW_ARGV_MAX];

	(void)state;
	params(&p);
	assert_int_equal(fw_plan_build(&plan, FW_INET, &p, true), 0);
	assert_int_equal(fw_argv(argv, FW_ARGV_MAX, FW_INET, FW_FILTER,
	    FW_OP_INSERT1, NULL, &plan.rules[11]), 0);
	argv_is(argv, "iptables -w -t filter -I INPUT 1 -i cordon0 -j "
	    "CORDON-IN-cordon0");
	assert_int_equal(fw_argv(argv, FW_ARGV_MAX, FW_INET6, FW_FILTER,
	    FW_OP_CHECK, NULL, &plan.rules[6]), 0);
	argv_is(argv, "ip6tables -w -t filter -C CORDON-FWD-cordon0 -j DROP");
	assert_int_equal(fw_argv(argv, FW_ARGV_MAX, FW_INET, FW_FILTER,
	    FW_OP_APPEND, NULL, &plan.rules[0]), 0);
	argv_is(argv, "iptables -w -t filter -A CORDON-IN-cordon0 -d "
	    "10.213.0.1/32 -p tcp -m tcp --dport 3128 -j ACCEPT");
	assert_int_equal(fw_argv(argv, FW_ARGV_MAX, FW_INET, FW_FILTER,
	    FW_OP_DELETE, NULL, &plan.rules[15]), 0);
	argv_is(argv, "iptables -w -t filter -D DOCKER-USER -o cordon0 -j "
	    "CORDON-FWD-cordon0");
	/* The nat table's rules and chain. */
	assert_int_equal(fw_argv(argv, FW_ARGV_MAX, FW_INET, FW_NAT,
	    FW_OP_APPEND, NULL, &plan.rules[10]), 0);
	argv_is(argv, "iptables -w -t nat -A CORDON-NAT-cordon0 -p tcp -j "
	    "REDIRECT --to-ports 3129");
	assert_int_equal(fw_argv(argv, FW_ARGV_MAX, FW_INET, FW_NAT,
	    FW_OP_APPEND, NULL, &plan.rules[8]), 0);
	argv_is(argv, "iptables -w -t nat -A CORDON-NAT-cordon0 -p udp -m udp "
	    "--dport 53 -j REDIRECT --to-ports 53");
	assert_int_equal(fw_argv(argv, FW_ARGV_MAX, FW_INET, FW_NAT,
	    FW_OP_INSERT1, NULL, &plan.rules[16]), 0);
	argv_is(argv, "iptables -w -t nat -I PREROUTING 1 -i cordon0 -j "
	    "CORDON-NAT-cordon0");
	assert_int_equal(fw_argv(argv, FW_ARGV_MAX, FW_INET, FW_NAT,
	    FW_OP_NEW_CHAIN, "CORDON-NAT-cordon0", NULL), 0);
	argv_is(argv, "iptables -w -t nat -N CORDON-NAT-cordon0");
	assert_int_equal(fw_argv(argv, FW_ARGV_MAX, FW_INET, FW_NAT,
	    FW_OP_LIST, NULL, NULL), 0);
	argv_is(argv, "iptables -w -t nat -S");
	/* A rule goes only into its own table. */
	assert_int_equal(fw_argv(argv, FW_ARGV_MAX, FW_INET, FW_FILTER,
	    FW_OP_APPEND, NULL, &plan.rules[10]), -EINVAL);
	assert_int_equal(fw_argv(argv, FW_ARGV_MAX, FW_INET, FW_NAT,
	    FW_OP_CHECK, NULL, &plan.rules[11]), -EINVAL);
	assert_int_equal(fw_argv(argv, FW_ARGV_MAX, FW_INET, (enum fw_table)7,
	    FW_OP_LIST, NULL, NULL), -EINVAL);
	assert_int_equal(fw_argv(argv, FW_ARGV_MAX, FW_INET, FW_FILTER,
	    FW_OP_NEW_CHAIN, "CORDON-IN-cordon0", NULL), 0);
	argv_is(argv, "iptables -w -t filter -N CORDON-IN-cordon0");
	assert_int_equal(fw_argv(argv, FW_ARGV_MAX, FW_INET, FW_FILTER,
	    FW_OP_FLUSH, "X", NULL), 0);
	argv_is(argv, "iptables -w -t filter -F X");
	assert_int_equal(fw_argv(argv, FW_ARGV_MAX, FW_INET, FW_FILTER,
	    FW_OP_DELETE_CHAIN, "X", NULL), 0);
	argv_is(argv, "iptables -w -t filter -X X");
	assert_int_equal(fw_argv(argv, FW_ARGV_MAX, FW_INET, FW_FILTER,
	    FW_OP_LIST, NULL, NULL), 0);
	argv_is(argv, "iptables -w -t filter -S");
	/* Missing operands and a too small argv are refused. */
	assert_int_equal(fw_argv(argv, FW_ARGV_MAX, FW_INET, FW_FILTER,
	    FW_OP_FLUSH, NULL, NULL), -EINVAL);
	assert_int_equal(fw_argv(argv, FW_ARGV_MAX, FW_INET, FW_FILTER,
	    FW_OP_CHECK, NULL, NULL), -EINVAL);
	assert_int_equal(fw_argv(argv, 8, FW_INET, FW_FILTER, FW_OP_APPEND,
	    NULL, &plan.rules[0]), -E2BIG);
}

static const char listing_ok[] =
    "-P INPUT ACCEPT\n"
    "-P FORWARD DROP\n"
    "-N CORDON-FWD-cordon0\n"
    "-N CORDON-IN-cordon0\n"
    "-N DOCKER-USER\n"
    "-A INPUT -i cordon0 -j CORDON-IN-cordon0\n"
    "-A INPUT -i eth0 -j ACCEPT\n"
    "-A FORWARD -j DOCKER-USER\n"
    "-A FORWARD -o cordon0 -j CORDON-FWD-cordon0\n"
    "-A FORWARD -i cordon0 -j CORDON-FWD-cordon0\n"
    "-A FORWARD -i cordon0 -o cordon0 -j DROP\n"
    "-A CORDON-FWD-cordon0 -j DROP\n"
    "-A CORDON-IN-cordon0 -d 10.213.0.1/32 -p tcp -m tcp --dport 3128 -j "
    "ACCEPT\n"
    "-A CORDON-IN-cordon0 -j DROP\n"
    "-A DOCKER-USER -o cordon0 -j CORDON-FWD-cordon0\n"
    "-A DOCKER-USER -i cordon0 -j CORDON-FWD-cordon0\n"
    "-A DOCKER-USER -j RETURN";	/* no final newline */

static void
test_listing(void **state)
{
	struct netsetup_params p;
	struct fw_plan plan;
	const char *moved =
	    "-A FORWARD -i docker0 -j ACCEPT\n"
	    "-A FORWARD -i cordon0 -j CORDON-FWD-cordon0\n";

	(void)state;
	params(&p);
	assert_int_equal(fw_plan_build(&plan, FW_INET, &p, true), 0);
	assert_true(fw_listing_has_chain(listing_ok, "CORDON-IN-cordon0"));
	assert_true(fw_listing_has_chain(listing_ok, "DOCKER-USER"));
	assert_false(fw_listing_has_chain(listing_ok, "CORDON-IN-cordon"));
	assert_false(fw_listing_has_chain(listing_ok, "INPUT"));
	assert_int_equal(fw_listing_count(listing_ok, "CORDON-IN-cordon0"), 2);
	assert_int_equal(fw_listing_count(listing_ok, "CORDON-FWD-cordon0"), 1);
	assert_int_equal(fw_listing_count(listing_ok, "DOCKER-USER"), 3);
	assert_int_equal(fw_listing_count(listing_ok, "CORDON"), 0);
	assert_int_equal(fw_listing_count("", "INPUT"), 0);
	/* INPUT jump first; FORWARD ones behind DOCKER-USER and each other;
	 * DOCKER-USER ones at the top. */
	for (size_t i = 11; i < 16; i++)
		assert_true(fw_listing_jump_first(listing_ok, &plan.rules[i]));
	/* Behind an ACCEPT: not first. Absent: not first. */
	assert_false(fw_listing_jump_first(moved, &plan.rules[12]));
	assert_false(fw_listing_jump_first(moved, &plan.rules[13]));
	assert_false(fw_listing_jump_first("-A INPUT -i cordon0 -j "
	    "CORDON-IN-cordon0x\n", &plan.rules[11]));
	/* What Docker puts on top when it starts or makes a network may come
	 * first; a jump to any other chain may not (it could accept). */
	assert_true(fw_listing_jump_first(
	    "-A FORWARD -j DOCKER-ISOLATION-STAGE-1\n"
	    "-A FORWARD -i cordon0 -o cordon0 -j DROP\n"
	    "-A FORWARD -p udp -j REJECT\n"
	    "-A FORWARD -i cordon0 -j CORDON-FWD-cordon0\n", &plan.rules[12]));
	assert_false(fw_listing_jump_first(
	    "-A FORWARD -j DOCKER-ISOLATION-STAGE-2\n"
	    "-A FORWARD -i cordon0 -j CORDON-FWD-cordon0\n", &plan.rules[12]));
	assert_false(fw_listing_jump_first(
	    "-A FORWARD -o docker0 -j DOCKER\n"
	    "-A FORWARD -i cordon0 -j CORDON-FWD-cordon0\n", &plan.rules[12]));
	assert_false(fw_listing_jump_first(
	    "-A FORWARD -j DROPX\n"
	    "-A FORWARD -i cordon0 -j CORDON-FWD-cordon0\n", &plan.rules[12]));
	assert_string_equal(fw_backend_parse("iptables v1.8.9 (nf_tables)\n"),
	    "nf_tables");
	assert_string_equal(fw_backend_parse("iptables v1.8.7 (legacy)\n"),
	    "legacy");
	assert_string_equal(fw_backend_parse("iptables v1.4.21\n"), "unknown");
	assert_string_equal(fw_backend_parse(NULL), "unknown");
}

/* What `iptables -S` showed right after `docker network create` of a
 * network as dnet_create_argv makes it (not internal, icc and masquerade
 * off; Docker 20.10.24, nf_tables), with our jumps from an earlier pass,
 * which Docker's inserted rules pushed down. */
static const char listing_docker[] =
    "-P INPUT ACCEPT\n"
    "-P FORWARD DROP\n"
    "-P OUTPUT ACCEPT\n"
    "-N CORDON-FWD-cordon0\n"
    "-N CORDON-IN-cordon0\n"
    "-N DOCKER\n"
    "-N DOCKER-ISOLATION-STAGE-1\n"
    "-N DOCKER-ISOLATION-STAGE-2\n"
    "-N DOCKER-USER\n"
    "-A INPUT -i cordon0 -j CORDON-IN-cordon0\n"
    "-A FORWARD -j DOCKER-USER\n"
    "-A FORWARD -j DOCKER-ISOLATION-STAGE-1\n"
    "-A FORWARD -o cordon0 -m conntrack --ctstate RELATED,ESTABLISHED -j "
    "ACCEPT\n"
    "-A FORWARD -o cordon0 -j DOCKER\n"
    "-A FORWARD -i cordon0 ! -o cordon0 -j ACCEPT\n"
    "-A FORWARD -o cordon0 -j CORDON-FWD-cordon0\n"
    "-A FORWARD -i cordon0 -j CORDON-FWD-cordon0\n"
    "-A FORWARD -o docker0 -m conntrack --ctstate RELATED,ESTABLISHED -j "
    "ACCEPT\n"
    "-A FORWARD -i cordon0 -o cordon0 -j DROP\n"
    "-A DOCKER-ISOLATION-STAGE-1 -i cordon0 ! -o cordon0 -j "
    "DOCKER-ISOLATION-STAGE-2\n"
    "-A DOCKER-ISOLATION-STAGE-1 -j RETURN\n"
    "-A DOCKER-ISOLATION-STAGE-2 -o cordon0 -j DROP\n"
    "-A DOCKER-ISOLATION-STAGE-2 -j RETURN\n"
    "-A DOCKER-USER -o cordon0 -j CORDON-FWD-cordon0\n"
    "-A DOCKER-USER -i cordon0 -j CORDON-FWD-cordon0\n"
    "-A DOCKER-USER -j RETURN\n";

/* The same listing after `net up`'s second pass moved our FORWARD jumps
 * back to the top. */
static const char listing_docker_fixed[] =
    "-A FORWARD -i cordon0 -j CORDON-FWD-cordon0\n"
    "-A FORWARD -o cordon0 -j CORDON-FWD-cordon0\n"
    "-A FORWARD -j DOCKER-USER\n"
    "-A FORWARD -j DOCKER-ISOLATION-STAGE-1\n"
    "-A FORWARD -o cordon0 -m conntrack --ctstate RELATED,ESTABLISHED -j "
    "ACCEPT\n"
    "-A FORWARD -o cordon0 -j DOCKER\n"
    "-A FORWARD -i cordon0 ! -o cordon0 -j ACCEPT\n";

/* The nat table as Docker keeps it (its PREROUTING jump to DOCKER, where
 * published ports are DNATed), with ours before and after it. */
static const char nat_ok[] =
    "-P PREROUTING ACCEPT\n"
    "-N CORDON-NAT-cordon0\n"
    "-N DOCKER\n"
    "-A PREROUTING -i cordon0 -j CORDON-NAT-cordon0\n"
    "-A PREROUTING -m addrtype --dst-type LOCAL -j DOCKER\n"
    "-A CORDON-NAT-cordon0 -d 10.213.0.1/32 -p tcp -m tcp --dport 3128 -j "
    "RETURN\n"
    "-A CORDON-NAT-cordon0 -p udp -m udp --dport 53 -j REDIRECT "
    "--to-ports 53\n"
    "-A CORDON-NAT-cordon0 -p tcp -m tcp --dport 53 -j REDIRECT "
    "--to-ports 53\n"
    "-A CORDON-NAT-cordon0 -p tcp -j REDIRECT --to-ports 3129\n"
    "-A DOCKER -i docker0 -j RETURN\n";
static const char nat_behind[] =
    "-A PREROUTING -m addrtype --dst-type LOCAL -j DOCKER\n"
    "-A PREROUTING -i cordon0 -j CORDON-NAT-cordon0\n";

/* Docker's own rules for a network that is not internal accept what
 * leaves the bridge; they must never come before our drops. */
static void
test_listing_docker(void **state)
{
	struct netsetup_params p;
	struct fw_plan plan;

	(void)state;
	params(&p);
	assert_int_equal(fw_plan_build(&plan, FW_INET, &p, true), 0);
	/* Behind Docker's ACCEPTs and its DOCKER chain: not first, so up
	 * moves them and status names them. */
	assert_false(fw_listing_jump_first(listing_docker, &plan.rules[12]));
	assert_false(fw_listing_jump_first(listing_docker, &plan.rules[13]));
	/* DOCKER-USER comes before all of Docker's rules (Docker keeps its
	 * jump on top): ours there are first, and INPUT's is. */
	assert_true(fw_listing_jump_first(listing_docker, &plan.rules[11]));
	assert_true(fw_listing_jump_first(listing_docker, &plan.rules[14]));
	assert_true(fw_listing_jump_first(listing_docker, &plan.rules[15]));
	assert_true(fw_listing_jump_first(listing_docker_fixed,
	    &plan.rules[12]));
	assert_true(fw_listing_jump_first(listing_docker_fixed,
	    &plan.rules[13]));
	assert_int_equal(fw_listing_count(listing_docker, "FORWARD"), 9);
	/* The nat table: our chain exactly, and its jump first. */
	assert_true(fw_listing_has_chain(nat_ok, "CORDON-NAT-cordon0"));
	assert_int_equal(fw_listing_count(nat_ok, "CORDON-NAT-cordon0"), 4);
	assert_true(fw_listing_jump_first(nat_ok, &plan.rules[16]));
	/* Behind Docker's DNAT of published ports: not first. */
	assert_false(fw_listing_jump_first(nat_behind, &plan.rules[16]));
	/* The filter listing does not hold the nat jump. */
	assert_false(fw_listing_jump_first(listing_ok, &plan.rules[16]));
}

static const char net_good[] =
    "{\"Name\":\"cordon-egress\",\"Driver\":\"bridge\",\"EnableIPv6\":false,"
    "\"IPAM\":{\"Driver\":\"default\",\"Config\":[{\"Subnet\":"
    "\"10.213.0.0/24\",\"Gateway\":\"10.213.0.1\"}]},\"Internal\":false,"
    "\"Containers\":{},\"Options\":{\"com.docker.network.bridge.enable_icc\":"
    "\"false\",\"com.docker.network.bridge.enable_ip_masquerade\":\"false\","
    "\"com.docker.network.bridge.name\":\"cordon0\"},"
    "\"Labels\":{\"cordon.netsetup\":\"1\"}}";

static int
check_mutated(const char *from, const char *to, char *why, size_t len)
{
	struct netsetup_params p;
	char text[1024];
	const char *at = strstr(net_good, from);
	cJSON *net;
	int n;

	params(&p);
	assert_non_null(at);
	snprintf(text, sizeof(text), "%.*s%s%s", (int)(at - net_good), net_good,
	    to, at + strlen(from));
	net = cJSON_Parse(text);
	assert_non_null(net);
	n = dnet_check(net, &p, why, len);
	cJSON_Delete(net);
	return n;
}

static void
test_network_check(void **state)
{
	static const struct {
		const char *from, *to, *why;
	} cases[] = {
		/* An older `net up` made it --internal: no default route. */
		{ "\"Internal\":false", "\"Internal\":true",
		  "is --internal (made by an older 'cordon net up'" },
		{ "enable_ip_masquerade\":\"false\"",
		  "enable_ip_masquerade\":\"true\"", "IP masquerade is on" },
		{ "\"com.docker.network.bridge.enable_ip_masquerade\":\"false\",",
		  "", "IP masquerade is on (enable_ip_masquerade is not false)" },
		{ "\"EnableIPv6\":false", "\"EnableIPv6\":true", "IPv6" },
		{ "\"Driver\":\"bridge\"", "\"Driver\":\"macvlan\"", "driver" },
		{ "enable_icc\":\"false\"", "enable_icc\":\"true\"",
		  "inter-container" },
		{ "bridge.name\":\"cordon0\"", "bridge.name\":\"br-x\"",
		  "bridge name is br-x" },
		{ "10.213.0.0/24", "10.99.0.0/24", "subnet is 10.99.0.0/24" },
		{ "\"Gateway\":\"10.213.0.1\"", "\"Gateway\":\"10.213.0.254\"",
		  "gateway is 10.213.0.254" },
		{ "\"Internal\":false", "\"Internal\":\"no\"", "is --internal" },
	};
	struct netsetup_params p;
	char why[512];
	cJSON *net;

	(void)state;
	params(&p);
	net = cJSON_Parse(net_good);
	assert_int_equal(dnet_check(net, &p, why, sizeof(why)), 0);
	assert_string_equal(why, "");
	assert_true(dnet_ours(net));
	assert_int_equal(dnet_containers(net), 0);
	cJSON_Delete(net);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(check_mutated(cases[i].from, cases[i].to, why,
		    sizeof(why)), 1);
		assert_non_null(strstr(why, cases[i].why));
	}
	/* Every problem is named: an older up's network. */
	net = cJSON_Parse("{\"Driver\":\"bridge\",\"Internal\":true,"
	    "\"EnableIPv6\":false,\"Options\":{},\"IPAM\":{\"Config\":[]}}");
	assert_int_equal(dnet_check(net, &p, why, sizeof(why)), 5);
	assert_string_equal(why, "is --internal (made by an older 'cordon net "
	    "up'; its sandboxes have no default route, so nothing can be "
	    "redirected to the proxy); bridge name is Docker's default, not "
	    "cordon0; inter-container communication is on (enable_icc is not "
	    "false); IP masquerade is on (enable_ip_masquerade is not false); "
	    "IPAM does not have exactly one subnet");
	assert_false(dnet_ours(net));
	cJSON_Delete(net);
	net = cJSON_Parse("{\"Containers\":{\"a\":{},\"b\":{}},"
	    "\"Labels\":{\"cordon.netsetup\":\"0\"}}");
	assert_int_equal(dnet_containers(net), 2);
	assert_false(dnet_ours(net));
	cJSON_Delete(net);
}

static void
test_create_argv(void **state)
{
	struct netsetup_params p;
	const char *argv[DNET_ARGV_MAX];
	char bufs[6 * 128];
	cJSON *net;
	char why[512];

	(void)state;
	params(&p);
	assert_int_equal(dnet_create_argv(&p, argv, DNET_ARGV_MAX, bufs,
	    sizeof(bufs)), 0);
	/* Not --internal: the sandbox needs its default route to the
	 * gateway for anything to reach the nat redirect. */
	argv_is(argv, "docker network create --driver=bridge "
	    "--ipv6=false --subnet=10.213.0.0/24 --gateway=10.213.0.1 --opt "
	    "com.docker.network.bridge.name=cordon0 --opt "
	    "com.docker.network.bridge.enable_icc=false --opt "
	    "com.docker.network.bridge.enable_ip_masquerade=false --label "
	    "cordon.netsetup=1 cordon-egress");
	assert_int_equal(dnet_create_argv(&p, argv, 8, bufs, sizeof(bufs)),
	    -E2BIG);
	assert_int_equal(dnet_create_argv(&p, argv, DNET_ARGV_MAX, bufs, 400),
	    -E2BIG);
	/* What `docker network inspect` said of a network made with that
	 * argv (Docker 20.10.24, fields trimmed): it passes the check. */
	net = cJSON_Parse("{\"Name\":\"cordon-egress\",\"Scope\":\"local\","
	    "\"Driver\":\"bridge\",\"EnableIPv6\":false,\"IPAM\":{\"Driver\":"
	    "\"default\",\"Options\":{},\"Config\":[{\"Subnet\":"
	    "\"10.213.0.0/24\",\"Gateway\":\"10.213.0.1\"}]},\"Internal\":"
	    "false,\"Attachable\":false,\"Ingress\":false,\"Containers\":{},"
	    "\"Options\":{\"com.docker.network.bridge.enable_icc\":\"false\","
	    "\"com.docker.network.bridge.enable_ip_masquerade\":\"false\","
	    "\"com.docker.network.bridge.name\":\"cordon0\"},\"Labels\":"
	    "{\"cordon.netsetup\":\"1\"}}");
	assert_non_null(net);
	assert_int_equal(dnet_check(net, &p, why, sizeof(why)), 0);
	cJSON_Delete(net);
}

static void
test_run_args(void **state)
{
	struct netsetup_endpoint ep = { .gateway = "10.213.0.1",
	    .port = 3128 };
	struct netsetup_run_args ra;
	struct config c;

	(void)state;
	config_defaults(&c);
	assert_int_equal(netsetup_run_args(&c, &ep, &ra), 0);
	assert_string_equal(ra.network, "cordon-egress");
	assert_string_equal(ra.runtime, "cordon-egress");
	/* No proxy URL: it carries the run's credential, which comes on
	 * stdin, never on an argv (ps) or in the container's config. */
	argv_is(ra.argv, "--dns=10.213.0.1 --env NO_PROXY= --env no_proxy=");
	assert_int_equal(ra.argc, 5);
	assert_string_equal(ra.ca_bundle,
	    "/var/lib/cordon/egress-ca/ca-bundle.pem");
	/* net up's resolv.conf, in the bridge's state dir. */
	assert_string_equal(ra.resolv_conf,
	    "/var/lib/cordon/net-cordon0/resolv.conf");
	for (size_t i = 0; i < ra.argc; i++)
		assert_null(strcasestr(ra.argv[i], "_proxy=http"));
	assert_null(ra.argv[ra.argc]);
	ep.port = 0;
	assert_int_equal(netsetup_run_args(&c, &ep, &ra), -EINVAL);
	assert_int_equal(ra.argc, 0);
	assert_null(ra.network);
	ep = (struct netsetup_endpoint){ .gateway = "not-an-ip",
	    .port = 3128 };
	assert_int_equal(netsetup_run_args(&c, &ep, &ra), -EINVAL);
	assert_int_equal(netsetup_run_args(&c, NULL, &ra), -EINVAL);
	ep = (struct netsetup_endpoint){ .gateway = "10.213.0.1",
	    .port = 3128 };
	strcpy(c.runtime_egress, "--privileged");
	assert_int_equal(netsetup_run_args(&c, &ep, &ra), -EINVAL);
	/* The longest state dir and bridge the config holds still fit. */
	config_defaults(&c);
	memset(c.state_dir, 's', sizeof(c.state_dir) - 1);
	c.state_dir[0] = '/';
	c.state_dir[sizeof(c.state_dir) - 1] = '\0';
	strcpy(c.egress_bridge, "abcdefghijklmno");
	assert_int_equal(netsetup_run_args(&c, &ep, &ra), 0);
	assert_int_equal(strlen(ra.resolv_conf), 255 + 32);
	assert_non_null(strstr(ra.resolv_conf,
	    "s/net-abcdefghijklmno/resolv.conf"));
}

static void
test_resolv_conf(void **state)
{
	char buf[128];

	(void)state;
	assert_int_equal(netsetup_resolv_conf_text("10.213.0.1", buf,
	    sizeof(buf)), 0);
	assert_string_equal(buf, "nameserver 10.213.0.1\n"
	    "options edns0 ndots:1\n");
	assert_int_equal(netsetup_resolv_conf_text("10.213.250.1", buf,
	    sizeof(buf)), 0);
	assert_string_equal(buf, "nameserver 10.213.250.1\n"
	    "options edns0 ndots:1\n");
	/* 44 bytes and its NUL: one less is too small, and leaves "". */
	assert_int_equal(netsetup_resolv_conf_text("10.213.0.1", buf, 44),
	    -ENOSPC);
	assert_string_equal(buf, "");
	assert_int_equal(netsetup_resolv_conf_text("10.213.0.1", buf, 45), 0);
	assert_int_equal(netsetup_resolv_conf_text("10.213.0.1\nnameserver "
	    "8.8.8.8", buf, sizeof(buf)), -EINVAL);
	assert_string_equal(buf, "");
	assert_int_equal(netsetup_resolv_conf_text("fd00::1", buf,
	    sizeof(buf)), -EINVAL);
	assert_int_equal(netsetup_resolv_conf_text(NULL, buf, sizeof(buf)),
	    -EINVAL);
}

/* /proc/net/tcp and udp as Linux 6.x prints them (trimmed columns). */
static void
test_proc_net(void **state)
{
	static const char tcp[] =
	    "  sl  local_address rem_address   st tx_queue rx_queue tr "
	    "tm->when retrnsmt   uid  timeout inode\n"
	    "   0: 0100D50A:0C38 00000000:0000 0A 00000000:00000000 "
	    "00:00000000 00000000     0        0 1001 1\n"
	    "   1: 0100D50A:0C39 00000000:0000 0A 00000000:00000000 "
	    "00:00000000 00000000     0        0 1002 1\n"
	    "   2: 0100D50A:0035 00000000:0000 0A 00000000:00000000 "
	    "00:00000000 00000000     0        0 1003 1\n"
	    "   3: 0100D50A:1F90 0200D50A:A000 01 00000000:00000000 "
	    "00:00000000 00000000     0        0 1004 1\n"
	    "   4: 00000000:1F91 00000000:0000 0A 00000000:00000000 "
	    "00:00000000 00000000     0        0 1005 1\n";
	static const char udp[] =
	    "   sl  local_address rem_address   st tx_queue rx_queue tr "
	    "tm->when retrnsmt   uid  timeout inode ref pointer drops\n"
	    "  100: 0100D50A:0035 00000000:0000 07 00000000:00000000 "
	    "00:00000000 00000000     0        0 2001 2 0000 0\n"
	    "  101: 0100D50A:14E9 0200D50A:0035 01 00000000:00000000 "
	    "00:00000000 00000000     0        0 2002 2 0000 0\n";

	(void)state;
	/* 10.213.0.1 is 0x0A.D5.00.01, printed as the native word. */
	assert_true(nssuper_listed(tcp, "10.213.0.1", 3128, false));
	assert_true(nssuper_listed(tcp, "10.213.0.1", 3129, false));
	assert_true(nssuper_listed(tcp, "10.213.0.1", 53, false));
	/* Connected, not listening; on 0.0.0.0, not the gateway. */
	assert_false(nssuper_listed(tcp, "10.213.0.1", 8080, false));
	assert_false(nssuper_listed(tcp, "10.213.0.1", 8081, false));
	assert_false(nssuper_listed(tcp, "10.213.0.2", 3128, false));
	assert_false(nssuper_listed(tcp, "10.213.0.1", 3128, true));
	assert_true(nssuper_listed(udp, "10.213.0.1", 53, true));
	/* A connected UDP socket is no resolver. */
	assert_false(nssuper_listed(udp, "10.213.0.1", 5353, true));
	assert_false(nssuper_listed(udp, "10.213.0.1", 53, false));
	/* Headers only, garbage, truncated lines, bad addresses. */
	assert_false(nssuper_listed("  sl  local_address\n", "10.213.0.1", 53,
	    true));
	assert_false(nssuper_listed("", "10.213.0.1", 53, true));
	assert_false(nssuper_listed(NULL, "10.213.0.1", 53, true));
	assert_false(nssuper_listed("h\n   0: 0100D50A:0035", "10.213.0.1",
	    53, true));
	assert_false(nssuper_listed("h\n   0: 0100D50A:0035 00000000:0000 07",
	    "10.213.0.1", 53, true));
	assert_false(nssuper_listed("h\n   0: 10100D50A:0035 00000000:0000 "
	    "07 x\n", "10.213.0.1", 53, true));
	assert_true(nssuper_listed("h\n   0: 0100d50a:0035 00000000:0000 "
	    "07 x\n", "10.213.0.1", 53, true));
	assert_false(nssuper_listed(udp, "not an address", 53, true));
}

static void
test_seal_rules(void **state)
{
	struct netsetup_endpoint ep = { .gateway = "10.213.0.1",
	    .port = 3128 };
	char buf[512];

	(void)state;
	assert_int_equal(netsetup_seal_rules(4, &ep, buf, sizeof(buf)), 0);
	/* TCP and DNS to any address (the host redirects both to the
	 * proxy); Docker's embedded DNS, UDP to other ports and ICMP
	 * rejected. */
	assert_string_equal(buf, "*filter\n"
	    "-A OUTPUT -d 127.0.0.11/32 -j REJECT\n"
	    "-A OUTPUT -o lo -j ACCEPT\n"
	    "-A OUTPUT -p tcp -j ACCEPT\n"
	    "-A OUTPUT -p udp -m udp --dport 53 -j ACCEPT\n"
	    "-A OUTPUT -j REJECT\n"
	    "COMMIT\n");
	assert_int_equal(netsetup_seal_rules(6, &ep, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "*filter\n-A OUTPUT -o lo -j ACCEPT\n"
	    "-A OUTPUT -j REJECT\nCOMMIT\n");
	assert_int_equal(netsetup_seal_rules(4, &ep, buf, 20), -ENOSPC);
	assert_int_equal(netsetup_seal_rules(4, NULL, buf, sizeof(buf)),
	    -EINVAL);
}

/* The Engine API's inspect JSON, as the seal reads it: running, network
 * mode, netns key, the address on the egress network (config's). */
static void
test_sandbox_view_parse(void **state)
{
	static const struct {
		const char *json;
		int rc;
		bool running;
		const char *mode, *key, *ip;
	} rows[] = {
		{ "{\"State\":{\"Running\":true},\"HostConfig\":{"
		    "\"NetworkMode\":\"cordon-egress\"},\"NetworkSettings\":{"
		    "\"SandboxKey\":\"/var/run/docker/netns/abc\",\"Networks\":"
		    "{\"cordon-egress\":{\"IPAddress\":\"10.213.0.5\"}}}}", 0, true,
		    "cordon-egress", "/var/run/docker/netns/abc", "10.213.0.5" },
		/* Another network's address is not taken. */
		{ "{\"State\":{\"Running\":false},\"HostConfig\":{"
		    "\"NetworkMode\":\"bridge\"},\"NetworkSettings\":{"
		    "\"SandboxKey\":\"\",\"Networks\":{\"bridge\":{"
		    "\"IPAddress\":\"172.17.0.2\"}}}}", 0, false, "bridge", "",
		    "" },
		{ "{\"State\":{\"Running\":true},\"HostConfig\":{},"
		    "\"NetworkSettings\":{\"SandboxKey\":null}}", 0, true, "", "",
		    "" },
		{ "[]", -EINVAL, false, "", "", "" },
		{ "{\"State\":{},\"HostConfig\":{},\"NetworkSettings\":{}}",
		    -EINVAL, false, "", "", "" },
		{ "{\"State\":{\"Running\":1},\"HostConfig\":{},"
		    "\"NetworkSettings\":{}}", -EINVAL, false, "", "", "" },
		{ "{\"State\":{\"Running\":true},\"HostConfig\":{"
		    "\"NetworkMode\":7},\"NetworkSettings\":{}}", -EINVAL, false,
		    "", "", "" },
		{ "{\"State\":{\"Running\":true},\"HostConfig\":{},"
		    "\"NetworkSettings\":{\"Networks\":{\"cordon-egress\":{"
		    "\"IPAddress\":\"10.213.0.5.10.213.0.5.10.213.0.5.10.213.0.5."
		    "10.213.0.5.10.213.0.5.1\"}}}}", -EINVAL, false, "", "", "" },
		{ "{\"State\":", -EINVAL, false, "", "", "" },
	};
	struct config c;

	(void)state;
	config_defaults(&c);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct netsetup_sandbox_view v;
		int rc = netsetup_sandbox_view_parse(&c, rows[i].json,
		    strlen(rows[i].json), &v);
		if (rc != rows[i].rc || v.running != rows[i].running ||
		    strcmp(v.mode, rows[i].mode) != 0 ||
		    strcmp(v.key, rows[i].key) != 0 ||
		    strcmp(v.ip, rows[i].ip) != 0)
			fail_msg("row %zu: %d %d %s %s %s", i, rc, v.running,
			    v.mode, v.key, v.ip);
	}
}

/* The seal refuses, before it enters any namespace, a container that is
 * not running, not on the egress network, with a netns path that is not
 * Docker's, or (when its address is wanted) without one. */
static void
test_seal_view_refusals(void **state)
{
	struct netsetup_endpoint ep = { .gateway = "10.213.0.1", .port = 3128 };
	const struct netsetup_sandbox_view ok = { .running = true,
	    .mode = "cordon-egress", .key = "/var/run/docker/netns/abc",
	    .ip = "10.213.0.5" };
	struct netsetup_sandbox_view v;
	struct config c;
	char addr[NETSETUP_ADDR_MAX] = "x", err[300];

	(void)state;
	config_defaults(&c);
	for (int i = 0; i < 6; i++) {
		v = ok;
		switch (i) {
		case 0: v.running = false; break;
		case 1: strcpy(v.mode, "bridge"); break;
		case 2: strcpy(v.key, "/proc/1/ns/net"); break;
		case 3: strcpy(v.key, "/run/docker/netns/../../proc/1"); break;
		case 4: strcpy(v.ip, ""); break;
		default: strcpy(v.ip, "fe80::1"); break;
		}
		if (netsetup_sandbox_seal_view(&c, &ep, "cordon-x", &v, addr,
		    err, sizeof(err)) != -EINVAL)
			fail_msg("view %d was not refused", i);
		assert_string_equal(addr, "");
		assert_non_null(strstr(err, "not a running proxy-mode"));
	}
}

static void
test_unit_text(void **state)
{
	const char *argv[] = { "/usr/lib/cordon/cordon-proxy", "--listen",
	    "10.213.0.1:3128", "--allowlist", "/etc/cordon/a \"b\"%$.list",
	    NULL };
	const char *env[] = { "PATH=/usr/bin:/bin", NULL };
	struct nssuper_spec s = { argv, env, "nobody",
	    "/var/lib/cordon/net-cordon0/proxy.log", "x", "y" };
	char buf[2048];

	(void)state;
	assert_int_equal(sdunit_text(&s, "cordon0", buf, sizeof(buf)), 0);
	assert_string_equal(buf,
	    "# Written by 'cordon net up'; removed by 'cordon net down'.\n"
	    "[Unit]\nDescription=Cordon egress proxy on cordon0\n"
	    "After=network.target docker.service\n\n"
	    "[Service]\nType=simple\n"
	    "ExecStart=\"/usr/lib/cordon/cordon-proxy\" \"--listen\" "
	    "\"10.213.0.1:3128\" \"--allowlist\" "
	    "\"/etc/cordon/a \\\"b\\\"%%$$.list\"\n"
	    "Environment=\"PATH=/usr/bin:/bin\"\n"
	    "Restart=always\nRestartSec=1\nNoNewPrivileges=yes\n"
	    "CapabilityBoundingSet=CAP_SETUID CAP_SETGID CAP_SYS_CHROOT\n"
	    "RuntimeDirectory=cordon-proxy-root\n"
	    "RuntimeDirectoryMode=0555\nRuntimeDirectoryPreserve=yes\n"
	    "ProtectSystem=strict\n"
	    "ProtectHome=read-only\nPrivateTmp=yes\nPrivateDevices=yes\n"
	    "ProtectKernelTunables=yes\nProtectKernelModules=yes\n"
	    "ProtectControlGroups=yes\n"
	    "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX\n"
	    "StandardInput=null\n"
	    "StandardOutput=append:/var/lib/cordon/net-cordon0/proxy.log\n"
	    "StandardError=append:/var/lib/cordon/net-cordon0/proxy.log\n");
	/* Control characters and odd log paths are refused, small buffers
	 * too; nothing half-written is left. */
	argv[4] = "/etc/a\nExecStartPre=/bin/evil";
	assert_int_equal(sdunit_text(&s, "cordon0", buf, sizeof(buf)),
	    -EINVAL);
	assert_string_equal(buf, "");
	argv[4] = "/etc/a.list";
	s.log_path = "/var/log/a b.log";
	assert_int_equal(sdunit_text(&s, "cordon0", buf, sizeof(buf)),
	    -EINVAL);
	s.log_path = "/l";
	assert_int_equal(sdunit_text(&s, "cordon0", buf, 64), -ENOSPC);
	assert_string_equal(buf, "");
}

/* cJSON allocations fail from the n-th on (n < 0: never). */
static long alloc_left = -1;

static void *
counted_malloc(size_t n)
{
	if (alloc_left == 0)
		return NULL;
	if (alloc_left > 0)
		alloc_left--;
	return malloc(n);
}

static void
hooks_fail_after(long n)
{
	cJSON_Hooks h = { counted_malloc, free };

	alloc_left = n;
	cJSON_InitHooks(&h);
}

static void
hooks_reset(void)
{
	alloc_left = -1;
	cJSON_InitHooks(NULL);
}

/* Index of s in the JSON string array a, or -1. */
static int
array_find(const cJSON *a, const char *s)
{
	int i = 0;
	const cJSON *v;

	cJSON_ArrayForEach(v, a) {
		if (cJSON_IsString(v) && strcmp(v->valuestring, s) == 0)
			return i;
		i++;
	}
	return -1;
}

static void
test_proxy_argv(void **state)
{
	const char *extra[] = { "--log-level", "debug" };
	struct netsetup_up_opts o = { "/etc/cordon/default.list",
	    "/usr/lib/cordon/cordon-proxy", extra, 2, NULL, 32, NULL, 0, 0 };
	struct netsetup_up_opts o2 = { "/etc/cordon/default.list",
	    "/usr/lib/cordon/cordon-proxy", NULL, 0, NULL, 32,
	    "/var/log/cordon/access.log", 1u << 20, 3 };
	struct netsetup_params p;
	char want[2048], *text;
	cJSON *a = NULL;
	long n;
	int rc, u;

	(void)state;
	params(&p);
	assert_int_equal(netsetup_proxy_argv(&p, &o, &a), 0);
	text = cJSON_PrintUnformatted(a);
	assert_non_null(text);
	snprintf(want, sizeof(want), "[\"/usr/lib/cordon/cordon-proxy\","
	    "\"--listen\",\"10.213.0.1:3128\",\"--transparent\","
	    "\"10.213.0.1:3129\",\"--dns-listen\",\"10.213.0.1:53\","
	    "\"--allowlist\","
	    "\"/etc/cordon/default.list\",\"--access-log\","
	    "\"%s/access.log\","
	    "\"--control\",\"%s/control.sock\",\"--state\","
	    "\"%s/proxy-runs.state\",\"--user\","
	    "\"%s\",\"--ca-cert\",\"%s/ca.crt\",\"--ca-key\",\"%s/ca.key\","
	    "\"--source-max-pending\",\"32\","
	    "\"--log-level\",\"debug\"]", p.state_dir, p.state_dir,
	    p.state_dir, p.proxy_user, p.ca_dir, p.ca_dir);
	assert_string_equal(text, want);
	free(text);
	cJSON_Delete(a);
	/* The config's access log path and its rotation. */
	assert_int_equal(netsetup_proxy_argv(&p, &o2, &a), 0);
	text = cJSON_PrintUnformatted(a);
	assert_non_null(text);
	assert_non_null(strstr(text, "\"--access-log\","
	    "\"/var/log/cordon/access.log\",\"--access-log-max\","
	    "\"1048576\",\"--access-log-keep\",\"3\",\"--control\""));
	free(text);
	cJSON_Delete(a);
	/* Under ENOMEM: the whole argv (with --user) or nothing. */
	for (n = 0;; n++) {
		assert_true(n < 100);
		hooks_fail_after(n);
		rc = netsetup_proxy_argv(&p, &o, &a);
		hooks_reset();
		if (rc == 0)
			break;
		assert_int_equal(rc, -ENOMEM);
		assert_null(a);
	}
	assert_true(n > 9);
	u = array_find(a, "--user");
	assert_int_equal(u, 15);
	assert_string_equal(cJSON_GetArrayItem(a, u + 1)->valuestring,
	    p.proxy_user);
	assert_int_equal(cJSON_GetArraySize(a), 25);
	cJSON_Delete(a);
	/* Other ports from the config. */
	p.tport = 8443;
	p.dns_port = 5353;
	assert_int_equal(netsetup_proxy_argv(&p, &o, &a), 0);
	u = array_find(a, "--transparent");
	assert_int_equal(u, 3);
	assert_string_equal(cJSON_GetArrayItem(a, u + 1)->valuestring,
	    "10.213.0.1:8443");
	assert_string_equal(cJSON_GetArrayItem(a, u + 3)->valuestring,
	    "10.213.0.1:5353");
	cJSON_Delete(a);
	params(&p);
	/* With a secrets store: passed on. */
	o.secrets = "/etc/cordon/secrets";
	assert_int_equal(netsetup_proxy_argv(&p, &o, &a), 0);
	u = array_find(a, "--secrets");
	assert_true(u > 0);
	assert_string_equal(cJSON_GetArrayItem(a, u + 1)->valuestring,
	    "/etc/cordon/secrets");
	cJSON_Delete(a);
	o.secrets = NULL;
	o.allowlist = NULL;
	assert_int_equal(netsetup_proxy_argv(&p, &o, &a), -EINVAL);
	assert_null(a);
	/* A control socket path that no sockaddr_un can hold. */
	o.allowlist = "/etc/cordon/default.list";
	memset(p.state_dir, 'd', 120);
	p.state_dir[0] = '/';
	p.state_dir[120] = '\0';
	assert_int_equal(netsetup_proxy_argv(&p, &o, &a), -EINVAL);
	assert_null(a);
}

static void
test_control_path(void **state)
{
	struct netsetup_params p;
	char buf[NETSETUP_CONTROL_MAX];

	(void)state;
	params(&p);
	assert_int_equal(netsetup_control_path(&p, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/var/lib/cordon/net-cordon0/control.sock");
	assert_int_equal(netsetup_control_path(&p, buf, 10), -ENAMETOOLONG);
	assert_string_equal(buf, "");
	/* 95 + "/control.sock" = 108 bytes: one too many with the NUL. */
	memset(p.state_dir, 'd', 95);
	p.state_dir[0] = '/';
	p.state_dir[95] = '\0';
	assert_int_equal(netsetup_control_path(&p, buf, sizeof(buf)),
	    -ENAMETOOLONG);
	p.state_dir[94] = '\0';
	assert_int_equal(netsetup_control_path(&p, buf, sizeof(buf)), 0);
	assert_int_equal(strlen(buf), 107);
}

static void
test_state_write(void **state)
{
	struct netsetup_up_opts o = { "/etc/cordon/default.list",
	    "/usr/lib/cordon/cordon-proxy", NULL, 0, NULL, 32, NULL, 0, 0 };
	struct netsetup_params p;
	char dir[] = "/tmp/cordon-test-netsetup.XXXXXX", path[400];
	const cJSON *v;
	cJSON *argv = NULL, *st;
	long n;
	int rc;

	(void)state;
	params(&p);
	assert_non_null(mkdtemp(dir));
	snprintf(p.state_dir, sizeof(p.state_dir), "%s", dir);
	netsetup_state_path(&p, "net.json", path, sizeof(path));
	assert_int_equal(netsetup_proxy_argv(&p, &o, &argv), 0);
	/* Under ENOMEM: -ENOMEM and no record, never half a record. */
	for (n = 0;; n++) {
		assert_true(n < 200);
		hooks_fail_after(n);
		rc = netsetup_state_write(&p, &o, argv, true);
		hooks_reset();
		if (rc == 0)
			break;
		assert_int_equal(rc, -ENOMEM);
		assert_int_equal(access(path, F_OK), -1);
	}
	assert_true(n > 8);
	st = netsetup_state_read(&p);
	assert_non_null(st);
	v = cJSON_GetObjectItemCaseSensitive(st, "subnet");
	assert_true(cJSON_IsString(v));
	assert_string_equal(v->valuestring, "10.213.0.0/24");
	v = cJSON_GetObjectItemCaseSensitive(st, "network_created");
	assert_true(cJSON_IsTrue(v));
	v = cJSON_GetObjectItemCaseSensitive(st, "proxy_argv");
	assert_true(cJSON_Compare(v, argv, true));
	assert_int_equal(array_find(v, "--user"), 15);
	cJSON_Delete(st);
	cJSON_Delete(argv);
	/* `net reload` finds the allowlist in the recorded argv. */
	assert_int_equal(netsetup_proxy_allowlist(&p, path, sizeof(path)), 0);
	assert_string_equal(path, "/etc/cordon/default.list");
	assert_int_equal(netsetup_proxy_allowlist(&p, path, 10),
	    -ENAMETOOLONG);
	assert_int_equal(util_rm_rf(dir), 0);
	/* No record: nothing to reload. */
	assert_int_equal(netsetup_proxy_allowlist(&p, path, sizeof(path)),
	    -ENOENT);
}

/* "set_up" from a status object: false only when no part is there (net
 * status then says "not set up"); any one part makes it half there. */
static void
test_status_set_up(void **state)
{
	static const char *const none = "{\"network\":{\"present\":false},"
	    "\"firewall\":{\"ipv4\":{\"chains\":[],\"rules\":[],"
	    "\"nat_rules\":[]},\"ipv6\":{\"chains\":[],\"rules\":[]}},"
	    "\"resolv_conf\":{\"present\":false,\"ok\":false},"
	    "\"proxy\":{\"supervisor_pid\":null,\"proxy_pid\":null,"
	    "\"control_present\":false},\"drift\":[\"network missing\"]}";
	static const struct {
		const char *path;	/* object.key, set to the value */
		const char *value;
	} parts[] = {
		{ "network.present", "true" },
		{ "firewall.ipv4.chains", "[\"CORDON-IN-cordon0\"]" },
		{ "firewall.ipv4.rules", "[\"-A INPUT -i cordon0 -j X\"]" },
		{ "firewall.ipv4.nat_rules", "[\"-A PREROUTING -j X\"]" },
		{ "firewall.ipv6.chains", "[\"CORDON-IN-cordon0\"]" },
		{ "firewall.ipv6.rules", "[\"-A INPUT -j X\"]" },
		{ "resolv_conf.present", "true" },
		{ "proxy.supervisor_pid", "42" },
		{ "proxy.control_present", "true" },
		{ "proxy.allowlist", "\"/etc/cordon/policies\"" },
	};
	cJSON *st;

	(void)state;
	st = cJSON_Parse(none);
	assert_non_null(st);
	assert_false(netsetup_status_set_up(st));
	cJSON_Delete(st);
	/* A firewall the status could not list ("unavailable") and a
	 * status with parts absent are not set up either. */
	st = cJSON_Parse("{\"firewall\":{\"ipv4\":{\"state\":"
	    "\"unavailable\"}},\"drift\":[]}");
	assert_false(netsetup_status_set_up(st));
	cJSON_Delete(st);
	assert_false(netsetup_status_set_up(NULL));
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		char path[64], *key, *dot;
		cJSON *o, *v;

		st = cJSON_Parse(none);
		assert_non_null(st);
		snprintf(path, sizeof(path), "%s", parts[i].path);
		o = st;
		key = path;
		while ((dot = strchr(key, '.')) != NULL) {
			*dot = '\0';
			o = cJSON_GetObjectItemCaseSensitive(o, key);
			assert_non_null(o);
			key = dot + 1;
		}
		v = cJSON_Parse(parts[i].value);
		assert_non_null(v);
		if (cJSON_GetObjectItemCaseSensitive(o, key) != NULL)
			assert_true(cJSON_ReplaceItemInObjectCaseSensitive(o,
			    key, v));
		else
			assert_true(cJSON_AddItemToObject(o, key, v));
		if (!netsetup_status_set_up(st))
			fail_msg("%s = %s: not counted as set up",
			    parts[i].path, parts[i].value);
		cJSON_Delete(st);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_subnet),
		cmocka_unit_test(test_params),
		cmocka_unit_test(test_plan_v4),
		cmocka_unit_test(test_plan_ports),
		cmocka_unit_test(test_plan_v6),
		cmocka_unit_test(test_argv),
		cmocka_unit_test(test_listing),
		cmocka_unit_test(test_listing_docker),
		cmocka_unit_test(test_network_check),
		cmocka_unit_test(test_create_argv),
		cmocka_unit_test(test_run_args),
		cmocka_unit_test(test_resolv_conf),
		cmocka_unit_test(test_proc_net),
		cmocka_unit_test(test_seal_rules),
		cmocka_unit_test(test_unit_text),
		cmocka_unit_test(test_proxy_argv),
		cmocka_unit_test(test_control_path),
		cmocka_unit_test(test_state_write),
		cmocka_unit_test(test_status_set_up),
		cmocka_unit_test(test_sandbox_view_parse),
		cmocka_unit_test(test_seal_view_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
