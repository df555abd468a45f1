/*
 * Garbage collection over Cordon containers (gc.c: `cordon gc`, `cordon
 * kill-all`, and what a restarted service removes of its predecessor's).
 */
#ifndef CORDON_RUNNER_GC_H
#define CORDON_RUNNER_GC_H

#include <stdbool.h>
#include <stddef.h>

#include "common/config.h"

/* Garbage collection over Cordon containers (label cordon=1). gc removes
 * those whose deadline passed or whose owner pid is gone; kill_all removes
 * all. *removed counts them. 0 or a negative errno with a reason. */
int runner_gc(const struct config *c, bool all, int *removed, char *err,
    size_t errlen);

/* runner_gc's default sweep (expired or orphaned), with the names of
 * what it removed in names (may be NULL; space separated, cut at
 * nameslen): what a restarted service removes of its crashed
 * predecessor's. 0 or a negative errno with a reason. */
int runner_gc_names(const struct config *c, int *removed, char *names,
    size_t nameslen, char *err, size_t errlen);

/* The same sweep over the containers labelled with owner pid `owner` only
 * (a service's own, once it has stopped everything: what is found then
 * was left behind). names (may be NULL) receives their names, space
 * separated, cut at nameslen. 0 or a negative errno with a reason. */
int runner_gc_owner(const struct config *c, long owner, int *removed,
    char *names, size_t nameslen, char *err, size_t errlen);

/* How many containers labelled with owner pid `owner` are still listed
 * (*left, their names in names as above), removing none: whether what a
 * sweep asked to remove is gone. A removal the daemon has accepted can
 * stay pending while the runtime is slow to stop the sandbox. 0 or a
 * negative errno with a reason. */
int runner_gc_owner_left(const struct config *c, long owner, int *left,
    char *names, size_t nameslen, char *err, size_t errlen);

#endif
