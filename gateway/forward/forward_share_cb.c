/* SPDX-License-Identifier: MIT */
/*
 * gateway/forward/forward_share_cb.c - forward mode, shared upstream connections:
 * backward calls (RFC 8167). On a shared route the server's callbacks come
 * on the gateway's channels for whichever client owns the NFSv4.1 session
 * their CB_SEQUENCE names: learned from the CREATE_SESSION and
 * BIND_CONN_TO_SESSION replies relayed to the clients, and, for a client
 * whose connection was reset, from what its gone connection held
 * (gateway/maps/bc_orphans.h). A callback's reply goes back on the channel that
 * carried it (gateway/forward/forward_backchannel.c). See docs/architecture.md,
 * "Shared upstream connections".
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include "common/clock.h"
#include "common/log.h"
#include "gateway/maps/bc_orphans.h"
#include "gateway/core/session.h"
#include "gateway/maps/wirexid.h"
#include "ulb-rules/ulb.h"
#include "gateway/forward/forward_priv.h"

/* @s's address as the table keeps it; false for a peer that is not IP. */
static bool share_peer_addr(const struct fwd_session *s, uint8_t addr[16])
{
	struct wirexid_key k;

	if (!wirexid_key_from_sockaddr(&k, (const struct sockaddr *)&s->peer, 0))
		return false;
	memcpy(addr, k.addr, sizeof(k.addr));
	return true;
}

/*
 * Client @s goes: the back channels it holds are kept for its reconnection
 * (bc_orphans.h). Called before its session table goes with it.
 */
void fwd_share_keep_back_channels(struct fwd_session *s)
{
	struct fwd_share *sh = fwd_route(s->base.route)->share;
	uint8_t addr[16];

	if (!sh || !share_peer_addr(s, addr))
		return;
	for (int i = 0; i < ULB_SESSIONS_MAX; i++) {
		const struct ulb_session *e = &s->ulb_sessions.s[i];
		if (e->age && e->back)
			bc_orphans_add(&sh->gone_holders, e->id, addr, e->maxresp,
				       gw_now_pass_us());
	}
}

/*
 * The server answered NFS4_OK to @s's COMPOUND whose SEQUENCE names session
 * @id. If @id's back channel was kept from a client gone from @s's address
 * before @s connected, @s is a candidate for it: noted as an entry of its
 * table without the back channel (it has the session; the server would take
 * its BIND_CONN_TO_SESSION). Most calls stop at the count: nothing kept.
 */
static void share_note_candidate(struct fwd_session *s, const uint8_t id[ULB_SESSIONID_SIZE],
				 const struct ulb_reply *rep)
{
	/* A client on a channel (fwd_share_upstream): its channel's share is the route's. */
	struct fwd_share *sh = s->ch->share;
	uint8_t addr[16];

	if (!sh || !bc_orphans_count(&sh->gone_holders) ||
	    s->base.started_us < sh->gone_holders.since_us ||
	    (rep->status != ULB_REPLY_OK && rep->status != ULB_REPLY_STOPPED) ||
	    rep->nfs4_status != 0 || ulb_sessions_has(&s->ulb_sessions, id) ||
	    !share_peer_addr(s, addr))
		return;
	const struct bc_orphan *o = bc_orphans_find(&sh->gone_holders, id, gw_now_pass_us());
	if (!o || memcmp(o->addr, addr, sizeof(addr)) != 0 || s->base.started_us < o->gone_us)
		return;
	ulb_sessions_add(&s->ulb_sessions, id, o->maxresp);
	ulb_sessions_unbind_back(&s->ulb_sessions, id);
}

/*
 * @s was noted a candidate for @o's session: it has the session in its
 * table, from the gone holder's address, connected after it went. Checked
 * again here, since another entry without the back channel may be there
 * for other reasons (the session's creator, whose back channel a client
 * since gone took with BIND_CONN_TO_SESSION).
 */
static bool share_is_candidate(const struct fwd_session *s, const struct bc_orphan *o)
{
	uint8_t addr[16];

	return ulb_sessions_has(&s->ulb_sessions, o->id) && share_peer_addr(s, addr) &&
	       memcmp(addr, o->addr, sizeof(addr)) == 0 && s->base.started_us >= o->gone_us;
}

/*
 * A backward call for session @id found no live holder: if its back channel
 * was kept from a gone client and exactly one live connection is a
 * candidate for it (share_note_candidate), that one takes it. With several
 * none does: a Linux client with nconnect takes callbacks on its first
 * transport only, and a callback on another makes it close that
 * connection; which one is first, nothing on the wire says.
 */
static struct fwd_session *share_adopt_back_channel(struct fwd_session *ch,
						    const uint8_t id[ULB_SESSIONID_SIZE],
						    const char **why)
{
	struct fwd_share *sh = ch->share;
	const struct bc_orphan *o;
	struct fwd_session *to = NULL;
	struct gw_session *g;
	unsigned n = 0;

	if (!sh || !(o = bc_orphans_find(&sh->gone_holders, id, gw_now_pass_us())))
		return NULL;
	TAILQ_FOREACH (g, &ch->base.route->sessions, link) {
		struct fwd_session *s = fwd_of(g);
		if (s->ch && s->state == FS_READY && s->tcp && share_is_candidate(s, o)) {
			to = s;
			n++;
		}
	}
	if (n != 1) {
		if (n > 1)
			*why = "a session its client uses again from several connections";
		return NULL;
	}
	ulb_sessions_bind_back(&to->ulb_sessions, id);
	bc_orphans_claim(&sh->gone_holders, id);
	gw_count_event(&to->base, GW_EV_BACKCHANNEL_ADOPTED);
	gw_info("forward %s: takes the back channel of a session its gone connection held "
		"(the client connected again)",
		to->base.client);
	return to;
}

/*
 * What the reply to @s's NFSv4 call @u taught @s's session table, walked
 * into @rep by ulb_parse_reply() (CREATE_SESSION, DESTROY_SESSION, and
 * BIND_CONN_TO_SESSION for the back channel), as it bears on the route's
 * other clients. On a shared route the server sees one connection for many
 * clients, so a client that binds a session's back channel (a Linux client
 * does after its connection was made again, or to trunk) takes it from
 * whichever client held it: the server accepted the bind, so its callbacks
 * for that session are this client's from now on. And a SEQUENCE the server
 * answered NFS4_OK may make @s a candidate for a gone client's back channel;
 * what a gone client left of a session destroyed, or whose back channel a
 * live client bound, is dropped (bc_orphans_drop()): nobody is to adopt it.
 * Whatever way the reply came (inline, or its data in Write chunks:
 * forward_complete.c), so that a client that only READs is a candidate too.
 */
void fwd_share_sessions_learned(struct fwd_session *s, const struct ulb_call *u,
				const struct ulb_reply *rep)
{
	struct fwd_share *sh = s->ch->share; /* the route's (channel_open()) */
	struct gw_session *g;

	/* A session destroyed is not to be adopted: what a gone client left of it goes. */
	if (rep->destroys && sh)
		bc_orphans_drop(&sh->gone_holders, rep->destroyed_id);
	if (!rep->binds_back && u->has_sequence)
		share_note_candidate(s, u->sessionid, rep);
	if (!rep->binds_back)
		return;
	/* Nor is a back channel a live client bound: it is that client's now. */
	if (sh)
		bc_orphans_drop(&sh->gone_holders, rep->bound_id);
	/* Counted: how often clients came back for their callbacks this way. */
	gw_count_event(&s->base, GW_EV_BACKCHANNEL_BOUND);
	TAILQ_FOREACH (g, &s->base.route->sessions, link) {
		struct fwd_session *o = fwd_of(g);
		if (o == s || !o->ch || !ulb_sessions_unbind_back(&o->ulb_sessions, rep->bound_id))
			continue;
		if (o->state == FS_READY && o->tcp)
			gw_warn("forward %s: BIND_CONN_TO_SESSION takes a session's back channel "
				"from live client %s: its callbacks go to the binder now",
				s->base.client, o->base.client);
	}
}

/*
 * The client a backward call on channel @ch is for: the one live client of
 * the route that holds the back channel of the session its CB_SEQUENCE
 * names. A client's table (ulb_sessions, ULB_SESSIONS_MAX entries) learns a
 * session from the CREATE_SESSION reply relayed to it, or its back channel
 * from a BIND_CONN_TO_SESSION reply (fwd_share_sessions_learned), and forgets
 * it on DESTROY_SESSION; it goes with the client. Ids are the server's, so
 * two live clients holding one is a server's fault or a stale entry: the
 * call goes to neither, rather than maybe to the wrong one. NULL with @why:
 * refused.
 */
struct fwd_session *fwd_share_cb_client(struct fwd_session *ch, const uint8_t *msg, uint32_t len,
					const char **why)
{
	uint8_t id[ULB_SESSIONID_SIZE];
	struct fwd_session *to = NULL;
	struct gw_session *g;

	if (!ulb_cb_sessionid(msg, len, id)) {
		*why = "not a CB_COMPOUND that opens with CB_SEQUENCE";
		return NULL;
	}
	TAILQ_FOREACH (g, &ch->base.route->sessions, link) {
		struct fwd_session *s = fwd_of(g);
		if (!s->ch || s->state != FS_READY || !s->tcp ||
		    !ulb_sessions_has_back(&s->ulb_sessions, id))
			continue;
		if (to) {
			*why = "a session more than one client holds";
			return NULL;
		}
		to = s;
	}
	if (!to) {
		*why = "a session no client holds";
		to = share_adopt_back_channel(ch, id, why);
	}
	return to;
}

/*
 * The backward call client @s was given under @xid, on whichever channel
 * carried it: its reply goes back there. Only that client's own slots
 * match, so a client cannot answer another's callback.
 */
struct fwd_bcall *fwd_share_bcall_of(struct fwd_session *s, uint32_t xid)
{
	const struct fwd_share *sh = s->ch->share;

	for (uint16_t i = 0; i < sh->nchan; i++) {
		struct fwd_session *ch = sh->chan[i];
		for (uint32_t k = 0; ch && k < ch->nbcalls; k++) {
			struct fwd_bcall *b = &ch->bcalls[k];
			if (b->busy && !b->send_pending && b->client == s->base.id && b->xid == xid)
				return b;
		}
	}
	return NULL;
}

/*
 * Backward calls given to client @s and not answered: all of them (@limit
 * 0: the client goes) or those older than @limit at @now (call_timeout,
 * from the client's sweep: channels have none). Each is answered
 * SYSTEM_ERR, so that the server's callback fails at once and the slot,
 * which every client on the channel shares, comes back.
 */
void fwd_share_bcalls_expire(struct fwd_session *s, uint64_t now, uint64_t limit)
{
	const struct fwd_share *sh = s->ch->share;

	for (uint16_t i = 0; i < sh->nchan; i++) {
		struct fwd_session *ch = sh->chan[i];
		for (uint32_t k = 0; ch && k < ch->nbcalls; k++) {
			struct fwd_bcall *b = &ch->bcalls[k];
			if (!b->busy || b->send_pending || b->client != s->base.id ||
			    (limit && now - b->t_in < limit))
				continue;
			if (limit) {
				gw_warn("forward %s: backward call xid %#x unanswered by the "
					"client "
					"for %llu s: answered SYSTEM_ERR",
					s->base.client, b->xid,
					(unsigned long long)(limit / 1000000));
				gw_count_event(&s->base, GW_EV_CALL_TIMEOUT);
			} else {
				gw_count_event(&ch->base, GW_EV_BACKWARD_UNDELIVERABLE);
			}
			fwd_backward_refuse(ch, b->xid);
			fwd_bcall_release(b);
		}
	}
}
