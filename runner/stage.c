/*
 * Caller-supplied files for a run (stage.h): the pure check of a request's
 * `files` array (one set of rules and messages for MCP and the service),
 * then staging, each file created with openat/mkdirat under a fresh
 * directory, O_EXCL and O_NOFOLLOW, so a hostile name can neither escape
 * the directory nor overwrite anything.
 */
#include "runner/stage.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/json.h"
#include "common/util.h"

bool
stage_path_safe(const char *path)
{
	size_t len = strlen(path), comp = 0, depth = 0;

	if (len == 0 || len > STAGE_PATH_MAX)
		return false;
	for (size_t i = 0; i <= len; i++) {
		unsigned char ch = (unsigned char)path[i];

		if (ch == '/' || ch == '\0') {
			/* Empty, "." and ".." components are all refused. */
			if (comp == 0 || (comp == 1 && path[i - 1] == '.') ||
			    (comp == 2 && path[i - 1] == '.' &&
			    path[i - 2] == '.'))
				return false;
			if (++depth > STAGE_PATH_DEPTH)
				return false;
			comp = 0;
			continue;
		}
		if (ch < 0x20 || ch > 0x7e || ch == '\\')
			return false;
		comp++;
	}
	return true;
}

static int
b64_value(unsigned char ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	if (ch == '+')
		return 62;
	if (ch == '/')
		return 63;
	return -1;
}

int
stage_base64_decode(const char *s, size_t len, unsigned char **out,
    size_t *outlen)
{
	unsigned char *buf;
	size_t n = 0;

	*out = NULL;
	*outlen = 0;
	if (len % 4 != 0)
		return -EINVAL;
	if ((buf = malloc(len / 4 * 3 + 1)) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < len; i += 4) {
		int v[4], pad = 0;
		bool last = i + 4 == len;

		for (int k = 0; k < 4; k++) {
			unsigned char ch = (unsigned char)s[i + k];

			/* '=' only at the end: "xx==" or "xxx=". */
			if (ch == '=' && last && k >= 2 &&
			    (k == 3 || s[i + 3] == '=')) {
				v[k] = 0;
				pad++;
				continue;
			}
			if (pad > 0 || (v[k] = b64_value(ch)) < 0) {
				free(buf);
				return -EINVAL;
			}
		}
		buf[n++] = (unsigned char)(v[0] << 2 | v[1] >> 4);
		if (pad < 2)
			buf[n++] = (unsigned char)((v[1] & 15) << 4 | v[2] >> 2);
		if (pad < 1)
			buf[n++] = (unsigned char)((v[2] & 3) << 6 | v[3]);
		/* Non-canonical encodings (stray low bits) are refused. */
		if ((pad == 2 && (v[1] & 15) != 0) ||
		    (pad == 1 && (v[2] & 3) != 0)) {
			free(buf);
			return -EINVAL;
		}
	}
	*out = buf;
	*outlen = n;
	return 0;
}

void
stage_files_free(struct stage_file *f, size_t n)
{
	if (f == NULL)
		return;
	for (size_t i = 0; i < n; i++) {
		free(f[i].path);
		free(f[i].data);
	}
	free(f);
}

/* Checks entry i of `files` and copies it into f (left zeroed on
 * failure). */
static int
parse_one(const cJSON *e, size_t i, enum stage_content how,
    struct stage_file *f, char *err, size_t errlen)
{
	const char *key = how == STAGE_CONTENT_BASE64 ? "content_b64" :
	    "content";
	const char *path, *content;
	const cJSON *m;
	size_t len;
	int rc;

	if (!cJSON_IsObject(e) || json_get_string(e, "path", &path) < 0 ||
	    json_get_string(e, key, &content) < 0) {
		snprintf(err, errlen, "'files'[%zu] must be an object with "
		    "string 'path' and '%s'", i, key);
		return -EINVAL;
	}
	cJSON_ArrayForEach(m, e)
		if (strcmp(m->string, "path") != 0 &&
		    strcmp(m->string, key) != 0) {
			snprintf(err, errlen, "'files'[%zu]: only 'path' and "
			    "'%s' are allowed", i, key);
			return -EINVAL;
		}
	if (!stage_path_safe(path)) {
		snprintf(err, errlen, "'files'[%zu]: unsafe path (a relative "
		    "path of printable ASCII, no '..', '.' or empty "
		    "components, at most %d bytes)", i, STAGE_PATH_MAX);
		return -EINVAL;
	}
	len = strlen(content);
	if (how == STAGE_CONTENT_BASE64) {
		rc = stage_base64_decode(content, len, &f->data, &f->len);
		if (rc == -EINVAL) {
			snprintf(err, errlen, "'files'[%zu]: '%s' is not "
			    "canonical base64", i, key);
			return -EINVAL;
		}
	} else if ((f->data = malloc(len + 1)) != NULL) {
		memcpy(f->data, content, len + 1);
		f->len = len;
		rc = 0;
	} else {
		rc = -ENOMEM;
	}
	if (rc == 0 && (f->path = strdup(path)) == NULL) {
		free(f->data);
		*f = (struct stage_file){ NULL, NULL, 0 };
		rc = -ENOMEM;
	}
	if (rc < 0)
		snprintf(err, errlen, "out of memory");
	return rc;
}

int
stage_files_parse(const struct config *c, const cJSON *files,
    enum stage_content how, struct stage_file **out, size_t *n, char *err,
    size_t errlen)
{
	struct stage_file *f = NULL;
	const cJSON *e;
	uint64_t total = 0;
	size_t count = 0;
	int size = cJSON_GetArraySize(files), rc = 0;

	*out = NULL;
	*n = 0;
	if (!cJSON_IsArray(files)) {
		snprintf(err, errlen, "'files' must be an array");
		return -EINVAL;
	}
	if (size > c->limits.in_max_files) {
		snprintf(err, errlen, "'files': at most %lld entries (config "
		    "limits.in_max_files)", (long long)c->limits.in_max_files);
		return -EINVAL;
	}
	if (size == 0)
		return 0;
	if ((f = calloc((size_t)size, sizeof(*f))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	cJSON_ArrayForEach(e, files) {
		if ((rc = parse_one(e, count, how, &f[count], err, errlen)) < 0)
			break;
		total += f[count++].len;
		if (total > c->limits.in_max_bytes) {
			snprintf(err, errlen, "'files': more than %llu bytes "
			    "in total, the maximum (config "
			    "limits.in_max_bytes)",
			    (unsigned long long)c->limits.in_max_bytes);
			rc = -EFBIG;
			break;
		}
	}
	if (rc < 0) {
		stage_files_free(f, count);
		return rc;
	}
	*out = f;
	*n = count;
	return 0;
}

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
