/*
 * Staging of caller-supplied files for a run (stage.h): each file created
 * with openat/mkdirat under a fresh directory, O_EXCL and O_NOFOLLOW, so a
 * hostile name can neither escape the directory nor overwrite anything.
 */
#include "runner/stage.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"

static int
write_all(int fd, const unsigned char *p, size_t n)
{
	ssize_t w;

	while (n > 0) {
		w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Creates f->path under dfd, making parent directories. */
static int
write_one(int dfd, const struct stage_file *f)
{
	char buf[PATH_MAX], *comp, *slash;
	int cur = dfd, next, fd, rc = 0;

	if (!util_strlcpy(buf, f->path, sizeof(buf)))
		return -ENAMETOOLONG;
	comp = buf;
	while ((slash = strchr(comp, '/')) != NULL) {
		*slash = '\0';
		if (mkdirat(cur, comp, 0755) < 0 && errno != EEXIST) {
			rc = -errno;
			goto out;
		}
		next = openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		if (next < 0) {
			rc = -errno;
			goto out;
		}
		if (cur != dfd)
			close(cur);
		cur = next;
		comp = slash + 1;
	}
	fd = openat(cur, comp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	rc = write_all(fd, f->data, f->len);
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
out:
	if (cur != dfd)
		close(cur);
	return rc;
}

void
stage_dir_cleanup(struct stage_dir *st)
{
	for (size_t i = 0; i < st->nin; i++)
		free(st->in[i]);
	if (st->dir[0] != '\0')
		(void)util_rm_rf(st->dir);
	memset(st, 0, sizeof(*st));
}

/* Remembers the top-level name of rel as an --in path (once). */
static int
add_top(struct stage_dir *st, const char *rel, char *err, size_t errlen)
{
	size_t n = strcspn(rel, "/"), dl = strlen(st->dir);
	char *p;

	for (size_t i = 0; i < st->nin; i++)
		if (strncmp(st->in[i] + dl + 1, rel, n) == 0 &&
		    st->in[i][dl + 1 + n] == '\0')
			return 0;
	if (st->nin == RUNNER_MAX_IN) {
		snprintf(err, errlen, "'files': at most %d distinct top-level "
		    "names", RUNNER_MAX_IN);
		return -EINVAL;
	}
	if (asprintf(&p, "%s/%.*s", st->dir, (int)n, rel) < 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	st->in[st->nin++] = p;
	return 0;
}

int
stage_write(const char *parent, const char *prefix,
    const struct stage_file *files, size_t n, struct stage_dir *st,
    char *err, size_t errlen)
{
	int dfd, rc = 0;

	memset(st, 0, sizeof(*st));
	if (n == 0)
		return 0;
	if (snprintf(st->dir, sizeof(st->dir), "%s/%s.XXXXXX", parent,
	    prefix) >= (int)sizeof(st->dir))
		rc = -ENAMETOOLONG;
	else if (mkdtemp(st->dir) == NULL)
		rc = -errno;
	if (rc < 0) {
		snprintf(err, errlen, "cannot create a temporary directory "
		    "under %.200s: %s", parent, strerror(-rc));
		st->dir[0] = '\0';
		return rc;
	}
	if ((dfd = open(st->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot open %.200s: %s", st->dir,
		    strerror(-rc));
		stage_dir_cleanup(st);
		return rc;
	}
	for (size_t i = 0; i < n && rc == 0; i++) {
		rc = write_one(dfd, &files[i]);
		if (rc == -EEXIST || rc == -ENOTDIR || rc == -EISDIR) {
			snprintf(err, errlen, "'files': path given twice or "
			    "both as a file and a directory");
			rc = -EINVAL;
		} else if (rc < 0) {
			snprintf(err, errlen, "cannot write a file under %.200s: "
			    "%s", st->dir, strerror(-rc));
		}
		if (rc == 0)
			rc = add_top(st, files[i].path, err, errlen);
	}
	close(dfd);
	if (rc < 0)
		stage_dir_cleanup(st);
	return rc;
}
