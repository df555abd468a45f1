/*
 * The sandbox image: built with no registry (debootstrap minbase + the
 * configured packages, setuid/setgid bits stripped), imported with
 * `docker import`, and pinned by the image ID that import printed. The ID is
 * recorded in STATE_DIR/image.json (profile minimal; image-PROFILE.json
 * for the others: config.h) together with a fingerprint of the
 * inputs, so a rebuild happens only when the inputs change.
 */
#ifndef CORDON_RUNNER_IMAGE_H
#define CORDON_RUNNER_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"

#define IMAGE_ID_MAX 80	/* "sha256:" + 64 hex + NUL fits */

struct image_record {
	char id[IMAGE_ID_MAX];		/* sha256:... */
	char inputs[65];		/* fingerprint of what built it */
	char name[128];
	char built_at[32];		/* when it was imported */
	char rootfs_at[32];		/* when its rootfs was debootstrapped
					 * (its packages' age); "" in records
					 * of older Cordon */
};

/* Fingerprint (hex SHA-256) of everything that decides the image: suite,
 * mirror, package list and the build recipe version. Pure. */
int image_inputs_fingerprint(const struct config *c, const char *mirror,
    char out[65]);

/* Reads the record of c's profile (STATE_DIR/image[-PROFILE].json). 0,
 * -ENOENT when no image was built, or
 * another negative errno (-EBADMSG when the record is malformed). */
int image_record_read(const struct config *c, struct image_record *rec);

/* The image ID runs are pinned to: config image.id when set, else the
 * recorded one. Never a tag. 0 or -ENOENT (nothing built yet). */
int image_pinned_id(const struct config *c, char id[IMAGE_ID_MAX]);

/* image_pinned_id for something about to run: -ENOENT comes with the
 * user's next step in err (which `cordon image build` pins it). */
int image_pinned_require(const struct config *c, char id[IMAGE_ID_MAX],
    char *err, size_t errlen);

/* image_pinned_id of profile (config_profile_use on a copy of c): 0 or
 * -ENOENT (nothing built), -EINVAL (no such profile), -ENOMEM. */
int image_profile_pinned_id(const struct config *c, const char *profile,
    char id[IMAGE_ID_MAX]);

/* The languages (CONFIG_LANG_* bits) and, in names (comma-separated, cut
 * at nameslen), the profiles whose image is pinned (recorded, or set in
 * the config): what a front end can offer. */
unsigned image_profiles_installed(const struct config *c, char *names,
    size_t nameslen);

/* True when id looks like "sha256:<64 hex>". Pure. */
bool image_id_valid(const char *id);

/* The Debian mirror to debootstrap from: config image.mirror, else the
 * first http(s) URI in /etc/apt/sources.list(.d). 0 or -ENOENT. */
int image_find_mirror(const struct config *c, char *out, size_t outlen);

/* Removes every setuid/setgid bit of the files below root (directories
 * keep theirs), never following a symlink or leaving root's file system,
 * then walks again to prove none is left. 0; -EPERM when a bit could not
 * be cleared; -EIO when the tree could not be walked. */
int image_strip_setid(const char *root);

struct image_build_opts {
	bool force;		/* rebuild from the mirror even when the inputs
				 * match, bypassing the cached rootfs tarball
				 * (`--force`, `--refresh`); runs in flight
				 * keep the image they started with */
	void (*progress)(const char *msg, void *arg);	/* may be NULL */
	void *arg;
};

/* Builds (or reuses) the image and records its ID. On success rec holds
 * the record and *rebuilt says whether anything was built. Returns 0 or a
 * negative errno with a one-line reason in err. */
int image_build(const struct config *c, const struct image_build_opts *o,
    struct image_record *rec, bool *rebuilt, char *err, size_t errlen);

/* Parses an RFC 3339 time with a "Z" or +-HH:MM offset and any number of
 * fraction digits (Docker's "2026-12-01T04:29:59.283215775Z", Cordon's
 * "2026-12-01T04:29:59.297Z") into milliseconds since the epoch. Pure.
 * 0 or -EINVAL. */
int image_time_parse(const char *s, int64_t *wall_ms);

/* When the packages of the image rec records were fetched: rootfs_at,
 * else built_at. 0 or -EINVAL (neither parses). Pure. */
int image_record_made_ms(const struct image_record *rec, int64_t *wall_ms);

/* Whole days from made_ms to now_ms (negative clamped to 0) in *days;
 * true when past c->image.max_age_days (never when that is 0). Pure. */
bool image_too_old(const struct config *c, int64_t made_ms, int64_t now_ms,
    int64_t *days);

#endif
