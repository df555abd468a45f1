/*
 * The egress CA (proxy/ca.c): made once with the right modes and kept,
 * a mismatched pair refused, the bundle = roots + CA; leaves chain to the
 * CA with the host as SAN (DNS or IP), short validity, reused from the
 * cache, and the cache bounded (LRU).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "common/util.h"
#include "proxy/ca.h"

static char dir[64], roots[128], kp[128], cp[128], bp[128];

static void
setup_paths(void)
{
	FILE *f;

	snprintf(dir, sizeof(dir), "/tmp/cordon-catest-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(roots, sizeof(roots), "%s/roots.pem", dir);
	snprintf(kp, sizeof(kp), "%s/ca/%s", dir, PROXY_CA_KEY);
	snprintf(cp, sizeof(cp), "%s/ca/%s", dir, PROXY_CA_CERT);
	snprintf(bp, sizeof(bp), "%s/ca/%s", dir, PROXY_CA_BUNDLE);
	f = fopen(roots, "w");
	assert_non_null(f);
	fputs("-----BEGIN CERTIFICATE-----\nROOTS\n-----END CERTIFICATE-----",
	    f);
	fclose(f);
}

static char *
slurp(const char *path)
{
	char *t = NULL;
	size_t n = 0;

	assert_int_equal(util_read_file(path, 1u << 20, &t, &n), 0);
	return t;
}

static void
test_make_keep_bundle(void **state)
{
	char cadir[128], err[256], *k1, *k2, *b, *c;
	struct stat st;
	bool created, changed;

	(void)state;
	setup_paths();
	snprintf(cadir, sizeof(cadir), "%s/ca", dir);
	assert_int_equal(proxy_ca_make(cadir, roots, &created, &changed, err,
	    sizeof(err)), 0);
	assert_true(created);
	assert_true(changed);
	assert_int_equal(stat(kp, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(stat(cp, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	assert_int_equal(stat(bp, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	k1 = slurp(kp);
	/* Idempotent: the same key again. */
	assert_int_equal(proxy_ca_make(cadir, roots, &created, &changed, err,
	    sizeof(err)), 0);
	assert_false(created);
	assert_false(changed);	/* same roots: the bundle is not rewritten */
	k2 = slurp(kp);
	assert_string_equal(k1, k2);
	/* Bundle: the roots, a newline, then the CA. */
	b = slurp(bp);
	c = slurp(cp);
	assert_memory_equal(b, "-----BEGIN CERTIFICATE-----\nROOTS\n", 34);
	assert_non_null(strstr(b, "-----END CERTIFICATE-----\n-----BEGIN"));
	assert_string_equal(b + strlen(b) - strlen(c), c);
	/* Missing roots: an error, no half bundle. */
	assert_int_not_equal(proxy_ca_make(cadir, "/nonexistent/roots", NULL,
	    NULL, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "/nonexistent/roots"));
	/* Only one of the pair: refused. */
	assert_int_equal(unlink(cp), 0);
	assert_int_not_equal(proxy_ca_make(cadir, roots, NULL, NULL, err,
	    sizeof(err)), 0);
	assert_non_null(strstr(err, "remove both"));
	free(k1);
	free(k2);
	free(b);
	free(c);
	(void)util_rm_rf(dir);
}

static bool
san_has(X509 *x, int type, const char *text)
{
	GENERAL_NAMES *g = X509_get_ext_d2i(x, NID_subject_alt_name, NULL,
	    NULL);
	bool found = false;
	int n = sk_GENERAL_NAME_num(g);

	for (int i = 0; i < n; i++) {
		GENERAL_NAME *e = sk_GENERAL_NAME_value(g, i);
		if (e->type == type && type == GEN_DNS)
			found = strcmp((const char *)ASN1_STRING_get0_data(
			    e->d.dNSName), text) == 0;
	}
	GENERAL_NAMES_free(g);
	return found && n == 1;
}

static void
test_leaves(void **state)
{
	char cadir[128], err[256];
	struct proxy_ca *ca;
	X509_STORE *store;
	X509_STORE_CTX *ctx;
	X509 *a, *b, *ip;
	time_t now = time(NULL);
	int64_t nb, na;

	(void)state;
	setup_paths();
	snprintf(cadir, sizeof(cadir), "%s/ca", dir);
	assert_int_equal(proxy_ca_make(cadir, roots, NULL, NULL, err,
	    sizeof(err)), 0);
	assert_int_not_equal(proxy_ca_load(cp, cp, 4, &ca, err, sizeof(err)),
	    0);
	assert_int_equal(proxy_ca_load(cp, kp, 4, &ca, err, sizeof(err)), 0);
	a = proxy_ca_leaf(ca, "api.example.com", false, (int64_t)now);
	assert_non_null(a);
	assert_true(san_has(a, GEN_DNS, "api.example.com"));
	assert_int_equal(X509_check_host(a, "api.example.com", 0, 0, NULL), 1);
	assert_int_equal(X509_check_host(a, "x.example.com", 0, 0, NULL), 0);
	/* 24 h, backdated an hour. */
	assert_int_equal(ASN1_TIME_to_tm(X509_get0_notBefore(a), NULL), 1);
	{
		struct tm t;
		ASN1_TIME_to_tm(X509_get0_notBefore(a), &t);
		nb = (int64_t)timegm(&t);
		ASN1_TIME_to_tm(X509_get0_notAfter(a), &t);
		na = (int64_t)timegm(&t);
	}
	assert_true(nb <= (int64_t)now - 3500 && nb >= (int64_t)now - 3700);
	assert_true(na - (int64_t)now <= 86400 && na - (int64_t)now >= 86300);
	/* Chains to the CA, for a server. */
	store = X509_STORE_new();
	X509_STORE_add_cert(store, proxy_ca_cert(ca));
	ctx = X509_STORE_CTX_new();
	X509_STORE_CTX_init(ctx, store, a, NULL);
	X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER);
	assert_int_equal(X509_verify_cert(ctx), 1);
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	/* Cached: the same certificate; an IP gets an IP SAN. */
	assert_ptr_equal(proxy_ca_leaf(ca, "api.example.com", false,
	    (int64_t)now), a);
	assert_int_equal(proxy_ca_hits(ca), 1);
	ip = proxy_ca_leaf(ca, "192.0.2.7", true, (int64_t)now);
	assert_non_null(ip);
	assert_int_equal(X509_check_ip_asc(ip, "192.0.2.7", 0), 1);
	assert_non_null(proxy_ca_leaf(ca, "2001:db8::1", true, (int64_t)now));
	/* Near its end: minted again. */
	b = proxy_ca_leaf(ca, "api.example.com", false, (int64_t)now + 86000);
	assert_ptr_not_equal(b, a);
	/* Bounded: 4 entries, the least recently used goes. */
	assert_non_null(proxy_ca_leaf(ca, "b.example", false, (int64_t)now));
	assert_non_null(proxy_ca_leaf(ca, "c.example", false, (int64_t)now));
	assert_int_equal(proxy_ca_cached(ca), 4);
	uint64_t minted = proxy_ca_minted(ca);
	(void)proxy_ca_leaf(ca, "192.0.2.7", true, (int64_t)now);
	assert_int_equal(proxy_ca_minted(ca), minted + 1);	/* evicted */
	assert_null(proxy_ca_leaf(ca, "bad\nname", true, (int64_t)now));
	proxy_ca_free(ca);
	(void)util_rm_rf(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_make_keep_bundle),
		cmocka_unit_test(test_leaves),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
