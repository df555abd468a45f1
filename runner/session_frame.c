/*
 * The host side of the session driver's framing (session.h): the parser of
 * its result frames and the builder of its request headers. Pure, so it is
 * unit-tested by a table and fuzzed (runner/fuzz/fuzz_session_frame.c).
 */
#include "runner/session.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define FRAME_MAGIC "\0CSF1 "
#define FRAME_MAGIC_LEN 6
#define FRAME_LEN_MAX ((size_t)1 << 40)	/* keeps the sums in range */

/* One space-terminated (or, for the last, '\n'-terminated) canonical
 * decimal field at *p: no sign, no leading zero but "0", at most 19
 * digits. Advances *p past the terminator. */
static int
field_u64(const char **p, const char *end, char term, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	size_t n = 0;

	while (s + n < end && s[n] >= '0' && s[n] <= '9') {
		if (n == 19)
			return -EPROTO;
		v = v * 10 + (uint64_t)(s[n] - '0');
		n++;
	}
	if (n == 0 || s + n >= end || s[n] != term || (n > 1 && s[0] == '0'))
		return -EPROTO;
	*out = v;
	*p = s + n + 1;
	return 0;
}

static int
field_kind(const char **p, const char *end, enum runner_session_kind *k)
{
	static const char *const names[] = { "ready", "ok", "exc", "exit" };
	size_t n;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		n = strlen(names[i]);
		if ((size_t)(end - *p) > n && memcmp(*p, names[i], n) == 0 &&
		    (*p)[n] == ' ') {
			*k = (enum runner_session_kind)i;
			*p += n + 1;
			return 0;
		}
	}
	return -EPROTO;
}

/* Whether buf[0..len) could still become the magic and nonce. */
static bool
prefix_ok(const char *buf, size_t len, const char *nonce)
{
	size_t m = len < FRAME_MAGIC_LEN ? len : FRAME_MAGIC_LEN;
	size_t k;

	if (memcmp(buf, FRAME_MAGIC, m) != 0)
		return false;
	if (len <= FRAME_MAGIC_LEN)
		return true;
	k = len - FRAME_MAGIC_LEN;
	if (k > RUNNER_SESSION_NONCE_LEN)
		k = RUNNER_SESSION_NONCE_LEN;
	return memcmp(buf + FRAME_MAGIC_LEN, nonce, k) == 0;
}

int
runner_session_frame_parse(const void *vbuf, size_t len, const char *nonce,
    size_t max_len, struct runner_session_frame *f)
{
	const char *buf = vbuf, *nl, *p, *end;
	uint64_t v[5];
	size_t hdr;

	memset(f, 0, sizeof(*f));
	if (max_len > FRAME_LEN_MAX)
		max_len = FRAME_LEN_MAX;
	if (nonce == NULL || strlen(nonce) != RUNNER_SESSION_NONCE_LEN)
		return -EPROTO;
	if (!prefix_ok(buf, len, nonce))
		return -EPROTO;
	nl = memchr(buf, '\n', len < RUNNER_SESSION_HDR_MAX ? len :
	    RUNNER_SESSION_HDR_MAX);
	if (nl == NULL)
		return len < RUNNER_SESSION_HDR_MAX ? -EAGAIN : -EPROTO;
	hdr = (size_t)(nl - buf) + 1;
	end = nl + 1;
	p = buf + FRAME_MAGIC_LEN;
	if (hdr < FRAME_MAGIC_LEN + RUNNER_SESSION_NONCE_LEN + 1 ||
	    p[RUNNER_SESSION_NONCE_LEN] != ' ')
		return -EPROTO;
	p += RUNNER_SESSION_NONCE_LEN + 1;
	if (field_u64(&p, end, ' ', &f->seq) < 0 ||
	    field_kind(&p, end, &f->kind) < 0)
		return -EPROTO;
	for (int i = 0; i < 5; i++)
		if (field_u64(&p, end, i == 4 ? '\n' : ' ', &v[i]) < 0)
			return -EPROTO;
	if (p != end || v[0] > 255 || v[1] > max_len || v[3] > max_len ||
	    v[1] > v[2] || v[3] > v[4])
		return -EPROTO;
	/* The ready frame carries nothing. */
	if (f->kind == RUNNER_SESSION_READY && (f->seq != 0 || v[0] != 0 ||
	    v[2] != 0 || v[4] != 0))
		return -EPROTO;
	f->exit_code = (int)v[0];
	f->out_off = hdr;
	f->out_len = (size_t)v[1];
	f->out_seen = v[2];
	f->err_off = hdr + f->out_len;
	f->err_len = (size_t)v[3];
	f->err_seen = v[4];
	f->total = f->err_off + f->err_len;
	if (len < f->total) {
		size_t seq = (size_t)f->seq;

		memset(f, 0, sizeof(*f));
		f->seq = seq;
		return -EAGAIN;
	}
	return 0;
}

int
runner_session_call_header(char *out, size_t outlen, uint64_t seq,
    size_t code_len, size_t head, size_t tail)
{
	int n = snprintf(out, outlen, "%llu %zu %zu %zu\n",
	    (unsigned long long)seq, code_len, head, tail);

	if (n < 0 || (size_t)n >= outlen)
		return -ENOSPC;
	return n;
}
