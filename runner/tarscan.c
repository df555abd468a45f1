/*
 * Counting setuid/setgid files in a tar stream (an image export), for the
 * doctor. Pure: reads headers only, refuses archives it cannot walk.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/doctor.h"

long
doctor_tar_count_setid(const unsigned char *tar, size_t len, char *first,
    size_t firstlen)
{
	size_t off = 0;
	long count = 0;

	if (first != NULL && firstlen > 0)
		first[0] = '\0';
	while (off + 512 <= len) {
		const unsigned char *h = tar + off;
		char num[13];
		unsigned long long size, mode;
		char *end;
		bool zero = true;
		for (size_t i = 0; i < 512 && zero; i++)
			zero = h[i] == 0;
		if (zero)
			return count;
		memcpy(num, h + 124, 12);
		num[12] = '\0';
		size = strtoull(num, &end, 8);
		if ((h[124] & 0x80) != 0)
			return -EBADMSG;	/* base-256 sizes: not from docker */
		memcpy(num, h + 100, 8);
		num[8] = '\0';
		mode = strtoull(num, &end, 8);
		if ((h[156] == '0' || h[156] == '\0' || h[156] == '7') &&
		    (mode & 06000) != 0) {
			if (count == 0 && first != NULL && firstlen > 0)
				snprintf(first, firstlen, "%.100s", (const char *)h);
			count++;
		}
		if (size > len)
			return -EBADMSG;
		off += 512 + (size_t)((size + 511) / 512) * 512;
	}
	return off == len ? count : -EBADMSG;
}

