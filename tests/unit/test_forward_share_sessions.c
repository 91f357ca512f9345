/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_forward_share_sessions.c - on a forward route's shared
 * RDMA connections, whom a backward call goes to (gateway/forward/forward_share.c):
 * the client holding the back channel of the session its CB_SEQUENCE
 * names, learned from the CREATE_SESSION and BIND_CONN_TO_SESSION replies
 * relayed to the clients (fwd_learn_sessions, as forward_complete.c
 * calls it). A bind of the back channel (both directions, or back only)
 * moves the session's callbacks to the binder; a fore-channel bind, a
 * failed bind, a reply naming another session or a reply that does not
 * parse moves nothing. Each bind that moves them is counted
 * (backchannel_bound) for the binder and its route.
 * A client that goes leaves its back channels kept (bc_orphans.h); a
 * callback that then finds no holder goes to the one connection made since
 * from the gone client's address whose SEQUENCE on that session the server
 * answered NFS4_OK, and to none when there are several (backchannel_adopted).
 * What is kept goes when the server answers a DESTROY_SESSION of the
 * session or a live client binds its back channel.
 * A candidate from a reply whose data came in Write chunks is made in
 * forward_complete.c's spliced path, which this harness, with no RDMA
 * connection, cannot reach: test_forward_share_pump.c tests it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>

#include "common/clock.h"
#include "gateway/forward/forward_priv.h"
#include "tests/unit/nfs4_session_msgs.h"

static const uint8_t sid_x[ULB_SESSIONID_SIZE] = { 0x5e, 1, 2,	3,  4,	5,  6,	7,
						   8,	 9, 10, 11, 12, 13, 14, 15 };
static const uint8_t sid_y[ULB_SESSIONID_SIZE] = { 0x77, 1, 2,	3,  4,	5,  6,	7,
						   8,	 9, 10, 11, 12, 13, 14, 15 };

/* A route with one channel and two live clients on it, A and B. */
struct fixture {
	struct ulb_rules *rules;
	struct gw_route_rt *route;
	struct fwd_session *ch, *a, *b;
	char tcp_stand_in; /* the clients' TCP connections: only "has one" is looked at */
};

static struct fwd_session *client(struct fixture *f, uint64_t id, const char *name)
{
	struct fwd_session *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	s->base.id = id;
	s->base.route = f->route;
	snprintf(s->base.client, sizeof(s->base.client), "%s", name);
	s->state = FS_READY;
	s->ch = f->ch;
	s->conn = f->ch;
	s->up = &fwd_share_upstream;
	s->tcp = (struct tcp_conn *)&f->tcp_stand_in;
	TAILQ_INSERT_TAIL(&f->route->sessions, &s->base, link);
	/* "a.b.c.d:port": its address, the key of what it leaves behind */
	char addr[32];
	unsigned port = 0;
	assert_int_equal(sscanf(name, "%31[^:]:%u", addr, &port), 2);
	struct sockaddr_in *sin = (struct sockaddr_in *)&s->peer;
	sin->sin_family = AF_INET;
	sin->sin_port = htons((uint16_t)port);
	assert_int_equal(inet_pton(AF_INET, addr, &sin->sin_addr), 1);
	return s;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	f->rules = msg_rules_load();
	f->route = calloc(1, sizeof(*f->route));
	f->ch = calloc(1, sizeof(*f->ch));
	f->route->mode_state = calloc(1, sizeof(struct fwd_route));
	if (!f->rules || !f->route || !f->ch || !f->route->mode_state)
		return -1;
	fwd_route(f->route)->share = calloc(1, sizeof(struct fwd_share));
	if (!fwd_route(f->route)->share)
		return -1;
	f->ch->share = fwd_route(f->route)->share; /* a channel's share is its route's */
	TAILQ_INIT(&f->route->sessions);
	f->ch->is_channel = true;
	TAILQ_INIT(&f->ch->gss_wait);
	f->ch->up = &fwd_share_upstream;
	f->ch->conn = f->ch;
	f->ch->state = FS_READY;
	f->ch->base.route = f->route;
	f->a = client(f, 1, "192.0.2.1:700");
	f->b = client(f, 2, "192.0.2.2:701");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	struct gw_session *g;

	while ((g = TAILQ_FIRST(&f->route->sessions)) != NULL) {
		TAILQ_REMOVE(&f->route->sessions, g, link);
		free((char *)g - offsetof(struct fwd_session, base));
	}
	free(f->ch);
	bc_orphans_fini(&fwd_route(f->route)->share->gone_holders);
	free(fwd_route(f->route)->share);
	free(f->route->mode_state);
	free(f->route);
	ulb_rules_free(f->rules);
	free(f);
	return 0;
}

/* The reply @rep (its first @len bytes) to @s's call @call, relayed as forward_complete.c does. */
static void relay(struct fixture *f, struct fwd_session *s, const struct msg *call,
		  const struct msg *rep, uint32_t len)
{
	struct ulb_call u;

	assert_int_equal(msg_parse_call(f->rules, call, &u), ULB_OK);
	uint8_t *p = msg_dup(rep, len);
	assert_non_null(p);
	fwd_learn_sessions(s, &u, p, len);
	free(p);
}

/* Whom the server's CB_SEQUENCE for @sid goes to; NULL: refused. */
static struct fwd_session *callback_to(struct fixture *f, const uint8_t *sid)
{
	struct msg m;
	const char *why = NULL;

	msg_cb_sequence(&m, 0xcb, sid);
	uint8_t *p = msg_dup(&m, m.len);
	assert_non_null(p);
	struct fwd_session *to = fwd_share_cb_client(f->ch, p, m.len, &why);
	free(p);
	if (!to)
		assert_non_null(why);
	return to;
}

/* A creates session X: its callbacks are A's. */
static void a_creates_x(struct fixture *f)
{
	struct msg call, rep;

	msg_create_session_call(&call, 10);
	msg_create_session_reply(&rep, 10, sid_x);
	relay(f, f->a, &call, &rep, rep.len);
	assert_ptr_equal(callback_to(f, sid_x), f->a);
}

static void b_binds_x(struct fixture *f, uint32_t call_dir, uint32_t status, const uint8_t *rep_sid,
		      uint32_t rep_dir, bool putrootfh)
{
	struct msg call, rep;

	msg_bcts_call(&call, 20, sid_x, call_dir, putrootfh);
	msg_bcts_reply(&rep, 20, status, rep_sid, rep_dir, putrootfh);
	relay(f, f->b, &call, &rep, rep.len);
}

/* The binds client @s was counted for (GW_EV_BACKCHANNEL_BOUND), checked against the route's total.
 */
static uint64_t bound(struct fixture *f, struct fwd_session *s)
{
	uint64_t all = f->a->base.counters.events[GW_EV_BACKCHANNEL_BOUND] +
		       f->b->base.counters.events[GW_EV_BACKCHANNEL_BOUND];

	assert_int_equal(f->route->counters.events[GW_EV_BACKCHANNEL_BOUND], all);
	return s->base.counters.events[GW_EV_BACKCHANNEL_BOUND];
}

/* B binds X's back channel (BOTH, then BACK alone): X's callbacks go to B, and only to B. */
static void test_bind_both_moves_callbacks(void **state)
{
	struct fixture *f = *state;

	a_creates_x(f);
	assert_int_equal(bound(f, f->a), 0); /* a CREATE_SESSION is not a bind */
	b_binds_x(f, MSG_CDFC4_BACK_OR_BOTH, 0, sid_x, MSG_CDFS4_BOTH, false);
	assert_ptr_equal(callback_to(f, sid_x), f->b);
	assert_int_equal(bound(f, f->b), 1);
	assert_int_equal(bound(f, f->a), 0);
	/* A keeps what it knew of X's fore channel: its replies stay bounded */
	assert_int_equal(ulb_sessions_maxresp(&f->a->ulb_sessions, sid_x), MSG_MAXRESP);
	/* B knows no limit of X (BIND_CONN_TO_SESSION carries none) */
	assert_int_equal(ulb_sessions_maxresp(&f->b->ulb_sessions, sid_x), 0);
	/* other sessions are nobody's */
	assert_null(callback_to(f, sid_y));
}

static void test_bind_back_moves_callbacks(void **state)
{
	struct fixture *f = *state;

	a_creates_x(f);
	b_binds_x(f, MSG_CDFC4_BACK_OR_BOTH, 0, sid_x, MSG_CDFS4_BACK, false);
	assert_ptr_equal(callback_to(f, sid_x), f->b);
	/* A binding it again takes it back */
	struct msg call, rep;
	msg_bcts_call(&call, 30, sid_x, MSG_CDFC4_BACK_OR_BOTH, false);
	msg_bcts_reply(&rep, 30, 0, sid_x, MSG_CDFS4_BOTH, false);
	relay(f, f->a, &call, &rep, rep.len);
	assert_ptr_equal(callback_to(f, sid_x), f->a);
	assert_int_equal(bound(f, f->b), 1);
	assert_int_equal(bound(f, f->a), 1);
}

/* The bind found after another operation of the COMPOUND. */
static void test_bind_after_another_op(void **state)
{
	struct fixture *f = *state;

	a_creates_x(f);
	b_binds_x(f, MSG_CDFC4_BACK_OR_BOTH, 0, sid_x, MSG_CDFS4_BOTH, true);
	assert_ptr_equal(callback_to(f, sid_x), f->b);
}

/* A fore-channel bind moves no callbacks, whatever the client asked. */
static void test_bind_fore_keeps_callbacks(void **state)
{
	struct fixture *f = *state;

	a_creates_x(f);
	b_binds_x(f, MSG_CDFC4_FORE, 0, sid_x, MSG_CDFS4_FORE, false);
	assert_ptr_equal(callback_to(f, sid_x), f->a);
	b_binds_x(f, MSG_CDFC4_BACK_OR_BOTH, 0, sid_x, MSG_CDFS4_FORE, false);
	assert_ptr_equal(callback_to(f, sid_x), f->a);
	/* a direction no channel_dir_from_server4 has */
	b_binds_x(f, MSG_CDFC4_BACK_OR_BOTH, 0, sid_x, 7, false);
	assert_ptr_equal(callback_to(f, sid_x), f->a);
	assert_int_equal(bound(f, f->b), 0);
}

/* A bind the server refused, or that names another session than the call did, moves nothing. */
static void test_bind_refused_keeps_callbacks(void **state)
{
	struct fixture *f = *state;

	a_creates_x(f);
	b_binds_x(f, MSG_CDFC4_BACK_OR_BOTH, MSG_NFS4ERR_BADSESSION, sid_x, MSG_CDFS4_BOTH, false);
	assert_ptr_equal(callback_to(f, sid_x), f->a);
	b_binds_x(f, MSG_CDFC4_BACK_OR_BOTH, 0, sid_y, MSG_CDFS4_BOTH, false);
	assert_ptr_equal(callback_to(f, sid_x), f->a);
	assert_null(callback_to(f, sid_y));
	assert_int_equal(bound(f, f->b), 0);
}

/* Every cut of the bind's reply teaches nothing, and the ones inside it are counted. */
static void test_bind_truncated_teaches_nothing(void **state)
{
	struct fixture *f = *state;
	struct msg call, rep;

	a_creates_x(f);
	msg_bcts_call(&call, 40, sid_x, MSG_CDFC4_BACK_OR_BOTH, false);
	msg_bcts_reply(&rep, 40, 0, sid_x, MSG_CDFS4_BOTH, false);
	for (uint32_t n = 0; n < rep.len; n++) {
		uint64_t garbage = ulb_counters.garbage_replies;
		relay(f, f->b, &call, &rep, n);
		assert_ptr_equal(callback_to(f, sid_x), f->a);
		assert_false(ulb_sessions_has(&f->b->ulb_sessions, sid_x));
		assert_int_equal(ulb_counters.garbage_replies, garbage + 1);
		assert_int_equal(bound(f, f->b), 0);
	}
	/* the whole reply does */
	relay(f, f->b, &call, &rep, rep.len);
	assert_ptr_equal(callback_to(f, sid_x), f->b);
}

/* A client that has gone (not ready) and held it does not stop the bind from taking effect. */
static void test_bind_after_client_gone(void **state)
{
	struct fixture *f = *state;

	a_creates_x(f);
	f->a->state = FS_CLOSING;
	assert_null(callback_to(f, sid_x));
	b_binds_x(f, MSG_CDFC4_BACK_OR_BOTH, 0, sid_x, MSG_CDFS4_BOTH, false);
	assert_ptr_equal(callback_to(f, sid_x), f->b);
	f->a->state = FS_READY;
	assert_ptr_equal(callback_to(f, sid_x), f->b);
}

/* @s goes on with session @sid: SEQUENCE answered @status. */
static void sequence(struct fixture *f, struct fwd_session *s, const uint8_t *sid, uint32_t status)
{
	struct msg call, rep;

	msg_sequence_call(&call, 50, sid);
	msg_sequence_reply(&rep, 50, status, sid);
	relay(f, s, &call, &rep, rep.len);
}

/* A goes (its TCP connection reset): what it held is kept, nobody holds it now. */
static void a_goes(struct fixture *f)
{
	fwd_share_keep_back_channels(f->a);
	f->a->state = FS_CLOSING;
	f->a->tcp = NULL;
}

/* A connection made after A went, from @name. */
static struct fwd_session *reconnected(struct fixture *f, uint64_t id, const char *name)
{
	struct fwd_session *s = client(f, id, name);

	s->base.started_us = gw_now_us() + 1000000;
	return s;
}

static uint64_t adopted(struct fixture *f)
{
	return f->route->counters.events[GW_EV_BACKCHANNEL_ADOPTED];
}

/*
 * A's connection is made again from a new port (as a Linux NFSv4.1 client
 * does) and goes on with session X: once the server has answered its
 * SEQUENCE, the next callback for X, which finds no holder, is its own,
 * with X's reply limit; then it holds X as a CREATE_SESSION would have made it.
 */
static void test_reconnected_connection_takes_callbacks(void **state)
{
	struct fixture *f = *state;

	a_creates_x(f);
	a_goes(f);
	assert_null(callback_to(f, sid_x));
	struct fwd_session *a2 = reconnected(f, 3, "192.0.2.1:705");
	sequence(f, a2, sid_y, 0); /* another session: nothing */
	assert_null(callback_to(f, sid_x));
	sequence(f, a2, sid_x, 0);
	assert_ptr_equal(callback_to(f, sid_x), a2);
	assert_int_equal(ulb_sessions_maxresp(&a2->ulb_sessions, sid_x), MSG_MAXRESP);
	assert_int_equal(a2->base.counters.events[GW_EV_BACKCHANNEL_ADOPTED], 1);
	assert_int_equal(adopted(f), 1);
	assert_int_equal(bc_orphans_count(&fwd_route(f->route)->share->gone_holders), 0);
	assert_ptr_equal(callback_to(f, sid_x), a2);
	assert_int_equal(adopted(f), 1);
}

/*
 * Two connections from A's address both go on with X (an nconnect client
 * whose connections all came back): which one takes callbacks nothing says,
 * so neither gets them; the entry stays for the TTL.
 */
static void test_two_reconnected_connections_take_nothing(void **state)
{
	struct fixture *f = *state;

	a_creates_x(f);
	a_goes(f);
	struct fwd_session *a2 = reconnected(f, 3, "192.0.2.1:705");
	struct fwd_session *a3 = reconnected(f, 4, "192.0.2.1:706");
	sequence(f, a2, sid_x, 0);
	sequence(f, a3, sid_x, 0);
	assert_null(callback_to(f, sid_x));
	assert_int_equal(adopted(f), 0);
	assert_int_equal(bc_orphans_count(&fwd_route(f->route)->share->gone_holders), 1);
}

/*
 * Not candidates: B (another address), a connection of A's address made
 * before A went (the other transport of an nconnect client, which Linux
 * never takes callbacks on), and one whose SEQUENCE the server refused.
 */
static void test_other_connections_are_not_candidates(void **state)
{
	struct fixture *f = *state;

	struct fwd_session *a_before = client(f, 3, "192.0.2.1:701");
	a_creates_x(f);
	a_goes(f);
	struct fwd_session *a2 = reconnected(f, 4, "192.0.2.1:705");
	sequence(f, f->b, sid_x, 0);
	sequence(f, a_before, sid_x, 0);
	sequence(f, a2, sid_x, MSG_NFS4ERR_BADSESSION);
	assert_null(callback_to(f, sid_x));
	assert_int_equal(adopted(f), 0);
	sequence(f, a2, sid_x, 0);
	assert_ptr_equal(callback_to(f, sid_x), a2);
}

/*
 * A created X, B (another address) bound its back channel and went: A,
 * which still has X in its table without the back channel, is not a
 * candidate (another address, connected before B went), so the callback
 * is refused rather than given to it; B's own reconnection gets it.
 */
static void test_creator_is_not_a_candidate(void **state)
{
	struct fixture *f = *state;

	a_creates_x(f);
	b_binds_x(f, MSG_CDFC4_BACK_OR_BOTH, 0, sid_x, MSG_CDFS4_BOTH, false);
	fwd_share_keep_back_channels(f->b);
	f->b->state = FS_CLOSING;
	f->b->tcp = NULL;
	assert_true(ulb_sessions_has(&f->a->ulb_sessions, sid_x));
	assert_null(callback_to(f, sid_x));
	assert_int_equal(adopted(f), 0);
	struct fwd_session *b2 = reconnected(f, 3, "192.0.2.2:705");
	sequence(f, b2, sid_x, 0);
	assert_ptr_equal(callback_to(f, sid_x), b2);
}

/*
 * B bound X since A went: that bind stands, A's reconnection takes nothing
 * from B; what A left of X went with the bind (dropped, not adopted).
 */
static void test_adoption_leaves_a_bind_alone(void **state)
{
	struct fixture *f = *state;
	struct bc_orphans *kept = &fwd_route(f->route)->share->gone_holders;

	a_creates_x(f);
	a_goes(f);
	assert_int_equal(bc_orphans_count(kept), 1);
	b_binds_x(f, MSG_CDFC4_BACK_OR_BOTH, 0, sid_x, MSG_CDFS4_BOTH, false);
	assert_int_equal(bc_orphans_count(kept), 0);
	assert_int_equal(kept->st.dropped, 1);
	assert_int_equal(kept->st.adopted, 0);
	struct fwd_session *a2 = reconnected(f, 3, "192.0.2.1:705");
	sequence(f, a2, sid_x, 0);
	assert_ptr_equal(callback_to(f, sid_x), f->b);
	assert_int_equal(adopted(f), 0);
}

/* @s destroys session @sid: DESTROY_SESSION answered @status. */
static void destroy(struct fixture *f, struct fwd_session *s, const uint8_t *sid, uint32_t status)
{
	struct msg call, rep;

	msg_destroy_session_call(&call, 60, sid);
	msg_destroy_session_reply(&rep, 60, status);
	relay(f, s, &call, &rep, rep.len);
}

/*
 * A's reconnection destroys X (as a Linux client does to reset its
 * session): what A left of X goes (dropped, not adopted), so no later
 * connection from A's address is a candidate for it. A destroy the server
 * refused leaves it.
 */
static void test_destroyed_session_is_not_kept(void **state)
{
	struct fixture *f = *state;
	struct bc_orphans *kept = &fwd_route(f->route)->share->gone_holders;

	a_creates_x(f);
	a_goes(f);
	struct fwd_session *a2 = reconnected(f, 3, "192.0.2.1:705");
	destroy(f, a2, sid_x, MSG_NFS4ERR_BADSESSION);
	assert_int_equal(bc_orphans_count(kept), 1);
	destroy(f, a2, sid_x, 0);
	assert_int_equal(bc_orphans_count(kept), 0);
	assert_int_equal(kept->st.dropped, 1);
	assert_int_equal(kept->st.adopted, 0);
	struct fwd_session *a3 = reconnected(f, 4, "192.0.2.1:706");
	sequence(f, a3, sid_x, 0);
	assert_false(ulb_sessions_has(&a3->ulb_sessions, sid_x));
	assert_null(callback_to(f, sid_x));
	assert_int_equal(adopted(f), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_bind_both_moves_callbacks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bind_back_moves_callbacks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bind_after_another_op, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bind_fore_keeps_callbacks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bind_refused_keeps_callbacks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bind_truncated_teaches_nothing, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_bind_after_client_gone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reconnected_connection_takes_callbacks, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_two_reconnected_connections_take_nothing,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_other_connections_are_not_candidates, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_adoption_leaves_a_bind_alone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_destroyed_session_is_not_kept, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_creator_is_not_a_candidate, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
