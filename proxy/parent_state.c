/*
 * The privileged parent's state file (--state, parent.h): the live runs,
 * each as the register line that made it (its token included, so the file
 * is root's and private) and the restarts it lived through, written on
 * every change and read at start, so that a restarted parent knows its
 * predecessor's runs. Apart from parent_ops.c: a file format with its own
 * checks, and the one writer of run lines that the greeting also uses.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "proxy/ctl.h"
#include "proxy/ctlsrv.h"
#include "proxy/parent.h"
#include "proxy/runs.h"

#define STATE_MAX	(16u * 1024 * 1024)

/* A run as the register line that made it (with its token: the caller
 * wipes and frees it), or NULL (no memory). Greeting a new child and the
 * state file both hand runs on this way. */
char *
proxy_parent_run_line(const struct proxy_run *r)
{
	struct proxy_ctl_req req;
	char *line;

	proxy_ctl_req_reset(&req);
	req.op = PROXY_CTL_REGISTER;
	snprintf(req.run, sizeof(req.run), "%s", r->id);
	snprintf(req.addr_text, sizeof(req.addr_text), "%s", r->addr_text);
	snprintf(req.policy, sizeof(req.policy), "%s", r->policy);
	snprintf(req.token, sizeof(req.token), "%s", r->token);
	req.deadline_ms = r->deadline_ms;
	req.max_conns = r->lim.max_conns;
	req.bytes_up = (int64_t)r->lim.bytes_up;
	req.bytes_down = (int64_t)r->lim.bytes_down;
	line = proxy_ctl_format(&req);
	explicit_bzero(req.token, sizeof(req.token));
	return line;
}

struct state_buf {
	char *p;
	size_t len, cap;
	bool fail;
};

static void
state_line(struct proxy_run *r, void *arg)
{
	struct state_buf *b = arg;
	char *line, *np;
	size_t n;

	if (b->fail || r->expired || r->deadline_ms <= time_wall_ms())
		return;
	if ((line = proxy_parent_run_line(r)) == NULL) {
		b->fail = true;
		return;
	}
	n = strlen(line) + 16;
	if (b->len + n >= b->cap) {
		size_t cap = (b->cap + n) * 2;
		if ((np = realloc(b->p, cap)) == NULL) {
			b->fail = true;
			free(line);
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	/* "RESTARTS LINE": the restarts the run lived through so far. */
	b->len += (size_t)snprintf(b->p + b->len, b->cap - b->len, "%u %s",
	    r->restarts, line);
	explicit_bzero(line, strlen(line));
	free(line);
}

void
proxy_parent_state_save(struct parent *p)
{
	struct state_buf b = { NULL, 0, 0, false };
	char tmp[PATH_MAX];
	int fd;

	if (p->cfg.state == NULL || p->runs == NULL)
		return;
	proxy_runs_each(p->runs, state_line, &b);
	snprintf(tmp, sizeof(tmp), "%s.tmp", p->cfg.state);
	fd = b.fail ? -1 : open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
	    O_NOFOLLOW, 0600);
	if (fd < 0 || (b.len > 0 && write(fd, b.p, b.len) != (ssize_t)b.len) ||
	    fchmod(fd, 0600) != 0 || close(fd) != 0 ||
	    rename(tmp, p->cfg.state) != 0) {
		log_warn("--state %s: not written", p->cfg.state);
		if (fd >= 0)
			(void)unlink(tmp);
	}
	if (b.p != NULL)
		explicit_bzero(b.p, b.len);
	free(b.p);
}

int
proxy_parent_state_load(struct parent *p)
{
	struct proxy_run_limits def = { .max_conns = p->cfg.run_max_conns };
	struct proxy_ctl_req req;
	struct proxy_run *run;
	char *text = NULL, *line, *save = NULL, *sp, err[160];
	size_t len = 0, n = 0;
	struct stat st;
	int rc;

	if (p->cfg.state == NULL)
		return 0;
	rc = util_read_file(p->cfg.state, STATE_MAX, &text, &len);
	if (rc == -ENOENT)
		return 0;
	/* Tokens: root's own file only. */
	if (rc == 0 && (stat(p->cfg.state, &st) != 0 || st.st_uid != geteuid() ||
	    (st.st_mode & 077) != 0)) {
		log_warnx("--state %s: not owned by us or not private: ignored",
		    p->cfg.state);
		rc = -EPERM;
	}
	for (line = rc == 0 ? strtok_r(text, "\n", &save) : NULL; line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		unsigned long restarts = strtoul(line, &sp, 10);
		char *e;
		if (sp == line || *sp != ' ' || restarts > 1000000 ||
		    proxy_ctl_parse(sp + 1, strlen(sp + 1), &req, err,
		    sizeof(err)) != 0 || req.op != PROXY_CTL_REGISTER) {
			log_warnx("--state %s: a bad line: skipped", p->cfg.state);
			continue;
		}
		e = proxy_ctl_runs_add(p->runs, p->set, &req, &def,
		    time_wall_ms(), &run);
		explicit_bzero(req.token, sizeof(req.token));
		if (e != NULL) {	/* past its deadline, policy gone... */
			free(e);
			continue;
		}
		/* This parent's predecessor died: so did its child. */
		run->restarts = (unsigned)restarts + 1;
		n++;
	}
	if (text != NULL)
		explicit_bzero(text, len);
	free(text);
	if (rc == 0)
		log_info("--state %s: %zu live runs restored", p->cfg.state, n);
	proxy_parent_state_save(p);
	return rc;
}
