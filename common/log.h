/* SPDX-License-Identifier: MIT */
/*
 * common/log.h - the gateway's one logging facility.
 *
 * Messages go to stderr (with a timestamp) or to syslog. The level and
 * destination are configuration, set once at start-up and on SIGHUP; they
 * are the only state here. SIGHUP sets them on the main thread while the
 * other workers' threads read them: relaxed atomics, as a setting read
 * a moment late does no harm. Callers test gw_log_enabled() before building
 * expensive arguments on the data path; the macros do it for them.
 */
#ifndef GW_COMMON_LOG_H
#define GW_COMMON_LOG_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>

enum gw_log_level {
	GW_LOG_ERR = 0,
	GW_LOG_WARN,
	GW_LOG_INFO,
	GW_LOG_DEBUG,
};

/* Configuration: the most verbose level that is printed. */
extern _Atomic(enum gw_log_level) gw_log_max_level;

void gw_log_set_level(enum gw_log_level level);
/* Send messages to syslog (ident "rpcrdma-gw") instead of stderr. */
void gw_log_use_syslog(bool on);
/* Parse "error", "warning", "info" or "debug"; false when unknown. */
bool gw_log_level_parse(const char *name, enum gw_log_level *out);

void gw_log(enum gw_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gw_vlog(enum gw_log_level level, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

static inline bool gw_log_enabled(enum gw_log_level level)
{
	return level <= atomic_load_explicit(&gw_log_max_level, memory_order_relaxed);
}

#define gw_err(...)  gw_log(GW_LOG_ERR, __VA_ARGS__)
#define gw_warn(...) gw_log(GW_LOG_WARN, __VA_ARGS__)
#define gw_info(...)                                                                               \
	do {                                                                                       \
		if (gw_log_enabled(GW_LOG_INFO))                                                   \
			gw_log(GW_LOG_INFO, __VA_ARGS__);                                          \
	} while (0)
#define gw_debug(...)                                                                              \
	do {                                                                                       \
		if (gw_log_enabled(GW_LOG_DEBUG))                                                  \
			gw_log(GW_LOG_DEBUG, __VA_ARGS__);                                         \
	} while (0)

#endif
