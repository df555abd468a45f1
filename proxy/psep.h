/*
 * The network child's side of the link to its privileged parent: what a
 * connection asks the parent (a leaf certificate signed by the egress CA,
 * a secret's value for one request) and the answer's callback, matched by
 * request id; a connection that closes first cancels its question.
 */
#ifndef CORDON_PROXY_PSEP_H
#define CORDON_PROXY_PSEP_H

#include <stddef.h>
#include <stdint.h>

#include "proxy/imsg.h"

struct proxy_psep;

/* The answer (m: its type, payload and length; the payload is valid
 * during the call only), or m NULL: the link to the parent is gone. */
typedef void (*proxy_psep_fn)(void *arg, const struct proxy_imsg *m);

/* A link over ch (borrowed: the child owns the channel). 0 and *out, or
 * -ENOMEM. */
int proxy_psep_new(struct proxy_chan *ch, struct proxy_psep **out);
/* Calls every pending question's fn with NULL, then frees; accepts
 * NULL. */
void proxy_psep_free(struct proxy_psep *p);

/* Sends a question of type with payload; fn(arg, answer) once the answer
 * comes. 0 and *id (to cancel), or a negative errno (fn never called). */
int proxy_psep_ask(struct proxy_psep *p, uint32_t type, const void *payload,
    size_t len, proxy_psep_fn fn, void *arg, uint64_t *id);
/* The question id is no longer wanted: its answer is dropped. 0 is no
 * question (nothing happens). */
void proxy_psep_cancel(struct proxy_psep *p, uint64_t id);
/* An answer from the parent: calls its question's fn. 0, or -ENOENT (no
 * such question: cancelled, or never asked). */
int proxy_psep_answer(struct proxy_psep *p, const struct proxy_imsg *m);
/* Questions waiting. */
size_t proxy_psep_pending(const struct proxy_psep *p);

#endif
