/* SPDX-License-Identifier: MIT */
#include "gateway/side/side_route.h"

#include <errno.h>
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
#include "common/clock.h"
#include "common/log.h"
#include "conf/config.h"
#include "gateway/counters/counters.h"
#include "gateway/side/nlm/nlm_async.h"
#include "gateway/side/nlm/nlm_callback.h"
#include "gateway/side/nlm/nlm_notify.h"
#include "gateway/side/nlm/nlm_relay.h"
#include "gateway/side/nlm/nlm_restart.h"
#include "gateway/side/nlm/nlm_state.h"
#include "gateway/side/rpc/portmap.h"
#include "gateway/side/rpc/rpcb_reg.h"
#include "gateway/side/rpc/side_relay.h"
#include "gateway/side/rpc/side_service.h"

enum {
	PROG_NFS = 100003,
	PROG_MOUNT = 100005,
	PROG_NFSACL = 100227,
	/*
	 * The largest side call: a MOUNT path (1024 bytes) behind an RPC
	 * header with two 400-byte credentials, with room to spare.
	 */
	SIDE_MAX_MSG = 4096,
	SIDE_MAX_CONNS = 64,
	SIDE_IDLE_MS = 60000,
	SIDE_MAX_OUTPUT = 256 * 1024,
	/*
	 * The MOUNT relay's limits; the NLM relay's are the route's
	 * nlm_max_pending_calls and nlm_call_timeout_s, these when a route not
	 * made by the loader (a test's) leaves them 0.
	 */
	RELAY_MAX_CALLS = 128,
	RELAY_RETRY_MS = 1000,
	RELAY_TIMEOUT_MS = 15000,
	/*
	 * The gateway's own grace period after its restart when the route
	 * leaves nlm_reclaim_window_s 0: Linux lockd's default
	 * (nlm_grace_period 90 s), as long as nlm_notify re-sends.
	 */
	NLM_RECLAIM_WINDOW_MS = 90000,
	NLM_NOTIFY_HOSTS = 1024,   /* nlm_notify's own default, for the same case */
	NLM_SAVE_PERIOD_MS = 1000, /* the client list written at most this often */
};

struct gw_side {
	const struct gw_route *route;
	struct gw_counters *counters;
	struct pmap_table table;
	struct side_service *pmap; /* the route's own portmapper (one listen address) */
	struct rpcb_reg *host_reg; /* or the host rpcbind's mappings (the wildcard) */
	struct side_service *mount;
	struct side_relay *mount_relay;
	struct side_service *nlm;
	struct side_service *nsm;
	struct side_relay *nlm_relay;
	struct nlm_relay *nlm_rw;    /* the NLM relay's rewriting, and the NSM service */
	struct nlm_callback *nlm_cb; /* the server's GRANTED relayed to clients */
	struct nlm_async *nlm_async; /* the clients' _MSG calls and their results */
	struct nlm_notify *nlm_nt;   /* the server's SM_NOTIFY relayed to clients */
	struct nlm_restart *nlm_rs;  /* the gateway's restart told to the server */
	struct event *save_ev;	     /* the client list saved when it changed */
	bool clients_loaded;	     /* the list was read: it may be written */
	bool save_pending, save_failed;
	char clients_path[512];
	char hostname[256];
	uint8_t out[8192];
};

/* One call to the portmapper: answered at once from the table. */
static void pmap_on_call(void *arg, struct side_service *svc, const struct side_service_peer *peer,
			 const uint8_t *msg, size_t len)
{
	struct gw_side *side = arg;
	struct rpc_call_hdr h;
	size_t n;
	enum pmap_outcome o =
		pmap_answer(&side->table, msg, len, side->out, sizeof(side->out), &n, &h);

	switch (o) {
	case PMAP_NO_REPLY:
		side->counters->events[GW_EV_MALFORMED_RECORD]++;
		return;
	case PMAP_GARBAGE:
		side->counters->events[GW_EV_GARBAGE_ARGS]++;
		break;
	case PMAP_RPC_ERROR:
	case PMAP_TOO_LARGE:
		side->counters->events[GW_EV_RPC_ERROR_REPLY]++;
		break;
	case PMAP_ANSWERED:
	case PMAP_REFUSED:
		gw_counters_count_call(side->counters, h.prog, h.vers, h.proc);
		gw_counters_count_reply(side->counters, h.prog, h.vers, h.proc);
		break;
	}
	if (n)
		side_service_reply(svc, peer, side->out, n);
}

typedef bool (*offer_fn)(void *arg, uint32_t prog, uint32_t vers, uint32_t proto, uint16_t port);

/*
 * What the route offers, each (program, version, protocol, port) to @fn:
 * NFS and NFSACL on the route's port, MOUNT, NLM, NSM. The route's own
 * portmapper adds itself; the host's rpcbind is there already.
 */
static bool offer(const struct gw_side *side, offer_fn fn, void *arg)
{
	uint16_t nfs = gw_sockaddr_port(&side->route->listen.addr);
	uint16_t mnt = side_service_port(side->mount);
	uint16_t nlm = side_service_port(side->nlm), nsm = side_service_port(side->nsm);
	bool ok = true;

	/*
	 * A forward route relays NFS over TCP only (no UDP listener). A reverse
	 * route's NFS is RPC-over-RDMA, which has no portmapper protocol number:
	 * its clients name the port (proto=rdma means 20049) and ask here only
	 * for MOUNT.
	 */
	if (side->route->mode == GW_MODE_FORWARD) {
		ok &= fn(arg, PROG_NFS, 3, PMAP_IPPROTO_TCP, nfs);
		ok &= fn(arg, PROG_NFS, 4, PMAP_IPPROTO_TCP, nfs);
		ok &= fn(arg, PROG_NFSACL, 3, PMAP_IPPROTO_TCP, nfs);
	}
	for (uint32_t v = 1; v <= 3; v++) {
		ok &= fn(arg, PROG_MOUNT, v, PMAP_IPPROTO_UDP, mnt);
		ok &= fn(arg, PROG_MOUNT, v, PMAP_IPPROTO_TCP, mnt);
	}
	/* NLM versions 1, 3 and 4 (there is no 2), and NSM for the clients' SM_NOTIFY. */
	for (uint32_t v = 1; v <= 4; v += v == 1 ? 2 : 1) {
		ok &= fn(arg, NLM_PROG, v, PMAP_IPPROTO_UDP, nlm);
		ok &= fn(arg, NLM_PROG, v, PMAP_IPPROTO_TCP, nlm);
	}
	ok &= fn(arg, NSM_PROG, 1, PMAP_IPPROTO_UDP, nsm);
	ok &= fn(arg, NSM_PROG, 1, PMAP_IPPROTO_TCP, nsm);
	return ok;
}

static bool table_offer(void *arg, uint32_t prog, uint32_t vers, uint32_t proto, uint16_t port)
{
	return pmap_table_add(arg, prog, vers, proto, port);
}

static bool reg_offer(void *arg, uint32_t prog, uint32_t vers, uint32_t proto, uint16_t port)
{
	return rpcb_reg_add(arg, prog, vers, proto, port);
}

/* What the route's own portmapper offers: itself, and the route's services. */
static bool fill_table(struct gw_side *side)
{
	struct pmap_table *t = &side->table;
	uint16_t pm = side_service_port(side->pmap);
	bool ok = true;

	t->addr = side->route->listen.addr;
	t->addrlen = side->route->listen.addrlen;
	for (uint32_t v = PMAP_VERS_LO; v <= PMAP_VERS_HI; v++) {
		ok &= pmap_table_add(t, PMAP_PROG, v, PMAP_IPPROTO_TCP, pm);
		ok &= pmap_table_add(t, PMAP_PROG, v, PMAP_IPPROTO_UDP, pm);
	}
	return ok && offer(side, table_offer, t);
}

static struct side_service *start_svc(struct gw_side *side, struct event_base *base,
				      const char *name, uint16_t port, side_service_msg_fn fn,
				      void *arg)
{
	struct sockaddr_storage ss = side->route->listen.addr;
	struct side_service_config sc = {
		.name = name,
		.route = side->route,
		.counters = side->counters,
		.max_msg = SIDE_MAX_MSG,
		.max_conns = SIDE_MAX_CONNS,
		.idle_ms = SIDE_IDLE_MS,
		.max_output = SIDE_MAX_OUTPUT,
		.on_msg = fn,
		.arg = arg,
	};

	gw_sockaddr_set_port(&ss, port);
	return side_service_start(base, (const struct sockaddr *)&ss, side->route->listen.addrlen,
				  &sc);
}

static bool send_own(void *arg, const uint8_t *msg, size_t len)
{
	return side_relay_call_own(arg, msg, len);
}

/*
 * The NLM relay (to the server's lockd: upstream_nlm_port, else found
 * through its rpcbind) with
 * nlm_relay's rewriting of lock owners, and the NSM service beside it.
 * @mount is the MOUNT relay's configuration: the same server and limits.
 */
static bool start_nlm(struct gw_side *side, struct event_base *base,
		      const struct side_relay_config *mount, const char **what)
{
	const struct gw_route *r = side->route;

	/* The server's statd monitors the caller name: the gateway's own. */
	if (gethostname(side->hostname, sizeof(side->hostname) - 1) != 0 || !side->hostname[0])
		snprintf(side->hostname, sizeof(side->hostname), "rpcrdma-gw");
	/* 0 (a route not from the loader): the module's default. */
	struct nlm_relay_config nc = {
		.route_name = r->name,
		.caller_name = side->hostname,
		.counters = side->counters,
		.base = base,
		/* The release queue re-sends an UNLOCK once the relay has given it up. */
		.send_timeout_ms = r->nlm_call_timeout_ms ? r->nlm_call_timeout_ms
							  : RELAY_TIMEOUT_MS,
		.limits = {
			.max_clients = r->nlm_max_clients,
			.max_clients_per_prefix = r->nlm_max_clients_per_prefix,
			.max_owners = r->nlm_max_owners,
			.max_locks = r->nlm_max_locks,
			.max_locks_per_client = r->nlm_max_locks_per_client,
			.max_owners_per_client = r->nlm_max_owners_per_client,
		},
	};
	*what = "the NLM relay's state";
	side->nlm_rw = nlm_relay_new(&nc);
	if (!side->nlm_rw)
		return false;
	struct side_relay_config rc = *mount;
	rc.name = "nlm";
	rc.prog = NLM_PROG;
	rc.vers_lo = 1;
	rc.vers_hi = 4;
	rc.server_port = (uint16_t)r->upstream_nlm_port; /* 0: the server's portmapper */
	if (r->nlm_max_pending_calls)
		rc.max_calls = r->nlm_max_pending_calls;
	if (r->nlm_call_timeout_ms)
		rc.timeout_ms = r->nlm_call_timeout_ms;
	rc.hooks = (struct side_relay_hooks){ .call = nlm_relay_call_hook,
					      .reply = nlm_relay_reply_hook,
					      .gone = nlm_relay_gone_hook,
					      .arg = side->nlm_rw };
	*what = "the NLM relay's upstream socket";
	side->nlm_relay = side_relay_start(base, &rc);
	if (!side->nlm_relay)
		return false;
	nlm_relay_set_send(side->nlm_rw, send_own, side->nlm_relay);
	*what = "the NLM relay";
	side->nlm = start_svc(side, base, "nlm", 0, side_relay_on_call, side->nlm_relay);
	if (!side->nlm)
		return false;
	*what = "the NSM service";
	side->nsm = start_svc(side, base, "nsm", 0, nlm_relay_on_nsm, side->nlm_rw);
	return side->nsm != NULL;
}

/*
 * The route's file @name in the state directory: the route's
 * state_directory, else the one systemd's StateDirectory= names (and makes
 * writable under ProtectSystem=strict), else the default; the two not from
 * systemd are made if missing. Its absence is warned by the file's users.
 * False, with the reason logged, when the directory is one the gateway must
 * not keep state in (others may write there: gw_statefile_check_dir()).
 */
static bool state_path(const struct gw_route *r, const char *name, char *path, size_t len)
{
	char err[600];

	const char *dir = r->state_directory;
	size_t dl = dir ? strlen(dir) : 0;

	if (!dl) {
		dir = getenv("STATE_DIRECTORY");
		dl = dir && dir[0] == '/' ? strcspn(dir, ":") : 0; /* the first of a list */
	} else if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		gw_debug("%s: mkdir %s: %s", r->name, dir, strerror(errno));
	}
	if (!dl) {
		dir = NLM_RESTART_STATE_DIR;
		dl = strlen(dir);
		if (mkdir(dir, 0755) != 0 && errno != EEXIST)
			gw_debug("%s: mkdir %s: %s", r->name, dir, strerror(errno));
	}
	snprintf(path, len, "%.*s/%s.%s", (int)dl, dir, r->name, name);
	char d[512];
	snprintf(d, sizeof(d), "%.*s", (int)dl, dir);
	if (gw_statefile_check_dir(d, err, sizeof(err)) == 0)
		return true;
	gw_err("%s: %s: its %s is not kept", r->name, err, name);
	path[0] = '\0';
	return false;
}

/*
 * Tell the server's statd that this gateway (re)started, so that its lockd
 * drops the locks of the previous instance's owners, which no client can
 * name again. Not fatal: the relay works without it, only stale locks of a
 * previous instance may stay (warned).
 */
static void start_nlm_restart(struct gw_side *side, struct event_base *base)
{
	const struct gw_route *r = side->route;
	char path[512], err[512];
	struct nlm_restart_config c = {
		.route = r,
		.counters = side->counters,
		.state_path = path,
		.pmap_port = PMAP_PORT,
		.statd_port = (uint16_t)r->upstream_nsm_port, /* 0: the server's portmapper */
	};

	if (!state_path(r, "nsm-state", path, sizeof(path))) {
		gw_warn("%s: nlm: the server is not told of this restart: locks a previous "
			"instance held may stay on the server",
			r->name);
		return;
	}
	side->nlm_rs = nlm_restart_start(base, &c, (const struct sockaddr *)&r->upstream.addr,
					 r->upstream.addrlen, err, sizeof(err));
	if (!side->nlm_rs)
		gw_warn("%s; locks a previous instance held may stay on the server", err);
}

/* Write the client list if it changed; a failure is warned once and retried. */
static void save_clients(struct gw_side *side)
{
	char err[600];

	side->save_pending |= nlm_relay_take_clients_dirty(side->nlm_rw);
	if (!side->save_pending || !side->clients_path[0])
		return;
	if (nlm_state_save_clients(nlm_relay_state(side->nlm_rw), side->clients_path, err,
				   sizeof(err)) == 0) {
		side->save_pending = false;
		side->save_failed = false;
		return;
	}
	if (!side->save_failed)
		gw_warn("%s: nlm: cannot save the clients holding locks (%s): after a restart "
			"they would not be told to reclaim them",
			side->route->name, err);
	side->save_failed = true;
}

static void on_save_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	save_clients(arg);
}

/*
 * The client hosts that held locks through the previous instance (its
 * saved list) are told their server rebooted, with the gateway's new NSM
 * state, and the relay converts their reclaims for nlm_reclaim_window_s
 * (the server is not in grace). Then the list is kept: saved at most once
 * a second when the set of clients holding locks changed, and at stop.
 */
static void start_nlm_clients(struct gw_side *side, struct event_base *base)
{
	const struct gw_route *r = side->route;
	/* As many as nlm_notify tells (nlm_notify_max_hosts); once, at start. */
	size_t max = r->nlm_notify_max_hosts ? r->nlm_notify_max_hosts : NLM_NOTIFY_HOSTS;
	uint64_t window_ms =
		r->nlm_reclaim_window_ms ? r->nlm_reclaim_window_ms : NLM_RECLAIM_WINDOW_MS;
	struct nlm_peer *hosts = calloc(max, sizeof(*hosts));
	char err[600];
	size_t n = 0;

	bool kept = state_path(r, "nlm-clients", side->clients_path, sizeof(side->clients_path));
	int rc = -ENOMEM;

	snprintf(err, sizeof(err), "out of memory");
	if (!kept)
		rc = -ENOENT; /* said by state_path() */
	else if (hosts)
		rc = nlm_state_load_clients(side->clients_path, hosts, max, &n, err, sizeof(err));
	if (rc != 0 && rc != -ENOENT)
		gw_warn("%s: nlm: the saved client list is not usable (%s): clients that held "
			"locks before the restart are not told",
			r->name, err);
	if (n) {
		int32_t state = side->nlm_rs ? nlm_restart_stats(side->nlm_rs)->state
					     : (int32_t)(time(NULL) | 1);
		nlm_relay_set_reclaim_window(side->nlm_rw, gw_now_us() + window_ms * 1000);
		nlm_notify_gateway_restarted(side->nlm_nt, hosts, n, state);
	}
	free(hosts);
	side->clients_loaded = true;
	side->save_ev = event_new(base, -1, EV_PERSIST, on_save_timer, side);
	struct timeval period = gw_ms_timeval(NLM_SAVE_PERIOD_MS);
	if (!side->save_ev || event_add(side->save_ev, &period) != 0)
		gw_warn("%s: nlm: no timer to save the clients holding locks: saved at stop only",
			r->name);
}

/*
 * The server's GRANTED callbacks: a service on the address the NLM relay
 * sends from, found by the server through a portmapper there on the same
 * port number as the route's (111).
 */
static bool start_nlm_callback(struct gw_side *side, struct event_base *base, char *err,
			       size_t errlen)
{
	const struct gw_route *r = side->route;
	/* The clients' portmapper: at the route's portmapper port, or rpcbind's own. */
	uint16_t pmap = r->portmapper_port ? (uint16_t)r->portmapper_port : PMAP_PORT;
	struct nlm_callback_config cc = {
		.route = r,
		.counters = side->counters,
		.relay = side->nlm_rw,
		.pmap_port = pmap,
		.route_holds_host_nlm = side->host_reg != NULL,
		.max_pending = r->nlm_callback_max_pending,
	};
	struct nlm_async_config ac = {
		.route = r,
		.counters = side->counters,
		.relay = side->nlm_rw,
		.pmap_port = pmap,
		.max_pending = r->nlm_async_max_pending,
		.max_pending_per_client = r->nlm_async_max_pending_per_client,
	};
	struct nlm_notify_config nc = {
		.route = r,
		.counters = side->counters,
		.relay = side->nlm_rw,
		.pmap_port = pmap,
		.max_clients = r->nlm_notify_max_hosts,
	};

	side->nlm_async = nlm_async_new(base, &ac, err, errlen);
	if (!side->nlm_async)
		return false;
	cc.async = side->nlm_async;
	side->nlm_nt = nlm_notify_start(base, &nc, (const struct sockaddr *)&r->upstream.addr,
					r->upstream.addrlen, err, errlen);
	if (!side->nlm_nt)
		return false;
	cc.notify = side->nlm_nt;
	side->nlm_cb = nlm_callback_start(base, &cc, (const struct sockaddr *)&r->upstream.addr,
					  r->upstream.addrlen, err, errlen);
	if (!side->nlm_cb)
		return false;
	/*
	 * Where the server finds the gateway's NLM and NSM at the route's own
	 * relays (a wildcard route's registrations with the host's rpcbind, or
	 * the route's portmapper on the address the server sees), its calls
	 * come to them: the callback module takes those (nlm_callback_take()).
	 */
	side_service_divert(side->nlm, (const struct sockaddr *)&r->upstream.addr,
			    r->upstream.addrlen, nlm_callback_take, side->nlm_cb);
	side_service_divert(side->nsm, (const struct sockaddr *)&r->upstream.addr,
			    r->upstream.addrlen, nlm_callback_take, side->nlm_cb);
	/* Only now: the _MSG results come back through the callback service. */
	nlm_relay_set_async(side->nlm_rw, side->nlm_async);
	start_nlm_restart(side, base);
	start_nlm_clients(side, base);
	return true;
}

bool gw_side_nlm_stats(const struct gw_side *side, struct gw_stats_nlm *out)
{
	if (!side || !side->nlm_rw)
		return false;
	const struct nlm_state *st = nlm_relay_state(side->nlm_rw);
	const struct nlm_state_stats *ss = nlm_state_stats(st);
	*out = (struct gw_stats_nlm){
		.clients = nlm_state_clients(st),
		.owners = nlm_state_owners(st),
		.locks = nlm_state_locks(st),
		.clients_full = ss->clients_full,
		.owners_full = ss->owners_full,
		.locks_full = ss->locks_full,
		.client_locks_full = ss->client_locks_full,
		.oh_too_long = ss->oh_too_long,
		.stale_owner = ss->stale_owner,
		.client_owners_full = ss->client_owners_full,
		.client_prefix_full = ss->client_prefix_full,
		.clients_reclaimed = ss->clients_reclaimed,
	};
	/* Started last: absent only while gw_side_start() fails. */
	if (side->nlm_cb) {
		const struct nlm_callback_stats *cs = nlm_callback_stats(side->nlm_cb);
		out->callbacks_pending = nlm_callback_pending(side->nlm_cb);
		out->cb_relayed = cs->relayed;
		out->cb_granted = cs->granted;
		out->cb_stale = cs->stale;
		out->cb_full = cs->full;
		out->cb_timed_out = cs->timed_out;
		out->cb_not_from_server = cs->not_from_server;
	}
	if (side->nlm_async) {
		const struct nlm_async_stats *as = nlm_async_stats(side->nlm_async);
		out->async_pending = nlm_async_pending(side->nlm_async);
		out->async_sent = as->sent;
		out->async_delivered = as->delivered;
		out->async_full = as->full;
		out->async_unknown_cookie = as->unknown_cookie;
		out->async_from_client = as->from_client;
		out->async_timed_out = as->timed_out;
		out->async_refused_client_cap = as->refused_client_cap;
		out->async_late_given_back = as->late_given_back;
		out->async_portmapper_silent = as->portmapper_silent;
		out->async_yielded = as->yielded;
	}
	if (side->nlm_nt) {
		const struct nlm_notify_stats *ns = nlm_notify_stats(side->nlm_nt);
		out->notify_pending = nlm_notify_pending(side->nlm_nt);
		out->sn_received = ns->received;
		out->sn_repeated = ns->repeated;
		out->sn_delivered = ns->delivered;
		out->sn_not_delivered = ns->not_delivered;
		out->sn_not_from_server = ns->not_from_server;
		out->sn_clients_full = ns->clients_full;
	}
	if (side->nlm_rs) {
		const struct nlm_restart_stats *rs = nlm_restart_stats(side->nlm_rs);
		out->gr_state = rs->state;
		out->gr_persisted = rs->persisted;
		out->gr_sent = rs->sent;
		out->gr_delivered = rs->delivered;
		out->gr_not_delivered = rs->not_delivered;
	}
	if (side->nlm_nt) {
		const struct nlm_notify_stats *ns = nlm_notify_stats(side->nlm_nt);
		out->gr_clients_told = ns->restart_clients;
		out->gr_clients_delivered = ns->restart_delivered;
	}
	out->gr_reclaims_converted = nlm_relay_stats(side->nlm_rw)->reclaims_converted;
	out->gr_grace_refused = nlm_relay_stats(side->nlm_rw)->grace_refused;
	const struct nlm_relay_stats *rs = nlm_relay_stats(side->nlm_rw);
	out->rel_pending = nlm_relay_release_pending(side->nlm_rw);
	out->rel_in_flight = nlm_relay_release_in_flight(side->nlm_rw);
	out->rel_queued = rs->release_queued;
	out->rel_done = rs->release_done;
	out->rel_retried = rs->release_retried;
	out->rel_given_up = rs->release_given_up;
	out->rel_full = rs->release_full;
	return true;
}

enum gw_side_way gw_side_way(const struct gw_route *r)
{
	if (gw_addr_is_wildcard(&r->listen.addr))
		return r->portmapper_port ? GW_SIDE_NONE : GW_SIDE_HOST_RPCBIND;
	return r->portmapper_port ? GW_SIDE_OWN_PORTMAPPER : GW_SIDE_NONE;
}

bool gw_side_describe(const struct gw_route *r, const struct rpcb_reg_ops *ops, char *out,
		      size_t outlen)
{
	if (!ops)
		ops = rpcb_reg_host_ops();
	switch (gw_side_way(r)) {
	case GW_SIDE_OWN_PORTMAPPER:
		snprintf(out, outlen,
			 "route %s: plain NFSv3: the route's own portmapper on %s port %u "
			 "(MOUNT, NLM, NSM%s)",
			 r->name, r->listen.text, r->portmapper_port,
			 r->mode == GW_MODE_FORWARD ? ", NFS" : "");
		return true;
	case GW_SIDE_HOST_RPCBIND:
		if (ops->reachable(ops->arg)) {
			snprintf(out, outlen,
				 "route %s: plain NFSv3: registers with this host's rpcbind, "
				 "which answers (MOUNT, NLM, NSM%s on the wildcard address)",
				 r->name, r->mode == GW_MODE_FORWARD ? ", NFS" : "");
			return true;
		}
		snprintf(out, outlen,
			 "route %s: plain NFSv3 unavailable: the route listens on the wildcard "
			 "address (%s), where its services are registered with this host's "
			 "rpcbind, and no rpcbind answers here; start rpcbind, or listen on one "
			 "address with portmapper_port (NFSv4 is not affected)",
			 r->name, r->listen.text);
		return false;
	case GW_SIDE_NONE:
		break;
	}
	snprintf(out, outlen,
		 "route %s: no plain NFSv3 side services: the listen address %s is not the "
		 "wildcard and portmapper_port is not set (NFSv3 clients need mountport= and "
		 "mounthost=)",
		 r->name, r->listen.text);
	return true;
}

/*
 * A route on the wildcard address: its services registered with the
 * host's rpcbind. False (and nothing registered) when rpcbind refuses them
 * or another live service holds one of the programs, which is logged.
 */
static bool register_host(struct gw_side *side, const struct rpcb_reg_ops *ops)
{
	const struct gw_route *r = side->route;
	char why[400];

	side->host_reg = rpcb_reg_new(ops, r->listen.addr.ss_family == AF_INET6);
	if (!side->host_reg || !offer(side, reg_offer, side->host_reg)) {
		gw_err("%s: plain NFSv3 unavailable: no room to register its services", r->name);
		return false;
	}
	enum rpcb_reg_outcome o = rpcb_reg_register(side->host_reg, why, sizeof(why));
	if (o == RPCB_REG_DONE) {
		gw_info("%s: plain NFSv3: registered with this host's rpcbind (%zu mappings: "
			"%sMOUNT "
			"port %u, NLM port %u, NSM port %u on %s); unregistered at stop",
			r->name, rpcb_reg_count(side->host_reg),
			r->mode == GW_MODE_FORWARD ? "NFS and NFSACL on the route's port, " : "",
			side_service_port(side->mount), side_service_port(side->nlm),
			side_service_port(side->nsm), r->listen.text);
		return true;
	}
	/* A warning: the route runs; only its plain NFSv3 side is not offered. */
	gw_warn("%s: plain NFSv3 unavailable: %s (NFSv4 is not affected; a route on one address "
		"with portmapper_port has a portmapper of its own)",
		r->name, why);
	return false;
}

struct gw_side *gw_side_start_with(struct event_base *base, const struct gw_route *r,
				   struct gw_counters *counters, const struct rpcb_reg_ops *ops,
				   int *failed, char *err, size_t errlen)
{
	struct gw_side *side;
	const char *what;
	enum gw_side_way way = gw_side_way(r);
	char line[512];

	*failed = 0;
	if (way == GW_SIDE_NONE && gw_addr_is_wildcard(&r->listen.addr)) {
		*failed = 1;
		snprintf(err, errlen,
			 "route %s: portmapper_port: a route on the wildcard address registers "
			 "with the host's rpcbind and has no portmapper of its own",
			 r->name);
		return NULL;
	}
	if (way == GW_SIDE_NONE)
		return NULL;
	if (!ops)
		ops = rpcb_reg_host_ops();
	if (way == GW_SIDE_HOST_RPCBIND && !gw_side_describe(r, ops, line, sizeof(line))) {
		gw_warn("%s", line);
		return NULL;
	}
	*failed = 1;
	side = calloc(1, sizeof(*side));
	if (!side) {
		snprintf(err, errlen, "route %s: out of memory", r->name);
		return NULL;
	}
	side->route = r;
	side->counters = counters;

	struct side_relay_config rc = {
		.name = "mount",
		.prog = PROG_MOUNT,
		.vers_lo = 1,
		.vers_hi = 3,
		.route = r,
		.counters = counters,
		.server = r->upstream.addr,
		.server_len = r->upstream.addrlen,
		.server_port = (uint16_t)r->upstream_mountd_port,
		.pmap_port = PMAP_PORT,
		.reserved_port = r->source_port == GW_SOURCE_PORT_RESERVED,
		.max_calls = RELAY_MAX_CALLS,
		.max_msg = SIDE_MAX_MSG,
		.retry_ms = RELAY_RETRY_MS,
		.timeout_ms = RELAY_TIMEOUT_MS,
	};
	what = "the MOUNT relay's upstream socket";
	side->mount_relay = side_relay_start(base, &rc);
	if (!side->mount_relay)
		goto fail;
	what = "the MOUNT relay";
	side->mount = start_svc(side, base, "mount", (uint16_t)r->mount_port, side_relay_on_call,
				side->mount_relay);
	if (!side->mount)
		goto fail;
	if (!start_nlm(side, base, &rc, &what))
		goto fail;
	if (way == GW_SIDE_HOST_RPCBIND) {
		/* Not the route's failure: NFSv4 goes on, plain NFSv3 is said to be unavailable. */
		if (!register_host(side, ops)) {
			gw_side_stop(side);
			*failed = 0;
			return NULL;
		}
	} else {
		what = "the portmapper";
		side->pmap = start_svc(side, base, "rpcbind", (uint16_t)r->portmapper_port,
				       pmap_on_call, side);
		if (!side->pmap)
			goto fail;
		if (!fill_table(side)) {
			errno = ENOSPC;
			goto fail;
		}
	}
	if (!start_nlm_callback(side, base, err, errlen)) {
		gw_side_stop(side);
		return NULL;
	}
	*failed = 0;
	if (side->pmap)
		gw_info("%s: plain NFSv3: the route's own portmapper on port %u (TCP, UDP)",
			r->name, side_service_port(side->pmap));
	gw_info("%s: MOUNT relay on port %u -> mountd at %s", r->name,
		side_service_port(side->mount),
		r->upstream_mountd_port ? "the configured port"
					: "the port the server's rpcbind gives");
	gw_info("%s: NLM relay on port %u -> lockd at %s, NSM on port %u (caller name %s)", r->name,
		side_service_port(side->nlm),
		r->upstream_nlm_port ? "the configured port"
				     : "the port the server's rpcbind gives",
		side_service_port(side->nsm), side->hostname);
	return side;
fail:
	snprintf(err, errlen, "route %s: cannot start %s on %s: %s%s", r->name, what,
		 r->listen.text, strerror(errno),
		 errno == EADDRINUSE && side->mount && way == GW_SIDE_OWN_PORTMAPPER
			 ? " (is a host rpcbind listening on the wildcard address? "
			   "docs/forward-mode.md)"
			 : "");
	gw_side_stop(side);
	return NULL;
}

struct gw_side *gw_side_start(struct event_base *base, const struct gw_route *r,
			      struct gw_counters *counters, int *failed, char *err, size_t errlen)
{
	return gw_side_start_with(base, r, counters, NULL, failed, err, errlen);
}

void gw_side_stop(struct gw_side *side)
{
	if (!side)
		return;
	/* Clients stop being sent here before the services close. */
	if (side->host_reg && rpcb_reg_count(side->host_reg))
		gw_info("%s: plain NFSv3: unregistered from this host's rpcbind",
			side->route->name);
	rpcb_reg_free(side->host_reg);
	if (side->save_ev)
		event_free(side->save_ev);
	/* A clean stop keeps the current list (not a failed start's empty one). */
	if (side->clients_loaded) {
		side->save_pending = true;
		save_clients(side);
	}
	side_relay_forget(side->mount_relay, side->mount);
	side_relay_forget(side->nlm_relay, side->nlm);
	nlm_callback_stop(side->nlm_cb);
	if (side->nlm_rw)
		nlm_relay_set_async(side->nlm_rw, NULL);
	nlm_async_free(side->nlm_async);
	nlm_notify_stop(side->nlm_nt);
	nlm_restart_stop(side->nlm_rs);
	side_service_stop(side->pmap);
	side_service_stop(side->mount);
	side_service_stop(side->nlm);
	side_service_stop(side->nsm);
	side_relay_stop(side->mount_relay);
	side_relay_stop(side->nlm_relay);
	nlm_relay_free(side->nlm_rw);
	free(side);
}

void gw_side_set_route(struct gw_side *side, const struct gw_route *route)
{
	struct side_service *svcs[] = { side ? side->pmap : NULL, side ? side->mount : NULL,
					side ? side->nlm : NULL, side ? side->nsm : NULL };

	if (!side)
		return;
	side->route = route;
	for (size_t i = 0; i < sizeof(svcs) / sizeof(svcs[0]); i++) {
		if (svcs[i])
			side_service_set_route(svcs[i], route);
	}
	if (side->mount_relay)
		side_relay_set_route(side->mount_relay, route);
	if (side->nlm_relay)
		side_relay_set_route(side->nlm_relay, route);
	if (side->nlm_rw)
		nlm_relay_set_route_name(side->nlm_rw, route->name);
	if (side->nlm_cb)
		nlm_callback_set_route(side->nlm_cb, route);
	if (side->nlm_async)
		nlm_async_set_route(side->nlm_async, route);
	if (side->nlm_nt)
		nlm_notify_set_route(side->nlm_nt, route);
	if (side->nlm_rs)
		nlm_restart_set_route(side->nlm_rs, route);
}
