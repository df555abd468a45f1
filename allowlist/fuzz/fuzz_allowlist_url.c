/*
 * libFuzzer target for allowlist_url_parse (the URLs `cordon allowlist
 * explain` accepts): the input is the URL. Checks that a refusal leaves
 * nothing half-filled, that an accepted URL's authority is the text
 * between "://" and the first '/', '?' or '#' (no '@' in it), that the
 * target lies inside the input and starts the path or query, and that the
 * matcher takes the authority without trouble.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "allowlist/allowlist.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char policy_text[] =
    "example.com\n*.example.org\napi.example.net:8443\n!x.example.org\n";

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct allowlist_set *set;
	struct allowlist_decision d;
	struct allowlist_url u;
	const char *why, *auth;
	char *url;
	size_t alen;

	if (set == NULL && allowlist_set_parse("fuzz.list", policy_text,
	    sizeof(policy_text) - 1, &set, NULL) != 0)
		abort();
	if ((url = malloc(size + 1)) == NULL)
		return 0;
	memcpy(url, data, size);
	url[size] = '\0';
	if (allowlist_url_parse(url, &u, &why) != 0) {
		if (why == NULL || u.authority[0] != '\0' || u.target != NULL ||
		    u.target_len != 0 || u.default_port != 0)
			abort();
		free(url);
		return 0;
	}
	if (why != NULL || (u.default_port != 80 && u.default_port != 443))
		abort();
	auth = strstr(url, "://") + 3;
	alen = strlen(u.authority);
	if (alen == 0 || strncmp(auth, u.authority, alen) != 0 ||
	    strcspn(u.authority, "/?#@") != alen)
		abort();
	if (u.target != auth + alen ||
	    u.target_len > strlen(u.target) ||
	    (u.target_len > 0 && u.target[0] != '/' && u.target[0] != '?') ||
	    memchr(u.target, '#', u.target_len) != NULL ||
	    (u.target[u.target_len] != '\0' && u.target[u.target_len] != '#'))
		abort();
	allowlist_match_authority(allowlist_set_policy(set, NULL),
	    u.authority, u.default_port, &d);
	if (d.reason == NULL)
		abort();
	free(url);
	return 0;
}
