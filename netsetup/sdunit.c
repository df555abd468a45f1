/*
 * The proxy as a transient systemd unit, used instead of the pid-file
 * supervisor when systemd is the init system: a runtime unit file in
 * /run/systemd/system (gone at reboot, like the firewall rules), with
 * Restart=always, the proxy user and its output appended to the log.
 * The unit text is built by a pure function; the rest calls systemctl.
 */
#include "netsetup/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"

#define SDUNIT_RUNTIME_DIR "/run/systemd/system"

bool
sdunit_booted(void)
{
	/* The test sd_booted(3) uses. */
	return access(SDUNIT_RUNTIME_DIR "/", F_OK) == 0;
}

void
sdunit_name(const struct netsetup_params *p, char *buf, size_t len)
{
	snprintf(buf, len, "cordon-proxy-%s.service", p->bridge);
}

/* Appends s quoted for a systemd command line or assignment: in double
 * quotes, with \ and " escaped, % and $ doubled (no specifiers, no
 * variable expansion). Control characters are refused. */
static int
sdunit_quote(char *buf, size_t len, size_t *used, const char *s)
{
	size_t u = *used;

	if (u + 1 >= len)
		return -ENOSPC;
	buf[u++] = '"';
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;
		if (c < 0x20 || c == 0x7f)
			return -EINVAL;
		if (u + 3 >= len)
			return -ENOSPC;
		if (c == '\\' || c == '"')
			buf[u++] = '\\';
		else if (c == '%' || c == '$')
			buf[u++] = (char)c;
		buf[u++] = (char)c;
	}
	if (u + 2 >= len)
		return -ENOSPC;
	buf[u++] = '"';
	buf[u] = '\0';
	*used = u;
	return 0;
}

static int
sdunit_append(char *buf, size_t len, size_t *used, const char *s)
{
	size_t n = strlen(s);

	if (*used + n >= len)
		return -ENOSPC;
	memcpy(buf + *used, s, n + 1);
	*used += n;
	return 0;
}

/* Appends "key" then each value quoted and space-separated, then "\n". */
static int
sdunit_line(char *buf, size_t len, size_t *used, const char *key,
    const char *const *vals)
{
	int rc = sdunit_append(buf, len, used, key);

	for (size_t i = 0; rc == 0 && vals[i] != NULL; i++) {
		if (i > 0)
			rc = sdunit_append(buf, len, used, " ");
		if (rc == 0)
			rc = sdunit_quote(buf, len, used, vals[i]);
	}
	return rc == 0 ? sdunit_append(buf, len, used, "\n") : rc;
}

int
sdunit_text(const struct nssuper_spec *s, const char *bridge, char *buf,
    size_t len)
{
	const char *user[] = { s->user, NULL };
	size_t used = 0;
	int rc;

	if (len == 0)
		return -ENOSPC;
	buf[0] = '\0';
	/* The log path goes unquoted into StandardOutput=append:, and the
	 * bridge into the description: keep both plain. */
	if (strpbrk(s->log_path, " \t\n\"'\\%$") != NULL ||
	    strpbrk(bridge, " \t\n\"'\\%$") != NULL)
		return -EINVAL;
	rc = sdunit_append(buf, len, &used, "# Written by 'cordon net up'; "
	    "removed by 'cordon net down'.\n[Unit]\nDescription=Cordon egress "
	    "proxy on ");
	if (rc == 0)
		rc = sdunit_append(buf, len, &used, bridge);
	if (rc == 0)
		rc = sdunit_append(buf, len, &used, "\nAfter=network.target "
		    "docker.service\n\n[Service]\nType=simple\n");
	if (rc == 0)
		rc = sdunit_line(buf, len, &used, "ExecStart=", s->argv);
	/* The parent stays root (it keeps the CA key, the secrets and the
	 * control socket, and rereads them on reload); its network child
	 * drops to the proxy user (--user) in an empty root. */
	(void)user;
	for (size_t i = 0; rc == 0 && s->envp[i] != NULL; i++) {
		const char *one[] = { s->envp[i], NULL };
		rc = sdunit_line(buf, len, &used, "Environment=", one);
	}
	if (rc == 0)
		rc = sdunit_append(buf, len, &used,
		    "Restart=always\nRestartSec=1\n"
		    "NoNewPrivileges=yes\nCapabilityBoundingSet=CAP_SETUID "
		    "CAP_SETGID CAP_SYS_CHROOT\n"
		    "RuntimeDirectory=cordon-proxy-root\n"
		    "RuntimeDirectoryMode=0555\n"
		    "RuntimeDirectoryPreserve=yes\n"
		    "ProtectSystem=strict\nProtectHome=read-only\n"
		    "PrivateTmp=yes\nPrivateDevices=yes\n"
		    "ProtectKernelTunables=yes\nProtectKernelModules=yes\n"
		    "ProtectControlGroups=yes\n"
		    "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX\n"
		    "StandardInput=null\nStandardOutput=append:");
	if (rc == 0)
		rc = sdunit_append(buf, len, &used, s->log_path);
	if (rc == 0)
		rc = sdunit_append(buf, len, &used, "\nStandardError=append:");
	if (rc == 0)
		rc = sdunit_append(buf, len, &used, s->log_path);
	if (rc == 0)
		rc = sdunit_append(buf, len, &used, "\n");
	if (rc != 0)
		buf[0] = '\0';
	return rc;
}

static int
systemctl(const char *verb, const char *unit, char **out, char *err,
    size_t errlen)
{
	const char *argv[] = { "systemctl", verb, unit, NULL };

	if (unit == NULL)
		argv[2] = NULL;
	return netsetup_exec(argv, NULL, out, NULL, err, errlen);
}

int
sdunit_start(const struct netsetup_params *p, const struct nssuper_spec *s,
    struct cbuf *changes, char *err, size_t errlen)
{
	char name[64], path[128], text[8192], *old = NULL;
	bool same;
	int rc;

	sdunit_name(p, name, sizeof(name));
	snprintf(path, sizeof(path), "%s/%s", SDUNIT_RUNTIME_DIR, name);
	if ((rc = sdunit_text(s, p->bridge, text, sizeof(text))) < 0) {
		snprintf(err, errlen, "cannot write a systemd unit for the "
		    "proxy (a path has characters systemd would misread)");
		return rc;
	}
	same = util_read_file(path, sizeof(text), &old, NULL) == 0 &&
	    strcmp(old, text) == 0;
	free(old);
	if (same && sdunit_active(p))
		return 0;
	if (!same) {
		if ((rc = util_write_file_atomic(path, text, strlen(text),
		    0644)) < 0) {
			snprintf(err, errlen, "%s: %s", path, strerror(-rc));
			return rc;
		}
		if (systemctl("daemon-reload", NULL, NULL, err, errlen) != 0)
			return -EIO;
	}
	if (systemctl("restart", name, NULL, err, errlen) != 0)
		return -EIO;
	netsetup_note(changes, "%s systemd unit %s: cordon-proxy (network "
	    "child as %s) on %s:%d, log %s", same ? "restarted" :
	    "wrote and started", name,
	    s->user, p->gateway, p->port, s->log_path);
	return 0;
}

bool
sdunit_active(const struct netsetup_params *p)
{
	char name[64], err[128];

	sdunit_name(p, name, sizeof(name));
	return systemctl("is-active", name, NULL, err, sizeof(err)) == 0;
}

bool
sdunit_installed(const struct netsetup_params *p)
{
	char name[64], path[128];

	sdunit_name(p, name, sizeof(name));
	snprintf(path, sizeof(path), "%s/%s", SDUNIT_RUNTIME_DIR, name);
	return access(path, F_OK) == 0;
}

pid_t
sdunit_main_pid(const struct netsetup_params *p)
{
	const char *argv[] = { "systemctl", "show", "--property=MainPID",
	    "--value", NULL, NULL };
	char name[64], err[128], *out = NULL;
	int64_t v = 0;

	sdunit_name(p, name, sizeof(name));
	argv[4] = name;
	if (netsetup_exec(argv, NULL, &out, NULL, err, sizeof(err)) == 0) {
		out[strcspn(out, "\n")] = '\0';
		if (util_parse_i64(out, 0, 1 << 30, &v) < 0)
			v = 0;
	}
	free(out);
	return (pid_t)v;
}

int
sdunit_stop(const struct netsetup_params *p, struct cbuf *changes, char *err,
    size_t errlen)
{
	char name[64], path[128];

	if (!sdunit_installed(p))
		return 0;
	sdunit_name(p, name, sizeof(name));
	snprintf(path, sizeof(path), "%s/%s", SDUNIT_RUNTIME_DIR, name);
	if (systemctl("stop", name, NULL, err, errlen) != 0)
		return -EIO;
	if (unlink(path) < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	(void)systemctl("daemon-reload", NULL, NULL, err, errlen);
	netsetup_note(changes, "stopped and removed systemd unit %s", name);
	return 0;
}
