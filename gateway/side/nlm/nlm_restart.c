/* SPDX-License-Identifier: MIT */
#include "gateway/side/nlm/nlm_restart.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "common/host.h"
#include "common/statefile.h"
#include "common/backoff.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/random.h"
#include "common/xdr.h"
#include "conf/config.h"
#include "gateway/counters/counters.h"
#include "gateway/side/nlm/nlm_xdr.h"
#include "gateway/side/rpc/portmap.h"

enum {
	NR_MAX_MSG = 512,  /* a GETPORT reply or a void result */
	NR_CALL_MAX = 160, /* SM_NOTIFY: header 40, mon_name (an address) 48, state */
	NR_MAX_BACKOFF_MS = 8000,
	NR_DEFAULT_RETRY_MS = 1000,
	NR_DEFAULT_TIMEOUT_MS = 60000,
	NR_STATE_TEXT = 32,
};

struct nlm_restart {
	struct nlm_restart_config cfg;
	char *path;
	struct sockaddr_storage server;
	socklen_t server_len;
	char mon_name[INET6_ADDRSTRLEN]; /* the upstream-side address */
	bool have_port, done;
	uint32_t xid;
	uint64_t sent_us, deadline_us;
	struct gw_backoff backoff; /* the delay before sending again */
	size_t len;
	uint8_t msg[NR_CALL_MAX];
	int fd; /* connected: to the portmapper, then to statd */
	struct event *read_ev, *timer;
	struct nlm_restart_stats stats;
};

/* ---- the state number ------------------------------------------------------------ */

/* The number in @path: > 0, or 0 for none (no file, or not one number). */
static int32_t read_state(const char *path)
{
	char buf[NR_STATE_TEXT], *end;
	int fd = gw_statefile_open_read(path);
	ssize_t n;
	long v;

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	errno = 0;
	v = strtol(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '\n') || v <= 0 || v > INT32_MAX)
		return 0;
	return (int32_t)v;
}

/* @state into @path through a temporary file: a crash leaves the old file or the new. */
static int write_state(const char *path, int32_t state)
{
	char tmp[4096], text[NR_STATE_TEXT];
	int len = snprintf(text, sizeof(text), "%d\n", state), e = 0;
	int fd = gw_statefile_create(path, 0644, tmp, sizeof(tmp));

	if (fd < 0)
		return fd;
	if (write(fd, text, (size_t)len) != len) {
		e = errno ? -errno : -EIO;
		unlink(tmp);
	} else {
		e = gw_statefile_commit(fd, tmp, path);
	}
	close(fd);
	return e;
}

int nlm_restart_next_state(const char *path, int64_t now_s, int32_t *state, char *err,
			   size_t errlen)
{
	int32_t prev = read_state(path);
	/* From the clock too: a standby without the file still goes past the instance before. */
	int64_t next = now_s > 0 && now_s < INT32_MAX ? now_s : 1;
	int rc;

	if (prev && (int64_t)prev + 2 > next)
		next = (int64_t)prev + 2;
	if (next >= INT32_MAX)
		next = 1; /* statd compares for a change only: wrapping is still a new state */
	*state = (int32_t)(next | 1);
	rc = write_state(path, *state);
	if (rc)
		snprintf(err, errlen, "cannot keep the NSM state number in %s: %s", path,
			 strerror(-rc));
	return rc;
}

/* ---- the SM_NOTIFY to the server -------------------------------------------------- */

static void send_current(struct nlm_restart *nr)
{
	nr->sent_us = gw_now_us();
	nr->stats.sent++;
	if (send(nr->fd, nr->msg, nr->len, 0) < 0)
		gw_debug("%s: nlm restart: send: %s", nr->cfg.route->name, strerror(errno));
}

static size_t encode_notify(struct nlm_restart *nr)
{
	size_t h = rpc_encode_call_hdr(nr->msg, sizeof(nr->msg), nr->xid, NSM_PROG, NSM_VERS,
				       NSMPROC_NOTIFY);
	uint32_t nl = (uint32_t)strlen(nr->mon_name);

	if (!h || sizeof(nr->msg) - h < 4 + xdr_align(nl) + 4)
		return 0;
	xdr_put32(nr->msg + h, nl);
	memset(nr->msg + h + 4, 0, xdr_align(nl));
	memcpy(nr->msg + h + 4, nr->mon_name, nl);
	xdr_put32(nr->msg + h + 4 + xdr_align(nl), (uint32_t)nr->stats.state);
	return h + 4 + xdr_align(nl) + 4;
}

static void finish(struct nlm_restart *nr, bool delivered, const char *why)
{
	nr->done = true;
	if (delivered) {
		nr->stats.delivered = 1;
		gw_info("%s: nlm restart: the server's statd was told this gateway restarted "
			"(SM_NOTIFY mon_name %s state %d): its lockd drops the locks of the "
			"previous instance",
			nr->cfg.route->name, nr->mon_name, nr->stats.state);
	} else {
		nr->stats.not_delivered = 1;
		gw_warn("%s: nlm restart: the server was not told this gateway restarted (%s): "
			"locks the previous instance held may stay on the server",
			nr->cfg.route->name, why);
	}
}

/* The portmapper's answer: on to statd; statd's: done. */
static void on_reply(struct nlm_restart *nr, const uint8_t *msg, size_t len)
{
	struct sockaddr_storage to = nr->server;
	uint16_t port;
	size_t off;

	if (nr->have_port) {
		if (rpc_reply_results(msg, len, &off))
			finish(nr, true, NULL);
		else
			finish(nr, false, "its statd refused the SM_NOTIFY");
		return;
	}
	if (pmap_decode_udp_lookup_reply(msg, len, to.ss_family, &port) != 0 || port == 0) {
		finish(nr, false, "no NSM (statd) registered at its portmapper");
		return;
	}
	gw_sockaddr_set_port(&to, port);
	nr->have_port = true;
	nr->xid = gw_random32();
	nr->len = encode_notify(nr);
	if (!nr->len || connect(nr->fd, (struct sockaddr *)&to, nr->server_len) != 0) {
		finish(nr, false, "the SM_NOTIFY could not be sent");
		return;
	}
	gw_backoff_init(&nr->backoff, nr->cfg.retry_ms, NR_MAX_BACKOFF_MS);
	send_current(nr);
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
	struct nlm_restart *nr = arg;
	uint8_t buf[NR_MAX_MSG];
	ssize_t n;

	(void)what;
	/* Connected: only the server's portmapper, then its statd, reach this socket. */
	while ((n = recv(fd, buf, sizeof(buf), 0)) >= 0) {
		if (nr->done || n < 8 || xdr_get32(buf) != nr->xid)
			nr->cfg.counters->events[GW_EV_UNMATCHED_REPLY]++;
		else
			on_reply(nr, buf, (size_t)n);
	}
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct nlm_restart *nr = arg;
	uint64_t now = gw_now_us();

	(void)fd;
	(void)what;
	if (nr->done)
		return;
	if (now >= nr->deadline_us) {
		nr->cfg.counters->events[GW_EV_CALL_TIMEOUT]++;
		finish(nr, false,
		       nr->have_port ? "its statd did not answer"
				     : "its portmapper did not answer");
		return;
	}
	if (gw_backoff_due(&nr->backoff, nr->sent_us, now)) {
		send_current(nr);
		gw_backoff_next(&nr->backoff);
	}
}

/*
 * Connect toward the server's portmapper, or its statd when its port is
 * configured; the address the kernel picks is mon_name.
 */
static bool open_socket(struct nlm_restart *nr)
{
	struct sockaddr_storage to = nr->server, local = { 0 };
	socklen_t ll = sizeof(local);
	uint16_t port = nr->cfg.statd_port ? nr->cfg.statd_port : nr->cfg.pmap_port;

	gw_sockaddr_set_port(&to, port);
	nr->fd = socket(to.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (nr->fd < 0 || connect(nr->fd, (struct sockaddr *)&to, nr->server_len) != 0 ||
	    getsockname(nr->fd, (struct sockaddr *)&local, &ll) != 0)
		return false;
	const void *a = local.ss_family == AF_INET6
				? (const void *)&((struct sockaddr_in6 *)&local)->sin6_addr
				: (const void *)&((struct sockaddr_in *)&local)->sin_addr;
	return inet_ntop(local.ss_family, a, nr->mon_name, sizeof(nr->mon_name)) != NULL;
}

struct nlm_restart *nlm_restart_start(struct event_base *base, const struct nlm_restart_config *cfg,
				      const struct sockaddr *server, socklen_t server_len,
				      char *err, size_t errlen)
{
	struct nlm_restart *nr = calloc(1, sizeof(*nr));
	const char *what = "memory";
	char why[512];

	if (!nr || server_len > sizeof(nr->server))
		goto fail;
	nr->cfg = *cfg;
	nr->fd = -1;
	nr->path = strdup(cfg->state_path);
	if (!nr->path)
		goto fail;
	if (!nr->cfg.retry_ms)
		nr->cfg.retry_ms = NR_DEFAULT_RETRY_MS;
	if (!nr->cfg.timeout_ms)
		nr->cfg.timeout_ms = NR_DEFAULT_TIMEOUT_MS;
	memcpy(&nr->server, server, server_len);
	nr->server_len = server_len;
	if (nlm_restart_next_state(nr->path, (int64_t)time(NULL), &nr->stats.state, why,
				   sizeof(why)) != 0)
		gw_warn("%s: nlm restart: %s; using %d, from the clock", cfg->route->name, why,
			nr->stats.state);
	else
		nr->stats.persisted = 1;
	what = "the socket toward the server's statd";
	if (!open_socket(nr))
		goto fail;
	nr->xid = gw_random32(); /* unguessable (common/random.h) */
	/* statd's port known: its SM_NOTIFY at once, no portmapper asked. */
	nr->have_port = nr->cfg.statd_port != 0;
	nr->len = nr->have_port ? encode_notify(nr)
				: pmap_encode_udp_lookup(nr->msg, sizeof(nr->msg), nr->xid,
							 nr->server.ss_family, NSM_PROG, NSM_VERS);
	nr->read_ev = event_new(base, nr->fd, EV_READ | EV_PERSIST, on_read, nr);
	nr->timer = event_new(base, -1, EV_PERSIST, on_timer, nr);
	struct timeval tick = gw_ms_timeval(nr->cfg.retry_ms / 4 ? nr->cfg.retry_ms / 4 : 1);
	if (!nr->len || !nr->read_ev || !nr->timer || event_add(nr->read_ev, NULL) != 0 ||
	    event_add(nr->timer, &tick) != 0)
		goto fail;
	gw_backoff_init(&nr->backoff, nr->cfg.retry_ms, NR_MAX_BACKOFF_MS);
	nr->deadline_us = gw_now_us() + (uint64_t)nr->cfg.timeout_ms * 1000;
	gw_info("%s: nlm restart: telling the server this gateway restarted (NSM state %d, "
		"mon_name %s)",
		cfg->route->name, nr->stats.state, nr->mon_name);
	send_current(nr);
	return nr;
fail:
	snprintf(err, errlen, "route %s: cannot start %s: %s", cfg->route->name, what,
		 strerror(errno ? errno : ENOMEM));
	nlm_restart_stop(nr);
	return NULL;
}

void nlm_restart_stop(struct nlm_restart *nr)
{
	if (!nr)
		return;
	if (nr->read_ev)
		event_free(nr->read_ev);
	if (nr->timer)
		event_free(nr->timer);
	if (nr->fd >= 0)
		close(nr->fd);
	free(nr->path);
	free(nr);
}

const struct nlm_restart_stats *nlm_restart_stats(const struct nlm_restart *nr)
{
	return &nr->stats;
}

void nlm_restart_set_route(struct nlm_restart *nr, const struct gw_route *route)
{
	nr->cfg.route = route;
}
