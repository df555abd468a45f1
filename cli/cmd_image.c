/*
 * `cordon image build [--force|--refresh]|show`: builds the pinned sandbox
 * image with no registry (see image.h) or prints the current record.
 * --refresh fetches the packages again from the mirror (security updates)
 * and re-pins; runs in flight keep their image, and the probe records
 * (which name the image they ran in) no longer let runs through until a
 * probe has run in the new one.
 */
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

static int
image_usage(void)
{
	fprintf(stderr, "usage: cordon image build [--force|--refresh]\n"
	    "       cordon image show\n"
	    "  --refresh  rebuild from the Debian mirror (bypassing the cached "
	    "rootfs)\n             and re-pin; the next run probes the new "
	    "image first\n");
	return 2;
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
image_build_cmd(const struct config *c, int argc, char **argv)
{
	struct image_build_opts o = { .progress = say };
	struct image_record old, rec;
	char err[512];
	bool rebuilt = false;

	if (argc == 3 && (strcmp(argv[2], "--force") == 0 ||
	    strcmp(argv[2], "--refresh") == 0))
		o.force = true;
	else if (argc != 2)
		return image_usage();
	if (image_record_read(c, &old) < 0)
		old.id[0] = '\0';
	if (image_build(c, &o, &rec, &rebuilt, err, sizeof(err)) < 0) {
		fprintf(stderr, "cordon image: %s\n", err);
		return 1;
	}
	fprintf(stderr, "cordon image: %s %s (%s)\n",
	    rebuilt ? "built" : "kept", rec.id, rec.name);
	say_repinned(c, old.id, rec.id);
	printf("%s\n", rec.id);
	return 0;
}

int
cmd_image(int argc, char **argv)
{
	struct config c;
	struct image_record rec;
	char err[512];

	if (argc < 2)
		return image_usage();
	if (config_load(&c, NULL, err, sizeof(err)) < 0) {
		fprintf(stderr, "cordon image: %s\n", err);
		return 1;
	}
	if (strcmp(argv[1], "show") == 0 && argc == 2) {
		if (image_record_read(&c, &rec) < 0) {
			fprintf(stderr, "cordon image: no image recorded in %s "
			    "(run 'cordon image build')\n", c.state_dir);
			return 1;
		}
		printf("{\"id\":\"%s\",\"name\":\"%s\",\"inputs\":\"%s\","
		    "\"built_at\":\"%s\",\"rootfs_at\":\"%s\"}\n", rec.id,
		    rec.name, rec.inputs, rec.built_at, rec.rootfs_at);
		return 0;
	}
	if (strcmp(argv[1], "build") == 0)
		return image_build_cmd(&c, argc, argv);
	return image_usage();
}
