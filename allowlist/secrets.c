/*
 * The secrets store that inject= names refer to: a root-only file of
 * NAME=VALUE lines or a root-only directory of one file per secret. Values
 * go only into allowlist_inspect.inject_value: no diagnostic quotes one (or
 * any text of a secrets file that might be one), and every copy is zeroed
 * before it is freed.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "allowlist/internal.h"

struct al_secrets {
	char *path;
	int dfd;		/* a directory store; -1 for a file */
	char **names, **values;
	unsigned *lines;
	size_t n, cap;
};

bool
al_secret_name_ok(const char *s, size_t len)
{
	if (len == 0 || len > ALLOWLIST_SECRET_NAME_MAX || s[0] == '.')
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

/* Why value v[0..len) cannot be sent as a header value, or NULL. */
static const char *
secret_value_problem(const char *v, size_t len)
{
	if (len == 0)
		return "its value is empty";
	if (len > ALLOWLIST_SECRET_MAX)
		return "its value is longer than 8192 bytes";
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)v[i];
		if (c == '\0')
			return "its value holds a NUL byte";
		if (c == '\r' || c == '\n')
			return "its value holds a CR or LF (which would end "
			    "the header)";
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return "its value holds a control byte";
	}
	if (v[0] == ' ' || v[0] == '\t' || v[len - 1] == ' ' ||
	    v[len - 1] == '\t')
		return "its value starts or ends with a space or tab";
	return NULL;
}

static void
secret_zero_free(char *s, size_t len)
{
	if (s == NULL)
		return;
	explicit_bzero(s, len);
	free(s);
}

void
al_secrets_free(struct al_secrets *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->n; i++) {
		free(s->names[i]);
		secret_zero_free(s->values[i], strlen(s->values[i]));
	}
	free(s->names);
	free(s->values);
	free(s->lines);
	if (s->dfd >= 0)
		close(s->dfd);
	free(s->path);
	free(s);
}

static struct al_secrets *
secrets_new(const char *path)
{
	struct al_secrets *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	s->dfd = -1;
	if ((s->path = strdup(path)) == NULL) {
		free(s);
		return NULL;
	}
	return s;
}

static int
secrets_add(struct al_secrets *s, const char *name, size_t nlen,
    const char *v, size_t vlen, unsigned line)
{
	char *n, *val;

	if (s->n == s->cap) {
		size_t cap = s->cap != 0 ? s->cap * 2 : 16;
		char **a = realloc(s->names, cap * sizeof(*a));
		if (a == NULL)
			return -ENOMEM;
		s->names = a;
		if ((a = realloc(s->values, cap * sizeof(*a))) == NULL)
			return -ENOMEM;
		s->values = a;
		unsigned *l = realloc(s->lines, cap * sizeof(*l));
		if (l == NULL)
			return -ENOMEM;
		s->lines = l;
		s->cap = cap;
	}
	if ((n = strndup(name, nlen)) == NULL)
		return -ENOMEM;
	if ((val = malloc(vlen + 1)) == NULL) {
		free(n);
		return -ENOMEM;
	}
	memcpy(val, v, vlen);
	val[vlen] = '\0';
	s->names[s->n] = n;
	s->values[s->n] = val;
	s->lines[s->n++] = line;
	return 0;
}

static const char *
secrets_find(const struct al_secrets *s, const char *name, size_t len,
    unsigned *line)
{
	for (size_t i = 0; i < s->n; i++) {
		if (strlen(s->names[i]) == len &&
		    memcmp(s->names[i], name, len) == 0) {
			if (line != NULL)
				*line = s->lines[i];
			return s->values[i];
		}
	}
	return NULL;
}

/* One line of a secrets file; reports into diag. 0, -EINVAL, -ENOMEM. */
static int
secrets_line(struct al_secrets *s, const char *file, unsigned line,
    const char *t, size_t len, struct allowlist_diag *diag)
{
	const char *eq, *why;
	size_t i = 0;
	unsigned first;

	if (len > 0 && t[len - 1] == '\r')
		len--;
	while (i < len && (t[i] == ' ' || t[i] == '\t'))
		i++;
	if (i == len || t[i] == '#')
		return 0;
	/* Nothing of a line is quoted: it may hold a value. */
	if ((eq = memchr(t, '=', len)) == NULL) {
		al_diag_add(diag, false, file, line, "not a NAME=VALUE line "
		    "(or a '#' comment)");
		return -EINVAL;
	}
	if (!al_secret_name_ok(t, (size_t)(eq - t))) {
		al_diag_add(diag, false, file, line, "the text before '=' is "
		    "not a secret name (1-%d letters, digits, '.', '_' or "
		    "'-', not starting with '.', nothing before it)",
		    ALLOWLIST_SECRET_NAME_MAX);
		return -EINVAL;
	}
	if (secrets_find(s, t, (size_t)(eq - t), &first) != NULL) {
		al_diag_add(diag, false, file, line, "secret '%.*s' is defined "
		    "again (first on line %u)", (int)(eq - t), t, first);
		return -EINVAL;
	}
	if ((why = secret_value_problem(eq + 1, len - (size_t)(eq + 1 - t)))
	    != NULL) {
		al_diag_add(diag, false, file, line, "secret '%.*s': %s",
		    (int)(eq - t), t, why);
		return -EINVAL;
	}
	return secrets_add(s, t, (size_t)(eq - t), eq + 1,
	    len - (size_t)(eq + 1 - t), line);
}

int
al_secrets_parse(const char *file, const char *text, size_t len,
    struct al_secrets **out, struct allowlist_diag *diag)
{
	struct al_secrets *s;
	size_t i = 0;
	unsigned line = 0;
	int r = 0;

	*out = NULL;
	if ((s = secrets_new(file)) == NULL)
		return -ENOMEM;
	while (i < len) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t n = nl != NULL ? (size_t)(nl - text) - i : len - i;
		int lr = secrets_line(s, file, ++line, text + i, n, diag);
		if (lr == -ENOMEM) {
			r = lr;
			break;
		}
		if (lr < 0)
			r = lr;
		i += n + 1;
	}
	if (r < 0) {
		al_secrets_free(s);
		return r;
	}
	*out = s;
	return 0;
}

/* Whether st (of what path names) may hold secrets: owned by root or the
 * loading user, nothing for group or other. Else writes why into msg. */
static bool
secrets_private(const char *path, const struct stat *st, char *msg,
    size_t msglen)
{
	uid_t euid = geteuid();

	if (st->st_uid != 0 && st->st_uid != euid) {
		snprintf(msg, msglen, "owned by uid %u: secrets must be owned "
		    "by root (or by uid %u, which loads them)",
		    (unsigned)st->st_uid, (unsigned)euid);
		return false;
	}
	if ((st->st_mode & 077) != 0) {
		snprintf(msg, msglen, "mode %04o gives group or other access: "
		    "secrets must be root-only (chmod go= %s)",
		    (unsigned)(st->st_mode & 07777), path);
		return false;
	}
	return true;
}

/* Reads fd (a regular file) whole, at most max bytes: 0 with *out
 * (caller zeroes and frees), -EFBIG, or -errno. */
static int
secrets_read(int fd, size_t max, char **out, size_t *len)
{
	size_t cap = max + 1, n = 0;
	char *buf = malloc(cap);
	ssize_t r;

	*out = NULL;
	if (buf == NULL)
		return -ENOMEM;
	while (n < cap && (r = read(fd, buf + n, cap - n)) != 0) {
		if (r < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			secret_zero_free(buf, cap);
			return (int)r;
		}
		n += (size_t)r;
	}
	if (n > max) {
		secret_zero_free(buf, cap);
		return -EFBIG;
	}
	*out = buf;
	*len = n;
	return 0;
}

int
al_secrets_open(const char *path, struct al_secrets **out,
    struct allowlist_diag *diag)
{
	struct al_secrets *s = NULL;
	struct stat st;
	char *text = NULL, msg[PATH_MAX + 128];
	size_t len = 0;
	int fd, r;

	*out = NULL;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) < 0) {
		r = -errno;
		al_diag_add(diag, false, path, 0, "cannot read the secrets "
		    "store: %s", strerror(-r));
		return r;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		al_diag_add(diag, false, path, 0, "cannot read the secrets "
		    "store: %s", strerror(-r));
		goto out;
	}
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
		al_diag_add(diag, false, path, 0, "the secrets store is not a "
		    "regular file or a directory");
		r = -EINVAL;
		goto out;
	}
	if (!secrets_private(path, &st, msg, sizeof(msg))) {
		al_diag_add(diag, false, path, 0, "%s", msg);
		r = -EPERM;
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		if ((s = secrets_new(path)) == NULL) {
			r = -ENOMEM;
			goto out;
		}
		s->dfd = fd;
		*out = s;
		return 0;
	}
	if ((r = secrets_read(fd, ALLOWLIST_SECRETS_FILE_MAX, &text,
	    &len)) < 0) {
		if (r == -EFBIG)
			al_diag_add(diag, false, path, 0, "the secrets file is "
			    "larger than %u bytes", ALLOWLIST_SECRETS_FILE_MAX);
		else
			al_diag_add(diag, false, path, 0, "cannot read the "
			    "secrets store: %s", strerror(-r));
		goto out;
	}
	r = al_secrets_parse(path, text, len, out, diag);
	secret_zero_free(text, len);
out:
	close(fd);
	return r;
}

/* The value of secret name from a directory store: 0 with *value
 * (caller zeroes and frees), or an error reported at file:line. */
static int
secrets_dir_get(const struct al_secrets *s, const char *name,
    const char *file, unsigned line, char **value,
    struct allowlist_diag *diag)
{
	struct stat st;
	char *text = NULL, *path = NULL, msg[PATH_MAX + 128];
	const char *why;
	size_t len = 0;
	int fd, r;

	*value = NULL;
	if ((fd = openat(s->dfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY |
	    O_NONBLOCK)) < 0) {
		r = -errno;
		if (r == -ENOENT)
			al_diag_add(diag, false, file, line, "no secret '%s' "
			    "in %s", name, s->path);
		else
			al_diag_add(diag, false, file, line, "cannot read "
			    "secret '%s' in %s: %s", name, s->path,
			    strerror(-r));
		return r;
	}
	if (asprintf(&path, "%s/%s", s->path, name) < 0) {
		close(fd);
		return -ENOMEM;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		al_diag_add(diag, false, file, line, "secret '%s': %s is not a "
		    "regular file", name, path);
		r = -EINVAL;
		goto out;
	}
	if (!secrets_private(path, &st, msg, sizeof(msg))) {
		al_diag_add(diag, false, file, line, "secret '%s': %s: %s",
		    name, path, msg);
		r = -EPERM;
		goto out;
	}
	if ((r = secrets_read(fd, ALLOWLIST_SECRET_MAX + 2, &text,
	    &len)) < 0) {
		if (r == -EFBIG)
			al_diag_add(diag, false, file, line, "secret '%s' in "
			    "%s: its value is longer than %d bytes", name,
			    s->path, ALLOWLIST_SECRET_MAX);
		else
			al_diag_add(diag, false, file, line, "cannot read "
			    "secret '%s' in %s: %s", name, s->path,
			    strerror(-r));
		goto out;
	}
	/* One trailing newline (LF or CRLF) is not part of the value. */
	if (len > 0 && text[len - 1] == '\n') {
		len--;
		if (len > 0 && text[len - 1] == '\r')
			len--;
	}
	if ((why = secret_value_problem(text, len)) != NULL) {
		al_diag_add(diag, false, file, line, "secret '%s' in %s: %s",
		    name, s->path, why);
		r = -EINVAL;
		goto out;
	}
	text[len] = '\0';
	*value = text;
	text = NULL;
	r = 0;
out:
	if (text != NULL)
		secret_zero_free(text, len);
	free(path);
	close(fd);
	return r;
}

long
al_secrets_resolve(struct allowlist *al, struct al_secrets *store, bool skip,
    struct allowlist_diag *diag)
{
	long errors = 0;

	for (size_t i = 0; i < al->ninsps && !skip; i++) {
		const struct al_insp *in = &al->insps[i];
		const char *name, *v;
		char *copy = NULL;
		if (in->secret == AL_NONE)
			continue;
		name = al->strs + in->secret;
		if (store == NULL) {
			al_diag_add(diag, false, al->file, in->line, "inject= "
			    "names secret '%s' but no secrets store is "
			    "configured (config key egress_secrets)", name);
			errors++;
			continue;
		}
		if (store->dfd >= 0) {
			int r = secrets_dir_get(store, name, al->file,
			    in->line, &copy, diag);
			if (r == -ENOMEM)
				return r;
			if (r < 0) {
				errors++;
				continue;
			}
		} else if ((v = secrets_find(store, name, strlen(name),
		    NULL)) == NULL) {
			al_diag_add(diag, false, al->file, in->line, "no secret "
			    "'%s' in %s", name, store->path);
			errors++;
			continue;
		} else if ((copy = strdup(v)) == NULL) {
			return -ENOMEM;
		}
		al->values[i] = copy;
		al->inspect[i].inject_value = copy;
	}
	return errors;
}
