/* SPDX-License-Identifier: MIT */
/*
 * gateway/side/nlm/nlm_restart.h - the gateway's own restart told to the server's
 * statd, so that the server's lockd drops the locks the previous instance
 * held (docs/forward-mode.md, "NLM across a gateway restart").
 *
 * The upstream owners of a gateway instance carry its instance id
 * (gateway/side/nlm/nlm_state.h): after a restart (a crash, an upgrade, a failover
 * to a standby with the same addresses) no client's later UNLOCK can name
 * them again, and the server would hold their locks for ever. A restarted
 * NFS client host ends that the same way: its sm-notify sends SM_NOTIFY
 * to each server with a new NSM state number, and the server's statd
 * hands it to its lockd, which frees every lock of that host. So on start
 * a route asks the server's portmapper (port 111) for NSM v1 over UDP and
 * sends SM_NOTIFY from the upstream-side address with that address,
 * printed, as mon_name: Linux lockd monitors a client host by the
 * address its NLM calls came from (nsm_use_hostnames=0, the default).
 *
 * The state number is one more than any the previous instance used (odd,
 * as NSM's "up" states are), kept in a small state file written
 * atomically; when it cannot be read or written, a number from the clock
 * is used, which is larger than any earlier start's unless the clock went
 * back. Resent (retry_ms, doubling up to 8 s) until the server's statd
 * answers or timeout_ms. One call in flight; nothing held per client.
 */
#ifndef GW_GATEWAY_NLM_RESTART_H
#define GW_GATEWAY_NLM_RESTART_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct event_base;
struct gw_counters;
struct gw_route;
struct nlm_restart;

/* The default state file of route R: NLM_RESTART_STATE_DIR "/R.nsm-state". */
#define NLM_RESTART_STATE_DIR "/var/lib/rpcrdma-gw"

struct nlm_restart_config {
	const struct gw_route *route; /* its name, for logs */
	struct gw_counters *counters; /* the route's */
	const char *state_path;	      /* the NSM state file (copied) */
	uint16_t pmap_port;	      /* the server's portmapper (111) */
	uint16_t statd_port;	      /* the server's statd; 0: asked of its portmapper */
	uint32_t retry_ms;	      /* first resend (default 1000), doubling to 8 s */
	uint32_t timeout_ms;	      /* then give up (default 60000) */
};

struct nlm_restart_stats {
	int32_t state;		/* the NSM state number sent */
	uint64_t persisted;	/* 1 when it was kept in the state file, else 0 */
	uint64_t sent;		/* calls sent: GETPORT and SM_NOTIFY, resends included */
	uint64_t delivered;	/* 1 once the server's statd answered the SM_NOTIFY */
	uint64_t not_delivered; /* 1 when it did not in time (or refused) */
};

/*
 * The next NSM state number for @path: larger than the one it holds and
 * than @now_s (odd), written back atomically (a temporary file, fsync,
 * rename). 0, or -errno with a message in @err (then *@state is still
 * set, from the clock: the caller warns and goes on).
 */
int nlm_restart_next_state(const char *path, int64_t now_s, int32_t *state, char *err,
			   size_t errlen);

/* NULL with a message in @err when the socket toward the server cannot be made. */
struct nlm_restart *nlm_restart_start(struct event_base *base, const struct nlm_restart_config *cfg,
				      const struct sockaddr *server, socklen_t server_len,
				      char *err, size_t errlen);

/*
 * After a configuration reload: the route's new settings (the old ones are
 * freed once every worker has taken the new configuration).
 */
void nlm_restart_set_route(struct nlm_restart *nr, const struct gw_route *route);
void nlm_restart_stop(struct nlm_restart *nr);
const struct nlm_restart_stats *nlm_restart_stats(const struct nlm_restart *nr);

#endif
