/*
 * The doctor's line on the daemon's own hardening (doctor.h): plain root,
 * userns-remap (with the host IDs container root maps to) or rootless,
 * from `docker info`, and what each means for Cordon, as measured on the
 * development machine (README, "Daemon-side hardening").
 */
#include "runner/doctor.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/util.h"

/* "N.M", the last component of a remapped DockerRootDir, into *uid and
 * *gid; -1 each when it is not that. */
static void
remap_ids(const char *root, long *uid, long *gid)
{
	const char *base = strrchr(root, '/');
	char *end;
	long u, g;

	*uid = *gid = -1;
	base = base != NULL ? base + 1 : root;
	if (*base < '0' || *base > '9')
		return;
	errno = 0;
	u = strtol(base, &end, 10);
	if (errno != 0 || *end != '.' || end[1] < '0' || end[1] > '9')
		return;
	g = strtol(end + 1, &end, 10);
	if (errno != 0 || *end != '\0' || u < 0 || g < 0)
		return;
	*uid = u;
	*gid = g;
}

int
doctor_daemon_parse(const char *json, size_t len, struct doctor_daemon *d)
{
	cJSON *o = cJSON_ParseWithLength(json, len);
	const cJSON *opts, *s;
	const char *v;

	memset(d, 0, sizeof(*d));
	d->remap_uid = d->remap_gid = -1;
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		return -EBADMSG;
	}
	opts = cJSON_GetObjectItemCaseSensitive(o, "SecurityOptions");
	cJSON_ArrayForEach(s, opts) {
		if (!cJSON_IsString(s))
			continue;
		/* "name=userns" or "name=rootless", maybe with ",k=v". */
		if (strncmp(s->valuestring, "name=rootless", 13) == 0 &&
		    strchr(",", s->valuestring[13]) != NULL)
			d->mode = DOCTOR_DAEMON_ROOTLESS;
		else if (strncmp(s->valuestring, "name=userns", 11) == 0 &&
		    strchr(",", s->valuestring[11]) != NULL &&
		    d->mode != DOCTOR_DAEMON_ROOTLESS)
			d->mode = DOCTOR_DAEMON_USERNS;
	}
	if ((v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o,
	    "DockerRootDir"))) != NULL && d->mode == DOCTOR_DAEMON_USERNS)
		remap_ids(v, &d->remap_uid, &d->remap_gid);
	if ((v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o,
	    "CgroupDriver"))) != NULL)
		util_strlcpy(d->cgroup_driver, v, sizeof(d->cgroup_driver));
	if ((v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o,
	    "CgroupVersion"))) != NULL)
		d->cgroup_version = atoi(v);
	cJSON_Delete(o);
	return 0;
}

long
doctor_subid_count(const char *text, long start)
{
	const char *p = text, *nl;
	char line[256], *c1, *c2, *end;
	long s, n;

	for (; p != NULL && *p != '\0'; p = nl != NULL ? nl + 1 : NULL) {
		nl = strchr(p, '\n');
		snprintf(line, sizeof(line), "%.*s", (int)(nl != NULL ?
		    (size_t)(nl - p) : strlen(p)), p);
		/* NAME:START:COUNT */
		if ((c1 = strchr(line, ':')) == NULL ||
		    (c2 = strchr(c1 + 1, ':')) == NULL)
			continue;
		errno = 0;
		s = strtol(c1 + 1, &end, 10);
		if (errno != 0 || end != c2 || s != start)
			continue;
		n = strtol(c2 + 1, &end, 10);
		if (errno == 0 && *end == '\0' && n > 0)
			return n;
	}
	return -1;
}

static void
set(struct doctor_line *l, enum doctor_verdict v, const char *hint,
    const char *detail)
{
	l->verdict = v;
	util_strlcpy(l->what, "daemon", sizeof(l->what));
	util_strlcpy(l->detail, detail, sizeof(l->detail));
	util_strlcpy(l->hint, v == DOCTOR_FAIL || v == DOCTOR_WARN ? hint : "",
	    sizeof(l->hint));
}

static const char userns_means[] = "runsc's gofer runs as that root, not "
    "host root (proven with runsc: README)";

void
doctor_daemon_line(const struct doctor_daemon *d, long count,
    struct doctor_line *l)
{
	char buf[sizeof(l->detail)], range[96] = "";

	switch (d->mode) {
	case DOCTOR_DAEMON_ROOT:
		set(l, DOCTOR_INFO, NULL, "plain root (no userns-remap, not "
		    "rootless): gVisor is the boundary; runsc's gofer runs as "
		    "host root. userns-remap would make it an unprivileged "
		    "host uid (proven with runsc: README)");
		return;
	case DOCTOR_DAEMON_USERNS:
		if (d->remap_uid >= 0 && count > 0)
			snprintf(range, sizeof(range), " (%ld ids: %ld-%ld)",
			    count, d->remap_uid, d->remap_uid + count - 1);
		if (d->remap_uid >= 0)
			snprintf(buf, sizeof(buf), "userns-remap: container "
			    "root is host uid %ld, gid %ld%s; %s", d->remap_uid,
			    d->remap_gid, range, userns_means);
		else
			snprintf(buf, sizeof(buf), "userns-remap (mapped range "
			    "unknown); %s", userns_means);
		set(l, DOCTOR_OK, NULL, buf);
		return;
	case DOCTOR_DAEMON_ROOTLESS:
		break;
	}
	if (d->cgroup_version == 2 && strcmp(d->cgroup_driver, "none") != 0) {
		set(l, DOCTOR_WARN, "check that limits hold: a job allocating "
		    "past limits.memory must end with status oom",
		    "rootless, cgroup v2: not proven here; runsc may need "
		    "--ignore-cgroups, and egress mode cannot use this "
		    "daemon's networks");
		return;
	}
	snprintf(buf, sizeof(buf), "rootless, cgroup v%d (driver %s): runsc "
	    "starts only with --ignore-cgroups, and then no memory, CPU or "
	    "pids limit holds on the host (measured: 600 MiB passed a 256 MiB "
	    "limit)", d->cgroup_version, d->cgroup_driver[0] != '\0' ?
	    d->cgroup_driver : "?");
	set(l, DOCTOR_FAIL, "run Cordon on a root daemon, with userns-remap "
	    "for the daemon-side layer (README)", buf);
}
