/*
 * Probes: prove that every sandbox control holds, from inside the sandbox
 * (a Python program run through the real runner) and from outside (the
 * container's `docker inspect`), and record the latest result per net mode
 * so the runner can refuse jobs when a control has failed or gone stale.
 * The probe's own output is untrusted: every field is required and a
 * missing or malformed field fails the control that needs it.
 */
#ifndef CORDON_PROBE_PROBE_H
#define CORDON_PROBE_PROBE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/config.h"

#define PROBE_MAX_CONTROLS 24
#define PROBE_IMAGE_MAX 80		/* "sha256:" + 64 hex + NUL fits */

struct probe_control {
	const char *name;		/* static, e.g. "rootfs_readonly" */
	char expected[160];
	char observed[320];
	bool pass;
};

struct probe_report {
	char mode[8];			/* "none" or "proxy" */
	struct probe_control controls[PROBE_MAX_CONTROLS];
	size_t ncontrols;
	bool pass;			/* every control passed */
	int64_t at_ms;			/* wall clock when it ran */
	char image[PROBE_IMAGE_MAX];	/* the image ID it ran in; "" unknown */
};

/* What the probe expects, derived from the config (and the host). */
struct probe_expect {
	const struct config *config;
	const char *mode;		/* "none" or "proxy" */
	const char *host_release;	/* uname -r of the host */
	const char *runtime;		/* runtime the container must use */
	bool runtime_is_runsc;		/* dockerd registers it with runsc */
	const char *marker_var;		/* host env var that must not leak */
	const char *proxy_url;		/* proxy mode: http://gw:port, else NULL */
};

/* The Python program run inside the sandbox; it prints one JSON object.
 * Returns a malloc'd string (caller frees) or NULL on ENOMEM. */
char *probe_program(const struct probe_expect *e);

/* Evaluates the inside view (the program's stdout) and the outside view
 * (the `docker inspect` JSON array of the probe's container) into rep.
 * Never fails: malformed input fails the controls concerned. Pure. */
void probe_evaluate(const struct probe_expect *e, const char *inside,
    size_t inside_len, const char *inspect, size_t inspect_len,
    struct probe_report *rep);

/* JSON of a report (caller cJSON_Deletes). */
cJSON *probe_report_to_json(const struct probe_report *rep);

/*
 * The progress line `cordon probe` prints on a terminal for one control:
 * "cordon probe: NAME ok (S.S s)\n", or "... NAME failed (S.S s): OBSERVED"
 * (OBSERVED cut to fit), ms since the probe started. Pure. The number of
 * bytes written, or -ENOSPC (buf then holds "" when len > 0).
 */
int probe_progress_line(const struct probe_control *ctl, int64_t ms,
    char *buf, size_t len);

/* Records rep as the latest result for its mode in STATE_DIR. */
int probe_state_write(const struct config *c, const struct probe_report *rep);

/* Whether jobs in mode may run in image (the pinned image ID; NULL or ""
 * does not compare): 0 when require_probe is off or the latest probe for
 * mode passed less than probe_max_age_s ago in that image; otherwise
 * -EPERM (failed, in whichever image: the failing controls are named in
 * err), -ESTALE (too old, or made with another image or none recorded)
 * or -ENOENT (never probed), with a one-line reason in err. now_ms is the
 * wall clock. */
int probe_state_check(const struct config *c, const char *mode,
    const char *image, int64_t now_ms, char *err, size_t errlen);

/* One run of the probe program, as probe_run hands it to its ops. */
struct probe_job {
	const char *code;		/* the program (probe_program) */
	size_t code_len;
	const char *mode;		/* "none" or "proxy" */
	bool warm;			/* in a warm (pooled) container */
	bool debug;			/* in the mode's debug runtime */
	const char *session;		/* its container's label: probe-HEX */
};

/* What a run gave back. The buffers are malloc'd; probe_run frees them
 * (probe_outcome_cleanup) whatever the run returned. */
struct probe_outcome {
	char *out;			/* its stdout: the inside view */
	size_t out_len;
	char *err;			/* its stderr */
	size_t err_len;
	char *inspect;			/* its container's `docker inspect` */
	size_t inspect_len;		/*   (outside view); NULL: not seen */
	char container[64];		/* its name */
	bool warm;			/* it ran in a pooled container */
	const char *run_status;		/* static: how the run ended */
	char image[PROBE_IMAGE_MAX];	/* the image ID the run used */
	char debug_log[320];		/* debug: its runsc logs, or "" */
};

/* How probe_run runs the program: the runner supplies these (through the
 * real runner, inspecting the container from the host); tests fake them.
 * The probe library never calls docker itself. */
struct probe_ops {
	/* Runs job and fills *out (zeroed on entry). 0, or a negative errno
	 * with a one-line reason in err. */
	int (*run)(void *data, const struct probe_job *job,
	    struct probe_outcome *out, char *err, size_t errlen);
};

struct probe_run_opts {
	const char *mode;		/* "none" or "proxy" */
	bool warm;			/* probe a warm pool's container */
	const char *proxy_url;		/* proxy mode: http://gw:port */
	const char *host_release;	/* uname -r of the host */
	bool runtime_is_runsc;		/* dockerd registers the mode's runtime
					 * (runtime_egress for proxy, else
					 * runtime_offline; with debug, their
					 * runtime_debug* twins) with runsc */
	bool debug;			/* probe the debug runtime (runsc
					 * --debug --strace): the same controls
					 * must hold. Such a report is never
					 * recorded: it does not stand for the
					 * runtime jobs use. */
	const char *stack;		/* the runtime's network stack, as
					 * docker_runtime_stack says ("netstack",
					 * "host", "none"); NULL: unknown. The
					 * report's "network_stack". */
};

/* Runs the probe: sets a random host marker variable that must not reach
 * the sandbox (unset again afterwards), builds the program, runs it
 * through ops->run(data, ...), judges both views into *rep, records the
 * result (probe_state_write; not for o->debug) and builds the report JSON
 * *json: the report plus "container", "warm", "run_status", "debug" and,
 * when it failed, the program's "probe_stderr" (caller cJSON_Deletes;
 * NULL only on ENOMEM).
 * Returns 0 when a report was produced, passed or not (rep->pass); err is
 * then "" or a warning (the result could not be recorded). Otherwise a
 * negative errno with a one-line reason in err: -EINVAL for bad options,
 * -ENOMEM, or the run's own error; *json is NULL and nothing is recorded. */
int probe_run(const struct config *c, const struct probe_run_opts *o,
    const struct probe_ops *ops, void *data, struct probe_report *rep,
    cJSON **json, char *err, size_t errlen);

/* Frees what an outcome owns and zeroes it; accepts a zeroed one. */
void probe_outcome_cleanup(struct probe_outcome *out);

/* Reads the latest recorded report summary for mode: pass flag, time and
 * failing control names (comma-separated, "" when none). 0 or -errno. */
int probe_state_read(const struct config *c, const char *mode, bool *pass,
    int64_t *at_ms, char *failed, size_t failedlen);
/* The image ID the latest record for mode was made in ("" when the record
 * has none: made before records carried it). 0 or -errno. */
int probe_state_image(const struct config *c, const char *mode,
    char image[PROBE_IMAGE_MAX]);

/* How long a probe may hold the probe lock, so how long another waits for
 * it: the probe's run (90 s) and a warm container's start (60 s), plus
 * room, plus its wait for a run slot (limits.queue_timeout_s). */
#define PROBE_LOCK_WAIT_MS 180000
int64_t probe_lock_wait_ms(const struct config *c);

/* Takes the host-wide probe lock (STATE_DIR/probe.lock: one probe at a
 * time on the host, whatever the mode or the process), waiting until
 * deadline_ms (monotonic) or *cancel (may be NULL). Returns the
 * descriptor to pass to probe_unlock, or a negative errno with a one-line
 * reason in err (-ETIMEDOUT, -EINTR, or why the file cannot be had). */
int probe_lock(const struct config *c, int64_t deadline_ms,
    const atomic_int *cancel, char *err, size_t errlen);
void probe_unlock(int fd);

/* How probe_state_ensure refreshes a stale record: supplied by the
 * runner (a real probe), faked by tests. */
struct probe_auto {
	/* Probes mode and records the result (probe_state_write), called
	 * with the probe lock held. 0 when a result was recorded, passed
	 * or not; else a negative errno with a one-line reason in err. */
	int (*probe)(void *data, const char *mode, char *err, size_t errlen);
	/* One line for a person (the CLI prints it on stderr); may be
	 * NULL. The library itself never prints. */
	void (*note)(void *data, const char *msg);
	void *data;
	const atomic_int *cancel;	/* may be NULL */
	int64_t wait_ms;		/* for the probe lock; 0: default
					 * probe_lock_wait_ms */
};

/* probe_state_check, except that a passed record gone stale (-ESTALE: too
 * old, or made in another image than image) is
 * refreshed first when c->probe_auto is on and a is not NULL: under the
 * probe lock, the record is read again (another process may have probed
 * meanwhile: then its result stands) and, still stale, a->probe runs.
 * The job goes on only when the record then passes: returns 0, or what
 * probe_state_check returns for the new record (-EPERM for a failed
 * probe, as before); -ESTALE with the reason when the probe could not
 * run or the lock could not be had in time. Failed (-EPERM) and missing
 * (-ENOENT) records are refused as by probe_state_check, never probed. */
int probe_state_ensure(const struct config *c, const char *mode,
    const char *image, const struct probe_auto *a, char *err,
    size_t errlen);

#endif
