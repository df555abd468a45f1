/*
 * The Docker network for proxy-mode jobs: its `docker network create`
 * argv, a pure check of `docker network inspect` output against what it
 * must be (bridge, not internal, fixed bridge name, subnet and gateway,
 * ICC off, IP masquerade off, no IPv6), and create/inspect/remove through
 * the docker CLI.
 *
 * Not --internal: a container on an internal network has no default
 * route, so a connection to any address but the subnet fails inside the
 * sandbox (ENETUNREACH) before a packet leaves, and nothing reaches the
 * host's nat redirect to the proxy. runsc's netstack reads the routes
 * once, when the sandbox starts, so one cannot be added later. Without
 * --internal Docker adds its own FORWARD rules for the bridge (an ACCEPT
 * of what leaves it, among them); Cordon's forward chain, jumped to first
 * from FORWARD and DOCKER-USER (fw.c, fwapply.c), drops everything from
 * and to the bridge before them, and with masquerade off nothing could be
 * answered anyway.
 */
#include "netsetup/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

static void
why_add(char *why, size_t len, int *n, const char *what)
{
	size_t used = strlen(why);

	if (used < len)
		snprintf(why + used, len - used, "%s%s", *n > 0 ? "; " : "",
		    what);
	(*n)++;
}

static const char *
opt_get(const cJSON *net, const char *key)
{
	const cJSON *opts = cJSON_GetObjectItemCaseSensitive(net, "Options");
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(opts, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

int
dnet_check(const cJSON *net, const struct netsetup_params *p, char *why,
    size_t len)
{
	const cJSON *ipam, *cfgs, *cfg, *v;
	const char *s;
	char buf[200];
	bool b;
	int n = 0;

	why[0] = '\0';
	if (json_get_string(net, "Driver", &s) < 0 || strcmp(s, "bridge") != 0)
		why_add(why, len, &n, "driver is not bridge");
	if (json_get_bool(net, "Internal", &b) < 0 || b)
		why_add(why, len, &n, "is --internal (made by an older 'cordon "
		    "net up'; its sandboxes have no default route, so nothing "
		    "can be redirected to the proxy)");
	if (json_get_bool(net, "EnableIPv6", &b) < 0 || b)
		why_add(why, len, &n, "IPv6 is enabled");
	s = opt_get(net, "com.docker.network.bridge.name");
	if (s == NULL || strcmp(s, p->bridge) != 0) {
		snprintf(buf, sizeof(buf), "bridge name is %s, not %s",
		    s != NULL ? s : "Docker's default", p->bridge);
		why_add(why, len, &n, buf);
	}
	s = opt_get(net, "com.docker.network.bridge.enable_icc");
	if (s == NULL || strcmp(s, "false") != 0)
		why_add(why, len, &n, "inter-container communication is on "
		    "(enable_icc is not false)");
	s = opt_get(net, "com.docker.network.bridge.enable_ip_masquerade");
	if (s == NULL || strcmp(s, "false") != 0)
		why_add(why, len, &n, "IP masquerade is on "
		    "(enable_ip_masquerade is not false)");
	ipam = cJSON_GetObjectItemCaseSensitive(net, "IPAM");
	cfgs = cJSON_GetObjectItemCaseSensitive(ipam, "Config");
	if (!cJSON_IsArray(cfgs) || cJSON_GetArraySize(cfgs) != 1) {
		why_add(why, len, &n, "IPAM does not have exactly one subnet");
		return n;
	}
	cfg = cJSON_GetArrayItem(cfgs, 0);
	if (json_get_string(cfg, "Subnet", &s) < 0 ||
	    strcmp(s, p->subnet) != 0) {
		snprintf(buf, sizeof(buf), "subnet is %s, not %s",
		    json_get_string(cfg, "Subnet", &s) == 0 ? s : "unset",
		    p->subnet);
		why_add(why, len, &n, buf);
	}
	v = cJSON_GetObjectItemCaseSensitive(cfg, "Gateway");
	if (cJSON_IsString(v) && strcmp(v->valuestring, p->gateway) != 0) {
		snprintf(buf, sizeof(buf), "gateway is %s, not %s",
		    v->valuestring, p->gateway);
		why_add(why, len, &n, buf);
	}
	return n;
}

bool
dnet_ours(const cJSON *net)
{
	const cJSON *labels = cJSON_GetObjectItemCaseSensitive(net, "Labels");
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(labels,
	    NETSETUP_LABEL);

	return cJSON_IsString(v) && strcmp(v->valuestring, "1") == 0;
}

int
dnet_containers(const cJSON *net)
{
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(net, "Containers");

	return cJSON_IsObject(c) ? cJSON_GetArraySize(c) : 0;
}

int
dnet_inspect(const struct netsetup_params *p, cJSON **net, char *err,
    size_t errlen)
{
	const char *argv[] = { p->docker, "network", "inspect", "--",
	    p->network, NULL };
	cJSON *arr = NULL, *item;
	char *out = NULL;
	int rc;

	*net = NULL;
	rc = netsetup_exec(argv, NULL, &out, NULL, err, errlen);
	if (rc == -EIO) {
		rc = strstr(err, "No such network") != NULL ||
		    strstr(err, "not found") != NULL ? -ENOENT : -EIO;
		goto done;
	}
	if (rc < 0)
		goto done;
	arr = cJSON_Parse(out);
	item = cJSON_IsArray(arr) ? cJSON_DetachItemFromArray(arr, 0) : NULL;
	if (!cJSON_IsObject(item)) {
		cJSON_Delete(item);
		snprintf(err, errlen, "docker network inspect: unexpected output");
		rc = -EBADMSG;
		goto done;
	}
	*net = item;
	rc = 0;
done:
	cJSON_Delete(arr);
	free(out);
	return rc;
}

int
dnet_create_argv(const struct netsetup_params *p, const char **argv,
    size_t max, char *bufs, size_t buflen)
{
	char *subnet = bufs, *gw, *name, *icc, *masq, *label;
	size_t n = 0, per = buflen / 6;

	if (max < DNET_ARGV_MAX || per < 80)
		return -E2BIG;
	gw = bufs + per;
	name = bufs + 2 * per;
	icc = bufs + 3 * per;
	masq = bufs + 4 * per;
	label = bufs + 5 * per;
	snprintf(subnet, per, "--subnet=%s", p->subnet);
	snprintf(gw, per, "--gateway=%s", p->gateway);
	snprintf(name, per, "com.docker.network.bridge.name=%s", p->bridge);
	snprintf(icc, per, "com.docker.network.bridge.enable_icc=false");
	snprintf(masq, per,
	    "com.docker.network.bridge.enable_ip_masquerade=false");
	snprintf(label, per, "%s=1", NETSETUP_LABEL);
	argv[n++] = p->docker;
	argv[n++] = "network";
	argv[n++] = "create";
	argv[n++] = "--driver=bridge";
	argv[n++] = "--ipv6=false";
	argv[n++] = subnet;
	argv[n++] = gw;
	argv[n++] = "--opt";
	argv[n++] = name;
	argv[n++] = "--opt";
	argv[n++] = icc;
	argv[n++] = "--opt";
	argv[n++] = masq;
	argv[n++] = "--label";
	argv[n++] = label;
	argv[n++] = p->network;
	argv[n] = NULL;
	return 0;
}

int
dnet_create(const struct netsetup_params *p, char *err, size_t errlen)
{
	const char *argv[DNET_ARGV_MAX];
	char bufs[6 * 128];
	int rc = dnet_create_argv(p, argv, DNET_ARGV_MAX, bufs, sizeof(bufs));

	if (rc == 0)
		rc = netsetup_exec(argv, NULL, NULL, NULL, err, errlen);
	if (rc == -EIO) {
		char why[256];
		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "docker network create %s: %s",
		    p->network, why);
		return -EIO;
	}
	return rc;
}

int
dnet_remove(const struct netsetup_params *p, char *err, size_t errlen)
{
	const char *argv[] = { p->docker, "network", "rm", p->network, NULL };
	int rc = netsetup_exec(argv, NULL, NULL, NULL, err, errlen);

	if (rc == -EIO) {
		char why[256];
		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "docker network rm %s: %s", p->network,
		    why);
		return -EIO;
	}
	return rc;
}
