/*
 * The kept output of a finished run moved into its result (collect.h),
 * whichever way it was read (the CLI's pipes or the API's attach stream):
 * the --out archive split off and unpacked, each stream re-capped as the
 * host's cap would have kept it.
 */
#include "runner/collect.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "runner/files.h"
#include "runner/outwrap.h"

/* One stream as the --out wrapper relayed it (the same cut as the
 * host's cap), rebuilt as that cap keeps it. */
static int
rekeep(size_t max, enum cbuf_keep keep, const char *kept, size_t len,
    unsigned long long seen, struct cbuf **out)
{
	*out = cbuf_new_rekept(max, keep, kept, len, seen);
	return *out != NULL ? 0 : -ENOMEM;
}

int
runner_collect(const struct config *c, const char *out_dir,
    const char *nonce, size_t max, enum cbuf_keep keep, struct cbuf *out,
    struct cbuf *errb, struct runner_result *res)
{
	struct cbuf *jo = out, *je = errb, *own_o = NULL, *own_e = NULL;
	struct outwrap_split sp;
	bool split = false;
	int rc = 0;

	if (out_dir != NULL) {
		res->want_files = true;
		split = outwrap_split(cbuf_data(out), cbuf_len(out), nonce,
		    &sp) == 0;
		if (!split)
			snprintf(res->files_error, sizeof(res->files_error),
			    "no archive came back (the job was stopped, or "
			    "its output went past the cap)");
		/* Without the marker, what came is all the job's. */
		if ((rc = rekeep(max, keep, cbuf_data(out), split ? sp.stdout_len :
		    cbuf_len(out), split ? sp.out_seen : cbuf_seen(out),
		    &own_o)) < 0)
			goto done;
		jo = own_o;
		if (split && !cbuf_truncated(errb)) {
			if ((rc = rekeep(max, keep, cbuf_data(errb), cbuf_len(errb),
			    sp.err_seen, &own_e)) < 0)
				goto done;
			je = own_e;
		}
	}
	res->out_truncated = cbuf_truncated(jo);
	res->err_truncated = cbuf_truncated(je);
	res->out = cbuf_steal(jo, &res->out_len);
	res->err = cbuf_steal(je, &res->err_len);
	if (res->out == NULL || res->err == NULL) {
		rc = -ENOMEM;
		goto done;
	}
	if (split && (rc = files_unpack_out(c, sp.tar, sp.tar_len,
	    out_dir, res)) < 0 && rc != -ENOMEM) {
		snprintf(res->files_error, sizeof(res->files_error),
		    "cannot write into --out %.60s: %s", out_dir,
		    strerror(-rc));
		rc = 0;
	}
done:
	cbuf_free(own_o);
	cbuf_free(own_e);
	return rc;
}

