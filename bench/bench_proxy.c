/*
 * bench_proxy: cordon-proxy side by side with no proxy, tinyproxy and squid
 * on loopback, against the same upstream (cordon-proxy in standalone mode
 * and in run mode, a credential on every CONNECT): CONNECT tunnel throughput,
 * handshakes per second, the proxy's own CPU time per handshake (utime +
 * stime from /proc), and RSS per idle tunnel. Not a test: run it by hand.
 *
 *   bench_proxy [--cordon PATH] [--mib N] [--handshakes N] [--idle N]
 *               [--threads N] [--runs N]
 *               [--skip tinyproxy,squid,runmode,sni,transparent]
 *
 * Throughput, handshakes/s and CPU per handshake are medians of --runs
 * (default 3) runs. Run mode also reports the control socket's
 * register+unregister round trip (median of 20).
 *
 * The SNI check: two more cordon-proxy rows whose clients send a real
 * ClientHello (tests/proxy/data, its server_name rewritten) as their first
 * bytes, one with the check (the default) and one with
 * --insecure-no-sni-check (today's tunnels), their runs interleaved. A
 * handshake there is CONNECT, 200, the ClientHello and one byte back from
 * the upstream, so the check is inside what is timed. CONNECT goes to the
 * upstream's IP literal, so the check also matches the name against the
 * policy (its longer path).
 *
 * The transparent path (issue 31): two rows on one cordon-proxy with both
 * listeners, their runs interleaved: "CONNECT by name" (CONNECT
 * SNI_NAME:port, then the ClientHello) and "transparent" (the ClientHello
 * sent straight to 203.0.113.7:port, which a nat REDIRECT gives the
 * --transparent listener: the name comes from the SNI alone). Both resolve
 * SNI_NAME through a stub DNS server of the bench's (127.0.0.2, cached by
 * the proxy for its TTL). Needs root: the whole bench then runs in a
 * network namespace of its own (loopback only), where the redirect is
 * set; without root (or with --skip transparent) the rows are skipped.
 *
 * This file: the options, the runs interleaved and the report; the load is
 * in bench_proxy_load.c, starting the targets in bench_proxy_start.c.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_proxy.h"
#include "common/util.h"
#include "tests/proxy/hello_util.h"

struct bench_opts bench_opt = {
	.bytes = 1024LL * 1024 * 1024,
	.handshakes = 2000,
	.idle = 1000,
	.threads = 4,
	.runs = 3,
};

static void
report_transparent(const struct target tg[NTARGETS])
{
	const struct target *c = &tg[7], *tr = &tg[8];

	if (c->skip || tr->skip || c->mbps <= 0 || c->hps <= 0)
		return;
	printf("\nTransparent path, each run (the same daemon; a handshake is "
	    "the ClientHello, the name's check, a connect and one byte back; "
	    "CONNECT also has its request and 200):\n");
	for (int i = 0; i < bench_opt.runs; i++)
		printf("  run %d: CONNECT %6.0f MB/s %6.0f hs/s %5.1f us/hs | "
		    "transparent %6.0f MB/s %6.0f hs/s %5.1f us/hs | tr/CONNECT "
		    "%.3f %.3f\n", i + 1, c->run_mbps[i], c->run_hps[i],
		    c->run_cpu[i], tr->run_mbps[i], tr->run_hps[i],
		    tr->run_cpu[i], tr->run_mbps[i] / c->run_mbps[i],
		    tr->run_hps[i] / c->run_hps[i]);
	printf("transparent vs CONNECT (medians): throughput %.3fx (target "
	    ">= 0.9: %s), handshakes/s %.3fx (>= 0.9: %s), CPU/handshake "
	    "%.3fx\n", tr->mbps / c->mbps, tr->mbps / c->mbps >= 0.9 ? "met" :
	    "NOT met", tr->hps / c->hps, tr->hps / c->hps >= 0.9 ? "met" :
	    "NOT met", c->cpu_us > 0 ? tr->cpu_us / c->cpu_us : 0);
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

/* One run of t (throughput, then handshakes), kept as run i. */
static void
run_once(struct target *t, int i)
{
	fprintf(stderr, "bench_proxy: %s, run %d/%d...\n", t->name, i + 1,
	    bench_opt.runs);
	bench_throughput(t);
	bench_handshakes(t);
	t->run_mbps[i] = t->mbps;
	t->run_hps[i] = t->hps;
	t->run_cpu[i] = t->cpu_us;
	t->run_user[i] = t->user_us;
	t->run_sys[i] = t->sys_us;
}

static double
median_of(const double *runs)
{
	double v[16];

	memcpy(v, runs, sizeof(v));
	return median(v, bench_opt.runs);
}

/* The targets take turns, run by run (the order reversed every other
 * run), so that a noisy moment of the shared machine falls on all of them
 * alike and each ratio compares runs made side by side; then each figure
 * is the median of its target's runs (user and kernel CPU each on its
 * own: they need not add up to the median of the total). */
static void
run_interleaved(struct target *const *ts, int n)
{
	for (int i = 0; i < bench_opt.runs; i++)
		for (int k = 0; k < n; k++)
			run_once(ts[i % 2 == 0 ? k : n - 1 - k], i);
	for (int k = 0; k < n; k++) {
		struct target *t = ts[k];

		t->mbps = median_of(t->run_mbps);
		t->hps = median_of(t->run_hps);
		t->cpu_us = median_of(t->run_cpu);
		t->user_us = median_of(t->run_user);
		t->sys_us = median_of(t->run_sys);
	}
}

/* Two targets side by side (no idle tunnels: they add nothing to what
 * the pair compares). */
static void
run_pair(struct target *a, struct target *b)
{
	struct target *pair[] = { a, b };

	run_interleaved(pair, 2);
	snprintf(a->note, sizeof(a->note), "idle not measured");
	snprintf(b->note, sizeof(b->note), "idle not measured");
}

/* A ClientHello naming SNI_NAME: the Python ssl capture with its
 * server_name rewritten (tests/proxy/hello_util.c). */
static size_t
sni_hello(uint8_t *out, size_t cap)
{
	static const char *const name[] = { SNI_NAME };

	if (getenv("CORDON_SOURCE_ROOT") == NULL)
		setenv("CORDON_SOURCE_ROOT", CORDON_SOURCE_ROOT, 1);
	return hello_with_names("hello-python-pypi.bin", name, 1, out, cap);
}

/* --cordon PATH --mib N --handshakes N --idle N --threads N --skip LIST
 * --runs N; unknown options are ignored. */
static void
parse_args(int argc, char **argv, const char **cordon, const char **skip)
{
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--cordon") == 0)
			*cordon = argv[i + 1];
		else if (strcmp(argv[i], "--mib") == 0)
			bench_opt.bytes = atoll(argv[i + 1]) * 1024 * 1024;
		else if (strcmp(argv[i], "--handshakes") == 0)
			bench_opt.handshakes = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--idle") == 0)
			bench_opt.idle = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--threads") == 0)
			bench_opt.threads = atoi(argv[i + 1]) > 64 ? 64 :
			    atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--skip") == 0)
			*skip = argv[i + 1];
		else if (strcmp(argv[i], "--runs") == 0)
			bench_opt.runs = atoi(argv[i + 1]) < 1 ? 1 :
			    atoi(argv[i + 1]) > 15 ? 15 : atoi(argv[i + 1]);
	}
}

static void
report_sni(const struct target tg[NTARGETS])
{
	const struct target *on = &tg[5], *off = &tg[6];

	if (on->skip || off->skip || off->mbps <= 0 || off->hps <= 0)
		return;
	printf("\nSNI check, each run (ClientHello of %zu bytes first; "
	    "CONNECT to an IP literal, the name judged by the policy):\n",
	    on->hello_len);
	for (int i = 0; i < bench_opt.runs; i++)
		printf("  run %d: on %6.0f MB/s %6.0f hs/s %5.1f us/hs | off "
		    "%6.0f MB/s %6.0f hs/s %5.1f us/hs | on/off %.3f %.3f\n",
		    i + 1, on->run_mbps[i], on->run_hps[i], on->run_cpu[i],
		    off->run_mbps[i], off->run_hps[i], off->run_cpu[i],
		    on->run_mbps[i] / off->run_mbps[i],
		    on->run_hps[i] / off->run_hps[i]);
	printf("SNI check on vs off (medians): throughput %.3fx, handshakes/s "
	    "%.3fx (target >= 0.95 each), CPU/handshake %.3fx\n",
	    on->mbps / off->mbps, on->hps / off->hps,
	    off->cpu_us > 0 ? on->cpu_us / off->cpu_us : 0);
}

static const char *
met(bool ok)
{
	return ok ? "met" : "NOT met";
}

/* The table of figures, then the ratios against cordon-proxy (tg[3]). */
static void
report(const struct target tg[NTARGETS], double rt_us)
{
	printf("\n%d MiB through one tunnel; %d CONNECT handshakes (%d threads);"
	    " %d idle tunnels; medians of %d runs, the targets' runs "
	    "interleaved\n\n", (int)(bench_opt.bytes >> 20),
	    bench_opt.handshakes, bench_opt.threads, bench_opt.idle,
	    bench_opt.runs);
	printf("%-22s %11s %13s %15s %14s %15s  %s\n", "target", "tunnel MB/s",
	    "handshakes/s", "CPU us/handshk", "user/kernel us", "RSS KiB/tunnel",
	    "notes");
	for (int i = 0; i < NTARGETS; i++) {
		char split[32];

		if (tg[i].skip && tg[i].mbps == 0) {
			printf("%-22s %11s %13s %15s %14s %15s  %s\n", tg[i].name,
			    "-", "-", "-", "-", "-", tg[i].note[0] ? tg[i].note :
			    "skipped");
			continue;
		}
		if (i == 0) {
			printf("%-22s %11.0f %13.0f %15s %14s %15s  %s\n",
			    tg[i].name, tg[i].mbps, tg[i].hps, "-", "-", "-",
			    tg[i].note);
			continue;
		}
		snprintf(split, sizeof(split), "%.0f/%.0f", tg[i].user_us,
		    tg[i].sys_us);
		printf("%-22s %11.0f %13.0f %15.1f %14s %15.2f  %s\n",
		    tg[i].name, tg[i].mbps, tg[i].hps, tg[i].cpu_us, split,
		    tg[i].rss_kib, tg[i].note);
	}
	if (!tg[1].skip && tg[1].mbps > 0 && !tg[3].skip) {
		double thr = tg[3].mbps / tg[1].mbps, hs = tg[3].hps / tg[1].hps,
		    cpu = tg[1].cpu_us > 0 ? tg[3].cpu_us / tg[1].cpu_us : 0;

		/* Issue 16's targets, each against its anchor of this run. */
		printf("\ncordon-proxy vs tinyproxy: throughput %.2fx (target "
		    ">= 2: %s), handshakes/s %.2fx (>= 1.3: %s), CPU/handshake "
		    "%.2fx (<= 0.5: %s)\n", thr, met(thr >= 2), hs,
		    met(hs >= 1.3), cpu, met(cpu > 0 && cpu <= 0.5));
		printf("cordon-proxy RSS per idle tunnel: %.2f KiB (target <= 2:"
		    " %s), tinyproxy %.1f KiB (%.3fx)\n", tg[3].rss_kib,
		    met(tg[3].rss_kib <= 2), tg[1].rss_kib, tg[1].rss_kib > 0 ?
		    tg[3].rss_kib / tg[1].rss_kib : 0);
		/* The kernel's TCP work for the two connections of a
		 * handshake is the same whichever program asks for it. */
		if (tg[1].cpu_us > 0)
			printf("CPU per handshake, kernel part: cordon-proxy %.0f "
			    "us = %.2fx tinyproxy's total (%.0f us); the 0.5x "
			    "target leaves %.0f us for both parts\n",
			    tg[3].sys_us, tg[3].sys_us / tg[1].cpu_us,
			    tg[1].cpu_us, tg[1].cpu_us / 2);
	}
	if (!tg[2].skip && tg[2].mbps > 0 && !tg[3].skip)
		printf("cordon-proxy vs squid: throughput %.2fx, handshakes/s "
		    "%.2fx, CPU/handshake %.2fx\n", tg[3].mbps / tg[2].mbps,
		    tg[3].hps / tg[2].hps, tg[2].cpu_us > 0 ?
		    tg[3].cpu_us / tg[2].cpu_us : 0);
	if (!tg[3].skip && tg[0].mbps > 0)
		printf("cordon-proxy vs direct: throughput %.2fx (target >= 0.5:"
		    " %s), handshakes/s %.2fx\n", tg[3].mbps / tg[0].mbps,
		    met(tg[3].mbps / tg[0].mbps >= 0.5), tg[3].hps / tg[0].hps);
	if (!tg[3].skip && !tg[4].skip && tg[3].hps > 0 && tg[3].cpu_us > 0)
		printf("run mode vs standalone: handshakes/s %.2fx, CPU/handshake"
		    " %.2fx (budget: within 10 %%)\n", tg[4].hps / tg[3].hps,
		    tg[4].cpu_us / tg[3].cpu_us);
	if (!tg[4].skip)
		printf("control socket: register+unregister round trip %.0f us "
		    "(median of 20)\n", rt_us);
	report_sni(tg);
	report_transparent(tg);
}

int
main(int argc, char **argv)
{
	const char *cordon = NULL, *skip = "";
	struct target tg[NTARGETS] = {
		{ .name = "direct (no proxy)" }, { .name = "tinyproxy 1.11" },
		{ .name = "squid 5.7" }, { .name = "cordon-proxy" },
		{ .name = "cordon-proxy run mode" },
		{ .name = "cordon SNI check on" },
		{ .name = "cordon SNI check off" },
		{ .name = "cordon CONNECT by name" },
		{ .name = "cordon transparent" },
	};
	bool netns = false;
	pid_t dns = -1;
	static uint8_t hello[HELLO_CAP];
	double rt_us = -1;
	struct target *live[5];
	int nlive = 0;
	struct rlimit rl;
	pid_t up;
	char path[512];

	parse_args(argc, argv, &cordon, &skip);
	if (cordon == NULL) {
		const char *root = getenv("CORDON_BUILD_ROOT");
		snprintf(path, sizeof(path), "%s/proxy/cordon-proxy",
		    root != NULL ? root : ".");
		cordon = path;
	}
	signal(SIGPIPE, SIG_IGN);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (mkdtemp(bench_tmpdir) == NULL || chmod(bench_tmpdir, 0777) != 0) {
		perror("mkdtemp");
		return 1;
	}
	/* Before anything starts: all of it then runs in the namespace. */
	if (strstr(skip, "transparent") == NULL &&
	    !(netns = bench_netns_enter()))
		fprintf(stderr, "bench_proxy: no network namespace of its own "
		    "(needs root): the transparent rows are skipped\n");
	up = bench_up_start();
	if (netns)
		dns = bench_dns_start();

	/* Every anchor and cordon-proxy up at once (idle ones cost nothing),
	 * then their runs interleaved; the idle-tunnel RSS of each last. */
	if (strstr(skip, "tinyproxy") != NULL)
		tg[1].skip = true;
	else if (!bench_start_tinyproxy(&tg[1]))
		snprintf(tg[1].note, sizeof(tg[1].note), "did not start"),
		    tg[1].skip = true;
	if (strstr(skip, "squid") != NULL)
		tg[2].skip = true;
	else if (!bench_start_squid(&tg[2]))
		snprintf(tg[2].note, sizeof(tg[2].note), "did not start"),
		    tg[2].skip = true;
	if (!bench_start_cordon(&tg[3], cordon, true))
		snprintf(tg[3].note, sizeof(tg[3].note), "did not start"),
		    tg[3].skip = true;
	if (strstr(skip, "runmode") != NULL)
		tg[4].skip = true;
	else if (!bench_start_cordon_run(&tg[4], cordon, &rt_us))
		snprintf(tg[4].note, sizeof(tg[4].note), "did not start"),
		    tg[4].skip = true;
	for (int i = 0; i < 5; i++)
		if (!tg[i].skip)
			live[nlive++] = &tg[i];
	run_interleaved(live, nlive);
	for (int i = 0; i < nlive; i++)
		bench_idle(live[i]);
	for (int i = 1; i < 5; i++)
		bench_stop(&tg[i]);
	/* The SNI check, on and off, the same ClientHello; both daemons
	 * up at once, their runs interleaved. */
	tg[5].hello = tg[6].hello = hello;
	tg[5].hello_len = tg[6].hello_len = sni_hello(hello, sizeof(hello));
	tg[6].extra = "--insecure-no-sni-check";
	if (strstr(skip, "sni") != NULL || tg[5].hello_len == 0) {
		tg[5].skip = tg[6].skip = true;
		if (tg[5].hello_len == 0)
			snprintf(tg[5].note, sizeof(tg[5].note),
			    "no ClientHello fixture");
	} else if (!bench_start_cordon(&tg[5], cordon, false) ||
	    !bench_start_cordon(&tg[6], cordon, false)) {
		snprintf(tg[5].note, sizeof(tg[5].note), "did not start");
		tg[5].skip = tg[6].skip = true;
	} else {
		run_pair(&tg[5], &tg[6]);
	}
	bench_stop(&tg[5]);
	bench_stop(&tg[6]);
	/* The transparent path beside CONNECT by name: one daemon. */
	tg[7].hello = tg[8].hello = hello;
	tg[7].hello_len = tg[8].hello_len = tg[5].hello_len;
	tg[7].connect_host = SNI_NAME;
	tg[8].transparent = true;
	if (!netns || tg[7].hello_len == 0) {
		tg[7].skip = tg[8].skip = true;
		snprintf(tg[8].note, sizeof(tg[8].note), "%s", !netns ?
		    "skipped (root: a network namespace)" :
		    "no ClientHello fixture");
	} else if (!bench_start_cordon_transparent(&tg[7], &tg[8], cordon)) {
		snprintf(tg[8].note, sizeof(tg[8].note), "did not start");
		tg[7].skip = tg[8].skip = true;
	} else {
		run_pair(&tg[7], &tg[8]);
	}
	bench_stop(&tg[7]);
	if (dns > 0) {
		kill(dns, SIGKILL);
		waitpid(dns, NULL, 0);
	}
	kill(up, SIGKILL);
	waitpid(up, NULL, 0);

	report(tg, rt_us);
	(void)util_rm_rf(bench_tmpdir);
	return 0;
}
