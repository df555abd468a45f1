/*
 * The kernel's own record of a memory-cgroup OOM kill, as a second witness
 * beside Docker's State.OOMKilled. Under runsc with cgroup v1, Docker misses
 * some OOM kills (measured: 1 in 5 memory bombs exited 137 with
 * OOMKilled=false and no "oom" event, while the kernel logged
 * "oom-kill:...,oom_memcg=/docker/<id>,..." for that very container).
 */
#ifndef CORDON_RUNNER_OOMLOG_H
#define CORDON_RUNNER_OOMLOG_H

#include <stdbool.h>
#include <stddef.h>

/* Whether one kernel log record (a /dev/kmsg record or a dmesg line) is an
 * OOM kill whose memory cgroup (oom_memcg=...) is the container with the
 * full 64-hex-digit id. Pure. */
bool runner_oomlog_match(const char *record, size_t len, const char *id);

/* Scans the kernel log (/dev/kmsg, root only) for such a record. true when
 * one is found; false when none is, or the log cannot be read. */
bool runner_oomlog_find(const char *id);

#endif
