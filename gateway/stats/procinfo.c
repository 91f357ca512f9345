/* SPDX-License-Identifier: MIT */
/*
 * gateway/stats/procinfo.c - this process as /proc describes it (see procinfo.h).
 *
 * Not from a library: libprocps would do it, but it is one more run-time
 * dependency for six numbers that proc(5) documents field by field.
 */
#include "gateway/stats/procinfo.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* proc(5): fields after "(comm)", counted from 3 (state). */
enum {
	STAT_UTIME = 14,
	STAT_STIME = 15,
	STAT_STARTTIME = 22,
	STAT_RSS = 24,
};

bool gw_procinfo_parse_stat(const char *stat, uint64_t btime, long hz, long page,
			    struct gw_procinfo *pi)
{
	/* The command name may hold spaces and ')': the fields start after the last ')'. */
	const char *p = strrchr(stat, ')');
	char *end;
	unsigned long long v[STAT_RSS + 1] = { 0 };

	memset(pi, 0, sizeof(*pi));
	if (!p || hz <= 0 || page <= 0)
		return false;
	pi->pid = (pid_t)strtol(stat, &end, 10);
	if (end == stat || pi->pid <= 0)
		return false;
	p++;
	if (*p != ' ' || !p[1])
		return false;
	p += 2; /* " S": the state letter is field 3 */
	for (unsigned field = 4; field <= STAT_RSS; field++) {
		while (*p && *p != ' ')
			p++;
		if (*p != ' ')
			return false;
		p++;
		errno = 0;
		/* Fields 4..24 are numbers; some (priority, nice) may be negative. */
		long long n = strtoll(p, &end, 10);
		if (end == p || errno)
			return false;
		v[field] = n < 0 ? 0 : (unsigned long long)n;
		p = end;
	}
	pi->cpu_user_s = (double)v[STAT_UTIME] / (double)hz;
	pi->cpu_system_s = (double)v[STAT_STIME] / (double)hz;
	pi->started_unix = (double)btime + (double)v[STAT_STARTTIME] / (double)hz;
	pi->rss_bytes = (uint64_t)v[STAT_RSS] * (uint64_t)page;
	return true;
}

static bool read_text(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return false;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	return n > 0;
}

/*
 * The "btime" line of /proc/stat, read line by line: it comes after a line
 * per CPU and the "intr" line, tens of kilobytes on a large server, so no
 * fixed buffer would do.
 */
bool gw_procinfo_parse_btime(FILE *f, uint64_t *btime)
{
	char *line = NULL;
	size_t cap = 0;
	bool found = false;

	while (!found && getline(&line, &cap, f) > 0)
		found = sscanf(line, "btime %" SCNu64, btime) == 1;
	free(line);
	return found;
}

static bool boot_time(uint64_t *btime)
{
	FILE *f = fopen("/proc/stat", "re");
	bool found;

	if (!f)
		return false;
	found = gw_procinfo_parse_btime(f, btime);
	fclose(f);
	return found;
}

static uint64_t count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	uint64_t n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n > 0 ? n - 1 : 0; /* not the directory's own descriptor */
}

bool gw_procinfo_read(struct gw_procinfo *pi)
{
	char stat[1024];
	uint64_t btime;
	struct rlimit rl;

	memset(pi, 0, sizeof(*pi));
	if (!read_text("/proc/self/stat", stat, sizeof(stat)) || !boot_time(&btime) ||
	    !gw_procinfo_parse_stat(stat, btime, sysconf(_SC_CLK_TCK), sysconf(_SC_PAGESIZE), pi))
		return false;
	pi->open_fds = count_fds();
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		pi->max_fds = rl.rlim_cur;
	return true;
}
