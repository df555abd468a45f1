/*
 * libFuzzer target for the MCP handler: any bytes as one message must give
 * no reply or exactly one line of valid JSON-RPC, never a crash; the same
 * bytes through mcp_classify and as the prefix of an oversized message.
 * The runner is a fake, so tools/call with valid arguments is exercised too
 * (on a server initialized first, for three inputs in four);
 * so is the policy source: by the input's length, tools/list gets a list
 * (with names that must be left out) or a failure.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/config.h"
#include "common/util.h"
#include "mcp/mcp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
fake_run(const struct config *c, const struct runner_request *req,
    struct runner_result *res, char *err, size_t errlen, void *arg)
{
	(void)c;
	(void)arg;
	if (req->code_len > 0 && ((const char *)req->code)[0] == 'X') {
		util_strlcpy(err, "fake failure", errlen);
		return -5;
	}
	res->status = req->code_len % 2 ? RUNNER_OK : RUNNER_TIMEOUT;
	res->out = strndup(req->code, req->code_len);
	res->out_len = res->out != NULL ? strlen(res->out) : 0;
	return 0;
}

static int
fake_policies(const struct config *c, cJSON **out, char *err, size_t errlen,
    void *arg)
{
	(void)c;
	if (*(const size_t *)arg % 2) {
		util_strlcpy(err, "egress network not up \xff", errlen);
		*out = NULL;
		return -ENETDOWN;
	}
	*out = cJSON_Parse("[\"default\",\"pypi\",\"../x\",1]");
	return *out != NULL ? 0 : -ENOMEM;
}

static void
check_line(char *line)
{
	size_t n = strlen(line);
	cJSON *r;

	if (n == 0 || line[n - 1] != '\n' || memchr(line, '\n', n - 1) != NULL)
		abort();
	if ((r = cJSON_Parse(line)) == NULL ||
	    !cJSON_IsString(cJSON_GetObjectItem(r, "jsonrpc")))
		abort();
	cJSON_Delete(r);
	free(line);
}

static char tmp[] = "/tmp/fuzz-mcp.XXXXXX";

static void
remove_tmp(void)
{
	(void)util_rm_rf(tmp);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct config c;
	static int ready;
	struct mcp_server_opts o = { .config = &c, .run = fake_run,
	    .policies = fake_policies, .policies_arg = &size, .tmp_dir = tmp };
	static const char init[] = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":"
	    "\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\"}}";
	struct mcp_server *s;
	enum mcp_kind kind;
	char *reply = NULL, *id = NULL;

	if (!ready) {
		config_defaults(&c);
		/* run_code's `session` would start real containers: with no
		 * session allowed, it is refused before any start. */
		c.serve.sessions_per_tenant = 0;
		if (mkdtemp(tmp) == NULL)
			abort();
		atexit(remove_tmp);
		ready = 1;
	}
	if (mcp_server_new(&o, &s) != 0)
		return 0;
	/* Most inputs meet an initialized server (so tools/call runs); the
	 * rest test the refusal before initialize. */
	if (size % 4 != 0 && mcp_handle(s, init, sizeof(init) - 1,
	    &reply) == 0)
		free(reply);
	reply = NULL;
	if (mcp_handle(s, (const char *)data, size, &reply) == 0 &&
	    reply != NULL)
		check_line(reply);
	if (mcp_classify((const char *)data, size, &kind, &id) == 0 &&
	    (kind == MCP_KIND_OTHER) != (id == NULL))
		abort();
	free(id);
	check_line(mcp_oversized_reply((const char *)data, size));
	mcp_server_free(s);
	return 0;
}
