/*
 * `cordon probe [--net none|proxy] [--profile NAME] [--warm | --debug]`:
 * runs the probe program in the profile's image (default minimal)
 * through the real runner (the same path as a user's job), inspects the
 * probe's own container from the host while it runs, judges both views,
 * records the result for the runner's require_probe check, and prints
 * JSON (runner_probe does the work). Exit 0 only when every control
 * passes. --debug (root only) probes the debug runtime instead and
 * records nothing.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/json.h"
#include "common/util.h"
#include "probe/probe.h"
#include "cli/cmd.h"
#include "runner/probe_ops.h"
#include "runner/runner.h"

static int
probe_usage_to(FILE *f, int status)
{
	fprintf(f, "usage: cordon probe [--net none|proxy] [--profile "
	    "NAME] [--warm | --debug]\n"
	    "  --profile  the image profile to probe (default minimal); each "
	    "has its\n           own records\n"
	    "  --warm   probe a container of a warm pool (pre-started, its "
	    "program\n           written later), the path `cordon serve "
	    "--pool` runs take\n"
	    "  --debug  root only: probe the debug runtime (`cordon run "
	    "--debug`);\n           the result is not recorded\n");
	return status;
}

static int
probe_usage(void)
{
	return probe_usage_to(stderr, 2);
}

/* What this process left running is removed by our owner label before
 * exit, as serve's shutdown does, and said on stderr: what is still there
 * after the wait, or could not be removed or looked for, on a line that
 * starts RUNNER_PROBE_WARNING (serve logs those as warnings). Seen in CI: a
 * scheduled warm probe's container Up a minute after its probe had
 * exited with a pass. The daemon's log showed why: the runtime hung
 * tearing that sandbox down (its state query timed out; its shim went
 * about 100 s after the removal was asked for), so the removal the daemon
 * had accepted stayed pending. What is still listed after the sweep is
 * waited for a while, then named as pending, so whoever runs the probe
 * (serve logs this stderr) can tell a slow runtime from a leak. */
#define PROBE_LEFT_WAIT_S 5

static void
probe_sweep(const struct config *c, bool say_errors)
{
	char names[256], err[512];	/* err: gc's, with docker's words */
	int left = 0, still = 0, rc;

	/* What was found: nothing (or nothing it could see: said, except
	 * after a probe docker refused); some, asked to go; or some whose
	 * removal failed (a runtime hung on them: docker's rm timed out),
	 * named all the same. What was found is then waited for. */
	rc = runner_gc_owner(c, (long)getpid(), &left, names, sizeof(names),
	    err, sizeof(err));
	if (rc < 0 && names[0] == '\0') {
		if (say_errors)
			fprintf(stderr, RUNNER_PROBE_WARNING "cannot look for "
			    "leftover containers: %s\n", err);
		return;
	}
	if (rc == 0 && left == 0)
		return;
	if (rc < 0)
		fprintf(stderr, RUNNER_PROBE_WARNING "leftover container(s) of "
		    "this probe found, their removal failed (%s): %s\n", err,
		    names);
	else
		fprintf(stderr, "cordon probe: %d leftover container(s) of this "
		    "probe found, removal asked: %s\n", left, names);
	for (int i = 0; i <= PROBE_LEFT_WAIT_S; i++) {
		if (i > 0)
			sleep(1);
		if (runner_gc_owner_left(c, (long)getpid(), &still, names,
		    sizeof(names), err, sizeof(err)) < 0) {
			fprintf(stderr, RUNNER_PROBE_WARNING "cannot look for "
			    "leftover containers: %s\n", err);
			return;
		}
		if (still == 0) {
			fprintf(stderr, "cordon probe: leftover container(s) "
			    "removed after %d s\n", i);
			return;
		}
	}
	fprintf(stderr, RUNNER_PROBE_WARNING "%d container(s) of this probe "
	    "still there %d s after their removal was asked (pending in the "
	    "daemon: a runtime slow to stop the sandbox): %s\n", still,
	    PROBE_LEFT_WAIT_S, names);
}

int
cmd_probe(int argc, char **argv)
{
	struct config c;
	struct probe_report rep;
	char err[512], pl[256], *line;
	int64_t t0;
	bool tty;
	const char *mode = "none", *profile = CONFIG_PROFILE_DEFAULT;
	bool warm = false, debug = false;
	cJSON *j;

	if (cmd_help_asked(argc, argv))
		return probe_usage_to(stdout, 0);
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--net") == 0 && i + 1 < argc)
			mode = argv[++i];
		else if (strcmp(argv[i], "--profile") == 0 && i + 1 < argc)
			profile = argv[++i];
		else if (strcmp(argv[i], "--warm") == 0)
			warm = true;
		else if (strcmp(argv[i], "--debug") == 0)
			debug = true;
		else
			return probe_usage();
	}
	if (strcmp(mode, "none") != 0 && strcmp(mode, "proxy") != 0) {
		fprintf(stderr, "cordon probe: --net must be none or proxy, "
		    "not '%s'\n", mode);
		return probe_usage();
	}
	if (warm && debug)
		return probe_usage();
	if (config_load(&c, NULL, err, sizeof(err)) < 0) {
		fprintf(stderr, "cordon probe: %s\n", err);
		return 1;
	}
	if (config_profile_use(&c, profile, NULL, err, sizeof(err)) < 0) {
		fprintf(stderr, "cordon probe: %s\n", err);
		return 1;
	}
	/* Progress on a terminal only: the controls are judged together when
	 * the sandbox's run ends, so each line carries that time. */
	tty = isatty(STDERR_FILENO) == 1;
	t0 = time_mono_ms();
	if (tty)
		fprintf(stderr, "cordon probe: running the probe program in a "
		    "sandbox (--net %s%s%s)...\n", mode,
		    warm ? ", warm" : "", debug ? ", debug runtime" : "");
	if (runner_probe(&c, runner_run, mode, warm, debug, &rep, &j, err,
	    sizeof(err)) < 0) {
		fprintf(stderr, "cordon probe: %s\n", err);
		probe_sweep(&c, false);
		return 1;
	}
	probe_sweep(&c, true);
	for (size_t i = 0; tty && i < rep.ncontrols; i++)
		if (probe_progress_line(&rep.controls[i], time_mono_ms() - t0,
		    pl, sizeof(pl)) > 0)
			fputs(pl, stderr);
	/* A report with a warning (it could not be recorded): marked, so
	 * serve's scheduled probe logs it as one. */
	if (err[0] != '\0')
		fprintf(stderr, RUNNER_PROBE_WARNING "%s\n", err);
	line = j != NULL ? json_print_line(j) : NULL;
	if (line != NULL)
		fputs(line, stdout);
	free(line);
	cJSON_Delete(j);
	return rep.pass ? 0 : 1;
}
