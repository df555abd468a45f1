/*
 * ustar and PAX reading (tar.h): 512-byte headers with octal fields and a
 * checksum, PAX extended headers merged into their entry; only types
 * '0'/'\0' (file) and '5' (directory) are ever accepted by the refusal
 * rules, and extraction opens every path component with O_NOFOLLOW
 * relative to the output directory.
 */
#include "runner/tar.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BLOCK 512

void
runner_tar_reader_init(struct tar_reader *r, const void *buf, size_t len)
{
	r->buf = buf;
	r->len = len;
	r->off = 0;
}

/* Octal field of width n: optional leading spaces, digits, then NUL/space
 * padding. Base-256 (GNU) sizes are refused. */
static int
parse_octal(const unsigned char *f, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	size_t i = 0;
	bool digits = false;

	while (i < n && f[i] == ' ')
		i++;
	for (; i < n && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v > (UINT64_MAX >> 3))
			return -EBADMSG;
		v = (v << 3) | (uint64_t)(f[i] - '0');
		digits = true;
	}
	for (; i < n; i++)
		if (f[i] != '\0' && f[i] != ' ')
			return -EBADMSG;
	if (!digits)
		return -EBADMSG;
	*out = v;
	return 0;
}

static bool
all_zero(const unsigned char *b)
{
	for (size_t i = 0; i < BLOCK; i++)
		if (b[i] != 0)
			return false;
	return true;
}

static int
check_sum(const unsigned char *h)
{
	uint64_t want, got = 0;

	if (parse_octal(h + 148, 8, &want) < 0)
		return -EBADMSG;
	for (size_t i = 0; i < BLOCK; i++)
		got += (i >= 148 && i < 156) ? ' ' : h[i];
	return got == want ? 0 : -EBADMSG;
}

/* name = prefix "/" name (ustar), both fields possibly unterminated at
 * their full width. */
static int
copy_name(const unsigned char *h, char out[TAR_NAME_MAX])
{
	size_t nl = strnlen((const char *)h, 100);
	size_t pl = 0;

	if (memcmp(h + 257, "ustar", 5) == 0)
		pl = strnlen((const char *)h + 345, 155);
	if (pl + 1 + nl + 1 > TAR_NAME_MAX)
		return -EBADMSG;
	if (pl > 0) {
		memcpy(out, h + 345, pl);
		out[pl] = '/';
		memcpy(out + pl + 1, h, nl);
		out[pl + 1 + nl] = '\0';
	} else {
		memcpy(out, h, nl);
		out[nl] = '\0';
	}
	return 0;
}

/* What a PAX extended header says about the entry after it. */
struct pax {
	const unsigned char *path;	/* inside the stream; NULL: none */
	size_t path_len;
	bool has_size;
	uint64_t size;
	bool unknown;
};

/* Records that change nothing for the refusal rules or the unpacker. */
static bool
pax_ignored(const unsigned char *k, size_t n)
{
	static const char *const keys[] = { "mtime", "atime", "ctime", "uid",
	    "gid", "uname", "gname", "hdrcharset", "comment", "linkpath" };

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strlen(keys[i]) == n && memcmp(k, keys[i], n) == 0)
			return true;
	return false;
}

/* Decimal digits only, no overflow. */
static int
pax_decimal(const unsigned char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;

	if (n == 0 || n > 19)
		return -EBADMSG;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EBADMSG;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return 0;
}

/* One record "LEN KEY=VALUE\n" at d[0..n); returns its length, or
 * -EBADMSG. */
static long
pax_record(const unsigned char *d, size_t n, struct pax *pax)
{
	const unsigned char *sp = memchr(d, ' ', n < 8 ? n : 8), *k, *eq;
	uint64_t len;
	size_t klen, vlen;

	if (sp == NULL || pax_decimal(d, (size_t)(sp - d), &len) < 0 ||
	    len > n || len < (uint64_t)(sp - d) + 4 || d[len - 1] != '\n')
		return -EBADMSG;
	k = sp + 1;
	if ((eq = memchr(k, '=', (size_t)(d + len - 1 - k))) == NULL ||
	    eq == k)
		return -EBADMSG;
	klen = (size_t)(eq - k);
	vlen = (size_t)(d + len - 1 - (eq + 1));
	if (klen == 4 && memcmp(k, "path", 4) == 0) {
		if (vlen == 0 || vlen >= TAR_NAME_MAX ||
		    memchr(eq + 1, '\0', vlen) != NULL)
			return -EBADMSG;
		pax->path = eq + 1;
		pax->path_len = vlen;
	} else if (klen == 4 && memcmp(k, "size", 4) == 0) {
		if (pax_decimal(eq + 1, vlen, &pax->size) < 0)
			return -EBADMSG;
		pax->has_size = true;
	} else if (!pax_ignored(k, klen)) {
		pax->unknown = true;
	}
	return (long)len;
}

static int
pax_parse(const unsigned char *d, uint64_t n, struct pax *pax)
{
	memset(pax, 0, sizeof(*pax));
	if (n > TAR_PAX_MAX)
		return -EBADMSG;
	while (n > 0) {
		long l = pax_record(d, (size_t)n, pax);
		if (l < 0)
			return (int)l;
		d += l;
		n -= (uint64_t)l;
	}
	return 0;
}

/* The entry whose header is at r->off, with pax (optional) applied; moves
 * past its data. Same returns as runner_tar_next. */
static int
read_entry(struct tar_reader *r, struct tar_entry *e, const struct pax *pax)
{
	const unsigned char *h;
	uint64_t size, padded, mode;

	if (r->off == r->len)
		return 0;
	if (r->len - r->off < BLOCK)
		return -EPIPE;
	h = r->buf + r->off;
	if (all_zero(h))
		return 0;
	if (check_sum(h) < 0 || parse_octal(h + 124, 12, &size) < 0 ||
	    copy_name(h, e->name) < 0)
		return -EBADMSG;
	e->pax_unknown = false;
	if (pax != NULL) {
		if (pax->has_size)
			size = pax->size;
		if (pax->path != NULL) {
			memcpy(e->name, pax->path, pax->path_len);
			e->name[pax->path_len] = '\0';
		}
		e->pax_unknown = pax->unknown;
	}
	if (size > (uint64_t)(r->len - r->off - BLOCK))
		return -EPIPE;
	padded = (size + BLOCK - 1) / BLOCK * BLOCK;
	e->typeflag = (char)h[156];
	e->mode = parse_octal(h + 100, 8, &mode) == 0 && mode <= 07777777 ?
	    (int32_t)mode : -1;
	e->type = (h[156] == '0' || h[156] == '\0') ? TAR_FILE :
	    h[156] == '5' ? TAR_DIR : TAR_OTHER;
	e->size = size;
	e->data = h + BLOCK;
	if (padded > (uint64_t)(r->len - r->off - BLOCK))
		r->off = r->len;	/* last block may be unpadded */
	else
		r->off += BLOCK + (size_t)padded;
	return 1;
}

int
runner_tar_next(struct tar_reader *r, struct tar_entry *e)
{
	struct pax pax;
	size_t start = r->off;
	int rc;

	if ((rc = read_entry(r, e, NULL)) != 1 || e->typeflag != 'x')
		return rc;
	if (pax_parse(e->data, e->size, &pax) < 0) {
		r->off = start;
		return -EBADMSG;
	}
	/* The entry it describes must follow: not the end, not another
	 * extended or global header. */
	if ((rc = read_entry(r, e, &pax)) != 1 || e->typeflag == 'x' ||
	    e->typeflag == 'g') {
		r->off = start;
		return rc < 0 ? rc : -EBADMSG;
	}
	return 1;
}

const char *
runner_tar_entry_refusal(struct tar_entry *e)
{
	char *n = e->name;
	size_t len;

	if (e->type == TAR_OTHER)
		return e->typeflag == '1' || e->typeflag == '2' ? "link" :
		    e->typeflag == 'g' ? "pax global header" :
		    "not a regular file or directory";
	if (e->pax_unknown)
		return "unsupported pax record";
	if (e->type == TAR_DIR && e->size != 0)
		return "directory with data";
	if (n[0] == '/')
		return "absolute path";
	while (n[0] == '.' && n[1] == '/')
		memmove(n, n + 2, strlen(n + 2) + 1);
	/* "./" then "/": absolute once stripped (".//etc/x"). The
	 * component walk below skips one '/', so check here. */
	if (n[0] == '/')
		return "absolute path";
	len = strlen(n);
	while (len > 0 && n[len - 1] == '/')
		n[--len] = '\0';
	if (len == 0 || strcmp(n, ".") == 0)
		return "empty name";
	for (const char *p = n; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return "control character in name";
	for (const char *c = n; c != NULL; c = strchr(c, '/')) {
		size_t cl;
		if (*c == '/')
			c++;
		cl = strcspn(c, "/");
		if (cl == 0)
			return "empty path component";
		if ((cl == 2 && c[0] == '.' && c[1] == '.') ||
		    (cl == 1 && c[0] == '.'))
			return "'.' or '..' component";
	}
	return NULL;
}

/* Opens (creating if needed) each directory of path[0..end) below dirfd,
 * never following links. Returns an fd or a negative errno. */
static int
open_parent(int dirfd, const char *path, size_t end)
{
	char comp[TAR_NAME_MAX];
	size_t i = 0;
	int fd = dup(dirfd);

	if (fd < 0)
		return -errno;
	while (i < end) {
		size_t cl = strcspn(path + i, "/");
		int nfd;
		if (i + cl > end)
			cl = end - i;
		memcpy(comp, path + i, cl);
		comp[cl] = '\0';
		if (mkdirat(fd, comp, 0755) < 0 && errno != EEXIST) {
			int e = -errno;
			close(fd);
			return e;
		}
		nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		close(fd);
		if (nfd < 0)
			return -errno;
		fd = nfd;
		i += cl + 1;
	}
	return fd;
}

static int
write_all(int fd, const unsigned char *p, uint64_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n > (1u << 20) ? (1u << 20) : n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		n -= (uint64_t)w;
	}
	return 0;
}

int
runner_tar_write_entry(int dirfd, const struct tar_entry *e)
{
	const char *slash = strrchr(e->name, '/');
	const char *base = slash != NULL ? slash + 1 : e->name;
	int pfd, fd, rc = 0;

	pfd = open_parent(dirfd, e->name,
	    slash != NULL ? (size_t)(slash - e->name) : 0);
	if (pfd < 0)
		return pfd;
	if (e->type == TAR_DIR) {
		if (mkdirat(pfd, base, 0755) < 0 && errno != EEXIST)
			rc = -errno;
		else if ((fd = openat(pfd, base, O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC)) < 0)
			rc = -errno;
		else
			close(fd);
		close(pfd);
		return rc;
	}
	fd = openat(pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0644);
	close(pfd);
	if (fd < 0)
		return -errno;
	rc = write_all(fd, e->data, e->size);
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	return rc;
}
