/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <cmocka.h>

#include "gateway/sd_notify.h"

/* A datagram socket standing in for systemd's notification socket. */
static int listen_on(const char *name, bool abstract)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	assert_true(fd >= 0);
	size_t len = strlen(name);
	memcpy(sun.sun_path, name, len);
	if (abstract)
		sun.sun_path[0] = '\0';
	else
		unlink(name);
	assert_int_equal(bind(fd, (struct sockaddr *)&sun,
			      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)),
			 0);
	return fd;
}

static void expect_message(int fd, const char *want)
{
	char buf[600];
	ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_string_equal(buf, want);
}

static void test_path_socket(void **state)
{
	(void)state;
	char path[64];
	snprintf(path, sizeof(path), "/tmp/gw-notify-%d", (int)getpid());
	int fd = listen_on(path, false);
	setenv("NOTIFY_SOCKET", path, 1);
	assert_int_equal(gw_sd_notify("READY=1\nSTATUS=running"), 1);
	expect_message(fd, "READY=1\nSTATUS=running");
	assert_int_equal(gw_sd_notifyf("STATUS=%d sessions", 7), 1);
	expect_message(fd, "STATUS=7 sessions");
	close(fd);
	unlink(path);
}

static void test_abstract_socket(void **state)
{
	(void)state;
	char name[64];
	snprintf(name, sizeof(name), "@gw-notify-%d", (int)getpid());
	int fd = listen_on(name, true);
	setenv("NOTIFY_SOCKET", name, 1);
	assert_int_equal(gw_sd_notify("STOPPING=1"), 1);
	expect_message(fd, "STOPPING=1");
	close(fd);
}

static void test_not_under_systemd(void **state)
{
	(void)state;
	unsetenv("NOTIFY_SOCKET");
	assert_int_equal(gw_sd_notify("READY=1"), 0);
	setenv("NOTIFY_SOCKET", "relative/path", 1);
	assert_int_equal(gw_sd_notify("READY=1"), -EINVAL);
	setenv("NOTIFY_SOCKET", "/nonexistent/dir/sock", 1);
	assert_true(gw_sd_notify("READY=1") < 0);
	unsetenv("NOTIFY_SOCKET");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_socket),
		cmocka_unit_test(test_abstract_socket),
		cmocka_unit_test(test_not_under_systemd),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
