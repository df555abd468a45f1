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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/config.h"

#define PROBE_MAX_CONTROLS 24

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

/* Records rep as the latest result for its mode in STATE_DIR. */
int probe_state_write(const struct config *c, const struct probe_report *rep);

/* Whether jobs in mode may run: 0 when require_probe is off or the latest
 * probe for mode passed less than probe_max_age_s ago; otherwise -EPERM
 * (failed: the failing controls are named in err), -ESTALE (too old) or
 * -ENOENT (never probed), with a one-line reason in err. now_ms is the
 * wall clock. */
int probe_state_check(const struct config *c, const char *mode,
    int64_t now_ms, char *err, size_t errlen);

/* Reads the latest recorded report summary for mode: pass flag, time and
 * failing control names (comma-separated, "" when none). 0 or -errno. */
int probe_state_read(const struct config *c, const char *mode, bool *pass,
    int64_t *at_ms, char *failed, size_t failedlen);

#endif
