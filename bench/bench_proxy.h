/* bench_proxy's parts: the targets it measures, the upstream and the
 * client load (bench_proxy_load.c), starting and stopping the proxies
 * (bench_proxy_start.c); the options and the report stay in bench_proxy.c. */
#ifndef CORDON_BENCH_PROXY_H
#define CORDON_BENCH_PROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define NTARGETS 9
#define NOWHERE "203.0.113.7"	/* routed to lo; REDIRECTed */
#define SNI_NAME "bench.cordon-bench.net"

/* The command line's figures (bench_proxy.c). */
struct bench_opts {
	long long bytes;	/* through one tunnel */
	int handshakes, idle, threads, runs;
};
extern struct bench_opts bench_opt;

struct target {
	const char *name;
	uint16_t port;		/* 0: direct to the upstream */
	pid_t pid;		/* the proxy (whose CPU and RSS we read) */
	bool skip;
	const char *auth;	/* header line sent with CONNECT, or "" */
	const uint8_t *hello;	/* sent first in every tunnel, or NULL */
	size_t hello_len;
	const char *extra;	/* one more cordon-proxy option, or NULL */
	const char *connect_host;	/* CONNECT this name, not 127.0.0.2 */
	bool transparent;	/* no CONNECT: to NOWHERE, redirected */
	double mbps, hps, cpu_us, rss_kib;
	double user_us, sys_us;	/* cpu_us split: user space, kernel */
	double run_mbps[16], run_hps[16], run_cpu[16];	/* each run's */
	double run_user[16], run_sys[16];
	char note[128];
};

/* bench_proxy_load.c */
extern uint16_t bench_up_port;	/* the upstream's, on 127.0.0.2 */
/* Forks the upstream (killed with the bench); sets bench_up_port. */
pid_t bench_up_start(void);
/* A socket of type (SOCK_STREAM: listening) bound to 127.0.0.2, its port
 * into *port; exits on failure, perror'ing what. */
int bench_bind_local(int type, uint16_t *port, const char *what);
/* A blocking connection with a 30 s receive timeout, or -1. */
int bench_tcp_connect(const char *ip, uint16_t port);
/* One tunnel's throughput into t->mbps. */
void bench_throughput(struct target *t);
/* bench_opt.handshakes tunnels over bench_opt.threads threads: t->hps
 * and the proxy's CPU per handshake. */
void bench_handshakes(struct target *t);
/* The proxy's RSS per idle tunnel, bench_opt.idle of them. */
void bench_idle(struct target *t);

/* bench_proxy_start.c: each start fills t->port and t->pid and is true
 * once the proxy listens. */
extern char bench_tmpdir[];	/* mkdtemp'd by main */
bool bench_start_cordon(struct target *t, const char *bin, bool raw);
bool bench_start_cordon_run(struct target *t, const char *bin,
    double *rt_us);
pid_t bench_dns_start(void);
bool bench_netns_enter(void);
bool bench_start_cordon_transparent(struct target *c, struct target *tr,
    const char *bin);
bool bench_start_tinyproxy(struct target *t);
bool bench_start_squid(struct target *t);
/* Kills t's process group and reaps it. */
void bench_stop(struct target *t);

#endif
