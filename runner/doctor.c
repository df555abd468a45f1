/*
 * The doctor's checks (doctor.h): Docker reachable, the pinned image
 * present and free of setuid/setgid files, egress (via the netsetup
 * callback), and the age and outcome of the latest probes; Cordon's
 * runtimes (the debug ones too) are checked in doctor_runtime.c.
 */
#include "runner/doctor.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cbuf.h"
#include "common/proc.h"
#include "common/util.h"
#include "probe/probe.h"
#include "runner/docker.h"
#include "runner/doctor_internal.h"
#include "runner/image.h"
#include "runner/tar.h"

const char *
doctor_verdict_name(enum doctor_verdict v)
{
	return v == DOCTOR_OK ? "OK" : v == DOCTOR_FAIL ? "FAIL" :
	    v == DOCTOR_WARN ? "WARN" : "INFO";
}

void
doctor_set(struct doctor_line *l, enum doctor_verdict v, const char *what,
    const char *hint, const char *fmt, ...)
{
	va_list ap;

	l->verdict = v;
	util_strlcpy(l->what, what, sizeof(l->what));
	util_strlcpy(l->hint, (v == DOCTOR_FAIL || v == DOCTOR_WARN) && hint ?
	    hint : "", sizeof(l->hint));
	va_start(ap, fmt);
	vsnprintf(l->detail, sizeof(l->detail), fmt, ap);
	va_end(ap);
}

/* Runs argv with a deadline: 0 when it exited 0, else proc_call's
 * negative errno. On 0, *out (may be NULL) gets its stdout (caller frees). */
int
doctor_call(const char *const *argv, int64_t ms, size_t outmax,
    struct cbuf **out)
{
	struct proc_opts o = { .argv = argv, .stdout_max = outmax,
	    .stderr_max = 4096 };
	struct cbuf *got = NULL;
	char err[320];
	int rc = proc_call(&o, ms, out != NULL ? &got : NULL, NULL, err,
	    sizeof(err));

	if (rc == 0 && out != NULL)
		*out = got;
	else
		cbuf_free(got);
	return rc;
}

/* The image's files: an export of a never-started container (removed
 * again). NULL when that failed; else the tar (caller frees). */
static struct cbuf *
export_image(const struct config *c, const char *id)
{
	char name[64], hex[17];
	const char *create[] = { c->docker, "create", "--name", name,
	    "--label", "cordon=1", "--network=none", id, "true", NULL };
	const char *export[] = { c->docker, "export", name, NULL };
	const char *rm[] = { c->docker, "rm", "-f", name, NULL };
	struct cbuf *tar = NULL;

	if (util_random_hex(hex, 8) < 0)
		return NULL;
	snprintf(name, sizeof(name), "cordon-doctor-%s", hex);
	if (doctor_call(create, 30000, 4096, NULL) == 0)
		(void)doctor_call(export, 120000, 2ULL << 30, &tar);
	(void)doctor_call(rm, 30000, 4096, NULL);
	return tar;
}

static void
check_image(const struct config *c, struct doctor_line *l)
{
	char id[IMAGE_ID_MAX], first[128];
	const char *inspect[] = { c->docker, "image", "inspect", "--format",
	    "{{.Id}}", id, NULL };
	struct cbuf *tar = NULL;
	long n;
	int rc = image_pinned_id(c, id);

	if (rc < 0) {
		doctor_set(l, DOCTOR_FAIL, "sandbox image", "run 'cordon image "
		    "build'", "no pinned image ID (%s)", strerror(-rc));
		return;
	}
	if (doctor_call(inspect, 20000, 4096, NULL) < 0) {
		doctor_set(l, DOCTOR_FAIL, "sandbox image", "run 'cordon image "
		    "build' (it re-imports when the ID is gone)",
		    "%.20s... is not present in dockerd", id);
		return;
	}
	tar = export_image(c, id);
	if (tar == NULL) {
		doctor_set(l, DOCTOR_FAIL, "sandbox image",
		    "check dockerd's log",
		    "could not export the image to scan it");
		return;
	}
	n = doctor_tar_count_setid((const unsigned char *)cbuf_data(tar),
	    cbuf_len(tar), first, sizeof(first));
	cbuf_free(tar);
	if (n != 0)
		doctor_set(l, DOCTOR_FAIL, "sandbox image", "rebuild with 'cordon "
		    "image build --force' (it strips setuid/setgid bits)",
		    n < 0 ? "%.20s...: unreadable export" :
		    "%.20s...: %ld setuid/setgid files, e.g. %s", id, n, first);
	else
		doctor_set(l, DOCTOR_OK, "sandbox image", NULL,
		    "%s present, no setuid/setgid files", id);
}

void
doctor_probe_line(const struct config *c, const char *mode, int rc,
    bool pass, int64_t at_ms, const char *failed, const char *rec_image,
    const char *pinned, int64_t now_ms, struct doctor_line *l)
{
	/* Stale is no failure when the next run probes first by itself. */
	enum doctor_verdict stale = !c->require_probe ? DOCTOR_INFO :
	    c->probe_auto ? DOCTOR_WARN : DOCTOR_FAIL;
	const char *then = c->probe_auto ? "; the next run probes first "
	    "(probe_auto)" : "";
	char what[64];
	int64_t age = (now_ms - at_ms) / 1000;

	snprintf(what, sizeof(what), "probe --net %s", mode);
	if (rc < 0) {
		doctor_set(l, c->require_probe && strcmp(mode, "none") == 0 ?
		    DOCTOR_FAIL : DOCTOR_INFO, what, "run 'cordon probe --net none'",
		    "never run%s", c->require_probe ? " (jobs refused until it "
		    "passes)" : "");
		return;
	}
	if (!pass)
		doctor_set(l, DOCTOR_FAIL, what, "fix the failing controls, "
		    "then rerun 'cordon probe'", "failed %llds ago: %s",
		    (long long)age, failed);
	else if (pinned[0] != '\0' && strcmp(pinned, rec_image) != 0)
		doctor_set(l, stale, what, "run 'cordon probe' (the record is not "
		    "for the pinned image)", "passed %llds ago in image %.19s, not the "
		    "pinned %.19s%s", (long long)age, rec_image[0] != '\0' ?
		    rec_image : "(none recorded)", pinned, then);
	else if (age > c->probe_max_age_s)
		doctor_set(l, stale, what, "rerun 'cordon probe'",
		    "passed %llds ago: older than %llds%s", (long long)age,
		    (long long)c->probe_max_age_s, then);
	else
		doctor_set(l, DOCTOR_OK, what, NULL, "passed %llds ago",
		    (long long)age);
}

static void
check_probe(const struct config *c, const char *mode, struct doctor_line *l)
{
	char failed[256], rec_image[PROBE_IMAGE_MAX] = "", pinned[IMAGE_ID_MAX];
	int64_t at = 0;
	bool pass = false;
	int rc = probe_state_read(c, mode, &pass, &at, failed, sizeof(failed));

	if (rc == 0)
		(void)probe_state_image(c, mode, rec_image);
	if (image_pinned_id(c, pinned) < 0)
		pinned[0] = '\0';
	doctor_probe_line(c, mode, rc, pass, at, failed, rec_image, pinned,
	    time_wall_ms(), l);
}

void
doctor_image_age(const struct config *c, int64_t made_ms, int64_t now_ms,
    struct doctor_line *l)
{
	int64_t days;

	if (c->image.max_age_days == 0) {
		doctor_set(l, DOCTOR_INFO, "image age", NULL, "not checked "
		    "(image.max_age_days is 0)");
		return;
	}
	if (made_ms < 0) {
		doctor_set(l, DOCTOR_INFO, "image age", NULL, "unknown (no "
		    "build time recorded or reported for the pinned image)");
		return;
	}
	if (image_too_old(c, made_ms, now_ms, &days))
		doctor_set(l, DOCTOR_WARN, "image age",
		    "run 'cordon image build --refresh' (security updates "
		    "come through the mirror); the next run then probes the new image first",
		    "packages fetched %lld days ago: older than "
		    "image.max_age_days (%lld)", (long long)days,
		    (long long)c->image.max_age_days);
	else
		doctor_set(l, DOCTOR_OK, "image age", NULL, "packages fetched %lld "
		    "days ago (image.max_age_days %lld)", (long long)days,
		    (long long)c->image.max_age_days);
}

/* When the pinned image's packages were fetched: the build record when it
 * is that image's, else when dockerd says the image was created. */
static int64_t
image_made_ms(const struct config *c)
{
	char id[IMAGE_ID_MAX];
	const char *inspect[] = { c->docker, "image", "inspect", "--format",
	    "{{.Created}}", id, NULL };
	struct image_record rec;
	struct cbuf *out = NULL;
	int64_t ms = -1;

	if (image_pinned_id(c, id) < 0)
		return -1;
	if (image_record_read(c, &rec) == 0 && strcmp(rec.id, id) == 0 &&
	    image_record_made_ms(&rec, &ms) == 0)
		return ms;
	if (doctor_call(inspect, 20000, 4096, &out) == 0) {
		char created[64];
		util_strlcpy(created, cbuf_data(out), sizeof(created));
		created[strcspn(created, "\r\n")] = '\0';
		if (image_time_parse(created, &ms) < 0)
			ms = -1;
	}
	cbuf_free(out);
	return ms;
}

void
doctor_profile_line(const struct config *c, const struct doctor_profile *p,
    int64_t now_ms, struct doctor_line *l)
{
	enum doctor_verdict v = DOCTOR_OK;
	char what[64], langs[64], size[32] = "size unknown", age[48] = "";
	char probe[96], hint[200] = "";
	int64_t days = 0;
	bool old = p->made_ms >= 0 && image_too_old(c, p->made_ms, now_ms,
	    &days);

	snprintf(what, sizeof(what), "profile %s", p->name);
	config_langs_format(p->langs, langs, sizeof(langs));
	if (!p->built) {
		doctor_set(l, DOCTOR_INFO, what, NULL, "not built (offers %s; "
		    "'cordon image build --profile %s' when you need it)", langs,
		    p->name);
		return;
	}
	if (!p->present) {
		doctor_set(l, DOCTOR_FAIL, what, "run 'cordon image build "
		    "--profile NAME' (it re-imports when the ID is gone)",
		    "missing: %.19s... is not present in dockerd", p->id);
		return;
	}
	if (p->size_bytes >= 0)
		snprintf(size, sizeof(size), "%lld MB",
		    (long long)(p->size_bytes / 1000000));
	if (p->made_ms >= 0)
		snprintf(age, sizeof(age), ", packages %lld days old",
		    (long long)days);
	if (p->probe_rc < 0) {
		snprintf(probe, sizeof(probe), "never probed");
		if (c->require_probe) {
			v = DOCTOR_WARN;
			snprintf(hint, sizeof(hint), "run 'cordon probe --profile "
			    "%s' (its runs are refused until it passes)",
			    p->name);
		}
	} else if (!p->probe_pass) {
		snprintf(probe, sizeof(probe), "probe failed: %.60s",
		    p->probe_failed);
		v = DOCTOR_FAIL;
		snprintf(hint, sizeof(hint), "fix the failing controls, then "
		    "rerun 'cordon probe --profile %s'", p->name);
	} else if (strcmp(p->probe_image, p->id) != 0 ||
	    (now_ms - p->probe_at_ms) / 1000 > c->probe_max_age_s) {
		snprintf(probe, sizeof(probe), "probe stale (passed %llds ago%s)",
		    (long long)((now_ms - p->probe_at_ms) / 1000),
		    strcmp(p->probe_image, p->id) != 0 ? " in another image" :
		    "");
		v = c->require_probe ? DOCTOR_WARN : DOCTOR_OK;
		snprintf(hint, sizeof(hint), "rerun 'cordon probe --profile "
		    "%s'%s", p->name, c->probe_auto ? " (or let the next run "
		    "probe first: probe_auto)" : "");
	} else {
		snprintf(probe, sizeof(probe), "probe passed %llds ago",
		    (long long)((now_ms - p->probe_at_ms) / 1000));
	}
	if (old && v == DOCTOR_OK) {
		v = DOCTOR_WARN;
		snprintf(hint, sizeof(hint), "run 'cordon image build --profile "
		    "%s --refresh' (security updates come through the mirror)",
		    p->name);
	}
	doctor_set(l, v, what, hint, "%.19s..., %s%s, offers %s; %s", p->id,
	    size, age, langs, probe);
}

/* One profile's facts, from its records and dockerd. */
static void
check_profile(const struct config *base, const struct config_profile *cp,
    struct doctor_line *l)
{
	struct config *c = malloc(sizeof(*c));
	char id[IMAGE_ID_MAX], err[256], failed[256] = "";
	char rec_image[PROBE_IMAGE_MAX] = "";
	const char *inspect[] = { base->docker, "image", "inspect", "--format",
	    "{{.Id}} {{.Size}}", id, NULL };
	struct doctor_profile p = { .name = cp->name, .langs = cp->langs,
	    .id = id, .size_bytes = -1, .made_ms = -1,
	    .probe_failed = failed, .probe_image = rec_image };
	struct cbuf *out = NULL;

	if (c == NULL) {
		doctor_set(l, DOCTOR_FAIL, "profile", NULL, "out of memory");
		return;
	}
	*c = *base;
	if (config_profile_use(c, cp->name, NULL, err, sizeof(err)) == 0 &&
	    image_pinned_id(c, id) == 0)
		p.built = true;
	if (p.built && doctor_call(inspect, 20000, 4096, &out) == 0 &&
	    strncmp(cbuf_data(out), id, strlen(id)) == 0) {
		long long sz = 0;
		p.present = true;
		if (sscanf(cbuf_data(out) + strlen(id), " %lld", &sz) == 1)
			p.size_bytes = sz;
	}
	cbuf_free(out);
	if (p.present) {
		p.made_ms = image_made_ms(c);
		p.probe_rc = probe_state_read(c, "none", &p.probe_pass,
		    &p.probe_at_ms, failed, sizeof(failed));
		if (p.probe_rc == 0)
			(void)probe_state_image(c, "none", rec_image);
	}
	doctor_profile_line(c, &p, time_wall_ms(), l);
	free(c);
}

/* The daemon's mode from docker info, and the size of the remapped range
 * from /etc/subuid (read here: a daemon elsewhere has its own). */
static void
check_daemon(const struct config *c, struct doctor_line *l)
{
	const char *info[] = { c->docker, "info", "--format", "{{json .}}",
	    NULL };
	struct doctor_daemon d;
	struct cbuf *out = NULL;
	char *subuid = NULL;
	long count = -1;

	if (doctor_call(info, 20000, 1 << 20, &out) < 0 ||
	    doctor_daemon_parse(cbuf_data(out), cbuf_len(out), &d) < 0) {
		cbuf_free(out);
		doctor_set(l, DOCTOR_WARN, "daemon", "check `docker info`",
		    "cannot tell its mode");
		return;
	}
	cbuf_free(out);
	if (d.mode == DOCTOR_DAEMON_USERNS && d.remap_uid >= 0 &&
	    util_read_file("/etc/subuid", 1 << 20, &subuid, NULL) == 0)
		count = doctor_subid_count(subuid, d.remap_uid);
	free(subuid);
	doctor_daemon_line(&d, count, l);
}

/* The docker line when `docker version` fails: permission denied on the
 * socket (dockerd may well be running) told from a daemon that is not
 * running, from what docker said. 0 with *out (caller frees), or -1 with
 * l filled. */
static int
doctor_docker_reach(const struct config *c, const char *const *ping,
    struct doctor_line *l, struct cbuf **out)
{
	struct proc_opts o = { .argv = ping, .stdout_max = 256,
	    .stderr_max = 4096 };
	char why[320];
	int rc = proc_call(&o, 20000, out, NULL, why, sizeof(why));

	if (rc == 0)
		return 0;
	cbuf_free(*out);
	*out = NULL;
	switch (rc == -EIO ? docker_fault_text(why) : DOCKER_FAULT_OTHER) {
	case DOCKER_FAULT_DENIED:
		doctor_set(l, DOCTOR_FAIL, "docker",
		    "run cordon as root, or as a member of the `docker` "
		    "group (root-equivalent; README \"Who may run Cordon\" "
		    "has the audit rule)", "permission denied on the Docker "
		    "socket (dockerd may be running; "
		    "this user may not use it): %s", why);
		break;
	case DOCKER_FAULT_DOWN:
		doctor_set(l, DOCTOR_FAIL, "docker", "start dockerd: "
		    "scripts/setup", "dockerd is not running: %s", why);
		break;
	default:
		doctor_set(l, DOCTOR_FAIL, "docker", "check dockerd (`docker "
		    "info`, its log); start it: scripts/setup", "dockerd does "
		    "not answer via %s: %s", c->docker, why);
		break;
	}
	return -1;
}

size_t
doctor_run(const struct config *c, doctor_egress_fn egress,
    struct doctor_line *lines, size_t max)
{
	const char *ping[] = { c->docker, "version", "--format",
	    "{{.Server.Version}}", NULL };
	struct cbuf *out = NULL;
	size_t n = 0;

	if (max == 0)
		return 0;
	if (doctor_docker_reach(c, ping, &lines[n], &out) < 0)
		return n + 1;
	doctor_set(&lines[n++], DOCTOR_OK, "docker", NULL, "dockerd %.*s",
	    (int)strcspn(cbuf_data(out), "\n"), cbuf_data(out));
	cbuf_free(out);
	if (n < max)
		check_daemon(c, &lines[n++]);
	doctor_check_runtimes(c, lines, &n, max);
	if (n < max)
		check_image(c, &lines[n++]);
	if (n < max)
		doctor_image_age(c, image_made_ms(c), time_wall_ms(),
		    &lines[n++]);
	if (n < max && egress != NULL && !egress(c, &lines[n]))
		doctor_set(&lines[n], DOCTOR_INFO, "egress", NULL, "not set up "
		    "(only --net proxy needs it: 'cordon net up')");
	if (n < max && egress != NULL)
		n++;
	if (n < max)
		check_probe(c, "none", &lines[n++]);
	if (n < max)
		check_probe(c, "proxy", &lines[n++]);
	for (size_t i = 0; i < c->image.nprofiles && n < max; i++)
		check_profile(c, &c->image.profiles[i], &lines[n++]);
	return n;
}

/* A GNU long name ('L' entry): the name of the entry that follows. */
static void
long_name(const struct tar_entry *e, char *out, size_t outlen)
{
	size_t n = e->size < outlen - 1 ? (size_t)e->size : outlen - 1;

	n = strnlen((const char *)e->data, n);
	memcpy(out, e->data, n);
	out[n] = '\0';
}

long
doctor_tar_count_setid(const unsigned char *tar, size_t len, char *first,
    size_t firstlen)
{
	struct tar_reader r;
	struct tar_entry e;
	char name[TAR_NAME_MAX] = "";
	long count = 0;
	int rc;

	if (first != NULL && firstlen > 0)
		first[0] = '\0';
	runner_tar_reader_init(&r, tar, len);
	while ((rc = runner_tar_next(&r, &e)) == 1) {
		if (e.mode < 0)
			return -EBADMSG;
		if (e.typeflag == 'L') {
			long_name(&e, name, sizeof(name));
			continue;
		}
		if ((e.typeflag == '0' || e.typeflag == '\0' ||
		    e.typeflag == '7') && (e.mode & 06000) != 0) {
			if (count == 0 && first != NULL && firstlen > 0)
				snprintf(first, firstlen, "%s",
				    name[0] != '\0' ? name : e.name);
			count++;
		}
		name[0] = '\0';
	}
	/* Cut short (-EPIPE) or a bad header: malformed either way. */
	return rc == 0 ? count : -EBADMSG;
}
