/*
 * The warm pool's options and the words for its notes, shared by the
 * front ends that keep one (pool_conf.h): `cordon serve` and `cordon mcp`
 * say the same things about their pools.
 */
#include "runner/pool_conf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "runner/runner.h"

void
runner_pool_conf_opts(const struct config *c, int64_t size,
    struct runner_pool_opts *o)
{
	*o = (struct runner_pool_opts){
		.size = size,
		.max_age_s = c->serve.pool_max_age_s,
		.idle_s = c->serve.pool_idle_s,
		.max_starts = c->serve.pool_starts,
		.modes = { true, true },
	};
}

enum log_level
runner_pool_conf_note(const struct runner_pool_note *n, char *buf,
    size_t len)
{
	const char *net = runner_net_name(n->net);
	char who[80];
	long long ms = (long long)n->ms, idle = (long long)n->idle,
	    size = (long long)n->size;

	/* python's pool is "pool" (as before languages had pools); one in
	 * another profile than its language's is "pool LANG@PROFILE". */
	if (n->profile != NULL)
		snprintf(who, sizeof(who), "pool %s@%s --net %s",
		    config_lang_name(n->lang), n->profile, net);
	else if (n->lang == 0 || n->lang == CONFIG_LANG_PYTHON)
		snprintf(who, sizeof(who), "pool --net %s", net);
	else
		snprintf(who, sizeof(who), "pool %s --net %s",
		    config_lang_name(n->lang), net);

	switch (n->ev) {
	case RUNNER_POOL_READY:
		snprintf(buf, len, "%s: %s ready in %lld ms, %lld "
		    "of %lld idle", who, n->name, ms, idle, size);
		return LOG_LEVEL_DEBUG;
	case RUNNER_POOL_FULL:
		snprintf(buf, len, "%s: filled, %lld of %lld idle "
		    "(last start %lld ms)", who, idle, size, ms);
		return LOG_LEVEL_INFO;
	case RUNNER_POOL_FAILED:
		snprintf(buf, len, "%s: start of %s failed after "
		    "%lld ms: %s (retried with back-off)", who, n->name, ms,
		    n->why);
		return LOG_LEVEL_WARN;
	case RUNNER_POOL_ABORTED:
		snprintf(buf, len, "%s: start of %s given up "
		    "(paused or stopping): %s", who, n->name, n->why);
		return LOG_LEVEL_INFO;
	case RUNNER_POOL_RETIRED:
		snprintf(buf, len, "%s: idle %s removed (%s)", who,
		    n->name, n->why);
		return LOG_LEVEL_DEBUG;
	case RUNNER_POOL_RM_FAILED:
		snprintf(buf, len, "%s: cannot remove %s: %s", who,
		    n->name, n->why);
		return LOG_LEVEL_WARN;
	case RUNNER_POOL_DAEMON_DOWN:
		snprintf(buf, len, "%s: no starts while dockerd "
		    "does not answer: %s", who, n->why);
		return LOG_LEVEL_WARN;
	case RUNNER_POOL_SHRUNK:
		snprintf(buf, len, "%s: no run asked for it in %lld s: "
		    "shrunk to 0 (refilled when one asks)", who, ms / 1000);
		return LOG_LEVEL_INFO;
	case RUNNER_POOL_DAEMON_UP:
		snprintf(buf, len, "%s: dockerd answers again: "
		    "refilling", who);
		return LOG_LEVEL_INFO;
	}
	snprintf(buf, len, "%s: event %d", who, (int)n->ev);
	return LOG_LEVEL_DEBUG;
}

struct runner_pools {
	struct runner_pool *p[RUNNER_POOLS_MAX];
	struct config *c[RUNNER_POOLS_MAX];	/* each pool's, at its
						 * profile */
	unsigned lang[RUNNER_POOLS_MAX];	/* CONFIG_LANG_* */
	struct runner_pool_gate gate;	/* the starts in flight of them all */
	char label[RUNNER_POOLS_MAX][CONFIG_PROFILE_MAX + 1];	/* "" for
						 * a language's own pool */
};

static const char *const pools_lang[RUNNER_POOLS_LANGS] = {
	"python", "bash", "node",
};

/* Pool i of ps: lang in profile (NULL: lang's) of size; 0 or -errno with
 * the reason in err. */
static int
pools_add(struct runner_pools *ps, int i, const struct config *c,
    const char *lang, const char *profile, int64_t size,
    const struct runner_pool_opts *base, char *err, size_t errlen)
{
	struct runner_pool_opts o;
	char why[256];
	int rc;

	if ((ps->c[i] = malloc(sizeof(*ps->c[i]))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	memcpy(ps->c[i], c, sizeof(*c));
	ps->lang[i] = config_lang_bit(lang);
	if (profile != NULL)
		util_strlcpy(ps->label[i], profile, sizeof(ps->label[i]));
	if ((rc = config_profile_use(ps->c[i], profile, lang, why,
	    sizeof(why))) < 0) {
		snprintf(err, errlen, "no %s pool%s%s: %s", lang,
		    profile != NULL ? " in profile " : "",
		    profile != NULL ? profile : "", why);
		return rc;
	}
	o = *base;
	o.size = size;
	o.gate = &ps->gate;
	o.lang = ps->lang[i];
	o.profile_label = profile != NULL ? ps->label[i] : NULL;
	if ((rc = runner_pool_new(ps->c[i], &o, &ps->p[i], why,
	    sizeof(why))) < 0)
		snprintf(err, errlen, "%s pool%s%s: %s", lang,
		    profile != NULL ? " in profile " : "",
		    profile != NULL ? profile : "", why);
	return rc;
}

int
runner_pools_new(const struct config *c,
    const int64_t size[RUNNER_POOLS_LANGS],
    const struct config_pool_profile *extra, size_t nextra,
    const struct runner_pool_opts *base, struct runner_pools **out,
    char *err, size_t errlen)
{
	struct runner_pools *ps;
	bool any = nextra > 0;
	int rc = 0;

	*out = NULL;
	if (nextra > RUNNER_POOLS_MAX - RUNNER_POOLS_LANGS) {
		snprintf(err, errlen, "at most %d pools in other profiles",
		    RUNNER_POOLS_MAX - RUNNER_POOLS_LANGS);
		return -EINVAL;
	}
	for (int i = 0; i < RUNNER_POOLS_LANGS; i++)
		any = any || size[i] > 0;
	if (!any)
		return 0;
	if ((ps = calloc(1, sizeof(*ps))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	/* The starts limit holds for the host, not for each pool: N pools
	 * filling at once would otherwise start N times as many. */
	runner_pool_gate_init(&ps->gate, base->max_starts);
	for (int i = 0; i < RUNNER_POOLS_LANGS && rc == 0; i++)
		if (size[i] > 0)
			rc = pools_add(ps, i, c, pools_lang[i], NULL, size[i],
			    base, err, errlen);
	for (size_t k = 0; k < nextra && rc == 0; k++)
		rc = pools_add(ps, RUNNER_POOLS_LANGS + (int)k, c,
		    config_lang_name(extra[k].lang), extra[k].profile,
		    extra[k].size, base, err, errlen);
	if (rc < 0) {
		runner_pools_free(ps);
		return rc;
	}
	*out = ps;
	return 0;
}

const char *
runner_pools_lang(int i)
{
	return i >= 0 && i < RUNNER_POOLS_LANGS ? pools_lang[i] : NULL;
}

struct runner_pool *
runner_pools_get(const struct runner_pools *ps, const char *lang,
    const char *profile)
{
	unsigned bit = config_lang_bit(lang != NULL ? lang : "python");

	if (ps == NULL || bit == 0)
		return NULL;
	for (int i = 0; i < RUNNER_POOLS_MAX; i++) {
		if (ps->p[i] == NULL || ps->lang[i] != bit)
			continue;
		/* No profile named: the language's own pool. Named: the pool
		 * kept in it, the language's own pool included. */
		if (profile == NULL || profile[0] == '\0' ? i <
		    RUNNER_POOLS_LANGS : strcmp(profile,
		    config_profile_current(ps->c[i])) == 0)
			return ps->p[i];
	}
	return NULL;
}

struct runner_pool *
runner_pools_at(const struct runner_pools *ps, int i, const char **lang,
    const char **profile)
{
	if (ps == NULL || i < 0 || i >= RUNNER_POOLS_MAX || ps->p[i] == NULL)
		return NULL;
	if (lang != NULL)
		*lang = config_lang_name(ps->lang[i]);
	if (profile != NULL)
		*profile = config_profile_current(ps->c[i]);
	return ps->p[i];
}

void
runner_pools_pause(struct runner_pools *ps, bool paused)
{
	for (int i = 0; ps != NULL && i < RUNNER_POOLS_MAX; i++)
		if (ps->p[i] != NULL)
			runner_pool_pause(ps->p[i], paused);
}

void
runner_pools_stop(struct runner_pools *ps)
{
	/* Paused first, all of them: their removals overlap. */
	runner_pools_pause(ps, true);
	for (int i = 0; ps != NULL && i < RUNNER_POOLS_MAX; i++)
		if (ps->p[i] != NULL)
			runner_pool_stop(ps->p[i]);
}

void
runner_pools_free(struct runner_pools *ps)
{
	if (ps == NULL)
		return;
	runner_pools_stop(ps);
	for (int i = 0; i < RUNNER_POOLS_MAX; i++) {
		runner_pool_free(ps->p[i]);
		free(ps->c[i]);
	}
	free(ps);
}

int64_t
runner_pools_starting(struct runner_pools *ps)
{
	return ps != NULL ? runner_pool_gate_starting(&ps->gate) : 0;
}
