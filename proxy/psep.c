/*
 * The network child's questions to its parent (psep.h): a list of pending
 * questions keyed by id. Few are ever pending at once (one per inspected
 * connection waiting for its leaf or secret), so a list is enough.
 */
#include "proxy/psep.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

struct psep_q {
	struct psep_q *next;
	uint64_t id;
	proxy_psep_fn fn;
	void *arg;
};

struct proxy_psep {
	struct proxy_chan *ch;
	uint64_t next_id;
	struct psep_q *qs;
	size_t n;
};

int
proxy_psep_new(struct proxy_chan *ch, struct proxy_psep **out)
{
	struct proxy_psep *p = calloc(1, sizeof(*p));

	*out = p;
	if (p == NULL)
		return -ENOMEM;
	p->ch = ch;
	return 0;
}

void
proxy_psep_free(struct proxy_psep *p)
{
	struct psep_q *q;

	if (p == NULL)
		return;
	while ((q = p->qs) != NULL) {
		p->qs = q->next;
		q->fn(q->arg, NULL);
		free(q);
	}
	free(p);
}

int
proxy_psep_ask(struct proxy_psep *p, uint32_t type, const void *payload,
    size_t len, proxy_psep_fn fn, void *arg, uint64_t *id)
{
	struct psep_q *q = malloc(sizeof(*q));
	int rc;

	*id = 0;
	if (q == NULL)
		return -ENOMEM;
	q->id = ++p->next_id;
	rc = proxy_chan_send(p->ch, type, q->id, payload, len, -1);
	if (rc != 0) {
		free(q);
		return rc;
	}
	q->fn = fn;
	q->arg = arg;
	q->next = p->qs;
	p->qs = q;
	p->n++;
	*id = q->id;
	return 0;
}

/* Unlinks and returns question id, or NULL. */
static struct psep_q *
psep_take(struct proxy_psep *p, uint64_t id)
{
	struct psep_q **qq, *q;

	for (qq = &p->qs; (q = *qq) != NULL; qq = &q->next)
		if (q->id == id) {
			*qq = q->next;
			p->n--;
			return q;
		}
	return NULL;
}

void
proxy_psep_cancel(struct proxy_psep *p, uint64_t id)
{
	if (p != NULL && id != 0)
		free(psep_take(p, id));
}

int
proxy_psep_answer(struct proxy_psep *p, const struct proxy_imsg *m)
{
	struct psep_q *q = psep_take(p, m->id);

	if (q == NULL)
		return -ENOENT;
	q->fn(q->arg, m);
	free(q);
	return 0;
}

size_t
proxy_psep_pending(const struct proxy_psep *p)
{
	return p->n;
}
