/*
 * `cordon net up|down` as a library. Orders matter here: the firewall
 * (filter, then the nat redirects) goes up before the network, the
 * sandbox's resolv.conf and the proxy, and comes down only when no
 * container is attached, so there is never a moment where a sandbox sees
 * the host.
 */
#include "netsetup/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"

/* ---- up ---- */

static int
up_network(const struct netsetup_params *p, struct cbuf *changes,
    bool *ours, char *err, size_t errlen)
{
	char why[512];
	cJSON *net = NULL;
	int rc, n;

	rc = dnet_inspect(p, &net, err, errlen);
	if (rc == 0 && (n = dnet_check(net, p, why, sizeof(why))) > 0) {
		if (!dnet_ours(net)) {
			snprintf(err, errlen, "network %s exists but is wrong: "
			    "%s. Not changing it: Cordon did not create it. "
			    "Remove it (docker network rm %s) or fix the "
			    "configuration.", p->network, why, p->network);
			cJSON_Delete(net);
			return -EEXIST;
		}
		if ((n = dnet_containers(net)) > 0) {
			/* Ours, e.g. an older up's --internal one: recreating
			 * it would take it from under running sandboxes. */
			snprintf(err, errlen, "network %s is wrong: %s. Not "
			    "recreating it while %d container(s) are attached: "
			    "stop them (e.g. cordon kill-all), then run 'cordon "
			    "net up' again, which recreates it.", p->network,
			    why, n);
			cJSON_Delete(net);
			return -EBUSY;
		}
		if ((rc = dnet_remove(p, err, errlen)) < 0) {
			cJSON_Delete(net);
			return rc;
		}
		netsetup_note(changes, "removed network %s (was wrong: %s)",
		    p->network, why);
		rc = -ENOENT;
	}
	cJSON_Delete(net);
	net = NULL;
	if (rc == -ENOENT) {
		if ((rc = dnet_create(p, err, errlen)) < 0)
			return rc;
		netsetup_note(changes, "created network %s (bridge %s, "
		    "subnet %s, default route to the gateway %s, icc off, IP "
		    "masquerade off, no IPv6)", p->network, p->bridge,
		    p->subnet, p->gateway);
		/* Verify what Docker made of it. */
		if ((rc = dnet_inspect(p, &net, err, errlen)) < 0)
			return rc;
		if (dnet_check(net, p, why, sizeof(why)) > 0) {
			snprintf(err, errlen, "network %s was created wrong: %s",
			    p->network, why);
			cJSON_Delete(net);
			return -EIO;
		}
	} else if (rc < 0) {
		return rc;
	}
	*ours = dnet_ours(net);
	cJSON_Delete(net);
	return 0;
}

/* Containers on the bridge reach each other at layer 2; only with bridge
 * netfilter on do those frames pass through the FORWARD chain. */
static int
up_bridge_nf(struct cbuf *changes, char *err, size_t errlen)
{
	const char *modprobe[] = { "modprobe", "br_netfilter", NULL };
	static const char *const paths[] = {
		"/proc/sys/net/bridge/bridge-nf-call-iptables",
		"/proc/sys/net/bridge/bridge-nf-call-ip6tables",
	};
	char e2[128];

	if (fwa_bridge_nf(FW_INET) < 0) {
		(void)netsetup_exec(modprobe, NULL, NULL, NULL, e2, sizeof(e2));
		if (fwa_bridge_nf(FW_INET) >= 0)
			netsetup_note(changes, "loaded br_netfilter");
	}
	for (int i = 0; i < 2; i++) {
		enum fw_family fam = i == 0 ? FW_INET : FW_INET6;
		if (fwa_bridge_nf(fam) == 1)
			continue;
		if (util_write_file_atomic(paths[i], "1\n", 2, 0644) < 0) {
			FILE *f = fopen(paths[i], "we");
			if (f == NULL || fputs("1\n", f) < 0) {
				if (f != NULL)
					fclose(f);
				snprintf(err, errlen, "cannot turn on %s: bridge "
				    "traffic would bypass the firewall", paths[i]);
				return -EIO;
			}
			fclose(f);
		}
		if (fwa_bridge_nf(fam) != 1) {
			snprintf(err, errlen, "%s is still not 1", paths[i]);
			return -EIO;
		}
		netsetup_note(changes, "set %s to 1", paths[i]);
	}
	return 0;
}

/* The sandbox's resolv.conf (netsetup_resolv_conf_text), written when
 * it is missing or differs. */
static int
up_resolv_conf(const struct netsetup_params *p, struct cbuf *changes,
    char *err, size_t errlen)
{
	char path[400], want[128], *have = NULL;
	struct stat st;
	size_t n = 0;
	int rc;

	netsetup_state_path(p, NETSETUP_RESOLV_CONF, path, sizeof(path));
	if ((rc = netsetup_resolv_conf_text(p->gateway, want,
	    sizeof(want))) < 0) {
		snprintf(err, errlen, "cannot make the sandbox's resolv.conf");
		return rc;
	}
	if (util_read_file(path, 4096, &have, &n) == 0 && n == strlen(want) &&
	    memcmp(have, want, n) == 0 && stat(path, &st) == 0 &&
	    (st.st_mode & 07777) == 0644) {
		free(have);
		return 0;
	}
	free(have);
	/* 0644 whatever the umask: the sandbox's user reads it. */
	if ((rc = util_write_file_atomic(path, want, strlen(want), 0644)) < 0 ||
	    (chmod(path, 0644) < 0 && (rc = -errno) < 0)) {
		snprintf(err, errlen, "cannot write %s: %s", path,
		    strerror(-rc));
		return rc;
	}
	netsetup_note(changes, "wrote %s (nameserver %s: the proxy's resolver "
	    "on %s:%d)", path, p->gateway, p->gateway, p->dns_port);
	return 0;
}

static char *
changes_take(struct cbuf *changes)
{
	char *s = cbuf_steal(changes, NULL);

	cbuf_free(changes);
	return s != NULL ? s : strdup("");
}

/* Whether nothing of the set-up exists (netsetup_status_set_up): only
 * then may a failed up take away everything it finds. false when the
 * status cannot be taken. */
static bool
up_fresh(const struct netsetup_params *p)
{
	char e2[256];
	cJSON *st = NULL;
	bool fresh;

	if (netsetup_status(p, &st, e2, sizeof(e2)) < 0)
		return false;
	fresh = !netsetup_status_set_up(st);
	cJSON_Delete(st);
	return fresh;
}

static int down_remove(const struct netsetup_params *p, const cJSON *net,
    int have, bool had_state, struct cbuf *changes, char *err,
    size_t errlen);

/* After a failure of a first up: removes what it created, as down does,
 * and says so in changes and err. */
static void
up_rollback(const struct netsetup_params *p, struct cbuf *changes,
    char *err, size_t errlen)
{
	char e2[512], why[700];
	cJSON *net = NULL;
	int have, rc;

	have = dnet_inspect(p, &net, e2, sizeof(e2));
	if (have < 0 && have != -ENOENT) {
		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "%s; could not undo it (%s): run 'cordon "
		    "net down'", why, e2);
		return;
	}
	netsetup_note(changes, "undoing it all:");
	rc = down_remove(p, net, have, true, changes, e2, sizeof(e2));
	cJSON_Delete(net);
	snprintf(why, sizeof(why), "%s", err);
	if (rc < 0)
		snprintf(err, errlen, "%s; could not undo it all (%s): run "
		    "'cordon net down'", why, e2);
	else
		snprintf(err, errlen, "%s; undone: nothing of it is left", why);
}

int
netsetup_up(const struct netsetup_params *p,
    const struct netsetup_up_opts *o, char **changes_out, char *err,
    size_t errlen)
{
	struct cbuf *changes = cbuf_new(64 * 1024);
	cJSON *st = NULL, *want = NULL;
	const cJSON *recorded;
	bool ours = false, had_state, fresh = false, created = false;
	char why[700];
	int rc, lock = -1;

	*changes_out = NULL;
	err[0] = '\0';
	if (changes == NULL)
		return -ENOMEM;
	if (o->allowlist == NULL || o->allowlist[0] != '/' ||
	    o->proxy_bin == NULL || o->proxy_bin[0] != '/') {
		snprintf(err, errlen, "internal: allowlist and proxy paths must "
		    "be absolute");
		rc = -EINVAL;
		goto out;
	}
	had_state = access(p->state_dir, F_OK) == 0;
	if ((lock = netsetup_state_lock(p, err, errlen)) < 0) {
		rc = lock;
		goto out;
	}
	/* Everything is checked before anything is created. */
	if ((rc = netsetup_proxy_argv(p, o, &want)) < 0) {
		snprintf(err, errlen, "cannot build the proxy's argv: %s",
		    strerror(-rc));
		goto out;
	}
	if ((rc = netsetup_up_check(p, o, want, err, errlen)) < 0) {
		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "%s; nothing changed", why);
		goto out;
	}
	fresh = up_fresh(p);
	created = true;
	/* Firewall first: the bridge never exists without it. */
	if ((rc = fwa_apply(p, FW_INET, changes, err, errlen)) < 0 ||
	    (rc = fwa_apply(p, FW_INET6, changes, err, errlen)) < 0)
		goto out;
	if ((rc = up_network(p, changes, &ours, err, errlen)) < 0)
		goto out;
	if ((rc = up_bridge_nf(changes, err, errlen)) < 0 ||
	    (rc = up_resolv_conf(p, changes, err, errlen)) < 0)
		goto out;
	/* Docker may have (re)made DOCKER-USER while creating the network:
	 * a second pass adds our jumps there. */
	if ((rc = fwa_apply(p, FW_INET, changes, err, errlen)) < 0 ||
	    (rc = fwa_apply(p, FW_INET6, changes, err, errlen)) < 0)
		goto out;
	st = netsetup_state_read(p);
	recorded = cJSON_GetObjectItemCaseSensitive(st, "proxy_argv");
	if ((rc = netsetup_proxy_up(p, o, recorded, want, changes, err,
	    errlen)) < 0)
		goto out;
	if (st != NULL) {
		const cJSON *created_rec = cJSON_GetObjectItemCaseSensitive(st,
		    "network_created");
		ours = ours || cJSON_IsTrue(created_rec);
	}
	rc = netsetup_state_write(p, o, want, ours);
	if (rc < 0)
		snprintf(err, errlen, "cannot write %s/net.json", p->state_dir);
out:
	/* A first up that failed leaves nothing; a repair of an existing
	 * set-up leaves what it found (net status names what is wrong). */
	if (rc < 0 && created && fresh)
		up_rollback(p, changes, err, errlen);
	else if (rc < 0 && lock >= 0 && !created && !had_state)
		(void)util_rm_rf(p->state_dir);
	if (lock >= 0)
		close(lock);
	cJSON_Delete(st);
	cJSON_Delete(want);
	*changes_out = changes_take(changes);
	return rc;
}

/* ---- down ---- */

/* Stops the proxy, removes the network when Cordon made it, the chains
 * and the state dir. net: the network's inspect object when have is 0. */
static int
down_remove(const struct netsetup_params *p, const cJSON *net, int have,
    bool had_state, struct cbuf *changes, char *err, size_t errlen)
{
	char pidp[400], cpidp[400];
	pid_t sup = 0;
	int rc;

	netsetup_state_path(p, "supervisor.pid", pidp, sizeof(pidp));
	netsetup_state_path(p, "proxy.pid", cpidp, sizeof(cpidp));
	(void)nssuper_alive(pidp, &sup);
	if (nssuper_stop(pidp, cpidp, 10000) == 0)
		netsetup_note(changes, "stopped proxy supervisor %ld and the "
		    "proxy", (long)sup);
	if ((rc = sdunit_stop(p, changes, err, errlen)) < 0)
		return rc;
	if (have == 0 && dnet_ours(net)) {
		if ((rc = dnet_remove(p, err, errlen)) < 0)
			return rc;
		netsetup_note(changes, "removed network %s", p->network);
	} else if (have == 0) {
		netsetup_note(changes, "left network %s alone (Cordon did not "
		    "create it)", p->network);
	}
	if ((rc = fwa_remove(p, FW_INET, changes, err, errlen)) < 0 ||
	    (rc = fwa_remove(p, FW_INET6, changes, err, errlen)) < 0)
		return rc;
	/* The state dir (record, pid files, proxy log, lock) was up's too;
	 * the lock the caller holds goes with it. */
	if (util_rm_rf(p->state_dir) == 0 && had_state)
		netsetup_note(changes, "removed %s", p->state_dir);
	return 0;
}

int
netsetup_down(const struct netsetup_params *p, char **changes_out,
    char *err, size_t errlen)
{
	struct cbuf *changes = cbuf_new(64 * 1024);
	cJSON *net = NULL;
	int rc, have, n, lock;
	bool had_state;

	*changes_out = NULL;
	err[0] = '\0';
	if (changes == NULL)
		return -ENOMEM;
	had_state = access(p->state_dir, F_OK) == 0;
	if ((lock = netsetup_state_lock(p, err, errlen)) < 0) {
		cbuf_free(changes);
		return lock;
	}
	have = dnet_inspect(p, &net, err, errlen);
	if (have < 0 && have != -ENOENT) {
		rc = have;
		goto out;
	}
	/* Taking the firewall away under a running sandbox would expose the
	 * host to it: refuse while anything is attached. */
	if (have == 0 && (n = dnet_containers(net)) > 0) {
		snprintf(err, errlen, "%d container(s) are still attached to %s: "
		    "stop them first (e.g. cordon kill-all); nothing removed",
		    n, p->network);
		rc = -EBUSY;
		goto out;
	}
	rc = down_remove(p, net, have, had_state, changes, err, errlen);
out:
	close(lock);
	cJSON_Delete(net);
	*changes_out = changes_take(changes);
	return rc;
}
