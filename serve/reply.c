/*
 * HTTP answers of the service (internal.h): every reply carries its content
 * type and Cache-Control: no-store; JSON is one line; errors are
 * {"error": why} with why made valid UTF-8. A reply that cannot be built
 * becomes a bodiless 500.
 */
#include "serve/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "common/json.h"
#include "runner/runner.h"

void
serve_reply(struct evhttp_request *req, int code, const char *reason,
    const char *type, const char *body, size_t len)
{
	struct evbuffer *b = evbuffer_new();
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);

	evhttp_add_header(h, "Content-Type", type);
	evhttp_add_header(h, "Cache-Control", "no-store");
	if (b != NULL && body != NULL && evbuffer_add(b, body, len) < 0) {
		evbuffer_free(b);
		b = NULL;
	}
	if (b == NULL) {
		evhttp_send_reply(req, 500, "Internal Server Error", NULL);
		return;
	}
	evhttp_send_reply(req, code, reason, b);
	evbuffer_free(b);
}

void
serve_reply_json(struct evhttp_request *req, int code, const char *reason,
    const cJSON *o)
{
	char *line = o != NULL ? json_print_line(o) : NULL;

	if (line == NULL) {
		serve_reply(req, 500, "Internal Server Error",
		    "application/json", "{\"error\":\"out of memory\"}\n", 26);
		return;
	}
	serve_reply(req, code, reason, "application/json", line, strlen(line));
	free(line);
}

void
serve_reply_error_code(struct evhttp_request *req, int code,
    const char *reason, const char *why, const char *what)
{
	cJSON *o = cJSON_CreateObject();

	if (o != NULL && (json_add_bytes(o, "error", why, strlen(why)) < 0 ||
	    (what != NULL && cJSON_AddStringToObject(o, "code", what) ==
	    NULL))) {
		cJSON_Delete(o);
		o = NULL;
	}
	serve_reply_json(req, code, reason, o);
	cJSON_Delete(o);
}

void
serve_reply_error(struct evhttp_request *req, int code, const char *reason,
    const char *why)
{
	serve_reply_error_code(req, code, reason, why, NULL);
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
