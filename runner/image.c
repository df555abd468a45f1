/*
 * The sandbox image (image.h): debootstrap into a cache directory, strip
 * setuid/setgid bits, tar the tree once (cached by input fingerprint),
 * `docker import` it and record the ID that import printed. Runs pin to
 * that ID, never to a tag.
 */
#include "runner/image.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/json.h"
#include "common/proc.h"
#include "common/sha256.h"
#include "common/util.h"

/* Bump when the build steps change in a way that changes the image. */
#define IMAGE_RECIPE_VERSION "1"

bool
image_id_valid(const char *id)
{
	if (strncmp(id, "sha256:", 7) != 0 || strlen(id) != 7 + 64)
		return false;
	return strspn(id + 7, "0123456789abcdef") == 64;
}

int
image_inputs_fingerprint(const struct config *c, const char *mirror,
    char out[65])
{
	char buf[4096];
	size_t n;

	n = (size_t)snprintf(buf, sizeof(buf), "recipe=%s\nsuite=%s\nmirror=%s\n"
	    "packages=", IMAGE_RECIPE_VERSION, c->image.suite, mirror);
	for (size_t i = 0; i < c->image.npackages && n < sizeof(buf); i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s,",
		    c->image.packages[i]);
	if (n >= sizeof(buf))
		return -E2BIG;
	return sha256_hex(buf, n, out);
}

static int
record_path(const struct config *c, char *out, size_t len)
{
	/* minimal keeps today's name: existing set-ups keep their pin. */
	if ((size_t)snprintf(out, len, "%s/image%s%s.json", c->state_dir,
	    c->image.profile[0] != '\0' ? "-" : "", c->image.profile) >= len)
		return -ENAMETOOLONG;
	return 0;
}

static int
copy_field(const cJSON *o, const char *key, char *dst, size_t len)
{
	const char *s;
	int rc = json_get_string(o, key, &s);

	if (rc < 0)
		return rc;
	return util_strlcpy(dst, s, len) ? 0 : -EINVAL;
}

int
image_record_read(const struct config *c, struct image_record *rec)
{
	char path[PATH_MAX], err[256];
	cJSON *o = NULL;
	int rc;

	memset(rec, 0, sizeof(*rec));
	if ((rc = record_path(c, path, sizeof(path))) < 0)
		return rc;
	rc = json_parse_file(path, 65536, &o, err, sizeof(err));
	if (rc < 0)
		return rc == -ENOENT ? -ENOENT : -EBADMSG;
	if (copy_field(o, "id", rec->id, sizeof(rec->id)) < 0 ||
	    copy_field(o, "inputs", rec->inputs, sizeof(rec->inputs)) < 0 ||
	    copy_field(o, "name", rec->name, sizeof(rec->name)) < 0 ||
	    copy_field(o, "built_at", rec->built_at, sizeof(rec->built_at)) < 0 ||
	    !image_id_valid(rec->id)) {
		memset(rec, 0, sizeof(*rec));
		rc = -EBADMSG;
	} else if (copy_field(o, "rootfs_at", rec->rootfs_at,
	    sizeof(rec->rootfs_at)) < 0) {
		rec->rootfs_at[0] = '\0';	/* optional: older records */
	}
	cJSON_Delete(o);
	return rc;
}

int
image_pinned_id(const struct config *c, char id[IMAGE_ID_MAX])
{
	struct image_record rec;
	int rc;

	id[0] = '\0';
	if (c->image.id[0] != '\0') {
		if (!image_id_valid(c->image.id))
			return -EINVAL;
		util_strlcpy(id, c->image.id, IMAGE_ID_MAX);
		return 0;
	}
	if ((rc = image_record_read(c, &rec)) < 0)
		return rc;
	util_strlcpy(id, rec.id, IMAGE_ID_MAX);
	return 0;
}

int
image_pinned_require(const struct config *c, char id[IMAGE_ID_MAX],
    char *err, size_t errlen)
{
	if (image_pinned_id(c, id) == 0)
		return 0;
	if (c->image.profile[0] == '\0')
		snprintf(err, errlen, "no sandbox image pinned (run `cordon "
		    "image build`)");
	else
		snprintf(err, errlen, "no sandbox image pinned for profile %s "
		    "(run `cordon image build --profile %s`)", c->image.profile,
		    c->image.profile);
	return -ENOENT;
}

int
image_profile_pinned_id(const struct config *c, const char *profile,
    char id[IMAGE_ID_MAX])
{
	struct config *pc = malloc(sizeof(*pc));
	char err[256];
	int rc;

	id[0] = '\0';
	if (pc == NULL)
		return -ENOMEM;
	*pc = *c;
	rc = config_profile_use(pc, profile, NULL, err, sizeof(err));
	if (rc == 0)
		rc = image_pinned_id(pc, id);
	free(pc);
	return rc;
}

unsigned
image_profiles_installed(const struct config *c, char *names,
    size_t nameslen)
{
	char id[IMAGE_ID_MAX];
	unsigned langs = 0;
	size_t n = 0;

	if (nameslen > 0)
		names[0] = '\0';
	for (size_t i = 0; i < c->image.nprofiles; i++) {
		const struct config_profile *p = &c->image.profiles[i];
		if (image_profile_pinned_id(c, p->name, id) < 0)
			continue;
		langs |= p->langs;
		if (n < nameslen)
			n += (size_t)snprintf(names + n, nameslen - n, "%s%s",
			    n ? "," : "", p->name);
	}
	return langs;
}

/* First http(s) URI of a deb line ("deb [opts] URI suite ...") or of a
 * deb822 "URIs:" field in one sources file. */
static bool
mirror_from_file(const char *path, char *out, size_t outlen)
{
	char *text = NULL, *line, *save = NULL;
	bool found = false;

	if (util_read_file(path, 1 << 20, &text, NULL) < 0)
		return false;
	for (line = strtok_r(text, "\n", &save); line != NULL && !found;
	    line = strtok_r(NULL, "\n", &save)) {
		char *p = NULL;
		if (strncmp(line, "URIs:", 5) == 0)
			p = line + 5;
		else if (strncmp(line, "deb ", 4) == 0)
			p = line + 4;
		if (p == NULL)
			continue;
		for (char *tok = strtok(p, " \t"); tok != NULL;
		    tok = strtok(NULL, " \t")) {
			if (strncmp(tok, "http://", 7) == 0 ||
			    strncmp(tok, "https://", 8) == 0) {
				/* Only the main archive, not -security. */
				if (strstr(tok, "security") != NULL)
					continue;
				found = util_strlcpy(out, tok, outlen);
				break;
			}
		}
	}
	free(text);
	return found;
}

int
image_find_mirror(const struct config *c, char *out, size_t outlen)
{
	const char *dirpath = "/etc/apt/sources.list.d";
	struct dirent **names = NULL;
	int n;
	bool found = false;

	if (c->image.mirror[0] != '\0')
		return util_strlcpy(out, c->image.mirror, outlen) ? 0 : -E2BIG;
	if (mirror_from_file("/etc/apt/sources.list", out, outlen))
		return 0;
	n = scandir(dirpath, &names, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		char path[PATH_MAX];
		const char *nm = names[i]->d_name;
		size_t l = strlen(nm);
		if (!found && ((l > 8 && strcmp(nm + l - 8, ".sources") == 0) ||
		    (l > 5 && strcmp(nm + l - 5, ".list") == 0)) &&
		    (size_t)snprintf(path, sizeof(path), "%s/%s", dirpath, nm) <
		    sizeof(path))
			found = mirror_from_file(path, out, outlen);
		free(names[i]);
	}
	free(names);
	return found ? 0 : -ENOENT;
}

static void
progress(const struct image_build_opts *o, const char *msg)
{
	if (o != NULL && o->progress != NULL)
		o->progress(msg, o->arg);
}

/* Runs one build step through proc_call: 0 (then *out, when not NULL,
 * holds its stdout: caller frees), or proc_call's negative errno with
 * "ARGV0 failed: <first line of its stderr>" (or proc_call's own reason
 * when it timed out or could not start) in err. */
static int
run_step(const char *const *argv, int64_t timeout_ms, struct cbuf **out,
    char *err, size_t errlen)
{
	struct proc_opts po = { .argv = argv, .stdout_max = 1 << 16,
	    .stderr_max = 1 << 16 };
	struct cbuf *got = NULL;
	char why[320];
	int rc = proc_call(&po, timeout_ms, &got, NULL, why, sizeof(why));

	if (rc == -EIO)
		snprintf(err, errlen, "%s failed: %s", argv[0], why);
	else if (rc < 0)
		snprintf(err, errlen, "%s", why);
	if (rc == 0 && out != NULL)
		*out = got;
	else
		cbuf_free(got);
	return rc;
}

/* A walk below the image root (image_strip_setid): its state. */
struct setid_walk {
	dev_t dev;		/* the root's file system: never left */
	bool strip;		/* clear the bits (else only count them) */
	int errors;		/* chmods that failed */
	int left;		/* set-id files seen (counting pass) */
};

#define SETID_WALK_DEPTH 256

/* Walks the directory dfd (owned: closed here) without following a
 * symlink or leaving w->dev. 0 or a negative errno. */
static int
setid_walk_dir(struct setid_walk *w, int dfd, int depth)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;
	struct stat st;
	int rc = 0, sub;

	if (d == NULL) {
		close(dfd);
		return -errno;
	}
	while (rc == 0 && (errno = 0, de = readdir(d)) != NULL) {
		const char *n = de->d_name;
		if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0)
			continue;
		if (fstatat(dfd, n, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			rc = -errno;
			break;
		}
		if (st.st_dev != w->dev)
			continue;
		if (S_ISDIR(st.st_mode)) {
			if (depth >= SETID_WALK_DEPTH)
				rc = -ELOOP;
			else if ((sub = openat(dfd, n, O_RDONLY | O_DIRECTORY |
			    O_NOFOLLOW | O_CLOEXEC)) < 0)
				rc = -errno;
			else
				rc = setid_walk_dir(w, sub, depth + 1);
		} else if (!S_ISLNK(st.st_mode) &&
		    (st.st_mode & (S_ISUID | S_ISGID)) != 0) {
			/* Any other file (as nftw's FTW_F): directories keep
			 * their setgid bit (group inheritance, harmless). */
			if (!w->strip)
				w->left++;
			else if (fchmodat(dfd, n, st.st_mode & 07777 &
			    ~(mode_t)(S_ISUID | S_ISGID), 0) < 0)
				w->errors++;
		}
	}
	if (rc == 0 && errno != 0)
		rc = -errno;
	closedir(d);
	return rc;
}

int
image_strip_setid(const char *root)
{
	struct setid_walk w = { .strip = true };
	struct stat st;
	int fd;

	for (int pass = 0; pass < 2; pass++) {
		fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0) {
			if (fd >= 0)
				close(fd);
			return -EIO;
		}
		w.dev = st.st_dev;
		w.strip = pass == 0;
		if (setid_walk_dir(&w, fd, 0) < 0)
			return -EIO;
	}
	return (w.errors || w.left) ? -EPERM : 0;
}

static int
build_rootfs_tar(const struct config *c, const char *mirror, const char *tar,
    const struct image_build_opts *o, char *err, size_t errlen)
{
	char dir[PATH_MAX], tmptar[PATH_MAX], include[1024] = "--include=";
	size_t n = strlen(include);
	int rc;

	if ((size_t)snprintf(dir, sizeof(dir), "%s.d", tar) >= sizeof(dir) ||
	    (size_t)snprintf(tmptar, sizeof(tmptar), "%s.tmp", tar) >= sizeof(tmptar))
		return -ENAMETOOLONG;
	for (size_t i = 0; i < c->image.npackages; i++)
		n += (size_t)snprintf(include + n, sizeof(include) - n, "%s%s",
		    i ? "," : "", c->image.packages[i]);
	if (n >= sizeof(include))
		return -E2BIG;
	(void)util_rm_rf(dir);
	progress(o, "debootstrap (minbase) into the cache; this takes a minute or two");
	{
		const char *argv[] = { "debootstrap", "--variant=minbase",
		    include, c->image.suite, dir, mirror, NULL };
		if ((rc = run_step(argv, 1800 * 1000, NULL, err, errlen)) < 0)
			goto out;
	}
	/* Trim what a sandbox never needs: package caches and lists. */
	{
		static const char *const junk[] = { "var/cache/apt",
		    "var/lib/apt/lists" };
		char p[PATH_MAX];
		for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++)
			if ((size_t)snprintf(p, sizeof(p), "%s/%s", dir,
			    junk[i]) < sizeof(p))
				(void)util_rm_rf(p);
	}
	if ((rc = image_strip_setid(dir)) < 0) {
		snprintf(err, errlen, "could not strip setuid/setgid bits in %s",
		    dir);
		goto out;
	}
	progress(o, "setuid/setgid bits stripped; packing the rootfs tarball");
	{
		const char *argv[] = { "tar", "--numeric-owner", "-C", dir,
		    "-cf", tmptar, ".", NULL };
		if ((rc = run_step(argv, 600 * 1000, NULL, err, errlen)) < 0)
			goto out;
	}
	if (rename(tmptar, tar) < 0) {
		rc = -errno;
		snprintf(err, errlen, "rename %s: %s", tmptar, strerror(errno));
	}
out:
	(void)util_rm_rf(dir);
	unlink(tmptar);
	return rc;
}

static bool
image_present(const struct config *c, const char *id)
{
	const char *argv[] = { c->docker, "image", "inspect", "--format",
	    "{{.Id}}", id, NULL };
	char err[256];
	struct cbuf *out = NULL;
	bool ok;

	ok = run_step(argv, 60 * 1000, &out, err, sizeof(err)) == 0 &&
	    strncmp(cbuf_data(out), id, strlen(id)) == 0;
	cbuf_free(out);
	return ok;
}

static int
record_write(const struct config *c, const struct image_record *rec)
{
	char path[PATH_MAX], *line;
	cJSON *o = cJSON_CreateObject();
	int rc;

	if (o == NULL)
		return -ENOMEM;
	cJSON_AddStringToObject(o, "id", rec->id);
	cJSON_AddStringToObject(o, "inputs", rec->inputs);
	cJSON_AddStringToObject(o, "name", rec->name);
	cJSON_AddStringToObject(o, "built_at", rec->built_at);
	if (rec->rootfs_at[0] != '\0')
		cJSON_AddStringToObject(o, "rootfs_at", rec->rootfs_at);
	line = json_print_line(o);
	cJSON_Delete(o);
	if (line == NULL)
		return -ENOMEM;
	if ((rc = record_path(c, path, sizeof(path))) == 0 &&
	    (rc = util_mkdir_p(c->state_dir, 0755)) == 0)
		rc = util_write_file_atomic(path, line, strlen(line), 0644);
	free(line);
	return rc;
}

int
image_build(const struct config *c, const struct image_build_opts *o,
    struct image_record *rec, bool *rebuilt, char *err, size_t errlen)
{
	char mirror[256], fp[65], tar[PATH_MAX], tag[200];
	struct image_record old;
	struct cbuf *out = NULL;
	struct stat st;
	int rc;

	memset(rec, 0, sizeof(*rec));
	*rebuilt = false;
	if ((rc = image_find_mirror(c, mirror, sizeof(mirror))) < 0) {
		snprintf(err, errlen, "no Debian mirror: set image.mirror in the "
		    "config or add one to /etc/apt/sources.list");
		return rc;
	}
	if ((rc = image_inputs_fingerprint(c, mirror, fp)) < 0) {
		snprintf(err, errlen, "cannot fingerprint the image inputs");
		return rc;
	}
	if (!o->force && image_record_read(c, &old) == 0 &&
	    strcmp(old.inputs, fp) == 0 && image_present(c, old.id)) {
		*rec = old;
		progress(o, "image is up to date (inputs unchanged, ID present)");
		return 0;
	}
	if ((rc = util_mkdir_p(c->cache_dir, 0700)) < 0) {
		snprintf(err, errlen, "mkdir %s: %s", c->cache_dir, strerror(-rc));
		return rc;
	}
	snprintf(tar, sizeof(tar), "%s/rootfs-%.16s.tar", c->cache_dir, fp);
	if (o->force || stat(tar, &st) < 0) {
		if ((rc = build_rootfs_tar(c, mirror, tar, o, err, errlen)) < 0)
			return rc;
	} else {
		progress(o, "reusing the cached rootfs tarball");
	}
	/* The tarball's time is when its packages came from the mirror. */
	if (stat(tar, &st) == 0)
		time_format_utc((int64_t)st.st_mtim.tv_sec * 1000 +
		    st.st_mtim.tv_nsec / 1000000, rec->rootfs_at);
	snprintf(tag, sizeof(tag), "%s:%.12s", c->image.name, fp);
	progress(o, "docker import");
	{
		const char *argv[] = { c->docker, "import", tar, tag, NULL };
		if ((rc = run_step(argv, 600 * 1000, &out, err, errlen)) < 0)
			return rc;
	}
	util_strlcpy(rec->id, cbuf_data(out), sizeof(rec->id));
	cbuf_free(out);
	rec->id[strcspn(rec->id, "\r\n")] = '\0';
	if (!image_id_valid(rec->id)) {
		snprintf(err, errlen, "docker import printed no image ID");
		memset(rec, 0, sizeof(*rec));
		return -EIO;
	}
	util_strlcpy(rec->inputs, fp, sizeof(rec->inputs));
	util_strlcpy(rec->name, tag, sizeof(rec->name));
	time_format_utc(time_wall_ms(), rec->built_at);
	if ((rc = record_write(c, rec)) < 0) {
		snprintf(err, errlen, "cannot record the image in %s: %s",
		    c->state_dir, strerror(-rc));
		memset(rec, 0, sizeof(*rec));
		return rc;
	}
	*rebuilt = true;
	return 0;
}
