/*
 * `cordon image build|show`: builds the pinned sandbox image with no
 * registry (see image.h) or prints the current record.
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
	fprintf(stderr, "usage: cordon image build [--force]\n"
	    "       cordon image show\n");
	return 2;
}

int
cmd_image(int argc, char **argv)
{
	struct config c;
	struct image_record rec;
	char err[512];
	bool rebuilt = false;

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
		    "\"built_at\":\"%s\"}\n", rec.id, rec.name, rec.inputs,
		    rec.built_at);
		return 0;
	}
	if (strcmp(argv[1], "build") == 0) {
		struct image_build_opts o = { .progress = say };
		if (argc == 3 && strcmp(argv[2], "--force") == 0)
			o.force = true;
		else if (argc != 2)
			return image_usage();
		if (image_build(&c, &o, &rec, &rebuilt, err, sizeof(err)) < 0) {
			fprintf(stderr, "cordon image: %s\n", err);
			return 1;
		}
		fprintf(stderr, "cordon image: %s %s (%s)\n",
		    rebuilt ? "built" : "kept", rec.id, rec.name);
		printf("%s\n", rec.id);
		return 0;
	}
	return image_usage();
}
