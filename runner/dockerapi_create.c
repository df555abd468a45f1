/*
 * The Engine API's POST /containers/create body for one job (apirun.h):
 * the same docker_spec as the `docker run` argv (docker_argv.c), each flag
 * mapped 1:1 to the field the docker CLI itself sends for it, proxy mode's
 * too (its network, runtime, --dns, --env, the CA bundle and resolv.conf
 * mounts). Pure; table-tested, and e2e-compared (`docker inspect`) with a
 * CLI-created twin, offline and in proxy mode.
 */
#include "runner/apirun.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

/* --cpus=%.3f as the CLI parses it (exactly, as a decimal): nanoCPUs. */
static long long
nano_cpus(double cpus)
{
	char buf[64], *dot;
	long long whole, frac;

	snprintf(buf, sizeof(buf), "%.3f", cpus);
	whole = strtoll(buf, &dot, 10);
	frac = *dot == '.' ? strtoll(dot + 1, NULL, 10) : 0;
	return whole * 1000000000LL + frac * 1000000LL;
}

static void
add_ulimit(cJSON *arr, const char *name, long long v)
{
	cJSON *u = cJSON_CreateObject();

	cJSON_AddStringToObject(u, "Name", name);
	cJSON_AddNumberToObject(u, "Hard", (double)v);
	cJSON_AddNumberToObject(u, "Soft", (double)v);
	cJSON_AddItemToArray(arr, u);
}

static void
add_bind(cJSON *arr, const char *src, const char *dst)
{
	cJSON *m = cJSON_CreateObject();

	cJSON_AddStringToObject(m, "Type", "bind");
	cJSON_AddStringToObject(m, "Source", src);
	cJSON_AddStringToObject(m, "Target", dst);
	cJSON_AddBoolToObject(m, "ReadOnly", 1);
	cJSON_AddItemToArray(arr, m);
}

/* Proxy mode's options (netsetup_run_args: --dns=ADDR, --env K=V), into
 * HostConfig.Dns and Env, as the CLI sends them; any other is -ENOTSUP
 * (an option this mapping does not know must not be dropped silently). */
static int
add_extra(cJSON *env, cJSON *dns, const struct docker_spec *s)
{
	for (size_t i = 0; i < s->nextra; i++) {
		const char *o = s->extra[i];
		if (strncmp(o, "--dns=", 6) == 0 && o[6] != '\0') {
			cJSON_AddItemToArray(dns, cJSON_CreateString(o + 6));
		} else if (strcmp(o, "--env") == 0 && i + 1 < s->nextra &&
		    strchr(s->extra[i + 1], '=') != NULL) {
			cJSON_AddItemToArray(env,
			    cJSON_CreateString(s->extra[++i]));
		} else {
			return -ENOTSUP;
		}
	}
	return 0;
}

static void
add_labels(cJSON *cfg, const struct docker_spec *s)
{
	cJSON *l = cJSON_AddObjectToObject(cfg, "Labels");
	char v[32];

	cJSON_AddStringToObject(l, "cordon", "1");
	snprintf(v, sizeof(v), "%ld", s->owner_pid);
	cJSON_AddStringToObject(l, "cordon.owner_pid", v);
	snprintf(v, sizeof(v), "%lld", (long long)s->deadline_epoch_s);
	cJSON_AddStringToObject(l, "cordon.deadline", v);
	cJSON_AddStringToObject(l, "cordon.session", s->session);
}

/* The fixed hardening set and the clamped limits (add_hardening in
 * docker_argv.c, flag by flag). */
static void
add_host(cJSON *root, const struct config *c, const struct docker_spec *s)
{
	const struct config_limits *l = &c->limits;
	cJSON *h = cJSON_AddObjectToObject(root, "HostConfig");
	cJSON *a, *t, *lc;
	char buf[128];

	/* What the CLI sends when no flag sets them (Dns: proxy mode's
	 * --dns, added by add_extra). */
	cJSON_AddArrayToObject(h, "Devices");
	cJSON_AddArrayToObject(h, "Dns");
	cJSON_AddArrayToObject(h, "DnsOptions");
	cJSON_AddArrayToObject(h, "DnsSearch");
	t = cJSON_AddObjectToObject(h, "RestartPolicy");
	cJSON_AddStringToObject(t, "Name", "no");
	cJSON_AddNumberToObject(t, "MaximumRetryCount", 0);
	cJSON_AddStringToObject(h, "Runtime", s->runtime);
	cJSON_AddStringToObject(h, "NetworkMode", s->network);
	a = cJSON_AddArrayToObject(h, "CapDrop");
	cJSON_AddItemToArray(a, cJSON_CreateString("ALL"));
	a = cJSON_AddArrayToObject(h, "SecurityOpt");
	cJSON_AddItemToArray(a, cJSON_CreateString("no-new-privileges"));
	cJSON_AddBoolToObject(h, "ReadonlyRootfs", 1);
	t = cJSON_AddObjectToObject(h, "Tmpfs");
	snprintf(buf, sizeof(buf), "rw,noexec,nosuid,nodev,size=%llu",
	    (unsigned long long)l->tmpfs_bytes);
	cJSON_AddStringToObject(t, "/tmp", buf);
	cJSON_AddNumberToObject(h, "Memory", (double)s->memory);
	cJSON_AddNumberToObject(h, "MemorySwap", (double)s->memory);
	cJSON_AddNumberToObject(h, "NanoCpus", (double)nano_cpus(s->cpus));
	a = cJSON_AddArrayToObject(h, "Ulimits");
	/* In name order, as the CLI sends them (its options are a map). */
	add_ulimit(a, "fsize", (long long)l->fsize_bytes);
	add_ulimit(a, "nofile", (long long)l->nofile);
	add_ulimit(a, "nproc", (long long)l->nproc);
	cJSON_AddNumberToObject(h, "PidsLimit", (double)l->pids_limit);
	cJSON_AddStringToObject(h, "IpcMode", "none");
	lc = cJSON_AddObjectToObject(h, "LogConfig");
	cJSON_AddStringToObject(lc, "Type", "none");
	cJSON_AddObjectToObject(lc, "Config");
	/* In the argv's order: /in, the CA bundle, resolv.conf. */
	if (s->in_dir != NULL || s->ca_bundle != NULL ||
	    s->resolv_conf != NULL) {
		a = cJSON_AddArrayToObject(h, "Mounts");
		if (s->in_dir != NULL)
			add_bind(a, s->in_dir, "/in");
		if (s->ca_bundle != NULL)
			add_bind(a, s->ca_bundle, DOCKER_CA_BUNDLE);
		if (s->resolv_conf != NULL)
			add_bind(a, s->resolv_conf, "/etc/resolv.conf");
	}
}

int
dockerapi_create_body(const struct config *c, const struct docker_spec *s,
    char **out)
{
	cJSON *root = NULL, *a, *env;
	struct dargv cmd;
	int rc;

	*out = NULL;
	if ((rc = docker_spec_check(c, s)) < 0)
		return rc;
	if ((rc = docker_cmd_argv(s, &cmd)) < 0)
		return rc;
	rc = -ENOMEM;
	if ((root = cJSON_CreateObject()) == NULL)
		goto done;
	cJSON_AddStringToObject(root, "Image", s->image_id);
	cJSON_AddStringToObject(root, "User", c->user);
	cJSON_AddStringToObject(root, "WorkingDir", "/tmp");
	/* -i without a TTY: stdin attached, closed when the attach's stdin
	 * ends (StdinOnce), as `docker run -i` creates it. */
	cJSON_AddBoolToObject(root, "AttachStdin", 1);
	cJSON_AddBoolToObject(root, "AttachStdout", 1);
	cJSON_AddBoolToObject(root, "AttachStderr", 1);
	cJSON_AddBoolToObject(root, "OpenStdin", 1);
	cJSON_AddBoolToObject(root, "StdinOnce", 1);
	cJSON_AddBoolToObject(root, "Tty", 0);
	/* The env in the argv's order: the job's, the CA bundle's (proxy
	 * mode), then the extra options'. */
	env = cJSON_AddArrayToObject(root, "Env");
	for (size_t i = 0; docker_job_env[i] != NULL; i++)
		cJSON_AddItemToArray(env,
		    cJSON_CreateString(docker_job_env[i]));
	for (size_t i = 0; s->ca_bundle != NULL &&
	    docker_ca_env[i] != NULL; i++) {
		char kv[128];
		snprintf(kv, sizeof(kv), "%s=%s", docker_ca_env[i],
		    DOCKER_CA_BUNDLE);
		cJSON_AddItemToArray(env, cJSON_CreateString(kv));
	}
	a = cJSON_AddArrayToObject(root, "Cmd");
	for (size_t i = 0; i < cmd.n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(cmd.v[i]));
	add_labels(root, s);
	add_host(root, c, s);
	if ((rc = add_extra(env, cJSON_GetObjectItem(cJSON_GetObjectItem(root,
	    "HostConfig"), "Dns"), s)) < 0)
		goto done;
	rc = -ENOMEM;
	if ((*out = cJSON_PrintUnformatted(root)) != NULL)
		rc = 0;
done:
	cJSON_Delete(root);
	dargv_cleanup(&cmd);
	return rc;
}
