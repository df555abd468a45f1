/*
 * Reads the kernel log for a memory-cgroup OOM kill of one container: the
 * evidence the runner uses when Docker reports exit 137 without OOMKilled
 * (see oomlog.h). Non-blocking reads of /dev/kmsg, one record per read.
 */
#include "runner/oomlog.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#define OOMLOG_ID_LEN 64
#define OOMLOG_MAX_RECORDS 100000

static bool
id_valid(const char *id)
{
	size_t n = 0;

	for (; id[n] != '\0'; n++)
		if (!((id[n] >= '0' && id[n] <= '9') ||
		    (id[n] >= 'a' && id[n] <= 'f')))
			return false;
	return n == OOMLOG_ID_LEN;
}

bool
runner_oomlog_match(const char *record, size_t len, const char *id)
{
	static const char key[] = "oom_memcg=";
	const char *p, *end = record + len, *v, *ve;

	if (id == NULL || !id_valid(id) ||
	    memmem(record, len, "oom-kill:", 9) == NULL)
		return false;
	p = memmem(record, len, key, sizeof(key) - 1);
	if (p == NULL)
		return false;
	v = p + sizeof(key) - 1;
	for (ve = v; ve < end && *ve != ',' && *ve != '\n'; ve++)
		;
	/* cgroupfs: /docker/<id>; systemd: /system.slice/docker-<id>.scope */
	p = memmem(v, (size_t)(ve - v), id, OOMLOG_ID_LEN);
	return p != NULL && p > v && (p[-1] == '/' || p[-1] == '-') &&
	    (p + OOMLOG_ID_LEN == ve || p[OOMLOG_ID_LEN] == '.');
}

bool
runner_oomlog_find(const char *id)
{
	char rec[8192];
	bool found = false;
	int fd;

	if (id == NULL || !id_valid(id))
		return false;
	fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return false;
	for (int i = 0; i < OOMLOG_MAX_RECORDS && !found; i++) {
		ssize_t n = read(fd, rec, sizeof(rec));
		if (n < 0 && errno == EPIPE)
			continue;	/* overwritten while we read: go on */
		if (n <= 0)
			break;		/* EAGAIN: the end of the log */
		found = runner_oomlog_match(rec, (size_t)n, id);
	}
	close(fd);
	return found;
}
