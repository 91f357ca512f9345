/* SPDX-License-Identifier: MIT */
/*
 * gateway/reverse/reverse_share_map.c - the ledger of a reverse route's shared
 * upstream connections (gateway/reverse/reverse_share.c): which call each wire XID
 * is for, and which of them hold a credit of their connection's fair
 * queue. No I/O: the connection code calls it at each step of a call, and
 * tests/unit/test_reverse_share.c drives it alone.
 *
 * gateway/wirexid keeps the (client, XID) <-> (connection, wire XID) map and
 * gateway/fairq the queues; this file keeps the two in step with the
 * calls. The one subtle part is the credit a call on the wire holds: it is
 * its client's while the client is there (CHARGE_LIVE), the queue's orphan
 * once the client went away (fairq_client_detach() made it one), and it is
 * given back exactly once, by the reply, or when the connection is lost.
 */
#include "gateway/reverse/reverse_priv.h"

enum charge {
	CHARGE_NONE,   /* holds no credit */
	CHARGE_LIVE,   /* on the wire, charged to its client */
	CHARGE_ORPHAN, /* on the wire, its client went away */
};

static struct rev_call *call_of_item(struct fairq_item *it)
{
	return (struct rev_call *)((char *)it - offsetof(struct rev_call, fqi));
}

int rsm_init(struct rev_share_map *m, const struct wirexid_params *p)
{
	memset(m, 0, sizeof(*m));
	TAILQ_INIT(&m->gss_wait.head);
	m->by_entry = calloc(p->max_entries, sizeof(struct rev_call *));
	m->charged = calloc(p->max_entries, sizeof(uint8_t));
	m->sent_us = calloc(p->max_entries, sizeof(uint64_t));
	if (!m->by_entry || !m->charged || !m->sent_us) {
		rsm_destroy(m);
		return -ENOMEM;
	}
	int rc = wirexid_init(&m->map, p);
	if (rc != 0) {
		free(m->by_entry);
		free(m->charged);
		free(m->sent_us);
		memset(m, 0, sizeof(*m));
	}
	return rc;
}

void rsm_destroy(struct rev_share_map *m)
{
	if (m->map.e)
		wirexid_destroy(&m->map);
	free(m->by_entry);
	free(m->charged);
	free(m->sent_us);
	memset(m, 0, sizeof(*m));
}

/*
 * The entry @idx is in flight for another connection of the same client
 * (same address and port: its old connection, not yet closed). The new
 * call takes it over and the old one is handed back to be answered
 * SYSTEM_ERR (its client is this one, which gets the real reply). When the
 * old one is on the wire its credit is given back now: one call more than
 * the bound, once. True when the call is on the wire.
 */
static bool rsm_take_over(struct rev_share_map *m, struct fairq *fq, uint32_t idx,
			  struct rev_call *c, struct rev_call **superseded)
{
	struct rev_call *old = m->by_entry[idx];
	bool on_wire = !old || old->state == RC_SENT;

	if (old && old->state == RC_SENT) {
		if (m->charged[idx] == CHARGE_LIVE)
			fairq_complete(fq, &old->s->fq_client);
		m->charged[idx] = CHARGE_NONE;
	} else if (old) {
		fairq_remove(fq, &old->fqi);
	}
	if (old)
		old->up_mapped = false;
	*superseded = old;
	m->by_entry[idx] = c;
	c->up_idx = idx;
	c->up_mapped = true;
	return on_wire;
}

enum rsm_verdict rsm_map(struct rev_share_map *m, struct fairq *fq, const struct wirexid_key *k,
			 uint16_t chan, struct rev_call *c, uint64_t now_us,
			 struct rev_call **superseded)
{
	uint32_t idx;
	/* As forward mode: a call that must not run twice keeps its answered entry. */
	enum wirexid_twice twice =
		ulb_call_safe_twice(&c->ulb) ? WIREXID_SAFE_TWICE : WIREXID_RUN_ONCE;
	enum wirexid_verdict v =
		ulb_call_keeps_xid(&c->ulb)
			? wirexid_map_own_xid(&m->map, k, chan, c->s->base.id, now_us, &idx)
			: wirexid_map(&m->map, k, chan, c->s->base.id, twice, now_us, &idx);

	*superseded = NULL;
	if (v == WIREXID_FULL)
		return RSM_FULL;
	if (v == WIREXID_XID_BUSY) {
		c->state = RC_GSS_WAIT;
		c->gss_chan = chan;
		rev_enqueue(&m->gss_wait, c);
		return RSM_GSS_WAIT;
	}
	/*
	 * Either way the call carries the entry's wire XID: one on the wire
	 * already is sent again from this message when its connection is lost
	 * (rsm_requeue()), and under the client's own XID it would be in no
	 * entry (its reply stray, or another client's call's).
	 */
	xdr_put32(c->msg->base + c->msg_off, wirexid_get(&m->map, idx)->wire_xid);
	if (v == WIREXID_IN_FLIGHT && rsm_take_over(m, fq, idx, c, superseded)) {
		c->state =
			RC_SENT; /* the call is on the wire already: its reply answers this one */
		return RSM_ON_WIRE;
	}
	m->by_entry[idx] = c;
	m->charged[idx] = CHARGE_NONE;
	c->up_idx = idx;
	c->up_mapped = true;
	c->state = RC_WAITING;
	fairq_enqueue(fq, &c->s->fq_client, &c->fqi, now_us);
	return RSM_QUEUED;
}

void rsm_gss_take(struct rev_share_map *m, uint16_t chan, struct rev_queue *out)
{
	struct rev_call *c, *next;

	for (c = TAILQ_FIRST(&m->gss_wait.head); c; c = next) {
		next = TAILQ_NEXT(c, link);
		if (c->gss_chan != chan)
			continue;
		rev_dequeue(c);
		rev_enqueue(out, c);
	}
}

void rsm_sent(struct rev_share_map *m, struct rev_call *c, uint64_t now_us)
{
	c->state = RC_SENT;
	m->charged[c->up_idx] = CHARGE_LIVE;
	m->sent_us[c->up_idx] = now_us;
}

struct rev_call *rsm_reply(struct rev_share_map *m, struct fairq *fq, uint16_t chan,
			   uint32_t wire_xid, uint64_t now_us, bool *stray)
{
	uint32_t idx = wirexid_lookup_reply(&m->map, chan, wire_xid);

	*stray = idx == WIREXID_NONE;
	if (*stray)
		return NULL;
	struct rev_call *c = m->by_entry[idx];
	/*
	 * A call waiting to go again (its connection was lost) has no reply
	 * yet: this one is stale or forged. Answering the entry would send
	 * the call under an answered entry, its real reply dropped as stray.
	 */
	if (c && c->state != RC_SENT) {
		m->map.st.stray++;
		*stray = true;
		return NULL;
	}
	wirexid_reply(&m->map, chan, wire_xid, now_us);
	enum charge charged = m->charged[idx];
	m->by_entry[idx] = NULL;
	m->charged[idx] = CHARGE_NONE;
	if (charged != CHARGE_NONE)
		fairq_complete(fq, charged == CHARGE_LIVE && c ? &c->s->fq_client : NULL);
	if (!c)
		return NULL; /* its client went away: the entry stays answered for a retransmission
			      */
	c->up_mapped = false;
	return c;
}

/* A queued call of a client that goes away: it never went, its mapping goes. */
static void rsm_drop_queued(struct fairq_item *it, void *arg)
{
	struct rev_share_map *m = arg;
	struct rev_call *c = call_of_item(it);

	if (c->up_mapped && m->by_entry[c->up_idx] == c) {
		m->by_entry[c->up_idx] = NULL;
		m->charged[c->up_idx] = CHARGE_NONE;
		wirexid_cancel(&m->map, c->up_idx);
	}
	c->up_mapped = false;
}

void rsm_detach(struct rev_share_map *m, struct fairq *fq, struct rev_session *s)
{
	fairq_client_detach(fq, &s->fq_client, rsm_drop_queued, m);
	for (uint32_t i = 0; i < s->ncalls; i++) {
		struct rev_call *c = &s->calls[i];
		if (!c->up_mapped)
			continue;
		if (m->by_entry[c->up_idx] == c) {
			m->by_entry[c->up_idx] = NULL;
			if (m->charged[c->up_idx] == CHARGE_LIVE)
				m->charged[c->up_idx] = CHARGE_ORPHAN;
		}
		c->up_mapped = false;
	}
}

bool rsm_oldest_orphan(const struct rev_share_map *m, uint16_t chan, uint64_t *sent_us)
{
	bool found = false;

	/* A walk over the entries made: the caller sweeps only a connection with orphans. */
	for (uint32_t i = 0; i < m->map.made; i++) {
		const struct wirexid_entry *e = &m->map.e[i];
		if (e->state != WIREXID_INFLIGHT || e->chan != chan ||
		    m->charged[i] != CHARGE_ORPHAN)
			continue;
		if (!found || m->sent_us[i] < *sent_us)
			*sent_us = m->sent_us[i];
		found = true;
	}
	return found;
}

void rsm_requeue(struct rev_share_map *m, struct fairq *fq, uint16_t chan, uint64_t now_us,
		 void (*unsend)(struct rev_call *c))
{
	/* Entries past made were never used: reading them would only fault their pages in. */
	for (uint32_t i = 0; i < m->map.made; i++) {
		const struct wirexid_entry *e = &m->map.e[i];
		if (e->state != WIREXID_INFLIGHT || e->chan != chan)
			continue;
		struct rev_call *c = m->by_entry[i];
		enum charge charged = m->charged[i];
		m->charged[i] = CHARGE_NONE;
		if (!c) {
			if (charged != CHARGE_NONE)
				fairq_complete(fq, NULL);
			wirexid_cancel(&m->map, i);
			continue;
		}
		if (c->state != RC_SENT)
			continue; /* queued: it goes in its turn */
		unsend(c);
		c->state = RC_WAITING;
		if (charged == CHARGE_LIVE) {
			fairq_unpick(fq, &c->fqi);
		} else {
			if (charged == CHARGE_ORPHAN)
				fairq_complete(fq, NULL);
			fairq_enqueue(fq, &c->s->fq_client, &c->fqi, now_us);
		}
	}
}
