/*
 * `cordon gc` and `cordon kill-all` (runner_gc in gc.h): list every
 * container labelled cordon=1 with its owner pid and deadline labels, pick
 * the expired or orphaned ones (or all), and remove them by name.
 */
#include "runner/gc.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/proc.h"
#include "common/util.h"
#include "runner/docker.h"
#include "runner/docker_argv.h"

#define GC_BATCH 32
#define GC_STAGING_AGE_S 600	/* orphan --in dirs older than this go */

static bool
pid_alive(long pid)
{
	return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

/* The listing of Cordon containers: 0 and *out (caller frees), or a
 * negative errno with a reason in err. */
static int
list_containers(const struct config *c, struct cbuf **out, char *err,
    size_t errlen)
{
	const char *argv[] = { c->docker, "ps", "-a", "--no-trunc",
	    "--filter", "label=cordon=1", "--format",
	    "{{.Names}}\t{{.Label \"cordon.owner_pid\"}}\t"
	    "{{.Label \"cordon.deadline\"}}", NULL };
	struct proc_opts o = { .argv = argv, .stdout_max = 16 << 20,
	    .stderr_max = 4096 };
	char why[320];
	int rc = proc_call(&o, DOCKER_CALL_MS, out, NULL, why, sizeof(why));

	if (rc == 0 && cbuf_truncated(*out)) {
		snprintf(why, sizeof(why), "more than %d bytes of output",
		    16 << 20);
		rc = -EIO;
	}
	if (rc == -EIO && docker_fault_text(why) != DOCKER_FAULT_OTHER) {
		rc = docker_fault_say(docker_fault_text(why), NULL, why, err,
		    errlen);
	} else if (rc == -EIO || rc == -ETIMEDOUT) {
		/* docker's whole first line: proc_call keeps at most why's. */
		snprintf(err, errlen, "`%s ps` failed: %s", c->docker, why);
		rc = -EIO;
	} else if (rc < 0) {
		snprintf(err, errlen, "%s", why);	/* cannot run DOCKER */
	}
	if (rc < 0) {
		cbuf_free(*out);
		*out = NULL;
	}
	return rc;
}

/* Removes a batch; names that vanished meanwhile, or whose removal was
 * already in progress (a run removing its own), still count as gone: a
 * sweep is repeated, and that run's removal asks again if it fails.
 * On failure, docker's words in why. */
static int
flush(const struct config *c, const char **batch, size_t *n, int *removed,
    char *why, size_t whylen)
{
	int rc = docker_rm_force(c, batch, *n, why, whylen);

	if (rc == 0 || rc == -ENOENT || rc == -EBUSY) {
		*removed += (int)*n;
		rc = 0;
	}
	*n = 0;
	return rc;
}

/* One container from the listing; name points into the listing text. */
struct gc_item {
	const char *name;
	bool remove;
};

static struct gc_item *
gc_find(struct gc_item *items, size_t n, const char *name, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(items[i].name) == len &&
		    strncmp(items[i].name, name, len) == 0)
			return &items[i];
	return NULL;
}

/* Removes --in staging directories (STATE_DIR/in/<name>.XXXXXX) left by
 * runners that died: those of containers removed now, and those of no
 * listed container that are older than a start could take. */
static void
gc_staging(const struct config *c, struct gc_item *items, size_t n,
    int64_t now)
{
	char dir[PATH_MAX], path[PATH_MAX];
	struct dirent *de;
	struct stat st;
	DIR *d;

	if ((size_t)snprintf(dir, sizeof(dir), "%s/in", c->state_dir) >=
	    sizeof(dir) || (d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		const char *dot = strchr(de->d_name, '.');
		struct gc_item *it;
		if (strncmp(de->d_name, "cordon-", 7) != 0 || dot == NULL)
			continue;
		it = gc_find(items, n, de->d_name, (size_t)(dot - de->d_name));
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir,
		    de->d_name) >= sizeof(path) || lstat(path, &st) < 0)
			continue;
		if ((it != NULL && it->remove) ||
		    (it == NULL && st.st_mtime < now - GC_STAGING_AGE_S))
			(void)util_rm_rf(path);
	}
	closedir(d);
}

/* Which listed containers go: all, one owner's, or (neither) the
 * expired and orphaned ones. */
struct gc_pick {
	bool all;
	const char *owner;		/* decimal pid or NULL */
	bool count_only;		/* count (and name) them, remove none */
};

static bool
gc_pick_match(const struct gc_pick *pk, const char *owner,
    const char *deadline, int64_t now)
{
	if (pk->all)
		return true;
	if (pk->owner != NULL)
		return strcmp(owner, pk->owner) == 0;
	return docker_gc_match(owner, deadline, now, pid_alive);
}

/* Splits the listing into items, deciding which to remove. */
static int
gc_parse(char *text, const struct gc_pick *pk, int64_t now,
    struct gc_item **out, size_t *n)
{
	struct gc_item *items = NULL, *ni;
	char *line, *save = NULL;

	*n = 0;
	for (line = strtok_r(text, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		char *f[3] = { line, NULL, NULL };
		for (int i = 1; i < 3 && f[i - 1] != NULL; i++)
			if ((f[i] = strchr(f[i - 1], '\t')) != NULL)
				*f[i]++ = '\0';
		/* Only the runner's own containers, never other labelled
		 * ones (tests of other parts). */
		if (strncmp(f[0], "cordon-", 7) != 0)
			continue;
		if ((ni = realloc(items, (*n + 1) * sizeof(*items))) == NULL) {
			free(items);
			return -ENOMEM;
		}
		items = ni;
		items[*n].name = f[0];
		items[*n].remove = gc_pick_match(pk, f[1] != NULL ? f[1] : "",
		    f[2] != NULL ? f[2] : "", now);
		(*n)++;
	}
	*out = items;
	return 0;
}

static void
gc_name(char *names, size_t len, const char *name)
{
	size_t n;

	if (names == NULL || len == 0)
		return;
	n = strlen(names);
	if (n + 1 < len)
		snprintf(names + n, len - n, "%s%s", n > 0 ? " " : "", name);
}

static int
gc_sweep(const struct config *c, const struct gc_pick *pk, int *removed,
    char *names, size_t nameslen, char *err, size_t errlen)
{
	const char *batch[GC_BATCH];
	struct gc_item *items = NULL;
	struct cbuf *list;
	char why[320];
	int64_t now = time_wall_ms() / 1000;
	size_t n = 0, nitems = 0;
	int rc;

	*removed = 0;
	if ((rc = runner_daemon_check(c, err, errlen)) < 0 ||
	    (rc = list_containers(c, &list, err, errlen)) < 0)
		return rc;
	if ((rc = gc_parse((char *)cbuf_data(list), pk, now, &items,
	    &nitems)) < 0) {
		snprintf(err, errlen, "out of memory");
		goto done;
	}
	for (size_t i = 0; rc == 0 && i < nitems; i++) {
		if (!items[i].remove)
			continue;
		gc_name(names, nameslen, items[i].name);
		if (pk->count_only) {
			(*removed)++;
			continue;
		}
		batch[n++] = items[i].name;
		if (n == GC_BATCH)
			rc = flush(c, batch, &n, removed, why, sizeof(why));
	}
	if (rc == 0)
		rc = flush(c, batch, &n, removed, why, sizeof(why));
	/* docker's own words: why the daemon would not remove them (a
	 * runtime that cannot kill its sandbox, a timeout) is what a person
	 * reading this needs, and a bare "failed" hid it. */
	if (rc < 0)
		snprintf(err, errlen, "`%s rm -f` failed: %s", c->docker, why);
	else if (!pk->count_only)
		gc_staging(c, items, nitems, now);
	free(items);
done:
	cbuf_free(list);
	return rc;
}

int
runner_gc(const struct config *c, bool all, int *removed, char *err,
    size_t errlen)
{
	struct gc_pick pk = { .all = all };

	return gc_sweep(c, &pk, removed, NULL, 0, err, errlen);
}

int
runner_gc_names(const struct config *c, int *removed, char *names,
    size_t nameslen, char *err, size_t errlen)
{
	struct gc_pick pk = { .all = false };

	if (names != NULL && nameslen > 0)
		names[0] = '\0';
	return gc_sweep(c, &pk, removed, names, nameslen, err, errlen);
}

int
runner_gc_owner(const struct config *c, long owner, int *removed,
    char *names, size_t nameslen, char *err, size_t errlen)
{
	char pid[24];
	struct gc_pick pk = { .owner = pid };

	if (names != NULL && nameslen > 0)
		names[0] = '\0';
	snprintf(pid, sizeof(pid), "%ld", owner);
	return gc_sweep(c, &pk, removed, names, nameslen, err, errlen);
}

int
runner_gc_owner_left(const struct config *c, long owner, int *left,
    char *names, size_t nameslen, char *err, size_t errlen)
{
	char pid[24];
	struct gc_pick pk = { .owner = pid, .count_only = true };

	if (names != NULL && nameslen > 0)
		names[0] = '\0';
	snprintf(pid, sizeof(pid), "%ld", owner);
	return gc_sweep(c, &pk, left, names, nameslen, err, errlen);
}
