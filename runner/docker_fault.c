/*
 * Why docker could not be reached (docker.h): the docker CLI's error text
 * or a socket call's errno sorted into "permission denied", "not running"
 * and anything else, and the one line every front end says for it, with
 * the cause and the fix. Pure.
 */
#include "runner/docker.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* What the docker CLI says (Debian's 20.10, and later clients, which
 * dropped the "Got" and say "API" for "daemon socket"). */
static const char *const denied_texts[] = {
	"permission denied while trying to connect to the docker",
};

static const char *const down_texts[] = {
	"cannot connect to the docker daemon",
	"is the docker daemon running",
	"failed to connect to the docker api",
	"if the daemon is running",
};

static bool
text_has(const char *text, const char *const *needles, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcasestr(text, needles[i]) != NULL)
			return true;
	return false;
}

enum docker_fault
docker_fault_text(const char *text)
{
	bool dial;

	if (text == NULL)
		return DOCKER_FAULT_OTHER;
	if (text_has(text, denied_texts, sizeof(denied_texts) /
	    sizeof(denied_texts[0])))
		return DOCKER_FAULT_DENIED;
	if (text_has(text, down_texts, sizeof(down_texts) /
	    sizeof(down_texts[0])))
		return DOCKER_FAULT_DOWN;
	/* Only the dial to the daemon's socket: "permission denied" alone
	 * is also what a runtime says about a cgroup or a mount. */
	dial = strcasestr(text, "dial unix ") != NULL;
	if (dial && strcasestr(text, "connect: permission denied") != NULL)
		return DOCKER_FAULT_DENIED;
	if (dial && (strcasestr(text, "connect: no such file") != NULL ||
	    strcasestr(text, "connect: connection refused") != NULL))
		return DOCKER_FAULT_DOWN;
	return DOCKER_FAULT_OTHER;
}

enum docker_fault
docker_fault_errno(int rc)
{
	switch (rc < 0 ? -rc : rc) {
	case EACCES:
	case EPERM:
		return DOCKER_FAULT_DENIED;
	case ENOENT:
	case ECONNREFUSED:
		return DOCKER_FAULT_DOWN;
	default:
		return DOCKER_FAULT_OTHER;
	}
}

int
docker_fault_say(enum docker_fault f, const char *where, const char *detail,
    char *err, size_t errlen)
{
	const char *w = where != NULL && where[0] != '\0' ? where :
	    "the Docker socket";
	const char *d = detail != NULL ? detail : "";
	int dn = (int)strcspn(d, "\r\n");

	switch (f) {
	case DOCKER_FAULT_DENIED:
		snprintf(err, errlen, RUNNER_DOCKER_UNAVAILABLE ": cannot reach "
		    "docker: permission denied on %s: run cordon as root, or "
		    "as a member of the `docker` group (root-equivalent; "
		    "README \"Who may run Cordon\" has the audit rule)", w);
		break;
	case DOCKER_FAULT_DOWN:
		snprintf(err, errlen, RUNNER_DOCKER_UNAVAILABLE ": cannot reach "
		    "docker: dockerd is not running (%.*s): start it "
		    "(scripts/setup)", dn > 0 ? dn : (int)strlen(w),
		    dn > 0 ? d : w);
		break;
	default:
		snprintf(err, errlen, RUNNER_DOCKER_UNAVAILABLE ": cannot reach "
		    "docker via %s: %.*s", w, dn, d);
		break;
	}
	return -EHOSTUNREACH;
}
