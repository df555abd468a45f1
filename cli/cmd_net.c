/*
 * `cordon net up|down|status|reload` (and the helpers `seal CONTAINER` and
 * `run-args`, which expose exactly what the runner uses for --net proxy).
 * Finds cordon-proxy beside the cordon executable and the shipped default
 * allowlist, then calls the netsetup library.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "allowlist/allowlist.h"
#include "common/config.h"
#include "common/json.h"
#include "netsetup/netsetup.h"
#include "runner/egress.h"
#include "runner/runner.h"
#include "cli/cmd.h"

/* After the SIGHUP, before asking for the policies: the proxy handles the
 * signal in its event loop, which may serve the control request first. */
/* A reload parses every policy and waits for the network child. */
#define RELOAD_TIMEOUT_MS 60000

#define MAX_PROXY_ARGS 32

/* `net status`'s exit code when nothing of the egress set-up exists (1 is
 * drift or an error, 2 a usage error). */
#define NET_STATUS_NOT_SET_UP 3

static void
net_usage(FILE *f)
{
	fprintf(f,
	    "usage: cordon net up [--allowlist FILE|DIR] [--subnet CIDR] "
	    "[--proxy-arg ARG]...\n"
	    "       cordon net down\n"
	    "       cordon net status           (JSON on stdout; exit 0: up "
	    "and right,\n"
	    "                                    1: drift, each problem on "
	    "stderr, or the\n"
	    "                                    status could not be taken, "
	    "3: not set up)\n"
	    "       cordon net reload [--replay] (check the allowlist, then "
	    "make the proxy load\n"
	    "                                    it; --replay first prints "
	    "what it changes for the\n"
	    "                                    requests in the access log)\n"
	    "       cordon net seal CONTAINER   (seal a running proxy-mode "
	    "container)\n"
	    "       cordon net run-args         (docker run options for "
	    "--net proxy, with the\n"
	    "                                    resolv.conf mount; not the "
	    "CA bundle's)\n");
}

/* The proxy: config proxy_bin, else beside this executable (build tree:
 * <dir>/proxy/cordon-proxy; installed: <dir>/cordon-proxy). */
static int
find_proxy(const struct config *c, char *out, size_t len)
{
	char self[PATH_MAX], cand[PATH_MAX + 32];
	ssize_t n;
	char *slash;

	if (c->proxy_bin[0] != '\0') {
		if (realpath(c->proxy_bin, out) == NULL || strlen(out) >= len)
			return -ENOENT;
		return 0;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		return -errno;
	self[n] = '\0';
	if ((slash = strrchr(self, '/')) == NULL)
		return -ENOENT;
	*slash = '\0';
	snprintf(cand, sizeof(cand), "%s/proxy/cordon-proxy", self);
	if (access(cand, X_OK) != 0)
		snprintf(cand, sizeof(cand), "%s/cordon-proxy", self);
	if (access(cand, X_OK) != 0 || strlen(cand) >= len)
		return -ENOENT;
	snprintf(out, len, "%s", cand);
	return 0;
}

/* The shipped default: the source tree's copy, else the installed one. */
static int
default_allowlist(char *out, size_t len)
{
	static const char *const cands[] = {
		CORDON_SOURCE_ROOT "/examples/allowlists/default.list",
		"/usr/local/share/cordon/allowlists/default.list",
		"/usr/share/cordon/allowlists/default.list",
	};

	for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++)
		if (access(cands[i], R_OK) == 0 && strlen(cands[i]) < len) {
			snprintf(out, len, "%s", cands[i]);
			return 0;
		}
	return -ENOENT;
}

static void
print_changes(const char *changes, const char *none)
{
	if (changes == NULL || changes[0] == '\0')
		printf("%s\n", none);
	else
		fputs(changes, stdout);
}

static int
net_up(const struct config *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "allowlist", required_argument, NULL, 'a' },
		{ "subnet", required_argument, NULL, 's' },
		{ "proxy-arg", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *allowlist = NULL, *subnet = NULL;
	const char *pargs[MAX_PROXY_ARGS];
	char al[PATH_MAX], proxy[PATH_MAX], err[1024], *changes = NULL;
	struct netsetup_params p;
	struct netsetup_up_opts o;
	size_t npargs = 0;
	int opt, rc;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'a': allowlist = optarg; break;
		case 's': subnet = optarg; break;
		case 'p':
			if (npargs == MAX_PROXY_ARGS) {
				fprintf(stderr, "cordon net up: too many "
				    "--proxy-arg\n");
				return 2;
			}
			pargs[npargs++] = optarg;
			break;
		case 'h': net_usage(stdout); return 0;
		default:
			fprintf(stderr, "cordon net up: bad option '%s'\n",
			    argv[optind - 1]);
			net_usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "cordon net up: unexpected '%s'\n", argv[optind]);
		return 2;
	}
	if (netsetup_proxy_args_check(pargs, npargs, err, sizeof(err)) < 0) {
		fprintf(stderr, "cordon net up: %s; nothing changed\n", err);
		return 2;
	}
	if (allowlist != NULL ? realpath(allowlist, al) == NULL :
	    default_allowlist(al, sizeof(al)) < 0) {
		fprintf(stderr, "cordon net up: allowlist %s: %s\n",
		    allowlist != NULL ? allowlist : "(shipped default)",
		    strerror(errno != 0 ? errno : ENOENT));
		return 1;
	}
	if (find_proxy(c, proxy, sizeof(proxy)) < 0) {
		fprintf(stderr, "cordon net up: cannot find cordon-proxy beside "
		    "the cordon executable; set \"proxy_bin\" in the config\n");
		return 1;
	}
	if (netsetup_params_init(&p, c, subnet, err, sizeof(err)) < 0) {
		fprintf(stderr, "cordon net up: %s\n", err);
		return 1;
	}
	o = (struct netsetup_up_opts){ al, proxy, pargs, npargs,
	    c->egress_secrets[0] != '\0' ? c->egress_secrets : NULL,
	    (int)c->egress_source_max_pending,
	    c->egress_access_log[0] != '\0' ? c->egress_access_log : NULL,
	    c->egress_access_log_max, (int)c->egress_access_log_keep };
	rc = netsetup_up(&p, &o, &changes, err, sizeof(err));
	print_changes(changes, rc == 0 ? "already up: nothing changed" : "");
	free(changes);
	if (rc < 0) {
		fprintf(stderr, "cordon net up: %s\n", err);
		return 1;
	}
	return 0;
}

static int
net_down(const struct config *c)
{
	struct netsetup_params p;
	char err[1024], *changes = NULL;
	int rc;

	if (netsetup_params_load(&p, c, err, sizeof(err)) < 0) {
		fprintf(stderr, "cordon net down: %s\n", err);
		return 1;
	}
	rc = netsetup_down(&p, &changes, err, sizeof(err));
	print_changes(changes, rc == 0 ? "already down: nothing to remove" :
	    "");
	free(changes);
	if (rc < 0) {
		fprintf(stderr, "cordon net down: %s\n", err);
		return 1;
	}
	return 0;
}

static int
net_status(const struct config *c)
{
	struct netsetup_params p;
	const cJSON *d, *drift;
	cJSON *st = NULL;
	char err[1024], *text;
	bool ok;

	if (netsetup_params_load(&p, c, err, sizeof(err)) < 0 ||
	    netsetup_status(&p, &st, err, sizeof(err)) < 0) {
		fprintf(stderr, "cordon net status: %s\n", err);
		return 1;
	}
	if ((text = json_print_line(st)) != NULL)
		fputs(text, stdout);
	free(text);
	ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(st, "ok"));
	/* Nothing of it there: one line, not a drift line per part. */
	if (!ok && !netsetup_status_set_up(st)) {
		fprintf(stderr, "cordon net status: not set up (no network %s, "
		    "firewall chains, resolv.conf or proxy); run 'cordon net "
		    "up'\n", p.network);
		cJSON_Delete(st);
		return NET_STATUS_NOT_SET_UP;
	}
	drift = cJSON_GetObjectItemCaseSensitive(st, "drift");
	cJSON_ArrayForEach(d, drift)
		fprintf(stderr, "cordon net status: drift: %s\n", d->valuestring);
	cJSON_Delete(st);
	return ok ? 0 : 1;
}

/* Asks the running proxy to reload over its control socket: its parent
 * rereads the allowlist and the secrets store as root, and answers once
 * its network child has the new generation, or with the loader's
 * FILE:LINE diagnostics while the old generation stays in force. */
static int
net_reload(const struct config *c, bool replay)
{
	static const char *const counts[] = { "entries", "inspected", "raw",
	    "secrets" };
	struct netsetup_params p;
	char path[PATH_MAX], ctl[NETSETUP_CONTROL_MAX], err[4096];
	const cJSON *v, *n;
	cJSON *a = NULL;
	int rc;

	if (netsetup_params_load(&p, c, err, sizeof(err)) < 0) {
		fprintf(stderr, "cordon net reload: %s\n", err);
		return 1;
	}
	if (netsetup_proxy_allowlist(&p, path, sizeof(path)) < 0) {
		fprintf(stderr, "cordon net reload: no proxy started by 'cordon "
		    "net up' is recorded in %s; run 'cordon net up'\n",
		    p.state_dir);
		return 1;
	}
	if (netsetup_control_path(&p, ctl, sizeof(ctl)) < 0) {
		fprintf(stderr, "cordon net reload: the control socket's path "
		    "under %s is too long\n", p.state_dir);
		return 1;
	}
	/* --replay: what the edit changes for the traffic in the access
	 * log, said before the proxy takes it (a broken list stops here). */
	if (replay) {
		char alog[PATH_MAX];
		if (netsetup_proxy_access_log(&p, alog, sizeof(alog)) < 0) {
			fprintf(stderr, "cordon net reload: --replay: the "
			    "running proxy has no access log file (it was "
			    "started by an older 'cordon net up': run it "
			    "again)\n");
			return 1;
		}
		if (cmd_allowlist_replay_log(path, alog,
		    (unsigned)c->egress_access_log_keep) < 0) {
			fprintf(stderr, "cordon net reload: %s: not "
			    "reloaded\n", path);
			return 1;
		}
	}
	rc = runner_egress_call(ctl, "{\"op\":\"reload\"}\n",
	    RELOAD_TIMEOUT_MS, &a, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "cordon net reload: %s: not reloaded, the proxy "
		    "keeps the allowlist it has: %s\n", path, err);
		return 1;
	}
	v = cJSON_GetObjectItemCaseSensitive(a, "generation");
	printf("reloaded %s: generation %.0f; policies:", path,
	    cJSON_IsNumber(v) ? v->valuedouble : 0);
	cJSON_ArrayForEach(n, cJSON_GetObjectItemCaseSensitive(a, "policies"))
		if (cJSON_IsString(n))
			printf(" %s", n->valuestring);
	printf(" (");
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		v = cJSON_GetObjectItemCaseSensitive(a, counts[i]);
		printf("%s%.0f %s", i > 0 ? ", " : "",
		    cJSON_IsNumber(v) ? v->valuedouble : 0, counts[i]);
	}
	printf(")\n");
	cJSON_Delete(a);
	return 0;
}

static int
net_seal(const struct config *c, int argc, char **argv)
{
	struct netsetup_endpoint ep;
	char err[1024], addr[NETSETUP_ADDR_MAX];

	if (argc != 2) {
		net_usage(stderr);
		return 2;
	}
	if (netsetup_ready(c, &ep, err, sizeof(err)) < 0 ||
	    netsetup_sandbox_seal(c, &ep, argv[1], addr, err,
	    sizeof(err)) < 0) {
		fprintf(stderr, "cordon net seal: %s\n", err);
		return 1;
	}
	printf("sealed %s (address %s)\n", argv[1], addr);
	return 0;
}

static int
net_run_args(const struct config *c)
{
	struct netsetup_endpoint ep;
	struct netsetup_run_args ra;
	char err[1024];

	if (netsetup_ready(c, &ep, err, sizeof(err)) < 0) {
		fprintf(stderr, "cordon net run-args: %s\n", err);
		return 1;
	}
	if (netsetup_run_args(c, &ep, &ra) < 0) {
		fprintf(stderr, "cordon net run-args: cannot build them\n");
		return 1;
	}
	printf("--network=%s\n--runtime=%s\n", ra.network, ra.runtime);
	for (size_t i = 0; i < ra.argc; i++)
		printf("%s\n", ra.argv[i]);
	/* The sandbox's resolver, mounted as runner/docker_argv.c does (the
	 * CA bundle is left out: only inspected tunnels need it). */
	printf("--mount\ntype=bind,src=%s,dst=/etc/resolv.conf,readonly\n",
	    ra.resolv_conf);
	return 0;
}

/* Whether --help or -h is one of net's own arguments: not the value of
 * an option that takes one (`net up --proxy-arg --help` is a proxy
 * argument, which net up refuses). */
static bool
net_help_asked(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--proxy-arg") == 0 ||
		    strcmp(argv[i], "--allowlist") == 0 ||
		    strcmp(argv[i], "--subnet") == 0)
			i++;
		else if (strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "--help") == 0)
			return true;
	}
	return false;
}

/* net up and down change the host's firewall and Docker networks: as
 * another user they would fail half-way on a path or a tool's error. */
static bool
net_needs_root(int argc, char **argv)
{
	if (strcmp(argv[1], "up") != 0 && strcmp(argv[1], "down") != 0)
		return false;
	return !net_help_asked(argc, argv) && geteuid() != 0;
}

int
cmd_net(int argc, char **argv)
{
	struct config c;
	char err[1024];

	if (argc < 2 || net_help_asked(argc, argv)) {
		net_usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (argc == 3 && strcmp(argv[1], "up") != 0 &&
	    (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)) {
		net_usage(stdout);
		return 0;
	}
	if (config_load(&c, NULL, err, sizeof(err)) < 0) {
		fprintf(stderr, "cordon net: %s\n", err);
		return 1;
	}
	if (net_needs_root(argc, argv)) {
		fprintf(stderr, "cordon net %s: needs root (it changes the "
		    "host's iptables chains, the egress Docker network and the "
		    "proxy in %s): run it as root\n", argv[1], c.state_dir);
		return 1;
	}
	if (strcmp(argv[1], "up") == 0)
		return net_up(&c, argc - 1, argv + 1);
	if (argc == 3 && strcmp(argv[1], "reload") == 0 &&
	    strcmp(argv[2], "--replay") == 0)
		return net_reload(&c, true);
	if (argc != 2 && strcmp(argv[1], "seal") != 0) {
		net_usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "down") == 0)
		return net_down(&c);
	if (strcmp(argv[1], "status") == 0)
		return net_status(&c);
	if (strcmp(argv[1], "reload") == 0)
		return net_reload(&c, false);
	if (strcmp(argv[1], "seal") == 0)
		return net_seal(&c, argc - 1, argv + 1);
	if (strcmp(argv[1], "run-args") == 0)
		return net_run_args(&c);
	fprintf(stderr, "cordon net: unknown command '%s'\n", argv[1]);
	net_usage(stderr);
	return 2;
}
