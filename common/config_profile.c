/*
 * Image profiles, languages and tenants' permissions (config.h): the
 * built-in profiles, which profile and image a run's language and
 * profile pick, and what a tenant may ask for.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/config_internal.h"
#include "common/util.h"

/* The profiles every config has: minimal (image.* itself, mirrored by
 * config_profiles_finish), data (Debian's scientific Python stack) and
 * node. Each includes python3: the probe is a Python program. */
void
config_profiles_default(struct config_image *img)
{
	static const struct {
		const char *name;
		const char *packages[6];
	} defs[] = {
		{ CONFIG_PROFILE_DEFAULT, { NULL } },
		{ "data", { "python3", "python3-numpy", "python3-pandas",
		    "python3-matplotlib", "python3-scipy", NULL } },
		{ "node", { "python3", "nodejs", NULL } },
	};

	img->nprofiles = 0;
	for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++) {
		struct config_profile *p = &img->profiles[img->nprofiles++];
		memset(p, 0, sizeof(*p));
		strcpy(p->name, defs[i].name);
		for (size_t k = 0; defs[i].packages[k] != NULL; k++)
			strcpy(p->packages[p->npackages++], defs[i].packages[k]);
	}
}

static unsigned
config_profile_langs(const struct config_profile *p)
{
	unsigned langs = CONFIG_LANG_PYTHON | CONFIG_LANG_BASH;

	for (size_t i = 0; i < p->npackages; i++)
		if (strcmp(p->packages[i], "nodejs") == 0)
			langs |= CONFIG_LANG_NODE;
	return langs;
}

/* Mirrors image.name/packages/id into profiles[0] (minimal), names the
 * other profiles' images image.name-NAME unless the file named them, and
 * derives every profile's languages. -ENAMETOOLONG when a derived image
 * name does not fit. */
int
config_profiles_finish(struct config_image *img)
{
	struct config_profile *m = &img->profiles[0];
	int rc = 0;

	util_strlcpy(m->image_name, img->name, sizeof(m->image_name));
	memcpy(m->packages, img->packages, sizeof(m->packages));
	m->npackages = img->npackages;
	util_strlcpy(m->id, img->id, sizeof(m->id));
	for (size_t i = 0; i < img->nprofiles; i++) {
		struct config_profile *p = &img->profiles[i];
		if (i > 0 && !p->named &&
		    (size_t)snprintf(p->image_name, sizeof(p->image_name),
		    "%s-%s", img->name, p->name) >= sizeof(p->image_name)) {
			p->image_name[0] = '\0';
			rc = -ENAMETOOLONG;
		}
		p->langs = config_profile_langs(p);
	}
	return rc;
}

bool
config_policy_name_valid(const char *name)
{
	size_t n = strlen(name);

	return n >= 1 && n <= CONFIG_POLICY_MAX && strspn(name,
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789_-") == n;
}

bool
config_profile_name_valid(const char *name)
{
	size_t n = strlen(name);

	return n >= 1 && n <= CONFIG_PROFILE_MAX && strspn(name,
	    "abcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

unsigned
config_lang_bit(const char *lang)
{
	if (lang == NULL || strcmp(lang, "python") == 0)
		return CONFIG_LANG_PYTHON;
	if (strcmp(lang, "bash") == 0)
		return CONFIG_LANG_BASH;
	if (strcmp(lang, "node") == 0)
		return CONFIG_LANG_NODE;
	return 0;
}

const char *
config_lang_name(unsigned bit)
{
	switch (bit) {
	case CONFIG_LANG_PYTHON: return "python";
	case CONFIG_LANG_BASH: return "bash";
	case CONFIG_LANG_NODE: return "node";
	}
	return "?";
}

void
config_langs_format(unsigned langs, char *out, size_t outlen)
{
	size_t n = 0;

	out[0] = '\0';
	for (unsigned b = 1; b <= CONFIG_LANG_NODE && n < outlen; b <<= 1)
		if (langs & b)
			n += (size_t)snprintf(out + n, outlen - n, "%s%s",
			    n ? ", " : "", config_lang_name(b));
}

const struct config_profile *
config_profile_find(const struct config *c, const char *name)
{
	for (size_t i = 0; i < c->image.nprofiles; i++)
		if (strcmp(c->image.profiles[i].name, name) == 0)
			return &c->image.profiles[i];
	return NULL;
}

const char *
config_profile_current(const struct config *c)
{
	return c->image.profile[0] != '\0' ? c->image.profile :
	    CONFIG_PROFILE_DEFAULT;
}

/* "minimal, data, node": the profile names, into out. */
static void
profile_names(const struct config *c, char *out, size_t outlen)
{
	size_t n = 0;

	out[0] = '\0';
	for (size_t i = 0; i < c->image.nprofiles && n < outlen; i++)
		n += (size_t)snprintf(out + n, outlen - n, "%s%s",
		    i > 0 ? ", " : "", c->image.profiles[i].name);
}

int
config_profile_pick(const struct config *c, const char *profile,
    const char *lang, const struct config_profile **out, char *err,
    size_t errlen)
{
	const struct config_profile *p;
	unsigned bit = config_lang_bit(lang);
	char have[64], names[CONFIG_MAX_PROFILES * (CONFIG_PROFILE_MAX + 2)];

	*out = NULL;
	if (bit == 0) {
		snprintf(err, errlen, "unknown language '%.32s' (python, bash "
		    "or node)", lang);
		return -EINVAL;
	}
	if (profile != NULL && (p = config_profile_find(c, profile)) == NULL) {
		profile_names(c, names, sizeof(names));
		snprintf(err, errlen, "unknown profile '%.32s' (profiles: %s)",
		    profile, names);
		return -EINVAL;
	}
	if (profile == NULL) {
		p = config_profile_find(c, config_profile_current(c));
		/* From the default profile, a language picks its profile;
		 * never another language. */
		for (size_t i = 0; p != NULL && (p->langs & bit) == 0 &&
		    c->image.profile[0] == '\0' && i < c->image.nprofiles; i++)
			if (c->image.profiles[i].langs & bit)
				p = &c->image.profiles[i];
		if (p == NULL) {
			snprintf(err, errlen, "unknown profile '%.32s'",
			    config_profile_current(c));
			return -EINVAL;
		}
	}
	if ((p->langs & bit) == 0) {
		config_langs_format(p->langs, have, sizeof(have));
		snprintf(err, errlen, "profile '%s' has no %s (it offers %s)%s",
		    p->name, config_lang_name(bit), have, bit ==
		    CONFIG_LANG_NODE ? ": use a profile with nodejs in its "
		    "packages, e.g. node" : "");
		return -EINVAL;
	}
	*out = p;
	return 0;
}

int
config_profile_use(struct config *c, const char *profile, const char *lang,
    char *err, size_t errlen)
{
	const struct config_profile *p;
	int rc;

	if ((rc = config_profile_pick(c, profile, lang, &p, err, errlen)) < 0)
		return rc;
	/* Already there: image.* stands as it is (a caller may have set
	 * image.id on its copy). */
	if (strcmp(p->name, config_profile_current(c)) == 0)
		return 0;
	if (p == &c->image.profiles[0])
		c->image.profile[0] = '\0';
	else
		util_strlcpy(c->image.profile, p->name,
		    sizeof(c->image.profile));
	util_strlcpy(c->image.name, p->image_name, sizeof(c->image.name));
	memcpy(c->image.packages, p->packages, sizeof(c->image.packages));
	c->image.npackages = p->npackages;
	util_strlcpy(c->image.id, p->id, sizeof(c->image.id));
	return 0;
}

bool
config_tenant_allows_net(const struct config_tenant *t, const char *net)
{
	if (strcmp(net, "none") == 0)
		return (t->nets & CONFIG_NET_NONE) != 0;
	if (strcmp(net, "proxy") == 0)
		return (t->nets & CONFIG_NET_PROXY) != 0;
	return false;
}

bool
config_tenant_allows_policy(const struct config *c,
    const struct config_tenant *t, const char *policy)
{
	if (!t->policies_set)
		return strcmp(policy, c->egress_default_policy) == 0;
	for (size_t i = 0; i < t->npolicies; i++)
		if (strcmp(t->policies[i], policy) == 0)
			return true;
	return false;
}

/* Whether language entry le of profile entry pe was given before it in
 * obj (the same profile key twice counts as one). */
static bool
pool_pair_seen(const cJSON *obj, const cJSON *pe, const cJSON *le)
{
	const cJSON *p, *l;

	cJSON_ArrayForEach(p, obj) {
		if (strcmp(p->string, pe->string) != 0)
			continue;
		cJSON_ArrayForEach(l, p) {
			if (l == le)
				return false;
			if (strcmp(l->string, le->string) == 0)
				return true;
		}
	}
	return false;
}

/* SECTION.pool_profiles: {"PROFILE": {"LANG": N}}, N 0-64 (0: none).
 * Only the shape here; whether the profile exists and offers the language
 * is config_pool_profiles_check's, once the whole file is applied. */
int
config_pool_profiles_apply(struct config_pool_profile *v, size_t *n,
    const cJSON *obj, const char *section, const char *name, char *err,
    size_t errlen)
{
	const cJSON *pe, *le;

	if (!cJSON_IsObject(obj))
		return config_fail(err, errlen, name, "%s.pool_profiles: expected "
		    "an object {\"PROFILE\": {\"LANG\": N}}", section);
	*n = 0;
	cJSON_ArrayForEach(pe, obj) {
		if (!config_profile_name_valid(pe->string) ||
		    !cJSON_IsObject(pe))
			return config_fail(err, errlen, name, "%s.pool_profiles: "
			    "each key a profile name (1-%d of [a-z0-9_-]), each "
			    "value an object {\"LANG\": N}", section,
			    CONFIG_PROFILE_MAX);
		cJSON_ArrayForEach(le, pe) {
			unsigned bit = config_lang_bit(le->string);
			int64_t size;

			if (bit == 0)
				return config_fail(err, errlen, name,
				    "%s.pool_profiles.%s: unknown language "
				    "'%.32s' (python, bash or node)", section,
				    pe->string, le->string);
			if (!cJSON_IsNumber(le) || le->valuedouble < 0 ||
			    le->valuedouble > 64 || le->valuedouble !=
			    (double)(int64_t)le->valuedouble)
				return config_fail(err, errlen, name,
				    "%s.pool_profiles.%s.%s: expected a whole "
				    "number in [0, 64]", section, pe->string,
				    le->string);
			size = (int64_t)le->valuedouble;
			if (pool_pair_seen(obj, pe, le))
				return config_fail(err, errlen, name,
				    "%s.pool_profiles.%s.%s: given twice",
				    section, pe->string, le->string);
			if (size == 0)
				continue;
			if (*n == CONFIG_MAX_POOL_PROFILES)
				return config_fail(err, errlen, name,
				    "%s.pool_profiles: at most %d pools",
				    section, CONFIG_MAX_POOL_PROFILES);
			util_strlcpy(v[*n].profile, pe->string,
			    sizeof(v[*n].profile));
			v[*n].lang = bit;
			v[*n].size = size;
			(*n)++;
		}
	}
	return 0;
}

/* Each of SECTION's pool_profiles names a profile that offers its
 * language, and not the one the language runs in by default (that pool
 * is SECTION.pool, pool_bash or pool_node). */
int
config_pool_profiles_check(const struct config *c,
    const struct config_pool_profile *v, size_t n, const char *section,
    const char *name, char *err, size_t errlen)
{
	const struct config_profile *p, *def;
	char why[256];

	for (size_t i = 0; i < n; i++) {
		const char *lang = config_lang_name(v[i].lang);

		if (config_profile_pick(c, v[i].profile, lang, &p, why,
		    sizeof(why)) < 0)
			return config_fail(err, errlen, name,
			    "%s.pool_profiles.%s.%s: %s", section,
			    v[i].profile, lang, why);
		if (config_profile_pick(c, NULL, lang, &def, why,
		    sizeof(why)) == 0 && def == p)
			return config_fail(err, errlen, name,
			    "%s.pool_profiles.%s.%s: %s runs in profile %s by "
			    "default: size that pool with %s.pool%s%s", section,
			    v[i].profile, lang, lang, p->name, section,
			    v[i].lang == CONFIG_LANG_PYTHON ? "" : "_",
			    v[i].lang == CONFIG_LANG_PYTHON ? "" : lang);
	}
	return 0;
}
