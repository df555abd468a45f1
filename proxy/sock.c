/*
 * The proxy's listening TCP and bound UDP sockets (sock.h): one place for
 * their options, whoever binds them (the parent before it drops
 * privileges, the listeners, the resolver).
 */
#include "proxy/sock.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proxy/config.h"

int
proxy_sock_listen_tcp(struct proxy_config_addr *a)
{
	int one = 1, fd, rc;

	fd = socket(a->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (fd < 0)
		return -errno;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* Accepted sockets inherit it: one setsockopt less per client. */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a->ss, a->len) != 0 ||
	    listen(fd, 1024) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a->ss, &a->len) != 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

int
proxy_sock_bind_udp(struct proxy_config_addr *a)
{
	int fd, rc, rcvbuf = 4 << 20;

	fd = socket(a->ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (fd < 0)
		return -errno;
	/* Room for a burst of every run's queries (a stub sends A and AAAA
	 * at once): past rmem_max when root may (FORCE), else what the
	 * system allows. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf,
	    sizeof(rcvbuf)) != 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf,
		    sizeof(rcvbuf));
	if (bind(fd, (struct sockaddr *)&a->ss, a->len) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a->ss, &a->len) != 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}
