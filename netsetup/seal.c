/*
 * The per-container seal for `cordon run --net proxy`: checks that the
 * container is a running proxy-mode one (and learns its address on the
 * egress network from the same inspect: `docker inspect`, or the Engine
 * API's JSON read by the runner), then loads the seal rules (runargs.c)
 * into its network namespace from the host with nsenter, the IPv4 and
 * IPv6 tables at once.
 */
#include "netsetup/internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Sandbox keys are Docker's netns bind mounts; nothing else is entered. */
static bool
sandbox_key_ok(const char *k)
{
	return (strncmp(k, "/var/run/docker/netns/", 22) == 0 ||
	    strncmp(k, "/run/docker/netns/", 18) == 0) &&
	    strstr(k, "..") == NULL && strchr(k, ' ') == NULL;
}

/* The container's IPv4 address on the egress network, or "" (the
 * network's name is checked by netsetup_params_init's rules: no quote
 * can end the template string). */
static int
seal_format(const struct config *c, char *buf, size_t len)
{
	int n = snprintf(buf, len, "{{.State.Running}} "
	    "{{.HostConfig.NetworkMode}} {{.NetworkSettings.SandboxKey}} "
	    "{{with index .NetworkSettings.Networks \"%s\"}}{{.IPAddress}}"
	    "{{end}}", c->egress_network);

	if (n < 0 || (size_t)n >= len || strpbrk(c->egress_network,
	    "\"\\{} ") != NULL)
		return -EINVAL;
	return 0;
}

/* One family's restore in the container's netns. */
struct restore {
	const struct netsetup_endpoint *ep;
	const char *nsarg;
	int fam, rc;
	char err[300];
};

static void *
restore_main(void *arg)
{
	struct restore *r = arg;
	const char *argv[] = { "nsenter", r->nsarg, "--",
	    r->fam == 4 ? "iptables-restore" : "ip6tables-restore", "-w",
	    "--noflush", NULL };
	char rules[512];

	r->err[0] = '\0';
	if ((r->rc = netsetup_seal_rules(r->fam, r->ep, rules,
	    sizeof(rules))) < 0) {
		snprintf(r->err, sizeof(r->err), "cannot build the rules");
		return NULL;
	}
	r->rc = netsetup_exec(argv, rules, NULL, NULL, r->err,
	    sizeof(r->err));
	return NULL;
}

int
netsetup_sandbox_seal_view(const struct config *c,
    const struct netsetup_endpoint *ep, const char *container,
    const struct netsetup_sandbox_view *v, char *addr, char *err,
    size_t errlen)
{
	struct restore r4 = { .ep = ep, .fam = 4 }, r6 = { .ep = ep, .fam = 6 };
	char nsarg[280];
	struct in_addr in;
	pthread_t t6;
	bool t6_ok;

	if (addr != NULL)
		addr[0] = '\0';
	if (!v->running || strcmp(v->mode, c->egress_network) != 0 ||
	    !sandbox_key_ok(v->key) || (addr != NULL &&
	    (inet_pton(AF_INET, v->ip, &in) != 1 ||
	    strlen(v->ip) >= NETSETUP_ADDR_MAX))) {
		snprintf(err, errlen, "container %s is not a running "
		    "proxy-mode container (running %s, network %.80s, netns "
		    "%.80s, address %.20s)", container, v->running ? "true" :
		    "false", v->mode, v->key, v->ip);
		return -EINVAL;
	}
	snprintf(nsarg, sizeof(nsarg), "--net=%s", v->key);
	r4.nsarg = r6.nsarg = nsarg;
	/* Both tables at once: each restore is a process of its own. */
	t6_ok = pthread_create(&t6, NULL, restore_main, &r6) == 0;
	restore_main(&r4);
	if (t6_ok)
		pthread_join(t6, NULL);
	else
		restore_main(&r6);
	for (int i = 0; i < 2; i++) {
		const struct restore *r = i == 0 ? &r4 : &r6;
		if (r->rc != 0) {
			snprintf(err, errlen, "sealing %s (%s): %s", container,
			    r->fam == 4 ? "iptables-restore" :
			    "ip6tables-restore", r->err);
			return r->rc;
		}
	}
	if (addr != NULL)	/* checked: shorter than NETSETUP_ADDR_MAX */
		memcpy(addr, v->ip, strlen(v->ip) + 1);
	return 0;
}

int
netsetup_sandbox_seal(const struct config *c,
    const struct netsetup_endpoint *ep, const char *container, char *addr,
    char *err, size_t errlen)
{
	char fmt[256];
	const char *inspect[] = { c->docker, "inspect", "--format", fmt, "--",
	    container, NULL };
	struct netsetup_sandbox_view v = { .running = false };
	char *out = NULL, running[16];
	int rc, n;

	if (addr != NULL)
		addr[0] = '\0';
	if (seal_format(c, fmt, sizeof(fmt)) < 0) {
		snprintf(err, errlen, "egress_network '%.80s': bad name",
		    c->egress_network);
		return -EINVAL;
	}
	rc = netsetup_exec(inspect, NULL, &out, NULL, err, errlen);
	if (rc != 0) {
		free(out);
		return rc == -EIO ? -ENOENT : rc;
	}
	n = sscanf(out, "%15s %79s %255s %63s", running, v.mode, v.key, v.ip);
	v.running = n >= 3 && strcmp(running, "true") == 0;
	free(out);
	return netsetup_sandbox_seal_view(c, ep, container, &v, addr, err,
	    errlen);
}

/* A string field of obj into buf (absent or null: ""); -EINVAL when it
 * is another type or does not fit. */
static int
view_str(const cJSON *obj, const char *key, char *buf, size_t len)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(obj, key);

	buf[0] = '\0';
	if (x == NULL || cJSON_IsNull(x))
		return 0;
	if (!cJSON_IsString(x) || strlen(x->valuestring) >= len)
		return -EINVAL;
	memcpy(buf, x->valuestring, strlen(x->valuestring) + 1);
	return 0;
}

int
netsetup_sandbox_view_parse(const struct config *c, const char *json,
    size_t len, struct netsetup_sandbox_view *v)
{
	cJSON *root = cJSON_ParseWithLength(json, len);
	const cJSON *st, *hc, *ns, *nets, *mine, *run;
	int rc = -EINVAL;

	memset(v, 0, sizeof(*v));
	if (!cJSON_IsObject(root))
		goto done;
	st = cJSON_GetObjectItemCaseSensitive(root, "State");
	hc = cJSON_GetObjectItemCaseSensitive(root, "HostConfig");
	ns = cJSON_GetObjectItemCaseSensitive(root, "NetworkSettings");
	run = cJSON_GetObjectItemCaseSensitive(st, "Running");
	if (!cJSON_IsObject(st) || !cJSON_IsObject(hc) ||
	    !cJSON_IsObject(ns) || !cJSON_IsBool(run))
		goto done;
	v->running = cJSON_IsTrue(run);
	nets = cJSON_GetObjectItemCaseSensitive(ns, "Networks");
	mine = cJSON_IsObject(nets) ?
	    cJSON_GetObjectItemCaseSensitive(nets, c->egress_network) : NULL;
	if (view_str(hc, "NetworkMode", v->mode, sizeof(v->mode)) < 0 ||
	    view_str(ns, "SandboxKey", v->key, sizeof(v->key)) < 0 ||
	    (cJSON_IsObject(mine) && view_str(mine, "IPAddress", v->ip,
	    sizeof(v->ip)) < 0))
		goto done;
	rc = 0;
done:
	if (rc < 0)
		memset(v, 0, sizeof(*v));
	cJSON_Delete(root);
	return rc;
}
