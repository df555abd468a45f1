/*
 * Loopback fixture for the cordon-proxy integration tests: a stub DNS
 * server (evdns server API) that counts every query, an echo server, a tiny
 * HTTP server, a flooding server and a sink (counts what it receives, sends
 * nothing) on 127.0.0.2, all on one libevent loop
 * in a background thread; plus helpers to run the built daemon and talk to
 * it with blocking sockets. Test traffic never leaves 127.0.0.0/8.
 */
#ifndef CORDON_TESTS_PROXY_FIXTURE_H
#define CORDON_TESTS_PROXY_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Starts the servers (once per test binary). 0 or a negative errno. */
int fx_start(void);
void fx_stop(void);

uint16_t fx_dns_port(void);
uint16_t fx_echo_port(void);
uint16_t fx_http_port(void);
uint16_t fx_flood_port(void);
uint16_t fx_closed_port(void);	/* nothing listens on 127.0.0.2 here */
uint16_t fx_sink_port(void);

/* DNS queries (A + AAAA) seen for name (NULL: all names) so far. */
unsigned fx_queries(const char *name);
unsigned fx_queries_a(const char *name);
/* Copy of the last request head the HTTP server received. */
void fx_last_http_head(char *buf, size_t len);
long fx_flood_conns(void);
/* Connections the sink accepted, and bytes it received, so far. */
long fx_sink_conns(void);
long long fx_sink_bytes(void);
long long fx_flood_bytes(void);

/* A running cordon-proxy. */
struct px {
	pid_t pid;
	int errfd;		/* its stderr */
	char err[65536];	/* everything read from it so far */
	size_t errlen;
	uint16_t port;
	uint16_t metrics_port;
	char dir[256];		/* temp dir: allow.list, access.log */
	char allowlist[300];
	char accesslog[300];
};

/* Writes the default test allowlist (see proxy_fixture.c) to p->dir, then
 * starts the daemon with the standard flags plus extra (NULL-terminated, may
 * be NULL) and waits for "listening on". allowlist_text NULL = default. */
int px_start(struct px *p, const char *allowlist_text,
    const char *const *extra);
/* Reads stderr until needle appears after offset from (or timeout). */
bool px_wait_err(struct px *p, size_t from, const char *needle,
    int timeout_ms);
/* SIGTERM (if still running) and wait; returns the exit status as from
 * waitpid's WEXITSTATUS, or -1 (killed by a signal or hung: SIGKILLed),
 * or -3 when its stderr says it took a step outside its connection state
 * table (proxy/conn_state.c; the lines are printed). */
int px_stop(struct px *p);
/* Waits for exit without signalling. -2 on timeout. */
int px_wait_exit(struct px *p, int timeout_ms);
long px_rss_kb(const struct px *p);
/* SIGKILLs and reaps every daemon still running (after a failed test). */
void px_kill_all(void);
/* The default allowlist text (static; contains the fixture's ports): its
 * wildcard is `raw`, since the fixture's servers speak plain bytes. */
const char *px_default_allowlist(void);
/* The same without `raw`: tunnels must carry TLS (the SNI check). */
const char *px_tls_allowlist(void);

/* Blocking client helpers (10 s receive timeout). */
int cli_connect(uint16_t port);
int cli_send(int fd, const char *s);
int cli_send_n(int fd, const void *s, size_t n);
/* Reads a response head byte by byte (nothing past CRLFCRLF); returns the
 * status code, or -1 on EOF/timeout/garbage. head gets the text. */
int cli_read_head(int fd, char *head, size_t len);
/* Reads exactly n bytes; 0 or -1. */
int cli_read_n(int fd, void *buf, size_t n);
/* Content-Length of a head, or -1. */
long head_content_length(const char *head);
/* True when head has a line "Name: value" (case-insensitive name). */
bool head_has(const char *head, const char *name, const char *value);
/* "host:port" in one of 4 static buffers used in turn (so up to 4 can be
 * used at once). */
char *px_auth(const char *host, uint16_t port);
/* CONNECT authority through p; returns the fd after 200, or -1 with
 * *status (and head) set. */
int px_connect(struct px *p, const char *authority, int *status,
    char *head, size_t headlen);

/* cmocka glue shared by the suites (proxy_suite.c). fx_group_setup starts
 * the servers; fx_group_setup_nofile first raises RLIMIT_NOFILE to its hard
 * limit (suites that open many tunnels). fx_group_teardown kills any daemon
 * left and stops the servers; fx_test_teardown kills the daemons a test
 * left running (after a failed assertion). All return 0 or -1. */
int fx_group_setup(void **state);
int fx_group_setup_nofile(void **state);
int fx_group_teardown(void **state);
int fx_test_teardown(void **state);
/* Raises RLIMIT_NOFILE's soft limit to the hard one (best effort). */
void fx_raise_nofile(void);
/* 0 when running as root; otherwise says "<suite> needs root (<why>)" on
 * stderr and returns the exit code for main: 77 (skipped) when CORDON_E2E
 * is "skip", else 1. */
int fx_need_root(const char *suite, const char *why);

#endif
