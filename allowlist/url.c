/*
 * Absolute http(s) URLs for `cordon allowlist explain`: the authority the
 * proxy would be asked for, the port the scheme implies, and the request
 * target. Pure: no I/O, no allocation, so it is unit-tested and fuzzed.
 */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "allowlist/allowlist.h"

static const struct {
	const char *name;
	long port;
} url_schemes[] = {
	{ "http", 80 },
	{ "https", 443 },
};

static int
url_fail(struct allowlist_url *out, const char **why, const char *msg)
{
	memset(out, 0, sizeof(*out));
	if (why != NULL)
		*why = msg;
	return -EINVAL;
}

int
allowlist_url_parse(const char *url, struct allowlist_url *out,
    const char **why)
{
	const char *sep, *auth, *end;
	size_t slen, alen, i;

	if (why != NULL)
		*why = NULL;
	if (url == NULL || (sep = strstr(url, "://")) == NULL)
		return url_fail(out, why, "not a URL (SCHEME://HOST...)");
	slen = (size_t)(sep - url);
	for (i = 0; i < sizeof(url_schemes) / sizeof(url_schemes[0]); i++)
		if (strlen(url_schemes[i].name) == slen &&
		    strncasecmp(url, url_schemes[i].name, slen) == 0)
			break;
	if (i == sizeof(url_schemes) / sizeof(url_schemes[0]))
		return url_fail(out, why, "the scheme is not http or https");
	auth = sep + 3;
	alen = strcspn(auth, "/?#");
	end = auth + alen;
	if (alen == 0)
		return url_fail(out, why, "no host after the scheme");
	if (memchr(auth, '@', alen) != NULL)
		return url_fail(out, why, "user information (USER@) in the "
		    "URL: the proxy is asked for the host alone");
	if (alen >= sizeof(out->authority))
		return url_fail(out, why, "the host and port are too long");
	memset(out, 0, sizeof(*out));
	memcpy(out->authority, auth, alen);
	out->authority[alen] = '\0';
	out->default_port = url_schemes[i].port;
	/* The request target: path and query, without the fragment, which
	 * a client never sends. */
	out->target = end;
	out->target_len = strcspn(end, "#");
	return 0;
}
