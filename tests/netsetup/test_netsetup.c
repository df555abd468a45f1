/*
 * Unit tests for netsetup's pure parts: subnet parsing, the exact firewall
 * rules and their iptables argv, `iptables -S` parsing (chain presence,
 * counts, jump position), the Docker network check, the create argv, the
 * docker run options for --net proxy, the seal rules, the proxy's argv
 * and the state record (whole or, under ENOMEM, not at all).
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
	assert_string_equal(p.chain_in, "CORDON-IN-cordon0");
	assert_string_equal(p.chain_fwd, "CORDON-FWD-cordon0");
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
		"-A CORDON-IN-cordon0 -d 10.213.0.1/32 -p tcp -m tcp --dport "
		    "3128 -j ACCEPT",
		"-A CORDON-IN-cordon0 -m conntrack --ctstate "
		    "RELATED,ESTABLISHED -j ACCEPT",
		"-A CORDON-IN-cordon0 -j DROP",
		"-A CORDON-FWD-cordon0 -j DROP",
		"-A INPUT -i cordon0 -j CORDON-IN-cordon0",
		"-A FORWARD -i cordon0 -j CORDON-FWD-cordon0",
		"-A FORWARD -o cordon0 -j CORDON-FWD-cordon0",
		"-A DOCKER-USER -i cordon0 -j CORDON-FWD-cordon0",
		"-A DOCKER-USER -o cordon0 -j CORDON-FWD-cordon0",
	};
	struct netsetup_params p;
	struct fw_plan plan;

	(void)state;
	params(&p);
	assert_int_equal(fw_plan_build(&plan, FW_INET, &p, true), 0);
	lines_equal(&plan, want, 9);
	assert_string_equal(plan.chains[0], "CORDON-IN-cordon0");
	assert_string_equal(plan.chains[1], "CORDON-FWD-cordon0");
	for (size_t i = 0; i < plan.nrules; i++)
		assert_int_equal(plan.rules[i].jump, i >= 4);
	/* Without DOCKER-USER (dockerd never ran): no jumps there. */
	assert_int_equal(fw_plan_build(&plan, FW_INET, &p, false), 0);
	lines_equal(&plan, want, 7);
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
	assert_int_equal(fw_plan_build(&plan, FW_INET6, &p, false), 0);
	lines_equal(&plan, want, 5);
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
	assert_int_equal(fw_argv(argv, FW_ARGV_MAX, FW_INET, FW_OP_INSERT1,
	    NULL, &plan.rules[4]), 0);
	argv_is(argv, "iptables -w -t filter -I INPUT 1 -i cordon0 -j "
	    "CORDON-IN-cordon0");
	assert_int_equal(fw_argv(argv, FW_ARGV_MAX, FW_INET6, FW_OP_CHECK,
	    NULL, &plan.rules[3]), 0);
	argv_is(argv, "ip6tables -w -t filter -C CORDON-FWD-cordon0 -j DROP");
	assert_int_equal(fw_argv(argv, FW_ARGV_MAX, FW_INET, FW_OP_APPEND,
	    NULL, &plan.rules[0]), 0);
	argv_is(argv, "iptables -w -t filter -A CORDON-IN-cordon0 -d "
	    "10.213.0.1/32 -p tcp -m tcp --dport 3128 -j ACCEPT");
	assert_int_equal(fw_argv(argv, FW_ARGV_MAX, FW_INET, FW_OP_DELETE,
	    NULL, &plan.rules[8]), 0);
	argv_is(argv, "iptables -w -t filter -D DOCKER-USER -o cordon0 -j "
	    "CORDON-FWD-cordon0");
	assert_int_equal(fw_argv(argv, FW_ARGV_MAX, FW_INET, FW_OP_NEW_CHAIN,
	    "CORDON-IN-cordon0", NULL), 0);
	argv_is(argv, "iptables -w -t filter -N CORDON-IN-cordon0");
	assert_int_equal(fw_argv(argv, FW_ARGV_MAX, FW_INET, FW_OP_FLUSH,
	    "X", NULL), 0);
	argv_is(argv, "iptables -w -t filter -F X");
	assert_int_equal(fw_argv(argv, FW_ARGV_MAX, FW_INET,
	    FW_OP_DELETE_CHAIN, "X", NULL), 0);
	argv_is(argv, "iptables -w -t filter -X X");
	assert_int_equal(fw_argv(argv, FW_ARGV_MAX, FW_INET, FW_OP_LIST,
	    NULL, NULL), 0);
	argv_is(argv, "iptables -w -t filter -S");
	/* Missing operands and a too small argv are refused. */
	assert_int_equal(fw_argv(argv, FW_ARGV_MAX, FW_INET, FW_OP_FLUSH,
	    NULL, NULL), -EINVAL);
	assert_int_equal(fw_argv(argv, FW_ARGV_MAX, FW_INET, FW_OP_CHECK,
	    NULL, NULL), -EINVAL);
	assert_int_equal(fw_argv(argv, 8, FW_INET, FW_OP_APPEND, NULL,
	    &plan.rules[0]), -E2BIG);
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
	for (size_t i = 4; i < 9; i++)
		assert_true(fw_listing_jump_first(listing_ok, &plan.rules[i]));
	/* Behind an ACCEPT: not first. Absent: not first. */
	assert_false(fw_listing_jump_first(moved, &plan.rules[5]));
	assert_false(fw_listing_jump_first(moved, &plan.rules[6]));
	assert_false(fw_listing_jump_first("-A INPUT -i cordon0 -j "
	    "CORDON-IN-cordon0x\n", &plan.rules[4]));
	/* What Docker puts on top when it starts or makes a network may come
	 * first; a jump to any other chain may not (it could accept). */
	assert_true(fw_listing_jump_first(
	    "-A FORWARD -j DOCKER-ISOLATION-STAGE-1\n"
	    "-A FORWARD -i cordon0 -o cordon0 -j DROP\n"
	    "-A FORWARD -p udp -j REJECT\n"
	    "-A FORWARD -i cordon0 -j CORDON-FWD-cordon0\n", &plan.rules[5]));
	assert_false(fw_listing_jump_first(
	    "-A FORWARD -j DOCKER-ISOLATION-STAGE-2\n"
	    "-A FORWARD -i cordon0 -j CORDON-FWD-cordon0\n", &plan.rules[5]));
	assert_false(fw_listing_jump_first(
	    "-A FORWARD -o docker0 -j DOCKER\n"
	    "-A FORWARD -i cordon0 -j CORDON-FWD-cordon0\n", &plan.rules[5]));
	assert_false(fw_listing_jump_first(
	    "-A FORWARD -j DROPX\n"
	    "-A FORWARD -i cordon0 -j CORDON-FWD-cordon0\n", &plan.rules[5]));
	assert_string_equal(fw_backend_parse("iptables v1.8.9 (nf_tables)\n"),
	    "nf_tables");
	assert_string_equal(fw_backend_parse("iptables v1.8.7 (legacy)\n"),
	    "legacy");
	assert_string_equal(fw_backend_parse("iptables v1.4.21\n"), "unknown");
	assert_string_equal(fw_backend_parse(NULL), "unknown");
}

static const char net_good[] =
    "{\"Name\":\"cordon-egress\",\"Driver\":\"bridge\",\"EnableIPv6\":false,"
    "\"IPAM\":{\"Driver\":\"default\",\"Config\":[{\"Subnet\":"
    "\"10.213.0.0/24\",\"Gateway\":\"10.213.0.1\"}]},\"Internal\":true,"
    "\"Containers\":{},\"Options\":{\"com.docker.network.bridge.enable_icc\":"
    "\"false\",\"com.docker.network.bridge.name\":\"cordon0\"},"
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
		{ "\"Internal\":true", "\"Internal\":false", "not --internal" },
		{ "\"EnableIPv6\":false", "\"EnableIPv6\":true", "IPv6" },
		{ "\"Driver\":\"bridge\"", "\"Driver\":\"macvlan\"", "driver" },
		{ "enable_icc\":\"false\"", "enable_icc\":\"true\"",
		  "inter-container" },
		{ "bridge.name\":\"cordon0\"", "bridge.name\":\"br-x\"",
		  "bridge name is br-x" },
		{ "10.213.0.0/24", "10.99.0.0/24", "subnet is 10.99.0.0/24" },
		{ "\"Gateway\":\"10.213.0.1\"", "\"Gateway\":\"10.213.0.254\"",
		  "gateway is 10.213.0.254" },
		{ "\"Internal\":true", "\"Internal\":\"yes\"", "not --internal" },
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
	/* Two problems are both named. */
	net = cJSON_Parse("{\"Driver\":\"bridge\",\"Internal\":false,"
	    "\"EnableIPv6\":false,\"Options\":{},\"IPAM\":{\"Config\":[]}}");
	assert_int_equal(dnet_check(net, &p, why, sizeof(why)), 4);
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
	const char *argv[16];
	char bufs[640];

	(void)state;
	params(&p);
	assert_int_equal(dnet_create_argv(&p, argv, 16, bufs, sizeof(bufs)), 0);
	argv_is(argv, "docker network create --driver=bridge --internal "
	    "--ipv6=false --subnet=10.213.0.0/24 --gateway=10.213.0.1 --opt "
	    "com.docker.network.bridge.name=cordon0 --opt "
	    "com.docker.network.bridge.enable_icc=false --label "
	    "cordon.netsetup=1 cordon-egress");
	assert_int_equal(dnet_create_argv(&p, argv, 8, bufs, sizeof(bufs)),
	    -E2BIG);
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
}

static void
test_seal_rules(void **state)
{
	struct netsetup_endpoint ep = { .gateway = "10.213.0.1",
	    .port = 3128 };
	char buf[512];

	(void)state;
	assert_int_equal(netsetup_seal_rules(4, &ep, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "*filter\n"
	    "-A OUTPUT -d 127.0.0.11/32 -j REJECT\n"
	    "-A OUTPUT -o lo -j ACCEPT\n"
	    "-A OUTPUT -d 10.213.0.1/32 -p tcp -m tcp --dport 3128 -j ACCEPT\n"
	    "-A OUTPUT -j REJECT\n"
	    "COMMIT\n");
	assert_int_equal(netsetup_seal_rules(6, &ep, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "*filter\n-A OUTPUT -o lo -j ACCEPT\n"
	    "-A OUTPUT -j REJECT\nCOMMIT\n");
	assert_int_equal(netsetup_seal_rules(4, &ep, buf, 20), -ENOSPC);
	assert_int_equal(netsetup_seal_rules(4, NULL, buf, sizeof(buf)),
	    -EINVAL);
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
	    "/usr/lib/cordon/cordon-proxy", extra, 2, NULL, 32 };
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
	    "\"--listen\",\"10.213.0.1:3128\",\"--allowlist\","
	    "\"/etc/cordon/default.list\",\"--access-log\",\"-\","
	    "\"--control\",\"%s/control.sock\",\"--state\","
	    "\"%s/proxy-runs.state\",\"--user\","
	    "\"%s\",\"--ca-cert\",\"%s/ca.crt\",\"--ca-key\",\"%s/ca.key\","
	    "\"--source-max-pending\",\"32\","
	    "\"--log-level\",\"debug\"]", p.state_dir, p.state_dir,
	    p.proxy_user, p.ca_dir, p.ca_dir);
	assert_string_equal(text, want);
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
	assert_int_equal(u, 11);
	assert_string_equal(cJSON_GetArrayItem(a, u + 1)->valuestring,
	    p.proxy_user);
	assert_int_equal(cJSON_GetArraySize(a), 21);
	cJSON_Delete(a);
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
	    "/usr/lib/cordon/cordon-proxy", NULL, 0, NULL, 32 };
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
	assert_int_equal(array_find(v, "--user"), 11);
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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_subnet),
		cmocka_unit_test(test_params),
		cmocka_unit_test(test_plan_v4),
		cmocka_unit_test(test_plan_v6),
		cmocka_unit_test(test_argv),
		cmocka_unit_test(test_listing),
		cmocka_unit_test(test_network_check),
		cmocka_unit_test(test_create_argv),
		cmocka_unit_test(test_run_args),
		cmocka_unit_test(test_seal_rules),
		cmocka_unit_test(test_unit_text),
		cmocka_unit_test(test_proxy_argv),
		cmocka_unit_test(test_control_path),
		cmocka_unit_test(test_state_write),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
