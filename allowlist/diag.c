/*
 * Allowlist diagnostics: every error and warning of a load as
 * "FILE:LINE: message", kept up to ALLOWLIST_DIAG_MAX and counted beyond.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allowlist/internal.h"

void
allowlist_diag_init(struct allowlist_diag *diag)
{
	memset(diag, 0, sizeof(*diag));
}

void
allowlist_diag_cleanup(struct allowlist_diag *diag)
{
	if (diag == NULL)
		return;
	for (size_t i = 0; i < diag->count; i++) {
		free(diag->items[i].file);
		free(diag->items[i].message);
		free(diag->items[i].text);
	}
	free(diag->items);
	memset(diag, 0, sizeof(*diag));
}

void
al_diag_add(struct allowlist_diag *diag, bool warning, const char *file,
    unsigned line, const char *fmt, ...)
{
	struct allowlist_diag_item it = { .warning = warning, .line = line };
	struct allowlist_diag_item *items;
	va_list ap;
	int r;

	if (diag == NULL)
		return;
	if (warning)
		diag->warnings++;
	else
		diag->errors++;
	if (diag->count >= ALLOWLIST_DIAG_MAX) {
		diag->dropped++;
		return;
	}
	va_start(ap, fmt);
	r = vasprintf(&it.message, fmt, ap);
	va_end(ap);
	if (r < 0) {
		it.message = NULL;
		goto fail;
	}
	if ((it.file = strdup(file)) == NULL)
		goto fail;
	if (line > 0)
		r = asprintf(&it.text, "%s:%u: %s%s", file, line,
		    warning ? "warning: " : "", it.message);
	else
		r = asprintf(&it.text, "%s: %s%s", file,
		    warning ? "warning: " : "", it.message);
	if (r < 0) {
		it.text = NULL;
		goto fail;
	}
	/* Grows one at a time up to a small cap: no need to be clever. */
	items = realloc(diag->items, (diag->count + 1) * sizeof(*items));
	if (items == NULL)
		goto fail;
	diag->items = items;
	diag->items[diag->count++] = it;
	return;
fail:
	free(it.message);
	free(it.file);
	free(it.text);
	diag->dropped++;
}

void
al_diag_sort_from(struct allowlist_diag *diag, size_t start)
{
	/* Insertion sort: stable, and count is capped. */
	if (diag == NULL)
		return;
	for (size_t i = start + 1; i < diag->count; i++) {
		struct allowlist_diag_item it = diag->items[i];
		size_t j = i;
		while (j > start && diag->items[j - 1].line > it.line) {
			diag->items[j] = diag->items[j - 1];
			j--;
		}
		diag->items[j] = it;
	}
}
