/*
 * Replay of access-log lines under another policy set (replay.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allowlist/replay.h"
#include "common/json.h"

/* Denials the allowlist decided: an edit can turn them into allows. */
static const char *const policy_denials[] = {
	"not-on-policy", "no-match", "port-not-allowed", "denied-by-entry",
	"wildcard-crosses-public-suffix", "no-policy", "invalid-host",
	"invalid-port", "method-not-allowed", "path-not-allowed",
};

/* Errors after the policy let the request through: the network failed. */
static const char *const network_errors[] = {
	"dns-", "upstream-", "connect-",
};

/* The reason's first word ("not-on-policy default" -> "not-on-policy"). */
static bool
reason_is(const char *reason, const char *word)
{
	size_t n = strlen(word);

	return strncmp(reason, word, n) == 0 &&
	    (reason[n] == '\0' || reason[n] == ' ');
}

static bool
reason_in(const char *reason, const char *const *list, size_t n,
    bool prefix)
{
	for (size_t i = 0; i < n; i++)
		if (prefix ? strncmp(reason, list[i], strlen(list[i])) == 0 :
		    reason_is(reason, list[i]))
			return true;
	return false;
}

/* Copies a string member into buf (max len-1 bytes). 0 when present and a
 * string that fits, 1 when absent or null, -1 when mistyped or too long. */
static int
get_str(const cJSON *o, const char *key, char *buf, size_t len)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	size_t n;

	buf[0] = '\0';
	if (v == NULL || cJSON_IsNull(v))
		return 1;
	if (!cJSON_IsString(v) || v->valuestring == NULL)
		return -1;
	n = strlen(v->valuestring);
	if (n >= len)
		return -1;
	memcpy(buf, v->valuestring, n + 1);
	return 0;
}

void
allowlist_replay_rec_clear(struct allowlist_replay_rec *rec)
{
	free(rec->path);
	rec->path = NULL;
}

int
allowlist_replay_parse_line(const char *line, size_t len,
    struct allowlist_replay_rec *rec, const char **why)
{
	char decision[16];
	const cJSON *v;
	cJSON *o;
	int rc = REPLAY_LINE_MALFORMED;

	memset(rec, 0, sizeof(*rec));
	*why = "not-a-json-object";
	if (len > REPLAY_LINE_MAX) {
		*why = "line-too-long";
		return REPLAY_LINE_MALFORMED;
	}
	o = cJSON_ParseWithLength(line, len);
	if (o == NULL || !cJSON_IsObject(o))
		goto out;
	/* Not an access-log line (a supervisor's own log line): skipped. */
	if (cJSON_GetObjectItemCaseSensitive(o, "decision") == NULL ||
	    cJSON_GetObjectItemCaseSensitive(o, "host") == NULL) {
		*why = "not-access-log";
		rc = REPLAY_LINE_SKIP;
		goto out;
	}
	*why = "bad-decision";
	if (get_str(o, "decision", decision, sizeof(decision)) != 0)
		goto out;
	*why = "bad-reason";
	if (get_str(o, "reason", rec->reason, sizeof(rec->reason)) < 0)
		goto out;
	*why = "bad-host";
	if (get_str(o, "host", rec->host, sizeof(rec->host)) != 0 ||
	    rec->host[0] == '\0')
		goto out;
	*why = "bad-port";
	v = cJSON_GetObjectItemCaseSensitive(o, "port");
	if (!cJSON_IsNumber(v) || v->valuedouble < 0 ||
	    v->valuedouble > 65535 || v->valuedouble != (double)v->valueint)
		goto out;
	rec->port = v->valueint;
	*why = "bad-time";
	if (get_str(o, "time", rec->time, sizeof(rec->time)) < 0)
		goto out;
	*why = "bad-policy";
	if (get_str(o, "policy", rec->policy, sizeof(rec->policy)) < 0)
		goto out;
	if (rec->policy[0] == '\0')
		snprintf(rec->policy, sizeof(rec->policy), "default");
	*why = "bad-method";
	if (get_str(o, "method", rec->method, sizeof(rec->method)) < 0)
		goto out;
	rec->dns = strcmp(rec->method, "DNS") == 0;
	v = cJSON_GetObjectItemCaseSensitive(o, "inspected");
	rec->inspected = cJSON_IsTrue(v);
	*why = "bad-path";
	v = cJSON_GetObjectItemCaseSensitive(o, "path");
	if (rec->inspected && v != NULL && !cJSON_IsNull(v)) {
		if (!cJSON_IsString(v) || v->valuestring == NULL)
			goto out;
		if ((rec->path = strdup(v->valuestring)) == NULL) {
			rc = -ENOMEM;
			goto out;
		}
	}
	if (strcmp(decision, "allow") == 0) {
		rec->was_allowed = true;
	} else if (strcmp(decision, "error") == 0 &&
	    reason_in(rec->reason, network_errors,
	    sizeof(network_errors) / sizeof(network_errors[0]), true)) {
		rec->was_allowed = true;
	} else if (strcmp(decision, "deny") == 0 &&
	    reason_in(rec->reason, policy_denials,
	    sizeof(policy_denials) / sizeof(policy_denials[0]), false)) {
		rec->was_allowed = false;
	} else if (strcmp(decision, "deny") == 0 ||
	    strcmp(decision, "error") == 0) {
		/* Decided by something an allowlist edit does not change. */
		rc = REPLAY_LINE_SKIP;
		*why = rec->reason[0] != '\0' ? rec->reason : decision;
		goto out;
	} else {
		*why = "bad-decision";
		goto out;
	}
	rc = REPLAY_LINE_RECORD;
	*why = NULL;
out:
	cJSON_Delete(o);
	if (rc != REPLAY_LINE_RECORD)
		allowlist_replay_rec_clear(rec);
	/* A skip's reason lives in rec->reason, which stays readable. */
	return rc;
}

void
allowlist_replay_decide(const struct allowlist_set *set,
    const struct allowlist_replay_rec *rec, struct allowlist_replay_verdict *v)
{
	const struct allowlist *pol = allowlist_set_policy(set, rec->policy);
	struct allowlist_decision d;
	const char *ir = NULL;

	memset(v, 0, sizeof(*v));
	if (rec->dns)
		v->allowed = allowlist_match_any_port(pol, rec->host, &d);
	else
		v->allowed = allowlist_match(pol, rec->host, rec->port, &d);
	v->reason = d.reason != NULL ? d.reason : (v->allowed ? "allowed" :
	    "denied");
	/* An inspected request is judged by the deciding entry's options,
	 * as the proxy does; a request logged without its method and path
	 * cannot be, and is judged at the host level. */
	if (v->allowed && !rec->dns && rec->inspected && d.inspect != NULL &&
	    rec->method[0] != '\0' && rec->path != NULL &&
	    !allowlist_inspect_check(d.inspect, rec->method, rec->path,
	    &ir)) {
		v->allowed = false;
		v->reason = ir != NULL ? ir : "denied";
	}
	if (d.file != NULL && d.entry != NULL)
		snprintf(v->rule, sizeof(v->rule), "%s:%u: %s", d.file, d.line,
		    d.entry);
	else
		snprintf(v->rule, sizeof(v->rule), "%s", v->reason);
}

void
allowlist_replay_stats_init(struct allowlist_replay_stats *st)
{
	memset(st, 0, sizeof(*st));
}

void
allowlist_replay_stats_free(struct allowlist_replay_stats *st)
{
	for (size_t i = 0; i < st->nskipped; i++)
		free(st->skipped[i].reason);
	free(st->skipped);
	for (size_t i = 0; i < st->nchanges; i++) {
		struct allowlist_replay_change *c = &st->changes[i];
		free(c->policy);
		free(c->host);
		free(c->rule);
		free(c->reason);
	}
	free(st->changes);
	memset(st, 0, sizeof(*st));
}

static int
count_skip(struct allowlist_replay_stats *st, const char *reason)
{
	char word[64];
	size_t n = strcspn(reason, " ");
	void *p;

	/* "not-on-policy NAME" and the like count under their first word. */
	snprintf(word, sizeof(word), "%.*s", (int)(n < 63 ? n : 63), reason);
	for (size_t i = 0; i < st->nskipped; i++)
		if (strcmp(st->skipped[i].reason, word) == 0) {
			st->skipped[i].count++;
			return 0;
		}
	/* Reasons are the proxy's own words: a bounded set; a log with
	 * garbage reasons is bounded by what fits here. */
	if (st->nskipped >= 256)
		snprintf(word, sizeof(word), "other");
	for (size_t i = 0; i < st->nskipped; i++)
		if (strcmp(st->skipped[i].reason, word) == 0) {
			st->skipped[i].count++;
			return 0;
		}
	p = realloc(st->skipped, (st->nskipped + 1) * sizeof(*st->skipped));
	if (p == NULL)
		return -ENOMEM;
	st->skipped = p;
	if ((st->skipped[st->nskipped].reason = strdup(word)) == NULL)
		return -ENOMEM;
	st->skipped[st->nskipped++].count = 1;
	return 0;
}

static void
time_minmax(struct allowlist_replay_change *c, const char *t)
{
	if (t[0] == '\0')
		return;
	if (c->first[0] == '\0' || strcmp(t, c->first) < 0)
		snprintf(c->first, sizeof(c->first), "%s", t);
	if (c->last[0] == '\0' || strcmp(t, c->last) > 0)
		snprintf(c->last, sizeof(c->last), "%s", t);
}

static int
add_change(struct allowlist_replay_stats *st,
    const struct allowlist_replay_rec *rec,
    const struct allowlist_replay_verdict *v)
{
	struct allowlist_replay_change *c;

	for (size_t i = 0; i < st->nchanges; i++) {
		c = &st->changes[i];
		if (c->port == rec->port && c->to_allowed == v->allowed &&
		    strcmp(c->policy, rec->policy) == 0 &&
		    strcmp(c->host, rec->host) == 0 &&
		    strcmp(c->rule, v->rule) == 0) {
			c->count++;
			time_minmax(c, rec->time);
			return 0;
		}
	}
	if (st->nchanges == st->capchanges) {
		size_t cap = st->capchanges != 0 ? st->capchanges * 2 : 16;
		void *p = realloc(st->changes, cap * sizeof(*st->changes));
		if (p == NULL)
			return -ENOMEM;
		st->changes = p;
		st->capchanges = cap;
	}
	c = &st->changes[st->nchanges];
	memset(c, 0, sizeof(*c));
	c->policy = strdup(rec->policy);
	c->host = strdup(rec->host);
	c->rule = strdup(v->rule);
	c->reason = strdup(v->reason);
	if (c->policy == NULL || c->host == NULL || c->rule == NULL ||
	    c->reason == NULL) {
		free(c->policy);
		free(c->host);
		free(c->rule);
		free(c->reason);
		return -ENOMEM;
	}
	c->port = rec->port;
	c->from_allowed = rec->was_allowed;
	c->to_allowed = v->allowed;
	c->count = 1;
	time_minmax(c, rec->time);
	st->nchanges++;
	return 0;
}

int
allowlist_replay_feed(struct allowlist_replay_stats *st,
    const struct allowlist_set *set, const char *line, size_t len, uint64_t lineno, const char *since)
{
	struct allowlist_replay_rec rec;
	struct allowlist_replay_verdict v;
	const char *why;
	int rc;

	st->lines++;
	while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		len--;
	if (len == 0)
		return 0;
	rc = allowlist_replay_parse_line(line, len, &rec, &why);
	if (rc < 0)
		return rc;
	if (rc == REPLAY_LINE_MALFORMED) {
		if (st->malformed_kept < REPLAY_MALFORMED_KEPT)
			st->malformed_lines[st->malformed_kept++] = lineno;
		st->malformed++;
		return 0;
	}
	if (rc == REPLAY_LINE_SKIP)
		return count_skip(st, why);
	if (since != NULL && rec.time[0] != '\0' && strcmp(rec.time, since) < 0) {
		st->too_old++;
		allowlist_replay_rec_clear(&rec);
		return 0;
	}
	allowlist_replay_decide(set, &rec, &v);
	st->replayed++;
	if (v.allowed == rec.was_allowed) {
		st->unchanged++;
		rc = 0;
	} else {
		st->changed++;
		rc = add_change(st, &rec, &v);
	}
	allowlist_replay_rec_clear(&rec);
	return rc;
}

static int
change_cmp(const void *a, const void *b)
{
	const struct allowlist_replay_change *x = a, *y = b;
	int r;

	if ((r = strcmp(x->policy, y->policy)) != 0)
		return r;
	if ((r = strcmp(x->host, y->host)) != 0)
		return r;
	if (x->port != y->port)
		return x->port < y->port ? -1 : 1;
	if (x->from_allowed != y->from_allowed)
		return x->from_allowed ? -1 : 1;
	return strcmp(x->rule, y->rule);
}

void
allowlist_replay_sort(struct allowlist_replay_stats *st)
{
	if (st->nchanges > 1)
		qsort(st->changes, st->nchanges, sizeof(*st->changes),
		    change_cmp);
}
