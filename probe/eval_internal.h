/*
 * Judging a probe, internal to probe/: the two views, a control's record
 * and the typed lookups (eval_view.c); the controls of what the sandbox
 * sees of the host: mounts, environment, network (eval_net.c); the
 * process controls and the verdict (eval.c).
 */
#ifndef CORDON_PROBE_EVAL_INTERNAL_H
#define CORDON_PROBE_EVAL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "common/json.h"
#include "probe/probe.h"

struct views {
	const cJSON *in;	/* inside object, or NULL if unusable */
	const cJSON *host;	/* inspect object, or NULL */
};

/* A new control in rep, with its expectation (NULL: the report is full;
 * probe_ctl_observe then does nothing). */
struct probe_control *probe_ctl_new(struct probe_report *rep,
    const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void probe_ctl_observe(struct probe_control *c, bool pass, const char *fmt,
    ...) __attribute__((format(printf, 3, 4)));

/* Strict typed lookups; a dotted path walks objects ("HostConfig.Memory").
 * Missing or of another type: NULL, false, or -1 (bool). */
const cJSON *probe_view_get(const cJSON *o, const char *path);
bool probe_view_int(const cJSON *o, const char *path, long long *out);
const char *probe_view_str(const cJSON *o, const char *path);
int probe_view_bool(const cJSON *o, const char *path);
bool probe_view_pair(const cJSON *o, const char *path, long long *soft,
    long long *hard);
bool probe_view_has_string(const cJSON *arr, const char *s,
    size_t prefix_len);

/* eval_net.c */
void probe_ctl_mounts(const struct probe_expect *e, const struct views *v,
    struct probe_report *rep);
void probe_ctl_env(const struct probe_expect *e, const struct views *v,
    struct probe_report *rep);
void probe_ctl_network(const struct probe_expect *e, const struct views *v,
    struct probe_report *rep);

#endif
