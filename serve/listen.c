/*
 * The service's sockets and threads (listen.h): the unix socket, the TCP
 * address parser, and detached worker threads with signals blocked.
 */
#include "serve/listen.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/util.h"

/* A listening unix socket at path (mode 0660). A stale socket file is
 * replaced; a live one (something accepts on it) is an error. */
int
serve_listen_unix(const char *path, int *out, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[sizeof(sa.sun_path)], *slash;
	struct stat st;
	int fd = -1, rc;

	if (!util_strlcpy(sa.sun_path, path, sizeof(sa.sun_path))) {
		snprintf(err, errlen, "socket path too long: %.200s", path);
		return -ENAMETOOLONG;
	}
	util_strlcpy(dir, path, sizeof(dir));
	if ((slash = strrchr(dir, '/')) != NULL && slash != dir) {
		*slash = '\0';
		if ((rc = util_mkdir_p(dir, 0755)) < 0) {
			snprintf(err, errlen, "%.200s: %s", dir, strerror(-rc));
			return rc;
		}
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0)) < 0)
		goto bad;
	if (lstat(path, &st) == 0) {
		int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		bool live = probe >= 0 && S_ISSOCK(st.st_mode) &&
		    connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0;

		if (probe >= 0)
			close(probe);
		if (!S_ISSOCK(st.st_mode) || live) {
			snprintf(err, errlen, "%.200s: %s", path, live ?
			    "another server is listening there" :
			    "exists and is not a socket");
			close(fd);
			return -EADDRINUSE;
		}
		(void)unlink(path);
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    chmod(path, 0660) < 0 || listen(fd, 128) < 0)
		goto bad;
	*out = fd;
	return 0;
bad:
	rc = -errno;
	snprintf(err, errlen, "%.200s: %s", path, strerror(errno));
	if (fd != -1)
		close(fd);
	return rc;
}

int
serve_listen_parse_addr(const char *spec, char *host, size_t hostlen,
    uint16_t *port)
{
	char buf[256], *colon;
	int64_t p;
	size_t hl;

	if (!util_strlcpy(buf, spec, sizeof(buf)) ||
	    (colon = strrchr(buf, ':')) == NULL ||
	    util_parse_i64(colon + 1, 1, 65535, &p) < 0)
		return -EINVAL;
	*colon = '\0';
	hl = strlen(buf);
	if (hl >= 2 && buf[0] == '[' && buf[hl - 1] == ']') {
		buf[hl - 1] = '\0';
		memmove(buf, buf + 1, hl - 1);
	} else if (strchr(buf, ':') != NULL || strchr(buf, '[') != NULL) {
		return -EINVAL;		/* a v6 address needs brackets */
	}
	if (buf[0] == '\0' || !util_strlcpy(host, buf, hostlen))
		return -EINVAL;
	*port = (uint16_t)p;
	return 0;
}

/* A thread with every signal blocked: signals belong to the loop. */
int
serve_listen_thread_spawn(void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	pthread_t tid;
	sigset_t all, old;
	int rc;

	if ((rc = pthread_attr_init(&attr)) != 0)
		return -rc;
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&tid, &attr, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return -rc;
}
