/* SPDX-License-Identifier: MIT */
/*
 * gateway/stats/procinfo.h - what the kernel says of this process: CPU time,
 * resident memory, open descriptors and when it started.
 *
 * Read from /proc on each call (only the stats endpoint asks, a few times a
 * minute), so nothing is kept between calls. The start time is what tells a
 * restarted gateway from a running one: `rpcrdma-gw stat` compares it between
 * two documents, as Prometheus does with process_start_time_seconds.
 */
#ifndef GW_GATEWAY_PROCINFO_H
#define GW_GATEWAY_PROCINFO_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct gw_procinfo {
	pid_t pid;
	double started_unix; /* seconds since the epoch */
	double cpu_user_s;   /* utime */
	double cpu_system_s; /* stime */
	uint64_t rss_bytes;
	uint64_t open_fds;
	uint64_t max_fds; /* RLIMIT_NOFILE, soft */
};

/* Fill @pi for this process; false (and @pi zeroed) if /proc cannot be read. */
bool gw_procinfo_read(struct gw_procinfo *pi);

/*
 * The part of gw_procinfo_read that parses: @stat is the text of
 * /proc/PID/stat, @btime the boot time (seconds since the epoch), @hz the
 * clock ticks per second, @page the page size. Separate so that it can be
 * tested on texts the kernel could write (a command name with spaces and
 * parentheses). False if the text is not one.
 */
bool gw_procinfo_parse_stat(const char *stat, uint64_t btime, long hz, long page,
			    struct gw_procinfo *pi);

/*
 * The boot time (seconds since the epoch) from the text of /proc/stat in
 * @f; false if it has no "btime" line. Separate to be tested on a large
 * server's text, where the line comes after tens of kilobytes.
 */
bool gw_procinfo_parse_btime(FILE *f, uint64_t *btime);

#endif
