/*
 * The cmocka suites' temporary directory (tmpdir.h): one copy of the
 * mkdtemp set-up and rm -rf tear-down that each suite carried.
 */
#include "tmpdir.h"

#include <errno.h>	/* program_invocation_short_name (_GNU_SOURCE) */
#include <stdio.h>
#include <stdlib.h>

#include "common/util.h"

char tmpdir[64];

int
tmpdir_setup(void **state)
{
	int n;

	(void)state;
	n = snprintf(tmpdir, sizeof(tmpdir), "/tmp/cordon-test-%.30s.XXXXXX",
	    program_invocation_short_name);
	if (n < 0 || (size_t)n >= sizeof(tmpdir) || mkdtemp(tmpdir) == NULL) {
		tmpdir[0] = '\0';
		return -1;
	}
	return 0;
}

int
tmpdir_teardown(void **state)
{
	int rc = 0;

	(void)state;
	if (tmpdir[0] != '\0')
		rc = util_rm_rf(tmpdir);
	tmpdir[0] = '\0';
	return rc;
}
