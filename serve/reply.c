/*
 * HTTP answers of the service (internal.h), over conn.c: every reply
 * carries its content type and Cache-Control: no-store; JSON is one line;
 * errors are {"error": why} with why made valid UTF-8 (and "code", a
 * stable name, where the failure has one: docker-unavailable). A reply
 * that cannot be built becomes a 500. A 4xx counts against the refusal
 * rate of the tenant the request named (issue 39: refused bodies cost the
 * service too, so a tenant may send only so many a minute).
 */
#include "serve/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/util.h"
#include "runner/runner.h"
#include "serve/conn.h"

void
serve_reply_note(struct serve_conn *c, struct serve_server *s, size_t tenant)
{
	serve_conn_set_note(c, s, tenant);
}

/* Counts a 4xx against the request's tenant. */
static void
count_refusal(struct serve_conn *c, int code)
{
	struct serve_server *s;
	size_t tenant;

	if (code < 400 || code >= 500 || code == 499 ||
	    (s = serve_conn_note(c, &tenant)) == NULL)
		return;
	tenant &= 0xffff;
	serve_tenants_refused(&s->tenants, tenant,
	    time_mono_ms(), s->c->serve.refusals_per_min);
}

void
serve_reply(struct serve_conn *c, int code, const char *type,
    const char *body, size_t len)
{
	count_refusal(c, code);
	serve_conn_reply(c, code, type, body != NULL ? body : "",
	    body != NULL ? len : 0);
}

void
serve_reply_json(struct serve_conn *c, int code, const cJSON *o)
{
	char *line = o != NULL ? json_print_line(o) : NULL;

	if (line == NULL) {
		serve_conn_reply(c, 500, "application/json",
		    "{\"error\":\"out of memory\"}\n", 26);
		return;
	}
	count_refusal(c, code);
	serve_conn_reply_take(c, code, "application/json", line, strlen(line));
}

void
serve_reply_error(struct serve_conn *c, int code, const char *why)
{
	count_refusal(c, code);
	serve_conn_reply_error(c, code, why);
}

void
serve_reply_error_code(struct serve_conn *c, int code, const char *why,
    const char *what)
{
	cJSON *o;

	if (what == NULL) {
		serve_reply_error(c, code, why);
		return;
	}
	/* serve_reply_json counts the refusal; NULL there is a 500. */
	if ((o = cJSON_CreateObject()) != NULL && (json_add_bytes(o, "error",
	    why, strlen(why)) < 0 || cJSON_AddStringToObject(o, "code",
	    what) == NULL)) {
		cJSON_Delete(o);
		o = NULL;
	}
	serve_reply_json(c, code, o);
	cJSON_Delete(o);
}

const char *
serve_reply_code(int rc)
{
	return rc == -EHOSTUNREACH ? RUNNER_DOCKER_UNAVAILABLE : NULL;
}

int
serve_reply_status(int rc, const char **reason)
{
	switch (rc) {
	case -EINVAL:
		/* The request's fault, found by the runner: e.g. a policy
		 * the proxy does not have. */
		*reason = "Bad Request";
		return 400;
	case -EPERM: case -ESTALE: case -ENOENT: case -ENETDOWN:
	case -EHOSTUNREACH: case -ECONNREFUSED:
	case -EBUSY:	/* no host-wide run slot in limits.queue_timeout_s */
		*reason = "Service Unavailable";
		return 503;
	}
	*reason = "Internal Server Error";
	return 500;
}
