/*
 * `cordon net reload` as a library: where the running proxy's allowlist
 * and access log are (the --allowlist and --access-log of the argv `up`
 * recorded), and the SIGHUP that
 * makes the proxy load it again. The caller checks the file first: a
 * proxy told to reload a broken list keeps its old one, but says so only
 * in its log.
 */
#include "netsetup/internal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

/* The value after flag in the proxy argv `up` recorded. */
static int
proxy_arg(const struct netsetup_params *p, const char *flag, char *buf,
    size_t len)
{
	cJSON *st = netsetup_state_read(p);
	const cJSON *argv = cJSON_GetObjectItemCaseSensitive(st, "proxy_argv");
	const cJSON *a, *next;
	int rc = -ENOENT;

	buf[0] = '\0';
	cJSON_ArrayForEach(a, argv) {
		next = a->next;
		if (!cJSON_IsString(a) || strcmp(a->valuestring, flag) != 0 ||
		    !cJSON_IsString(next))
			continue;
		if (strlen(next->valuestring) >= len)
			rc = -ENAMETOOLONG;
		else {
			snprintf(buf, len, "%s", next->valuestring);
			rc = 0;
		}
		break;
	}
	cJSON_Delete(st);
	return rc;
}

int
netsetup_proxy_allowlist(const struct netsetup_params *p, char *buf,
    size_t len)
{
	return proxy_arg(p, "--allowlist", buf, len);
}

int
netsetup_proxy_access_log(const struct netsetup_params *p, char *buf,
    size_t len)
{
	int rc = proxy_arg(p, "--access-log", buf, len);

	if (rc == 0 && strcmp(buf, "-") == 0) {
		buf[0] = '\0';
		rc = -ENOENT;	/* a proxy of an older `net up`: stdout */
	}
	return rc;
}

int
netsetup_proxy_reload(const struct netsetup_params *p, char *err,
    size_t errlen)
{
	char cpidp[400];
	pid_t pid = 0;

	if (sdunit_installed(p)) {
		pid = sdunit_active(p) ? sdunit_main_pid(p) : 0;
	} else {
		netsetup_state_path(p, "proxy.pid", cpidp, sizeof(cpidp));
		if (nssuper_child_alive(cpidp, &pid) < 0)
			pid = 0;
	}
	if (pid <= 1) {
		snprintf(err, errlen, "no proxy is running; run 'cordon net up'");
		return -ESRCH;
	}
	if (kill(pid, SIGHUP) < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot signal the proxy (pid %ld): %s",
		    (long)pid, strerror(e));
		return -e;
	}
	return 0;
}
