/*
 * A suite's temporary directory, shared by the cmocka suites that keep
 * their files under one: tmpdir_setup makes a fresh
 * /tmp/cordon-test-<program>.XXXXXX in `tmpdir`, tmpdir_teardown removes
 * it with everything under it. Usable as group or per-test set-up.
 */
#ifndef CORDON_TESTS_LIB_TMPDIR_H
#define CORDON_TESTS_LIB_TMPDIR_H

#include <stddef.h>

/* The directory tmpdir_setup made ("" before, and after teardown). */
extern char tmpdir[64];

/* 0, or -1 when the directory cannot be made. */
int tmpdir_setup(void **state);
/* 0, or a negative errno from removing it. */
int tmpdir_teardown(void **state);

#endif
