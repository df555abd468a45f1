/*
 * Unit tests for what `cordon net up` checks before it creates anything:
 * the --proxy-arg table (reserved options, getopt_long's abbreviations,
 * "--"), and netsetup_up itself refusing, with the real cordon-proxy's
 * --check, an allowlist with a typo (FILE:LINE), a missing proxy and a
 * reserved argument, each leaving no state directory behind. Needs no
 * docker and no root: nothing is reached past the checks.
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
#include "netsetup/netsetup.h"

struct args_case {
	const char *args[3];
	size_t n;
	const char *want;	/* NULL: accepted; else a part of the reason */
};

static void
test_proxy_args(void **state)
{
	static const struct args_case cases[] = {
		{ { NULL }, 0, NULL },
		{ { "--resolver=127.0.0.1:53" }, 1, NULL },
		{ { "--allow-address", "127.0.0.2" }, 2, NULL },
		{ { "--log-level", "debug" }, 2, NULL },
		{ { "--max-connections=64", "--no-splice" }, 2, NULL },
		{ { "--metrics", "127.0.0.1:9000" }, 2, NULL },
		/* Not an option: the proxy's --check refuses it. */
		{ { "stray" }, 1, NULL },
		{ { "-h" }, 1, NULL },
		{ { "--help" }, 1, "not for a running proxy" },
		{ { "--he" }, 1, "--help" },
		{ { "--log-level", "--help" }, 2, "--help" },
		{ { "--check" }, 1, "--check" },
		{ { "--make-ca=/tmp/x" }, 1, "--make-ca" },
		{ { "--ca-roots", "/x" }, 2, "--ca-roots" },
		{ { "--listen=0.0.0.0:1" }, 1, "net up sets --listen itself" },
		{ { "--allowlist", "/x" }, 2, "--allowlist" },
		{ { "--control=/x" }, 1, "--control" },
		{ { "--state=/x" }, 1, "--state" },
		{ { "--user", "root" }, 2, "--user" },
		{ { "--ca-cert=/x" }, 1, "--ca-cert" },
		{ { "--secrets=/x" }, 1, "--secrets" },
		{ { "--transparent=1.2.3.4:5" }, 1, "--transparent" },
		{ { "--dns-listen=1.2.3.4:5" }, 1, "--dns-listen" },
		{ { "--access-log=-" }, 1, "--access-log" },
		{ { "--source-max-pending=0" }, 1, "--source-max-pending" },
		{ { "--resolver=1.1.1.1", "--" }, 2, "'--'" },
	};
	char err[256];
	int rc;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = '\0';
		rc = netsetup_proxy_args_check(cases[i].args, cases[i].n, err,
		    sizeof(err));
		if (cases[i].want == NULL) {
			if (rc != 0)
				fail_msg("case %zu refused: %s", i, err);
			continue;
		}
		if (rc != -EINVAL || strstr(err, cases[i].want) == NULL)
			fail_msg("case %zu: rc %d, err '%s', want '%s'", i, rc,
			    err, cases[i].want);
	}
}

struct fixture {
	char dir[64];
	char allow[128];
	char proxy[512];
	struct netsetup_params p;
};

static int
fixture_setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	const char *root = getenv("CORDON_BUILD_ROOT");
	struct config c;
	char err[256];
	FILE *fp;

	if (f == NULL || root == NULL)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/cordon-upcheck.XXXXXX");
	if (mkdtemp(f->dir) == NULL)
		return -1;
	snprintf(f->allow, sizeof(f->allow), "%s/typo.list", f->dir);
	snprintf(f->proxy, sizeof(f->proxy), "%s/proxy/cordon-proxy", root);
	if ((fp = fopen(f->allow, "w")) == NULL)
		return -1;
	fputs("# a typo on line 3\ngood.example.com\nbad.example.com:99999\n",
	    fp);
	fclose(fp);
	config_defaults(&c);
	snprintf(c.state_dir, sizeof(c.state_dir), "%s/state", f->dir);
	/* Names of its own: were a check to let up through, it would not
	 * touch a real set-up. */
	snprintf(c.egress_network, sizeof(c.egress_network), "cordon-ut-up");
	snprintf(c.egress_bridge, sizeof(c.egress_bridge), "cordonUT0");
	snprintf(c.egress_subnet, sizeof(c.egress_subnet), "10.213.254.0/24");
	if (netsetup_params_init(&f->p, &c, NULL, err, sizeof(err)) < 0)
		return -1;
	*state = f;
	return 0;
}

static int
fixture_teardown(void **state)
{
	struct fixture *f = *state;

	(void)util_rm_rf(f->dir);
	free(f);
	return 0;
}

/* netsetup_up with o: refused with want in err, nothing listed as done,
 * and no state directory left. */
static void
up_refused(struct fixture *f, const struct netsetup_up_opts *o,
    const char *want)
{
	char err[1024], *changes = NULL;
	int rc;

	rc = netsetup_up(&f->p, o, &changes, err, sizeof(err));
	if (rc >= 0 || strstr(err, want) == NULL ||
	    strstr(err, "nothing changed") == NULL)
		fail_msg("rc %d, err '%s', want '%s'", rc, err, want);
	assert_non_null(changes);
	assert_string_equal(changes, "");
	free(changes);
	if (access(f->p.state_dir, F_OK) == 0)
		fail_msg("%s left behind", f->p.state_dir);
}

static void
test_up_typo(void **state)
{
	struct fixture *f = *state;
	struct netsetup_up_opts o = { f->allow, f->proxy, NULL, 0, NULL, 32,
	    NULL, 0, 5 };
	char want[200];

	assert_int_equal(access(f->proxy, X_OK), 0);
	snprintf(want, sizeof(want), "%s:3: port 99999", f->allow);
	up_refused(f, &o, want);
}

static void
test_up_no_proxy(void **state)
{
	struct fixture *f = *state;
	char bin[128];
	struct netsetup_up_opts o = { f->allow, bin, NULL, 0, NULL, 32,
	    NULL, 0, 5 };

	snprintf(bin, sizeof(bin), "%s/no-such-proxy", f->dir);
	up_refused(f, &o, "no-such-proxy: No such file");
}

static void
test_up_reserved_arg(void **state)
{
	struct fixture *f = *state;
	const char *args[] = { "--log-level", "info", "--help" };
	struct netsetup_up_opts o = { f->allow, f->proxy, args, 3, NULL, 32,
	    NULL, 0, 5 };

	up_refused(f, &o, "--proxy-arg '--help'");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_proxy_args),
		cmocka_unit_test_setup_teardown(test_up_typo, fixture_setup,
		    fixture_teardown),
		cmocka_unit_test_setup_teardown(test_up_no_proxy,
		    fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(test_up_reserved_arg,
		    fixture_setup, fixture_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
