/*
 * The cmocka set-up and tear-down that the cordon-proxy integration suites
 * share around the loopback fixture (proxy_fixture.c), and their check for
 * root and their CONNECT authorities (px_auth): one copy instead of one
 * per suite.
 */
#include "proxy_fixture.h"

#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

char *
px_auth(const char *host, uint16_t port)
{
	static char buf[4][300];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s:%u", host, port);
	return buf[i];
}

void
fx_raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int
fx_group_setup(void **state)
{
	(void)state;
	return fx_start();
}

int
fx_group_setup_nofile(void **state)
{
	(void)state;
	fx_raise_nofile();
	return fx_start();
}

int
fx_group_teardown(void **state)
{
	(void)state;
	px_kill_all();
	fx_stop();
	return 0;
}

int
fx_test_teardown(void **state)
{
	(void)state;
	px_kill_all();
	return 0;
}

int
fx_need_root(const char *suite, const char *why)
{
	const char *e2e = getenv("CORDON_E2E");
	int skip = e2e != NULL && strcmp(e2e, "skip") == 0;

	if (geteuid() == 0)
		return 0;
	fprintf(stderr, "%s needs root (%s)%s\n", suite, why,
	    skip ? ": skipped (CORDON_E2E=skip)" : "");
	return skip ? 77 : 1;
}
