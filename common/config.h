/*
 * Cordon's configuration: one JSON file (default /etc/cordon/cordon.json,
 * overridden by $CORDON_CONFIG) with safe defaults for every key. Unknown
 * keys are errors, so a typo never silently leaves a default in force.
 */
#ifndef CORDON_COMMON_CONFIG_H
#define CORDON_COMMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONFIG_DEFAULT_PATH "/etc/cordon/cordon.json"
#define CONFIG_MAX_PACKAGES 32
#define CONFIG_MAX_PROFILES 8
#define CONFIG_PROFILE_MAX 32		/* [a-z0-9_-], 1-32 */
#define CONFIG_PROFILE_DEFAULT "minimal"

/* Languages a profile offers (bits). Every profile has python3 (the probe
 * is a Python program) and bash (Essential in Debian); node needs the
 * nodejs package. */
#define CONFIG_LANG_PYTHON 1u
#define CONFIG_LANG_BASH 2u
#define CONFIG_LANG_NODE 4u

struct config_limits {
	uint64_t memory_bytes;		/* --memory and --memory-swap (equal) */
	double cpus;			/* --cpus */
	int64_t timeout_s;		/* default per-run deadline */
	int64_t max_timeout_s;		/* callers cannot ask for more */
	uint64_t max_output_bytes;	/* default cap per stream */
	uint64_t max_output_cap;	/* callers cannot ask for more */
	int64_t nofile;			/* --ulimit nofile */
	uint64_t fsize_bytes;		/* --ulimit fsize */
	int64_t nproc;			/* --ulimit nproc: guest-visible limit */
	int64_t pids_limit;		/* --pids-limit: host-side backstop */
	uint64_t tmpfs_bytes;		/* size of the noexec /tmp */
	uint64_t in_max_bytes;		/* --in: total bytes */
	int64_t in_max_files;		/* --in: file count */
	uint64_t out_max_bytes;		/* --out: total bytes */
	int64_t out_max_files;		/* --out: file count */
	/* Host-wide, across every Cordon process (runner/slot.h). */
	int64_t max_concurrent_runs;	/* default 2 x online CPUs */
	int64_t queue_timeout_s;	/* a run waits this long for a slot */
};

/* One image profile: its own image (built, pinned, recorded and probed
 * on its own). profiles[0] is "minimal": image.name/packages/id
 * themselves (today's image, so existing set-ups keep working). */
struct config_profile {
	char name[CONFIG_PROFILE_MAX + 1];
	char image_name[128];		/* image.name-NAME unless named */
	bool named;			/* the file gave its image's name */
	char packages[CONFIG_MAX_PACKAGES][64];
	size_t npackages;
	char id[80];			/* "" = the ID recorded by image build */
	unsigned langs;			/* CONFIG_LANG_* (from packages) */
};

struct config_image {
	char name[128];			/* tag given at import (informative) */
	char suite[32];			/* debootstrap suite */
	char mirror[256];		/* "" = first deb URI in apt sources */
	char packages[CONFIG_MAX_PACKAGES][64];	/* --include list */
	size_t npackages;
	char id[80];			/* "" = the ID recorded by image build */
	int64_t max_age_days;		/* doctor warns past it; 0: never */
	/* The profile that name, packages and id above stand for: "" for
	 * minimal (as loaded), else what config_profile_use selected. Its
	 * image and probe records are STATE_DIR/image-NAME.json and
	 * probe-MODE-NAME.json (minimal: image.json, probe-MODE.json). */
	char profile[CONFIG_PROFILE_MAX + 1];
	struct config_profile profiles[CONFIG_MAX_PROFILES];
	size_t nprofiles;		/* minimal, data, node, then the
					 * file's own */
};

#define CONFIG_MAX_TENANTS 16
#define CONFIG_MAX_POLICIES 32
#define CONFIG_POLICY_MAX 64		/* [A-Za-z0-9_-], 1-64 (a NAME.list) */
#define CONFIG_NET_NONE 1u		/* config_tenant.nets bits */
#define CONFIG_NET_PROXY 2u

/* One caller of `cordon serve`: a bearer token names it. */
struct config_tenant {
	char name[64];
	char token[128];		/* at least 16 characters */
	int64_t max_concurrent;		/* runs at once */
	int64_t max_queue;		/* -1: serve.queue_max */
	char net[8];			/* default net mode: "none" or "proxy" */
	/* Net modes the tenant may ask for: bit 1 << enum value of
	 * CONFIG_NET_NONE/PROXY. Absent in the file: only its default net. */
	unsigned nets;
	/* Egress policies it may pick. Absent: only egress_default_policy. */
	char policies[CONFIG_MAX_POLICIES][CONFIG_POLICY_MAX + 1];
	size_t npolicies;
	bool policies_set;		/* "policies" was given */
};

/* A warm pool of lang in a profile other than the one lang runs in by
 * default (serve.pool_profiles, mcp.pool_profiles: {"PROFILE": {"LANG":
 * N}}): runs that name that profile are warm too. */
#define CONFIG_MAX_POOL_PROFILES 8
struct config_pool_profile {
	char profile[CONFIG_PROFILE_MAX + 1];
	unsigned lang;			/* one CONFIG_LANG_* bit */
	int64_t size;			/* containers per net mode, 1-64 */
};

/* `cordon serve`. */
struct config_serve {
	char socket[108];		/* unix socket path (sun_path) */
	char listen[64];		/* "" or ADDR:PORT (tokens required) */
	int64_t global_limit;		/* runs at once, all tenants */
	int64_t queue_max;		/* waiting runs per tenant, default */
	uint64_t body_max_bytes;	/* request body cap */
	int64_t probe_interval_s;	/* scheduled probe, per net mode */
	int64_t pool;			/* warm containers per net mode */
	int64_t pool_bash, pool_node;	/* ... of bash and node (pool:
					 * python's) */
	int64_t pool_max_age_s;		/* an idle one is replaced after */
	int64_t pool_starts;		/* pool starts at once; 0: online CPUs */
	int64_t pool_idle_s;		/* a pool (language, net mode) no run
					 * asked for this long shrinks to 0
					 * until one asks; 0: never */
	struct config_pool_profile pool_profiles[CONFIG_MAX_POOL_PROFILES];
	size_t npool_profiles;
	int64_t sessions_per_tenant;	/* live sessions per tenant; 0: none */
	/* Hostile and careless clients (issue 39). */
	int64_t max_connections;	/* TCP at once; 0: from the fd limit */
	int64_t max_connections_per_peer;	/* TCP from one address */
	int64_t unix_connections;	/* the unix socket's own share */
	int64_t head_timeout_s;		/* a request head, and keep-alive */
	int64_t body_timeout_s;		/* a request body */
	int64_t write_timeout_s;	/* a reply that makes no progress */
	uint64_t unsent_max_bytes;	/* a tenant's unread replies: 429 */
	int64_t refusals_per_min;	/* a tenant's 4xx; 0: no bound */
	char stats_tcp[8];		/* /metrics, /v1/health on TCP: "own"
					 * (the tenant's) or "local" (403) */
	struct config_tenant tenants[CONFIG_MAX_TENANTS];
	size_t ntenants;
};

/* `cordon mcp`. Its pool's max age and starts in flight are serve's
 * (serve.pool_max_age_s, serve.pool_starts): one host, one budget. Its
 * idle time is its own: an MCP server lives as long as its agent's
 * session, and may sit unused far longer than a service. */
struct config_mcp {
	int64_t pool;			/* warm containers per net mode */
	int64_t pool_bash, pool_node;	/* ... of bash and node (pool:
					 * python's) */
	int64_t pool_idle_s;		/* as serve.pool_idle_s */
	struct config_pool_profile pool_profiles[CONFIG_MAX_POOL_PROFILES];
	size_t npool_profiles;		/* as serve.pool_profiles */
	/* A run_code session unused this long ends (0: only with the
	 * connection); none lives longer than session_life_s. */
	int64_t session_idle_s, session_life_s;
};

struct config {
	char path[512];			/* file it came from, "" for defaults */
	char docker[256];		/* docker CLI */
	char docker_api[8];		/* "auto": cold runs over the Engine
					 * API socket when usable; "never": the
					 * CLI (runner/dockerapi.h) */
	char state_dir[256];		/* image records, probe results */
	char cache_dir[256];		/* rootfs tarballs */
	char audit_log[256];
	bool audit_required;		/* no audit line, no run (default) */
	char runtime_offline[64];	/* registered runsc runtime names */
	char runtime_egress[64];
	/* Their debug twins (runsc --debug --strace): `cordon run --debug`. */
	char runtime_debug[64];
	char runtime_debug_egress[64];
	char user[32];			/* uid:gid in the container */
	char egress_network[64];	/* Docker network for --net proxy */
	char egress_bridge[16];
	char egress_subnet[64];
	int64_t proxy_port;		/* on the egress gateway: HTTP(S)_PROXY */
	/* Also on the gateway: where the host redirects every other TCP
	 * connection of a proxy-mode sandbox, and its DNS (UDP and TCP 53,
	 * the resolver its resolv.conf names). */
	int64_t proxy_transparent_port;
	int64_t proxy_dns_port;
	char proxy_user[32];
	char proxy_bin[256];		/* cordon-proxy; "" = beside cordon */
	/* Egress per run: the policy a proxy-mode run gets when it names
	 * none, and the limits the proxy holds each run to. */
	char egress_default_policy[CONFIG_POLICY_MAX + 1];
	/* Secrets store for allowlist inject= options: a root-only file of
	 * NAME=VALUE lines or directory of one file per secret
	 * (allowlist/README.md); "" = none. */
	char egress_secrets[256];
	/* The proxy's access log (JSON lines): "" = access.log in the
	 * network's state dir; rotated at egress_access_log_max bytes (0:
	 * never) keeping egress_access_log_keep old files. */
	char egress_access_log[256];
	uint64_t egress_access_log_max;
	int64_t egress_access_log_keep;
	int64_t egress_run_max_conns;	/* concurrent proxy connections */
	/* Connections from one sandbox not yet admitted by the proxy (no
	 * request accepted yet), at most; 0: no cap. */
	int64_t egress_source_max_pending;
	uint64_t egress_run_bytes_up;	/* 0: unlimited */
	uint64_t egress_run_bytes_down;	/* 0: unlimited */
	bool require_probe;
	int64_t probe_max_age_s;
	bool probe_auto;		/* a stale (passed, not failed) probe
					 * record: the runner probes first */
	struct config_limits limits;
	struct config_image image;
	struct config_serve serve;
	struct config_mcp mcp;
};

/* True for a valid policy name: 1-CONFIG_POLICY_MAX of [A-Za-z0-9_-]
 * (the NAME of an allowlist NAME.list). */
bool config_policy_name_valid(const char *name);

/* Whether tenant t may use net mode "none"/"proxy" (name) and policy. */
bool config_tenant_allows_net(const struct config_tenant *t,
    const char *net);
bool config_tenant_allows_policy(const struct config *c,
    const struct config_tenant *t, const char *policy);

/* True for a valid profile name: 1-CONFIG_PROFILE_MAX of [a-z0-9_-]. */
bool config_profile_name_valid(const char *name);

/* The CONFIG_LANG_* bit of a language name ("python", "bash", "node"); 0
 * for anything else. NULL is python. Pure. */
unsigned config_lang_bit(const char *lang);
/* "python", "bash" or "node" for one bit; "?" otherwise. */
const char *config_lang_name(unsigned bit);
/* "python, bash" for a set of bits, into out. */
void config_langs_format(unsigned langs, char *out, size_t outlen);

/* The profile named name, or NULL. */
const struct config_profile *config_profile_find(const struct config *c,
    const char *name);

/* The name of the profile c's image fields stand for ("minimal" for ""). */
const char *config_profile_current(const struct config *c);

/* The profile a run of lang (NULL: python) gets: the one named profile;
 * or, profile NULL, the current one if it offers lang, else (from minimal
 * only) the first profile that does. A named profile that does not exist
 * or lacks lang is -EINVAL with a reason in err; so is an unknown
 * language. Never falls back to another language. 0 and *out. Pure. */
int config_profile_pick(const struct config *c, const char *profile,
    const char *lang, const struct config_profile **out, char *err,
    size_t errlen);

/* Points c's image fields (name, packages, id, profile) at the profile
 * config_profile_pick chooses, for one run, build or probe. 0 or its
 * -EINVAL. Pure. */
int config_profile_use(struct config *c, const char *profile,
    const char *lang, char *err, size_t errlen);

/* Fills c with the built-in defaults. */
void config_defaults(struct config *c);

/* Loads defaults, then the file at path; if path is NULL, $CORDON_CONFIG or
 * CONFIG_DEFAULT_PATH, where a missing default file is not an error (the
 * defaults stand) but a missing explicit file is. Returns 0 or a negative
 * errno with a one-line reason in err ("FILE: key 'x': ..."). On failure
 * c holds the defaults. */
int config_load(struct config *c, const char *path, char *err, size_t errlen);

/* Same as config_load for JSON text already in memory (tests, fuzzing). */
int config_parse(struct config *c, const char *text, size_t len,
    const char *name, char *err, size_t errlen);

#endif
