/*
 * libFuzzer target for the per-run egress pieces: control lines
 * (proxy_ctl_parse, with a format/parse round trip for every accepted
 * line), Proxy-Authorization values (proxy_cred_parse, checked against
 * OpenSSL's base64 encoder: an accepted value is the one canonical
 * encoding of what it decoded to), an egress report fed with the
 * input's lines, and a small run registry driven by the input's control
 * lines (register, unregister, report as a time step).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "proxy/ctl.h"
#include "proxy/cred.h"
#include "proxy/egress.h"
#include "proxy/runs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_ctl(const char *s, size_t size)
{
	struct proxy_ctl_req a, b;
	char err[128];
	char *line;

	if (proxy_ctl_parse(s, size, &a, err, sizeof(err)) != 0) {
		if (a.op != PROXY_CTL_NONE || a.run[0] != '\0' || err[0] == '\0')
			abort();
		return;
	}
	line = proxy_ctl_format(&a);
	if (line == NULL)
		abort();
	if (proxy_ctl_parse(line, strlen(line), &b, err, sizeof(err)) != 0 ||
	    memcmp(&a, &b, sizeof(a)) != 0)
		abort();
	free(line);
}

static void
check_cred(const char *s, size_t size)
{
	struct proxy_cred c;
	char plain[PROXY_CRED_RUN_MAX + 1 + PROXY_CRED_TOKEN_MAX + 1];
	unsigned char enc[PROXY_CRED_ENCODED_MAX + 4];
	size_t rl, tl, off;
	int n;

	if (proxy_cred_parse(s, size, &c) != 0) {
		static const struct proxy_cred zero;
		if (memcmp(&c, &zero, sizeof(c)) != 0)
			abort();
		return;
	}
	rl = strlen(c.run);
	tl = strlen(c.token);
	if (!proxy_cred_run_id_valid(c.run, rl) ||
	    !proxy_cred_token_valid(c.token, tl) ||
	    !proxy_cred_token_equal(c.token, c.token))
		abort();
	memcpy(plain, c.run, rl);
	plain[rl] = ':';
	memcpy(plain + rl + 1, c.token, tl);
	n = EVP_EncodeBlock(enc, (unsigned char *)plain, (int)(rl + 1 + tl));
	/* after "Basic" and the spaces comes exactly that encoding */
	off = 6;
	while (off < size && s[off] == ' ')
		off++;
	if (size - off != (size_t)n || memcmp(s + off, enc, (size_t)n) != 0)
		abort();
}

/* Each line "host port" notes an attempt; the JSON must build. */
static void
check_egress(const char *s, size_t size)
{
	struct proxy_egress *e = proxy_egress_new(8);
	char host[300];
	size_t i = 0;
	cJSON *o;

	if (e == NULL)
		return;
	while (i < size) {
		size_t j = i, n;
		while (j < size && s[j] != '\n')
			j++;
		n = j - i < sizeof(host) - 1 ? j - i : sizeof(host) - 1;
		memcpy(host, s + i, n);
		host[n] = '\0';
		if (host[0] != '\0') {
			uint16_t port = (uint16_t)(n * 257);
			(void)proxy_egress_note(e, host, port,
			    (enum proxy_egress_decision)(n % 3), host,
			    (int)n);
			(void)proxy_egress_bytes(e, host, port, n, n);
		}
		i = j + 1;
	}
	o = proxy_egress_to_json(e);
	if (o != NULL) {
		char *text = cJSON_PrintUnformatted(o);
		cJSON *back = text != NULL ? cJSON_Parse(text) : NULL;
		if (text != NULL && back == NULL)
			abort();
		cJSON_Delete(back);
		free(text);
		cJSON_Delete(o);
	}
	proxy_egress_free(e);
}

/* Each control line acts on a registry of 4; its invariants hold. */
static void
check_runs(const char *s, size_t size)
{
	static const struct proxy_run_limits def = { .max_conns = 1 };
	struct proxy_runs *rs;
	struct proxy_ctl_req req;
	struct proxy_run *r;
	int64_t now = 1;
	size_t i = 0;

	if (proxy_runs_new(4, &rs) != 0)
		return;
	while (i < size) {
		size_t j = i;
		while (j < size && s[j] != '\n')
			j++;
		if (proxy_ctl_parse(s + i, j - i, &req, NULL, 0) == 0) {
			r = proxy_runs_find(rs, req.run);
			if (req.op == PROXY_CTL_REGISTER) {
				int rc = proxy_runs_add(rs, &req, &def, now,
				    &r);
				if (rc == 0 && (proxy_runs_find(rs, req.run) !=
				    r || !proxy_run_addr_match(r,
				    (const struct sockaddr *)&req.addr)))
					abort();
			} else if (req.op == PROXY_CTL_UNREGISTER && r != NULL) {
				proxy_runs_remove(rs, r);
				if (proxy_runs_find(rs, req.run) != NULL)
					abort();
			} else if (req.op == PROXY_CTL_REPORT) {
				now += 1000000;
				(void)proxy_runs_tick(rs, now, NULL, NULL,
				    NULL);
			}
			if (proxy_runs_count(rs) > 4)
				abort();
		}
		i = j + 1;
	}
	proxy_runs_free(rs);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;

	check_ctl(s, size);
	check_cred(s, size);
	check_egress(s, size);
	check_runs(s, size);
	return 0;
}
