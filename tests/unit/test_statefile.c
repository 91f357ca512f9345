/* SPDX-License-Identifier: MIT */
/*
 * common/statefile.c, from the side of a local user who can reach the
 * state directory: a symlink planted where the old code wrote its
 * temporary file ("PATH.tmp") is never followed, a symlink planted at PATH
 * is replaced rather than written through or read, and a directory others
 * may write in is refused. Then the NSM state number and the NLM client
 * list, the two state files, written through those planted names: the
 * victim file keeps its bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/statefile.h"
#include "gateway/side/nlm/nlm_restart.h"
#include "gateway/side/nlm/nlm_state.h"

struct dir {
	char path[64];
	char victim[96]; /* a file outside the state directory */
};

static int setup(void **state)
{
	struct dir *d = calloc(1, sizeof(*d));

	if (!d)
		return -1;
	snprintf(d->path, sizeof(d->path), "/tmp/gw-statefile-XXXXXX");
	if (!mkdtemp(d->path))
		return -1;
	snprintf(d->victim, sizeof(d->victim), "%s.victim", d->path);
	FILE *f = fopen(d->victim, "w");
	if (!f)
		return -1;
	fputs("precious\n", f);
	fclose(f);
	*state = d;
	return 0;
}

static int teardown(void **state)
{
	struct dir *d = *state;
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", d->path, d->victim);
	if (system(cmd) != 0)
		return -1;
	free(d);
	return 0;
}

static void assert_victim_intact(const struct dir *d)
{
	char buf[32] = { 0 };
	FILE *f = fopen(d->victim, "r");

	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_string_equal(buf, "precious\n");
}

static void file_text(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

static void test_planted_tmp_symlink_not_followed(void **state)
{
	struct dir *d = *state;
	char path[128], planted[140], tmp[160], text[32];

	snprintf(path, sizeof(path), "%s/nfs.nsm-state", d->path);
	snprintf(planted, sizeof(planted), "%s.tmp", path);
	assert_int_equal(symlink(d->victim, planted), 0);
	int fd = gw_statefile_create(path, 0644, tmp, sizeof(tmp));
	assert_true(fd >= 0);
	assert_string_not_equal(tmp, planted);
	assert_int_equal(write(fd, "7\n", 2), 2);
	assert_int_equal(gw_statefile_commit(fd, tmp, path), 0);
	close(fd);
	file_text(path, text, sizeof(text));
	assert_string_equal(text, "7\n");
	assert_victim_intact(d);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
}

static void test_planted_symlink_at_the_path_replaced_not_read(void **state)
{
	struct dir *d = *state;
	char path[128], tmp[160], text[32];
	struct stat st;

	snprintf(path, sizeof(path), "%s/nfs.nlm-clients", d->path);
	assert_int_equal(symlink(d->victim, path), 0);
	assert_int_equal(gw_statefile_open_read(path), -ELOOP); /* not read through */
	int fd = gw_statefile_create(path, 0600, tmp, sizeof(tmp));
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "x\n", 2), 2);
	assert_int_equal(gw_statefile_commit(fd, tmp, path), 0);
	close(fd);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode)); /* the link itself was replaced */
	file_text(path, text, sizeof(text));
	assert_string_equal(text, "x\n");
	assert_victim_intact(d);
}

static void test_directory_others_may_write_refused(void **state)
{
	struct dir *d = *state;
	char err[256];

	assert_int_equal(chmod(d->path, 0755), 0);
	assert_int_equal(gw_statefile_check_dir(d->path, err, sizeof(err)), 0);
	assert_int_equal(chmod(d->path, 0777), 0);
	assert_int_equal(gw_statefile_check_dir(d->path, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "writable by everyone"));
	assert_int_equal(chmod(d->path, 0775), 0);
	assert_int_equal(gw_statefile_check_dir(d->path, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "its group"));
	assert_int_equal(chmod(d->path, 0700), 0);
	assert_int_equal(gw_statefile_check_dir(d->victim, err, sizeof(err)), -ENOTDIR);
}

/* The two state files of the NLM relay, written through the planted names. */
static void test_nsm_state_and_client_list_through_planted_names(void **state)
{
	struct dir *d = *state;
	char path[128], planted[140], err[256];
	int32_t st = 0;

	snprintf(path, sizeof(path), "%s/nfs.nsm-state", d->path);
	snprintf(planted, sizeof(planted), "%s.tmp", path);
	assert_int_equal(symlink(d->victim, planted), 0);
	assert_int_equal(nlm_restart_next_state(path, 1000, &st, err, sizeof(err)), 0);
	assert_true(st > 0);
	assert_victim_intact(d);
	/* a planted state file (a symlink to a number elsewhere) is not read */
	unlink(path);
	assert_int_equal(symlink(d->victim, path), 0);
	assert_int_equal(nlm_restart_next_state(path, 1000, &st, err, sizeof(err)), 0);
	assert_victim_intact(d);

	snprintf(path, sizeof(path), "%s/nfs.nlm-clients", d->path);
	snprintf(planted, sizeof(planted), "%s.tmp", path);
	assert_int_equal(symlink(d->victim, planted), 0);
	struct nlm_peer hosts[4];
	size_t n = 99;
	struct nlm_state_limits lim = { 0 }; /* the defaults */
	struct nlm_state *ns = nlm_state_new(&lim, 1);
	assert_non_null(ns);
	assert_int_equal(nlm_state_save_clients(ns, path, err, sizeof(err)), 0);
	assert_victim_intact(d);
	assert_int_equal(nlm_state_load_clients(path, hosts, 4, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 0);
	unlink(path);
	assert_int_equal(symlink(d->victim, path), 0); /* read through a link: refused */
	assert_int_equal(nlm_state_load_clients(path, hosts, 4, &n, err, sizeof(err)), -ELOOP);
	nlm_state_free(ns);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_planted_tmp_symlink_not_followed, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_planted_symlink_at_the_path_replaced_not_read,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_directory_others_may_write_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_nsm_state_and_client_list_through_planted_names, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
