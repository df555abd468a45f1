/*
 * The state directory of one bridge (<state_dir>/net-<bridge>): the record
 * of the last `up` (net.json: subnet, allowlist, proxy argv, whether we
 * created the network), the lock that serialises up and down, and the
 * parameters as that record amends them.
 */
#include "netsetup/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "common/json.h"
#include "common/util.h"

void
netsetup_state_path(const struct netsetup_params *p, const char *name,
    char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", p->state_dir, name);
}

cJSON *
netsetup_state_read(const struct netsetup_params *p)
{
	char path[400], err[128];
	cJSON *st = NULL;

	netsetup_state_path(p, "net.json", path, sizeof(path));
	if (json_parse_file(path, 1 << 20, &st, err, sizeof(err)) < 0)
		return NULL;
	return st;
}

int
netsetup_params_load(struct netsetup_params *p, const struct config *c,
    char *err, size_t errlen)
{
	const char *subnet = NULL;
	cJSON *st;
	int rc;

	if ((rc = netsetup_params_init(p, c, NULL, err, errlen)) < 0)
		return rc;
	st = netsetup_state_read(p);
	if (st != NULL && json_get_string(st, "subnet", &subnet) == 0 &&
	    strcmp(subnet, p->subnet) != 0)
		rc = netsetup_params_init(p, c, subnet, err, errlen);
	cJSON_Delete(st);
	return rc;
}

int
netsetup_state_lock(const struct netsetup_params *p, char *err,
    size_t errlen)
{
	int64_t until = time_mono_ms() + 60000;
	char path[400];
	int fd, rc;

	if ((rc = util_mkdir_p(p->state_dir, 0755)) < 0) {
		snprintf(err, errlen, "%s: %s", p->state_dir, strerror(-rc));
		return rc;
	}
	netsetup_state_path(p, "lock", path, sizeof(path));
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return rc;
	}
	while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK || time_mono_ms() >= until) {
			snprintf(err, errlen, "another 'cordon net' holds %s",
			    path);
			close(fd);
			return -EBUSY;
		}
		(void)usleep(100000);
	}
	return fd;
}

/* The record as a JSON object, or NULL on ENOMEM (nothing half-built). */
static cJSON *
state_json(const struct netsetup_params *p, const struct netsetup_up_opts *o,
    const cJSON *proxy_argv, bool ours)
{
	cJSON *st = cJSON_CreateObject(), *argv;

	if (st == NULL)
		return NULL;
	if (cJSON_AddStringToObject(st, "network", p->network) == NULL ||
	    cJSON_AddStringToObject(st, "subnet", p->subnet) == NULL ||
	    cJSON_AddStringToObject(st, "gateway", p->gateway) == NULL ||
	    cJSON_AddNumberToObject(st, "port", p->port) == NULL ||
	    cJSON_AddStringToObject(st, "allowlist", o->allowlist) == NULL ||
	    cJSON_AddBoolToObject(st, "network_created", ours) == NULL)
		goto bad;
	if ((argv = cJSON_Duplicate(proxy_argv, true)) == NULL)
		goto bad;
	if (!cJSON_AddItemToObject(st, "proxy_argv", argv)) {
		cJSON_Delete(argv);
		goto bad;
	}
	return st;
bad:
	cJSON_Delete(st);
	return NULL;
}

int
netsetup_state_write(const struct netsetup_params *p,
    const struct netsetup_up_opts *o, const cJSON *proxy_argv, bool ours)
{
	cJSON *st = state_json(p, o, proxy_argv, ours);
	char path[400], *text;
	int rc = -ENOMEM;

	if (st == NULL)
		return -ENOMEM;
	if ((text = json_print_line(st)) != NULL) {
		netsetup_state_path(p, "net.json", path, sizeof(path));
		rc = util_write_file_atomic(path, text, strlen(text), 0644);
		free(text);
	}
	cJSON_Delete(st);
	return rc;
}
