/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_procinfo.c - gateway/procinfo: /proc/PID/stat as the
 * kernel writes it, command names that hold blanks and parentheses
 * included, texts that are not one refused, and this process read live.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "gateway/stats/procinfo.h"

/* Fields 1-24 of proc(5); utime 250, stime 750, starttime 12345, rss 1000 pages. */
#define TAIL                                                                                       \
	" S 1 812 812 0 -1 4194560 7418 0 3 0 250 750 0 0 20 0 1 0 12345 25473024 1000 "           \
	"18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 17 1 0 0 0 0 0"

static void test_parse_stat(void **state)
{
	struct gw_procinfo pi;

	(void)state;
	assert_true(gw_procinfo_parse_stat("812 (rpcrdma-gw)" TAIL, 1700000000, 100, 4096, &pi));
	assert_int_equal(pi.pid, 812);
	assert_true(pi.cpu_user_s > 2.49 && pi.cpu_user_s < 2.51);
	assert_true(pi.cpu_system_s > 7.49 && pi.cpu_system_s < 7.51);
	assert_true(pi.started_unix > 1700000123.44 && pi.started_unix < 1700000123.46);
	assert_int_equal(pi.rss_bytes, 1000 * 4096);

	/* A name with blanks and ')' in it: the fields begin after the last ')'. */
	assert_true(gw_procinfo_parse_stat("77 (a) b (c)) d)" TAIL, 0, 100, 4096, &pi));
	assert_int_equal(pi.pid, 77);
	assert_int_equal(pi.rss_bytes, 1000 * 4096);
}

static void test_parse_refuses(void **state)
{
	struct gw_procinfo pi;

	(void)state;
	assert_false(gw_procinfo_parse_stat("", 0, 100, 4096, &pi));
	assert_false(gw_procinfo_parse_stat("812 rpcrdma-gw S 1 2 3", 0, 100, 4096, &pi));
	assert_false(gw_procinfo_parse_stat("x (gw)" TAIL, 0, 100, 4096, &pi));
	assert_false(gw_procinfo_parse_stat("812 (gw) S 1 812 812 0 -1", 0, 100, 4096, &pi));
	assert_false(gw_procinfo_parse_stat("812 (gw) S 1 812 812 0 -1 4194560 7418 0 3 0 x 1", 0,
					    100, 4096, &pi));
	assert_false(gw_procinfo_parse_stat("812 (gw)" TAIL, 0, 0, 4096, &pi));
	assert_int_equal(pi.pid, 0); /* zeroed on refusal */
}

/* A 256-CPU server's /proc/stat: "btime" comes after some 80 KB of lines. */
static void test_btime_after_long_lines(void **state)
{
	size_t cap = 1 << 20, n = 0;
	char *text = malloc(cap);
	uint64_t btime = 0;
	FILE *f;

	(void)state;
	assert_non_null(text);
	n += (size_t)snprintf(text + n, cap - n, "cpu  1 2 3 4 5 6 7 0 0 0\n");
	for (int c = 0; c < 256; c++)
		n += (size_t)snprintf(text + n, cap - n,
				      "cpu%d 123456 0 654321 9876543 1 0 2 0 0 0\n", c);
	n += (size_t)snprintf(text + n, cap - n, "intr 123456789");
	for (int i = 0; i < 12000; i++)
		n += (size_t)snprintf(text + n, cap - n, " %d", i);
	n += (size_t)snprintf(text + n, cap - n, "\nctxt 99\nbtime 1700000000\nprocesses 5\n");
	assert_true(n > 60000 && n < cap);
	f = fmemopen(text, n, "r");
	assert_non_null(f);
	assert_true(gw_procinfo_parse_btime(f, &btime));
	assert_true(btime == 1700000000);
	fclose(f);

	f = fmemopen(text, 200, "r"); /* cut before the line */
	assert_false(gw_procinfo_parse_btime(f, &btime));
	fclose(f);
	free(text);
}

static void test_read_self(void **state)
{
	struct gw_procinfo a, b;
	volatile uint64_t spin = 0;

	(void)state;
	assert_true(gw_procinfo_read(&a));
	assert_int_equal(a.pid, getpid());
	assert_true(a.rss_bytes > 0);
	assert_true(a.open_fds >= 3);
	assert_true(a.started_unix <= (double)time(NULL) + 60);
	for (uint64_t i = 0; i < 300000000ULL; i++) /* some CPU time, in user mode */
		spin += i;
	assert_true(gw_procinfo_read(&b));
	assert_true(b.started_unix == a.started_unix); /* the same process, the same figure */
	assert_true(b.cpu_user_s + b.cpu_system_s > a.cpu_user_s + a.cpu_system_s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_stat),
		cmocka_unit_test(test_parse_refuses),
		cmocka_unit_test(test_btime_after_long_lines),
		cmocka_unit_test(test_read_self),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
