/*
 * Policy sets: one file (policy "default") or a directory of NAME.list
 * files, loaded all-or-nothing. The only part of the allowlist that does
 * I/O; the parsing itself is in parse.c.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "allowlist/internal.h"
#include "common/util.h"

struct allowlist_set {
	struct allowlist **policies;	/* sorted by name */
	size_t count;
};

/* One load: its options and the secrets store, opened when the first
 * inject= needs it (so a set without inject= never reads it). */
struct load {
	const struct allowlist_load_opts *opts;
	struct al_secrets *store;
	int store_err;		/* opening failed (reported once) */
};

static bool
load_injects(const struct allowlist *al)
{
	for (size_t i = 0; i < al->ninsps; i++)
		if (al->insps[i].secret != AL_NONE)
			return true;
	return false;
}

/* Gives al's inject= entries their values. 0, -EINVAL (reported), or
 * -ENOMEM. */
static int
load_secrets(struct load *ld, struct allowlist *al,
    struct allowlist_diag *diag)
{
	const char *path = ld->opts != NULL ? ld->opts->secrets : NULL;
	bool skip = ld->opts != NULL && ld->opts->secrets_unverified;
	long r;

	if (path != NULL && path[0] == '\0')
		path = NULL;
	if (!load_injects(al))
		return 0;
	if (path != NULL && !skip && ld->store == NULL) {
		if (ld->store_err != 0)
			return -EINVAL;		/* said once already */
		if ((r = al_secrets_open(path, &ld->store, diag)) < 0) {
			ld->store_err = (int)r;
			return r == -ENOMEM ? -ENOMEM : -EINVAL;
		}
	}
	r = al_secrets_resolve(al, path != NULL ? ld->store : NULL, skip, diag);
	if (r < 0)
		return (int)r;
	return r > 0 ? -EINVAL : 0;
}

void
allowlist_set_free(struct allowlist_set *set)
{
	if (set == NULL)
		return;
	for (size_t i = 0; i < set->count; i++)
		al_policy_free(set->policies[i]);
	free(set->policies);
	free(set);
}

const struct allowlist *
allowlist_set_policy(const struct allowlist_set *set, const char *name)
{
	if (set == NULL)
		return NULL;
	if (name == NULL)
		name = "default";
	for (size_t i = 0; i < set->count; i++)
		if (strcmp(set->policies[i]->name, name) == 0)
			return set->policies[i];
	return NULL;
}

size_t
allowlist_set_count(const struct allowlist_set *set)
{
	return set != NULL ? set->count : 0;
}

size_t
allowlist_set_inject_count(const struct allowlist_set *set)
{
	size_t n = 0;

	for (size_t i = 0; set != NULL && i < set->count; i++)
		for (size_t j = 0; j < set->policies[i]->ninsps; j++)
			n += set->policies[i]->insps[j].secret != AL_NONE;
	return n;
}

const char *
allowlist_set_name(const struct allowlist_set *set, size_t i)
{
	return set != NULL && i < set->count ? set->policies[i]->name : NULL;
}

static bool load_policy_name_ok(const char *s, size_t len);

/* Parses text as policy name into set (appended). Returns 0, -EINVAL
 * when it had errors (reported in diag), or -ENOMEM. */
static int
load_policy(struct load *ld, struct allowlist_set *set, const char *name,
    const char *file, const char *text, size_t len,
    struct allowlist_diag *diag)
{
	struct allowlist *al, **v;
	long r;

	if ((al = al_policy_new(name, file)) == NULL)
		return -ENOMEM;
	/* Kept so the set can be handed on as text (cordon-proxy's parent
	 * sends its network child the texts it checked). */
	if ((al->src = malloc(len > 0 ? len : 1)) == NULL) {
		al_policy_free(al);
		return -ENOMEM;
	}
	if (len > 0)
		memcpy(al->src, text, len);
	al->src_len = len;
	if ((r = al_parse_text(al, text, len, diag)) != 0) {
		al_policy_free(al);
		return r < 0 ? (int)r : -EINVAL;
	}
	/* Its messages come in line order already. */
	if ((r = load_secrets(ld, al, diag)) != 0) {
		al_policy_free(al);
		return (int)r;
	}
	v = realloc(set->policies, (set->count + 1) * sizeof(*v));
	if (v == NULL) {
		al_policy_free(al);
		return -ENOMEM;
	}
	set->policies = v;
	set->policies[set->count++] = al;
	return 0;
}

int
allowlist_set_parse_opts(const char *name, const char *text, size_t len,
    const struct allowlist_load_opts *opts, struct allowlist_set **out,
    struct allowlist_diag *diag)
{
	struct load ld = { .opts = opts };
	struct allowlist_set *set;
	int r;

	*out = NULL;
	if ((set = calloc(1, sizeof(*set))) == NULL)
		return -ENOMEM;
	r = load_policy(&ld, set, "default", name, text, len, diag);
	al_secrets_free(ld.store);
	if (r < 0) {
		allowlist_set_free(set);
		return r;
	}
	*out = set;
	return 0;
}

int
allowlist_set_parse(const char *name, const char *text, size_t len,
    struct allowlist_set **out, struct allowlist_diag *diag)
{
	return allowlist_set_parse_opts(name, text, len, NULL, out, diag);
}

int
allowlist_set_parse_many(const struct allowlist_source *src, size_t n,
    const struct allowlist_load_opts *opts, struct allowlist_set **out,
    struct allowlist_diag *diag)
{
	struct load ld = { .opts = opts };
	struct allowlist_set *set;
	int r = 0, first = 0;

	*out = NULL;
	if ((set = calloc(1, sizeof(*set))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n && r != -ENOMEM; i++) {
		if (!load_policy_name_ok(src[i].name, strlen(src[i].name)) ||
		    (i > 0 && strcmp(src[i - 1].name, src[i].name) >= 0)) {
			al_diag_add(diag, false, src[i].file, 0, "policy name "
			    "'%s' is not valid, or not in order", src[i].name);
			r = -EINVAL;
		} else {
			r = load_policy(&ld, set, src[i].name, src[i].file,
			    src[i].text, src[i].len, diag);
		}
		if (r < 0 && first == 0)
			first = r;
	}
	al_secrets_free(ld.store);
	if (r == -ENOMEM || first != 0) {
		allowlist_set_free(set);
		return r == -ENOMEM ? r : first;
	}
	*out = set;
	return 0;
}

int
allowlist_set_source(const struct allowlist_set *set, size_t i,
    struct allowlist_source *out)
{
	const struct allowlist *al;

	if (set == NULL || i >= set->count)
		return -ENOENT;
	al = set->policies[i];
	out->name = al->name;
	out->file = al->file;
	out->text = al->src;
	out->len = al->src_len;
	return 0;
}

void
allowlist_preload(void)
{
	(void)al_psl_ctx();
}

static int
load_file(struct load *ld, struct allowlist_set *set, const char *policy,
    const char *path, struct allowlist_diag *diag)
{
	char *text = NULL;
	size_t len = 0;
	int r;

	if ((r = util_read_file(path, ALLOWLIST_FILE_MAX, &text, &len)) < 0) {
		if (r == -EFBIG)
			al_diag_add(diag, false, path, 0, "larger than %u bytes",
			    ALLOWLIST_FILE_MAX);
		else
			al_diag_add(diag, false, path, 0, "cannot read: %s",
			    strerror(-r));
		return r;
	}
	r = load_policy(ld, set, policy, path, text, len, diag);
	free(text);
	return r;
}

static bool
load_policy_name_ok(const char *s, size_t len)
{
	if (len == 0 || len > ALLOWLIST_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '_'))
			return false;
	}
	return true;
}

static int
load_cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int
load_cmp_policies(const void *a, const void *b)
{
	return strcmp((*(struct allowlist *const *)a)->name,
	    (*(struct allowlist *const *)b)->name);
}

/* The non-hidden names in dir, sorted (caller frees each and the array). */
static int
load_dir_names(const char *dir, char ***out, size_t *count,
    struct allowlist_diag *diag)
{
	char **names = NULL, **v;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;
	int r = 0;

	if ((d = opendir(dir)) == NULL) {
		r = -errno;
		al_diag_add(diag, false, dir, 0, "cannot read: %s", strerror(-r));
		return r;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap != 0 ? cap * 2 : 16;
			if ((v = realloc(names, cap * sizeof(*v))) == NULL) {
				r = -ENOMEM;
				break;
			}
			names = v;
		}
		if ((names[n] = strdup(de->d_name)) == NULL) {
			r = -ENOMEM;
			break;
		}
		n++;
	}
	closedir(d);
	if (r < 0) {
		while (n > 0)
			free(names[--n]);
		free(names);
		return r;
	}
	if (n > 0)
		qsort(names, n, sizeof(*names), load_cmp_names);
	*out = names;
	*count = n;
	return 0;
}

/* Every NAME.list in dir, in name order. Errors in one file do not stop
 * the others from being checked; the first failure is returned. */
static int
load_dir(struct load *ld, struct allowlist_set *set, const char *dir,
    struct allowlist_diag *diag)
{
	char **names = NULL, *path = NULL;
	size_t n = 0, lists = 0;
	int r, first = 0;

	if ((r = load_dir_names(dir, &names, &n, diag)) < 0)
		return r;
	for (size_t i = 0; i < n && r != -ENOMEM; i++) {
		size_t len = strlen(names[i]);
		struct stat st;
		r = 0;
		if (len < 6 || strcmp(names[i] + len - 5, ".list") != 0) {
			al_diag_add(diag, true, dir, 0, "skipping '%s' (policies "
			    "are NAME.list files)", names[i]);
			continue;
		}
		free(path);
		if (asprintf(&path, "%s/%s", dir, names[i]) < 0) {
			path = NULL;
			r = -ENOMEM;
			break;
		}
		names[i][len - 5] = '\0';
		if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
			al_diag_add(diag, true, path, 0, "skipping a directory");
			continue;
		}
		lists++;
		if (!load_policy_name_ok(names[i], len - 5)) {
			al_diag_add(diag, false, path, 0, "policy names use "
			    "letters, digits, '-' and '_' (at most %d)",
			    ALLOWLIST_NAME_MAX);
			r = -EINVAL;
		} else {
			r = load_file(ld, set, names[i], path, diag);
		}
		if (r < 0 && first == 0)
			first = r;
	}
	if (r != -ENOMEM && lists == 0)
		al_diag_add(diag, true, dir, 0, "no NAME.list files: every "
		    "request will be denied");
	if (set->count > 1)
		qsort(set->policies, set->count, sizeof(*set->policies),
		    load_cmp_policies);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(path);
	return r == -ENOMEM ? r : first;
}

int
allowlist_set_load(const char *path, struct allowlist_set **out,
    struct allowlist_diag *diag)
{
	return allowlist_set_load_opts(path, NULL, out, diag);
}

int
allowlist_set_load_opts(const char *path,
    const struct allowlist_load_opts *opts, struct allowlist_set **out,
    struct allowlist_diag *diag)
{
	struct load ld = { .opts = opts };
	struct allowlist_set *set;
	struct stat st;
	int r;

	*out = NULL;
	if (stat(path, &st) < 0) {
		r = -errno;
		al_diag_add(diag, false, path, 0, "cannot read: %s", strerror(-r));
		return r;
	}
	if ((set = calloc(1, sizeof(*set))) == NULL)
		return -ENOMEM;
	if (S_ISDIR(st.st_mode)) {
		r = load_dir(&ld, set, path, diag);
	} else if (S_ISREG(st.st_mode)) {
		r = load_file(&ld, set, "default", path, diag);
	} else {
		al_diag_add(diag, false, path, 0, "not a regular file or a "
		    "directory");
		r = -EINVAL;
	}
	al_secrets_free(ld.store);
	if (r < 0) {
		allowlist_set_free(set);
		return r;
	}
	*out = set;
	return 0;
}
