/*
 * Inspected tunnels, internal to inspect_tls.c (the client side: the
 * leaf, the client's TLS) and inspect.c (the requests inside).
 */
#ifndef CORDON_PROXY_INSPECT_INTERNAL_H
#define CORDON_PROXY_INSPECT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "allowlist/allowlist.h"
#include "proxy/conn.h"
#include "proxy/host.h"

struct inspect {
	struct sockaddr_storage addr;	/* the address the CONNECT checked */
	socklen_t addrlen;
	int spare_fd;		/* the CONNECT's socket, for the first request */
	char host[HOST_NAME_MAXLEN + 1];
	enum host_kind kind;
	uint16_t port;
	char authority[HOST_NAME_MAXLEN + 16];	/* for the Host header */
	/* Waiting for the parent (privilege separation): its question's id
	 * (cancelled when c goes), and meanwhile the client's socket and the
	 * ClientHello already read (for the leaf), or a copy of the request
	 * head (for the secret). */
	uint64_t ask;
	int cli_fd;
	unsigned char *pre;
	size_t pre_len;
	char *head;
	size_t head_len;
	char inject_header[ALLOWLIST_HEADER_MAX + 1];
};

/* inspect.c: waits for (the next) request head inside the tunnel:
 * request.c's pipeline with the inspected path's steps. */
void proxy_inspect_wait(struct conn *c);

#endif
