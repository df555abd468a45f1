/* Unit tests of the doctor's daemon line: docker info's SecurityOptions,
 * DockerRootDir and cgroup fields (as dockerd 20.10 printed them here for
 * a plain root, a userns-remap and a rootless daemon), /etc/subuid ranges,
 * and the verdict and words for each mode. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "runner/doctor.h"

#define ROOT_INFO "{\"SecurityOptions\":[\"name=seccomp,profile=default\"]," \
	"\"DockerRootDir\":\"/var/lib/docker\",\"CgroupDriver\":\"cgroupfs\"," \
	"\"CgroupVersion\":\"1\"}"
#define USERNS_INFO "{\"SecurityOptions\":[\"name=seccomp,profile=default\"," \
	"\"name=userns\"],\"DockerRootDir\":" \
	"\"/tmp/cordon-userns.iDMTZ2/data/200000.200000\"," \
	"\"CgroupDriver\":\"cgroupfs\",\"CgroupVersion\":\"1\"}"
#define ROOTLESS_INFO "{\"SecurityOptions\":[\"name=seccomp,profile=" \
	"default\",\"name=rootless\"],\"DockerRootDir\":" \
	"\"/home/u/.local/share/docker\",\"CgroupDriver\":\"none\"," \
	"\"CgroupVersion\":\"1\"}"

static void
test_parse(void **state)
{
	static const struct { const char *json; int rc;
	    enum doctor_daemon_mode mode; long uid, gid; int cgv;
	    const char *driver; } rows[] = {
		{ ROOT_INFO, 0, DOCTOR_DAEMON_ROOT, -1, -1, 1, "cgroupfs" },
		{ USERNS_INFO, 0, DOCTOR_DAEMON_USERNS, 200000, 200000, 1,
		  "cgroupfs" },
		{ ROOTLESS_INFO, 0, DOCTOR_DAEMON_ROOTLESS, -1, -1, 1, "none" },
		/* Both named (rootless daemons may run a userns too). */
		{ "{\"SecurityOptions\":[\"name=userns\",\"name=rootless\"]}",
		  0, DOCTOR_DAEMON_ROOTLESS, -1, -1, 0, "" },
		{ "{\"SecurityOptions\":[\"name=rootless\",\"name=userns\"]}",
		  0, DOCTOR_DAEMON_ROOTLESS, -1, -1, 0, "" },
		/* Only whole names count. */
		{ "{\"SecurityOptions\":[\"name=usernsx\",\"name=rootlessy\"]}",
		  0, DOCTOR_DAEMON_ROOT, -1, -1, 0, "" },
		{ "{\"SecurityOptions\":[\"name=userns,x=y\"],"
		  "\"DockerRootDir\":\"/d/10.20\"}", 0, DOCTOR_DAEMON_USERNS,
		  10, 20, 0, "" },
		/* A root dir that is not UID.GID: range unknown. */
		{ "{\"SecurityOptions\":[\"name=userns\"],"
		  "\"DockerRootDir\":\"/var/lib/docker\"}", 0,
		  DOCTOR_DAEMON_USERNS, -1, -1, 0, "" },
		{ "{\"SecurityOptions\":[\"name=userns\"],"
		  "\"DockerRootDir\":\"/d/1.2x\"}", 0, DOCTOR_DAEMON_USERNS,
		  -1, -1, 0, "" },
		{ "{\"SecurityOptions\":[\"name=userns\"],"
		  "\"DockerRootDir\":\"/d/99999999999999999999.1\"}", 0,
		  DOCTOR_DAEMON_USERNS, -1, -1, 0, "" },
		/* No remap outside userns mode, whatever the directory. */
		{ "{\"DockerRootDir\":\"/d/1.2\"}", 0, DOCTOR_DAEMON_ROOT, -1,
		  -1, 0, "" },
		{ "{\"SecurityOptions\":[1,null,\"name=userns\"]}", 0,
		  DOCTOR_DAEMON_USERNS, -1, -1, 0, "" },
		{ "{\"SecurityOptions\":\"name=userns\"}", 0,
		  DOCTOR_DAEMON_ROOT, -1, -1, 0, "" },
		{ "[]", -EBADMSG, DOCTOR_DAEMON_ROOT, -1, -1, 0, "" },
		{ "", -EBADMSG, DOCTOR_DAEMON_ROOT, -1, -1, 0, "" },
	};
	struct doctor_daemon d;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int rc = doctor_daemon_parse(rows[i].json,
		    strlen(rows[i].json), &d);
		if (rc != rows[i].rc || d.mode != rows[i].mode ||
		    d.remap_uid != rows[i].uid || d.remap_gid != rows[i].gid ||
		    d.cgroup_version != rows[i].cgv ||
		    strcmp(d.cgroup_driver, rows[i].driver) != 0)
			fail_msg("row %zu: rc %d mode %d uid %ld gid %ld cg %d "
			    "%s", i, rc, d.mode, d.remap_uid, d.remap_gid,
			    d.cgroup_version, d.cgroup_driver);
	}
}

static void
test_subid(void **state)
{
	static const char text[] = "dockremap:100000:65536\n"
	    "nobody:200000:65536\n" "bad line\n" "x:300000\n"
	    "y:400000:0\n" "z:500000:12x\n" "w:600000:1000";

	(void)state;
	assert_int_equal(doctor_subid_count(text, 200000), 65536);
	assert_int_equal(doctor_subid_count(text, 100000), 65536);
	assert_int_equal(doctor_subid_count(text, 600000), 1000);
	assert_int_equal(doctor_subid_count(text, 300000), -1);
	assert_int_equal(doctor_subid_count(text, 400000), -1);
	assert_int_equal(doctor_subid_count(text, 500000), -1);
	assert_int_equal(doctor_subid_count(text, 0), -1);
	assert_int_equal(doctor_subid_count("", 200000), -1);
}

static void
test_line(void **state)
{
	struct doctor_daemon d;
	struct doctor_line l;

	(void)state;
	assert_int_equal(doctor_daemon_parse(ROOT_INFO, strlen(ROOT_INFO),
	    &d), 0);
	doctor_daemon_line(&d, -1, &l);
	assert_int_equal(l.verdict, DOCTOR_INFO);
	assert_string_equal(l.what, "daemon");
	assert_non_null(strstr(l.detail, "plain root"));
	assert_string_equal(l.hint, "");

	assert_int_equal(doctor_daemon_parse(USERNS_INFO, strlen(USERNS_INFO),
	    &d), 0);
	doctor_daemon_line(&d, 65536, &l);
	assert_int_equal(l.verdict, DOCTOR_OK);
	assert_non_null(strstr(l.detail, "userns-remap: container root is "
	    "host uid 200000, gid 200000 (65536 ids: 200000-265535)"));
	doctor_daemon_line(&d, -1, &l);
	assert_non_null(strstr(l.detail, "host uid 200000, gid 200000;"));
	d.remap_uid = -1;
	doctor_daemon_line(&d, 65536, &l);
	assert_int_equal(l.verdict, DOCTOR_OK);
	assert_non_null(strstr(l.detail, "mapped range unknown"));

	assert_int_equal(doctor_daemon_parse(ROOTLESS_INFO,
	    strlen(ROOTLESS_INFO), &d), 0);
	doctor_daemon_line(&d, -1, &l);
	assert_int_equal(l.verdict, DOCTOR_FAIL);
	assert_non_null(strstr(l.detail, "rootless, cgroup v1 (driver none)"));
	assert_non_null(strstr(l.detail, "--ignore-cgroups"));
	assert_non_null(strstr(l.hint, "userns-remap"));
	d.cgroup_version = 2;
	strcpy(d.cgroup_driver, "systemd");
	doctor_daemon_line(&d, -1, &l);
	assert_int_equal(l.verdict, DOCTOR_WARN);
	assert_non_null(strstr(l.detail, "not proven here"));
	strcpy(d.cgroup_driver, "none");
	doctor_daemon_line(&d, -1, &l);
	assert_int_equal(l.verdict, DOCTOR_FAIL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_subid),
		cmocka_unit_test(test_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
