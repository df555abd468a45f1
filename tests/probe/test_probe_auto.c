/* Unit tests for probe_state_ensure with a fake probe: a stale record is
 * refreshed (once host-wide, however many runs find it stale at once),
 * failed and missing records are refused as before and never probed,
 * probe_auto off keeps the old refusal, and waiters honour their deadline
 * and cancel flag. Processes are real (fork), the probe is not. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"
#include "probe/probe.h"

static struct config cfg;
static char dir[64], calls_path[128];

/* What the fake probe records. */
enum outcome { REC_PASS, REC_FAIL, REC_ERROR };

struct fake {
	enum outcome outcome;
	const char *image;		/* the probe "ran" in this image */
	int sleep_ms;
	int calls;
	char notes[4][400];
	int nnotes;
};

static void
write_record_in(bool pass, int64_t at_ms, const char *image)
{
	struct probe_report rep = { .mode = "none", .pass = pass,
	    .at_ms = at_ms, .ncontrols = 1 };

	snprintf(rep.image, sizeof(rep.image), "%s", image != NULL ? image :
	    "");
	rep.controls[0].name = "capabilities";
	rep.controls[0].pass = pass;
	assert_int_equal(probe_state_write(&cfg, &rep), 0);
}

static void
write_record(bool pass, int64_t at_ms)
{
	write_record_in(pass, at_ms, NULL);
}

static int64_t
stale_ms(void)
{
	return time_wall_ms() - (cfg.probe_max_age_s + 10) * 1000;
}

/* Appends a byte to calls_path: counts probes across processes. */
static void
count_call(void)
{
	int fd = open(calls_path, O_WRONLY | O_APPEND | O_CREAT, 0600);

	if (fd >= 0) {
		(void)write(fd, "x", 1);
		close(fd);
	}
}

static int
fake_probe(void *data, const char *mode, char *err, size_t errlen)
{
	struct fake *f = data;

	f->calls++;
	count_call();
	assert_string_equal(mode, "none");
	if (f->sleep_ms > 0)
		(void)poll(NULL, 0, f->sleep_ms);
	if (f->outcome == REC_ERROR) {
		snprintf(err, errlen, "docker exploded");
		return -EIO;
	}
	write_record_in(f->outcome == REC_PASS, time_wall_ms(), f->image);
	return 0;
}

static void
fake_note(void *data, const char *msg)
{
	struct fake *f = data;

	if (f->nnotes < 4)
		snprintf(f->notes[f->nnotes++], sizeof(f->notes[0]), "%s", msg);
}

static struct probe_auto
auto_of(struct fake *f)
{
	return (struct probe_auto){ .probe = fake_probe, .note = fake_note,
	    .data = f };
}

static size_t
calls_seen(void)
{
	struct stat st;

	return stat(calls_path, &st) == 0 ? (size_t)st.st_size : 0;
}

static int
setup(void **state)
{
	(void)state;
	config_defaults(&cfg);
	strcpy(dir, "/tmp/cordon-probe-auto.XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(cfg.state_dir, sizeof(cfg.state_dir), "%s", dir);
	snprintf(calls_path, sizeof(calls_path), "%s/calls", dir);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	return util_rm_rf(dir);
}

static void
reset(void)
{
	char p[160];

	unlink(calls_path);
	snprintf(p, sizeof(p), "%s/probe-none.json", dir);
	unlink(p);
	cfg.probe_auto = true;
}

static void
test_fresh_no_probe(void **state)
{
	struct fake f = { .outcome = REC_PASS };
	struct probe_auto a = auto_of(&f);
	char err[512] = "";
	(void)state;
	reset();
	write_record(true, time_wall_ms());
	assert_int_equal(probe_state_ensure(&cfg, "none", NULL, &a, err,
	    sizeof(err)), 0);
	assert_int_equal(f.calls, 0);
	assert_int_equal(f.nnotes, 0);
}

static void
test_stale_probes_then_runs(void **state)
{
	struct fake f = { .outcome = REC_PASS };
	struct probe_auto a = auto_of(&f);
	char err[512] = "";
	int64_t at = 0, before = time_wall_ms();
	char failed[64];
	bool pass = false;
	(void)state;
	reset();
	write_record(true, stale_ms());
	assert_int_equal(probe_state_ensure(&cfg, "none", NULL, &a, err,
	    sizeof(err)), 0);
	assert_int_equal(f.calls, 1);
	assert_int_equal(f.nnotes, 2);
	assert_non_null(strstr(f.notes[0], "is older than 3600s: probing"));
	assert_non_null(strstr(f.notes[0], "probing before the run"));
	assert_non_null(strstr(f.notes[1], "passed in"));
	assert_int_equal(probe_state_read(&cfg, "none", &pass, &at, failed,
	    sizeof(failed)), 0);
	assert_true(pass);
	assert_true(at >= before);
	/* Fresh now: the next run does not probe again. */
	assert_int_equal(probe_state_ensure(&cfg, "none", NULL, &a, err,
	    sizeof(err)), 0);
	assert_int_equal(f.calls, 1);
}

static void
test_refusals_unchanged(void **state)
{
	struct fake f = { .outcome = REC_PASS };
	struct probe_auto a = auto_of(&f);
	char err[512] = "";
	(void)state;
	reset();
	/* Never probed: a person runs the first probe. */
	assert_int_equal(probe_state_ensure(&cfg, "none", NULL, &a, err,
	    sizeof(err)), -ENOENT);
	/* Failed, however old: refused, never probed again by a run. */
	write_record(false, time_wall_ms());
	assert_int_equal(probe_state_ensure(&cfg, "none", NULL, &a, err,
	    sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "capabilities"));
	write_record(false, stale_ms());
	assert_int_equal(probe_state_ensure(&cfg, "none", NULL, &a, err,
	    sizeof(err)), -EPERM);
	/* probe_auto off, or no probe supplied: stale is refused. */
	write_record(true, stale_ms());
	cfg.probe_auto = false;
	assert_int_equal(probe_state_ensure(&cfg, "none", NULL, &a, err,
	    sizeof(err)), -ESTALE);
	assert_non_null(strstr(err, "cordon probe --net none"));
	cfg.probe_auto = true;
	assert_int_equal(probe_state_ensure(&cfg, "none", NULL, NULL, err,
	    sizeof(err)), -ESTALE);
	assert_int_equal(f.calls, 0);
	assert_int_equal(f.nnotes, 0);
}

static void
test_probe_fails_or_errors(void **state)
{
	struct fake f = { .outcome = REC_FAIL };
	struct probe_auto a = auto_of(&f);
	char err[512] = "";
	(void)state;
	reset();
	write_record(true, stale_ms());
	assert_int_equal(probe_state_ensure(&cfg, "none", NULL, &a, err,
	    sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "failed (capabilities)"));
	assert_int_equal(f.calls, 1);
	/* A probe that cannot run leaves the record stale: refused. */
	f.outcome = REC_ERROR;
	write_record(true, stale_ms());
	assert_int_equal(probe_state_ensure(&cfg, "none", NULL, &a, err,
	    sizeof(err)), -ESTALE);
	assert_non_null(strstr(err, "automatic probe did not run: docker "
	    "exploded"));
	assert_int_equal(f.calls, 2);
}

/* A new image ID invalidates a fresh record: the run probes in the new
 * image first; the record then names it. */
static void
test_new_image_probes(void **state)
{
	static const char a_img[] = "sha256:aaaa", b_img[] = "sha256:bbbb";
	struct fake f = { .outcome = REC_PASS, .image = b_img };
	struct probe_auto a = auto_of(&f);
	char err[512] = "", img[PROBE_IMAGE_MAX];
	(void)state;
	reset();
	write_record_in(true, time_wall_ms(), a_img);
	assert_int_equal(probe_state_ensure(&cfg, "none", a_img, &a, err,
	    sizeof(err)), 0);
	assert_int_equal(f.calls, 0);
	assert_int_equal(probe_state_ensure(&cfg, "none", b_img, &a, err,
	    sizeof(err)), 0);
	assert_int_equal(f.calls, 1);
	assert_string_equal(f.notes[0], "the latest probe for --net none ran "
	    "in image sha256:aaaa, not the pinned sha256:bbbb: probing "
	    "before the run");
	assert_int_equal(probe_state_image(&cfg, "none", img), 0);
	assert_string_equal(img, b_img);
	/* The probe ran in yet another image (re-pinned meanwhile): this
	 * run, admitted for b, is refused rather than run unproven. */
	f.image = "sha256:cccc";
	write_record_in(true, time_wall_ms(), a_img);
	assert_int_equal(probe_state_ensure(&cfg, "none", b_img, &a, err,
	    sizeof(err)), -ESTALE);
	assert_non_null(strstr(err, "not the pinned sha256:bbbb"));
	/* probe_auto off: a new image is refused until a person probes. */
	cfg.probe_auto = false;
	assert_int_equal(probe_state_ensure(&cfg, "none", a_img, &a, err,
	    sizeof(err)), -ESTALE);
	assert_int_equal(f.calls, 2);
}

/* A child holds the probe lock for hold_ms, then (when record) writes a
 * fresh passing record and exits. Returns its pid once it holds it. */
static pid_t
holder(int hold_ms, bool record)
{
	int p[2];
	pid_t pid;
	char ch;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char err[256];
		int fd = probe_lock(&cfg, 0, NULL, err, sizeof(err));
		close(p[0]);
		if (fd < 0)
			_exit(1);
		(void)write(p[1], "x", 1);
		(void)poll(NULL, 0, hold_ms);
		if (record)
			write_record(true, time_wall_ms());
		_exit(0);
	}
	close(p[1]);
	assert_int_equal(read(p[0], &ch, 1), 1);
	close(p[0]);
	return pid;
}

static void
reap(pid_t pid)
{
	int status;

	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void
test_waits_for_probe_in_progress(void **state)
{
	struct fake f = { .outcome = REC_PASS };
	struct probe_auto a = auto_of(&f);
	char err[512] = "";
	int64_t t0;
	pid_t pid;
	(void)state;
	reset();
	write_record(true, stale_ms());
	pid = holder(300, true);
	t0 = time_mono_ms();
	assert_int_equal(probe_state_ensure(&cfg, "none", NULL, &a, err,
	    sizeof(err)), 0);
	assert_true(time_mono_ms() - t0 >= 250);
	/* The other probe's result stands: no second probe. */
	assert_int_equal(f.calls, 0);
	assert_int_equal(f.nnotes, 2);
	assert_non_null(strstr(f.notes[0], "waiting for the probe in "
	    "progress"));
	assert_non_null(strstr(f.notes[1], "passed in another run"));
	reap(pid);
}

static void
test_wait_deadline_and_cancel(void **state)
{
	struct fake f = { .outcome = REC_PASS };
	struct probe_auto a = auto_of(&f);
	atomic_int cancel = 1;
	char err[512] = "";
	int64_t t0;
	pid_t pid;
	(void)state;
	reset();
	write_record(true, stale_ms());
	pid = holder(1500, false);
	a.wait_ms = 200;
	t0 = time_mono_ms();
	assert_int_equal(probe_state_ensure(&cfg, "none", NULL, &a, err,
	    sizeof(err)), -ESTALE);
	assert_true(time_mono_ms() - t0 < 1200);
	assert_non_null(strstr(err, "no probe could be run: another probe "
	    "still holds"));
	a.wait_ms = 60000;
	a.cancel = &cancel;
	assert_int_equal(probe_state_ensure(&cfg, "none", NULL, &a, err,
	    sizeof(err)), -ESTALE);
	assert_non_null(strstr(err, "cancelled"));
	assert_int_equal(f.calls, 0);
	reap(pid);
}

/* Four processes find the record stale at once: one probe runs, all four
 * go on. */
static void
test_one_probe_host_wide(void **state)
{
	pid_t pids[4];
	(void)state;
	reset();
	write_record(true, stale_ms());
	for (int i = 0; i < 4; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			struct fake f = { .outcome = REC_PASS,
			    .sleep_ms = 400 };
			struct probe_auto a = auto_of(&f);
			char err[512];
			_exit(probe_state_ensure(&cfg, "none", NULL, &a, err,
			    sizeof(err)) == 0 ? 0 : 1);
		}
	}
	for (int i = 0; i < 4; i++)
		reap(pids[i]);
	assert_int_equal(calls_seen(), 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fresh_no_probe),
		cmocka_unit_test(test_stale_probes_then_runs),
		cmocka_unit_test(test_refusals_unchanged),
		cmocka_unit_test(test_probe_fails_or_errors),
		cmocka_unit_test(test_new_image_probes),
		cmocka_unit_test(test_waits_for_probe_in_progress),
		cmocka_unit_test(test_wait_deadline_and_cancel),
		cmocka_unit_test(test_one_probe_host_wide),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
