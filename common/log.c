/* SPDX-License-Identifier: MIT */
#include "common/log.h"

#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

_Atomic(enum gw_log_level) gw_log_max_level = GW_LOG_INFO;
static atomic_bool log_to_syslog;

static const char *const level_names[] = {
	[GW_LOG_ERR] = "error",
	[GW_LOG_WARN] = "warning",
	[GW_LOG_INFO] = "info",
	[GW_LOG_DEBUG] = "debug",
};

void gw_log_set_level(enum gw_log_level level)
{
	atomic_store_explicit(&gw_log_max_level, level, memory_order_relaxed);
}

void gw_log_use_syslog(bool on)
{
	if (on && !log_to_syslog)
		openlog("rpcrdma-gw", LOG_PID | LOG_NDELAY, LOG_DAEMON);
	else if (!on && log_to_syslog)
		closelog();
	log_to_syslog = on;
}

bool gw_log_level_parse(const char *name, enum gw_log_level *out)
{
	for (unsigned i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcmp(name, level_names[i]) == 0) {
			*out = (enum gw_log_level)i;
			return true;
		}
	}
	return false;
}

void gw_vlog(enum gw_log_level level, const char *fmt, va_list ap)
{
	static const int syslog_prio[] = {
		[GW_LOG_ERR] = LOG_ERR,
		[GW_LOG_WARN] = LOG_WARNING,
		[GW_LOG_INFO] = LOG_INFO,
		[GW_LOG_DEBUG] = LOG_DEBUG,
	};

	if (!gw_log_enabled(level))
		return;
	if (log_to_syslog) {
		vsyslog(syslog_prio[level], fmt, ap);
		return;
	}

	struct timespec ts;
	struct tm tm;
	char stamp[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	flockfile(stderr);
	fprintf(stderr, "%s.%03ld rpcrdma-gw %s: ", stamp, ts.tv_nsec / 1000000L,
		level_names[level]);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	funlockfile(stderr);
}

void gw_log(enum gw_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	gw_vlog(level, fmt, ap);
	va_end(ap);
}
