/*
 * A run's request and its result: the types every part of the runner and
 * every front end share, the pure checks of a request against the config,
 * the result's JSON view and the audit line (result.c). runner_run
 * (runner.h) takes the one and fills the other.
 */
#ifndef CORDON_RUNNER_RESULT_H
#define CORDON_RUNNER_RESULT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/config.h"

#define RUNNER_MAX_IN 32		/* --in paths per run */
#define RUNNER_SESSION_MAX 64		/* [A-Za-z0-9._-], at most 64 */
#define RUNNER_NAME_MAX 48		/* "cordon-" + 16 hex */
#define RUNNER_CODE_MAX (16u << 20)	/* bytes of code per run */

enum runner_net { RUNNER_NET_NONE = 0, RUNNER_NET_PROXY };

struct runner_pool;			/* runner/pool.h */

enum runner_status {
	RUNNER_OK = 0,
	RUNNER_TIMEOUT,			/* the deadline passed; we killed it */
	RUNNER_OOM,			/* docker says OOMKilled */
	RUNNER_OUTPUT_TRUNCATED,	/* finished, but a stream hit the cap */
	RUNNER_CLOSED_EARLY,		/* the caller cancelled (*cancel set) */
	RUNNER_SANDBOX_ERROR,		/* the container did not run properly */
};

/* A request. Zero/NULL fields take the config defaults; a value above a
 * config maximum is refused (runner_limits_check), and nothing here can
 * weaken the fixed hardening flags. The caller owns every pointer. */
struct runner_request {
	const void *code;		/* program text (bytes), never on argv */
	size_t code_len;
	const char *lang;		/* NULL (python), "python", "bash" or
					 * "node": the profile must offer it
					 * (config_profile_use) */
	const char *profile;		/* NULL: the config's current profile
					 * (minimal as loaded), or, from
					 * minimal, the first that offers
					 * lang; else the profile's image,
					 * image record and probe records */
	enum runner_net net;
	const char *policy;		/* --net proxy: the egress policy;
					 * NULL: egress_default_policy. Only
					 * with RUNNER_NET_PROXY. */
	int64_t timeout_s;		/* 0: limits.timeout_s */
	uint64_t max_output;		/* per stream; 0: limits.max_output */
	const char *keep;		/* NULL or "both": past max_output, the
					 * first half, a marker line and the
					 * end; "head": the first max_output
					 * bytes; "tail": a marker line and
					 * the end (common/cbuf.h) */
	uint64_t memory;		/* bytes; 0: limits.memory */
	double cpus;			/* 0: limits.cpus */
	const char *in[RUNNER_MAX_IN];	/* host paths, copied to /in */
	size_t nin;
	const char *out_dir;		/* NULL: no --out */
	const char *session;		/* NULL or RUNNER_SESSION_MAX chars */
	const atomic_int *cancel;	/* may be NULL; set (non-zero) from
					 * another thread or a handler */
	const atomic_int *cancel_session;	/* a session's call only:
					 * may be NULL; stops it as cancel
					 * does (its session was asked to
					 * end: the caller's cancel and the
					 * session's are two flags) */
	struct runner_pool *pool;	/* NULL, or take a warm container from
					 * it when the run can use one (no
					 * in/out files, default memory and
					 * cpus); else the run starts cold */
	bool skip_probe_check;		/* only for `cordon probe` itself: no
					 * CLI flag or API field of the service
					 * sets it */
	bool debug;			/* the mode's debug runtime (runsc
					 * --debug --strace, runner/debug.h):
					 * root only (-EPERM otherwise); only
					 * `cordon run --debug` and `cordon
					 * probe --debug` set it, never serve
					 * or mcp. Never a warm container. */
	/* May be NULL: gets the lines a person should see while the run
	 * is held up before it starts (an automatic probe), from the
	 * calling thread. The runner itself never prints. */
	void (*note)(void *note_arg, const char *msg);
	void *note_arg;
	/* May be NULL: live output. Called from the runner's read loop
	 * (the calling thread) with each chunk of the job's stdout (stream
	 * 1) or stderr (2) as it arrives: raw bytes, at most max_output per
	 * stream in all (what follows is only in the result, per keep), in
	 * chunks that end on UTF-8 character boundaries (an incomplete
	 * sequence waits for the rest); with --out, the job's own stdout
	 * only (the wrapper passes the first half of the cap at once and
	 * the rest when the job ends). It must not block: the deadline is
	 * only checked between chunks. jobs/stream.h is a bounded queue
	 * to hand them to another thread. The runner itself never prints. */
	void (*output)(void *output_arg, int stream, const void *data,
	    size_t len);
	void *output_arg;
};

/* A file brought back from /tmp/out (or refused). */
struct runner_file {
	char *path;			/* relative to out_dir; untrusted bytes */
	uint64_t size;
	const char *refused;		/* NULL when written; static reason */
};

/* Where a run's time went after its container was there, in ms (-1: the
 * step did not happen on the way to the result): writing the code to
 * stdin, the program's run until its first output (or, with none, until
 * both output streams closed), learning the exit status after that, the
 * docker CLI's exit after that, the end-state inspections, the removal
 * (-1 when done after the answer). A run stopped by the deadline, a
 * cancel or its cap: the step under way then ends at the stop, the later
 * ones did not happen; stop is the stop itself (the container killed
 * while its streams were drained, then no longer read), -1 for a run that
 * ended by itself. */
struct runner_timing {
	int64_t stdin_ms, run_ms, exit_ms, cli_ms, inspect_ms, remove_ms;
	int64_t stop_ms;
	/* Before and around the container (proxy mode's phases): admit,
	 * the checks before it (request, probe record, egress network,
	 * policy), the wait for a slot excluded (queue_ms); start, a cold
	 * CLI start until the container runs (-1 over the Engine API, whose
	 * start is in run), or a warm run's take from the pool; seal, the
	 * cold seal of its netns; register and unregister, the proxy's
	 * control calls (the credential's handover is in stdin). */
	int64_t admit_ms, start_ms, seal_ms, register_ms, unregister_ms;
};

/* Every step of t to -1 (did not happen). */
void runner_timing_reset(struct runner_timing *t);

/* The effective limits of a run after defaults (runner_limits_resolve). */
struct runner_limits {
	int64_t timeout_s;
	uint64_t max_output;		/* bytes per stream */
	uint64_t memory;		/* bytes */
	double cpus;
	int64_t pids;			/* processes the job may have:
					 * limits.nproc, enforced by gVisor */
};

struct runner_result {
	enum runner_status status;
	int exit_code;			/* container exit code; -1 if none */
	char *out;			/* kept stdout bytes (NUL-terminated) */
	size_t out_len;
	char *err;
	size_t err_len;
	bool out_truncated, err_truncated;
	int64_t duration_ms;
	int64_t queue_ms;		/* waited for a host-wide run slot */
	struct runner_timing timing;
	char container[RUNNER_NAME_MAX];
	bool warm;			/* ran in a container from the pool */
	char code_sha256[65];
	char image[80];			/* the image ID it ran in */
	char profile[CONFIG_PROFILE_MAX + 1];	/* the image's profile */
	char lang[8];			/* "python", "bash" or "node" */
	enum runner_net net;
	bool want_files;		/* --out was requested */
	struct runner_file *files;
	size_t nfiles;
	char files_error[128];		/* "" or why nothing/only part came back */
	char policy[CONFIG_POLICY_MAX + 1];	/* proxy mode: the policy */
	/* Proxy mode: the proxy's report of this run's egress, the object
	 * {"egress":[...],"allowed":N,"denied":N[,"egress_truncated":true,
	 * "egress_dropped":N]} (owned), or NULL with egress_error saying
	 * why it could not be had. */
	cJSON *egress;
	char egress_error[128];
	int64_t egress_register_ms;	/* proxy mode: the control calls' */
	int64_t egress_unregister_ms;	/*   wall time (benchmarks) */
	char audit_error[128];		/* "" or why the audit line failed */
	bool debug;			/* ran with the debug runtime */
	char debug_log[320];		/* debug: its runsc logs' dir */
	char debug_log_error[256];	/* debug: "" or why there is none */
	/* The limits that applied (the result's "limits"); timeout_s 0:
	 * none were resolved (not emitted). */
	struct runner_limits limits;
};

/* Applies defaults and clamps req against c (a backstop: callers refuse
 * what runner_limits_check refuses first). Pure. */
void runner_limits_resolve(const struct config *c,
    const struct runner_request *req, struct runner_limits *out);

/* The smallest memory and cpus a run may ask for. */
#define RUNNER_MEMORY_MIN (16u << 20)
#define RUNNER_CPUS_MIN 0.01

/* Refuses a request value that the config does not allow, naming the
 * maximum (or minimum) and the config key that sets it: timeout_s above
 * limits.max_timeout_s, max_output above limits.max_output_cap, memory
 * above limits.memory (or below RUNNER_MEMORY_MIN), cpus above
 * limits.cpus (or below RUNNER_CPUS_MIN), more than RUNNER_MAX_IN in
 * paths. Zero fields (the defaults) always pass. 0 or -EINVAL with a
 * one-line reason in err. Pure. */
int runner_limits_check(const struct config *c,
    const struct runner_request *req, char *err, size_t errlen);

/* Validates the request (lang, session characters, counts). 0 or -EINVAL
 * with a one-line reason in err. Pure. */
int runner_request_check(const struct runner_request *req, char *err,
    size_t errlen);


/* The one-line JSON view (caller frees with cJSON_Delete); NULL on
 * ENOMEM. stdout/stderr are valid JSON strings whatever the bytes. */
cJSON *runner_result_to_json(const struct runner_result *res);

const char *runner_status_name(enum runner_status s);
const char *runner_net_name(enum runner_net n);

/* Frees what the result owns; accepts a zeroed result. */
void runner_result_cleanup(struct runner_result *res);

/* Appends one audit line for a finished run to c->audit_log (creating its
 * directory). Never the code or the output. 0 or a negative errno. */
int runner_audit_append(const struct config *c, const char *session,
    const struct runner_result *res);

/* Before a run or a session starts: with c->audit_required (the
 * default), whether the audit log can be opened for appending (its
 * directory and the file are created as needed); 0, or a negative errno
 * with a one-line reason in err that names the log and the ways out. 0
 * without a check when audit_required is false. */
int runner_audit_check(const struct config *c, char *err, size_t errlen);

/* After a run or a session call: appends its audit line. A failure is
 * noted in res->audit_error; with audit_required it is also the call's
 * error (a negative errno, reason in err: the result is withheld, and
 * the caller releases res), else 0. */
int runner_audit_finish(const struct config *c, const char *session,
    struct runner_result *res, char *err, size_t errlen);

#endif
