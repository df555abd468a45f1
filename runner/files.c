/*
 * --in staging and --out unpacking (files.h). Staging walks the inputs
 * with lstat/O_NOFOLLOW so a link is refused rather than followed; the
 * copies are world-readable because the job runs as nobody.
 */
#include "runner/files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "runner/outwrap.h"
#include "runner/tar.h"

struct stage {
	const struct config_limits *l;
	int64_t files;
	uint64_t bytes;
	char *err;
	size_t errlen;
};

static int stage_path(struct stage *s, const char *src, const char *dst);

static int
copy_file(struct stage *s, const char *src, const char *dst)
{
	char buf[65536];
	int in, out, rc = 0;
	ssize_t n;

	struct stat st;

	/* O_NONBLOCK: a FIFO swapped in after lstat must not hang us. */
	if ((in = open(src, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC)) < 0)
		return -errno;
	if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(in);
		return -EPERM;
	}
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    0644);
	if (out < 0) {
		rc = -errno;
		close(in);
		return rc;
	}
	(void)fchmod(out, 0644);
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || write(out, buf, (size_t)n) != n) {
			rc = -EIO;
			break;
		}
		/* The file may grow while we copy: the limit still holds. */
		s->bytes += (uint64_t)n;
		if (s->bytes > s->l->in_max_bytes) {
			snprintf(s->err, s->errlen, "--in: more than %llu bytes, "
			    "the maximum (config limits.in_max_bytes)",
			    (unsigned long long)s->l->in_max_bytes);
			rc = -EFBIG;
			break;
		}
	}
	close(in);
	if (close(out) < 0 && rc == 0)
		rc = -errno;
	return rc;
}

static int
stage_dir(struct stage *s, const char *src, const char *dst)
{
	char cs[PATH_MAX], cd[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int fd, rc = 0;

	if (mkdir(dst, 0755) < 0 || chmod(dst, 0755) < 0)
		return -errno;
	if ((fd = open(src, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) < 0)
		return -errno;
	if ((d = fdopendir(fd)) == NULL) {
		rc = -errno;
		close(fd);
		return rc;
	}
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if ((size_t)snprintf(cs, sizeof(cs), "%s/%s", src, de->d_name) >=
		    sizeof(cs) || (size_t)snprintf(cd, sizeof(cd), "%s/%s", dst,
		    de->d_name) >= sizeof(cd)) {
			snprintf(s->err, s->errlen, "--in: path too long");
			rc = -ENAMETOOLONG;
			break;
		}
		rc = stage_path(s, cs, cd);
	}
	closedir(d);
	return rc;
}

static int
stage_path(struct stage *s, const char *src, const char *dst)
{
	struct stat st;

	if (lstat(src, &st) < 0) {
		snprintf(s->err, s->errlen, "--in %s: %s", src, strerror(errno));
		return -errno;
	}
	if (++s->files > s->l->in_max_files) {
		snprintf(s->err, s->errlen, "--in: more than %lld files, the "
		    "maximum (config limits.in_max_files)",
		    (long long)s->l->in_max_files);
		return -EMFILE;
	}
	if (S_ISDIR(st.st_mode))
		return stage_dir(s, src, dst);
	if (!S_ISREG(st.st_mode)) {
		snprintf(s->err, s->errlen, "--in %s: %s refused", src,
		    S_ISLNK(st.st_mode) ? "symbolic link" : "special file");
		return -EPERM;
	}
	return copy_file(s, src, dst);
}

static int
make_run_dir(const struct config *c, const char *name, char *dir,
    size_t dirlen)
{
	char base[PATH_MAX];
	int rc;

	if ((size_t)snprintf(base, sizeof(base), "%s/in", c->state_dir) >=
	    sizeof(base) || (size_t)snprintf(dir, dirlen, "%s/%s.XXXXXX", base,
	    name) >= dirlen)
		return -ENAMETOOLONG;
	if ((rc = util_mkdir_p(base, 0711)) < 0)
		return rc;
	if (mkdtemp(dir) == NULL || chmod(dir, 0755) < 0)
		return -errno;
	return 0;
}

int
files_stage_in(const struct config *c, const char *name,
    const char *const *paths, size_t n, char *dir, size_t dirlen, char *err,
    size_t errlen)
{
	struct stage s = { &c->limits, 0, 0, err, errlen };
	char dst[PATH_MAX];
	int rc;

	if ((rc = make_run_dir(c, name, dir, dirlen)) < 0) {
		snprintf(err, errlen, "--in: cannot create a staging directory "
		    "under %s/in: %s", c->state_dir, strerror(-rc));
		return rc;
	}
	for (size_t i = 0; i < n && rc == 0; i++) {
		char *copy = strdup(paths[i]);
		const char *b;
		size_t l;
		if (copy == NULL) {
			rc = -ENOMEM;
			break;
		}
		/* Base name, ignoring trailing slashes ("dir/" -> "dir"). */
		for (l = strlen(copy); l > 1 && copy[l - 1] == '/'; l--)
			copy[l - 1] = '\0';
		b = strrchr(copy, '/');
		b = b != NULL ? b + 1 : copy;
		if (*b == '\0' || strcmp(b, ".") == 0 || strcmp(b, "..") == 0) {
			snprintf(err, errlen, "--in %s: needs a named file or "
			    "directory", paths[i]);
			rc = -EINVAL;
		} else if ((size_t)snprintf(dst, sizeof(dst), "%s/%s", dir, b) >=
		    sizeof(dst)) {
			rc = -ENAMETOOLONG;
		} else if (access(dst, F_OK) == 0) {
			snprintf(err, errlen, "--in: two inputs named '%s'", b);
			rc = -EEXIST;
		} else {
			rc = stage_path(&s, copy, dst);
			if (rc < 0 && err[0] == '\0')
				snprintf(err, errlen, "--in %s: %s", paths[i],
				    strerror(-rc));
		}
		free(copy);
	}
	if (rc < 0) {
		(void)util_rm_rf(dir);
		dir[0] = '\0';
	}
	return rc;
}

static int
add_file(struct runner_result *res, const char *path, uint64_t size,
    const char *refused)
{
	struct runner_file *f;

	f = realloc(res->files, (res->nfiles + 1) * sizeof(*f));
	if (f == NULL)
		return -ENOMEM;
	res->files = f;
	f = &res->files[res->nfiles];
	if ((f->path = strdup(path)) == NULL)
		return -ENOMEM;
	f->size = size;
	f->refused = refused;
	res->nfiles++;
	return 0;
}

/* Decides about one entry and writes it when allowed. */
static int
unpack_one(const struct config_limits *l, int dfd, struct tar_entry *e,
    int64_t *count, uint64_t *bytes, struct runner_result *res)
{
	const char *why = runner_tar_entry_refusal(e);
	int rc;

	if (why == NULL && *count + 1 > l->out_max_files)
		why = "over the file count limit";
	if (why == NULL && *bytes + e->size > l->out_max_bytes)
		why = "over the size limit";
	if (why == NULL) {
		rc = runner_tar_write_entry(dfd, e);
		if (rc == -EEXIST)
			why = "already exists";
		else if (rc < 0)
			why = "could not be written";
	}
	if (why == NULL) {
		(*count)++;
		*bytes += e->size;
	}
	/* Directories are reported only when refused. */
	if (why == NULL && e->type == TAR_DIR)
		return 0;
	return add_file(res, e->name, e->size, why);
}

/* Lists the files the wrapper reported it could not pack (rest: the bytes
 * after the archive's end marker) in res->files, each with a static
 * reason. The report is untrusted: it only ever adds lines to "files". */
static int
report_unpacked(const struct config_limits *l, const unsigned char *rest,
    size_t len, struct runner_result *res)
{
	size_t max = l->out_max_files > 0 ? (size_t)l->out_max_files : 0;
	const cJSON *it;
	cJSON *arr;
	int rc;

	if ((rc = outwrap_report_parse(rest, len, max, &arr)) < 0) {
		if (rc == -ENOMEM)
			return rc;
		snprintf(res->files_error, sizeof(res->files_error), "%s",
		    rc == -ENOENT ? "no report of the files the sandbox "
		    "could not pack (output cap?)" : rc == -E2BIG ?
		    "the sandbox could not pack more files than the file "
		    "count limit" : "the report of files the sandbox could "
		    "not pack was malformed");
		return 0;
	}
	rc = 0;
	cJSON_ArrayForEach(it, arr) {
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(it, "path");
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(it, "size");
		const cJSON *w = cJSON_GetObjectItemCaseSensitive(it, "why");
		if ((rc = add_file(res, p->valuestring,
		    (uint64_t)n->valuedouble,
		    outwrap_report_reason(w->valuestring))) < 0)
			break;
	}
	cJSON_Delete(arr);
	return rc;
}

int
runner_out_dir_check(const char *out_dir, char *err, size_t errlen)
{
	struct stat st;
	int rc;

	if ((rc = util_mkdir_p(out_dir, 0755)) < 0 && rc != -EEXIST) {
		snprintf(err, errlen, "--out %.200s: cannot create it: %s",
		    out_dir, strerror(-rc));
		return rc;
	}
	if (stat(out_dir, &st) < 0) {
		rc = -errno;
		snprintf(err, errlen, "--out %.200s: %s", out_dir,
		    strerror(-rc));
		return rc;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "--out %.200s: not a directory", out_dir);
		return -ENOTDIR;
	}
	if (access(out_dir, W_OK | X_OK) < 0) {
		rc = -errno;
		snprintf(err, errlen, "--out %.200s: cannot write into it: %s",
		    out_dir, strerror(-rc));
		return rc;
	}
	return 0;
}

int
files_unpack_out(const struct config *c, const void *tar, size_t len,
    const char *out_dir, struct runner_result *res)
{
	struct tar_reader r;
	struct tar_entry e;
	uint64_t bytes = 0;
	int64_t count = 0;
	int dfd, rc = 0, n;

	if ((rc = util_mkdir_p(out_dir, 0755)) < 0)
		return rc;
	dfd = open(out_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	runner_tar_reader_init(&r, tar, len);
	while ((n = runner_tar_next(&r, &e)) == 1)
		if ((rc = unpack_one(&c->limits, dfd, &e, &count, &bytes,
		    res)) < 0)
			break;
	close(dfd);
	if (rc == 0 && n < 0)
		snprintf(res->files_error, sizeof(res->files_error), "%s",
		    n == -EPIPE ? "the archive was cut short (output cap)" :
		    "the archive was malformed; the rest was ignored");
	else if (rc == 0 && n == 0)
		rc = report_unpacked(&c->limits, r.buf + r.off, r.len - r.off,
		    res);
	return rc;
}
