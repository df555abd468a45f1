/*
 * The latest probe result per net mode and image profile, kept in
 * STATE_DIR/probe-MODE.json (minimal) or probe-MODE-PROFILE.json,
 * and the fail-closed check the runner makes before every job.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/util.h"
#include "probe/probe.h"

static int
state_path(const struct config *c, const char *mode, char *out, size_t len)
{
	if (strcmp(mode, "none") != 0 && strcmp(mode, "proxy") != 0)
		return -EINVAL;
	/* One record per mode and profile; minimal keeps today's name. */
	if ((size_t)snprintf(out, len, "%s/probe-%s%s%s.json", c->state_dir,
	    mode, c->image.profile[0] != '\0' ? "-" : "", c->image.profile)
	    >= len)
		return -ENAMETOOLONG;
	return 0;
}

static void
failed_list(const struct probe_report *rep, char *out, size_t len)
{
	size_t n = 0;

	out[0] = '\0';
	for (size_t i = 0; i < rep->ncontrols && n < len; i++)
		if (!rep->controls[i].pass)
			n += (size_t)snprintf(out + n, len - n, "%s%s",
			    n ? "," : "", rep->controls[i].name);
}

int
probe_state_write(const struct config *c, const struct probe_report *rep)
{
	char path[PATH_MAX], failed[512], *line;
	cJSON *o;
	int rc;

	if ((rc = state_path(c, rep->mode, path, sizeof(path))) < 0)
		return rc;
	if ((o = probe_report_to_json(rep)) == NULL)
		return -ENOMEM;
	failed_list(rep, failed, sizeof(failed));
	cJSON_AddStringToObject(o, "failed", failed);
	line = json_print_line(o);
	cJSON_Delete(o);
	if (line == NULL)
		return -ENOMEM;
	if ((rc = util_mkdir_p(c->state_dir, 0755)) == 0)
		rc = util_write_file_atomic(path, line, strlen(line), 0644);
	free(line);
	return rc;
}

/* The record's summary (failed: failing controls; image: "" when the
 * record has none). 0, -ENOENT or -EBADMSG. */
static int
state_load(const struct config *c, const char *mode, bool *pass,
    int64_t *at_ms, char *failed, size_t failedlen,
    char image[PROBE_IMAGE_MAX])
{
	char path[PATH_MAX], err[256];
	const char *f, *img;
	cJSON *o = NULL;
	int64_t at;
	int rc;

	if ((rc = state_path(c, mode, path, sizeof(path))) < 0)
		return rc;
	if ((rc = json_parse_file(path, 1 << 20, &o, err, sizeof(err))) < 0)
		return rc == -ENOENT ? rc : -EBADMSG;
	rc = -EBADMSG;
	if (json_get_bool(o, "pass", pass) == 0 &&
	    json_get_int(o, "at_ms", 0, INT64_MAX, &at) == 0 &&
	    json_get_string(o, "failed", &f) == 0) {
		*at_ms = at;
		util_strlcpy(failed, f, failedlen);
		image[0] = '\0';
		if (json_get_string(o, "image", &img) == 0)
			util_strlcpy(image, img, PROBE_IMAGE_MAX);
		rc = 0;
	}
	cJSON_Delete(o);
	return rc;
}

int
probe_state_read(const struct config *c, const char *mode, bool *pass,
    int64_t *at_ms, char *failed, size_t failedlen)
{
	char image[PROBE_IMAGE_MAX];

	return state_load(c, mode, pass, at_ms, failed, failedlen, image);
}

int
probe_state_image(const struct config *c, const char *mode,
    char image[PROBE_IMAGE_MAX])
{
	char failed[8];
	int64_t at;
	bool pass;

	return state_load(c, mode, &pass, &at, failed, sizeof(failed), image);
}

/* "sha256:" and the first 12 hex digits: enough to tell images apart. */
static const char *
short_id(const char *id, char out[24])
{
	snprintf(out, 24, "%.19s", id[0] != '\0' ? id : "(none recorded)");
	return out;
}

int
probe_state_check(const struct config *c, const char *mode,
    const char *image, int64_t now_ms, char *err, size_t errlen)
{
	char failed[512], rec_image[PROBE_IMAGE_MAX], a[24], b[24];
	int64_t at = 0;
	bool pass = false;
	int rc;

	if (!c->require_probe)
		return 0;
	rc = state_load(c, mode, &pass, &at, failed, sizeof(failed),
	    rec_image);
	if (rc == -ENOENT) {
		snprintf(err, errlen, "no probe has run for --net %s yet: run "
		    "'cordon probe --net %s' (require_probe is on)", mode, mode);
		return -ENOENT;
	}
	if (rc < 0) {
		snprintf(err, errlen, "the probe record for --net %s is "
		    "unreadable: run 'cordon probe --net %s'", mode, mode);
		return -EPERM;
	}
	if (!pass) {
		snprintf(err, errlen, "the latest probe for --net %s failed "
		    "(%.300s): refusing to run until 'cordon probe --net %s' "
		    "passes", mode, failed, mode);
		return -EPERM;
	}
	/* A new image is unproven until a probe has run in it. */
	if (image != NULL && image[0] != '\0' &&
	    strcmp(image, rec_image) != 0) {
		snprintf(err, errlen, "the latest probe for --net %s ran in "
		    "image %s, not the pinned %s: run 'cordon probe --net %s'",
		    mode, short_id(rec_image, a), short_id(image, b), mode);
		return -ESTALE;
	}
	if (now_ms - at > c->probe_max_age_s * 1000 || at > now_ms + 60000) {
		snprintf(err, errlen, "the latest probe for --net %s is older "
		    "than %llds: run 'cordon probe --net %s'", mode,
		    (long long)c->probe_max_age_s, mode);
		return -ESTALE;
	}
	return 0;
}
