/* SPDX-License-Identifier: MIT */
/*
 * gateway/reverse/reverse_share.c - reverse mode, shared upstream connections
 * (route key upstream_connections > 0, issue 17): every RDMA client's calls
 * go over N TCP connections ("channels") to the route's server, instead of
 * one TCP connection per client.
 *
 * The two modules of forward mode's sharing do the work here too:
 * gateway/wirexid maps each call (client address, CM source port, XID) to a
 * wire XID unique on its channel, and gateway/fairq shares each channel
 * among its clients. The TCP side has no credits, so the channel's "grant"
 * is a fixed bound: twice the route's credits in flight per channel, and
 * half the credits per client, so that one client never holds a channel.
 *
 * A client is put on one channel for its life, by a hash of its address
 * and port. The key of "the same client" is the RDMA peer's address and
 * the source port of its CM connection, which is what the server's
 * duplicate request cache would key on had the client reached it directly
 * over RDMA. Linux xprtrdma makes a new cm_id on each reconnect and the CM
 * gives it a new port, so after a reconnect its retransmissions are new
 * calls here, as they would be at a kernel NFS/RDMA server; what the map
 * adds is that a retransmission on the same connection of a call already
 * answered goes out again under the same wire XID.
 *
 * Replies come back on the channel and are matched to the call in flight
 * under that wire XID there, and nothing else; the client's XID is put
 * back before the reply is relayed. Backward calls (NFSv4.1 callbacks)
 * are routed by the session id of their CB_SEQUENCE to the one client on
 * the channel that holds it; any other is refused with SYSTEM_ERR, as
 * forward mode does.
 *
 * A lost channel (or a call left unanswered for call_timeout, also one of
 * a client that went away: chan_sweep()) is reconnected within
 * connect_timeout, and the calls in flight on it go again under their wire
 * XIDs; calls of clients that went away are forgotten. A channel that cannot be reached within
 * connect_timeout closes the clients on it; the next client to arrive tries it again. The route
 * opens all N connections when its first client arrives.
 */
#include <sys/random.h>

#include "gateway/reverse/reverse_priv.h"

struct rev_chan {
	struct rev_share *sh;
	uint16_t idx;
	enum rev_up_state up;
	struct tcp_conn *tcp;
	struct tcp_connect *connect;
	struct event *retry_timer;
	struct rdma_dev *dev; /* whose pool the reply records land in */
	struct rdma_pool_waiter pool_waiter;
	uint64_t missing_since;
	struct gw_backoff backoff; /* the delay before the next connect */
	uint32_t gen; /* connections made: a backward reply goes on the one that sent the call */
	bool reached;
	bool out_congested;
	bool starved;
	struct fairq fq;
	uint32_t nclients;
	struct rev_client_list clients;
	struct event *gss_ev; /* the retry of GSS calls waiting for their XID (chan_gss_kick()) */
};

struct rev_share {
	struct gw_route_rt *route;
	struct rev_share_map ledger; /* reverse_share_map.c */
	uint16_t nchan;
	uint32_t cap;
	bool closing;
	struct rev_chan chan[];
};

static const struct tcp_conn_ops chan_tcp_ops;
static void chan_connect(struct rev_chan *ch);
static void chan_restart(struct rev_chan *ch);
static void chan_gss_retry(evutil_socket_t fd, short what, void *arg);
static void chan_gss_kick(struct rev_chan *ch);

static void route_event(struct rev_chan *ch, enum gw_event_kind kind)
{
	ch->sh->route->counters.events[kind]++;
}

/* ---- the route's pool ---- */

static void chan_pool_wake(struct rdma_pool_waiter *w)
{
	struct rev_chan *ch =
		(struct rev_chan *)((char *)w - offsetof(struct rev_chan, pool_waiter));

	if (ch->starved && ch->tcp) {
		ch->starved = false;
		tcp_conn_source_ready(ch->tcp);
	}
}

/*
 * Orphans - calls on the wire of clients that went away - are on no
 * client's list of calls sent, so no client's call timer covers them, and
 * each holds one of the connection's credits: a server that never answers
 * them would leave a few gone clients holding the connection's whole bound
 * and every client on it waiting. The connection's timer (retry_timer; it
 * waits for a reconnection only while the connection is down, and a down
 * connection has no orphans) sweeps them: one older than call_timeout
 * restarts the connection, as a live client's call does.
 *
 * Why a restart and not that orphan's credit freed alone: the credit
 * stands for a call the server still holds on this connection. Freed, the
 * gateway would send more than its bound to a server that has stopped
 * answering on this connection (knfsd drops a request it cannot serve and
 * waits for the client to reconnect and retransmit; an orphan has no client
 * to do that); and its map entry could never be taken back. Only the
 * connection's end makes the server forget the call, so only then is the
 * credit free (rsm_requeue() hands it back); the live calls go again under
 * their wire XIDs, as after any call_timeout.
 */
static void chan_sweep_arm(struct rev_chan *ch)
{
	uint64_t limit = (uint64_t)ch->sh->route->cfg->call_timeout_ms * 1000;
	uint64_t sent, now = gw_now_us();

	if (limit == 0 || ch->up != UP_READY || ch->fq.orphans == 0 ||
	    evtimer_pending(ch->retry_timer, NULL) ||
	    !rsm_oldest_orphan(&ch->sh->ledger, ch->idx, &sent))
		return;
	uint64_t due = sent + limit, wait = due > now ? due - now : 0;
	struct timeval tv = { (time_t)(wait / 1000000), (suseconds_t)(wait % 1000000) };
	evtimer_add(ch->retry_timer, &tv);
}

static void chan_sweep(struct rev_chan *ch)
{
	uint64_t limit = (uint64_t)ch->sh->route->cfg->call_timeout_ms * 1000;
	uint64_t sent, now = gw_now_us();

	if (limit != 0 && ch->fq.orphans != 0 &&
	    rsm_oldest_orphan(&ch->sh->ledger, ch->idx, &sent) && now - sent >= limit) {
		gw_warn("%s: shared upstream connection %u: no reply within %u ms to a call of a "
			"client that went away: the connection starts over, its calls in flight "
			"go again",
			ch->sh->route->cfg->name, ch->idx, ch->sh->route->cfg->call_timeout_ms);
		route_event(ch, GW_EV_CALL_TIMEOUT);
		chan_restart(ch);
		return;
	}
	chan_sweep_arm(ch); /* the next oldest, if any */
}

static void chan_retry(evutil_socket_t fd, short what, void *arg)
{
	struct rev_chan *ch = arg;

	(void)fd;
	(void)what;
	if (ch->sh->closing)
		return;
	if (ch->up == UP_NONE)
		chan_connect(ch);
	else if (ch->up == UP_READY)
		chan_sweep(ch);
}

static void share_free(struct rev_share *sh)
{
	for (uint16_t i = 0; i < sh->nchan; i++) {
		if (sh->chan[i].retry_timer)
			event_free(sh->chan[i].retry_timer);
		if (sh->chan[i].gss_ev)
			event_free(sh->chan[i].gss_ev);
	}
	rsm_destroy(&sh->ledger);
	free(sh);
}

static struct rev_share *share_get(struct gw_route_rt *route)
{
	const struct gw_route *r = route->cfg;
	struct rev_share *sh = rev_route_share(route);
	uint64_t seed;

	if (sh)
		return sh;
	sh = calloc(1, sizeof(*sh) + r->upstream_connections * sizeof(sh->chan[0]));
	if (!sh)
		return NULL;
	if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = gw_now_us() * 0x9e3779b97f4a7c15ull;
	struct wirexid_params p = { .max_entries = wirexid_entries_for(r->max_sessions,
								       r->credits + r->queue_limit),
				    .channels = (uint16_t)r->upstream_connections,
				    .seed = seed };
	sh->route = route;
	sh->nchan = (uint16_t)r->upstream_connections;
	if (rsm_init(&sh->ledger, &p) != 0) {
		free(sh);
		return NULL;
	}
	/* Half of what a client would have alone unless configured (no server credits here). */
	sh->cap = fairq_share_cap(r->credits, r->shared_client_max_in_flight);
	for (uint16_t i = 0; i < sh->nchan; i++) {
		struct rev_chan *ch = &sh->chan[i];
		ch->sh = sh;
		ch->idx = i;
		ch->pool_waiter.fn = chan_pool_wake;
		TAILQ_INIT(&ch->clients);
		fairq_init(&ch->fq, 1, r->credits * 2);
		fairq_set_contended_cap(&ch->fq, r->shared_client_max_in_flight_contended);
		ch->retry_timer = evtimer_new(gw_engine_base(route->eng), chan_retry, ch);
		ch->gss_ev = event_new(gw_engine_base(route->eng), -1, 0, chan_gss_retry, ch);
		if (!ch->retry_timer || !ch->gss_ev) {
			share_free(sh);
			return NULL;
		}
	}
	route->mode_state = sh;
	gw_info("%s: %u shared upstream connections, XID map of %u entries", r->name, sh->nchan,
		p.max_entries);
	return sh;
}

/*
 * The client's key for @xid: its address and CM source port. A peer with
 * no IP address (an InfiniBand address family) is keyed by its connection
 * id, which is never reused: no two clients share a key.
 */
void rev_share_key(const struct rev_session *s, uint32_t xid, struct wirexid_key *k)
{
	if (wirexid_key_from_sockaddr(k, (const struct sockaddr *)&s->peer, xid))
		return;
	memset(k, 0, sizeof(*k));
	k->addr[0] = 0xfe; /* not an IPv4-mapped address: cannot equal an IP client's */
	memcpy(k->addr + 8, &s->base.id, sizeof(s->base.id));
	k->xid = xid;
}

/* FNV-1a over the client's key without its XID: the same client, the same channel. */
uint16_t rev_share_channel_of(const struct rev_session *s, uint16_t nchan)
{
	struct wirexid_key k;
	uint32_t h = 2166136261u;

	rev_share_key(s, 0, &k);
	for (size_t i = 0; i < sizeof(k.addr); i++)
		h = (h ^ k.addr[i]) * 16777619u;
	h = (h ^ (k.port & 0xff)) * 16777619u;
	h = (h ^ (k.port >> 8)) * 16777619u;
	return (uint16_t)(h % nchan);
}

/*
 * Every channel not connected or connecting starts now: the route's server
 * sees its N connections from the first client on, whichever channels the
 * clients hash to, and a channel given up is tried again with the next client.
 */
static void share_open_all(struct rev_share *sh, struct rdma_dev *dev)
{
	for (uint16_t i = 0; i < sh->nchan; i++) {
		struct rev_chan *ch = &sh->chan[i];
		if (!ch->dev)
			ch->dev = dev;
		if (ch->up != UP_NONE || evtimer_pending(ch->retry_timer, NULL))
			continue;
		ch->missing_since = gw_now_us();
		gw_backoff_init(&ch->backoff, REV_BACKOFF_MIN_MS, REV_BACKOFF_MAX_MS);
		chan_connect(ch);
	}
}

/* The client is put on its channel; the route's channels open with the first client. */
static bool share_open(struct rev_session *s)
{
	struct rev_share *sh = share_get(s->base.route);

	if (!sh || sh->closing) {
		gw_err("reverse %s: no shared upstream connection: %s", s->base.client,
		       sh ? "the route is stopping" : strerror(ENOMEM));
		return false;
	}
	struct rev_chan *ch = &sh->chan[rev_share_channel_of(s, sh->nchan)];
	struct rdma_dev *dev = rconn_device(s->rdma);
	/* Reply records are read into the channel's pool and written to the client from there. */
	if (ch->dev && ch->dev != dev) {
		gw_warn("reverse %s: refused: shared upstream connection %u reads into another "
			"RDMA device's memory",
			s->base.client, ch->idx);
		return false;
	}
	s->ch = ch;
	fairq_client_init(&s->fq_client, sh->cap);
	TAILQ_INSERT_TAIL(&ch->clients, s, ch_link);
	ch->nclients++;
	gw_debug("reverse %s: on shared upstream connection %u (%u clients)", s->base.client,
		 ch->idx, ch->nclients);
	if (ch->up == UP_READY)
		snprintf(s->base.upstream, sizeof(s->base.upstream), "shared %u", ch->idx);
	share_open_all(sh, dev);
	return true;
}

/*
 * The client goes away: its queued calls are dropped, its calls on the
 * wire lose their owner (their replies will be dropped; their credits are
 * real until then), and no other client's call is touched.
 */
static void share_close(struct rev_session *s)
{
	struct rev_chan *ch = s->ch;

	if (!ch)
		return; /* never put on one: closed before or as it was established */
	rsm_detach(&ch->sh->ledger, &ch->fq, s);
	chan_gss_kick(ch); /* its queued calls' XIDs are free */
	TAILQ_REMOVE(&ch->clients, s, ch_link);
	ch->nclients--;
	s->ch = NULL;
	chan_sweep_arm(ch); /* its calls on the wire are orphans now */
}

/* (ch is NULL only before the client's open and after its close.) */
static struct tcp_conn *share_conn(const struct rev_session *s)
{
	return s->ch && s->ch->up == UP_READY ? s->ch->tcp : NULL;
}

static uint32_t share_generation(const struct rev_session *s)
{
	return s->ch ? s->ch->gen : 0;
}

static uint32_t share_queued(const struct rev_session *s)
{
	return s->fq_client.queued;
}

/* The channel waits for buffers with a waiter of its own (chan_pool_wake()). */
static void share_buffers_back(struct rev_session *s)
{
	(void)s;
}

/* Nothing of a channel waits for one client. */
static void share_reset(struct rev_session *s)
{
	(void)s;
}

static bool share_holds(const struct rev_session *s)
{
	(void)s;
	return false;
}

/* ---- calls out ---- */

static void chan_pump(struct rev_chan *ch)
{
	struct rev_share *sh = ch->sh;
	struct fairq_item *it;

	while (ch->up == UP_READY && !ch->out_congested &&
	       (it = fairq_pick(&ch->fq, gw_now_us())) != NULL) {
		struct rev_call *c =
			(struct rev_call *)((char *)it - offsetof(struct rev_call, fqi));
		struct rev_session *s = c->s;
		if (tcp_conn_send_ref(ch->tcp, c->msg, c->msg_off, c->msg_len) != 0) {
			fairq_unpick(&ch->fq, it);
			gw_warn("%s: shared upstream connection %u: a call could not be queued "
				"(%s): reconnecting",
				sh->route->cfg->name, ch->idx, strerror(errno));
			route_event(ch, GW_EV_OUTPUT_OVERFLOW);
			if (ch->tcp)
				chan_restart(ch);
			return;
		}
		GW_COUNT(&s->base, tcp_bytes_out, (uint64_t)c->msg_len + 4);
		c->t_sent = gw_now_pass_us();
		rsm_sent(&sh->ledger, c, c->t_sent);
		rev_enqueue(&s->sentq, c);
		rev_call_timer_arm(s);
	}
}

/* A call that cannot be mapped or goes superseded: SYSTEM_ERR to its client. */
static void share_refuse(struct rev_session *s, struct rev_call *c)
{
	rev_dequeue(c);
	xidmap_remove(&s->xids, c->xid);
	c->in_xidmap = false;
	c->up_mapped = false;
	rev_put_buf(&c->msg);
	c->rpc_stat = RPC_ACC_SYSTEM_ERR;
	rev_answer(s, c, RA_RPC_ERROR);
}

static void share_call(struct rev_session *s, struct rev_call *c)
{
	struct rev_chan *ch = s->ch;
	struct wirexid_key k;
	struct rev_call *old;

	if (c->msg_len < 4) { /* no room for the wire XID: the ULB parsed no call header */
		share_refuse(s, c);
		return;
	}
	rev_share_key(s, c->xid, &k);
	switch (rsm_map(&ch->sh->ledger, &ch->fq, &k, ch->idx, c, gw_now_us(), &old)) {
	case RSM_FULL:
		gw_warn("reverse %s: xid %#x: the shared connections' XID map is full: SYSTEM_ERR",
			s->base.client, c->xid);
		share_refuse(s, c);
		return;
	case RSM_GSS_WAIT:
		/*
		 * As forward mode: a GSS call goes under its own XID or not at all,
		 * so it waits, keeping its credit, until a call leaves this
		 * connection (chan_gss_kick()).
		 */
		gw_count_event(&s->base, GW_EV_GSS_XID_WAIT);
		return;
	case RSM_ON_WIRE:
		c->t_sent = gw_now_pass_us();
		rev_enqueue(&s->sentq, c);
		rev_call_timer_arm(s);
		break;
	case RSM_QUEUED:
		chan_pump(ch);
		break;
	}
	if (old) {
		/* Superseded by this retransmission from a newer connection of the client. */
		gw_count_event(&s->base, GW_EV_RETRANSMIT_ABSORBED);
		share_refuse(old->s, old);
	}
}

/*
 * The GSS calls waiting on @ch try again, each once: it goes under its XID
 * now, or waits again. Deferred to the loop by chan_gss_kick(), so never
 * run inside a reply's or a close's own work.
 */
static void chan_gss_retry(evutil_socket_t fd, short what, void *arg)
{
	struct rev_chan *ch = arg;
	struct rev_queue again = { .head = TAILQ_HEAD_INITIALIZER(again.head) };
	struct rev_call *c;

	(void)fd;
	(void)what;
	rsm_gss_take(&ch->sh->ledger, ch->idx, &again);
	while ((c = TAILQ_FIRST(&again.head)) != NULL) {
		rev_dequeue(c);
		share_call(c->s, c);
	}
}

/* A call left @ch (answered, its client gone, or the connection restarted): its XID is free. */
static void chan_gss_kick(struct rev_chan *ch)
{
	if (ch->sh->ledger.gss_wait.n)
		event_active(ch->gss_ev, 0, 0);
}

/* ---- records from the server ---- */

/*
 * The client a backward call is for: the one live client on the channel
 * that carried it holding the back channel of the session its CB_SEQUENCE
 * names (learned from CREATE_SESSION and BIND_CONN_TO_SESSION replies).
 * Only clients of that channel: the reply must go back on the connection
 * that carried the call, which is the client's channel. Two holders is a
 * server's fault or a stale entry: neither gets it.
 */
struct rev_session *rev_share_cb_client(const struct rev_client_list *clients, const uint8_t *msg,
					uint32_t len, const char **why)
{
	uint8_t id[ULB_SESSIONID_SIZE];
	struct rev_session *s, *to = NULL;

	if (!ulb_cb_sessionid(msg, len, id)) {
		*why = "not a CB_COMPOUND that opens with CB_SEQUENCE";
		return NULL;
	}
	TAILQ_FOREACH (s, clients, ch_link) {
		if (s->state != RS_READY || !ulb_sessions_has_back(&s->ulb_sessions, id))
			continue;
		if (to) {
			*why = "a session more than one client holds";
			return NULL;
		}
		to = s;
	}
	if (!to)
		*why = "a session no client holds";
	return to;
}

/*
 * @s bound session @id's back channel (BIND_CONN_TO_SESSION, as a Linux
 * client does when its connection was made again, or to trunk): the server
 * accepted it, so its callbacks for that session on this channel are @s's,
 * and the other clients of the channel lose it (else the call would have two
 * holders and go to neither). Clients of other channels keep theirs: a
 * callback is only routed among the clients of the channel that carried it.
 */
void rev_share_take_back(struct rev_client_list *clients, const struct rev_session *s,
			 const uint8_t id[ULB_SESSIONID_SIZE])
{
	struct rev_session *o;

	TAILQ_FOREACH (o, clients, ch_link) {
		if (o == s || !ulb_sessions_unbind_back(&o->ulb_sessions, id))
			continue;
		if (o->state == RS_READY)
			gw_warn("reverse %s: BIND_CONN_TO_SESSION takes a session's back channel "
				"from live client %s: its callbacks go to the binder now",
				s->base.client, o->base.client);
	}
}

static void share_back_bound(struct rev_session *s, const uint8_t id[ULB_SESSIONID_SIZE])
{
	if (s->ch)
		rev_share_take_back(&s->ch->clients, s, id);
}

/* A backward call: to the one client on the channel holding the session of its CB_SEQUENCE. */
static void chan_bc_call(struct rev_chan *ch, struct gw_buf *buf, uint32_t off, uint32_t len,
			 uint32_t xid)
{
	const char *why = NULL;
	struct rev_session *to = rev_share_cb_client(&ch->clients, buf->base + off, len, &why);

	if (to) {
		rev_bc_call(to, buf, off, len, xid);
		return;
	}
	gw_buf_put(buf);
	gw_warn("%s: shared upstream connection %u: backward call xid %#x for no client (%s): "
		"SYSTEM_ERR",
		ch->sh->route->cfg->name, ch->idx, xid, why);
	route_event(ch, GW_EV_BACKWARD_NO_SESSION);
	uint8_t msg[REV_RPC_ERR_MAX];
	size_t n = rpc_build_accepted_error(msg, sizeof(msg), xid, RPC_ACC_SYSTEM_ERR, 0, 0);
	if (n && tcp_conn_send_copy(ch->tcp, msg, n) != 0 && ch->tcp)
		chan_restart(ch);
}

static void chan_reply(struct rev_chan *ch, struct gw_buf *buf, uint32_t off, uint32_t len,
		       uint32_t xid)
{
	bool stray;
	struct rev_call *c = rsm_reply(&ch->sh->ledger, &ch->fq, ch->idx, xid, gw_now_us(), &stray);

	if (!stray)
		chan_gss_kick(ch); /* a call (maybe an orphan's) left the wire: its XID is free */
	if (!c) {
		/* A stray (counted), or the reply to a client that went away. */
		if (stray)
			route_event(ch, GW_EV_UNMATCHED_REPLY);
		gw_buf_put(buf);
		chan_pump(ch);
		return;
	}
	struct rev_session *s = c->s;
	s->base.counters.tcp_bytes_in += (uint64_t)len + 4;
	xdr_put32(buf->base + off, c->xid); /* the client's XID back */
	gw_session_touch(&s->base, gw_now_us());
	rev_reply_to_call(s, c, buf, off, len);
	chan_pump(ch);
}

static void chan_record(struct tcp_conn *tc, struct gw_buf *buf, uint32_t off, uint32_t len,
			void *arg)
{
	struct rev_chan *ch = arg;
	uint32_t xid, type;

	(void)tc;
	ch->sh->route->counters.tcp_bytes_in += (uint64_t)len + 4;
	if (!rpc_msg_peek(buf->base + off, len, &xid, &type)) {
		gw_buf_put(buf);
		return;
	}
	if (type == RPC_MSG_CALL)
		chan_bc_call(ch, buf, off, len, xid);
	else
		chan_reply(ch, buf, off, len, xid);
}

static void chan_pressure(struct tcp_conn *tc, bool congested, void *arg)
{
	struct rev_chan *ch = arg;

	(void)tc;
	ch->out_congested = congested;
	if (!congested)
		chan_pump(ch);
}

static void chan_starved(struct tcp_conn *tc, void *arg)
{
	struct rev_chan *ch = arg;

	(void)tc;
	route_event(ch, GW_EV_NO_BUFFERS);
	ch->starved = true;
	rdma_dev_wait_for_buffers(ch->dev, &ch->pool_waiter);
}

static void chan_closed(struct tcp_conn *tc, const struct tcp_close_info *why, void *arg)
{
	struct rev_chan *ch = arg;

	(void)tc;
	if (why->reason == TCP_CLOSE_BAD_RECORD)
		route_event(ch, GW_EV_MALFORMED_RECORD);
	else if (why->reason == TCP_CLOSE_RECORD_TIMEOUT)
		route_event(ch, GW_EV_RECORD_TIMEOUT);
	route_event(ch, GW_EV_CONNECTION_LOST);
	gw_info("%s: shared upstream connection %u lost (%s%s%s); reconnecting",
		ch->sh->route->cfg->name, ch->idx, tcp_close_reason_name(why->reason),
		why->err ? ": " : "", why->err ? strerror(why->err) : "");
	chan_restart(ch);
}

static const struct tcp_conn_ops chan_tcp_ops = {
	.record = chan_record,
	.output_pressure = chan_pressure,
	.starved = chan_starved,
	.closed = chan_closed,
};

/* ---- the channel's connection ---- */

/* The channel could not be reached within connect_timeout: its clients go (they reconnect). */
static void chan_give_up(struct rev_chan *ch)
{
	struct rev_session *s, *next;

	gw_warn("%s: shared upstream connection %u: %s not reached within %u ms: closing its %u "
		"clients",
		ch->sh->route->cfg->name, ch->idx, ch->sh->route->cfg->upstream.text,
		ch->sh->route->cfg->connect_timeout_ms, ch->nclients);
	route_event(ch, GW_EV_UPSTREAM_FAILURE);
	for (s = TAILQ_FIRST(&ch->clients); s; s = next) {
		next = TAILQ_NEXT(s, ch_link);
		rev_session_close(s); /* detaches it, and touches no other client */
	}
}

static void chan_retry_later(struct rev_chan *ch)
{
	uint64_t missing = (gw_now_us() - ch->missing_since) / 1000;
	uint64_t delay;

	if (!gw_backoff_next_within(&ch->backoff, missing, ch->sh->route->cfg->connect_timeout_ms,
				    &delay)) {
		chan_give_up(ch);
		return;
	}
	struct timeval tv = gw_ms_timeval(delay);
	evtimer_add(ch->retry_timer, &tv);
}

static void chan_connected(evutil_socket_t fd, int err, void *arg)
{
	struct rev_chan *ch = arg;
	struct gw_route_rt *route = ch->sh->route;
	struct rev_session *s;

	ch->connect = NULL;
	ch->up = UP_NONE;
	if (fd < 0) {
		gw_info("%s: shared upstream connection %u: %s", route->cfg->name, ch->idx,
			strerror(err));
		chan_retry_later(ch);
		return;
	}
	ch->tcp = tcp_conn_new(gw_engine_base(route->eng), fd, &route->tcp_cfg,
			       rdma_pool_source(rdma_dev_pool(ch->dev)), &chan_tcp_ops, ch);
	if (!ch->tcp) {
		close(fd);
		chan_retry_later(ch);
		return;
	}
	ch->up = UP_READY;
	ch->gen++;
	if (ch->reached)
		route_event(ch, GW_EV_UPSTREAM_RECONNECT);
	ch->reached = true;
	gw_info("%s: shared upstream connection %u to %s up (%u clients, %u calls wait)",
		route->cfg->name, ch->idx, route->cfg->upstream.text, ch->nclients, ch->fq.queued);
	TAILQ_FOREACH (s, &ch->clients, ch_link)
		snprintf(s->base.upstream, sizeof(s->base.upstream), "shared %u", ch->idx);
	chan_pump(ch);
}

static void chan_connect(struct rev_chan *ch)
{
	const struct gw_route *r = ch->sh->route->cfg;
	uint64_t missing = (gw_now_us() - ch->missing_since) / 1000;

	if (missing >= r->connect_timeout_ms) {
		chan_give_up(ch);
		return;
	}
	unsigned flags = r->source_port == GW_SOURCE_PORT_RESERVED ? TCP_CONNECT_RESVPORT : 0;
	ch->up = UP_CONNECTING;
	ch->connect = tcp_connect_start(
		gw_engine_base(ch->sh->route->eng), (const struct sockaddr *)&r->upstream.addr,
		r->upstream.addrlen, (unsigned)(r->connect_timeout_ms - missing), flags,
		chan_connected, ch);
	if (!ch->connect) {
		ch->up = UP_NONE;
		chan_retry_later(ch);
	}
}

/* A call on the lost connection goes back to waiting: off its client's list of calls sent. */
static void chan_unsend(struct rev_call *c)
{
	rev_dequeue(c);
}

static void chan_restart(struct rev_chan *ch)
{
	struct rev_session *s;

	evtimer_del(ch->retry_timer); /* the orphan sweep's: the restart forgets them */
	if (ch->tcp) {
		tcp_conn_free(ch->tcp);
		ch->tcp = NULL;
	}
	/*
	 * Restarted twice (a failed backward send closes the connection, whose
	 * close restarts it, and the overflow path restarts it again): the
	 * first attempt's connect goes, or it would be leaked and answer later.
	 */
	if (ch->connect) {
		tcp_connect_cancel(ch->connect);
		ch->connect = NULL;
	}
	ch->up = UP_NONE;
	ch->gen++; /* replies to backward calls of the old connection are dropped */
	ch->out_congested = false;
	ch->starved = false;
	TAILQ_FOREACH (s, &ch->clients, ch_link)
		rev_bc_drop_waiting(s);
	/* Calls on the wire of clients still here go again, under their wire XIDs. */
	rsm_requeue(&ch->sh->ledger, &ch->fq, ch->idx, gw_now_us(), chan_unsend);
	chan_gss_kick(ch); /* the orphans' XIDs are free */
	if (ch->sh->closing)
		return;
	ch->missing_since = gw_now_us();
	gw_backoff_init(&ch->backoff, REV_BACKOFF_MIN_MS, REV_BACKOFF_MAX_MS);
	chan_connect(ch);
}

/* The channel starts over: the calls in flight of all its clients go again. */
static void share_timed_out(struct rev_session *s, const struct rev_call *c)
{
	(void)c;
	gw_warn("reverse %s: no reply from the upstream within %u ms: shared upstream connection "
		"%u starts over, its calls in flight go again",
		s->base.client, s->base.route->cfg->call_timeout_ms, s->ch->idx);
	chan_restart(s->ch);
}

static void share_overflow(struct rev_session *s, const char *what, uint32_t xid)
{
	rev_up_overflow_warn(s, what, xid, errno);
	chan_restart(s->ch);
}

const struct rev_upstream_ops rev_share_upstream = {
	.learns_sessions = true,
	.call = share_call,
	.timed_out = share_timed_out,
	.back_bound = share_back_bound,
	.conn = share_conn,
	.generation = share_generation,
	.overflow = share_overflow,
	.buffers_back = share_buffers_back,
	.queued = share_queued,
	.open = share_open,
	.close = share_close,
	.reset = share_reset,
	.holds = share_holds,
};

/* ---- the route's view (gateway/core/engine.c) ---- */

bool gw_reverse_route_stats(const struct gw_route_rt *route, struct gw_stats_shared *out)
{
	static const char *const states[] = { "closed", "connecting", "ready" };
	const struct rev_share *sh = rev_route_share(route);

	if (!sh)
		return false;
	memset(out, 0, sizeof(*out));
	out->nchannels = sh->nchan;
	for (uint16_t i = 0; i < sh->nchan && i < GW_STATS_MAX_CHANNELS; i++) {
		const struct rev_chan *ch = &sh->chan[i];
		struct gw_stats_channel *o = &out->channels[i];
		o->state = sh->closing ? "closing" : states[ch->up];
		if (ch->up == UP_NONE && evtimer_pending(ch->retry_timer, NULL))
			o->state = "connecting"; /* waiting to try again */
		gw_stats_channel_queue(o, &ch->fq, ch->nclients);
	}
	gw_stats_shared_xids(out, &sh->ledger.map);
	return true;
}

void gw_reverse_route_close(struct gw_route_rt *route)
{
	struct rev_share *sh = rev_route_share(route);

	if (!sh)
		return;
	sh->closing = true;
	for (uint16_t i = 0; i < sh->nchan; i++) {
		struct rev_chan *ch = &sh->chan[i];
		evtimer_del(ch->retry_timer);
		if (ch->connect) {
			tcp_connect_cancel(ch->connect);
			ch->connect = NULL;
		}
		if (ch->dev)
			rdma_dev_cancel_wait(ch->dev, &ch->pool_waiter);
		if (ch->tcp) {
			tcp_conn_free(ch->tcp);
			ch->tcp = NULL;
		}
		ch->up = UP_NONE;
	}
}

void gw_reverse_route_free(struct gw_route_rt *route)
{
	struct rev_share *sh = rev_route_share(route);

	if (!sh)
		return;
	gw_reverse_route_close(route);
	for (uint16_t i = 0; i < sh->nchan; i++) {
		if (sh->chan[i].nclients)
			return; /* a client still refers to it: left to the process's end */
	}
	share_free(sh);
	route->mode_state = NULL;
}
