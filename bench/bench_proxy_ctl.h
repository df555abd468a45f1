/* bench_proxy's run-mode helpers (bench_proxy_ctl.c). */
#ifndef CORDON_BENCH_PROXY_CTL_H
#define CORDON_BENCH_PROXY_CTL_H

#include <stddef.h>

/* Sends line (ending in '\n') on a new connection to the control socket
 * sock and reads one answer line into answer. 0 when it is {"ok":true...},
 * else -1. */
int bench_ctl_call(const char *sock, const char *line, char *answer,
    size_t len);
/* Registers run from 127.0.0.1 with policy "bench", a one-hour deadline
 * and max_conns. 0 or -1 (the answer printed). */
int bench_ctl_register(const char *sock, const char *run, const char *token,
    unsigned max_conns);
/* Median over n (at most 64) register+unregister round trips, in
 * microseconds; -1 on failure. */
double bench_ctl_roundtrip_us(const char *sock, const char *token, int n);
/* "Proxy-Authorization: Basic b64(run:token)\r\n" into out. */
void bench_auth_line(const char *run, const char *token, char *out,
    size_t len);

#endif
