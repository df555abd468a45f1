/* Unit tests for SHA-256 against FIPS 180-2 vectors. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/sha256.h"

static void
test_vectors(void **state)
{
	char hex[SHA256_HEX_LEN + 1];
	(void)state;
	assert_int_equal(sha256_hex("", 0, hex), 0);
	assert_string_equal(hex,
	    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	assert_int_equal(sha256_hex("abc", 3, hex), 0);
	assert_string_equal(hex,
	    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static void
test_incremental_equals_oneshot(void **state)
{
	const char *msg = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	char a[SHA256_HEX_LEN + 1], b[SHA256_HEX_LEN + 1];
	struct sha256_ctx *c = sha256_new();
	(void)state;
	assert_non_null(c);
	for (size_t i = 0; i < strlen(msg); i += 5)
		assert_int_equal(sha256_update(c, msg + i,
		    strlen(msg) - i < 5 ? strlen(msg) - i : 5), 0);
	assert_int_equal(sha256_final(c, a), 0);
	assert_int_equal(sha256_hex(msg, strlen(msg), b), 0);
	assert_string_equal(a, b);
	assert_string_equal(a,
	    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

static void
test_file(void **state)
{
	char path[] = "/tmp/cordon-sha-XXXXXX";
	char hex[SHA256_HEX_LEN + 1];
	int fd = mkstemp(path);
	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "abc", 3), 3);
	close(fd);
	assert_int_equal(sha256_file_hex(path, hex), 0);
	assert_string_equal(hex,
	    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	unlink(path);
	assert_int_equal(sha256_file_hex(path, hex), -ENOENT);
	assert_string_equal(hex, "");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),
		cmocka_unit_test(test_incremental_equals_oneshot),
		cmocka_unit_test(test_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
