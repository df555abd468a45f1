/*
 * dig as the tests' DNS client (dig_util.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dig_util.h"

extern char **environ;

const char *
dig_run(uint16_t port, const char *const *args)
{
	static char text[65536];
	char pstr[16], *argv[40];
	posix_spawn_file_actions_t fa;
	int p[2], status, argc = 0;
	size_t len = 0;
	ssize_t n;
	pid_t pid;

	snprintf(pstr, sizeof(pstr), "%u", port);
	argv[argc++] = (char *)"dig";
	argv[argc++] = (char *)"@127.0.0.1";
	argv[argc++] = (char *)"-p";
	argv[argc++] = pstr;
	argv[argc++] = (char *)"+tries=1";
	argv[argc++] = (char *)"+time=3";
	for (size_t i = 0; args[i] != NULL && argc < 39; i++)
		argv[argc++] = (char *)args[i];
	argv[argc] = NULL;
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_adddup2(&fa, p[1], 2);
	if (posix_spawnp(&pid, "dig", &fa, NULL, argv, environ) != 0)
		fail_msg("cannot run dig: install bind9-dnsutils "
		    "(scripts/setup does)");
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	while ((n = read(p[0], text + len, sizeof(text) - 1 - len)) > 0)
		len += (size_t)n;
	close(p[0]);
	text[len] = '\0';
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("dig exited %d:\n%s", status, text);
	return text;
}

void
dig_check(const char *text, const char *want, bool present)
{
	if ((strstr(text, want) != NULL) != present)
		fail_msg("dig's output %s \"%s\":\n%s", present ? "lacks" :
		    "has", want, text);
}

void
dig_answer_a(const char *text, const char *name, unsigned ttl, char *out,
    size_t len)
{
	char pat[300], addr[20];
	const char *s;
	struct in_addr a;
	unsigned got = 0;

	/* "NAME.<tabs>TTL<tab>IN<tab>A<tab>ADDR" in the answer section. */
	snprintf(pat, sizeof(pat), "\n%s.\t", name);
	s = strstr(text, ";; ANSWER SECTION:");
	if (s == NULL || (s = strstr(s, pat)) == NULL ||
	    sscanf(s + strlen(pat), "%u IN A %19s", &got, addr) != 2 ||
	    got != ttl || inet_pton(AF_INET, addr, &a) != 1)
		fail_msg("no A answer with TTL %u for %s:\n%s", ttl, name,
		    text);
	snprintf(out, len, "%s", addr);
}
