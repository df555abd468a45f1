/*
 * Internal to the configuration (common/config*.c): config.c holds the
 * defaults, the checks across keys and the loading; config_keys.c the
 * table of every key and applying a file's JSON to it; config_profile.c
 * the image profiles, languages and tenants' permissions.
 */
#ifndef CORDON_COMMON_CONFIG_INTERNAL_H
#define CORDON_COMMON_CONFIG_INTERNAL_H

#include <stddef.h>

#include "common/config.h"
#include "common/json.h"

/* err gets "NAME: " and the message; -EINVAL. */
int config_fail(char *err, size_t errlen, const char *name, const char *fmt,
    ...) __attribute__((format(printf, 4, 5)));

/* config_keys.c */
int config_apply(struct config *c, const cJSON *root, const char *name,
    char *err, size_t errlen);

/* config_profile.c: the built-in profiles into img; and, once the file
 * is applied, image.* mirrored into the minimal profile, the others'
 * image names and every profile's languages (-ENAMETOOLONG when a derived
 * image name does not fit). */
void config_profiles_default(struct config_image *img);
int config_profiles_finish(struct config_image *img);
/* config_profile.c: SECTION.pool_profiles ("serve", "mcp") applied into
 * v[*n]; checked once the whole file is applied. 0 or -EINVAL. */
int config_pool_profiles_apply(struct config_pool_profile *v, size_t *n,
    const cJSON *obj, const char *section, const char *name, char *err,
    size_t errlen);
int config_pool_profiles_check(const struct config *c,
    const struct config_pool_profile *v, size_t n, const char *section,
    const char *name, char *err, size_t errlen);

#endif
