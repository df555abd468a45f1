/*
 * `cordon image build [--profile NAME] [--force|--refresh]|show`: builds
 * the pinned sandbox image of one profile (default minimal; config.h)
 * with no registry (see image.h) or prints its current record.
 * --refresh fetches the packages again from the mirror (security updates)
 * and re-pins; runs in flight keep their image, and the probe records
 * (which name the image they ran in) no longer let runs through until a
 * probe has run in the new one.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/config.h"
#include "cli/cmd.h"
#include "runner/image.h"

static void
say(const char *msg, void *arg)
{
	(void)arg;
	fprintf(stderr, "cordon image: %s\n", msg);
}

/* Points c at profile (config_profile_use), or says why not: -EINVAL. */
static int
image_profile_pick(struct config *c, const char *profile)
{
	char err[256];

	if (config_profile_use(c, profile, NULL, err, sizeof(err)) < 0) {
		fprintf(stderr, "cordon image: %s\n", err);
		return -EINVAL;
	}
	return 0;
}

static int
image_usage_to(FILE *f, int status)
{
	fprintf(f, "usage: cordon image build [--profile NAME] "
	    "[--force|--refresh]\n"
	    "       cordon image show [--profile NAME]\n"
	    "  --profile  minimal (default), data, node, or one of the "
	    "config's\n"
	    "  --refresh  rebuild from the Debian mirror (bypassing the cached "
	    "rootfs)\n             and re-pin; the next run probes the new "
	    "image first\n");
	return status;
}

static int
image_usage(void)
{
	return image_usage_to(stderr, 2);
}

/* What a re-pin means, for the person who asked for it. */
static void
say_repinned(const struct config *c, const char *old, const char *new)
{
	if (strcmp(old, new) == 0)
		return;
	fprintf(stderr, "cordon image: re-pinned %.19s -> %.19s; runs in "
	    "flight keep the old image; the probe records name the old one, "
	    "so %s\n", old[0] != '\0' ? old : "(none)", new,
	    c->probe_auto ? "the next run probes the new image first" :
	    "run 'cordon probe' before the next run");
	if (c->image.id[0] != '\0')
		fprintf(stderr, "cordon image: warning: image.id in %s still "
		    "pins %.19s: runs use that until you change or remove it\n",
		    c->path, c->image.id);
}

static int
image_build_cmd(const struct config *c, bool force)
{
	struct image_build_opts o = { .progress = say, .force = force };
	struct image_record old, rec;
	char err[512];
	bool rebuilt = false;

	if (image_record_read(c, &old) < 0)
		old.id[0] = '\0';
	if (image_build(c, &o, &rec, &rebuilt, err, sizeof(err)) < 0) {
		fprintf(stderr, "cordon image: %s\n", err);
		return 1;
	}
	fprintf(stderr, "cordon image: %s %s (%s, profile %s)\n",
	    rebuilt ? "built" : "kept", rec.id, rec.name,
	    config_profile_current(c));
	say_repinned(c, old.id, rec.id);
	printf("%s\n", rec.id);
	return 0;
}

int
cmd_image(int argc, char **argv)
{
	struct config c;
	struct image_record rec;
	const char *profile = CONFIG_PROFILE_DEFAULT;
	char err[512];
	bool force = false;

	if (cmd_help_asked(argc, argv))
		return image_usage_to(stdout, 0);
	if (argc < 2)
		return image_usage();
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--profile") == 0 && i + 1 < argc)
			profile = argv[++i];
		else if (strcmp(argv[1], "build") == 0 &&
		    (strcmp(argv[i], "--force") == 0 ||
		    strcmp(argv[i], "--refresh") == 0))
			force = true;
		else
			return image_usage();
	}
	if (config_load(&c, NULL, err, sizeof(err)) < 0) {
		fprintf(stderr, "cordon image: %s\n", err);
		return 1;
	}
	if (image_profile_pick(&c, profile) < 0)
		return 1;
	if (strcmp(argv[1], "show") == 0) {
		if (image_record_read(&c, &rec) < 0) {
			fprintf(stderr, "cordon image: no image of profile %s "
			    "recorded in %s (run 'cordon image build --profile "
			    "%s')\n", profile, c.state_dir, profile);
			return 1;
		}
		printf("{\"id\":\"%s\",\"name\":\"%s\",\"inputs\":\"%s\","
		    "\"built_at\":\"%s\",\"rootfs_at\":\"%s\","
		    "\"profile\":\"%s\"}\n", rec.id, rec.name, rec.inputs,
		    rec.built_at, rec.rootfs_at, profile);
		return 0;
	}
	if (strcmp(argv[1], "build") == 0)
		return image_build_cmd(&c, force);
	return image_usage();
}
