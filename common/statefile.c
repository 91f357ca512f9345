/* SPDX-License-Identifier: MIT */
/* common/statefile.c - state files written without following planted names (statefile.h). */
#include "common/statefile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int gw_statefile_create(const char *path, mode_t mode, char *tmp, size_t tmplen)
{
	int n = snprintf(tmp, tmplen, "%s.XXXXXX", path);

	if (n < 0 || (size_t)n >= tmplen)
		return -ENAMETOOLONG;
	/* mkostemp: O_EXCL, mode 0600, the name unpredictable */
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, mode) != 0) {
		int e = -errno;
		close(fd);
		unlink(tmp);
		return e;
	}
	return fd;
}

int gw_statefile_commit(int fd, const char *tmp, const char *path)
{
	int e = 0;

	if (fsync(fd) != 0)
		e = -errno;
	if (!e && rename(tmp, path) != 0)
		e = -errno;
	if (e)
		unlink(tmp);
	return e;
}

int gw_statefile_open_read(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	return fd < 0 ? -errno : fd;
}

int gw_statefile_check_dir(const char *dir, char *err, size_t errlen)
{
	struct stat st;

	if (stat(dir, &st) != 0) {
		int e = errno;
		snprintf(err, errlen, "state directory %s: %s", dir, strerror(e));
		return -e;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "state directory %s: not a directory", dir);
		return -ENOTDIR;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(err, errlen,
			 "state directory %s: writable by %s (mode %04o): anyone who can write "
			 "there could replace the gateway's state files; chmod go-w it",
			 dir, st.st_mode & S_IWOTH ? "everyone" : "its group",
			 (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		snprintf(err, errlen,
			 "state directory %s: owned by uid %u, neither root nor the gateway's "
			 "user (%u)",
			 dir, (unsigned)st.st_uid, (unsigned)geteuid());
		return -EPERM;
	}
	return 0;
}
