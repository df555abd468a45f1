/*
 * The messages of cordon-proxy's privilege separation (parent.c, child.c,
 * over imsg.h): their types, and the pure encoders and strict decoders of
 * the payloads. Everything the network child sends is hostile input to
 * the parent, so each child message has a decoder here that refuses what
 * is not exactly its form (fuzzed: fuzz/fuzz_psmsg.c). Payloads are JSON
 * objects, except the leaf certificate (DER) and the secret's value (its
 * bytes).
 */
#ifndef CORDON_PROXY_PSMSG_H
#define CORDON_PROXY_PSMSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy/ctl.h"
#include "proxy/host.h"

enum proxy_psmsg_type {
	/* parent -> child */
	PSMSG_INIT = 1,		/* {"ca_cert": PEM or null, "restarts": N} */
	PSMSG_GEN,		/* {"gen": N, "policies": [{"name", "text"}]} */
	PSMSG_RUN_ADD,		/* a register request line (ctl.h) */
	PSMSG_RUN_DEL,		/* {"run": ID, "forget": bool} */
	PSMSG_LEAF,		/* id: the leaf's DER, or empty: refused */
	PSMSG_SECRET,		/* id: the value's bytes; type NO_SECRET: no */
	PSMSG_NO_SECRET,
	PSMSG_ALOG_FD,		/* fd: the access log, opened by the parent;
				   payload {"size": N} */
	PSMSG_DRAIN,		/* stop accepting, finish, exit */
	PSMSG_REFRESH,		/* reread the local addresses */
	PSMSG_RUN_POLICY,	/* id: a policy request line (ctl.h) */
	/* child -> parent */
	PSMSG_READY = 100,	/* {} once listening */
	PSMSG_GEN_ACK,		/* {"gen": N} installed */
	PSMSG_RUN_ACK,		/* id: {"ok": true} or {"ok":false,"error"} */
	PSMSG_REPORT,		/* id: {"ok":true,"egress":[...],...} as the
				   control protocol's answer, or ok false */
	PSMSG_LEAF_REQ,		/* id: proxy_psmsg_leaf_req */
	PSMSG_SECRET_REQ,	/* id: proxy_psmsg_secret_req */
	PSMSG_ROTATE,		/* {} the access log reached its size */
	PSMSG_POLICY_ACK,	/* id: the policy op's answer (ctl.h) */
};

/* A leaf certificate for host, signed by the egress CA over the child's
 * leaf key (DER SubjectPublicKeyInfo, at most 512 bytes). */
#define PSMSG_KEY_MAX	512
struct proxy_psmsg_leaf_req {
	char host[HOST_NAME_MAXLEN + 1];	/* normalised name or address */
	bool is_ip;
	uint16_t port;		/* the tunnel's port (1..65535) */
	unsigned char key[PSMSG_KEY_MAX];
	size_t keylen;
};

/* The value of secret name, to inject into one request to host:port
 * under policy (the run's, or the standalone --policy). */
#define PSMSG_SECRET_NAME_MAX	64
struct proxy_psmsg_secret_req {
	char policy[PROXY_CTL_POLICY_MAX + 1];
	char host[HOST_NAME_MAXLEN + 1];
	uint16_t port;
	char name[PSMSG_SECRET_NAME_MAX + 1];
};

/*
 * Encoders: a malloc'd NUL-terminated JSON text (caller frees), or NULL
 * (ENOMEM, or a field out of its range). Decoders: 0 and *out filled, or
 * -EINVAL for anything that is not exactly the message (not one JSON
 * object, a missing, extra, duplicate or mistyped member, a string that
 * is too long, holds a NUL or is no valid host, a number out of range);
 * data need not be NUL-terminated.
 */
char *proxy_psmsg_leaf_req_encode(const struct proxy_psmsg_leaf_req *r);
int proxy_psmsg_leaf_req_decode(const void *data, size_t len,
    struct proxy_psmsg_leaf_req *out);
char *proxy_psmsg_secret_req_encode(const struct proxy_psmsg_secret_req *r);
int proxy_psmsg_secret_req_decode(const void *data, size_t len,
    struct proxy_psmsg_secret_req *out);
/* {"gen": N} and {"gen": N} decode (N 1..2^53-1). */
char *proxy_psmsg_gen_ack_encode(uint64_t gen);
int proxy_psmsg_gen_ack_decode(const void *data, size_t len, uint64_t *gen);
/*
 * A report from the child: a control-protocol answer object ({"ok":true,
 * "egress":[...],"allowed":N,"denied":N[,"egress_truncated":true,
 * "egress_dropped":N]} or {"ok":false,"error":"..."}), at most
 * PSMSG_REPORT_MAX bytes. 0 and *ok, or -EINVAL.
 */
#define PSMSG_REPORT_MAX	(4u * 1024 * 1024)
int proxy_psmsg_report_check(const void *data, size_t len, bool *ok);

#endif
