/*
 * The Public Suffix List as the allowlist uses it: one libpsl context for
 * the whole process (the parser's "is this a public suffix" and the
 * matcher's registrable domains), and the set of names that have suffix
 * rules beneath them ("amazonaws.com" for "s3.amazonaws.com"), which libpsl
 * cannot enumerate. Both come from one read of the list file, so they agree;
 * they are built once, on first use, and never freed.
 */
#include <errno.h>
#include <libpsl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allowlist/internal.h"

#define PSL_FILE_MAX	(16u * 1024 * 1024)	/* the list is ~250 KiB */

/* A name with rules beneath it, and the shortest such rule (pointers into
 * psl_text, where every rule line is NUL-terminated). */
struct psl_below {
	const char *name;
	const char *rule;
};

static pthread_once_t psl_once = PTHREAD_ONCE_INIT;
static const psl_ctx_t *psl_ctx;	/* NULL: no data at all */
static psl_ctx_t *psl_loaded;	/* psl_ctx when it came from AL_PSL_FILE */
static char *psl_text;
static struct psl_below *psl_belows;	/* sorted by name; NULL: unknown */
static size_t psl_nbelows;
static int psl_error;		/* errno of reading AL_PSL_FILE, or 0 */

/* Reads the whole list into a NUL-terminated buffer; 0 or -errno. */
static int
psl_read(const char *path, char **out, size_t *outlen)
{
	FILE *f;
	char *buf;
	size_t len;
	int r = 0;

	*out = NULL;
	if ((f = fopen(path, "re")) == NULL)
		return -errno;
	if ((buf = malloc(PSL_FILE_MAX + 1)) == NULL) {
		fclose(f);
		return -ENOMEM;
	}
	len = fread(buf, 1, PSL_FILE_MAX + 1, f);
	if (ferror(f))
		r = -EIO;
	else if (len > PSL_FILE_MAX)
		r = -EFBIG;
	fclose(f);
	if (r < 0) {
		free(buf);
		return r;
	}
	buf[len] = '\0';
	*out = buf;
	*outlen = len;
	return 0;
}

static int
psl_below_cmp(const void *a, const void *b)
{
	const struct psl_below *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	size_t lx = strlen(x->rule), ly = strlen(y->rule);

	if (c != 0)
		return c;
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return strcmp(x->rule, y->rule);
}

static bool
psl_ascii(const char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s >= 0x80)
			return false;
	return true;
}

/*
 * Cuts text into NUL-terminated rule lines and lists every proper label
 * suffix of every rule (exceptions "!x" excluded: they remove a suffix) as
 * a name with rules beneath it. "*.compute.amazonaws.com" lists
 * compute.amazonaws.com, amazonaws.com and com. Names with non-ASCII bytes
 * are left out: allowlist names are ASCII (punycode).
 */
static int
psl_index(char *text)
{
	struct psl_below *v = NULL, *q;
	size_t n = 0, cap = 0;

	for (char *line = text, *next; *line != '\0'; line = next) {
		char *end = line + strcspn(line, "\n");
		next = *end != '\0' ? end + 1 : end;
		while (end > line && (end[-1] == '\r' || end[-1] == ' ' ||
		    end[-1] == '\t'))
			end--;
		*end = '\0';
		if (line[0] == '\0' || line[0] == '!' ||
		    strncmp(line, "//", 2) == 0)
			continue;
		for (char *c = line; *c != '\0'; c++)
			if (*c >= 'A' && *c <= 'Z')
				*c = (char)(*c + 32);
		for (char *dot = strchr(line, '.'); dot != NULL;
		    dot = strchr(dot + 1, '.')) {
			if (!psl_ascii(dot + 1))
				continue;
			if (n == cap) {
				cap = cap != 0 ? cap * 2 : 4096;
				if ((q = realloc(v, cap * sizeof(*v))) == NULL) {
					free(v);
					return -ENOMEM;
				}
				v = q;
			}
			v[n].name = dot + 1;
			v[n++].rule = line;
		}
	}
	qsort(v, n, sizeof(*v), psl_below_cmp);
	/* Keep the first (shortest rule) of each name. */
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (m == 0 || strcmp(v[m - 1].name, v[i].name) != 0)
			v[m++] = v[i];
	psl_belows = v;
	psl_nbelows = m;
	return 0;
}

static void
psl_init(void)
{
	size_t len = 0;
	FILE *f;
	int r;

	if ((r = psl_read(AL_PSL_FILE, &psl_text, &len)) == 0 &&
	    (f = fmemopen(psl_text, len, "r")) != NULL) {
		psl_loaded = psl_load_fp(f);
		fclose(f);
		if (psl_loaded != NULL && (r = psl_index(psl_text)) == 0) {
			psl_ctx = psl_loaded;
			return;
		}
		if (r == 0)
			r = -EINVAL;	/* libpsl could not parse it */
	} else if (r == 0) {
		r = -errno;
	}
	/* No usable list file: libpsl's own data (the newer of its
	 * built-in list and its distribution file), and every wildcard
	 * match gets checked since nothing is known to be clear. */
	psl_error = -r;
	free(psl_text);
	psl_text = NULL;
	psl_free(psl_loaded);
	psl_loaded = NULL;
	if ((psl_ctx = psl_latest(NULL)) == NULL)
		psl_ctx = psl_builtin();
}

const psl_ctx_t *
al_psl_ctx(void)
{
	pthread_once(&psl_once, psl_init);
	return psl_ctx;
}

bool
al_psl_public_suffix(const char *name)
{
	const psl_ctx_t *ctx = al_psl_ctx();

	/* Without data, any name could be a public suffix: refuse all. */
	if (ctx == NULL)
		return true;
	/* PSL_TYPE_ANY keeps the "*" rule: every single label (a TLD,
	 * known or not) counts as a public suffix. */
	return psl_is_public_suffix2(ctx, name, PSL_TYPE_ANY) != 0;
}

int
al_psl_beneath(const char *name, const char **rule)
{
	struct psl_below key = { .name = name, .rule = "" }, *b;

	*rule = NULL;
	(void)al_psl_ctx();
	if (psl_belows == NULL)
		return -(psl_error != 0 ? psl_error : EINVAL);
	for (size_t lo = 0, hi = psl_nbelows; lo < hi;) {
		size_t mid = lo + (hi - lo) / 2;
		int c;
		b = &psl_belows[mid];
		if ((c = strcmp(key.name, b->name)) == 0) {
			*rule = b->rule;
			return 1;
		}
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return 0;
}
