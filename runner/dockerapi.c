/*
 * Minimal HTTP/1.1 over the docker API unix socket (dockerapi.h): one
 * request, read until the status line is complete, close. Nothing but the
 * status code is used from the answer.
 */
#include "runner/dockerapi.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/util.h"

bool
dockerapi_usable(const struct config *c)
{
	const char *h = getenv("DOCKER_HOST"), *x = getenv("DOCKER_CONTEXT");

	return strcmp(c->docker, "docker") == 0 && (h == NULL || *h == '\0') &&
	    (x == NULL || *x == '\0') && access(DOCKERAPI_SOCKET, W_OK) == 0;
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

static int
exchange(int fd, const char *req, size_t reqlen, int64_t deadline)
{
	char buf[256];
	size_t got = 0, off = 0;
	ssize_t n;
	int rc;

	while (off < reqlen) {
		if ((rc = wait_fd(fd, POLLOUT, deadline)) < 0)
			return rc;
		n = send(fd, req + off, reqlen - off, MSG_NOSIGNAL);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return -errno;
		off += (size_t)n;
	}
	while (got < 12) {
		if ((rc = wait_fd(fd, POLLIN, deadline)) < 0)
			return rc;
		n = recv(fd, buf + got, sizeof(buf) - got, 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		got += (size_t)n;
	}
	rc = dockerapi_status(buf, got);
	if (rc < 0)
		return rc;
	/* 409: a removal already in progress, by someone else: as the CLI
	 * path says (docker_rm_force), the container is going. */
	return rc == 204 || rc == 200 ? 0 : rc == 404 || rc == 409 ? -ENOENT :
	    -EIO;
}

int
dockerapi_rm_force(const char *sock, const char *name, int timeout_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int64_t deadline = time_mono_ms() + timeout_ms;
	char req[256];
	int fd, n, rc;

	/* Names come from us (cordon-<hex>), but check: no URL syntax. */
	if (name[0] == '\0' || strspn(name, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != strlen(name))
		return -EINVAL;
	if (!util_strlcpy(sa.sun_path, sock, sizeof(sa.sun_path)))
		return -ENAMETOOLONG;
	n = snprintf(req, sizeof(req), "DELETE /containers/%s?force=1 "
	    "HTTP/1.1\r\nHost: docker\r\nConnection: close\r\n\r\n", name);
	if (n < 0 || (size_t)n >= sizeof(req))
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 &&
	    errno != EINPROGRESS) {
		rc = -errno;
		close(fd);
		return rc;
	}
	rc = exchange(fd, req, (size_t)n, deadline);
	close(fd);
	return rc;
}
