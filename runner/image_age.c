/*
 * The image's age (image.h): when its packages came from the mirror, and
 * whether that is past image.max_age_days. Pure: `cordon doctor` warns
 * with it; `cordon image build --refresh` is the cure.
 */
#include "runner/image.h"

#include <errno.h>
#include <time.h>

/* n decimal digits at *p into *v; advances *p. */
static bool
digits(const char **p, int n, int *v)
{
	*v = 0;
	for (int i = 0; i < n; i++, (*p)++) {
		if (**p < '0' || **p > '9')
			return false;
		*v = *v * 10 + (**p - '0');
	}
	return true;
}

int
image_time_parse(const char *s, int64_t *wall_ms)
{
	struct tm tm = { 0 };
	int y, mo, d, h, mi, sec, oh = 0, om = 0, ms = 0, scale = 100;
	int sign = 0;
	time_t t;

	if (!digits(&s, 4, &y) || *s++ != '-' || !digits(&s, 2, &mo) ||
	    *s++ != '-' || !digits(&s, 2, &d))
		return -EINVAL;
	if (*s != 'T' && *s != 't')
		return -EINVAL;
	s++;
	if (!digits(&s, 2, &h) || *s++ != ':' || !digits(&s, 2, &mi) ||
	    *s++ != ':' || !digits(&s, 2, &sec))
		return -EINVAL;
	if (*s == '.') {
		if (s[1] < '0' || s[1] > '9')
			return -EINVAL;
		for (s++; *s >= '0' && *s <= '9'; s++, scale /= 10)
			ms += (*s - '0') * scale;
	}
	if (*s == 'Z' || *s == 'z') {
		s++;
	} else if (*s == '+' || *s == '-') {
		sign = *s++ == '+' ? 1 : -1;
		if (!digits(&s, 2, &oh) || *s++ != ':' || !digits(&s, 2, &om) ||
		    oh > 23 || om > 59)
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	if (*s != '\0' || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 ||
	    mi > 59 || sec > 60)
		return -EINVAL;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	if ((t = timegm(&tm)) == (time_t)-1)
		return -EINVAL;
	*wall_ms = ((int64_t)t - sign * (oh * 3600 + om * 60)) * 1000 + ms;
	return 0;
}

int
image_record_made_ms(const struct image_record *rec, int64_t *wall_ms)
{
	if (image_time_parse(rec->rootfs_at, wall_ms) == 0)
		return 0;
	return image_time_parse(rec->built_at, wall_ms);
}

bool
image_too_old(const struct config *c, int64_t made_ms, int64_t now_ms,
    int64_t *days)
{
	int64_t age = now_ms > made_ms ? now_ms - made_ms : 0;

	*days = age / 86400000;
	return c->image.max_age_days > 0 &&
	    age > c->image.max_age_days * 86400000;
}
