/*
 * A cold run's container over the Engine API socket (apirun.h): create,
 * hijacked attach, wait (next-exit, registered before the start), start,
 * then one poll loop over the attach stream (stdin written, half-closed;
 * frames demultiplexed into the capped buffers) and the wait's answer.
 */
#include "runner/apirun.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/util.h"
#include "runner/dockerapi.h"
#include "runner/dockerframe.h"

#define APIRUN_TICK_MS 50	/* the cancel flag is looked at this often */

struct apirun {
	char *sock, *name, *body;
	unsigned char *in;
	size_t in_len, in_off;
	struct cbuf *out, *err;
	proc_output_fn on_output;
	void *on_output_arg;
	int attach_fd, wait_fd;
	bool created, in_shut, attach_done, wait_done, broken;
	bool stop_at_cap, cut, discard, hold_input;
	int http_status, exit_code;
	struct dockerapi_frames frames;
	char *pending;			/* attach bytes read with its head */
	size_t pending_len;
	char *wbuf;			/* the wait's answer so far */
	size_t wlen, wcap;
	struct proc_times t;
};

int
apirun_new(const struct apirun_opts *o, struct apirun **out)
{
	struct apirun *a;

	*out = NULL;
	if (!dockerapi_name_ok(o->name))
		return -EINVAL;
	if ((a = calloc(1, sizeof(*a))) == NULL)
		return -ENOMEM;
	a->attach_fd = a->wait_fd = -1;
	a->exit_code = -1;
	dockerapi_frames_init(&a->frames);
	a->sock = strdup(o->sock);
	a->name = strdup(o->name);
	a->body = strdup(o->body);
	a->in = malloc(o->input_len + 1);
	a->out = cbuf_new_keep(o->stdout_max, o->stdout_keep);
	a->err = cbuf_new_keep(o->stderr_max, o->stderr_keep);
	if (a->sock == NULL || a->name == NULL || a->body == NULL ||
	    a->in == NULL || a->out == NULL || a->err == NULL) {
		apirun_free(a);
		return -ENOMEM;
	}
	if (o->input_len > 0)
		memcpy(a->in, o->input, o->input_len);
	a->in_len = o->input_len;
	a->stop_at_cap = o->stop_at_cap;
	a->hold_input = o->hold_input;
	*out = a;
	return 0;
}

void
apirun_free(struct apirun *a)
{
	if (a == NULL)
		return;
	if (a->attach_fd >= 0)
		close(a->attach_fd);
	if (a->wait_fd >= 0)
		close(a->wait_fd);
	if (a->in != NULL)
		explicit_bzero(a->in, a->in_len);
	free(a->in);
	free(a->sock);
	free(a->name);
	free(a->body);
	free(a->pending);
	free(a->wbuf);
	cbuf_free(a->out);
	cbuf_free(a->err);
	free(a);
}

static bool
cancelled(const atomic_int *cancel)
{
	return cancel != NULL && atomic_load(cancel) != 0;
}

/* The answer of a refused step, as err: "STEP: HTTP N: message". */
static int
refused(struct apirun *a, const char *step, struct dockerapi_resp *r,
    char *err, size_t errlen)
{
	char msg[400];

	a->http_status = r->status;
	dockerapi_error_message(r, msg, sizeof(msg));
	snprintf(err, errlen, "docker API %s: HTTP %d: %s", step, r->status,
	    msg);
	dockerapi_resp_cleanup(r);
	return -EIO;
}

/* Grows the wait buffer and reads into it: bytes read, 0 at EOF, or an
 * errno (-EAGAIN: nothing now). */
static ssize_t
wait_read(struct apirun *a)
{
	ssize_t n;

	if (a->wcap - a->wlen < 4096) {
		size_t cap = a->wcap == 0 ? 8192 : a->wcap * 2;
		char *nb;
		if (cap > DOCKERAPI_HEAD_MAX + 65536)
			return -E2BIG;
		if ((nb = realloc(a->wbuf, cap)) == NULL)
			return -ENOMEM;
		a->wbuf = nb;
		a->wcap = cap;
	}
	n = recv(a->wait_fd, a->wbuf + a->wlen, a->wcap - a->wlen, 0);
	if (n < 0)
		return errno == EINTR ? -EAGAIN : -errno;
	a->wlen += (size_t)n;
	return n;
}

/* One socket-and-request step that waits for the answer's head: the
 * attach (upgrade: *leftover gets the stream's first bytes) or the wait
 * (its head only; the rest comes after the exit). */
static int
open_stream(struct apirun *a, const char *path, bool upgrade, int *fdp,
    int64_t deadline, const atomic_int *cancel, char *err, size_t errlen)
{
	struct dockerapi_resp r;
	char *req = NULL, buf[4096];
	size_t reqlen, len = 0, hl;
	const char *step = upgrade ? "attach" : "wait";
	int fd = -1, rc;
	ssize_t n;

	if ((rc = dockerapi_request_format("POST", path, NULL, upgrade, &req,
	    &reqlen)) < 0 || (rc = dockerapi_connect(a->sock, &fd)) < 0 ||
	    (rc = dockerapi_send_all(fd, req, reqlen, deadline)) < 0)
		goto bad;
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		int64_t left = deadline - time_mono_ms();
		rc = -ETIMEDOUT;
		if (left <= 0)
			goto bad;
		rc = -EINTR;
		if (cancelled(cancel))
			goto bad;
		if (poll(&p, 1, left < APIRUN_TICK_MS ? (int)left :
		    APIRUN_TICK_MS) <= 0)
			continue;
		n = recv(fd, buf + len, sizeof(buf) - 1 - len, 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		rc = n < 0 ? -errno : -EPIPE;
		if (n <= 0)
			goto bad;
		len += (size_t)n;
		rc = dockerapi_response_parse(buf, len, false,
		    DOCKERAPI_HEAD_ONLY, 0, &r);
		if (rc < 0)
			goto bad;
		if (rc == 1)
			break;
		rc = -E2BIG;
		if (len >= sizeof(buf) - 1)
			goto bad;
	}
	if (upgrade ? r.status != 101 && r.status != 200 : r.status != 200) {
		free(req);
		close(fd);
		return refused(a, step, &r, err, errlen);
	}
	hl = r.head_len;
	dockerapi_resp_cleanup(&r);
	/* The attach's first stream bytes, or the wait's answer so far
	 * (wait_poll parses it whole, from its head). */
	if (upgrade && len > hl) {
		rc = -ENOMEM;
		if ((a->pending = malloc(len - hl)) == NULL)
			goto bad;
		memcpy(a->pending, buf + hl, len - hl);
		a->pending_len = len - hl;
	} else if (!upgrade) {
		rc = -ENOMEM;
		if ((a->wbuf = malloc(sizeof(buf))) == NULL)
			goto bad;
		memcpy(a->wbuf, buf, len);
		a->wlen = len;
		a->wcap = sizeof(buf);
	}
	free(req);
	*fdp = fd;
	return 0;
bad:
	if (rc != -ETIMEDOUT && rc != -EINTR)
		snprintf(err, errlen, "docker API %s: %s", step,
		    strerror(-rc));
	free(req);
	if (fd >= 0)
		close(fd);
	return rc;
}

static void attach_write(struct apirun *a);

int
apirun_start(struct apirun *a, int64_t deadline_ms, const atomic_int *cancel,
    char *err, size_t errlen)
{
	struct dockerapi_resp r;
	char path[200];
	int rc;

	snprintf(path, sizeof(path), "/containers/create?name=%s", a->name);
	if ((rc = dockerapi_call(a->sock, "POST", path, a->body, deadline_ms,
	    &r)) < 0) {
		if (rc != -ETIMEDOUT)
			snprintf(err, errlen, "docker API create: %s",
			    strerror(-rc));
		return rc;
	}
	if (r.status != 201)
		return refused(a, "create", &r, err, errlen);
	a->created = true;
	dockerapi_resp_cleanup(&r);
	snprintf(path, sizeof(path), "/containers/%s/attach?stream=1&stdin=1&"
	    "stdout=1&stderr=1", a->name);
	if ((rc = open_stream(a, path, true, &a->attach_fd, deadline_ms,
	    cancel, err, errlen)) < 0)
		return rc;
	/* Registered (its head answered) before the start: the exit it
	 * reports is this start's. */
	snprintf(path, sizeof(path), "/containers/%s/wait?condition=next-exit",
	    a->name);
	if ((rc = open_stream(a, path, false, &a->wait_fd, deadline_ms,
	    cancel, err, errlen)) < 0)
		return rc;
	if (cancelled(cancel))
		return -EINTR;
	/* As `docker run -i`: stdin flows from the attach on; what the
	 * socket takes now waits in the container's stdin for the start.
	 * Held (proxy mode): not a byte before apirun_communicate. */
	if (!a->hold_input)
		attach_write(a);
	snprintf(path, sizeof(path), "/containers/%s/start", a->name);
	if ((rc = dockerapi_call(a->sock, "POST", path, NULL, deadline_ms,
	    &r)) < 0) {
		if (rc != -ETIMEDOUT)
			snprintf(err, errlen, "docker API start: %s",
			    strerror(-rc));
		return rc;
	}
	if (r.status != 204 && r.status != 304)
		return refused(a, "start", &r, err, errlen);
	dockerapi_resp_cleanup(&r);
	return 0;
}

static void
on_frame(void *arg, int stream, const void *data, size_t len)
{
	struct apirun *a = arg;
	struct cbuf *b = stream == 1 ? a->out : a->err;

	if (a->discard || a->cut)
		return;
	if (a->t.first_output == 0)
		a->t.first_output = time_mono_ms();
	if (a->on_output != NULL)
		a->on_output(a->on_output_arg, stream, data, len);
	(void)cbuf_append(b, data, len);
	if (a->stop_at_cap && cbuf_keep_mode(b) == CBUF_KEEP_HEAD &&
	    cbuf_truncated(b))
		a->cut = true;
}

static void
feed(struct apirun *a, const void *data, size_t len)
{
	if (dockerapi_frames_feed(&a->frames, data, len, on_frame, a) < 0)
		a->broken = true;
}

static void
attach_end(struct apirun *a)
{
	if (dockerapi_frames_end(&a->frames) < 0)
		a->broken = true;
	a->attach_done = true;
	a->t.outputs_closed = time_mono_ms();
	if (!a->in_shut) {
		a->in_shut = true;
		a->t.stdin_closed = time_mono_ms();
	}
}

static void
attach_write(struct apirun *a)
{
	ssize_t n = 0;

	if (a->in_off < a->in_len)
		n = send(a->attach_fd, a->in + a->in_off, a->in_len - a->in_off,
		    MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0)
		a->in_off += (size_t)n;
	/* Done, or the job closed its stdin (EPIPE): stdin's EOF. */
	if (n < 0 || a->in_off == a->in_len) {
		(void)shutdown(a->attach_fd, SHUT_WR);
		a->in_shut = true;
		a->t.stdin_closed = time_mono_ms();
	}
}

static void
attach_read(struct apirun *a)
{
	char buf[65536];

	for (int i = 0; i < 16; i++) {
		ssize_t n = recv(a->attach_fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n > 0) {
			feed(a, buf, (size_t)n);
			if (a->cut)
				return;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n < 0)
			a->broken = true;
		attach_end(a);
		return;
	}
}

/* The wait's answer: {"StatusCode":N,"Error":null|{"Message":"..."}}. */
static void
wait_answer(struct apirun *a, const struct dockerapi_resp *r)
{
	cJSON *o = cJSON_ParseWithLength(r->body, r->body_len);
	const cJSON *sc = cJSON_GetObjectItemCaseSensitive(o, "StatusCode");
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "Error");
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "Message");

	if (r->status == 200 && cJSON_IsNumber(sc) && sc->valuedouble >= 0 &&
	    sc->valuedouble <= 255 && (e == NULL || cJSON_IsNull(e) ||
	    (cJSON_IsString(m) && m->valuestring[0] == '\0')))
		a->exit_code = (int)sc->valuedouble;
	cJSON_Delete(o);
}

static void
wait_poll(struct apirun *a)
{
	struct dockerapi_resp r;
	ssize_t n;
	int rc;

	for (;;) {
		n = wait_read(a);
		if (n == -EAGAIN)
			return;
		rc = dockerapi_response_parse(a->wbuf, a->wlen, n <= 0, 0,
		    65536, &r);
		if (rc == 0)
			continue;
		if (rc == 1) {
			wait_answer(a, &r);
			dockerapi_resp_cleanup(&r);
		}
		a->wait_done = true;
		a->t.exited = time_mono_ms();
		close(a->wait_fd);
		a->wait_fd = -1;
		return;
	}
}

int
apirun_communicate(struct apirun *a, int64_t deadline_ms,
    const atomic_int *cancel)
{
	struct pollfd p[2];
	int64_t left;

	if (a->pending != NULL) {
		feed(a, a->pending, a->pending_len);
		free(a->pending);
		a->pending = NULL;
	}
	if (!a->in_shut && a->in_len == 0)
		attach_write(a);
	while (!a->attach_done || !a->wait_done) {
		if (a->cut && a->attach_fd >= 0) {
			/* Nothing more is wanted: the daemon's writes fail
			 * from here instead of waiting for a reader. */
			apirun_close(a);
			return -EFBIG;
		}
		if (a->attach_fd < 0 && a->wait_fd < 0)
			return -EPIPE;		/* closed: nothing to wait for */
		if (cancelled(cancel))
			return -EINTR;
		left = deadline_ms - time_mono_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		p[0] = (struct pollfd){ a->attach_done ? -1 : a->attach_fd,
		    (short)(POLLIN | (a->in_shut ? 0 : POLLOUT)), 0 };
		p[1] = (struct pollfd){ a->wait_done ? -1 : a->wait_fd, POLLIN,
		    0 };
		if (poll(p, 2, left < APIRUN_TICK_MS ? (int)left :
		    APIRUN_TICK_MS) <= 0)
			continue;
		if (p[0].revents & POLLOUT)
			attach_write(a);
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR))
			attach_read(a);
		if (p[1].revents & (POLLIN | POLLHUP | POLLERR))
			wait_poll(a);
	}
	if (a->attach_fd >= 0) {
		close(a->attach_fd);
		a->attach_fd = -1;
	}
	if (a->broken)
		a->exit_code = -1;
	return 0;
}

void
apirun_discard(struct apirun *a)
{
	a->discard = true;
	if (!a->in_shut && a->attach_fd >= 0)
		(void)shutdown(a->attach_fd, SHUT_WR);
	a->in_shut = true;
}

void
apirun_close(struct apirun *a)
{
	if (a->attach_fd >= 0) {
		close(a->attach_fd);
		a->attach_fd = -1;
	}
	if (a->wait_fd >= 0) {
		close(a->wait_fd);
		a->wait_fd = -1;
	}
}

int
apirun_exit_code(const struct apirun *a)
{
	return a->exit_code;
}

bool
apirun_created(const struct apirun *a)
{
	return a->created;
}

int
apirun_http_status(const struct apirun *a)
{
	return a->http_status;
}

struct cbuf *
apirun_stdout(struct apirun *a)
{
	return a->out;
}

struct cbuf *
apirun_stderr(struct apirun *a)
{
	return a->err;
}

void
apirun_get_times(const struct apirun *a, struct proc_times *t)
{
	*t = a->t;
}

void
apirun_set_output(struct apirun *a, proc_output_fn fn, void *arg)
{
	a->on_output = fn;
	a->on_output_arg = arg;
}
