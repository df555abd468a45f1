/*
 * Egress per run (egress.h): the client of cordon-proxy's
 * control socket, the register/unregister calls of a proxy-mode run, and
 * the credential's way into the sandbox (prelude program, stdin layout).
 * Request lines are built by proxy/ctl.c, so they follow the daemon's
 * parsing rules exactly.
 */
#include "runner/egress.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/util.h"
#include "proxy/cred.h"
#include "proxy/ctl.h"

/* Kept short: it is on every proxy-mode argv. The credential line has a
 * fixed length (RUNNER_EGRESS_CRED_LEN), so the prelude asks os.read for
 * exactly what is left of it (one read, more only on a short one) and
 * never reads into the job's stdin; a buffered read would swallow its
 * start, and byte-at-a-time reads cost 2-9 ms of syscalls under gVisor.
 * A line of another length, or with a '\n' before its end, is refused
 * before any job code is read. A python job
 * (the arguments "-") runs in this interpreter, as python3 -I - would run
 * it: no second interpreter start (about 100 ms of a warm proxy-mode run
 * under gVisor), a fresh __main__ module with python3 -'s attributes, its
 * sys.argv and sys.orig_argv, and its tracebacks without this prelude's
 * frame (test_egress.c compares the two on a table of jobs); one
 * difference: a coding cookie other than UTF-8, which python3 - refuses
 * on stdin, is honoured. Other jobs are exec'd: an absolute path as it
 * is, anything else by python3 -I. */
#define EGRESS_STR_(x) #x
#define EGRESS_STR(x) EGRESS_STR_(x)

const char runner_egress_prelude[] =
    "import os,sys\n"
    "b=b''\n"
    "while len(b)<" EGRESS_STR(RUNNER_EGRESS_CRED_LEN) ":\n"
    " c=os.read(0," EGRESS_STR(RUNNER_EGRESS_CRED_LEN) "-len(b))\n"
    " if not c:break\n"
    " b+=c\n"
    "u=b[:-1].rstrip(b' ')\n"
    "if len(b)!=" EGRESS_STR(RUNNER_EGRESS_CRED_LEN) " or b[-1:]!=b'\\n' or"
    " b'\\n' in u or b' ' in u or not u:"
    "sys.exit('cordon: no proxy settings on stdin')\n"
    "u=u.decode('ascii')\n"
    "for k in('HTTP_PROXY','HTTPS_PROXY','http_proxy','https_proxy'):"
    "os.environ[k]=u\n"
    "a=sys.argv[1:]\n"
    "if a[0][:1]=='/':os.execv(a[0],a)\n"
    "if a!=['-']:os.execv(sys.executable,[sys.executable,'-I']+a)\n"
    "sys.argv=a\n"
    "sys.orig_argv=[sys.executable,'-I']+a\n"
    "m=type(sys)('__main__')\n"
    "m.__dict__.update(__file__='<stdin>',__cached__=None,"
    "__loader__=__loader__,__builtins__=__builtins__,__annotations__={})\n"
    "try:x=compile(sys.stdin.buffer.read(),'<stdin>','exec')\n"
    "except Exception as e:"
    "sys.excepthook(type(e),e.with_traceback(None),None);sys.exit(1)\n"
    "sys.modules['__main__']=m\n"
    "try:exec(x,m.__dict__)\n"
    "except SystemExit:raise\n"
    "except BaseException as e:t=e.__traceback__.tb_next;"
    "sys.excepthook(type(e),e.with_traceback(t),t);sys.exit(1)\n";

static int
egress_wait(int fd, short ev, int64_t end)
{
	struct pollfd pfd = { .fd = fd, .events = ev };
	int64_t left;
	int n;

	for (;;) {
		if ((left = end - time_mono_ms()) <= 0)
			return -ETIMEDOUT;
		n = poll(&pfd, 1, (int)(left > 1000 ? 1000 : left));
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

static int
egress_connect(const char *path, int64_t end, int *out, char *err,
    size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, rc;

	*out = -1;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "control socket path too long: %.80s",
		    path);
		return -ENAMETOOLONG;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "socket: %s", strerror(-rc));
		return rc;
	}
	/* A unix socket connects at once or fails; EAGAIN is a full
	 * backlog, worth another try until the deadline. */
	while (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = -errno;
		if ((rc == -EAGAIN || rc == -EINTR) && time_mono_ms() < end) {
			(void)poll(NULL, 0, 10);
			continue;
		}
		close(fd);
		if (rc == -ENOENT) {
			snprintf(err, errlen, "the proxy's control socket %s is "
			    "missing; run 'cordon net up'", path);
			return -ENETDOWN;
		}
		snprintf(err, errlen, "cannot connect to the proxy's control "
		    "socket %s: %s", path, rc == -EAGAIN ? "busy past the "
		    "deadline" : strerror(-rc));
		return rc == -EAGAIN ? -ETIMEDOUT : rc;
	}
	*out = fd;
	return 0;
}

static int
egress_send(int fd, const char *line, int64_t end)
{
	size_t len = strlen(line), off = 0;
	ssize_t n;
	int rc;

	while (off < len) {
		n = send(fd, line + off, len - off, MSG_NOSIGNAL);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		if ((rc = egress_wait(fd, POLLOUT, end)) < 0)
			return rc;
	}
	return 0;
}

/* Reads up to the first '\n' (not kept) into *out, NUL-terminated. */
static int
egress_recv_line(int fd, int64_t end, char **out, size_t *outlen)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap), *nl = NULL, *nb;
	ssize_t n;
	int rc;

	*out = NULL;
	if (buf == NULL)
		return -ENOMEM;
	while (nl == NULL) {
		if (len == cap) {
			if (cap >= RUNNER_EGRESS_ANSWER_MAX) {
				rc = -EMSGSIZE;
				goto bad;
			}
			if ((nb = realloc(buf, cap * 2)) == NULL) {
				rc = -ENOMEM;
				goto bad;
			}
			buf = nb;
			cap *= 2;
		}
		n = recv(fd, buf + len, cap - len, 0);
		if (n == 0) {
			rc = -ECONNRESET;
			goto bad;
		}
		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR) {
				rc = -errno;
				goto bad;
			}
			if ((rc = egress_wait(fd, POLLIN, end)) < 0)
				goto bad;
			continue;
		}
		nl = memchr(buf + len, '\n', (size_t)n);
		len += (size_t)n;
	}
	*outlen = (size_t)(nl - buf);
	if (*outlen > RUNNER_EGRESS_ANSWER_MAX) {
		rc = -EMSGSIZE;
		goto bad;
	}
	*nl = '\0';
	*out = buf;
	return 0;
bad:
	free(buf);
	return rc;
}

/* The answer's "ok": 0 and *answer, or -EREMOTEIO/-EBADMSG. */
static int
egress_answer(const char *text, size_t len, cJSON **answer, char *err,
    size_t errlen)
{
	cJSON *a = cJSON_ParseWithLength(text, len);
	const cJSON *ok = cJSON_GetObjectItemCaseSensitive(a, "ok");
	const cJSON *msg = cJSON_GetObjectItemCaseSensitive(a, "error");

	if (!cJSON_IsObject(a) || !cJSON_IsBool(ok)) {
		snprintf(err, errlen, "the proxy's control answer is not a "
		    "JSON object with \"ok\"");
		cJSON_Delete(a);
		return -EBADMSG;
	}
	if (!cJSON_IsTrue(ok)) {
		snprintf(err, errlen, "the proxy refused: %.300s",
		    cJSON_IsString(msg) ? msg->valuestring : "(no reason)");
		cJSON_Delete(a);
		return -EREMOTEIO;
	}
	*answer = a;
	return 0;
}

int
runner_egress_call(const char *path, const char *line, int64_t timeout_ms,
    cJSON **answer, char *err, size_t errlen)
{
	int64_t end = time_mono_ms() + timeout_ms;
	char *text = NULL;
	size_t len = 0;
	int fd, rc;

	*answer = NULL;
	err[0] = '\0';
	if ((rc = egress_connect(path, end, &fd, err, errlen)) < 0)
		return rc;
	if ((rc = egress_send(fd, line, end)) == 0)
		rc = egress_recv_line(fd, end, &text, &len);
	close(fd);
	switch (rc) {
	case 0:
		rc = egress_answer(text, len, answer, err, errlen);
		break;
	case -ETIMEDOUT:
		snprintf(err, errlen, "the proxy did not answer on its control "
		    "socket within %lld ms", (long long)timeout_ms);
		break;
	case -EMSGSIZE:
		snprintf(err, errlen, "the proxy's control answer is longer "
		    "than %u bytes", RUNNER_EGRESS_ANSWER_MAX);
		break;
	case -ECONNRESET:
		snprintf(err, errlen, "the proxy closed its control connection "
		    "without an answer");
		break;
	default:
		snprintf(err, errlen, "control socket %s: %s", path,
		    strerror(-rc));
	}
	free(text);
	return rc;
}

/* Builds req's line and calls; the line may hold a token: cleared. */
static int
egress_request(const char *path, const struct proxy_ctl_req *req,
    cJSON **answer, char *err, size_t errlen)
{
	char *line = proxy_ctl_format(req);
	int rc;

	*answer = NULL;
	if (line == NULL) {
		rc = -errno;
		snprintf(err, errlen, "cannot build the %s request: %s",
		    proxy_ctl_op_name(req->op), strerror(-rc));
		return rc;
	}
	rc = runner_egress_call(path, line, RUNNER_EGRESS_CALL_MS, answer,
	    err, errlen);
	explicit_bzero(line, strlen(line));
	free(line);
	return rc;
}

int
runner_egress_policies_at(const char *path, cJSON **out, char *err,
    size_t errlen)
{
	struct proxy_ctl_req req;
	cJSON *a, *list;
	int rc;

	*out = NULL;
	proxy_ctl_req_reset(&req);
	req.op = PROXY_CTL_POLICIES;
	if ((rc = egress_request(path, &req, &a, err, errlen)) < 0)
		return rc;
	list = cJSON_DetachItemFromObjectCaseSensitive(a, "policies");
	cJSON_Delete(a);
	if (!cJSON_IsArray(list)) {
		cJSON_Delete(list);
		snprintf(err, errlen, "the proxy's policies answer has no "
		    "\"policies\" list");
		return -EBADMSG;
	}
	*out = list;
	return 0;
}

int
runner_egress_policies(const struct config *c, cJSON **out, char *err,
    size_t errlen)
{
	struct netsetup_params p;
	char path[NETSETUP_CONTROL_MAX];
	int rc;

	*out = NULL;
	if ((rc = netsetup_params_load(&p, c, err, errlen)) < 0)
		return rc;
	if ((rc = netsetup_control_path(&p, path, sizeof(path))) < 0) {
		snprintf(err, errlen, "the proxy's control socket path under "
		    "%s is too long", p.state_dir);
		return rc;
	}
	return runner_egress_policies_at(path, out, err, errlen);
}

int
runner_egress_policy_check(const char *path, const char *policy, char *err,
    size_t errlen)
{
	const cJSON *n;
	cJSON *list;
	size_t off;
	int rc;

	if ((rc = runner_egress_policies_at(path, &list, err, errlen)) < 0)
		return rc;
	cJSON_ArrayForEach(n, list)
		if (cJSON_IsString(n) && strcmp(n->valuestring, policy) == 0) {
			cJSON_Delete(list);
			return 0;
		}
	off = (size_t)snprintf(err, errlen, "unknown egress policy \"%.64s\" "
	    "(policies:", policy);
	cJSON_ArrayForEach(n, list)
		if (cJSON_IsString(n) && off < errlen)
			off += (size_t)snprintf(err + off, errlen - off, "%s %.64s",
			    n == list->child ? "" : ",", n->valuestring);
	if (list->child == NULL && off < errlen)
		off += (size_t)snprintf(err + off, errlen - off, " none");
	if (off < errlen)
		snprintf(err + off, errlen - off, ")");
	cJSON_Delete(list);
	return -EINVAL;
}

int
runner_egress_register(const char *path, const struct runner_egress_reg *reg,
    char *err, size_t errlen)
{
	struct proxy_ctl_req req;
	cJSON *a = NULL;
	int rc;

	proxy_ctl_req_reset(&req);
	req.op = PROXY_CTL_REGISTER;
	if (!util_strlcpy(req.run, reg->run, sizeof(req.run)) ||
	    !util_strlcpy(req.addr_text, reg->addr, sizeof(req.addr_text)) ||
	    !util_strlcpy(req.policy, reg->policy, sizeof(req.policy)) ||
	    !util_strlcpy(req.token, reg->token, sizeof(req.token)) ||
	    reg->bytes_up > (uint64_t)PROXY_CTL_NUM_MAX ||
	    reg->bytes_down > (uint64_t)PROXY_CTL_NUM_MAX) {
		snprintf(err, errlen, "cannot register run %.64s: a value is "
		    "too long or too large", reg->run);
		rc = -EINVAL;
		goto out;
	}
	req.deadline_ms = reg->deadline_ms;
	req.max_conns = reg->max_conns;
	req.bytes_up = (int64_t)reg->bytes_up;
	req.bytes_down = (int64_t)reg->bytes_down;
	rc = egress_request(path, &req, &a, err, errlen);
	cJSON_Delete(a);
out:
	explicit_bzero(req.token, sizeof(req.token));
	return rc;
}

/* unregister or report: the answer without "ok". */
static int
egress_report_op(const char *path, enum proxy_ctl_op op, const char *run,
    cJSON **report, char *err, size_t errlen)
{
	struct proxy_ctl_req req;
	cJSON *a;
	int rc;

	*report = NULL;
	proxy_ctl_req_reset(&req);
	req.op = op;
	if (!util_strlcpy(req.run, run, sizeof(req.run))) {
		snprintf(err, errlen, "run id too long");
		return -EINVAL;
	}
	if ((rc = egress_request(path, &req, &a, err, errlen)) < 0)
		return rc;
	cJSON_DeleteItemFromObjectCaseSensitive(a, "ok");
	*report = a;
	return 0;
}

int
runner_egress_unregister(const char *path, const char *run, cJSON **report,
    char *err, size_t errlen)
{
	return egress_report_op(path, PROXY_CTL_UNREGISTER, run, report, err,
	    errlen);
}

int
runner_egress_report(const char *path, const char *run, cJSON **report,
    char *err, size_t errlen)
{
	return egress_report_op(path, PROXY_CTL_REPORT, run, report, err,
	    errlen);
}

int
runner_egress_cred_line(char *buf, size_t len, const char *run,
    const char *token, const struct netsetup_endpoint *ep)
{
	int n;

	if (len > 0)
		buf[0] = '\0';
	if (!proxy_cred_run_id_valid(run, strlen(run)) ||
	    !proxy_cred_token_valid(token, strlen(token)) || ep == NULL ||
	    ep->gateway[0] == '\0' || ep->port < 1 || ep->port > 65535)
		return -EINVAL;
	if (len <= RUNNER_EGRESS_CRED_LEN)
		return -ENOSPC;
	n = snprintf(buf, len, "http://%s:%s@%s:%d", run, token,
	    ep->gateway, ep->port);
	if (n < 0 || n >= RUNNER_EGRESS_CRED_LEN) {
		explicit_bzero(buf, len);
		return -ENOSPC;
	}
	/* Padded with spaces to the fixed length the prelude reads. */
	memset(buf + n, ' ', RUNNER_EGRESS_CRED_LEN - 1 - (size_t)n);
	buf[RUNNER_EGRESS_CRED_LEN - 1] = '\n';
	buf[RUNNER_EGRESS_CRED_LEN] = '\0';
	return 0;
}

int
runner_egress_stdin(const char *cred, const char *nonce, const void *code,
    size_t code_len, unsigned char **out, size_t *outlen)
{
	size_t cl = cred != NULL ? strlen(cred) : 0;
	size_t nl = nonce != NULL ? strlen(nonce) + 1 : 0;
	unsigned char *b;

	*out = NULL;
	*outlen = 0;
	if ((b = malloc(cl + nl + code_len + 1)) == NULL)
		return -ENOMEM;
	if (cl > 0)
		memcpy(b, cred, cl);
	if (nl > 0) {
		memcpy(b + cl, nonce, nl - 1);
		b[cl + nl - 1] = '\n';
	}
	if (code_len > 0)
		memcpy(b + cl + nl, code, code_len);
	b[cl + nl + code_len] = '\0';
	*out = b;
	*outlen = cl + nl + code_len;
	return 0;
}
