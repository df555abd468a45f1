/*
 * A session's work items (sessions_int.h) and the threads that carry them
 * out, off the loop: start a session's container (its files staged to a
 * private directory first), run one call in it and build its reply line
 * there, or end it (runner/session.h). Each thread hands its item back to
 * the loop through the item's event (the done callback sessions.c gives),
 * where its reply is sent. Admission, the table and the replies are
 * sessions.c's.
 */
#include "serve/sessions_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "common/util.h"
#include "runner/session.h"
#include "serve/listen.h"

/* On the thread: a call's result with its session id, printed, its last
 * '}' kept for the loop to replace (session_ended is the loop's to say). */
static void
call_build(struct session_work *w)
{
	cJSON *o = runner_result_to_json(&w->res);
	char *s, *grown;

	if (o == NULL || cJSON_AddStringToObject(o, "session",
	    SE_ID(w->se)) == NULL || (s = cJSON_PrintUnformatted(o)) ==
	    NULL) {
		cJSON_Delete(o);
		return;
	}
	cJSON_Delete(o);
	w->line_len = strlen(s);
	if ((grown = realloc(s, w->line_len + LINE_ROOM)) == NULL) {
		free(s);
		return;
	}
	w->line = grown;
}

static void *
work_thread(void *arg)
{
	struct session_work *w = arg;
	struct serve_session *se = w->se;
	struct runner_session_opts o = { .net = se->net, .label = w->label,
	    .policy = se->policy[0] != '\0' ? se->policy : NULL,
	    .profile = se->profile[0] != '\0' ? se->profile : NULL,
	    .max_lifetime_s = se->e->life_s, .cancel = &se->e->cancel };
	struct runner_request rq = { 0 };
	struct stage_dir st = { .nin = 0 };

	switch (w->kind) {
	case WORK_START:
		/* Written to a private directory, then copied under the
		 * state dir by the start (files_stage_in), as a run's. */
		w->rc = stage_write(w->ss->tmp_dir, "cordon-session", w->files,
		    w->nfiles, &st, w->err, sizeof(w->err));
		o.in = (const char *const *)st.in;
		o.nin = st.nin;
		if (w->rc == 0)
			w->rc = runner_session_start(w->ss->c, &o, &w->rs,
			    w->err, sizeof(w->err));
		stage_dir_cleanup(&st);
		break;
	case WORK_CALL:
		rq.code = w->call.code;
		rq.code_len = w->call.code_len;
		rq.timeout_s = w->call.timeout_s;
		rq.max_output = w->call.max_output;
		rq.keep = w->call.keep;
		rq.cancel = &se->e->cancel;
		w->rc = runner_session_call(SE_RS(se), &rq, &w->res, w->err,
		    sizeof(w->err));
		w->ended = runner_session_ended(SE_RS(se));
		if (w->rc == 0)
			call_build(w);
		break;
	case WORK_END:
		runner_session_free(w->rs);
		w->rs = NULL;
		break;
	}
	event_active(w->done_ev, 0, 0);
	return NULL;
}

void
serve_sessions_work_free(struct session_work *w)
{
	if (w->done_ev != NULL)
		event_free(w->done_ev);
	jobs_req_cleanup(&w->call);
	runner_result_cleanup(&w->res);
	stage_files_free(w->files, w->nfiles);
	free(w->line);
	free(w);
}

int
serve_sessions_work_spawn(struct session_work *w,
    void (*done)(evutil_socket_t, short, void *))
{
	int rc;

	if ((w->done_ev = event_new(w->ss->base, -1, 0, done, w)) ==
	    NULL)
		return -ENOMEM;
	if ((rc = serve_listen_thread_spawn(work_thread, w)) < 0)
		return rc;
	w->ss->threads++;
	return 0;
}

struct session_work *
serve_sessions_work_new(struct serve_sessions *ss, struct serve_session *se,
    enum work_kind kind, struct serve_conn *c)
{
	struct session_work *w = calloc(1, sizeof(*w));

	if (w == NULL)
		return NULL;
	w->kind = kind;
	w->ss = ss;
	w->se = se;
	w->tenant = SE_TENANT(se);
	w->c = c;
	w->t0_ms = time_mono_ms();
	return w;
}
