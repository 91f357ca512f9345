/* SPDX-License-Identifier: MIT */
/*
 * The MOUNT relay: the XID mapping table on its own, then the relay on
 * loopback sockets between test clients (UDP and TCP) and a fake mountd and
 * portmapper played by the test: XIDs mapped and restored, a retransmission
 * on the same upstream XID, the daemon's port found through the portmapper,
 * calls given up after their timeout, other programs answered locally,
 * stray replies counted.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include <event2/event.h>

#include "common/xdr.h"
#include "conf/config.h"
#include "gateway/counters/counters.h"
#include "gateway/side/rpc/portmap.h"
#include "gateway/side/rpc/side_relay.h"
#include "gateway/side/rpc/side_service.h"

#include "support/loop.h"
#include "support/rpcmsg.h"
#include "support/udp.h"

static void test_table_maps_and_restores(void **state)
{
	(void)state;
	struct relay_table t;
	uint8_t msg[16] = { 0, 0, 0, 5 };
	struct side_service_peer a = gwt_side_peer(0x0a000001, 700),
				 b = gwt_side_peer(0x0a000002, 700);

	assert_int_equal(relay_table_init(&t, 4, 64), 0);
	/* Two clients with the same XID get different upstream XIDs. */
	struct relay_call *ca = relay_table_add(&t, NULL, &a, 5, msg, sizeof(msg));
	struct relay_call *cb = relay_table_add(&t, NULL, &b, 5, msg, sizeof(msg));
	assert_non_null(ca);
	assert_non_null(cb);
	assert_int_not_equal(ca->up_xid, cb->up_xid);
	/* The stored call carries the upstream XID; the rest is the client's bytes. */
	assert_int_equal(xdr_get32(ca->msg), ca->up_xid);
	assert_memory_equal(ca->msg + 4, msg + 4, sizeof(msg) - 4);
	assert_ptr_equal(relay_table_find_up(&t, cb->up_xid), cb);
	assert_int_equal(relay_table_find_up(&t, cb->up_xid)->client_xid, 5);
	/* A retransmission is the same entry; the same XID on TCP is another call. */
	assert_ptr_equal(relay_table_find_client(&t, &a, 5), ca);
	struct side_service_peer a_tcp = a;
	a_tcp.conn_id = 3;
	assert_null(relay_table_find_client(&t, &a_tcp, 5));
	/* Bounded: four calls, then none; too long a call is refused. */
	assert_null(relay_table_add(&t, NULL, &a, 6, msg, 65));
	assert_non_null(relay_table_add(&t, NULL, &a, 6, msg, sizeof(msg)));
	assert_non_null(relay_table_add(&t, NULL, &a, 7, msg, sizeof(msg)));
	assert_null(relay_table_add(&t, NULL, &a, 8, msg, sizeof(msg)));
	relay_table_remove(&t, ca);
	assert_null(relay_table_find_up(&t, ca->up_xid));
	assert_null(relay_table_find_client(&t, &a, 5));
	assert_non_null(relay_table_add(&t, NULL, &a, 8, msg, sizeof(msg)));
	relay_table_destroy(&t);
}

/* An upstream XID still in use is skipped when the counter comes round to it. */
/*
 * The upstream XIDs cannot be guessed (issue: counters started from the
 * clock let an off-path forger answer the next call): 256 calls of one
 * client, numbered 1..256 by it, go out under 256 different XIDs, none the
 * client's, and no two in a row follow one another.
 */
static void test_table_xids_unpredictable(void **state)
{
	(void)state;
	struct relay_table t;
	uint8_t msg[8] = { 0 };
	struct side_service_peer a = gwt_side_peer(0x0a000001, 700);
	uint32_t up[256];
	unsigned sequential = 0;

	assert_int_equal(relay_table_init(&t, 256, 64), 0);
	for (uint32_t i = 0; i < 256; i++) {
		struct relay_call *c = relay_table_add(&t, NULL, &a, i + 1, msg, sizeof(msg));
		assert_non_null(c);
		up[i] = c->up_xid;
		assert_int_not_equal(up[i], i + 1);
		for (uint32_t j = 0; j < i; j++)
			assert_int_not_equal(up[j], up[i]);
		if (i && (up[i] == up[i - 1] + 1 || up[i] == up[i - 1] - 1))
			sequential++;
	}
	assert_true(sequential < 2); /* by chance: 256 in 2^31 */
	relay_table_destroy(&t);
}

/* ---- the relay on loopback ------------------------------------------------ */

struct rig {
	struct event_base *base;
	struct gw_route route;
	struct gw_counters counters;
	struct side_service *svc;
	struct side_relay *relay;
	int mountd; /* the fake daemon's UDP socket */
	int pmapd;  /* the fake portmapper's */
	uint16_t mountd_port, pmapd_port;
	int client;	       /* a test client's UDP socket */
	struct sockaddr_in at; /* the relay's side service, where clients send */
};

/* The hooks the next rig_start() gives its relay (none unless a test sets them). */
static struct side_relay_hooks rig_hooks;

static void rig_start(struct rig *r, bool configured_port, uint32_t timeout_ms)
{
	memset(r, 0, sizeof(*r));
	r->base = event_base_new();
	r->route.name = "t";
	r->mountd = gwt_udp_bind(GWT_LOOPBACK, 0, &r->mountd_port);
	r->pmapd = gwt_udp_bind(GWT_LOOPBACK, 0, &r->pmapd_port);
	assert_true(r->mountd >= 0 && r->pmapd >= 0);
	struct side_relay_config rc = {
		.name = "mount",
		.prog = 100005,
		.vers_lo = 1,
		.vers_hi = 3,
		.route = &r->route,
		.counters = &r->counters,
		.server_len = sizeof(struct sockaddr_in),
		.server_port = configured_port ? r->mountd_port : 0,
		.pmap_port = r->pmapd_port,
		.max_calls = 8,
		.max_msg = 1024,
		.retry_ms = 200,
		.timeout_ms = timeout_ms,
		.hooks = rig_hooks,
	};
	struct sockaddr_in *s = (struct sockaddr_in *)&rc.server;
	s->sin_family = AF_INET;
	s->sin_addr.s_addr = htonl(0x7f000001);
	r->relay = side_relay_start(r->base, &rc);
	assert_non_null(r->relay);
	struct side_service_config sc = {
		.name = "mount",
		.route = &r->route,
		.counters = &r->counters,
		.max_msg = 1024,
		.max_conns = 4,
		.idle_ms = 5000,
		.max_output = 65536,
		.on_msg = side_relay_on_call,
		.arg = r->relay,
	};
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001) };
	r->svc = side_service_start(r->base, (struct sockaddr *)&a, sizeof(a), &sc);
	assert_non_null(r->svc);
	r->client = gwt_udp_bind(GWT_LOOPBACK, 0, NULL);
	assert_true(r->client >= 0);
	r->at = gwt_sin(GWT_LOOPBACK, side_service_port(r->svc));
}

static void rig_stop(struct rig *r)
{
	close(r->client);
	side_relay_forget(r->relay, r->svc);
	side_service_stop(r->svc);
	side_relay_stop(r->relay);
	close(r->mountd);
	close(r->pmapd);
	event_base_free(r->base);
}

static void reply_to(int fd, const uint8_t *call, const struct sockaddr_in *to, uint32_t result)
{
	uint8_t r[64];
	size_t n = rpc_encode_accept_error(r, sizeof(r), xdr_get32(call), RPCSTAT_SUCCESS, 0, 0);
	xdr_put32(r + n, result);
	sendto(fd, r, n + 4, 0, (const struct sockaddr *)to, sizeof(*to));
}

/* The test client sends @n bytes of @b to the relay. */
static void client_send(struct rig *r, const uint8_t *b, size_t n)
{
	sendto(r->client, b, n, 0, (const struct sockaddr *)&r->at, sizeof(r->at));
}

/*
 * What comes to @fd within @ms, into @b (its sender in @from, unless NULL):
 * its length, or -1 when nothing came.
 */
static ssize_t recv_within(struct rig *r, int fd, unsigned int ms, uint8_t *b, size_t cap,
			   struct sockaddr_in *from)
{
	socklen_t fl = sizeof(*from);

	if (!gwt_spin_until_readable(r->base, fd, ms, NULL, NULL))
		return -1;
	return recvfrom(fd, b, cap, 0, (struct sockaddr *)from, from ? &fl : NULL);
}

static void test_relay_udp_xid_mapping(void **state)
{
	(void)state;
	struct rig r;
	struct sockaddr_in from;
	uint8_t b[256], up[256];

	rig_start(&r, true, 5000);
	size_t n = gwt_rpc_call_none(b, 0xabcd, 100005, 3, 0);
	client_send(&r, b, n);
	ssize_t un = recv_within(&r, r.mountd, 2000, up, sizeof(up), &from);
	assert_int_equal(un, (ssize_t)n);
	uint32_t up_xid = xdr_get32(up);
	/* The same call, under the relay's XID. */
	assert_memory_equal(up + 4, b + 4, n - 4);
	assert_int_equal(side_relay_pending(r.relay), 1);

	/* The client retransmits: the same upstream XID goes out again. */
	client_send(&r, b, n);
	assert_true(recv_within(&r, r.mountd, 2000, up, sizeof(up), &from) >= 0);
	assert_int_equal(xdr_get32(up), up_xid);
	assert_int_equal(r.counters.events[GW_EV_RETRANSMIT_ABSORBED], 1);
	assert_int_equal(side_relay_pending(r.relay), 1);

	/* A reply with an XID nobody used is counted and dropped. */
	up[0] ^= 0xff;
	reply_to(r.mountd, up, &from, 1);
	/* The real one goes back with the client's XID. */
	up[0] ^= 0xff;
	reply_to(r.mountd, up, &from, 42);
	uint8_t got[64];
	assert_int_equal(recv_within(&r, r.client, 2000, got, sizeof(got), NULL), 28);
	assert_int_equal(xdr_get32(got), 0xabcd);
	assert_int_equal(xdr_get32(got + 24), 42);
	gwt_spin_until_readable(r.base, r.client, 50, NULL, NULL);
	assert_int_equal(r.counters.events[GW_EV_UNMATCHED_REPLY], 1);
	assert_int_equal(side_relay_pending(r.relay), 0);
	struct gw_proc_count *pc = gw_counters_proc(&r.counters, 100005, 3, 0);
	assert_non_null(pc);
	assert_int_equal(pc->calls, 2);
	assert_int_equal(pc->replies, 1);
	rig_stop(&r);
}

/*
 * A reply with the pending call's XID from the server's address but not from
 * its daemon's port (a local process on the server, or a forger who learnt
 * the XID) is no reply: dropped and counted; the daemon's own answer then
 * reaches the client.
 */
static void test_relay_replies_only_from_the_daemons_port(void **state)
{
	(void)state;
	struct rig r;
	struct sockaddr_in from, to;
	uint8_t b[256], up[256], got[64];

	rig_start(&r, true, 5000);
	size_t n = gwt_rpc_call_none(b, 0x5151, 100005, 3, 0);
	client_send(&r, b, n);
	assert_true(recv_within(&r, r.mountd, 2000, up, sizeof(up), &from) > 0);
	/* the relay's socket, as the daemon saw it: where a forger aims too */
	to = from;
	uint16_t p;
	int other = gwt_udp_bind(GWT_LOOPBACK, 0, &p); /* the server's address, another port */
	assert_true(other >= 0);
	reply_to(other, up, &to, 666);
	reply_to(r.pmapd, up, &to, 667); /* its portmapper's port is no daemon either */
	assert_false(gwt_spin_until_readable(r.base, r.client, 200, NULL, NULL));
	assert_int_equal(r.counters.events[GW_EV_UNMATCHED_REPLY], 2);
	assert_int_equal(side_relay_pending(r.relay), 1);
	reply_to(r.mountd, up, &to, 42);
	assert_int_equal(recv_within(&r, r.client, 2000, got, sizeof(got), NULL), 28);
	assert_int_equal(xdr_get32(got), 0x5151);
	assert_int_equal(xdr_get32(got + 24), 42);
	close(other);
	rig_stop(&r);
}

static void test_relay_answers_other_programs(void **state)
{
	(void)state;
	struct rig r;
	uint8_t b[256];

	rig_start(&r, true, 5000);
	size_t n = gwt_rpc_call_none(b, 1, 100021, 4, 0);
	client_send(&r, b, n);
	assert_int_equal(recv_within(&r, r.client, 2000, b, sizeof(b), NULL), 24);
	assert_int_equal(xdr_get32(b + 20), RPCSTAT_PROG_UNAVAIL);
	n = gwt_rpc_call_none(b, 2, 100005, 4, 0);
	client_send(&r, b, n);
	assert_int_equal(recv_within(&r, r.client, 2000, b, sizeof(b), NULL), 32);
	assert_int_equal(xdr_get32(b + 20), RPCSTAT_PROG_MISMATCH);
	assert_int_equal(xdr_get32(b + 24), 1);
	assert_int_equal(xdr_get32(b + 28), 3);
	/* Nothing reached the daemon; a 6-byte datagram is dropped, counted. */
	client_send(&r, b, 6);
	assert_false(gwt_spin_until_readable(r.base, r.mountd, 200, NULL, NULL));
	assert_int_equal(r.counters.events[GW_EV_MALFORMED_RECORD], 1);
	assert_int_equal(r.counters.events[GW_EV_RPC_ERROR_REPLY], 2);
	rig_stop(&r);
}

/* No port configured: GETPORT to the portmapper first, then the call. */
static void test_relay_discovers_port(void **state)
{
	(void)state;
	struct rig r;
	struct sockaddr_in from;
	uint8_t b[256], q[256];

	rig_start(&r, false, 5000);
	assert_int_equal(side_relay_server_port(r.relay), 0);
	size_t n = gwt_rpc_call_none(b, 77, 100005, 3, 5);
	client_send(&r, b, n);
	ssize_t qn = recv_within(&r, r.pmapd, 2000, q, sizeof(q), &from);
	assert_true(qn >= 0);
	struct rpc_call_hdr h;
	assert_int_equal(rpc_call_decode(q, (size_t)qn, &h), RPC_HDR_CALL);
	assert_int_equal(h.prog, 100000);
	assert_int_equal(h.proc, 3);
	assert_int_equal(xdr_get32(q + h.args_off), 100005);
	assert_int_equal(xdr_get32(q + h.args_off + 8), 17);
	reply_to(r.pmapd, q, &from, r.mountd_port);
	assert_true(gwt_spin_until_readable(r.base, r.mountd, 2000, NULL, NULL));
	assert_int_equal(side_relay_server_port(r.relay), r.mountd_port);
	ssize_t un = recv(r.mountd, q, sizeof(q), 0);
	assert_int_equal(un, (ssize_t)n);
	rig_stop(&r);
}

/* A TCP client: its call is relayed over UDP and its reply comes back as a record. */
static void test_relay_tcp_client(void **state)
{
	(void)state;
	struct rig r;
	struct sockaddr_in from;
	uint8_t b[256], up[256];

	rig_start(&r, true, 5000);
	int c = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(c, (struct sockaddr *)&r.at, sizeof(r.at)), 0);
	size_t n = gwt_rpc_call_none(b + 4, 0x55, 100005, 1, 0);
	xdr_put32(b, 0x80000000u | (uint32_t)n);
	assert_int_equal(send(c, b, n + 4, 0), (ssize_t)(n + 4));
	assert_true(recv_within(&r, r.mountd, 2000, up, sizeof(up), &from) >= 0);
	/* The call is lost on the way: the relay resends it itself (retry_ms). */
	ssize_t un = recv_within(&r, r.mountd, 2000, b, sizeof(b), &from);
	assert_int_equal(un, (ssize_t)n);
	assert_int_equal(xdr_get32(b), xdr_get32(up));
	reply_to(r.mountd, up, &from, 9);
	assert_true(gwt_spin_until_readable(r.base, c, 2000, NULL, NULL));
	assert_int_equal(recv(c, b, 32, MSG_WAITALL), 32);
	assert_int_equal(xdr_get32(b), 0x80000000u | 28);
	assert_int_equal(xdr_get32(b + 4), 0x55);
	assert_int_equal(xdr_get32(b + 28), 9);
	close(c);
	rig_stop(&r);
}

/* A call the daemon never answers is given up after timeout_ms, counted. */
static void test_relay_timeout(void **state)
{
	(void)state;
	struct rig r;
	uint8_t b[256];

	rig_start(&r, true, 500);
	size_t n = gwt_rpc_call_none(b, 3, 100005, 3, 0);
	client_send(&r, b, n);
	gwt_spin_until_readable(r.base, r.client, 1200, NULL, NULL);
	assert_int_equal(side_relay_pending(r.relay), 0);
	assert_int_equal(r.counters.events[GW_EV_CALL_TIMEOUT], 1);
	rig_stop(&r);
}

/*
 * Test hooks: a call to procedure 1 gains a word 0x11111111, one to
 * procedure 2 is answered PROC_UNAVAIL here; every reply's result is
 * incremented. @arg counts the replies seen.
 */
static enum side_relay_verdict test_call_hook(void *arg, const struct side_service_peer *peer,
					      const struct rpc_call_hdr *h, const uint8_t *msg,
					      size_t len, uint8_t *out, size_t cap, size_t *n)
{
	(void)arg;
	(void)peer;
	if (h->proc == 2) {
		*n = rpc_encode_accept_error(out, cap, h->xid, RPCSTAT_PROC_UNAVAIL, 0, 0);
		return SIDE_RELAY_ANSWERED;
	}
	if (h->proc != 1)
		return SIDE_RELAY_PASS;
	memcpy(out, msg, len);
	xdr_put32(out + len, 0x11111111);
	*n = len + 4;
	return SIDE_RELAY_REWRITTEN;
}

static enum side_relay_verdict test_reply_hook(void *arg, const struct relay_call *c,
					       const uint8_t *msg, size_t len, uint8_t *out,
					       size_t cap, size_t *n)
{
	(void)c;
	(void)cap;
	++*(int *)arg;
	memcpy(out, msg, len);
	xdr_put32(out + len - 4, xdr_get32(msg + len - 4) + 1);
	*n = len;
	return SIDE_RELAY_REWRITTEN;
}

static void test_relay_hooks_and_own_calls(void **state)
{
	(void)state;
	struct rig r;
	struct sockaddr_in from;
	uint8_t b[256], up[256], got[64];
	int replies = 0;

	rig_hooks = (struct side_relay_hooks){ .call = test_call_hook,
					       .reply = test_reply_hook,
					       .arg = &replies };
	rig_start(&r, true, 5000);
	rig_hooks = (struct side_relay_hooks){ 0 };

	/* Rewritten: the daemon gets the hook's message under a relay XID. */
	size_t n = gwt_rpc_call_none(b, 0x51, 100005, 3, 1);
	client_send(&r, b, n);
	ssize_t un = recv_within(&r, r.mountd, 2000, up, sizeof(up), &from);
	assert_int_equal(un, (ssize_t)n + 4);
	assert_memory_equal(up + 4, b + 4, n - 4);
	assert_int_equal(xdr_get32(up + n), 0x11111111);
	/* The reply, rewritten by the reply hook, goes back under the client's XID. */
	reply_to(r.mountd, up, &from, 42);
	assert_int_equal(recv_within(&r, r.client, 2000, got, sizeof(got), NULL), 28);
	assert_int_equal(xdr_get32(got), 0x51);
	assert_int_equal(xdr_get32(got + 24), 43);
	assert_int_equal(replies, 1);

	/* Answered by the hook: the daemon sees nothing. */
	n = gwt_rpc_call_none(b, 0x52, 100005, 3, 2);
	client_send(&r, b, n);
	assert_int_equal(recv_within(&r, r.client, 2000, got, sizeof(got), NULL), 24);
	assert_int_equal(xdr_get32(got), 0x52);
	assert_int_equal(xdr_get32(got + 20), RPCSTAT_PROC_UNAVAIL);
	assert_false(gwt_spin_until_readable(r.base, r.mountd, 100, NULL, NULL));

	/* The relay's own call: sent upstream, its reply seen by the hook only. */
	n = gwt_rpc_call_none(b, 0, 100005, 3, 0);
	assert_true(side_relay_call_own(r.relay, b, n));
	un = recv_within(&r, r.mountd, 2000, up, sizeof(up), &from);
	assert_int_equal(un, (ssize_t)n);
	assert_int_equal(side_relay_pending(r.relay), 1);
	reply_to(r.mountd, up, &from, 7);
	for (int i = 0; i < 50 && replies < 2; i++)
		gwt_spin_until_readable(r.base, r.client, 10, NULL, NULL);
	assert_int_equal(replies, 2);
	assert_int_equal(side_relay_pending(r.relay), 0);
	assert_false(gwt_spin_until_readable(r.base, r.client, 100, NULL, NULL));
	rig_stop(&r);
}

/* What the gone hook saw. */
struct gone_seen {
	int n, unsent, with_svc;
	uint32_t last_proc;
};

static void test_gone_hook(void *arg, const struct relay_call *c)
{
	struct gone_seen *g = arg;

	g->n++;
	g->unsent += c->sent_us == 0;
	g->with_svc += c->svc != NULL;
	g->last_proc = c->proc;
}

static enum side_relay_verdict pass_call_hook(void *arg, const struct side_service_peer *peer,
					      const struct rpc_call_hdr *h, const uint8_t *msg,
					      size_t len, uint8_t *out, size_t cap, size_t *n)
{
	(void)arg;
	(void)peer;
	(void)h;
	(void)msg;
	(void)len;
	(void)out;
	(void)cap;
	*n = 0;
	return SIDE_RELAY_PASS;
}

/*
 * Every call that ends without a reply reaches the gone hook: one the
 * table has no room for (never sent), the ones given up after timeout_ms,
 * and one forgotten with its side service.
 */
static void test_relay_gone_hook(void **state)
{
	(void)state;
	struct rig r;
	uint8_t b[256];
	struct gone_seen g = { 0 };

	rig_hooks = (struct side_relay_hooks){ .call = pass_call_hook,
					       .gone = test_gone_hook,
					       .arg = &g };
	rig_start(&r, true, 500);
	rig_hooks = (struct side_relay_hooks){ 0 };

	/* max_calls 8: the ninth is not relayed. */
	for (uint32_t i = 0; i < 9; i++) {
		size_t n = gwt_rpc_call_none(b, 0x100 + i, 100005, 3, i < 8 ? 1 : 9);
		client_send(&r, b, n);
	}
	for (int i = 0; i < 50 && g.n < 1; i++)
		gwt_spin_until_readable(r.base, r.client, 10, NULL, NULL);
	assert_int_equal(g.n, 1);
	assert_int_equal(g.unsent, 1);
	assert_int_equal(g.last_proc, 9);
	assert_int_equal(side_relay_pending(r.relay), 8);
	/* The daemon never answers: all eight given up, each heard of. */
	gwt_spin_until_readable(r.base, r.client, 1200, NULL, NULL);
	assert_int_equal(side_relay_pending(r.relay), 0);
	assert_int_equal(g.n, 9);
	assert_int_equal(g.unsent, 1);
	assert_int_equal(g.with_svc, 9);
	assert_int_equal(g.last_proc, 1);

	/* One pending when its service goes. */
	size_t n = gwt_rpc_call_none(b, 0x200, 100005, 3, 2);
	client_send(&r, b, n);
	for (int i = 0; i < 50 && side_relay_pending(r.relay) < 1; i++)
		gwt_spin_until_readable(r.base, r.client, 10, NULL, NULL);
	side_relay_forget(r.relay, r.svc);
	assert_int_equal(g.n, 10);
	assert_int_equal(g.last_proc, 2);
	rig_stop(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_maps_and_restores),
		cmocka_unit_test(test_table_xids_unpredictable),
		cmocka_unit_test(test_relay_replies_only_from_the_daemons_port),
		cmocka_unit_test(test_relay_udp_xid_mapping),
		cmocka_unit_test(test_relay_answers_other_programs),
		cmocka_unit_test(test_relay_discovers_port),
		cmocka_unit_test(test_relay_tcp_client),
		cmocka_unit_test(test_relay_timeout),
		cmocka_unit_test(test_relay_hooks_and_own_calls),
		cmocka_unit_test(test_relay_gone_hook),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
