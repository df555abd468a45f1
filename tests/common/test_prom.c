/* Unit tests for the Prometheus text renderer: a table of samples and their
 * exact lines (label escaping included), histograms, and the sticky error
 * when the buffer's limit is reached. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/cbuf.h"
#include "common/prom.h"

enum kind { U64, I64, FIXED };

static void
test_samples(void **state)
{
	static const char *const none[] = { NULL };
	static const char *const one[] = { "direction", "up", NULL };
	static const char *const two[] = { "decision", "deny", "reason",
	    "address-metadata", NULL };
	static const char *const quote[] = { "reason", "say \"hi\"", NULL };
	static const char *const bslash[] = { "path", "C:\\x\\", NULL };
	static const char *const nl[] = { "msg", "a\nb", NULL };
	static const char *const mixed[] = { "v", "\\\"\n", NULL };
	static const char *const empty[] = { "v", "", NULL };
	static const struct {
		enum kind kind;
		const char *name;
		const char *const *labels;
		uint64_t u;
		int64_t i;
		int decimals;
		double d;
		const char *want;
	} rows[] = {
		{ U64, "x_total", NULL, 0, 0, 0, 0, "x_total 0\n" },
		{ U64, "x_total", none, 7, 0, 0, 0, "x_total 7\n" },
		{ U64, "x_total", NULL, UINT64_MAX, 0, 0, 0,
		    "x_total 18446744073709551615\n" },
		{ U64, "b_total", one, 10, 0, 0, 0,
		    "b_total{direction=\"up\"} 10\n" },
		{ U64, "r_total", two, 2, 0, 0, 0, "r_total{decision=\"deny\","
		    "reason=\"address-metadata\"} 2\n" },
		{ U64, "q", quote, 1, 0, 0, 0,
		    "q{reason=\"say \\\"hi\\\"\"} 1\n" },
		{ U64, "q", bslash, 1, 0, 0, 0, "q{path=\"C:\\\\x\\\\\"} 1\n" },
		{ U64, "q", nl, 1, 0, 0, 0, "q{msg=\"a\\nb\"} 1\n" },
		{ U64, "q", mixed, 1, 0, 0, 0, "q{v=\"\\\\\\\"\\n\"} 1\n" },
		{ U64, "q", empty, 1, 0, 0, 0, "q{v=\"\"} 1\n" },
		{ I64, "g", NULL, 0, -3, 0, 0, "g -3\n" },
		{ I64, "g", NULL, 0, INT64_MIN, 0, 0,
		    "g -9223372036854775808\n" },
		{ I64, "g", one, 0, 42, 0, 0, "g{direction=\"up\"} 42\n" },
		{ FIXED, "s_sum", NULL, 0, 0, 3, 411.001, "s_sum 411.001\n" },
		{ FIXED, "s_sum", NULL, 0, 0, 6, 20.003, "s_sum 20.003000\n" },
		{ FIXED, "s_sum", NULL, 0, 0, 6, 0, "s_sum 0.000000\n" },
		{ FIXED, "s_sum", NULL, 0, 0, 0, 2.5, "s_sum 2\n" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct cbuf *b = cbuf_new(4096);
		struct prom p;
		int rc;

		assert_non_null(b);
		prom_init(&p, b);
		switch (rows[i].kind) {
		case U64:
			rc = prom_sample_u64(&p, rows[i].name, rows[i].labels,
			    rows[i].u);
			break;
		case I64:
			rc = prom_sample_i64(&p, rows[i].name, rows[i].labels,
			    rows[i].i);
			break;
		default:
			rc = prom_sample_fixed(&p, rows[i].name,
			    rows[i].labels, rows[i].decimals, rows[i].d);
			break;
		}
		assert_int_equal(rc, 0);
		assert_string_equal(cbuf_data(b), rows[i].want);
		cbuf_free(b);
	}
}

/* A name without its value is refused (-EINVAL, kept as p's error), not
 * rendered as a label list cut short: a NULL value in the middle once
 * printed `cordon_pool_idle} 1`. */
static void
test_label_without_value(void **state)
{
	static const char *const odd[] = { "a", "1", "b", NULL };
	static const char *const hole[] = { "lang", "python", "profile", NULL,
	    "net", "none", NULL };
	const char *const *bad[] = { odd, hole };

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cbuf *b = cbuf_new(4096);
		struct prom p;

		assert_non_null(b);
		prom_init(&p, b);
		assert_int_equal(prom_sample_u64(&p, "q", bad[i], 1), -EINVAL);
		assert_int_equal(prom_sample_i64(&p, "q", NULL, 1), -EINVAL);
		cbuf_free(b);
	}
}

static void
test_help_type(void **state)
{
	struct cbuf *b = cbuf_new(4096);
	struct prom p;
	(void)state;
	prom_init(&p, b);
	assert_int_equal(prom_help_type(&p, "cordon_runs_total", "Runs "
	    "finished.", "counter"), 0);
	assert_int_equal(prom_help_type(&p, "h", "a\\b\nc \"q\"", "gauge"), 0);
	assert_string_equal(cbuf_data(b),
	    "# HELP cordon_runs_total Runs finished.\n"
	    "# TYPE cordon_runs_total counter\n"
	    "# HELP h a\\\\b\\nc \"q\"\n"
	    "# TYPE h gauge\n");
	cbuf_free(b);
}

static void
test_histogram(void **state)
{
	static const double bounds[] = { 0.001, 0.25, 1, 10 };
	static const uint64_t counts[] = { 1, 0, 2, 0, 3 };
	struct cbuf *b = cbuf_new(4096);
	struct prom p;
	(void)state;
	prom_init(&p, b);
	assert_int_equal(prom_histogram(&p, "lat_seconds", bounds, counts, 4,
	    42.5, 3, 6), 0);
	assert_string_equal(cbuf_data(b),
	    "lat_seconds_bucket{le=\"0.001\"} 1\n"
	    "lat_seconds_bucket{le=\"0.25\"} 1\n"
	    "lat_seconds_bucket{le=\"1\"} 3\n"
	    "lat_seconds_bucket{le=\"10\"} 3\n"
	    "lat_seconds_bucket{le=\"+Inf\"} 6\n"
	    "lat_seconds_sum 42.500\n"
	    "lat_seconds_count 6\n");
	cbuf_free(b);
}

static void
test_limit_sticks(void **state)
{
	struct cbuf *b = cbuf_new(12);
	struct prom p;
	(void)state;
	prom_init(&p, b);
	assert_int_equal(prom_sample_u64(&p, "a", NULL, 1), 0);
	assert_int_equal(prom_sample_u64(&p, "long_name", NULL, 2), -ENOSPC);
	/* Nothing more is appended once an error happened. */
	assert_int_equal(prom_sample_u64(&p, "b", NULL, 3), -ENOSPC);
	assert_int_equal(p.error, -ENOSPC);
	assert_int_equal(strncmp(cbuf_data(b), "a 1\n", 4), 0);
	/* The append that hit the limit was the name: nothing after it. */
	assert_int_equal(cbuf_seen(b), strlen("a 1\nlong_name"));
	cbuf_free(b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_samples),
		cmocka_unit_test(test_help_type),
		cmocka_unit_test(test_label_without_value),
		cmocka_unit_test(test_histogram),
		cmocka_unit_test(test_limit_sticks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
