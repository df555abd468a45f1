/*
 * The probe's views (probe/eval_internal.h): a control's record in the
 * report, and strict typed lookups into the untrusted inside view and the
 * outside (docker inspect) view. Pure: no I/O.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "probe/eval_internal.h"

struct probe_control *
probe_ctl_new(struct probe_report *rep, const char *name, const char *fmt, ...)
{
	struct probe_control *c;
	va_list ap;

	if (rep->ncontrols == PROBE_MAX_CONTROLS)
		return NULL;
	c = &rep->controls[rep->ncontrols++];
	memset(c, 0, sizeof(*c));
	c->name = name;
	va_start(ap, fmt);
	vsnprintf(c->expected, sizeof(c->expected), fmt, ap);
	va_end(ap);
	return c;
}

void
probe_ctl_observe(struct probe_control *c, bool pass, const char *fmt, ...)
{
	va_list ap;

	if (c == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(c->observed, sizeof(c->observed), fmt, ap);
	va_end(ap);
	c->pass = pass;
}

/* Strict typed lookups; a dotted path walks objects ("HostConfig.Memory"). */
const cJSON *
probe_view_get(const cJSON *o, const char *path)
{
	char key[64];
	const char *dot;

	while (o != NULL && (dot = strchr(path, '.')) != NULL) {
		size_t n = (size_t)(dot - path);
		if (n >= sizeof(key))
			return NULL;
		memcpy(key, path, n);
		key[n] = '\0';
		o = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key)
		    : NULL;
		path = dot + 1;
	}
	return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, path)
	    : NULL;
}

bool
probe_view_int(const cJSON *o, const char *path, long long *out)
{
	const cJSON *v = probe_view_get(o, path);

	if (!cJSON_IsNumber(v) || v->valuedouble != (double)(long long)v->valuedouble)
		return false;
	*out = (long long)v->valuedouble;
	return true;
}

const char *
probe_view_str(const cJSON *o, const char *path)
{
	const cJSON *v = probe_view_get(o, path);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

int
probe_view_bool(const cJSON *o, const char *path)
{
	const cJSON *v = probe_view_get(o, path);

	return cJSON_IsBool(v) ? cJSON_IsTrue(v) : -1;
}

/* [soft, hard] pair of whole numbers. */
bool
probe_view_pair(const cJSON *o, const char *path, long long *soft,
    long long *hard)
{
	const cJSON *v = probe_view_get(o, path);

	if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 2)
		return false;
	for (int i = 0; i < 2; i++) {
		const cJSON *x = cJSON_GetArrayItem(v, i);
		if (!cJSON_IsNumber(x))
			return false;
		*(i ? hard : soft) = (long long)x->valuedouble;
	}
	return true;
}

bool
probe_view_has_string(const cJSON *arr, const char *s, size_t prefix_len)
{
	const cJSON *v;

	cJSON_ArrayForEach(v, arr)
		if (cJSON_IsString(v) && (prefix_len ?
		    strncmp(v->valuestring, s, prefix_len) == 0 :
		    strcmp(v->valuestring, s) == 0))
			return true;
	return false;
}

/* Host ulimit {Name, Soft, Hard} from HostConfig.Ulimits. */
