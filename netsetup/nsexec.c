/*
 * What every part of netsetup shares: running a tool (iptables, docker,
 * systemctl, nsenter) through proc_call with its one error convention,
 * and noting what was done (the change list of up/down) or what is wrong
 * (the drift list of status). Calls nothing else in netsetup.
 */
#include "netsetup/internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/proc.h"

int
netsetup_exec(const char *const *argv, const char *in, char **out,
    int *status, char *err, size_t errlen)
{
	struct proc_opts o = {
		.argv = argv,
		.stdin_data = in,
		.stdin_len = in != NULL ? strlen(in) : 0,
		.stdout_max = 8u << 20,
		.stderr_max = 64u << 10,
	};
	struct cbuf *buf = NULL;
	int rc;

	if (out != NULL)
		*out = NULL;
	rc = proc_call(&o, NS_CMD_TIMEOUT_MS, out != NULL ? &buf : NULL,
	    status, err, errlen);
	if (buf != NULL) {
		*out = cbuf_steal(buf, NULL);
		cbuf_free(buf);
		if (*out == NULL) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
	}
	return rc;
}

void
netsetup_note(struct cbuf *changes, const char *fmt, ...)
{
	char buf[700];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	(void)cbuf_append_str(changes, buf);
	(void)cbuf_append_str(changes, "\n");
}

int
netsetup_drift(cJSON *drift, const char *fmt, ...)
{
	char buf[600];
	cJSON *s;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if ((s = cJSON_CreateString(buf)) == NULL)
		return -ENOMEM;
	if (!cJSON_AddItemToArray(drift, s)) {
		cJSON_Delete(s);
		return -ENOMEM;
	}
	return 0;
}
