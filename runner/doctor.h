/*
 * `cordon doctor`: a checklist for a person. Each check is OK, FAIL, WARN
 * (works, but should be seen to: e.g. an old image) or INFO (not set up,
 * and not needed unless you use that feature) with a one-line hint on how
 * to fix a failure or a warning.
 */
#ifndef CORDON_RUNNER_DOCTOR_H
#define CORDON_RUNNER_DOCTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sys/stat.h>

#include "common/config.h"
#include "runner/docker.h"

enum doctor_verdict { DOCTOR_OK, DOCTOR_FAIL, DOCTOR_INFO, DOCTOR_WARN };

struct doctor_line {
	enum doctor_verdict verdict;
	char what[96];
	char detail[512];	/* docker's whole first line fits */
	char hint[200];
};

#define DOCTOR_MAX_LINES (16 + CONFIG_MAX_PROFILES)

/* Optional check supplied by the egress part (netsetup): fills line and
 * returns true when egress is set up at all. */
typedef bool (*doctor_egress_fn)(const struct config *c,
    struct doctor_line *line);

/* Runs every check; returns how many lines were filled. */
size_t doctor_run(const struct config *c, doctor_egress_fn egress,
    struct doctor_line *lines, size_t max);

/* Counts setuid/setgid regular files in a tar stream's headers (ustar,
 * GNU long names), read with the runner's strict tar reader. Pure; feed it
 * the whole archive. Returns the count, or -EBADMSG for a malformed
 * archive (bad checksum or field, cut short). first (may be NULL) gets
 * the first path. */
long doctor_tar_count_setid(const unsigned char *tar, size_t len,
    char *first, size_t firstlen);

const char *doctor_verdict_name(enum doctor_verdict v);

/* The daemon's own hardening, from `docker info --format '{{json .}}'`. */
enum doctor_daemon_mode {
	DOCTOR_DAEMON_ROOT,		/* plain root */
	DOCTOR_DAEMON_USERNS,		/* SecurityOptions name=userns */
	DOCTOR_DAEMON_ROOTLESS,		/* ... name=rootless */
};

struct doctor_daemon {
	enum doctor_daemon_mode mode;
	long remap_uid, remap_gid;	/* userns: the host IDs container
					 * root maps to (DockerRootDir's
					 * UID.GID); -1 unknown */
	char cgroup_driver[16];		/* cgroupfs, systemd, none */
	int cgroup_version;		/* 1, 2; 0 unknown */
};

/* Parses docker info's JSON. 0, or -EBADMSG when it is not an object (*d
 * then says plain root, nothing known). Pure. */
int doctor_daemon_parse(const char *json, size_t len,
    struct doctor_daemon *d);

/* The COUNT of the /etc/subuid (or subgid) line NAME:START:COUNT whose
 * START is start, in text; -1 when there is none. Pure. */
long doctor_subid_count(const char *text, long start);

/* The "daemon" line: INFO for plain root, OK for userns-remap (with the
 * range: count ids from remap_uid; count <= 0: unknown), FAIL for
 * rootless on cgroup v1 or without a cgroup driver (runsc needs
 * --ignore-cgroups there, and no host limit holds), WARN for rootless on
 * cgroup v2 (not proven). Pure. */
void doctor_daemon_line(const struct doctor_daemon *d, long count,
    struct doctor_line *l);

/* The line of debug runtime name: rc is docker_runtime_parse's for it
 * (< 0: not registered: INFO, only --debug needs it), rt its entry, dir
 * the stat of its log directory (the --debug-log pattern up to %ID%;
 * NULL: missing). OK when the arguments carry runsc's debug flags and a
 * %ID% pattern and the directory is root's, mode 0700 or less; else WARN.
 * Pure. */
void doctor_debug_line(const char *name, int rc,
    const struct docker_runtime *rt, const struct stat *dir,
    struct doctor_line *l);

/* The image-age line for an image whose packages were fetched at made_ms
 * (wall clock; < 0: unknown): OK within image.max_age_days, WARN past it
 * (hint: `cordon image build --refresh`), INFO when unknown or the check
 * is off (max_age_days 0). Pure. */
void doctor_image_age(const struct config *c, int64_t made_ms,
    int64_t now_ms, struct doctor_line *l);

/* The probe line for mode from its record (rc: probe_state_read's; pass,
 * at_ms, failed as it read them; rec_image: the image the record names,
 * pinned: the pinned image ID or ""), at now_ms. Pure. */
void doctor_probe_line(const struct config *c, const char *mode, int rc,
    bool pass, int64_t at_ms, const char *failed, const char *rec_image,
    const char *pinned, int64_t now_ms, struct doctor_line *l);

/* What doctor learned about one image profile (config.h). */
struct doctor_profile {
	const char *name;
	unsigned langs;			/* CONFIG_LANG_* */
	bool built;			/* an image ID is pinned for it */
	const char *id;			/* that ID */
	bool present;			/* dockerd has that image */
	int64_t size_bytes;		/* -1: unknown */
	int64_t made_ms;		/* packages fetched; -1: unknown */
	int probe_rc;			/* probe_state_read's (--net none) */
	bool probe_pass;
	int64_t probe_at_ms;
	const char *probe_failed;
	const char *probe_image;	/* the image its record names */
};

/* The line "profile NAME": INFO when not built (nothing needs it until a
 * run asks for it), FAIL when its pinned image is gone from dockerd or its
 * probe failed, WARN when its probe record is missing (runs refused) or
 * stale, or its packages are past image.max_age_days; else OK. The detail
 * names the ID, size, age, languages and the probe's state. Pure. */
void doctor_profile_line(const struct config *c,
    const struct doctor_profile *p, int64_t now_ms, struct doctor_line *l);

#endif
