/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_config_helpers.h - what the configuration tests share.
 *
 * Configurations in tests are written with single quotes, which q()
 * turns into double quotes, so that lines and columns can be read off
 * the C source: in "{'a': 1}" the 1 is at column 7 on either side.
 */
#ifndef GW_TESTS_TEST_CONFIG_HELPERS_H
#define GW_TESTS_TEST_CONFIG_HELPERS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "conf/config.h"

/* Two routes that are valid, for tests that change one key. */
#define ROUTE_FWD                                                                                  \
	"{'name': 'fwd', 'mode': 'forward', 'listen': 'tcp://0.0.0.0:2049', "                      \
	"'upstream': 'rdma://192.0.2.1:20049'}"
#define ROUTE_REV                                                                                  \
	"{'name': 'rev', 'mode': 'reverse', 'listen': 'rdma://0.0.0.0:20049', "                    \
	"'upstream': 'tcp://192.0.2.1:2049'}"

/* A copy of @text with ' and " swapped; the caller frees it. */
static inline char *q(const char *text)
{
	char *s = strdup(text);

	assert_non_null(s);
	for (char *p = s; *p; p++) {
		if (*p == '\'')
			*p = '"';
		else if (*p == '"')
			*p = '\'';
	}
	return s;
}

/* Everything gw_conf_errors_print() writes, as one string; the caller frees it. */
static inline char *errors_text(const struct gw_conf_errors *errs)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	gw_conf_errors_print(f, errs);
	fclose(f);
	return buf;
}

/* Parse @sq (single-quoted) under the name @path; fills @errs. */
static inline const struct gw_config *parse_as(const char *path, const char *sq,
					       struct gw_conf_errors *errs)
{
	char *text = q(sq);
	const struct gw_config *cfg;

	gw_conf_errors_init(errs);
	cfg = gw_config_parse(path, text, strlen(text), errs);
	free(text);
	return cfg;
}

/* A configuration that must load; on errors, they are printed and the test fails. */
static inline const struct gw_config *load_ok_as(const char *path, const char *sq)
{
	struct gw_conf_errors errs;
	const struct gw_config *cfg = parse_as(path, sq, &errs);

	if (!cfg || errs.total) {
		char *text = errors_text(&errs);
		print_error("unexpected errors:\n%s", text);
		free(text);
	}
	assert_int_equal(errs.total, 0);
	assert_non_null(cfg);
	gw_conf_errors_clear(&errs);
	return cfg;
}

static inline const struct gw_config *load_ok(const char *sq)
{
	return load_ok_as("gw.json", sq);
}

/* @sq must fail to load with exactly the printed errors @expected. */
static inline void expect_errors_as(const char *path, const char *sq, const char *expected)
{
	struct gw_conf_errors errs;
	const struct gw_config *cfg = parse_as(path, sq, &errs);
	char *text = errors_text(&errs);

	assert_null(cfg);
	assert_string_equal(text, expected);
	free(text);
	gw_conf_errors_clear(&errs);
}

static inline void expect_errors(const char *sq, const char *expected)
{
	expect_errors_as("gw.json", sq, expected);
}

#endif
