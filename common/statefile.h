/* SPDX-License-Identifier: MIT */
/*
 * common/statefile.h - small files of state kept across restarts (the NSM
 * state number, the NLM client list), written so that nobody else who can
 * reach the directory can make the gateway write or read elsewhere.
 *
 * A new version is written into a fresh file beside the old one and renamed
 * over it, so that a crash leaves the old file or the new. The fresh file is
 * made by mkstemp(3), which creates with O_EXCL: a name planted in the
 * directory beforehand (a symlink to /etc/shadow, say) is never opened, as
 * "PATH.tmp" opened with O_CREAT|O_TRUNC would have been. The rename replaces
 * a symlink planted at PATH itself instead of following it. Reads use
 * O_NOFOLLOW. A directory that others may write in is refused altogether:
 * whoever can write there can swap the files between the gateway's checks
 * and its uses.
 */
#ifndef GW_COMMON_STATEFILE_H
#define GW_COMMON_STATEFILE_H

#include <stddef.h>
#include <sys/types.h>

/*
 * A fresh file beside @path for its next version, with @mode: its
 * descriptor (close-on-exec), and its name in @tmp; -errno when it cannot
 * be made.
 */
int gw_statefile_create(const char *path, mode_t mode, char *tmp, size_t tmplen);

/*
 * The new version in @fd (the caller has written it whole) reaches the disk,
 * then becomes @path. 0 or -errno; on error @tmp is removed. The caller
 * closes @fd (or its FILE) either way.
 */
int gw_statefile_commit(int fd, const char *tmp, const char *path);

/* Open @path to read it, never through a symlink: a descriptor or -errno (-ELOOP). */
int gw_statefile_open_read(const char *path);

/*
 * May the gateway keep state in directory @dir? No when it is not a
 * directory, or users other than its owner may write in it (group or
 * others' write bit), or its owner is neither root nor this process's user:
 * -EPERM (or -ENOTDIR, or stat's error) with the reason in @err.
 */
int gw_statefile_check_dir(const char *dir, char *err, size_t errlen);

#endif
