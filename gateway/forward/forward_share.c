/* SPDX-License-Identifier: MIT */
/*
 * gateway/forward/forward_share.c - forward mode, shared upstream connections
 * (route key upstream_connections > 0, issue 17): every client's calls go
 * over N RDMA connections ("channels") to the route's server.
 *
 * A channel is a struct fwd_session with no TCP side (is_channel): the RDMA
 * connection, its grant, version and thresholds, its backward-call state,
 * and the fair scheduler (gateway/fairq) that shares its grant among the
 * clients on it. A client session keeps its call slots and points at its
 * channel; a client is put on a channel by a hash of its address and port,
 * so that a client that reconnects from the same port finds its channel -
 * and its calls' wire XIDs - again.
 *
 * Every call goes under a wire XID from the route's map (gateway/wirexid):
 * unique on its channel, kept for a retransmission so that the server's
 * duplicate request cache, which keys on address, port and XID, sees the
 * same call. A reply is matched to the call in flight under that XID on
 * that channel, and nothing else: any other is dropped and counted.
 *
 * Life: the channels open with the route's first client and stay open. A
 * channel whose connection is lost (the server went, a completion failed)
 * is made again, its clients kept: the connection is opened again after a
 * back-off, from the same source port, and every call that was in flight
 * on it is marshalled again (new windows, new rkeys: the old ones died
 * with the queue pair) and sent under the same wire XID, so that the
 * server's duplicate request cache, which keys on address, port and XID,
 * answers a call it had executed. Only when that fails for
 * SHARE_RECONNECT_DEADLINE_US does it close its clients, as a lost
 * connection does with upstream_connections 0; the next client that
 * hashes to it opens a new one. A call the server leaves unanswered for
 * call_timeout is given up alone (fwd_share_orphan()); only when orphans
 * would hold the channel's last credit is the channel reset, which closes
 * its clients.
 *
 * Backward calls (whose client a server's callback is for) are in
 * gateway/forward/forward_share_cb.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>

#include <event2/event.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/xdr.h"
#include "gateway/maps/fairq.h"
#include "gateway/core/session.h"
#include "gateway/maps/wirexid.h"
#include "rdma/conn.h"
#include "rdma/device.h"
#include "ulb-rules/ulb.h"
#include "gateway/forward/forward_priv.h"

/*
 * A lost channel is tried again after 100 ms, then twice as long each time
 * up to 5 s, for 60 s in all (about 17 attempts): long enough for a server
 * that restarts or a link that flaps, short against the clients' own
 * major timeouts (a hard NFS mount waits 180 s before it says so), and
 * bounded, so that a server that is gone does not keep its clients
 * waiting on a channel for ever. The same source port is asked for until
 * an attempt from it fails to get under way (RCONN_CLOSE_UNREACHABLE: the
 * port was taken meanwhile, or there is no route), then any: a server that
 * is down refuses or does not answer, and leaves the port worth keeping.
 */
#define SHARE_RECONNECT_FIRST_US    (100ull * 1000)
#define SHARE_RECONNECT_MAX_US	    (5ull * 1000000)
#define SHARE_RECONNECT_DEADLINE_US (60ull * 1000000)

static struct fwd_call *call_of_item(struct fairq_item *it)
{
	return (struct fwd_call *)((char *)it - offsetof(struct fwd_call, fqi));
}

static struct fwd_session *fwd_of_base(struct gw_session *g)
{
	return (struct fwd_session *)g;
}

/* ---- the route's shared state ---- */

/*
 * A shared channel's queues, sized for what it carries. A connection of its
 * own gives each credit room for the largest call (FWD_MAX_EXPOSE windows:
 * a bind and an invalidation each, then the Send); on a channel that is
 * credits x 38 send-queue entries, which rxe maps into the gateway whole
 * (2 MiB a channel at the defaults) and which many small calls never
 * fill. Here the channel keeps SHARE_EXPOSE_PER_CREDIT windows a credit
 * (an NFS READ or WRITE needs 1 or 2), plus one largest call's, so that
 * any call can always go; the send queue keeps the same rule as a
 * connection of its own (two entries a window, two a credit, 16 spare), so
 * an invalidation never finds it full. A call that finds no window waits
 * in the channel's queue (fwd_marshal()'s -EAGAIN), as for the send queue.
 */
enum { SHARE_EXPOSE_PER_CREDIT = 4 };

static struct rconn_params share_rdma_params(const struct gw_route *r, struct rpcrdma_privdata *pd)
{
	struct rconn_params p = fwd_rdma_params(r, pd);
	uint32_t nmw = r->credits * SHARE_EXPOSE_PER_CREDIT + FWD_MAX_EXPOSE;

	if (nmw < p.nmw) {
		p.nmw = nmw;
		p.send_depth = 2 * nmw + 2 * r->credits + 16;
	}
	return p;
}

static struct fwd_share *share_get(struct gw_route_rt *route)
{
	const struct gw_route *r = route->cfg;
	struct fwd_share *sh = fwd_route(route)->share;
	uint64_t seed;

	if (sh)
		return sh;
	sh = calloc(1, sizeof(*sh));
	if (!sh)
		return NULL;
	if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = gw_now_us() * 0x9e3779b97f4a7c15ull;
	struct wirexid_params p = { .max_entries = wirexid_entries_for(r->max_sessions,
								       r->credits + r->queue_limit),
				    .channels = (uint16_t)r->upstream_connections,
				    .seed = seed };
	sh->by_entry = calloc(p.max_entries, sizeof(struct fwd_call *));
	if (!sh->by_entry || wirexid_init(&sh->map, &p) != 0) {
		free(sh->by_entry);
		free(sh);
		return NULL;
	}
	sh->route = route;
	sh->nchan = (uint16_t)r->upstream_connections;
	/* Half the grant a client would have alone unless configured: one never holds it all. */
	sh->cap = fairq_share_cap(r->credits, r->shared_client_max_in_flight);
	fwd_route(route)->share = sh;
	gw_info("%s: %u shared upstream connections, XID map of %u entries", r->name, sh->nchan,
		p.max_entries);
	return sh;
}

/* FNV-1a over the client's address and port: the same client, the same channel. */
static uint16_t share_pick_channel(const struct fwd_share *sh, const struct fwd_session *s)
{
	struct wirexid_key k;
	uint32_t h = 2166136261u;

	if (!wirexid_key_from_sockaddr(&k, (const struct sockaddr *)&s->peer, 0))
		return 0;
	for (size_t i = 0; i < sizeof(k.addr); i++)
		h = (h ^ k.addr[i]) * 16777619u;
	h = (h ^ (k.port & 0xff)) * 16777619u;
	h = (h ^ (k.port >> 8)) * 16777619u;
	return (uint16_t)(h % sh->nchan);
}

static struct fwd_session *channel_open(struct fwd_share *sh, uint16_t idx)
{
	struct gw_route_rt *route = sh->route;
	const struct gw_route *r = route->cfg;
	struct fwd_session *ch = calloc(1, sizeof(*ch));

	if (!ch)
		return NULL;
	ch->is_channel = true;
	ch->up = &fwd_share_upstream;
	ch->conn = ch;
	ch->share = sh;
	ch->chan_idx = idx;
	ch->base.route = route;
	snprintf(ch->base.client, sizeof(ch->base.client), "%s shared connection %u", r->name, idx);
	ch->fd = -1;
	ch->state = FS_CONNECTING;
	TAILQ_INIT(&ch->queue);
	TAILQ_INIT(&ch->gss_wait);
	ch->granted = 1; /* until the first reply (RFC 8166) */
	ch->window = r->credits;
	ch->pool_waiter.fn = fwd_pool_wake;
	fairq_init(&ch->fq, 1, 1);
	fairq_set_contended_cap(&ch->fq, r->shared_client_max_in_flight_contended);
	rpcrdma_privdata_decode(NULL, 0, &ch->peer_pd);
	ch->version = fwd_opening_version(ch);
	ch->version_settled = ch->version == RPCRDMA_V1;
	if (fwd_alloc_slots(ch, r, false, true) != 0) {
		free(ch->bcalls);
		free(ch->refusals);
		free(ch);
		return NULL;
	}
	struct rconn_params params = share_rdma_params(r, &ch->own_pd);
	ch->rdma = rconn_connect(gw_engine_rdma(route->eng),
				 (const struct sockaddr *)&r->upstream.addr, NULL, &params,
				 &fwd_rdma_ops, ch);
	if (!ch->rdma) {
		gw_count_event(&ch->base, GW_EV_UPSTREAM_FAILURE);
		free(ch->bcalls);
		free(ch->refusals);
		free(ch);
		return NULL;
	}
	sh->chan[idx] = ch;
	sh->live++;
	return ch;
}

/* Client @s of a connected channel starts relaying: it reads into the channel's device's pool. */
static void share_client_ready(struct fwd_session *s)
{
	s->dev = s->ch->dev;
	memcpy(s->base.upstream, s->ch->base.upstream, sizeof(s->base.upstream));
	fwd_client_ready(s);
}

/*
 * A client that has spoken joins its channel (opened now if it is not);
 * its TCP side is set up once the channel is connected. False: no channel
 * could be had, the caller closes the client.
 */
bool fwd_share_attach(struct fwd_session *s)
{
	struct fwd_share *sh = share_get(s->base.route);

	if (!sh) {
		gw_err("forward %s: out of memory for the route's shared connections",
		       s->base.client);
		return false;
	}
	/* The route's channels open together: the server sees N connections from the start. */
	for (uint16_t i = 0; i < sh->nchan; i++) {
		if (!sh->chan[i] && !channel_open(sh, i))
			gw_warn("forward %s: cannot open shared connection %u", s->base.client, i);
	}
	uint16_t idx = share_pick_channel(sh, s);
	struct fwd_session *ch = sh->chan[idx];
	if (!ch)
		return false;
	s->ch = ch;
	s->conn = ch;
	s->up = &fwd_share_upstream;
	ch->users++;
	fairq_client_init(&s->fq_client, sh->cap);
	gw_debug("forward %s: on shared connection %u", s->base.client, idx);
	if (ch->state == FS_READY)
		share_client_ready(s);
	return true;
}

/*
 * Channel @ch is connected (rc): the calls that were on its lost connection
 * go again, and the clients waiting for it start relaying.
 */
static void share_conn_ready(struct fwd_session *ch, struct rconn *rc)
{
	struct gw_session *g, *next;

	if (ch->dev && ch->dev != rconn_device(rc)) {
		/*
		 * A channel made again on another device: its clients' records
		 * lie in the old device's pool, which the new connection cannot
		 * reach. They close, as with a connection lost for good.
		 */
		gw_warn("forward %s: connected again through another RDMA device: closing its "
			"clients",
			ch->base.client);
		ch->reconnecting = false;
		fwd_share_channel_close(ch);
		return;
	}
	ch->dev = rconn_device(rc);
	memcpy(&ch->local, rconn_local_addr(rc),
	       rconn_local_addr(rc)->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
							   : sizeof(struct sockaddr_in));
	ch->state = FS_READY;
	gw_info("forward %s: connected from %s (inline %u/%u)", ch->base.client, ch->base.upstream,
		ch->thr.send, ch->thr.recv);
	if (ch->reconnecting) {
		ch->reconnecting = false;
		ch->share->reconnects[ch->chan_idx]++;
		gw_info("forward %s: connected again after %u attempt(s); %u call(s) to send again",
			ch->base.client, ch->reconnect_tries, ch->fq.queued);
		fwd_share_pump(ch); /* the calls that were in flight, under their wire XIDs */
	}
	for (g = TAILQ_FIRST(&ch->base.route->sessions); g; g = next) {
		next = TAILQ_NEXT(g, link);
		struct fwd_session *s = fwd_of_base(g);
		if (s->ch == ch && s->state == FS_CONNECTING && s->fd >= 0)
			share_client_ready(s); /* may close s */
	}
}

/* ---- calls ---- */

static uint64_t now_us(void)
{
	return gw_now_pass_us();
}

/* Queue @c on its channel's scheduler and send what the grant allows. */
static void share_enqueue(struct fwd_session *s, struct fwd_call *c)
{
	struct fwd_session *ch = s->ch;

	c->state = FC_QUEUED;
	fairq_enqueue(&ch->fq, &s->fq_client, &c->fqi, now_us());
	s->queued++;
	if (ch->fq.in_flight >= ch->fq.grant)
		GW_COUNT(&s->base, calls_queued_for_credits, 1);
	fwd_share_pump(ch);
}

/* Write the entry's wire XID into the call; the client's goes back into the reply. */
static void share_take_wire_xid(struct fwd_call *c)
{
	const struct wirexid_entry *e = wirexid_get(&c->s->ch->share->map, c->upx);

	c->wire_xid = e->wire_xid;
	xdr_put32(c->rec->base + c->rec_off, c->wire_xid);
}

/* @c is answered SYSTEM_ERR, and its slot given back. */
static void share_refuse(struct fwd_session *s, struct fwd_call *c)
{
	fwd_reply_error(s, c->xid, RPC_ACC_SYSTEM_ERR);
	c->state = FC_DONE;
	fwd_call_put(c);
}

/*
 * A parsed call of client @s: mapped to a wire XID on its channel. A
 * retransmission of a call in flight is absorbed (its reply goes to this
 * connection, the entry's owner now); one of an answered call goes again
 * under the XID it had, for the server's duplicate request cache.
 */
void fwd_share_admit(struct fwd_session *s, struct fwd_call *c)
{
	struct fwd_session *ch = s->ch;
	struct fwd_share *sh = ch->share;
	struct wirexid_key k;
	uint32_t idx = WIREXID_NONE;
	enum wirexid_verdict v = WIREXID_FULL;

	/*
	 * A call that must not run twice keeps its answered entry against
	 * other clients' calls, so that its retransmission reaches the
	 * server's duplicate request cache under the same wire XID.
	 */
	enum wirexid_twice twice =
		ulb_call_safe_twice(&c->ulb) ? WIREXID_SAFE_TWICE : WIREXID_RUN_ONCE;

	if (wirexid_key_from_sockaddr(&k, (const struct sockaddr *)&s->peer, c->xid))
		v = ulb_call_keeps_xid(&c->ulb) ? wirexid_map_own_xid(&sh->map, &k, ch->chan_idx,
								      s->base.id, now_us(), &idx)
						: wirexid_map(&sh->map, &k, ch->chan_idx,
							      s->base.id, twice, now_us(), &idx);
	if (v == WIREXID_XID_BUSY) {
		/*
		 * A GSS call whose XID another client's call holds on the wire of
		 * this channel: it cannot go under another XID (the GSS checksum
		 * covers it), so it waits, holding its slot and counted queued,
		 * until a call leaves the channel's wire (share_gss_retry()).
		 */
		gw_count_event(&s->base, GW_EV_GSS_XID_WAIT);
		c->state = FC_GSS_WAIT;
		TAILQ_INSERT_TAIL(&ch->gss_wait, c, qlink);
		s->queued++;
		return;
	}
	if (v == WIREXID_IN_FLIGHT) {
		gw_count_event(&s->base, GW_EV_RETRANSMIT_ABSORBED);
		struct fwd_call *old = sh->by_entry[idx];
		/*
		 * Taken over before it went: the first copy waits in the queue of
		 * the connection that sent it, which is gone or going (the client
		 * reconnected from the same port), and would be dropped with it,
		 * leaving the client to wait for its next retransmission. This
		 * copy takes its place in the entry (now this connection's); the
		 * first leaves its queue without cancelling the entry.
		 */
		if (old && old->s != s && old->state == FC_QUEUED && old->s->ch == ch) {
			fairq_remove(&ch->fq, &old->fqi);
			old->s->queued--;
			sh->by_entry[idx] = NULL; /* its release must not cancel the entry */
			old->upx = WIREXID_NONE;
			old->state = FC_DONE;
			fwd_call_put(old);
			c->upx = idx;
			sh->by_entry[idx] = c;
			share_take_wire_xid(c);
			share_enqueue(s, c);
			return;
		}
		c->state = FC_DONE;
		fwd_call_put(c);
		return;
	}
	if (v == WIREXID_FULL || wirexid_get(&sh->map, idx)->chan != ch->chan_idx) {
		/*
		 * The map is sized for every slot of every client, so this is a
		 * bug: the client gets an error rather than waiting for ever.
		 */
		gw_err("forward %s: xid %#x: no XID mapping for the call", s->base.client, c->xid);
		if (v != WIREXID_FULL)
			wirexid_cancel(&sh->map, idx);
		share_refuse(s, c);
		return;
	}
	c->upx = idx;
	sh->by_entry[idx] = c;
	share_take_wire_xid(c);
	share_enqueue(s, c);
}

/*
 * The RFC 8267 retry or a version fallback: the same call again, under a
 * fresh wire XID, its reply buffers given back (fwd_call_unmarshal()).
 */
void fwd_share_requeue(struct fwd_call *c)
{
	fwd_share_mem_freed(c->s);
	wirexid_rewire(&c->s->ch->share->map, c->upx);
	share_take_wire_xid(c);
	share_enqueue(c->s, c);
}

/*
 * The time @c waited for its turn and a credit, for the client's and the
 * route's queue-time histograms: what an operator compares across clients
 * to see whether the sharing is fair. Counted when the call goes, not when
 * it is picked: a pick undone for want of buffers goes on waiting.
 */
static void share_count_queue_time(struct fwd_session *s, const struct fwd_call *c)
{
	uint64_t waited = c->t_sent > c->fqi.t_enq ? c->t_sent - c->fqi.t_enq : 0;

	gw_hist_add(&s->base.counters.queue_us, waited);
	gw_hist_add(&s->base.route->counters.queue_us, waited);
}

/*
 * Whether client @s is set aside in its channel's scheduler: while its
 * replies are not being read (out_congested), or while its own
 * max_session_memory has no room for its next call (mem_wait). Both are
 * one pause in the scheduler, which must end only when neither holds.
 */
void fwd_share_client_pause_update(struct fwd_session *s)
{
	if (!s->fq_detached)
		fairq_client_pause(&s->ch->fq, &s->fq_client, s->out_congested || s->mem_wait);
}

/*
 * Client @s's next call would take it past max_session_memory: only its
 * own calls completing make room, so it waits out of the ring while the
 * others' calls go on (fwd_share_mem_freed() resumes it). Not a stop of
 * the pump as for what the channel lacks: put back at the head of the
 * ring, the client would be every pump's first pick, and one bulk writer
 * would hold every other client on its channel to a call per completion
 * of its own.
 */
static void share_wait_for_memory(struct fwd_session *s)
{
	s->mem_wait = true;
	fwd_share_client_pause_update(s);
}

/* Send what the channel's grant allows, client by client (fairq). */
void fwd_share_pump(struct fwd_session *ch)
{
	struct fairq_item *it;

	/* Not on a connection that is failing: its calls wait for the next one. */
	while (ch->state == FS_READY && rconn_is_connected(ch->rdma) &&
	       (it = fairq_pick(&ch->fq, now_us())) != NULL) {
		struct fwd_call *c = call_of_item(it);
		struct fwd_session *s = c->s;
		s->queued--;
		int err = fwd_marshal(s, c);
		if (err == -EDQUOT) {
			/* s's own memory limit: s waits, the other clients go on. */
			fairq_unpick(&ch->fq, it);
			s->queued++;
			share_wait_for_memory(s);
			continue;
		}
		if (err == -EAGAIN) {
			/* Waits for buffers (s's pool waiter pumps again) or for room. */
			fairq_unpick(&ch->fq, it);
			s->queued++;
			break;
		}
		c->picked = true;
		if (err) {
			/* Could not be sent: the connection is failing, or the call is unsendable.
			 */
			fairq_complete(&ch->fq, s->fq_detached ? NULL : &s->fq_client);
			c->picked = false;
			if (s->state == FS_READY)
				fwd_reply_error(s, c->xid, RPC_ACC_SYSTEM_ERR);
			c->state = FC_DONE;
			fwd_call_unexpose(s, c);
			fwd_call_put(c);
			continue;
		}
		c->state = FC_SENT;
		c->t_sent = gw_now_pass_us();
		share_count_queue_time(s, c);
		s->in_flight++;
		ch->in_flight++;
	}
}

/*
 * The credits the clients' calls may use: the server's grant (at most what
 * we asked for), less those held by orphaned calls, which the server counts
 * as outstanding until it answers them (RFC 8166, section 3.3.1) - and a
 * late answer is dropped unread, so they are held until the connection goes.
 */
static uint32_t share_usable_credits(const struct fwd_session *ch)
{
	uint32_t g = ch->granted < ch->window ? ch->granted : ch->window;

	return g > ch->orphans ? g - ch->orphans : 0;
}

void fwd_share_set_grant(struct fwd_session *ch)
{
	fairq_set_grant(&ch->fq, share_usable_credits(ch));
}

/*
 * The GSS calls waiting on @ch for their XID try again: each goes under it
 * now, or waits once more. Run from the deferred pump, after a call left
 * the channel's wire (its entry answered, given up or cancelled), so never
 * from inside a completion or the sweep.
 */
static void share_gss_retry(struct fwd_session *ch)
{
	TAILQ_HEAD(, fwd_call) again = TAILQ_HEAD_INITIALIZER(again);
	struct fwd_call *c;

	TAILQ_CONCAT(&again, &ch->gss_wait, qlink);
	while ((c = TAILQ_FIRST(&again)) != NULL) {
		TAILQ_REMOVE(&again, c, qlink);
		c->s->queued--;
		c->state = FC_FREE; /* as a call just parsed: it holds its record only */
		fwd_share_admit(c->s, c);
	}
}

static void share_pump_deferred(evutil_socket_t fd, short what, void *arg)
{
	struct fwd_session *ch = arg;

	(void)fd;
	(void)what;
	if (!TAILQ_EMPTY(&ch->gss_wait))
		share_gss_retry(ch);
	fwd_share_pump(ch);
}

/*
 * Pump @ch once the current callback is done: for memory windows or send
 * queue room given back where pumping there and then is not safe (the
 * engine's sweep is walking its sessions, and a pump's error path may free
 * one). Without it a queue head that waits for windows would wait for the
 * next admission or reply, which a quiet route may never bring.
 */
static void share_pump_later(struct fwd_session *ch)
{
	if (!ch->pump_ev)
		ch->pump_ev = event_new(gw_engine_base(ch->base.route->eng), -1, 0,
					share_pump_deferred, ch);
	if (ch->pump_ev)
		event_active(ch->pump_ev, 0, 0);
}

/*
 * Memory of client @s came back (a call of its freed or unmarshalled): if
 * it was set aside for its memory limit and its next call fits now - or
 * it has no call in flight, when the limit does not apply (fwd_marshal()),
 * so that a client whose calls all completed is never left paused - it
 * rejoins the ring. The pump is deferred: this runs from fwd_call_put(),
 * which the sweep and the pump's own error paths call.
 */
void fwd_share_mem_freed(struct fwd_session *s)
{
	if (!s->mem_wait || s->fq_detached)
		return;
	if (s->in_flight > 0 &&
	    s->mem_held + s->mem_wait_need > s->base.route->cfg->max_session_memory)
		return;
	s->mem_wait = false;
	fwd_share_client_pause_update(s);
	share_pump_later(s->ch);
}

/*
 * Call @c, on the wire, has had no reply for call_timeout: it is given up
 * alone instead of resetting the channel, which would close every client
 * on it for one lost call.
 *
 *  - Its map entry is marked answered: the client's retransmission goes
 *    out again under the same wire XID (the server's duplicate request
 *    cache knows it), and a late reply before that finds no call in flight
 *    and is dropped as stray.
 *  - Its windows are invalidated before its buffers go back to the pool:
 *    a late RDMA Write of the server's then fails (and takes the
 *    connection down, which is made again) instead of landing in memory
 *    another call - maybe another client's - has by then.
 *  - Its credit stays held (the grant is lowered by one) until the
 *    connection is made again: the server still counts the call.
 *
 * False when the channel cannot spare the credit (every usable one would
 * be held by orphans) or the call's Send has not even completed: the
 * caller resets the channel, as before.
 */
bool fwd_share_orphan(struct fwd_call *c)
{
	struct fwd_session *s = c->s;
	struct fwd_session *ch = s->ch;
	struct fwd_share *sh = ch->share;

	if (c->state != FC_SENT || c->send_pending || c->upx == WIREXID_NONE ||
	    share_usable_credits(ch) <= 1)
		return false;
	fwd_share_call_done(c, true); /* the entry answered: a retransmission is sent again */
	sh->by_entry[c->upx] = NULL;
	c->upx = WIREXID_NONE; /* keep the answered entry: fwd_call_put() would cancel it */
	c->owner = 0;
	ch->orphans++;
	sh->orphaned[ch->chan_idx]++;
	fwd_share_set_grant(ch);
	c->state = FC_DONE;
	fwd_call_withdraw(s, c); /* the server may answer yet */
	fwd_call_put(c);
	share_pump_later(ch); /* its windows are free: a call waiting for them may go */
	return true;
}

/*
 * A reply on channel @ch: the call in flight under @wire_xid there, or
 * NULL (counted stray in the map; the caller drops the reply). Only a call
 * that is on the wire on this very channel matches.
 */
struct fwd_call *fwd_share_call_by_xid(struct fwd_session *ch, uint32_t wire_xid)
{
	struct fwd_share *sh = ch->share;
	uint32_t idx = wirexid_lookup_reply(&sh->map, ch->chan_idx, wire_xid);
	struct fwd_call *c = idx == WIREXID_NONE ? NULL : sh->by_entry[idx];

	if (!c || c->state != FC_SENT || c->s->ch != ch || c->upx != idx || c->wire_xid != wire_xid)
		return NULL;
	return c;
}

/*
 * A call on the wire is off it: its credit goes back; @answered (a reply
 * that ends it) keeps its entry for retransmissions and records whom the
 * reply goes to.
 */
void fwd_share_call_done(struct fwd_call *c, bool answered)
{
	struct fwd_session *s = c->s;
	struct fwd_session *ch = s->ch;
	struct fwd_share *sh = ch->share;

	if (c->picked) {
		fairq_complete(&ch->fq, s->fq_detached ? NULL : &s->fq_client);
		c->picked = false;
	}
	ch->in_flight--;
	s->in_flight--;
	if (answered && c->upx != WIREXID_NONE &&
	    wirexid_reply(&sh->map, ch->chan_idx, c->wire_xid, now_us()) == c->upx)
		c->owner = wirexid_get(&sh->map, c->upx)->owner;
	if (!TAILQ_EMPTY(&ch->gss_wait))
		share_pump_later(ch); /* a GSS call may wait for this XID */
}

/* The slot is freed: a mapping still in flight for it will never be answered. */
void fwd_share_forget(struct fwd_call *c)
{
	struct fwd_share *sh = c->s->ch->share;

	if (sh->by_entry[c->upx] == c) {
		sh->by_entry[c->upx] = NULL;
		wirexid_cancel(&sh->map, c->upx);
		if (!TAILQ_EMPTY(&c->s->ch->gss_wait))
			share_pump_later(c->s->ch); /* a GSS call may wait for this XID */
	}
	c->upx = WIREXID_NONE;
}

/*
 * Whom the reply of @c goes to: the connection that owned its entry when
 * the reply came (the one that sent it, or a reconnected client that
 * retransmitted it), if it is still relaying; else nobody.
 */
struct fwd_session *fwd_share_reply_owner(struct fwd_call *c)
{
	struct fwd_session *s = c->s;
	struct gw_session *g;

	if (c->owner == 0)
		return NULL; /* not answered: failed, or a retry's first attempt */
	if (s->base.id == c->owner)
		return s->state == FS_READY ? s : NULL;
	TAILQ_FOREACH (g, &s->base.route->sessions, link) {
		struct fwd_session *o = fwd_of_base(g);
		if (g->id == c->owner)
			return o->state == FS_READY && o->ch == s->ch ? o : NULL;
	}
	return NULL;
}

/* ---- a lost channel made again ---- */

/*
 * A call of @s was on the wire when the channel's connection went: every
 * work request of that connection has completed, its windows died with
 * the queue pair. A client that is going lets it end; otherwise it goes
 * back to the head of the client's queue holding only its record, its
 * credit free, its wire XID kept, to be marshalled again.
 */
/*
 * A closing client's call @c whose map entry a reconnected client took over
 * (its retransmission, same address, port and XID, was absorbed): the entry
 * is that client's now.
 */
static bool share_taken_over(const struct fwd_call *c)
{
	const struct fwd_share *sh = c->s->ch->share;

	return c->upx != WIREXID_NONE && sh->by_entry[c->upx] == c &&
	       wirexid_get(&sh->map, c->upx)->owner != c->s->base.id;
}

static void share_unsend(struct fwd_session *ch, struct fwd_session *s, struct fwd_call *c)
{
	if (s->fq_detached && share_taken_over(c)) {
		/*
		 * Nobody is left to send it again, but the client that took it
		 * over will retransmit: its entry is kept, answered, so that
		 * retransmission goes out again under the same wire XID (the
		 * server's duplicate request cache) instead of being mapped as a
		 * new call, or absorbed by an entry that nothing ends. The
		 * windows went with the lost connection's queue pair.
		 */
		fwd_share_call_done(c, true);
		ch->share->by_entry[c->upx] = NULL;
		c->upx = WIREXID_NONE; /* fwd_call_put() would cancel the entry */
		c->owner = 0;
		c->state = FC_DONE;
		fwd_call_put(c);
		return;
	}
	if (s->fq_detached) {
		fwd_call_abandon(c);
		return;
	}
	fairq_unpick(&ch->fq, &c->fqi);
	c->picked = false;
	s->in_flight--;
	ch->in_flight--;
	fwd_call_unmarshal(c);
	fwd_share_mem_freed(s);
	c->state = FC_QUEUED;
	s->queued++;
	ch->share->resent[ch->chan_idx]++;
}

/* Every call in flight on @ch, of every client on it, is taken off the wire. */
static void share_unsend_all(struct fwd_session *ch)
{
	struct gw_session *g, *next;

	for (g = TAILQ_FIRST(&ch->base.route->sessions); g; g = next) {
		next = TAILQ_NEXT(g, link);
		struct fwd_session *s = fwd_of_base(g);
		if (s->ch != ch)
			continue;
		s->in_close = true; /* an abandoned call must not free s under us */
		for (uint32_t i = 0; i < s->slots.made; i++) {
			if (s->calls[i].state == FC_SENT && !s->calls[i].send_pending)
				share_unsend(ch, s, &s->calls[i]);
		}
		s->in_close = false;
		fwd_maybe_free(s);
	}
}

static void share_reconnect(evutil_socket_t fd, short what, void *arg)
{
	struct fwd_session *ch = arg;
	const struct gw_route *r = ch->base.route->cfg;

	(void)fd;
	(void)what;
	ch->reconnect_tries++;
	ch->reconnect_same_port = ch->local.ss_family != 0 && !ch->reconnect_any_port;
	struct rconn_params params = share_rdma_params(r, &ch->own_pd);
	ch->rdma_closed = false;
	ch->rdma = rconn_connect(
		gw_engine_rdma(ch->base.route->eng), (const struct sockaddr *)&r->upstream.addr,
		ch->reconnect_same_port ? (const struct sockaddr *)&ch->local : NULL, &params,
		&fwd_rdma_ops, ch);
	if (!ch->rdma) {
		/* Out of memory: as a failed attempt, without the connection's callback. */
		ch->rdma_closed = true;
		if (!fwd_share_channel_lost(ch, RCONN_CLOSE_RESOURCES))
			fwd_session_close(ch);
	}
}

/*
 * ops->closed of channel @ch, before it would close: true when it is to be
 * made again (the clients stay; the caller does nothing more), false when
 * it closes as it always did: the route is closing, the channel was reset
 * on purpose or never connected, its device went, or the deadline passed.
 */
bool fwd_share_channel_lost(struct fwd_session *ch, enum rconn_close_reason reason)
{
	struct fwd_share *sh = ch->share;
	uint64_t now = gw_now_us();

	if (ch->draining || ch->in_close || ch->state == FS_CLOSING ||
	    reason == RCONN_CLOSE_DEVICE || (ch->state == FS_CONNECTING && !ch->reconnecting))
		return false;
	if (ch->reconnecting && ch->reconnect_same_port && reason == RCONN_CLOSE_UNREACHABLE &&
	    !ch->reconnect_any_port) {
		ch->reconnect_any_port = true;
		gw_warn("forward %s: cannot connect again from %s: from any port now, and the "
			"server's duplicate request cache will not know the calls sent again",
			ch->base.client, ch->base.upstream);
	}
	if (!ch->reconnecting) {
		ch->reconnecting = true;
		ch->reconnect_any_port = false;
		ch->reconnect_tries = 0;
		ch->lost_at_us = now;
		gw_warn("forward %s: connection lost (%s): connecting again, its %u client(s) "
			"kept",
			ch->base.client, rconn_close_reason_str(reason), ch->users);
	} else if (now - ch->lost_at_us >= SHARE_RECONNECT_DEADLINE_US) {
		gw_warn("forward %s: not connected again in %llu s (%u attempts): closing its "
			"clients",
			ch->base.client, SHARE_RECONNECT_DEADLINE_US / 1000000,
			ch->reconnect_tries);
		ch->reconnecting = false;
		sh->reconnect_failures[ch->chan_idx]++;
		return false;
	}
	if (!ch->reconnect_ev) {
		ch->reconnect_ev =
			event_new(gw_engine_base(ch->base.route->eng), -1, 0, share_reconnect, ch);
		if (!ch->reconnect_ev) {
			ch->reconnecting = false;
			return false;
		}
	}
	fwd_bcalls_abandon(ch); /* the server's backward calls went with its connection */
	if (ch->rdma) {
		rconn_destroy(ch->rdma); /* frees its port for the next attempt */
		ch->rdma = NULL;
	}
	ch->state = FS_CONNECTING;
	ch->granted = 1; /* the new connection's grant comes with its first reply */
	ch->orphans = 0; /* the old connection's server counted them, not the new one's */
	fwd_share_set_grant(ch);
	share_unsend_all(ch);
	uint64_t delay = SHARE_RECONNECT_FIRST_US
			 << (ch->reconnect_tries < 16 ? ch->reconnect_tries : 16);
	if (delay > SHARE_RECONNECT_MAX_US)
		delay = SHARE_RECONNECT_MAX_US;
	struct timeval tv = { .tv_sec = (time_t)(delay / 1000000),
			      .tv_usec = (suseconds_t)(delay % 1000000) };
	event_add(ch->reconnect_ev, &tv);
	return true;
}

/* ---- closing ---- */

static void share_drop_queued(struct fairq_item *it, void *arg)
{
	struct fwd_call *c = call_of_item(it);

	(void)arg;
	c->s->queued--;
	c->state = FC_DONE;
	fwd_call_put(c); /* cancels its mapping */
}

/*
 * A client goes: its queued calls go with it, nobody else's; its calls in
 * flight stay. The channel is pumped: the client may have been the one the
 * pump stopped at (its call waiting for buffers, the wake-up registered on
 * its own pool waiter, which goes with it), and the others' calls would
 * wait for the next reply or call on the channel.
 */
void fwd_share_client_close(struct fwd_session *s)
{
	if (s->fq_detached)
		return;
	s->fq_detached = true;
	s->mem_wait = false; /* its queued calls go now: nothing is left to resume */
	fwd_share_keep_back_channels(s);
	fwd_share_bcalls_expire(s, 0, 0);
	fairq_client_detach(&s->ch->fq, &s->fq_client, share_drop_queued, NULL);
	struct fwd_call *c, *next;
	for (c = TAILQ_FIRST(&s->ch->gss_wait); c; c = next) {
		next = TAILQ_NEXT(c, qlink);
		if (c->s != s)
			continue;
		TAILQ_REMOVE(&s->ch->gss_wait, c, qlink);
		s->queued--;
		c->state = FC_DONE;
		fwd_call_put(c); /* it holds no entry */
	}
	fwd_share_pump(s->ch);
}

/*
 * A channel closes (lost, or reset for a call the server left unanswered):
 * its clients close too (they reconnect and retransmit, as with a
 * connection of their own), and once the RDMA side is gone, their calls
 * that were on it end unanswered.
 */
void fwd_share_channel_close(struct fwd_session *ch)
{
	struct gw_session *g, *next;
	struct fwd_share *sh = ch->share;

	if (ch->in_close)
		return;
	ch->in_close = true;
	if (ch->reconnect_ev)
		event_del(ch->reconnect_ev);
	ch->reconnecting = false;
	if (ch->state != FS_CLOSING) {
		ch->state = FS_CLOSING;
		if (sh->chan[ch->chan_idx] == ch)
			sh->chan[ch->chan_idx] = NULL; /* the next client opens a new one */
		fwd_bcalls_abandon(ch);
		if (ch->rdma && !ch->rdma_closed)
			rconn_close(ch->rdma);
		for (g = TAILQ_FIRST(&ch->base.route->sessions); g; g = next) {
			next = TAILQ_NEXT(g, link);
			if (fwd_of_base(g)->ch == ch)
				fwd_session_close(fwd_of_base(g)); /* frees only itself */
		}
	}
	if (ch->rdma_closed) {
		for (g = TAILQ_FIRST(&ch->base.route->sessions); g; g = next) {
			next = TAILQ_NEXT(g, link);
			struct fwd_session *s = fwd_of_base(g);
			if (s->ch != ch)
				continue;
			s->in_close = true;
			fwd_abandon_sent_calls(s);
			s->in_close = false;
			fwd_maybe_free(s);
		}
	}
	ch->in_close = false;
	fwd_maybe_free(ch);
}

/*
 * A client idle on a shared route gives back the pages of the call slots it
 * used (issue 17: one call left a 4 KiB page resident for the life of the
 * connection, the largest part of an idle client's cost). With nothing busy
 * every slot it made is on its free list, cleared by fwd_call_put(), and
 * nothing else points into them: its XID table is empty and the route's map
 * forgot them (fwd_share_forget()). The pages are of the client's own
 * private mapping, so they come back as zeros, never as anybody's bytes; the
 * slots are made again as first used (fwd_call_get()). Once a second from
 * the sweep, after a second without a call: a client making calls one after
 * another keeps its page, and pays no system call per call.
 */
void fwd_share_release_idle_slots(struct fwd_session *s, uint64_t now)
{
	if (s->state != FS_READY || s->slots.busy || !s->slots.made || s->xids.count ||
	    now - s->base.active_us < 1000000)
		return;
	if (madvise(s->calls, (size_t)s->slots.made * sizeof(*s->calls), MADV_DONTNEED) != 0)
		return; /* kept as they are: still valid */
	gw_slots_forget(&s->slots);
}

void fwd_share_channel_free(struct fwd_session *ch)
{
	if (ch->in_close || ch->state != FS_CLOSING || !ch->rdma_closed || ch->users ||
	    ch->bc_busy || ch->refusals_busy)
		return;
	if (ch->dev)
		rdma_dev_cancel_wait(ch->dev, &ch->pool_waiter);
	if (ch->rdma)
		rconn_destroy(ch->rdma);
	if (ch->reconnect_ev)
		event_free(ch->reconnect_ev);
	if (ch->pump_ev)
		event_free(ch->pump_ev);
	free(ch->bcalls);
	free(ch->refusals);
	gw_counters_release(&ch->base.counters);
	ch->share->live--;
	free(ch);
}

/* ---- timeouts ---- */

/*
 * The calls of @s the server has not answered within @limit are given up
 * one by one (fwd_share_orphan()), the channel and its other clients
 * kept. Only when the channel cannot spare another credit is it reset,
 * which closes its clients, @s too. Asked of closing clients as well:
 * their calls on the wire still hold the channel's credits and map
 * entries, and nothing else would ever end them. The reset is deferred to
 * the RDMA teardown: the engine is walking its sessions. Returns true
 * when @s may have been freed (it was closing and its last call went).
 */
static bool share_sweep_calls(struct fwd_session *s, uint64_t now, uint64_t limit)
{
	struct fwd_session *ch = s->ch;

	if (s->in_flight == 0 || ch->draining || ch->rdma_closed)
		return false;
	s->in_close = true; /* an orphaned call must not free s under us */
	for (uint32_t i = 0; i < s->slots.made; i++) {
		struct fwd_call *c = &s->calls[i];
		if (c->state != FC_SENT || now - c->t_sent < limit)
			continue;
		gw_count_event(&s->base, GW_EV_CALL_TIMEOUT);
		uint32_t xid = c->xid;
		unsigned long long age_s = (now - c->t_sent) / 1000000;
		if (fwd_share_orphan(c)) {
			gw_warn("forward %s: the server has not answered xid %#x in %llu s: "
				"given up, shared connection %u kept",
				s->base.client, xid, age_s, ch->chan_idx);
			continue;
		}
		gw_warn("forward %s: the server has not answered xid %#x in %llu s: resetting "
			"shared connection %u",
			s->base.client, xid, age_s, ch->chan_idx);
		ch->draining = true;
		rconn_close(ch->rdma);
		break;
	}
	s->in_close = false;
	if (s->state != FS_CLOSING)
		return false;
	fwd_maybe_free(s);
	return true;
}

/*
 * The engine's sweep of client @s: its idle call slots given back, its
 * calls and the backward calls given to it (in the channels' slots: it
 * has none of its own) that have waited @limit given up.
 */
static bool share_sweep(struct fwd_session *s, uint64_t now, uint64_t limit)
{
	fwd_share_release_idle_slots(s, now);
	if (!limit)
		return false;
	if (share_sweep_calls(s, now, limit))
		return true;
	if (s->state != FS_READY)
		return false;
	fwd_share_bcalls_expire(s, now, limit);
	return false;
}

/* ---- the upstream's operations (forward_upstream.h) ---- */

/* A client's calls, or a channel's: the channel's pump. */
static void share_pump(struct fwd_session *s)
{
	fwd_share_pump(s->conn);
}

/* @c's slot is free: a mapping still in flight for it is forgotten, its client's memory back. */
static void share_call_freed(struct fwd_call *c)
{
	if (c->upx != WIREXID_NONE)
		fwd_share_forget(c);
	fwd_share_mem_freed(c->s);
}

/*
 * The channel stays: a closing client's calls on the wire wait for their
 * replies (the server may still write into their buffers; fwd_fence_done()
 * drops them), or end with the channel (fwd_share_channel_close()).
 */
static void share_close_sent(struct fwd_session *s)
{
	(void)s;
}

/* The client goes: its channel has one user less, and may go too if it was lost. */
static struct fwd_session *share_detach(struct fwd_session *s)
{
	s->ch->users--;
	return s->ch;
}

static struct fwd_session *share_bcall_client(struct fwd_session *ch, struct gw_buf *buf,
					      const struct rpcrdma_hdr *h, const char **why)
{
	struct fwd_session *to =
		fwd_share_cb_client(ch, buf->base + h->hdr_len, h->inline_len, why);

	if (!to)
		gw_count_event(&ch->base, GW_EV_BACKWARD_NO_SESSION);
	return to;
}

const struct fwd_upstream_ops fwd_share_upstream = {
	.remade = true,
	.admit = fwd_share_admit,
	.pump = share_pump,
	.requeue = fwd_share_requeue,
	.call_done = fwd_share_call_done,
	.call_freed = share_call_freed,
	.reply_to = fwd_share_reply_owner,
	.sessions_learned = fwd_share_sessions_learned,
	.bcall_of = fwd_share_bcall_of,
	.pause_changed = fwd_share_client_pause_update,
	.client_close = fwd_share_client_close,
	.close_sent = share_close_sent,
	.detach = share_detach,
	.sweep = share_sweep,
	.call_by_xid = fwd_share_call_by_xid,
	.grant_changed = fwd_share_set_grant,
	.bcall_client = share_bcall_client,
	.conn_ready = share_conn_ready,
	.conn_lost = fwd_share_channel_lost,
};

/* ---- /stats ---- */

bool gw_forward_route_stats(const struct gw_route_rt *route, struct gw_stats_shared *out)
{
	static const char *const states[] = { "connecting", "ready", "closing" };
	const struct fwd_share *sh = fwd_route(route)->share;

	if (!sh)
		return false;
	memset(out, 0, sizeof(*out));
	out->nchannels = sh->nchan;
	for (uint16_t i = 0; i < sh->nchan && i < GW_STATS_MAX_CHANNELS; i++) {
		const struct fwd_session *ch = sh->chan[i];
		struct gw_stats_channel *o = &out->channels[i];
		o->reconnects = sh->reconnects[i];
		o->reconnect_failures = sh->reconnect_failures[i];
		o->calls_resent = sh->resent[i];
		o->calls_orphaned = sh->orphaned[i];
		o->state = !ch ? "closed" : ch->reconnecting ? "reconnecting" : states[ch->state];
		if (!ch)
			continue;
		gw_stats_channel_queue(o, &ch->fq, ch->users);
		if (ch->rdma) {
			struct rconn_stats rs;

			rconn_get_stats(ch->rdma, &rs);
			o->cq_yields = rs.cq_yields;
		}
	}
	gw_stats_shared_xids(out, &sh->map);
	out->bc_kept_now = bc_orphans_count(&sh->gone_holders);
	out->bc_kept = sh->gone_holders.st.kept;
	out->bc_adopted = sh->gone_holders.st.adopted;
	out->bc_expired = sh->gone_holders.st.expired;
	out->bc_replaced = sh->gone_holders.st.replaced;
	out->bc_dropped = sh->gone_holders.st.dropped;
	return true;
}

/* ---- the route's end (gateway/core/engine.c) ---- */

bool gw_forward_route_close(struct gw_route_rt *route)
{
	const struct fwd_route *fr = fwd_route(route);
	struct fwd_share *sh = fr ? fr->share : NULL;

	if (!sh)
		return false;
	for (uint16_t i = 0; i < sh->nchan; i++) {
		struct fwd_session *ch = sh->chan[i];
		if (ch && ch->reconnecting && ch->rdma_closed) {
			ch->draining = true;
			fwd_session_close(ch); /* between attempts: no connection to close */
		} else if (ch && !ch->rdma_closed && !ch->draining) {
			ch->draining = true;
			rconn_close(ch->rdma); /* ops->closed closes the channel */
		}
	}
	return sh->live > 0;
}

void gw_forward_route_free(struct gw_route_rt *route)
{
	struct fwd_route *fr = fwd_route(route);
	struct fwd_share *sh = fr ? fr->share : NULL;

	if (sh && sh->live > 0)
		return; /* a channel still refers to it: left to the process's end */
	if (sh) {
		wirexid_destroy(&sh->map);
		bc_orphans_fini(&sh->gone_holders);
		free(sh->by_entry);
		free(sh);
	}
	free(fr);
	route->mode_state = NULL;
}
