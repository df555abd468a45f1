/*
 * A run's egress report (egress.h): an array of entries in first-attempt
 * order, grown on demand up to the cap fixed at creation, found by a
 * linear scan (the cap is small: 100 per run).
 */
#include "proxy/egress.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

struct egress_entry {
	char host[PROXY_EGRESS_HOST_MAX + 1];	/* lowercased, cut */
	char reason[PROXY_EGRESS_REASON_MAX + 1];
	char via[PROXY_EGRESS_VIA_MAX + 1];	/* "" for none */
	uint16_t port;
	enum proxy_egress_decision decision;
	int status;
	uint64_t count;
	uint64_t bytes_up;
	uint64_t bytes_down;
	int64_t first;		/* when its first attempt started */
};

struct proxy_egress {
	struct egress_entry *entries;
	size_t n;		/* entries in use */
	size_t cap;		/* entries allocated */
	size_t max;		/* entries allowed */
	uint64_t allowed;	/* attempts, dropped ones included */
	uint64_t denied;	/* by the policy */
	uint64_t errors;	/* failed otherwise */
	uint64_t dropped;	/* attempts not kept */
	bool truncated;
	int64_t seq;		/* proxy_egress_note's own clock */
};

/*
 * Copies at most max bytes of src into dst (max + 1 bytes), never ending
 * inside a UTF-8 sequence: when the cut falls inside one, the sequence's
 * leading bytes are left out too. ASCII letters are lowercased when lower
 * is set. Returns the length written.
 */
static size_t
egress_copy(char *dst, const char *src, size_t max, bool lower)
{
	size_t n = strnlen(src, max + 1);

	if (n > max) {
		n = max;
		/* src[n] is the first byte left out; back off while it
		 * continues a sequence started before it (at most 3 bytes:
		 * past that the bytes are not UTF-8 anyway). */
		for (int k = 0; k < 3 && n > 0 &&
		    ((unsigned char)src[n] & 0xC0) == 0x80; k++)
			n--;
	}
	for (size_t i = 0; i < n; i++) {
		char c = src[i];
		if (lower && c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		dst[i] = c;
	}
	dst[n] = '\0';
	return n;
}

static uint64_t
egress_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

struct proxy_egress *
proxy_egress_new(size_t max)
{
	struct proxy_egress *e;

	if (max > PROXY_EGRESS_MAX_LIMIT) {
		errno = EINVAL;
		return NULL;
	}
	e = calloc(1, sizeof(*e));
	if (e == NULL)
		return NULL;
	e->max = max;
	return e;
}

void
proxy_egress_free(struct proxy_egress *e)
{
	if (e == NULL)
		return;
	free(e->entries);
	free(e);
}

enum proxy_egress_decision
proxy_egress_decision_of(const char *word)
{
	if (word != NULL && strcmp(word, "allow") == 0)
		return PROXY_EGRESS_ALLOWED;
	if (word != NULL && strcmp(word, "deny") == 0)
		return PROXY_EGRESS_DENIED;
	return PROXY_EGRESS_ERROR;
}

static const char *
egress_decision_name(enum proxy_egress_decision d)
{
	switch (d) {
	case PROXY_EGRESS_ALLOWED:
		return "allowed";
	case PROXY_EGRESS_DENIED:
		return "denied";
	case PROXY_EGRESS_ERROR:
		break;
	}
	return "error";
}

/* The entry for (host, port, decision, via), host already cut and
 * lowercased, via cut. */
static struct egress_entry *
egress_find(const struct proxy_egress *e, const char *key, uint16_t port,
    enum proxy_egress_decision decision, const char *via, const char *reason)
{
	for (size_t i = 0; i < e->n; i++) {
		struct egress_entry *x = &e->entries[i];
		if (x->port == port && x->decision == decision &&
		    strcmp(x->host, key) == 0 && strcmp(x->via, via) == 0 &&
		    (reason == NULL || strcmp(x->reason, reason) == 0))
			return x;
	}
	return NULL;
}

/* Makes room for one more entry; 0, -ENOSPC or -ENOMEM. */
static int
egress_grow(struct proxy_egress *e)
{
	struct egress_entry *p;
	size_t cap;

	if (e->n >= e->max)
		return -ENOSPC;
	if (e->n < e->cap)
		return 0;
	cap = e->cap == 0 ? 8 : e->cap * 2;
	if (cap > e->max)
		cap = e->max;
	p = realloc(e->entries, cap * sizeof(*p));
	if (p == NULL)
		return -ENOMEM;
	e->entries = p;
	e->cap = cap;
	return 0;
}

/* Moves entry i left until the entries are in order of first attempt
 * again (equal times keep their order). */
static void
egress_settle(struct proxy_egress *e, size_t i)
{
	struct egress_entry tmp;
	size_t j = i;

	while (j > 0 && e->entries[j - 1].first > e->entries[i].first)
		j--;
	if (j == i)
		return;
	tmp = e->entries[i];
	memmove(&e->entries[j + 1], &e->entries[j], (i - j) * sizeof(tmp));
	e->entries[j] = tmp;
}

static void
egress_set_first(struct egress_entry *x, const char *reason, int status)
{
	egress_copy(x->reason, reason != NULL ? reason : "",
	    PROXY_EGRESS_REASON_MAX, false);
	x->status = status;
}

int
proxy_egress_note_at(struct proxy_egress *e, const char *host, uint16_t port,
    enum proxy_egress_decision decision, const char *reason, int status,
    int64_t first)
{
	return proxy_egress_note_via(e, host, port, NULL, decision, reason,
	    status, first);
}

int
proxy_egress_note_via(struct proxy_egress *e, const char *host, uint16_t port,
    const char *via, enum proxy_egress_decision decision, const char *reason,
    int status, int64_t first)
{
	char key[PROXY_EGRESS_HOST_MAX + 1], vkey[PROXY_EGRESS_VIA_MAX + 1];
	char rkey[PROXY_EGRESS_REASON_MAX + 1];
	const char *rk = NULL;
	struct egress_entry *x;
	int rc;

	if (e == NULL || host == NULL || host[0] == '\0' ||
	    (decision != PROXY_EGRESS_ALLOWED &&
	    decision != PROXY_EGRESS_DENIED && decision != PROXY_EGRESS_ERROR))
		return -EINVAL;
	egress_copy(key, host, PROXY_EGRESS_HOST_MAX, true);
	egress_copy(vkey, via != NULL ? via : "", PROXY_EGRESS_VIA_MAX, true);
	/* A name's DNS outcomes are told apart by their reason too. */
	if (strcmp(vkey, "dns") == 0) {
		egress_copy(rkey, reason != NULL ? reason : "",
		    PROXY_EGRESS_REASON_MAX, false);
		rk = rkey;
	}
	if (decision == PROXY_EGRESS_ALLOWED)
		e->allowed = egress_add(e->allowed, 1);
	else if (decision == PROXY_EGRESS_DENIED)
		e->denied = egress_add(e->denied, 1);
	else
		e->errors = egress_add(e->errors, 1);
	x = egress_find(e, key, port, decision, vkey, rk);
	if (x != NULL) {
		x->count = egress_add(x->count, 1);
		if (first < x->first) {
			/* Noted late (it ended after a later one): it is
			 * now the entry's first attempt. */
			x->first = first;
			egress_set_first(x, reason, status);
			egress_settle(e, (size_t)(x - e->entries));
		}
		return 0;
	}
	if ((rc = egress_grow(e)) < 0) {
		e->truncated = true;
		e->dropped = egress_add(e->dropped, 1);
		return rc;
	}
	x = &e->entries[e->n++];
	memset(x, 0, sizeof(*x));
	memcpy(x->host, key, sizeof(x->host));
	memcpy(x->via, vkey, sizeof(x->via));
	egress_set_first(x, reason, status);
	x->port = port;
	x->decision = decision;
	x->count = 1;
	x->first = first;
	egress_settle(e, e->n - 1);
	return 0;
}

int
proxy_egress_note(struct proxy_egress *e, const char *host, uint16_t port,
    enum proxy_egress_decision decision, const char *reason, int status)
{
	if (e == NULL)
		return -EINVAL;
	return proxy_egress_note_at(e, host, port, decision, reason, status,
	    e->seq++);
}

int
proxy_egress_bytes(struct proxy_egress *e, const char *host, uint16_t port,
    uint64_t up, uint64_t down)
{
	return proxy_egress_bytes_via(e, host, port, NULL, up, down);
}

int
proxy_egress_bytes_via(struct proxy_egress *e, const char *host,
    uint16_t port, const char *via, uint64_t up, uint64_t down)
{
	char key[PROXY_EGRESS_HOST_MAX + 1], vkey[PROXY_EGRESS_VIA_MAX + 1];
	struct egress_entry *x;

	if (e == NULL || host == NULL)
		return -ENOENT;
	egress_copy(key, host, PROXY_EGRESS_HOST_MAX, true);
	egress_copy(vkey, via != NULL ? via : "", PROXY_EGRESS_VIA_MAX, true);
	x = egress_find(e, key, port, PROXY_EGRESS_ALLOWED, vkey, NULL);
	if (x == NULL)
		return -ENOENT;
	x->bytes_up = egress_add(x->bytes_up, up);
	x->bytes_down = egress_add(x->bytes_down, down);
	return 0;
}

static cJSON *
egress_entry_json(const struct egress_entry *x)
{
	cJSON *o = cJSON_CreateObject();

	if (o == NULL ||
	    json_add_bytes(o, "host", x->host, strlen(x->host)) < 0 ||
	    cJSON_AddNumberToObject(o, "port", x->port) == NULL ||
	    cJSON_AddStringToObject(o, "decision",
	    egress_decision_name(x->decision)) == NULL ||
	    json_add_bytes(o, "reason", x->reason, strlen(x->reason)) < 0 ||
	    cJSON_AddNumberToObject(o, "status", x->status) == NULL ||
	    cJSON_AddNumberToObject(o, "count", (double)x->count) == NULL ||
	    cJSON_AddNumberToObject(o, "bytes_up", (double)x->bytes_up) ==
	    NULL ||
	    cJSON_AddNumberToObject(o, "bytes_down", (double)x->bytes_down) ==
	    NULL || (x->via[0] != '\0' &&
	    json_add_bytes(o, "via", x->via, strlen(x->via)) < 0)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

cJSON *
proxy_egress_to_json(const struct proxy_egress *e)
{
	cJSON *o, *arr;

	if (e == NULL)
		return NULL;
	o = cJSON_CreateObject();
	if (o == NULL || (arr = cJSON_AddArrayToObject(o, "egress")) == NULL)
		goto fail;
	for (size_t i = 0; i < e->n; i++) {
		cJSON *x = egress_entry_json(&e->entries[i]);
		if (x == NULL || !cJSON_AddItemToArray(arr, x)) {
			cJSON_Delete(x);
			goto fail;
		}
	}
	if (e->truncated &&
	    (cJSON_AddTrueToObject(o, "egress_truncated") == NULL ||
	    cJSON_AddNumberToObject(o, "egress_dropped",
	    (double)e->dropped) == NULL))
		goto fail;
	if (cJSON_AddNumberToObject(o, "allowed", (double)e->allowed) ==
	    NULL ||
	    cJSON_AddNumberToObject(o, "denied", (double)e->denied) == NULL ||
	    cJSON_AddNumberToObject(o, "errors", (double)e->errors) == NULL)
		goto fail;
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}
