/* Unit tests: the docker run argv (every hardening flag, values checked),
 * clamping of caller limits, request validation, and the parser of
 * `docker info`'s runtimes. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/config.h"
#include "runner/docker.h"
#include "netsetup/netsetup.h"
#include "runner/container.h"
#include "runner/docker_argv.h"
#include "runner/egress.h"
#include "runner/runner.h"

static const char *const IMG =
    "sha256:257265c0ad382eba36efe349eeed81f70178745ae3a30cb41b1d27f03de636f9";

static struct docker_spec
base_spec(void)
{
	return (struct docker_spec){ .name = "cordon-0123456789abcdef",
	    .image_id = IMG, .runtime = "cordon-offline", .network = "none",
	    .session = "s1", .owner_pid = 42, .deadline_epoch_s = 1700000000,
	    .memory = 256u << 20, .cpus = 1.0 };
}

static bool
has_arg(const struct dargv *a, const char *s)
{
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->v[i], s) == 0)
			return true;
	return false;
}

/* True when flag is immediately followed by value. */
static bool
has_pair(const struct dargv *a, const char *flag, const char *value)
{
	for (size_t i = 0; i + 1 < a->n; i++)
		if (strcmp(a->v[i], flag) == 0 && strcmp(a->v[i + 1], value) == 0)
			return true;
	return false;
}

static void
test_hardening_set(void **state)
{
	static const char *const flags[] = {
		"run", "-i", "--runtime=cordon-offline", "--network=none",
		"--cap-drop=ALL", "--security-opt=no-new-privileges",
		"--read-only", "--memory=268435456", "--memory-swap=268435456",
		"--cpus=1.000", "--pids-limit=1024", "--ipc=none",
		"--log-driver=none", "--pull=never", "--workdir=/tmp",
	};
	static const char *const pairs[][2] = {
		{ "--tmpfs", "/tmp:rw,noexec,nosuid,nodev,size=67108864" },
		{ "--user", "65534:65534" },
		{ "--ulimit", "nofile=256:256" },
		{ "--ulimit", "fsize=67108864:67108864" },
		{ "--ulimit", "nproc=64:64" },
		{ "--name", "cordon-0123456789abcdef" },
		{ "--label", "cordon=1" },
		{ "--label", "cordon.owner_pid=42" },
		{ "--label", "cordon.deadline=1700000000" },
		{ "--label", "cordon.session=s1" },
		{ "--env", "HOME=/tmp" },
		{ "--env", "LANG=C.UTF-8" },
	};
	struct docker_spec s = base_spec();
	struct config c;
	struct dargv a;
	size_t envs = 0;

	(void)state;
	config_defaults(&c);
	assert_int_equal(docker_run_argv(&c, &s, &a), 0);
	assert_string_equal(a.v[0], "docker");
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		if (!has_arg(&a, flags[i]))
			fail_msg("missing %s", flags[i]);
	}
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		if (!has_pair(&a, pairs[i][0], pairs[i][1]))
			fail_msg("missing %s %s", pairs[i][0], pairs[i][1]);
	}
	for (size_t i = 0; i < a.n; i++) {
		envs += strcmp(a.v[i], "--env") == 0;
		/* Never --rm (inspect before removal), never privileged. */
		assert_string_not_equal(a.v[i], "--rm");
		assert_null(strstr(a.v[i], "privileged"));
		assert_null(strstr(a.v[i], "cap-add"));
	}
	assert_int_equal(envs, 5);
	assert_false(has_arg(&a, "--mount"));
	/* Image by ID, then the command reading code from stdin. */
	assert_string_equal(a.v[a.n - 4], IMG);
	assert_string_equal(a.v[a.n - 3], "python3");
	assert_string_equal(a.v[a.n - 2], "-I");
	assert_string_equal(a.v[a.n - 1], "-");
	assert_null(a.v[a.n]);
	dargv_cleanup(&a);
}

static void
test_in_mount_and_wrapper(void **state)
{
	struct docker_spec s = base_spec();
	struct config c;
	struct dargv a;

	(void)state;
	config_defaults(&c);
	s.in_dir = "/var/lib/cordon/in/x.abc";
	s.wrapper = "print(1)";
	s.wrapper_cap = 1000;
	assert_int_equal(docker_run_argv(&c, &s, &a), 0);
	assert_true(has_pair(&a, "--mount",
	    "type=bind,src=/var/lib/cordon/in/x.abc,dst=/in,readonly"));
	assert_string_equal(a.v[a.n - 3], "-c");
	assert_string_equal(a.v[a.n - 2], "print(1)");
	assert_string_equal(a.v[a.n - 1], "1000");
	dargv_cleanup(&a);
}

/* Proxy mode: the prelude runs first, then execs exactly the command an
 * offline run has ("-", or the --out wrapper and its cap). */
static void
test_prelude_argv(void **state)
{
	struct docker_spec s = base_spec();
	struct config c;
	struct dargv a;

	(void)state;
	config_defaults(&c);
	s.prelude = "PRELUDE";
	assert_int_equal(docker_run_argv(&c, &s, &a), 0);
	assert_string_equal(a.v[a.n - 6], IMG);
	assert_string_equal(a.v[a.n - 5], "python3");
	assert_string_equal(a.v[a.n - 4], "-I");
	assert_string_equal(a.v[a.n - 3], "-c");
	assert_string_equal(a.v[a.n - 2], "PRELUDE");
	assert_string_equal(a.v[a.n - 1], "-");
	assert_null(a.v[a.n]);
	dargv_cleanup(&a);
	s.wrapper = "WRAPPER";
	s.wrapper_cap = 1000;
	assert_int_equal(docker_run_argv(&c, &s, &a), 0);
	assert_string_equal(a.v[a.n - 8], IMG);
	assert_string_equal(a.v[a.n - 7], "python3");
	assert_string_equal(a.v[a.n - 6], "-I");
	assert_string_equal(a.v[a.n - 5], "-c");
	assert_string_equal(a.v[a.n - 4], "PRELUDE");
	assert_string_equal(a.v[a.n - 3], "-c");
	assert_string_equal(a.v[a.n - 2], "WRAPPER");
	assert_string_equal(a.v[a.n - 1], "1000");
	dargv_cleanup(&a);
}

/* A warm pool's container: the cold argv with the holder as its command
 * (the hardening the same, flag for flag), and the job by `docker exec
 * -i NAME` of the cold run's command with no option of its own; a bad
 * name is refused there too. */
static void
test_holder_and_exec_argv(void **state)
{
	struct docker_spec s = base_spec();
	struct config c;
	struct dargv cold, warm, x;

	(void)state;
	config_defaults(&c);
	s.prelude = "PRELUDE";
	assert_int_equal(docker_run_argv(&c, &s, &cold), 0);
	s.holder = true;
	assert_int_equal(docker_run_argv(&c, &s, &warm), 0);
	/* Same up to the image; then python3 -I -c HOLDER. */
	assert_int_equal(warm.n, cold.n - 6 + 5);
	for (size_t i = 0; i < cold.n - 5; i++)
		assert_string_equal(warm.v[i], cold.v[i]);
	assert_string_equal(warm.v[warm.n - 5], IMG);
	assert_string_equal(warm.v[warm.n - 4], "python3");
	assert_string_equal(warm.v[warm.n - 3], "-I");
	assert_string_equal(warm.v[warm.n - 2], "-c");
	assert_string_equal(warm.v[warm.n - 1], DARGV_HOLDER);
	assert_int_equal(docker_exec_argv(&c, &s, &x), 0);
	assert_int_equal(x.n, 4 + 5);
	assert_string_equal(x.v[0], "docker");
	assert_string_equal(x.v[1], "exec");
	assert_string_equal(x.v[2], "-i");
	assert_string_equal(x.v[3], "cordon-0123456789abcdef");
	for (size_t i = 4; i < x.n; i++)	/* python3 -I -c PRELUDE - */
		assert_string_equal(x.v[i], cold.v[cold.n - x.n + i]);
	assert_null(x.v[x.n]);
	dargv_cleanup(&x);
	s.name = "-u0";
	assert_int_equal(docker_exec_argv(&c, &s, &x), -EINVAL);
	s.name = "a b";
	assert_int_equal(docker_exec_argv(&c, &s, &x), -EINVAL);
	dargv_cleanup(&cold);
	dargv_cleanup(&warm);
}

/* bash and node: their interpreter, absolute, reading the code from
 * stdin (never code on argv); through the prelude (which execs an argv
 * that starts with '/') and as the --out wrapper's child (the arguments
 * after its cap). The hardening set is the same as python's. */
static void
test_lang_argv(void **state)
{
	static const struct {
		unsigned lang;
		const char *cmd[3];
	} rows[] = {
		{ CONFIG_LANG_BASH, { "/bin/bash", "-s", NULL } },
		{ CONFIG_LANG_NODE, { "/usr/bin/node", "-", NULL } },
	};
	struct config c;
	struct dargv a, py;

	(void)state;
	config_defaults(&c);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct docker_spec s = base_spec();
		s.lang = rows[i].lang;
		/* Plain: IMAGE CMD ARG. */
		assert_int_equal(docker_run_argv(&c, &s, &a), 0);
		assert_string_equal(a.v[a.n - 3], IMG);
		assert_string_equal(a.v[a.n - 2], rows[i].cmd[0]);
		assert_string_equal(a.v[a.n - 1], rows[i].cmd[1]);
		assert_false(has_arg(&a, "python3"));
		/* Everything before the image is python's argv. */
		s.lang = 0;
		assert_int_equal(docker_run_argv(&c, &s, &py), 0);
		assert_int_equal(py.n, a.n + 1);
		for (size_t k = 0; k < a.n - 2; k++)
			assert_string_equal(a.v[k], py.v[k]);
		dargv_cleanup(&py);
		dargv_cleanup(&a);
		/* Prelude: python3 -I -c PRELUDE CMD ARG. */
		s.lang = rows[i].lang;
		s.prelude = "PRELUDE";
		assert_int_equal(docker_run_argv(&c, &s, &a), 0);
		assert_string_equal(a.v[a.n - 6], "python3");
		assert_string_equal(a.v[a.n - 5], "-I");
		assert_string_equal(a.v[a.n - 4], "-c");
		assert_string_equal(a.v[a.n - 3], "PRELUDE");
		assert_string_equal(a.v[a.n - 2], rows[i].cmd[0]);
		assert_string_equal(a.v[a.n - 1], rows[i].cmd[1]);
		dargv_cleanup(&a);
		/* Prelude and wrapper: ... -c WRAPPER CAP CMD ARG. */
		s.wrapper = "WRAPPER";
		s.wrapper_cap = 1000;
		assert_int_equal(docker_run_argv(&c, &s, &a), 0);
		assert_string_equal(a.v[a.n - 6], "PRELUDE");
		assert_string_equal(a.v[a.n - 5], "-c");
		assert_string_equal(a.v[a.n - 4], "WRAPPER");
		assert_string_equal(a.v[a.n - 3], "1000");
		assert_string_equal(a.v[a.n - 2], rows[i].cmd[0]);
		assert_string_equal(a.v[a.n - 1], rows[i].cmd[1]);
		dargv_cleanup(&a);
	}
	/* An unknown language bit is refused, not run as python. */
	{
		struct docker_spec s = base_spec();
		s.lang = 8;
		assert_int_equal(docker_run_argv(&c, &s, &a), -EINVAL);
		s.lang = CONFIG_LANG_PYTHON;
		assert_int_equal(docker_run_argv(&c, &s, &a), 0);
		assert_string_equal(a.v[a.n - 1], "-");
		dargv_cleanup(&a);
	}
}

/* container_spec: proxy-mode containers (cold and pooled alike) get the
 * prelude and no proxy URL anywhere on the argv; offline ones get the
 * argv they always had. */
static void
test_container_spec_modes(void **state)
{
	struct netsetup_endpoint ep = { .gateway = "10.213.0.1",
	    .port = 3128 };
	struct runner_limits lim = { .timeout_s = 30, .max_output = 1000,
	    .memory = 256u << 20, .cpus = 1.0 };
	struct container_start cs = { .name = "cordon-0123456789abcdef",
	    .image = IMG, .lim = &lim, .label_deadline_s = 1700000000 };
	struct netsetup_run_args na;
	struct docker_spec spec;
	struct config c;
	struct dargv a;

	(void)state;
	config_defaults(&c);
	container_spec(&c, &cs, &spec);
	assert_null(spec.prelude);
	assert_int_equal(docker_run_argv(&c, &spec, &a), 0);
	assert_string_equal(a.v[a.n - 3], "python3");
	assert_string_equal(a.v[a.n - 2], "-I");
	assert_string_equal(a.v[a.n - 1], "-");
	assert_false(has_arg(&a, "-c"));
	assert_false(has_pair(&a, "--env",
	    "SSL_CERT_FILE=/etc/cordon/ca-bundle.pem"));
	for (size_t i = 0; i < a.n; i++)
		assert_null(strstr(a.v[i], "resolv.conf"));
	dargv_cleanup(&a);

	assert_int_equal(netsetup_run_args(&c, &ep, &na), 0);
	cs.na = &na;
	container_spec(&c, &cs, &spec);
	assert_ptr_equal(spec.prelude, runner_egress_prelude);
	assert_int_equal(docker_run_argv(&c, &spec, &a), 0);
	assert_true(has_arg(&a, "--network=cordon-egress"));
	assert_true(has_arg(&a, "--runtime=cordon-egress"));
	assert_true(has_pair(&a, "-c", runner_egress_prelude));
	/* The CA bundle, read-only, and every client's variable. */
	assert_true(has_pair(&a, "--mount", "type=bind,src=/var/lib/cordon/"
	    "egress-ca/ca-bundle.pem,dst=/etc/cordon/ca-bundle.pem,readonly"));
	assert_true(has_pair(&a, "--env",
	    "SSL_CERT_FILE=/etc/cordon/ca-bundle.pem"));
	assert_true(has_pair(&a, "--env",
	    "REQUESTS_CA_BUNDLE=/etc/cordon/ca-bundle.pem"));
	assert_true(has_pair(&a, "--env", "PIP_CERT=/etc/cordon/ca-bundle.pem"));
	assert_true(has_pair(&a, "--env",
	    "CURL_CA_BUNDLE=/etc/cordon/ca-bundle.pem"));
	assert_true(has_pair(&a, "--env",
	    "NODE_EXTRA_CA_CERTS=/etc/cordon/ca-bundle.pem"));
	/* The sandbox's resolver: net up's resolv.conf over Docker's. */
	assert_true(has_pair(&a, "--mount", "type=bind,src=/var/lib/cordon/"
	    "net-cordon0/resolv.conf,dst=/etc/resolv.conf,readonly"));
	for (size_t i = 0; i < a.n; i++) {
		assert_null(strstr(a.v[i], "10.213.0.1:3128"));
		assert_null(strcasestr(a.v[i], "_PROXY=http"));
	}
	dargv_cleanup(&a);
	/* A warm pool's container (and a session's, built the same way)
	 * gets the same mount; `docker exec` then inherits it. */
	cs.holder = true;
	container_spec(&c, &cs, &spec);
	assert_int_equal(docker_run_argv(&c, &spec, &a), 0);
	assert_true(has_pair(&a, "--mount", "type=bind,src=/var/lib/cordon/"
	    "net-cordon0/resolv.conf,dst=/etc/resolv.conf,readonly"));
	assert_string_equal(a.v[a.n - 1], DARGV_HOLDER);
	dargv_cleanup(&a);
}

static void
test_config_values_flow(void **state)
{
	static const char cfg[] = "{\"docker\":\"/opt/docker\","
	    "\"runtime_offline\":\"rs\",\"limits\":{\"nproc\":32,"
	    "\"pids_limit\":2048,\"nofile\":100,\"tmpfs_size\":\"8m\"}}";
	struct docker_spec s = base_spec();
	struct config c;
	struct dargv a;
	char err[256];

	(void)state;
	assert_int_equal(config_parse(&c, cfg, strlen(cfg), "t", err,
	    sizeof(err)), 0);
	s.runtime = c.runtime_offline;
	assert_int_equal(docker_run_argv(&c, &s, &a), 0);
	assert_string_equal(a.v[0], "/opt/docker");
	assert_true(has_arg(&a, "--runtime=rs"));
	assert_true(has_arg(&a, "--pids-limit=2048"));
	assert_true(has_pair(&a, "--ulimit", "nproc=32:32"));
	assert_true(has_pair(&a, "--ulimit", "nofile=100:100"));
	assert_true(has_pair(&a, "--tmpfs",
	    "/tmp:rw,noexec,nosuid,nodev,size=8388608"));
	dargv_cleanup(&a);
}

static void
test_bad_spec_values(void **state)
{
	struct {
		const char *what;
		struct docker_spec s;
	} cases[12];
	struct config c;
	struct dargv a;
	size_t n = 0;

	(void)state;
	config_defaults(&c);
	for (size_t i = 0; i < 12; i++)
		cases[i].s = base_spec();
	cases[n].what = "comma in the resolv.conf";
	cases[n++].s.resolv_conf = "/x/resolv.conf,dst=/etc/shadow";
	cases[n].what = "relative resolv.conf";
	cases[n++].s.resolv_conf = "resolv.conf";
	cases[n].what = "comma in the CA bundle";
	cases[n++].s.ca_bundle = "/x/b.pem,dst=/etc/passwd";
	cases[n].what = "relative CA bundle";
	cases[n++].s.ca_bundle = "b.pem";
	cases[n].what = "comma in mount";
	cases[n++].s.in_dir = "/tmp/a,dst=/etc";
	cases[n].what = "relative mount";
	cases[n++].s.in_dir = "tmp/a";
	cases[n].what = "session with =";
	cases[n++].s.session = "a=b";
	cases[n].what = "session with newline";
	cases[n++].s.session = "a\nb";
	cases[n].what = "empty runtime";
	cases[n++].s.runtime = "";
	cases[n].what = "name with space";
	cases[n++].s.name = "cordon-x --privileged";
	cases[n].what = "no memory";
	cases[n++].s.memory = 0;
	cases[n].what = "no image";
	cases[n++].s.image_id = NULL;
	for (size_t i = 0; i < n; i++) {
		if (docker_run_argv(&c, &cases[i].s, &a) != -EINVAL)
			fail_msg("accepted: %s", cases[i].what);
		assert_int_equal(a.n, 0);
	}
}

static void
test_limits_clamped(void **state)
{
	struct {
		int64_t timeout; uint64_t out, mem; double cpus;
		int64_t w_timeout; uint64_t w_out, w_mem; double w_cpus;
	} t[] = {
		{ 0, 0, 0, 0, 10, 1u << 20, 256u << 20, 1.0 },
		{ 5, 1000, 64u << 20, 0.5, 5, 1000, 64u << 20, 0.5 },
		{ 100000, 1ull << 40, 1ull << 40, 64, 300, 16u << 20,
		    256u << 20, 1.0 },
		{ 1, 1, 1, 0.0001, 1, 1, 16u << 20, 0.01 },
	};
	struct config c;

	(void)state;
	config_defaults(&c);
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct runner_request q = { .timeout_s = t[i].timeout,
		    .max_output = t[i].out, .memory = t[i].mem,
		    .cpus = t[i].cpus };
		struct runner_limits l;
		runner_limits_resolve(&c, &q, &l);
		assert_int_equal(l.timeout_s, t[i].w_timeout);
		assert_int_equal(l.max_output, t[i].w_out);
		assert_int_equal(l.memory, t[i].w_mem);
		assert_true(l.cpus > t[i].w_cpus - 1e-9 &&
		    l.cpus < t[i].w_cpus + 1e-9);
	}
}

static void
test_request_check(void **state)
{
	struct runner_request ok = { .code = "x", .code_len = 1,
	    .session = "abc-1.2_3", .lang = "python" };
	struct runner_request q;
	char err[128];

	(void)state;
	assert_int_equal(runner_request_check(&ok, err, sizeof(err)), 0);
	/* Languages: python, bash, node; whether the profile has it is
	 * config_profile_pick's (test_config). */
	q = ok;
	q.lang = "bash";
	assert_int_equal(runner_request_check(&q, err, sizeof(err)), 0);
	q.lang = "node";
	assert_int_equal(runner_request_check(&q, err, sizeof(err)), 0);
	q.lang = NULL;
	assert_int_equal(runner_request_check(&q, err, sizeof(err)), 0);
	q.lang = "ruby";
	assert_int_equal(runner_request_check(&q, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "unsupported language 'ruby' (python, bash "
	    "or node)");
	q.lang = "Python";
	assert_int_equal(runner_request_check(&q, err, sizeof(err)), -EINVAL);
	q = ok;
	q.profile = "data";
	assert_int_equal(runner_request_check(&q, err, sizeof(err)), 0);
	q.profile = "../data";
	assert_int_equal(runner_request_check(&q, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "profile: 1-32 characters of [a-z0-9_-]");
	q.profile = "";
	assert_int_equal(runner_request_check(&q, err, sizeof(err)), -EINVAL);
	q = ok;
	q.session = "a b";
	assert_int_equal(runner_request_check(&q, err, sizeof(err)), -EINVAL);
	q.session = "";
	assert_int_equal(runner_request_check(&q, err, sizeof(err)), -EINVAL);
	q.session = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
	assert_int_equal(runner_request_check(&q, err, sizeof(err)), -EINVAL);
	q = ok;
	q.code_len = RUNNER_CODE_MAX + 1;
	assert_int_equal(runner_request_check(&q, err, sizeof(err)), -EINVAL);
	q = ok;
	q.nin = RUNNER_MAX_IN + 1;
	assert_int_equal(runner_request_check(&q, err, sizeof(err)), -EINVAL);
	/* A policy only with --net proxy, and only a policy name. */
	q = ok;
	q.policy = "pypi";
	assert_int_equal(runner_request_check(&q, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "an egress policy needs net mode proxy "
	    "(offline runs have no egress)");
	q.net = RUNNER_NET_PROXY;
	assert_int_equal(runner_request_check(&q, err, sizeof(err)), 0);
	q.policy = "../pypi";
	assert_int_equal(runner_request_check(&q, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "egress policy: 1-64 characters of "
	    "[A-Za-z0-9_-]");
	q.policy = "";
	assert_int_equal(runner_request_check(&q, err, sizeof(err)), -EINVAL);
	q.policy = NULL;
	assert_int_equal(runner_request_check(&q, err, sizeof(err)), 0);
}

/* docker_runtime_stack: which network stack runsc runs with given
 * runtimeArgs (the doctor's and the probe's "network_stack"). */
static void
test_runtime_stack(void **state)
{
	static const struct {
		const char *args, *stack;
	} t[] = {
		{ "", "netstack" },
		{ "--network=sandbox", "netstack" },
		{ "--network=host", "host" },
		{ "--network=none", "none" },
		{ "--debug --network=host --strace", "host" },
		{ "--network=none --debug", "none" },
		/* A longer or shorter word is not host. */
		{ "--network=hostile", "netstack" },
		{ "--network=hos", "netstack" },
		{ "x--network=host", "netstack" },
		/* The last --network wins, as in runsc's flag parsing. */
		{ "--network=host --network=sandbox", "netstack" },
		{ "--network=sandbox --network=host", "host" },
		{ "  --network=host  ", "host" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		const char *got = docker_runtime_stack(t[i].args);

		if (strcmp(got, t[i].stack) != 0)
			fail_msg("'%s': %s, want %s", t[i].args, got,
			    t[i].stack);
	}
}

/* docker_runtime_parse over `docker info --format '{{json .Runtimes}}'`
 * texts, real and hostile. */
static const struct runtime_case {
	const char *json;
	const char *name;
	int rc;
	const char *path;
	const char *args;
} runtime_cases[] = {
	/* What dockerd prints with Cordon's runtimes registered. */
	{ "{\"cordon-offline\":{\"path\":\"/usr/local/bin/runsc\","
	  "\"runtimeArgs\":[\"--network=none\",\"--overlay2=root:memory\"]},"
	  "\"io.containerd.runc.v2\":{\"path\":\"runc\"},"
	  "\"runc\":{\"path\":\"runc\"}}", "cordon-offline", 0,
	  "/usr/local/bin/runsc", "--network=none --overlay2=root:memory" },
	{ "{\"cordon-egress\":{\"path\":\"/usr/bin/runsc\","
	  "\"runtimeArgs\":[\"--network=host\"]}}", "cordon-egress", 0,
	  "/usr/bin/runsc", "--network=host" },
	{ "{\"runc\":{\"path\":\"runc\"}}", "runc", 0, "runc", "" },
	/* Newer dockerd: no path for the default shim runtime. */
	{ "{\"runc\":{\"runtimeType\":\"io.containerd.runc.v2\"}}", "runc",
	  0, "", "" },
	{ "{\"runc\":{\"path\":\"runc\"}}", "cordon-offline", -ENOENT,
	  "", "" },
	{ "{}", "runc", -ENOENT, "", "" },
	/* Keys are case-sensitive; the entry must be an object. */
	{ "{\"RUNC\":{\"path\":\"runc\"}}", "runc", -ENOENT, "", "" },
	{ "{\"runc\":\"runc\"}", "runc", -ENOENT, "", "" },
	{ "{\"runc\":null}", "runc", -ENOENT, "", "" },
	/* A path that is not a string counts as none; so do arguments
	 * that are not strings. */
	{ "{\"r\":{\"path\":7,\"runtimeArgs\":[1,\"--a\",null,\"--b\"]}}",
	  "r", 0, "", "--a --b" },
	{ "{\"r\":{\"path\":\"runsc\",\"runtimeArgs\":\"--a\"}}", "r", 0,
	  "runsc", "" },
	/* Not a JSON object at all. */
	{ "", "runc", -EBADMSG, "", "" },
	{ "null", "runc", -EBADMSG, "", "" },
	{ "[\"runc\"]", "runc", -EBADMSG, "", "" },
	{ "\"runc\"", "runc", -EBADMSG, "", "" },
	{ "{\"runc\":{\"path\":\"runc\"}", "runc", -EBADMSG, "", "" },
	{ "Cannot connect to the Docker daemon", "runc", -EBADMSG, "", "" },
};

static void
test_runtime_parse(void **state)
{
	struct docker_runtime rt;
	char big[PATH_MAX + 64], args[2048];
	size_t n;

	(void)state;
	for (size_t i = 0; i < sizeof(runtime_cases) / sizeof(runtime_cases[0]);
	    i++) {
		const struct runtime_case *t = &runtime_cases[i];
		int rc = docker_runtime_parse(t->json, strlen(t->json),
		    t->name, &rt);
		if (rc != t->rc || strcmp(rt.path, t->path) != 0 ||
		    strcmp(rt.args, t->args) != 0)
			fail_msg("case %zu (%s): rc %d path '%s' args '%s'", i,
			    t->json, rc, rt.path, rt.args);
	}
	/* Only len bytes are read. */
	assert_int_equal(docker_runtime_parse("{\"r\":{}}trailing", 9, "r",
	    &rt), 0);
	/* A path longer than PATH_MAX is refused, not cut (a cut could
	 * drop "runsc" from it). */
	n = (size_t)snprintf(big, sizeof(big), "{\"r\":{\"path\":\"/");
	memset(big + n, 'a', PATH_MAX);
	snprintf(big + n + PATH_MAX, sizeof(big) - n - PATH_MAX, "runsc\"}}");
	assert_int_equal(docker_runtime_parse(big, strlen(big), "r", &rt),
	    -E2BIG);
	assert_string_equal(rt.path, "");
	/* Many arguments are cut at the field's size, never overflow it. */
	n = (size_t)snprintf(args, sizeof(args), "{\"r\":{\"path\":\"runsc\","
	    "\"runtimeArgs\":[");
	for (int i = 0; i < 60; i++)
		n += (size_t)snprintf(args + n, sizeof(args) - n,
		    "%s\"--flag-%02d\"", i ? "," : "", i);
	snprintf(args + n, sizeof(args) - n, "]}}");
	assert_int_equal(docker_runtime_parse(args, strlen(args), "r", &rt), 0);
	assert_int_equal(strlen(rt.args), sizeof(rt.args) - 1);
	assert_int_equal(strncmp(rt.args, "--flag-00 --flag-01", 19), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hardening_set),
		cmocka_unit_test(test_in_mount_and_wrapper),
		cmocka_unit_test(test_prelude_argv),
		cmocka_unit_test(test_holder_and_exec_argv),
		cmocka_unit_test(test_lang_argv),
		cmocka_unit_test(test_container_spec_modes),
		cmocka_unit_test(test_config_values_flow),
		cmocka_unit_test(test_bad_spec_values),
		cmocka_unit_test(test_limits_clamped),
		cmocka_unit_test(test_request_check),
		cmocka_unit_test(test_runtime_parse),
		cmocka_unit_test(test_runtime_stack),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
