/*
 * The attach stream's frame parser (dockerframe.h).
 */
#include "runner/dockerframe.h"

#include <errno.h>
#include <string.h>

void
dockerapi_frames_init(struct dockerapi_frames *f)
{
	memset(f, 0, sizeof(*f));
}

int
dockerapi_frames_feed(struct dockerapi_frames *f, const void *data,
    size_t len, dockerapi_frame_fn fn, void *arg)
{
	const unsigned char *p = data;

	while (f->error == 0 && len > 0) {
		if (f->left > 0) {
			size_t n = len < f->left ? len : f->left;

			fn(arg, f->stream, p, n);
			f->left -= (uint32_t)n;
			p += n;
			len -= n;
			continue;
		}
		f->hdr[f->nhdr++] = *p++;
		len--;
		if (f->nhdr < sizeof(f->hdr))
			continue;
		f->nhdr = 0;
		if ((f->hdr[0] != 1 && f->hdr[0] != 2) || f->hdr[1] != 0 ||
		    f->hdr[2] != 0 || f->hdr[3] != 0) {
			f->error = -EBADMSG;
			break;
		}
		f->stream = f->hdr[0];
		f->left = (uint32_t)f->hdr[4] << 24 | (uint32_t)f->hdr[5] << 16 |
		    (uint32_t)f->hdr[6] << 8 | (uint32_t)f->hdr[7];
		f->frames++;
	}
	return f->error;
}

int
dockerapi_frames_end(const struct dockerapi_frames *f)
{
	if (f->error != 0)
		return f->error;
	return f->nhdr == 0 && f->left == 0 ? 0 : -EBADMSG;
}
