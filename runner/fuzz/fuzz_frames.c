/*
 * libFuzzer target for the attach stream's frame parser
 * (runner/dockerframe.h), which the daemon feeds with the job's output.
 * The first byte chooses where to cut the rest in two. Checks: cut or
 * whole, the same pieces' bytes per stream and the same verdicts; never
 * more payload out than bytes in; nothing passed on after an error; every
 * piece non-empty, of stream 1 or 2.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runner/dockerframe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct acc {
	uint64_t n[3];
	uint64_t hash[3];	/* order-sensitive digest of the bytes */
	const struct dockerapi_frames *f;
};

static void
on_piece(void *arg, int stream, const void *p, size_t len)
{
	struct acc *a = arg;
	const unsigned char *b = p;

	if ((stream != 1 && stream != 2) || len == 0 || a->f->error != 0)
		abort();
	for (size_t i = 0; i < len; i++)
		a->hash[stream] = a->hash[stream] * 1099511628211u ^ b[i];
	a->n[stream] += len;
}

static int
run(const uint8_t *d, size_t size, size_t cut, struct acc *a, int *end)
{
	struct dockerapi_frames f;
	int rc;

	memset(a, 0, sizeof(*a));
	a->f = &f;
	dockerapi_frames_init(&f);
	rc = dockerapi_frames_feed(&f, d, cut, on_piece, a);
	if (rc == 0)
		rc = dockerapi_frames_feed(&f, d + cut, size - cut, on_piece, a);
	*end = dockerapi_frames_end(&f);
	if (a->n[1] + a->n[2] > size)
		abort();
	return rc;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct acc whole, two;
	int rw, rt, ew, et;
	size_t cut;

	if (size < 1)
		return 0;
	cut = data[0] % size;
	data++;
	size--;
	if (cut > size)
		cut = size;
	rw = run(data, size, size, &whole, &ew);
	rt = run(data, size, cut, &two, &et);
	if (rw != rt || ew != et || memcmp(whole.n, two.n, sizeof(two.n)) != 0 ||
	    memcmp(whole.hash, two.hash, sizeof(two.hash)) != 0)
		abort();
	return 0;
}
