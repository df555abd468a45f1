/*
 * What `cordon net up` checks before it creates anything: the extra proxy
 * arguments (none may replace what up sets itself, nor turn the proxy into
 * something that does not serve), the proxy binary, the allowlist, and the
 * whole proxy configuration through `cordon-proxy --check` (the allowlist
 * with its FILE:LINE errors, the secrets, the user, the CA when it exists).
 */
#include "netsetup/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The proxy's options that `net up` sets itself, and those that make the
 * proxy do something else than serve (help, check, make-ca). */
static const char *const reserved[] = {
	"listen", "transparent", "dns-listen", "allowlist", "access-log",
	"access-log-max", "access-log-keep", "control", "state", "user",
	"ca-cert", "ca-key", "source-max-pending", "secrets",
	"help", "check", "make-ca", "ca-roots",
};

/* The reserved option that "--NAME[=...]" would select: getopt_long takes
 * any unambiguous prefix, so "--he" is --help. NULL when none. */
static const char *
reserved_match(const char *arg)
{
	const char *name = arg + 2, *eq = strchr(name, '=');
	size_t n = eq != NULL ? (size_t)(eq - name) : strlen(name);

	if (n == 0)
		return NULL;
	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
		if (strncmp(reserved[i], name, n) == 0)
			return reserved[i];
	return NULL;
}

int
netsetup_proxy_args_check(const char *const *args, size_t n, char *err,
    size_t errlen)
{
	const char *r;

	for (size_t i = 0; i < n; i++) {
		if (args[i] == NULL) {
			snprintf(err, errlen, "--proxy-arg: missing value");
			return -EINVAL;
		}
		if (strcmp(args[i], "--") == 0) {
			snprintf(err, errlen, "--proxy-arg '--': the proxy's "
			    "options would end there");
			return -EINVAL;
		}
		if (strncmp(args[i], "--", 2) != 0 ||
		    (r = reserved_match(args[i])) == NULL)
			continue;
		if (strcmp(r, "help") == 0 || strcmp(r, "check") == 0 ||
		    strcmp(r, "make-ca") == 0 || strcmp(r, "ca-roots") == 0)
			snprintf(err, errlen, "--proxy-arg '%s': not for a "
			    "running proxy (run cordon-proxy --%s yourself)",
			    args[i], r);
		else
			snprintf(err, errlen, "--proxy-arg '%s': net up sets "
			    "--%s itself (see the config: egress_* keys)",
			    args[i], r);
		return -EINVAL;
	}
	return 0;
}

/* The proxy's argv with --check, without --ca-cert/--ca-key when
 * without_ca (the CA is made later, on the first up). NULL on ENOMEM. */
static const char **
check_argv(const cJSON *want, bool without_ca)
{
	int n = cJSON_GetArraySize(want), i = 0;
	const char **v = calloc((size_t)n + 2, sizeof(*v));
	const cJSON *s;
	bool skip = false;

	if (v == NULL)
		return NULL;
	cJSON_ArrayForEach(s, want) {
		const char *a = cJSON_IsString(s) ? s->valuestring : "";
		if (skip) {
			skip = false;
			continue;
		}
		/* netsetup_proxy_argv puts them before o's extra
		 * arguments, which cannot name them (reserved). */
		if (without_ca && (strcmp(a, "--ca-cert") == 0 ||
		    strcmp(a, "--ca-key") == 0)) {
			skip = true;
			continue;
		}
		v[i++] = a;
	}
	v[i++] = "--check";
	v[i] = NULL;
	return v;
}

int
netsetup_up_check(const struct netsetup_params *p,
    const struct netsetup_up_opts *o, const cJSON *want, char *err,
    size_t errlen)
{
	char cert[340], key[340], why[700];
	const char **argv;
	bool have_ca;
	int rc;

	if ((rc = netsetup_proxy_args_check(o->proxy_args, o->nproxy_args,
	    err, errlen)) < 0)
		return rc;
	if (access(o->proxy_bin, X_OK) != 0) {
		rc = -errno;
		snprintf(err, errlen, "the proxy %s: %s", o->proxy_bin,
		    strerror(errno));
		return rc;
	}
	if (access(o->allowlist, R_OK) != 0) {
		rc = -errno;
		snprintf(err, errlen, "allowlist %s: %s", o->allowlist,
		    strerror(errno));
		return rc;
	}
	snprintf(cert, sizeof(cert), "%s/ca.crt", p->ca_dir);
	snprintf(key, sizeof(key), "%s/ca.key", p->ca_dir);
	have_ca = access(cert, F_OK) == 0 || access(key, F_OK) == 0;
	if ((argv = check_argv(want, !have_ca)) == NULL)
		return -ENOMEM;
	rc = netsetup_exec(argv, NULL, NULL, NULL, why, sizeof(why));
	free(argv);
	if (rc < 0) {
		snprintf(err, errlen, "%s --check refused the "
		    "configuration: %s", o->proxy_bin, why);
		return rc == -EIO ? -EINVAL : rc;
	}
	return 0;
}
