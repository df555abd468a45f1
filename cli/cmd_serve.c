/*
 * `cordon serve`: loads the config and runs the HTTP/JSON service (which
 * first removes the containers a previous instance left) until SIGTERM,
 * with this same executable as the scheduled probe, and a warm pool of
 * --pool (or serve.pool) containers per net mode. It says what it does on
 * stderr, at info unless --log-level says otherwise.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/log.h"
#include "common/util.h"
#include "cli/cmd.h"
#include "runner/runner.h"
#include "serve/server.h"

static int
usage(FILE *f, int code)
{
	fprintf(f, "usage: cordon serve [--socket PATH] [--listen ADDR:PORT] "
	    "[--pool N] [--config FILE]\n"
	    "    [--log-level error|warn|info|debug] [--verbose]\n"
	    "  --socket PATH      unix socket (default: serve.socket, "
	    "/run/cordon/serve.sock)\n"
	    "  --listen ADDR:PORT also listen on TCP; bearer tokens required\n"
	    "  --pool N           warm containers per net mode, 0-64 "
	    "(default: serve.pool, 0: none)\n"
	    "  --log-level LEVEL  what to say on stderr (default: info)\n"
	    "  --verbose          same as --log-level debug\n");
	return code;
}

int
cmd_serve(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "listen", required_argument, NULL, 'l' },
		{ "pool", required_argument, NULL, 'p' },
		{ "config", required_argument, NULL, 'c' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "log-level", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct serve_server_opts o = { .socket = NULL };
	const char *cfgpath = NULL;
	struct serve_server *s = NULL;
	struct config c;
	char err[512] = "", exe[PATH_MAX];
	ssize_t n;
	int64_t pool = -1;
	enum log_level level = LOG_LEVEL_INFO;
	int opt, rc;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			o.socket = optarg;
			break;
		case 'l':
			o.listen = optarg;
			break;
		case 'p':
			if (util_parse_i64(optarg, 0, 64, &pool) < 0) {
				fprintf(stderr, "cordon serve: bad --pool '%s' "
				    "(a whole number, at most 64)\n", optarg);
				return 2;
			}
			break;
		case 'c':
			cfgpath = optarg;
			break;
		case 'v':
			level = LOG_LEVEL_DEBUG;
			break;
		case 'L':
			if (log_level_parse(optarg, &level) < 0) {
				fprintf(stderr, "cordon serve: --log-level %s: "
				    "want error|warn|info|debug\n", optarg);
				return 2;
			}
			break;
		case 'h':
			return usage(stdout, 0);
		default:
			return usage(stderr, 2);
		}
	}
	if (optind != argc)
		return usage(stderr, 2);
	log_set_level(level);
	if (config_load(&c, cfgpath, err, sizeof(err)) < 0) {
		fprintf(stderr, "cordon serve: %s\n", err);
		return 1;
	}
	/* What would refuse every run is said once, now: a Docker socket
	 * this user may not use, an audit log it cannot write. */
	if (runner_daemon_access(&c, err, sizeof(err)) < 0 ||
	    runner_audit_check(&c, err, sizeof(err)) < 0) {
		fprintf(stderr, "cordon serve: %s\n", err);
		return 1;
	}
	o.config = &c;
	o.pool = pool;
	if ((n = readlink("/proc/self/exe", exe, sizeof(exe) - 1)) > 0) {
		exe[n] = '\0';
		o.probe_exe = exe;
	} else {
		log_warn("no scheduled probe: readlink /proc/self/exe");
	}
	if ((rc = serve_server_new(&o, &s, err, sizeof(err))) < 0) {
		fprintf(stderr, "cordon serve: %s%s\n", err, (rc == -EACCES ||
		    rc == -EPERM) && geteuid() != 0 ? ": cordon serve needs "
		    "root, or a user in the `docker` group that owns its "
		    "socket's directory and state_dir, as "
		    "examples/systemd/cordon-serve.service sets up" : "");
		return 1;
	}
	rc = serve_server_run(s);
	serve_server_free(s);
	if (rc < 0) {
		fprintf(stderr, "cordon serve: the event loop failed: %s\n",
		    strerror(-rc));
		return 1;
	}
	return 0;
}
