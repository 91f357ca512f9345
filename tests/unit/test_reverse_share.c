/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_reverse_share.c - a reverse route's shared upstream
 * connections (gateway/reverse/reverse_share.c): who "the same client" is (the XID
 * map's key, the connection a client is put on), and the ledger
 * (gateway/reverse/reverse_share_map.c) that keeps each call's wire XID and credit:
 * per-client caps, replies to the right call only, a client's going
 * releasing its own calls only, and a lost connection's calls sent again
 * under their wire XIDs. And whom a backward call goes to: the client of
 * the channel holding the back channel of the session its CB_SEQUENCE
 * names, learned from CREATE_SESSION and BIND_CONN_TO_SESSION replies.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gateway/reverse/reverse_priv.h"
#include "gateway/maps/wirexid.h"
#include "tests/unit/nfs4_session_msgs.h"

static struct rev_session *session_v4(const char *addr, uint16_t port, uint64_t id)
{
	struct rev_session *s = calloc(1, sizeof(*s));
	struct sockaddr_in *sin = (struct sockaddr_in *)&s->peer;

	assert_non_null(s);
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	assert_int_equal(inet_pton(AF_INET, addr, &sin->sin_addr), 1);
	s->base.id = id;
	return s;
}

static struct rev_session *session_v6(const char *addr, uint16_t port, uint64_t id)
{
	struct rev_session *s = calloc(1, sizeof(*s));
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&s->peer;

	assert_non_null(s);
	sin6->sin6_family = AF_INET6;
	sin6->sin6_port = htons(port);
	assert_int_equal(inet_pton(AF_INET6, addr, &sin6->sin6_addr), 1);
	s->base.id = id;
	return s;
}

static bool same_key(const struct rev_session *a, uint32_t xa, const struct rev_session *b,
		     uint32_t xb)
{
	struct wirexid_key ka, kb;

	rev_share_key(a, xa, &ka);
	rev_share_key(b, xb, &kb);
	return memcmp(&ka, &kb, sizeof(ka)) == 0;
}

/*
 * A retransmission is the same address, CM source port and XID, whichever
 * RDMA connection brings it; another port is another client (Linux
 * xprtrdma reconnects from a new port).
 */
static void test_key_is_address_port_xid(void **state)
{
	(void)state;
	struct rev_session *a = session_v4("192.0.2.2", 40000, 1);
	struct rev_session *again = session_v4("192.0.2.2", 40000, 7); /* a later connection */
	struct rev_session *other_port = session_v4("192.0.2.2", 40001, 2);
	struct rev_session *other_host = session_v4("192.0.2.3", 40000, 3);
	struct rev_session *mapped = session_v6("::ffff:192.0.2.2", 40000, 4);

	assert_true(same_key(a, 0x1234, again, 0x1234));
	assert_false(same_key(a, 0x1234, a, 0x1235));
	assert_false(same_key(a, 0x1234, other_port, 0x1234));
	assert_false(same_key(a, 0x1234, other_host, 0x1234));
	assert_true(same_key(a, 0x1234, mapped, 0x1234)); /* one client, either family */
	free(a);
	free(again);
	free(other_port);
	free(other_host);
	free(mapped);
}

/* A peer with no IP address is keyed by its connection: never another connection's or an IP's. */
static void test_non_ip_peer_keyed_by_connection(void **state)
{
	(void)state;
	struct rev_session *ib1 = calloc(1, sizeof(*ib1)), *ib2 = calloc(1, sizeof(*ib2));
	struct rev_session *zero = session_v6("::", 0, 9);

	assert_non_null(ib1);
	assert_non_null(ib2);
	ib1->peer.ss_family = AF_UNSPEC; /* as an AF_IB peer leaves it for the map */
	ib2->peer.ss_family = AF_UNSPEC;
	ib1->base.id = 11;
	ib2->base.id = 12;
	assert_true(same_key(ib1, 5, ib1, 5));
	assert_false(same_key(ib1, 5, ib2, 5));
	assert_false(same_key(ib1, 5, zero, 5));
	free(ib1);
	free(ib2);
	free(zero);
}

/* A client stays on one connection; clients spread over all of them. */
static void test_channel_stable_and_spread(void **state)
{
	(void)state;
	unsigned used[4] = { 0 };

	for (uint16_t port = 700; port < 764; port++) {
		struct rev_session *s = session_v4("192.0.2.2", port, port);
		struct rev_session *again = session_v4("192.0.2.2", port, port + 1000u);
		uint16_t ch = rev_share_channel_of(s, 4);
		assert_true(ch < 4);
		assert_int_equal(ch, rev_share_channel_of(again, 4));
		assert_int_equal(rev_share_channel_of(s, 1), 0);
		used[ch]++;
		free(s);
		free(again);
	}
	for (int i = 0; i < 4; i++)
		assert_true(used[i] > 0);
}

/* ---- the ledger ---- */

enum { NCALLS = 8, MSG_LEN = 40 };

struct fake_client {
	struct rev_session *s;
	struct gw_buf bufs[NCALLS];
	uint8_t mem[NCALLS][MSG_LEN];
};

static void fake_client_init(struct fake_client *f, const char *addr, uint16_t port, uint64_t id,
			     uint32_t cap)
{
	f->s = session_v4(addr, port, id);
	f->s->ncalls = NCALLS;
	f->s->calls = calloc(NCALLS, sizeof(*f->s->calls));
	assert_non_null(f->s->calls);
	fairq_client_init(&f->s->fq_client, cap);
	for (uint32_t i = 0; i < NCALLS; i++) {
		struct rev_call *c = &f->s->calls[i];
		c->s = f->s;
		c->index = i;
		f->bufs[i].base = f->mem[i];
		f->bufs[i].size = MSG_LEN;
		c->msg = &f->bufs[i];
		c->msg_len = MSG_LEN;
	}
}

static void fake_client_free(struct fake_client *f)
{
	free(f->s->calls);
	free(f->s);
}

/* Call slot @i of @f as a call with the client's @xid, mapped on channel @chan. */
static enum rsm_verdict call(struct rev_share_map *m, struct fairq *fq, struct fake_client *f,
			     uint32_t i, uint32_t xid, uint16_t chan)
{
	struct rev_call *c = &f->s->calls[i], *old = NULL;
	struct wirexid_key k;

	c->xid = xid;
	xdr_put32(c->msg->base, xid);
	rev_share_key(f->s, xid, &k);
	enum rsm_verdict v = rsm_map(m, fq, &k, chan, c, 1000, &old);
	assert_null(old);
	return v;
}

static uint32_t wire_xid(const struct rev_call *c)
{
	return xdr_get32(c->msg->base);
}

static uint64_t pump_now = 2000; /* when pump() "sends" */

/* Pick and "send" what the queue gives: the calls written to the connection. */
static unsigned pump(struct rev_share_map *m, struct fairq *fq)
{
	struct fairq_item *it;
	unsigned n = 0;

	while ((it = fairq_pick(fq, 2000)) != NULL) {
		rsm_sent(m, (struct rev_call *)((char *)it - offsetof(struct rev_call, fqi)),
			 pump_now);
		n++;
	}
	return n;
}

static void ledger_init(struct rev_share_map *m, struct fairq *fq, uint32_t grant)
{
	const struct wirexid_params p = { .max_entries = 64, .channels = 2, .seed = 42 };

	assert_int_equal(rsm_init(m, &p), 0);
	fairq_init(fq, 1, grant);
}

/*
 * Two clients with the same XID go under different wire XIDs; each reply
 * reaches its own call with the client's XID, a reply on the other
 * connection or under an unknown XID reaches nobody.
 */
static void test_ledger_same_xid_two_clients(void **state)
{
	(void)state;
	struct rev_share_map m;
	struct fairq fq;
	struct fake_client a, b;
	bool stray;

	ledger_init(&m, &fq, 16);
	fake_client_init(&a, "192.0.2.2", 1000, 1, 4);
	fake_client_init(&b, "192.0.2.3", 1000, 2, 4);
	assert_int_equal(call(&m, &fq, &a, 0, 0x77, 0), RSM_QUEUED);
	assert_int_equal(call(&m, &fq, &b, 0, 0x77, 0), RSM_QUEUED);
	struct rev_call *ca = &a.s->calls[0], *cb = &b.s->calls[0];
	assert_int_not_equal(wire_xid(ca), wire_xid(cb));
	assert_int_equal(pump(&m, &fq), 2);
	assert_int_equal(fq.in_flight, 2);

	assert_null(rsm_reply(&m, &fq, 1, wire_xid(cb), 3000, &stray)); /* other connection */
	assert_true(stray);
	assert_null(rsm_reply(&m, &fq, 0, wire_xid(cb) ^ 0x5a5a, 3000, &stray));
	assert_true(stray);
	assert_ptr_equal(rsm_reply(&m, &fq, 0, wire_xid(cb), 3000, &stray), cb);
	assert_false(stray);
	assert_null(rsm_reply(&m, &fq, 0, wire_xid(cb), 3000, &stray)); /* answered once */
	assert_ptr_equal(rsm_reply(&m, &fq, 0, wire_xid(ca), 3000, &stray), ca);
	assert_int_equal(fq.in_flight, 0);
	assert_int_equal(m.map.st.in_flight, 0);
	fake_client_free(&a);
	fake_client_free(&b);
	rsm_destroy(&m);
}

/* No client has more than its cap on the wire, and the connection no more than its bound. */
static void test_ledger_caps(void **state)
{
	(void)state;
	struct rev_share_map m;
	struct fairq fq;
	struct fake_client a, b;
	bool stray;

	ledger_init(&m, &fq, 5);
	fake_client_init(&a, "192.0.2.2", 1000, 1, 2);
	fake_client_init(&b, "192.0.2.3", 1000, 2, 2);
	for (uint32_t i = 0; i < 6; i++)
		assert_int_equal(call(&m, &fq, &a, i, 100 + i, 0), RSM_QUEUED);
	assert_int_equal(pump(&m, &fq), 2); /* a's cap */
	assert_int_equal(a.s->fq_client.in_flight, 2);
	for (uint32_t i = 0; i < 4; i++)
		assert_int_equal(call(&m, &fq, &b, i, 100 + i, 0), RSM_QUEUED);
	assert_int_equal(pump(&m, &fq), 2); /* b's cap; a still at its own */
	assert_int_equal(fq.in_flight, 4);
	/* One of a's replies: a's next call goes, within the connection's bound of 5. */
	assert_non_null(rsm_reply(&m, &fq, 0, wire_xid(&a.s->calls[0]), 3000, &stray));
	assert_int_equal(pump(&m, &fq), 1);
	assert_int_equal(a.s->fq_client.in_flight, 2);
	assert_int_equal(b.s->fq_client.in_flight, 2);
	assert_int_equal(fq.in_flight, 4);
	fake_client_free(&a);
	fake_client_free(&b);
	rsm_destroy(&m);
}

/*
 * A client that goes away: its queued calls leave the map, its call on the
 * wire keeps its credit until the reply, which goes to nobody; the other
 * client's calls are untouched.
 */
static void test_ledger_detach_releases_own_calls(void **state)
{
	(void)state;
	struct rev_share_map m;
	struct fairq fq;
	struct fake_client a, b;
	bool stray;

	ledger_init(&m, &fq, 16);
	fake_client_init(&a, "192.0.2.2", 1000, 1, 1);
	fake_client_init(&b, "192.0.2.3", 1000, 2, 4);
	for (uint32_t i = 0; i < 3; i++) {
		assert_int_equal(call(&m, &fq, &a, i, 500 + i, 0), RSM_QUEUED);
		assert_int_equal(call(&m, &fq, &b, i, 500 + i, 0), RSM_QUEUED);
	}
	assert_int_equal(pump(&m, &fq), 4); /* a: 1 (its cap), b: 3 */
	uint32_t a_wire = wire_xid(&a.s->calls[0]);
	assert_int_equal(m.map.st.in_flight, 6);

	rsm_detach(&m, &fq, a.s);
	assert_int_equal(m.map.st.in_flight, 4); /* a's two queued calls are gone */
	for (uint32_t i = 0; i < NCALLS; i++)
		assert_false(a.s->calls[i].up_mapped);
	assert_int_equal(fq.in_flight, 4); /* a's call on the wire still holds its credit */
	assert_int_equal(fq.orphans, 1);
	assert_null(rsm_reply(&m, &fq, 0, a_wire, 3000, &stray));
	assert_false(stray); /* a real reply, to a client that went */
	assert_int_equal(fq.in_flight, 3);
	assert_int_equal(fq.orphans, 0);
	for (uint32_t i = 0; i < 3; i++) {
		struct rev_call *c = &b.s->calls[i];
		assert_ptr_equal(rsm_reply(&m, &fq, 0, wire_xid(c), 3000, &stray), c);
	}
	assert_int_equal(fq.in_flight, 0);
	fake_client_free(&a);
	fake_client_free(&b);
	rsm_destroy(&m);
}

static unsigned unsent;
static void count_unsend(struct rev_call *c)
{
	(void)c;
	unsent++;
}

/*
 * A lost connection: live calls on the wire go back to their clients'
 * queues and are sent again under the same wire XIDs; an orphan is
 * forgotten; the other connection's calls are untouched.
 */
static void test_ledger_requeue_after_loss(void **state)
{
	(void)state;
	struct rev_share_map m;
	struct fairq fq0, fq1;
	struct fake_client a, b, c1;
	bool stray;

	ledger_init(&m, &fq0, 16);
	fairq_init(&fq1, 1, 16);
	fake_client_init(&a, "192.0.2.2", 1000, 1, 4);
	fake_client_init(&b, "192.0.2.3", 1000, 2, 4);
	fake_client_init(&c1, "192.0.2.4", 1000, 3, 4);
	assert_int_equal(call(&m, &fq0, &a, 0, 9, 0), RSM_QUEUED);
	assert_int_equal(call(&m, &fq0, &a, 1, 10, 0), RSM_QUEUED);
	assert_int_equal(call(&m, &fq0, &b, 0, 9, 0), RSM_QUEUED);
	assert_int_equal(call(&m, &fq1, &c1, 0, 9, 1), RSM_QUEUED);
	assert_int_equal(pump(&m, &fq0), 3);
	assert_int_equal(pump(&m, &fq1), 1);
	uint32_t w0 = wire_xid(&a.s->calls[0]), w1 = wire_xid(&a.s->calls[1]);
	rsm_detach(&m, &fq0, b.s); /* b's call on the wire is an orphan now */

	unsent = 0;
	rsm_requeue(&m, &fq0, 0, 4000, count_unsend);
	assert_int_equal(unsent, 2);
	assert_int_equal(fq0.in_flight, 0);
	assert_int_equal(fq0.orphans, 0);
	assert_int_equal(fq0.queued, 2);
	assert_int_equal(m.map.st.in_flight, 3); /* a's two and c1's */
	assert_int_equal(fq1.in_flight, 1);
	/* Sent again under the same wire XIDs; their replies find them. */
	assert_int_equal(pump(&m, &fq0), 2);
	assert_int_equal(wire_xid(&a.s->calls[0]), w0);
	assert_int_equal(wire_xid(&a.s->calls[1]), w1);
	assert_ptr_equal(rsm_reply(&m, &fq0, 0, w0, 5000, &stray), &a.s->calls[0]);
	assert_ptr_equal(rsm_reply(&m, &fq0, 0, w1, 5000, &stray), &a.s->calls[1]);
	assert_ptr_equal(rsm_reply(&m, &fq1, 1, wire_xid(&c1.s->calls[0]), 5000, &stray),
			 &c1.s->calls[0]);
	fake_client_free(&a);
	fake_client_free(&b);
	fake_client_free(&c1);
	rsm_destroy(&m);
}

/*
 * A reply under the wire XID of a call waiting to go again (its connection
 * was lost) is stray: the call keeps its entry, goes again, and its real
 * reply reaches it.
 */
static void test_ledger_reply_to_waiting_call_is_stray(void **state)
{
	(void)state;
	struct rev_share_map m;
	struct fairq fq;
	struct fake_client a;
	bool stray;

	ledger_init(&m, &fq, 16);
	fake_client_init(&a, "192.0.2.2", 1000, 1, 4);
	struct rev_call *c = &a.s->calls[0];
	assert_int_equal(call(&m, &fq, &a, 0, 0x31, 0), RSM_QUEUED);
	assert_int_equal(pump(&m, &fq), 1);
	uint32_t w = wire_xid(c);
	rsm_requeue(&m, &fq, 0, 4000, count_unsend);
	assert_int_equal(c->state, RC_WAITING);

	uint64_t strays = m.map.st.stray;
	assert_null(rsm_reply(&m, &fq, 0, w, 4500, &stray));
	assert_true(stray);
	assert_int_equal(m.map.st.stray, strays + 1);
	assert_int_equal(m.map.st.in_flight, 1);
	assert_int_equal(pump(&m, &fq), 1);
	assert_int_equal(wire_xid(c), w);
	assert_ptr_equal(rsm_reply(&m, &fq, 0, w, 5000, &stray), c);
	assert_false(stray);
	assert_int_equal(fq.in_flight, 0);
	assert_int_equal(m.map.st.in_flight, 0);
	fake_client_free(&a);
	rsm_destroy(&m);
}

/*
 * The oldest orphan of a connection (a call on the wire whose client
 * went), by when it was sent: what the connection's sweep restarts it on.
 * Live calls, other connections' orphans and answered ones do not count.
 */
static void test_ledger_oldest_orphan(void **state)
{
	(void)state;
	struct rev_share_map m;
	struct fairq fq0, fq1;
	struct fake_client a, b, c1;
	uint64_t t = 0;
	bool stray;

	ledger_init(&m, &fq0, 16);
	fairq_init(&fq1, 1, 16);
	fake_client_init(&a, "192.0.2.2", 1000, 1, 4);
	fake_client_init(&b, "192.0.2.3", 1000, 2, 4);
	fake_client_init(&c1, "192.0.2.4", 1000, 3, 4);
	assert_int_equal(call(&m, &fq0, &a, 0, 1, 0), RSM_QUEUED);
	pump_now = 10000;
	assert_int_equal(pump(&m, &fq0), 1);
	assert_int_equal(call(&m, &fq0, &b, 0, 1, 0), RSM_QUEUED);
	assert_int_equal(call(&m, &fq0, &b, 1, 2, 0), RSM_QUEUED);
	pump_now = 20000;
	assert_int_equal(pump(&m, &fq0), 2);
	assert_int_equal(call(&m, &fq1, &c1, 0, 1, 1), RSM_QUEUED);
	pump_now = 5000;
	assert_int_equal(pump(&m, &fq1), 1);
	assert_false(rsm_oldest_orphan(&m, 0, &t)); /* all live */

	rsm_detach(&m, &fq0, b.s);
	assert_true(rsm_oldest_orphan(&m, 0, &t));
	assert_int_equal(t, 20000);
	assert_false(rsm_oldest_orphan(&m, 1, &t)); /* c1's call is live */
	rsm_detach(&m, &fq0, a.s);
	assert_true(rsm_oldest_orphan(&m, 0, &t));
	assert_int_equal(t, 10000);
	/* a's reply comes: b's two are left, sent later. */
	assert_null(rsm_reply(&m, &fq0, 0, wire_xid(&a.s->calls[0]), 30000, &stray));
	assert_false(stray);
	assert_true(rsm_oldest_orphan(&m, 0, &t));
	assert_int_equal(t, 20000);
	/* The connection is lost: its orphans are forgotten, their credits back. */
	rsm_requeue(&m, &fq0, 0, 40000, count_unsend);
	assert_false(rsm_oldest_orphan(&m, 0, &t));
	assert_int_equal(fq0.in_flight, 0);
	pump_now = 2000;
	fake_client_free(&a);
	fake_client_free(&b);
	fake_client_free(&c1);
	rsm_destroy(&m);
}

/* A call of a newer connection of @f's client (same address and port), taking over @xid. */
static enum rsm_verdict call_again(struct rev_share_map *m, struct fairq *fq, struct fake_client *f,
				   uint32_t i, uint32_t xid, struct rev_call **superseded)
{
	struct rev_call *c = &f->s->calls[i];
	struct wirexid_key k;

	c->xid = xid;
	xdr_put32(c->msg->base, xid);
	rev_share_key(f->s, xid, &k);
	return rsm_map(m, fq, &k, 0, c, 1000, superseded);
}

/*
 * A retransmission that takes over a call on the wire (from a newer
 * connection of its client, the old one still there or gone) carries the
 * entry's wire XID: when the connection is lost it goes again under that
 * XID, never the client's own, and its reply finds it.
 */
static void test_ledger_takeover_resent_under_wire_xid(void **state)
{
	(void)state;
	struct rev_share_map m;
	struct fairq fq;
	struct fake_client a, a2, b, b2;
	struct rev_call *old;
	bool stray;

	ledger_init(&m, &fq, 16);
	fake_client_init(&a, "192.0.2.2", 1000, 1, 4);
	fake_client_init(&a2, "192.0.2.2", 1000, 7, 4);
	fake_client_init(&b, "192.0.2.3", 1000, 2, 4);
	fake_client_init(&b2, "192.0.2.3", 1000, 8, 4);
	assert_int_equal(call(&m, &fq, &a, 0, 0x55, 0), RSM_QUEUED);
	assert_int_equal(call(&m, &fq, &b, 0, 0x66, 0), RSM_QUEUED);
	assert_int_equal(pump(&m, &fq), 2);
	uint32_t wa = wire_xid(&a.s->calls[0]), wb = wire_xid(&b.s->calls[0]);
	assert_int_not_equal(wa, 0x55);
	assert_int_not_equal(wb, 0x66);
	rsm_detach(&m, &fq, b.s); /* b's call on the wire is an orphan */

	struct rev_call *ca = &a2.s->calls[0], *cb = &b2.s->calls[0];
	assert_int_equal(call_again(&m, &fq, &a2, 0, 0x55, &old), RSM_ON_WIRE);
	assert_ptr_equal(old, &a.s->calls[0]);
	assert_int_equal(call_again(&m, &fq, &b2, 0, 0x66, &old), RSM_ON_WIRE);
	assert_null(old);
	assert_int_equal(wire_xid(ca), wa);
	assert_int_equal(wire_xid(cb), wb);

	unsent = 0;
	rsm_requeue(&m, &fq, 0, 4000, count_unsend);
	assert_int_equal(unsent, 2);
	assert_int_equal(pump(&m, &fq), 2);
	assert_int_equal(wire_xid(ca), wa);
	assert_int_equal(wire_xid(cb), wb);
	assert_ptr_equal(rsm_reply(&m, &fq, 0, wa, 5000, &stray), ca);
	assert_ptr_equal(rsm_reply(&m, &fq, 0, wb, 5000, &stray), cb);
	assert_int_equal(fq.in_flight, 0);
	assert_int_equal(m.map.st.in_flight, 0);
	fake_client_free(&a);
	fake_client_free(&a2);
	fake_client_free(&b);
	fake_client_free(&b2);
	rsm_destroy(&m);
}

/* A retransmission of an answered call (same client, same XID) goes again under the same wire XID.
 */
static void test_ledger_retransmission_same_wire_xid(void **state)
{
	(void)state;
	struct rev_share_map m;
	struct fairq fq;
	struct fake_client a;
	bool stray;

	ledger_init(&m, &fq, 16);
	fake_client_init(&a, "192.0.2.2", 1000, 1, 4);
	assert_int_equal(call(&m, &fq, &a, 0, 0xabc, 0), RSM_QUEUED);
	uint32_t w = wire_xid(&a.s->calls[0]);
	assert_int_equal(pump(&m, &fq), 1);
	assert_non_null(rsm_reply(&m, &fq, 0, w, 3000, &stray));
	assert_int_equal(call(&m, &fq, &a, 1, 0xabc, 0), RSM_QUEUED);
	assert_int_equal(wire_xid(&a.s->calls[1]), w);
	assert_int_equal(m.map.st.hits_answered, 1);
	fake_client_free(&a);
	rsm_destroy(&m);
}

/* Call slot @i of @f as an NFSv3 call of procedure @proc (what the ULB would have parsed). */
static void nfs3_proc(struct fake_client *f, uint32_t i, uint32_t proc)
{
	struct rev_call *c = &f->s->calls[i];

	memset(&c->ulb, 0, sizeof(c->ulb));
	c->ulb.status = ULB_OK;
	c->ulb.prog = 100003;
	c->ulb.vers = 3;
	c->ulb.proc = proc;
}

/*
 * Client A's REMOVE was answered (its reply lost); client B, another host,
 * then makes four times the map's size in GETATTRs. A's retransmission
 * still goes under the REMOVE's wire XID, for the server's duplicate
 * request cache: B's reads recycled only reads.
 */
static void test_ledger_read_flood_keeps_a_remove(void **state)
{
	(void)state;
	struct rev_share_map m;
	struct fairq fq;
	struct fake_client a, b;
	bool stray;

	ledger_init(&m, &fq, 16);
	fake_client_init(&a, "192.0.2.2", 1000, 1, 4);
	fake_client_init(&b, "192.0.2.3", 1000, 2, 4);
	nfs3_proc(&a, 0, 12); /* REMOVE */
	assert_int_equal(call(&m, &fq, &a, 0, 0xabc, 0), RSM_QUEUED);
	uint32_t w = wire_xid(&a.s->calls[0]);
	assert_int_equal(pump(&m, &fq), 1);
	assert_non_null(rsm_reply(&m, &fq, 0, w, 3000, &stray));
	for (uint32_t n = 0; n < 4 * 64; n++) {
		nfs3_proc(&b, 0, 1); /* GETATTR */
		assert_int_equal(call(&m, &fq, &b, 0, 0x1000 + n, 0), RSM_QUEUED);
		assert_int_equal(pump(&m, &fq), 1);
		assert_non_null(rsm_reply(&m, &fq, 0, wire_xid(&b.s->calls[0]), 3000, &stray));
	}
	nfs3_proc(&a, 1, 12);
	assert_int_equal(call(&m, &fq, &a, 1, 0xabc, 0), RSM_QUEUED);
	assert_int_equal(wire_xid(&a.s->calls[1]), w);
	assert_int_equal(m.map.st.hits_answered, 1);
	assert_true(m.map.st.evicted > 0);
	assert_true(m.map.st.evicted == m.map.st.evicted_safe);
	fake_client_free(&a);
	fake_client_free(&b);
	rsm_destroy(&m);
}

/* The calls rsm_gss_take() hands back for connection @chan: how many, and the first. */
static struct rev_call *gss_taken(struct rev_share_map *m, uint16_t chan, uint32_t *n)
{
	struct rev_queue q = { .head = TAILQ_HEAD_INITIALIZER(q.head) };
	struct rev_call *first;

	rsm_gss_take(m, chan, &q);
	*n = q.n;
	first = TAILQ_FIRST(&q.head);
	while (q.n)
		rev_dequeue(TAILQ_FIRST(&q.head));
	return first;
}

/*
 * RPCSEC_GSS calls keep their XID on the wire (the GSS checksum covers it,
 * RFC 2203 section 5.3.1): A's call goes out under A's own XID. B's call
 * with the same XID on the same connection, while A's is in flight, waits
 * (the server would take it for A's retransmission): handed back for that
 * connection only, and mapped again it waits again while A's is on the
 * wire. Once A's is answered, B's goes under the same XID, displacing A's
 * answered entry; a retransmission of A's, which the server would now
 * take for B's call, waits in turn.
 */
static void test_ledger_gss_keeps_xid(void **state)
{
	(void)state;
	struct rev_share_map m;
	struct fairq fq;
	struct fake_client a, b;
	bool stray;
	uint32_t n;

	ledger_init(&m, &fq, 16);
	fake_client_init(&a, "192.0.2.2", 1000, 1, 4);
	fake_client_init(&b, "192.0.2.3", 1000, 2, 4);
	nfs3_proc(&a, 0, 12);
	a.s->calls[0].ulb.flavor = RPC_AUTH_GSS;
	assert_int_equal(call(&m, &fq, &a, 0, 0x5eed, 0), RSM_QUEUED);
	assert_int_equal(wire_xid(&a.s->calls[0]), 0x5eed);
	assert_int_equal(pump(&m, &fq), 1);

	struct rev_call *b0 = &b.s->calls[0];
	nfs3_proc(&b, 0, 12);
	b0->ulb.flavor = RPC_AUTH_GSS;
	assert_int_equal(call(&m, &fq, &b, 0, 0x5eed, 0), RSM_GSS_WAIT);
	assert_int_equal(b0->state, RC_GSS_WAIT);
	assert_int_equal(m.gss_wait.n, 1);
	assert_null(gss_taken(&m, 1, &n)); /* it waits on connection 0 only */
	assert_int_equal(n, 0);
	assert_ptr_equal(gss_taken(&m, 0, &n), b0);
	assert_int_equal(n, 1);
	assert_int_equal(call(&m, &fq, &b, 0, 0x5eed, 0), RSM_GSS_WAIT); /* A's still on the wire */
	assert_int_equal(pump(&m, &fq), 0);

	assert_ptr_equal(rsm_reply(&m, &fq, 0, 0x5eed, 3000, &stray), &a.s->calls[0]);
	assert_ptr_equal(gss_taken(&m, 0, &n), b0);
	assert_int_equal(call(&m, &fq, &b, 0, 0x5eed, 0), RSM_QUEUED);
	assert_int_equal(wire_xid(b0), 0x5eed);
	assert_int_equal(m.map.st.own_xid_displaced, 1);
	assert_int_equal(pump(&m, &fq), 1);

	nfs3_proc(&a, 1, 12);
	a.s->calls[1].ulb.flavor = RPC_AUTH_GSS;
	assert_int_equal(call(&m, &fq, &a, 1, 0x5eed, 0), RSM_GSS_WAIT);
	assert_int_equal(m.gss_wait.n, 1);
	rev_dequeue(&a.s->calls[1]); /* as rev_call_put() does when A goes */
	assert_int_equal(m.gss_wait.n, 0);
	fake_client_free(&a);
	fake_client_free(&b);
	rsm_destroy(&m);
}

/* ---- backward calls: the session's owner on the channel ---- */

static const uint8_t sid_x[ULB_SESSIONID_SIZE] = { 0x5e, 1, 2,	3,  4,	5,  6,	7,
						   8,	 9, 10, 11, 12, 13, 14, 15 };
static const uint8_t sid_y[ULB_SESSIONID_SIZE] = { 0x77, 1, 2,	3,  4,	5,  6,	7,
						   8,	 9, 10, 11, 12, 13, 14, 15 };

/* A channel's clients A and B, both ready, and the rules their calls are parsed with. */
struct bc_fixture {
	struct ulb_rules *rules;
	struct rev_client_list clients;
	struct rev_session *a, *b;
};

static void bc_setup(struct bc_fixture *f)
{
	f->rules = msg_rules_load();
	assert_non_null(f->rules);
	TAILQ_INIT(&f->clients);
	f->a = session_v4("192.0.2.1", 40000, 1);
	f->b = session_v4("192.0.2.2", 40001, 2);
	snprintf(f->a->base.client, sizeof(f->a->base.client), "A");
	snprintf(f->b->base.client, sizeof(f->b->base.client), "B");
	f->a->state = RS_READY;
	f->b->state = RS_READY;
	TAILQ_INSERT_TAIL(&f->clients, f->a, ch_link);
	TAILQ_INSERT_TAIL(&f->clients, f->b, ch_link);
}

static void bc_teardown(struct bc_fixture *f)
{
	free(f->a);
	free(f->b);
	ulb_rules_free(f->rules);
}

/*
 * The reply @rep (its first @len bytes) to @s's call @call, read as
 * reverse_upstream.c reads every reply of a shared upstream: the table
 * learns, and a bound back channel is taken from the channel's others.
 */
static void bc_relay(struct bc_fixture *f, struct rev_session *s, const struct msg *call,
		     const struct msg *rep, uint32_t len)
{
	struct ulb_call u;
	struct ulb_reply r;

	assert_int_equal(msg_parse_call(f->rules, call, &u), ULB_OK);
	uint8_t *p = msg_dup(rep, len);
	assert_non_null(p);
	ulb_parse_reply(&u, &s->ulb_sessions, p, len, 0, &r);
	if (r.binds_back)
		rev_share_take_back(&f->clients, s, r.bound_id);
	free(p);
}

static struct rev_session *bc_callback_to(struct bc_fixture *f, const uint8_t *sid)
{
	struct msg m;
	const char *why = NULL;

	msg_cb_sequence(&m, 0xcb, sid);
	uint8_t *p = msg_dup(&m, m.len);
	assert_non_null(p);
	struct rev_session *to = rev_share_cb_client(&f->clients, p, m.len, &why);
	free(p);
	if (!to)
		assert_non_null(why);
	return to;
}

static void bc_a_creates_x(struct bc_fixture *f)
{
	struct msg call, rep;

	msg_create_session_call(&call, 10);
	msg_create_session_reply(&rep, 10, sid_x);
	bc_relay(f, f->a, &call, &rep, rep.len);
	assert_ptr_equal(bc_callback_to(f, sid_x), f->a);
}

static void bc_b_binds_x(struct bc_fixture *f, uint32_t call_dir, uint32_t status,
			 const uint8_t *rep_sid, uint32_t rep_dir)
{
	struct msg call, rep;

	msg_bcts_call(&call, 20, sid_x, call_dir, false);
	msg_bcts_reply(&rep, 20, status, rep_sid, rep_dir, false);
	bc_relay(f, f->b, &call, &rep, rep.len);
}

/* B binds X's back channel: X's callbacks are B's; A keeps X's reply limit. */
static void test_bc_bind_moves_callbacks(void **state)
{
	struct bc_fixture f;

	(void)state;
	bc_setup(&f);
	bc_a_creates_x(&f);
	bc_b_binds_x(&f, MSG_CDFC4_BACK_OR_BOTH, 0, sid_x, MSG_CDFS4_BOTH);
	assert_ptr_equal(bc_callback_to(&f, sid_x), f.b);
	assert_int_equal(ulb_sessions_maxresp(&f.a->ulb_sessions, sid_x), MSG_MAXRESP);
	assert_null(bc_callback_to(&f, sid_y));
	/* back only, by A again */
	struct msg call, rep;
	msg_bcts_call(&call, 30, sid_x, MSG_CDFC4_BACK_OR_BOTH, false);
	msg_bcts_reply(&rep, 30, 0, sid_x, MSG_CDFS4_BACK, false);
	bc_relay(&f, f.a, &call, &rep, rep.len);
	assert_ptr_equal(bc_callback_to(&f, sid_x), f.a);
	bc_teardown(&f);
}

/* A fore-channel bind, a refused one, or one naming another session: the callbacks stay A's. */
static void test_bc_bind_that_moves_nothing(void **state)
{
	struct bc_fixture f;

	(void)state;
	bc_setup(&f);
	bc_a_creates_x(&f);
	bc_b_binds_x(&f, MSG_CDFC4_FORE, 0, sid_x, MSG_CDFS4_FORE);
	assert_ptr_equal(bc_callback_to(&f, sid_x), f.a);
	bc_b_binds_x(&f, MSG_CDFC4_BACK_OR_BOTH, MSG_NFS4ERR_BADSESSION, sid_x, MSG_CDFS4_BOTH);
	assert_ptr_equal(bc_callback_to(&f, sid_x), f.a);
	bc_b_binds_x(&f, MSG_CDFC4_BACK_OR_BOTH, 0, sid_y, MSG_CDFS4_BOTH);
	assert_ptr_equal(bc_callback_to(&f, sid_x), f.a);
	assert_false(ulb_sessions_has(&f.b->ulb_sessions, sid_x));
	bc_teardown(&f);
}

/* Every cut of the bind's reply teaches nothing and is counted as a reply that does not parse. */
static void test_bc_bind_truncated(void **state)
{
	struct bc_fixture f;
	struct msg call, rep;

	(void)state;
	bc_setup(&f);
	bc_a_creates_x(&f);
	msg_bcts_call(&call, 40, sid_x, MSG_CDFC4_BACK_OR_BOTH, false);
	msg_bcts_reply(&rep, 40, 0, sid_x, MSG_CDFS4_BOTH, false);
	for (uint32_t n = 0; n < rep.len; n++) {
		uint64_t garbage = ulb_counters.garbage_replies;
		bc_relay(&f, f.b, &call, &rep, n);
		assert_ptr_equal(bc_callback_to(&f, sid_x), f.a);
		assert_int_equal(ulb_counters.garbage_replies, garbage + 1);
	}
	bc_relay(&f, f.b, &call, &rep, rep.len);
	assert_ptr_equal(bc_callback_to(&f, sid_x), f.b);
	bc_teardown(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key_is_address_port_xid),
		cmocka_unit_test(test_non_ip_peer_keyed_by_connection),
		cmocka_unit_test(test_channel_stable_and_spread),
		cmocka_unit_test(test_ledger_same_xid_two_clients),
		cmocka_unit_test(test_ledger_caps),
		cmocka_unit_test(test_ledger_detach_releases_own_calls),
		cmocka_unit_test(test_ledger_requeue_after_loss),
		cmocka_unit_test(test_ledger_retransmission_same_wire_xid),
		cmocka_unit_test(test_ledger_takeover_resent_under_wire_xid),
		cmocka_unit_test(test_ledger_reply_to_waiting_call_is_stray),
		cmocka_unit_test(test_ledger_oldest_orphan),
		cmocka_unit_test(test_ledger_read_flood_keeps_a_remove),
		cmocka_unit_test(test_ledger_gss_keeps_xid),
		cmocka_unit_test(test_bc_bind_moves_callbacks),
		cmocka_unit_test(test_bc_bind_that_moves_nothing),
		cmocka_unit_test(test_bc_bind_truncated),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
