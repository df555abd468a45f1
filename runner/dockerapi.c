/*
 * Minimal HTTP/1.1 client over the docker API unix socket (dockerapi.h):
 * request formatting and response parsing are pure (table-tested, fuzzed
 * by runner/fuzz/fuzz_http.c); the I/O is one connection per request with
 * a monotonic deadline on every wait.
 */
#include "runner/dockerapi.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/util.h"

bool
dockerapi_default(const struct config *c)
{
	const char *h = getenv("DOCKER_HOST"), *x = getenv("DOCKER_CONTEXT");

	return strcmp(c->docker, "docker") == 0 && (h == NULL || *h == '\0') &&
	    (x == NULL || *x == '\0');
}

bool
dockerapi_usable(const struct config *c)
{
	return dockerapi_default(c) && access(DOCKERAPI_SOCKET, W_OK) == 0;
}

bool
dockerapi_cold_usable(const struct config *c)
{
	return strcmp(c->docker_api, "never") != 0 && dockerapi_usable(c);
}

bool
dockerapi_name_ok(const char *name)
{
	return name[0] != '\0' && strspn(name, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == strlen(name);
}

int
dockerapi_status(const char *buf, size_t len)
{
	int code = 0;

	if (len < 12 || memcmp(buf, "HTTP/1.", 7) != 0 || buf[8] != ' ')
		return -EBADMSG;
	for (size_t i = 9; i < 12; i++) {
		if (buf[i] < '0' || buf[i] > '9')
			return -EBADMSG;
		code = code * 10 + (buf[i] - '0');
	}
	return code;
}

/* Where "\r\n\r\n" ends in buf, or 0. */
static size_t
head_end(const char *buf, size_t len)
{
	for (size_t i = 3; i < len; i++)
		if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' &&
		    buf[i - 3] == '\r')
			return i + 1;
	return 0;
}

/* The value of header line [p, e) when its name is name (case-blind),
 * with surrounding blanks cut; NULL otherwise. */
static const char *
header_value(const char *p, const char *e, const char *name, size_t *vlen)
{
	size_t n = strlen(name);

	if ((size_t)(e - p) <= n || strncasecmp(p, name, n) != 0 || p[n] != ':')
		return NULL;
	p += n + 1;
	while (p < e && (*p == ' ' || *p == '\t'))
		p++;
	while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	*vlen = (size_t)(e - p);
	return p;
}

struct head {
	int status;
	bool chunked;
	long long clen;		/* -1: none */
};

static int
head_parse(const char *buf, size_t hlen, struct head *h)
{
	const char *p, *e, *v, *end = buf + hlen - 2;
	size_t vl;

	h->chunked = false;
	h->clen = -1;
	if ((h->status = dockerapi_status(buf, hlen)) < 0)
		return -EBADMSG;
	if ((p = memchr(buf, '\n', hlen)) == NULL)
		return -EBADMSG;
	for (p++; p < end; p = e + 2) {
		if ((e = memchr(p, '\r', (size_t)(end - p))) == NULL ||
		    e[1] != '\n')
			return -EBADMSG;
		if (memchr(p, '\n', (size_t)(e - p)) != NULL)
			return -EBADMSG;
		if ((v = header_value(p, e, "Content-Length", &vl)) != NULL) {
			long long n = 0;
			if (vl == 0 || vl > 15)
				return -EBADMSG;
			for (size_t i = 0; i < vl; i++) {
				if (v[i] < '0' || v[i] > '9')
					return -EBADMSG;
				n = n * 10 + (v[i] - '0');
			}
			if (h->clen >= 0 && h->clen != n)
				return -EBADMSG;
			h->clen = n;
		} else if ((v = header_value(p, e, "Transfer-Encoding",
		    &vl)) != NULL) {
			/* chunked must be the last coding; nothing else is
			 * spoken here. */
			if (vl < 7 || strncasecmp(v + vl - 7, "chunked", 7) != 0)
				return -EBADMSG;
			h->chunked = true;
		}
	}
	return 0;
}

/* Hex chunk size at p (up to its CRLF, extensions after ';' ignored):
 * 1 and *size, *next; 0 incomplete, -EBADMSG. */
static int
chunk_size(const char *p, const char *end, size_t *size, const char **next)
{
	const char *q = p;
	size_t n = 0;
	int digits = 0;

	for (; q < end && *q != '\r' && *q != ';'; q++, digits++) {
		int d = (*q >= '0' && *q <= '9') ? *q - '0' :
		    (*q >= 'a' && *q <= 'f') ? *q - 'a' + 10 :
		    (*q >= 'A' && *q <= 'F') ? *q - 'A' + 10 : -1;
		if (d < 0 || digits >= 8)
			return -EBADMSG;
		n = n * 16 + (size_t)d;
	}
	while (q < end && *q != '\r') {
		if (*q == '\n')
			return -EBADMSG;
		q++;
	}
	if (q + 1 >= end)
		return (size_t)(end - p) > 1024 ? -EBADMSG : 0;
	if (digits == 0 || q[1] != '\n')
		return -EBADMSG;
	*size = n;
	*next = q + 2;
	return 1;
}

/* De-chunks [p, end) into a new buffer: 1 complete, 0 more needed. */
static int
dechunk(const char *p, const char *end, size_t max, char **out,
    size_t *outlen)
{
	char *b = NULL;
	size_t len = 0, sz;
	const char *next;
	int rc;

	for (;;) {
		if ((rc = chunk_size(p, end, &sz, &next)) <= 0)
			goto done;
		p = next;
		if (sz == 0)
			break;
		rc = -E2BIG;
		if (sz > max - len)
			goto done;
		rc = 0;
		if ((size_t)(end - p) < sz + 2)
			goto done;
		rc = -EBADMSG;
		if (p[sz] != '\r' || p[sz + 1] != '\n')
			goto done;
		rc = -ENOMEM;
		char *nb = realloc(b, len + sz + 1);
		if (nb == NULL)
			goto done;
		b = nb;
		memcpy(b + len, p, sz);
		len += sz;
		p += sz + 2;
	}
	/* Trailers (none expected), then the empty line. */
	for (;;) {
		const char *e = memchr(p, '\n', (size_t)(end - p));
		rc = 0;
		if (e == NULL)
			goto done;
		rc = -EBADMSG;
		if (e == p || e[-1] != '\r')
			goto done;
		if (e == p + 1)
			break;
		p = e + 1;
	}
	rc = -ENOMEM;
	if (b == NULL && (b = malloc(1)) == NULL)
		goto done;
	b[len] = '\0';
	*out = b;
	*outlen = len;
	return 1;
done:
	free(b);
	return rc;
}

int
dockerapi_response_parse(const char *buf, size_t len, bool eof,
    unsigned flags, size_t max_body, struct dockerapi_resp *out)
{
	struct head h;
	size_t hl, blen;
	const char *body;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((hl = head_end(buf, len > DOCKERAPI_HEAD_MAX ? DOCKERAPI_HEAD_MAX :
	    len)) == 0) {
		if (len >= DOCKERAPI_HEAD_MAX)
			return -E2BIG;
		return eof ? -EBADMSG : 0;
	}
	if ((rc = head_parse(buf, hl, &h)) < 0)
		return rc;
	body = buf + hl;
	blen = len - hl;
	out->status = h.status;
	out->head_len = hl;
	if ((flags & DOCKERAPI_HEAD_ONLY) || h.status < 200 ||
	    h.status == 204 || h.status == 304) {
		blen = 0;
	} else if (h.chunked) {
		rc = dechunk(body, body + blen, max_body, &out->body,
		    &out->body_len);
		if (rc == 0 && eof)
			rc = -EBADMSG;
		if (rc != 1)
			memset(out, 0, sizeof(*out));
		return rc;
	} else if (h.clen >= 0) {
		if ((unsigned long long)h.clen > max_body) {
			memset(out, 0, sizeof(*out));
			return -E2BIG;
		}
		if (blen < (size_t)h.clen) {
			memset(out, 0, sizeof(*out));
			return eof ? -EBADMSG : 0;
		}
		blen = (size_t)h.clen;
	} else {
		if (blen > max_body) {
			memset(out, 0, sizeof(*out));
			return -E2BIG;
		}
		if (!eof) {
			memset(out, 0, sizeof(*out));
			return 0;
		}
	}
	if ((out->body = malloc(blen + 1)) == NULL) {
		memset(out, 0, sizeof(*out));
		return -ENOMEM;
	}
	if (blen > 0)
		memcpy(out->body, body, blen);
	out->body[blen] = '\0';
	out->body_len = blen;
	return 1;
}

void
dockerapi_resp_cleanup(struct dockerapi_resp *r)
{
	free(r->body);
	memset(r, 0, sizeof(*r));
}

void
dockerapi_error_message(const struct dockerapi_resp *r, char *msg,
    size_t msglen)
{
	cJSON *o = r->body != NULL ? cJSON_ParseWithLength(r->body,
	    r->body_len) : NULL;
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "message");
	const char *s = cJSON_IsString(m) ? m->valuestring :
	    r->body != NULL ? r->body : "";
	size_t n = strcspn(s, "\r\n");

	if (msglen == 0)
		return;
	if (n == 0 && r->body == NULL)
		snprintf(msg, msglen, "HTTP %d", r->status);
	else
		snprintf(msg, msglen, "%.*s", (int)n, s);
	for (char *p = msg; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	cJSON_Delete(o);
}

/* Printable ASCII without blanks and without any of forbidden. */
static bool
token_ok(const char *s, const char *forbidden)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f ||
		    strchr(forbidden, *s) != NULL)
			return false;
	return true;
}

int
dockerapi_request_format(const char *method, const char *path,
    const char *body, bool upgrade, char **out, size_t *outlen)
{
	size_t blen = body != NULL ? strlen(body) : 0;
	const char *conn;
	char *s = NULL;
	int n;

	*out = NULL;
	*outlen = 0;
	if (method[0] == '\0' || strspn(method, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") !=
	    strlen(method) || path[0] != '/' ||
	    !token_ok(path, "\"<>\\^`{|}#"))
		return -EINVAL;
	conn = upgrade ? "Connection: Upgrade\r\nUpgrade: tcp\r\n" :
	    "Connection: close\r\n";
	if (body != NULL)
		n = asprintf(&s, "%s %s HTTP/1.1\r\nHost: docker\r\n%s"
		    "Content-Type: application/json\r\nContent-Length: %zu\r\n"
		    "\r\n%s", method, path, conn, blen, body);
	else
		n = asprintf(&s, "%s %s HTTP/1.1\r\nHost: docker\r\n%s%s\r\n",
		    method, path, conn, strcmp(method, "GET") == 0 ||
		    strcmp(method, "DELETE") == 0 ? "" :
		    "Content-Length: 0\r\n");
	if (n < 0)
		return -ENOMEM;
	*out = s;
	*outlen = (size_t)n;
	return 0;
}

int
dockerapi_connect(const char *sock, int *fd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s, rc;

	*fd = -1;
	if (!util_strlcpy(sa.sun_path, sock, sizeof(sa.sun_path)))
		return -ENAMETOOLONG;
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0)
		return -errno;
	/* A unix socket connects at once or fails (EAGAIN: backlog full). */
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 &&
	    errno != EINPROGRESS) {
		rc = -errno;
		close(s);
		return rc;
	}
	*fd = s;
	return 0;
}

/* Waits for fd to be ready for events until deadline; 0 or -ETIMEDOUT. */
static int
wait_fd(int fd, short events, int64_t deadline)
{
	struct pollfd p = { fd, events, 0 };
	int64_t left;
	int r;

	do {
		left = deadline - time_mono_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&p, 1, (int)left);
	} while (r < 0 && errno == EINTR);
	return r > 0 ? 0 : r == 0 ? -ETIMEDOUT : -errno;
}

int
dockerapi_send_all(int fd, const void *buf, size_t len, int64_t deadline_ms)
{
	const char *p = buf;
	size_t off = 0;
	ssize_t n;
	int rc;

	while (off < len) {
		if ((rc = wait_fd(fd, POLLOUT, deadline_ms)) < 0)
			return rc;
		n = send(fd, p + off, len - off, MSG_NOSIGNAL);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return -errno;
		off += (size_t)n;
	}
	return 0;
}

/* Reads fd until one whole answer is in; 0 and *out, or an errno. */
static int
read_answer(int fd, int64_t deadline, struct dockerapi_resp *out)
{
	char *buf = NULL, *nb;
	size_t len = 0, cap = 0;
	size_t max = DOCKERAPI_HEAD_MAX + 2 * (size_t)DOCKERAPI_BODY_MAX;
	bool eof = false;
	ssize_t n;
	int rc;

	for (;;) {
		if (len == cap) {
			rc = -E2BIG;
			if (cap >= max)
				goto done;
			cap = cap == 0 ? 4096 : cap * 2;
			rc = -ENOMEM;
			if ((nb = realloc(buf, cap)) == NULL)
				goto done;
			buf = nb;
		}
		if ((rc = wait_fd(fd, POLLIN, deadline)) < 0)
			goto done;
		n = recv(fd, buf + len, cap - len, 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			rc = -errno;
			goto done;
		}
		eof = n == 0;
		len += (size_t)n;
		rc = dockerapi_response_parse(buf, len, eof, 0,
		    DOCKERAPI_BODY_MAX, out);
		if (rc != 0)
			break;
	}
	rc = rc == 1 ? 0 : rc;
done:
	free(buf);
	return rc;
}

int
dockerapi_call(const char *sock, const char *method, const char *path,
    const char *body, int64_t deadline_ms, struct dockerapi_resp *out)
{
	char *req = NULL;
	size_t reqlen;
	int fd = -1, rc;

	memset(out, 0, sizeof(*out));
	if ((rc = dockerapi_request_format(method, path, body, false, &req,
	    &reqlen)) < 0)
		goto done;
	if ((rc = dockerapi_connect(sock, &fd)) < 0)
		goto done;
	if ((rc = dockerapi_send_all(fd, req, reqlen, deadline_ms)) < 0)
		goto done;
	rc = read_answer(fd, deadline_ms, out);
done:
	if (fd >= 0)
		close(fd);
	free(req);
	return rc;
}

int
dockerapi_rm_force(const char *sock, const char *name, int timeout_ms)
{
	struct dockerapi_resp r;
	char path[160];
	int rc;

	/* Names come from us (cordon-<hex>), but check: no URL syntax. */
	if (!dockerapi_name_ok(name))
		return -EINVAL;
	if ((size_t)snprintf(path, sizeof(path), "/containers/%s?force=1",
	    name) >= sizeof(path))
		return -ENAMETOOLONG;
	if ((rc = dockerapi_call(sock, "DELETE", path, NULL, time_mono_ms() +
	    timeout_ms, &r)) < 0)
		return rc;
	rc = r.status;
	dockerapi_resp_cleanup(&r);
	/* 409: a removal already in progress, which may still fail: the
	 * caller asks again (container_remove). */
	return rc == 204 || rc == 200 ? 0 : rc == 404 ? -ENOENT : rc == 409 ?
	    -EBUSY : -EIO;
}

int
dockerapi_kill(const char *sock, const char *name, int timeout_ms)
{
	struct dockerapi_resp r;
	char path[160];
	int rc;

	if (!dockerapi_name_ok(name))
		return -EINVAL;
	if ((size_t)snprintf(path, sizeof(path), "/containers/%s/kill",
	    name) >= sizeof(path))
		return -ENAMETOOLONG;
	if ((rc = dockerapi_call(sock, "POST", path, NULL, time_mono_ms() +
	    timeout_ms, &r)) < 0)
		return rc;
	rc = r.status;
	dockerapi_resp_cleanup(&r);
	/* 409: not running (any more, or not yet started): stopped. */
	return rc == 204 || rc == 200 || rc == 409 ? 0 : rc == 404 ? -ENOENT :
	    -EIO;
}

int
dockerapi_ping(const char *sock, int timeout_ms)
{
	struct dockerapi_resp r;
	int rc;

	if ((rc = dockerapi_call(sock, "GET", "/_ping", NULL, time_mono_ms() +
	    timeout_ms, &r)) < 0)
		return rc;
	rc = r.status == 200 ? 0 : -EIO;
	dockerapi_resp_cleanup(&r);
	return rc;
}
