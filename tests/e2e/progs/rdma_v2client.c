/* SPDX-License-Identifier: MIT */
/*
 * rdma_v2client ADDR PORT CREDITS MODE [LINGER_S]: an RPC-over-RDMA Version
 * Two client (draft-cel-nfsv4-rpcrdma-version-two-01) against a reverse-mode
 * gateway route with max_rpcrdma_version 2 whose upstream answers NFS NULL
 * calls. CREDITS is what the gateway grants; every answer must carry it.
 * LINGER_S: seconds to stay connected after the last check (the job reads
 * /stats meanwhile).
 *
 * MODE "responder", one message at a time, each answer checked byte for byte:
 *   1. an NFS NULL call in RDMA2_MSG (CALL)  -> its reply in RDMA2_MSG (REPLY)
 *   2. the same in Version One               -> answered in Version One
 *   3. a Version Three header                -> ERR_VERS, versions 1..2
 *   4. RDMA2_OPTIONAL of an unknown type     -> RDMA2_ERR_INVAL_OPTION, its XID
 *   5. the same with direction REPLY         -> nothing (errors go to requesters)
 *   6. RDMA2_OPTIONAL whose info runs past the message -> RDMA2_ERR_BAD_HEADER
 *   7. RDMA2_MSG saying CALL over an RPC REPLY -> RDMA2_ERR_BAD_HEADER
 *   8. RDMA2_MSG saying REPLY over an RPC CALL -> nothing
 *   9. RDMA2_MSG with direction 7            -> RDMA2_ERR_BAD_HEADER
 *  10. RDMA2_ERROR from the requester        -> nothing
 *  11. RDMA2_MSG with no RPC message         -> RDMA2_ERR_BAD_HEADER
 *  12. the NULL call in a Position-Zero Read chunk (RDMA2_NOMSG)
 *                                            -> pulled, answered in RDMA2_MSG
 *  13. RDMA2_NOMSG saying CALL whose Position-Zero chunk holds an RPC REPLY
 *                                            -> pulled, RDMA2_ERR_BAD_HEADER
 *  14. an NFS NULL call in RDMA2_MSG again   -> its reply (the connection stays)
 * MODE "backward": a NULL call in Version Two first (answered in Version
 * Two), then the upstream (a test server) calls the client back twice: each
 * backward call must be RDMA2_MSG, direction CALL, three empty lists, the
 * RPC call's own XID; the client answers in RDMA2_MSG, direction REPLY.
 *
 * Prints "ok: ..." or "FAIL: ..." per check and exits 0 only when all hold.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "common/log.h"
#include "rdma/privdata.h"
#include "rdma/rpcrdma_hdr.h"
#include "tests/e2e/progs/peer.h"

enum { MSG_MAX = PEER_MSG_MAX, QUIET_S = 2, ANSWER_S = 10, BC_WAIT_S = 20, BC_TOTAL = 2 };
enum { CALL = 0, REPLY = 1 };

/* A transport header: fixed words; RDMA2_MSG/NOMSG add a direction and three empty lists. */
static void hdr(struct words *w, uint32_t xid, uint32_t vers, uint32_t proc)
{
	w->len = 0;
	w32(w, xid);
	w32(w, vers);
	w32(w, 32); /* credits requested */
	w32(w, proc);
}

static void lists(struct words *w, int dir)
{
	if (dir >= 0)
		w32(w, (uint32_t)dir);
	w32(w, 0);
	w32(w, 0);
	w32(w, 0);
}

static void rpc_call(struct words *w, uint32_t xid)
{
	static const uint32_t nfs_null[] = { 0, 2, 100003, 3, 0, 0, 0, 0, 0 };

	w32(w, xid);
	for (unsigned i = 0; i < sizeof(nfs_null) / 4; i++)
		w32(w, nfs_null[i]);
}

/* An accepted RPC reply, AUTH_NONE, SUCCESS, no results: an NFS NULL reply. */
static void rpc_reply(struct words *w, uint32_t xid)
{
	w32(w, xid);
	w32(w, 1); /* REPLY */
	w32(w, 0); /* MSG_ACCEPTED */
	w32(w, 0);
	w32(w, 0);
	w32(w, 0);
}

enum step_kind { EXPECT, QUIET };

struct step {
	const char *what;
	struct words msg;
	enum step_kind kind;
	struct words want;
	bool p0_call;	  /* msg is built when sent: RDMA2_NOMSG, the message in a P0 chunk */
	bool p0_as_reply; /* ... and that message is an RPC REPLY */
	uint32_t p0_xid;
};

static struct step steps[16];
static unsigned nsteps, cur;
static uint32_t credits;
static unsigned linger_s;
static struct event_base *base;
static struct event *timer;
static struct rconn *conn;
static bool backward_mode, closed, established, lingering;
static enum rconn_close_reason close_reason;

static struct step *step_v2_null(uint32_t xid, const char *what)
{
	struct step *s = &steps[nsteps++];

	s->what = what;
	hdr(&s->msg, xid, RPCRDMA_V2, RPCRDMA_MSG);
	lists(&s->msg, CALL);
	rpc_call(&s->msg, xid);
	s->kind = EXPECT;
	hdr(&s->want, xid, RPCRDMA_V2, RPCRDMA_MSG);
	lists(&s->want, REPLY);
	rpc_reply(&s->want, xid);
	return s;
}

/* RDMA2_ERROR with no body: BAD_HEADER or INVAL_OPTION, Version Two. */
static void want_v2_error(struct step *s, uint32_t xid, uint32_t err)
{
	s->kind = EXPECT;
	hdr(&s->want, xid, RPCRDMA_V2, RPCRDMA_ERROR);
	w32(&s->want, err);
}

static void build_responder_steps(void)
{
	struct step *s;

	step_v2_null(0x2001, "an NFS NULL call in RDMA2_MSG is answered in RDMA2_MSG, REPLY");

	s = &steps[nsteps++];
	s->what = "the same call in Version One is answered in Version One";
	hdr(&s->msg, 0x2002, RPCRDMA_V1, RPCRDMA_MSG);
	lists(&s->msg, -1);
	rpc_call(&s->msg, 0x2002);
	s->kind = EXPECT;
	hdr(&s->want, 0x2002, RPCRDMA_V1, RPCRDMA_MSG);
	lists(&s->want, -1);
	rpc_reply(&s->want, 0x2002);

	s = &steps[nsteps++];
	s->what = "a Version Three header gets ERR_VERS (1, 2)";
	hdr(&s->msg, 0x2003, 3, RPCRDMA_MSG);
	lists(&s->msg, CALL);
	rpc_call(&s->msg, 0x2003);
	s->kind = EXPECT;
	hdr(&s->want, 0x2003, RPCRDMA_V1, RPCRDMA_ERROR);
	w32(&s->want, RPCRDMA_ERR_VERS);
	w32(&s->want, 1);
	w32(&s->want, 2);

	s = &steps[nsteps++];
	s->what = "RDMA2_OPTIONAL of an unknown type gets RDMA2_ERR_INVAL_OPTION with its XID";
	hdr(&s->msg, 0x2004, RPCRDMA_V2, RPCRDMA2_OPTIONAL);
	w32(&s->msg, CALL);
	w32(&s->msg, 0x77); /* rdma_opttype */
	w32(&s->msg, 5);    /* rdma_optinfo: 5 bytes and 3 of pad */
	w32(&s->msg, 0x01020304);
	w32(&s->msg, 0x05000000);
	want_v2_error(s, 0x2004, RPCRDMA2_ERR_INVAL_OPTION);

	s = &steps[nsteps++];
	s->what = "RDMA2_OPTIONAL from a responder (REPLY) is dropped: no answer";
	hdr(&s->msg, 0x2005, RPCRDMA_V2, RPCRDMA2_OPTIONAL);
	w32(&s->msg, REPLY);
	w32(&s->msg, 0x77);
	w32(&s->msg, 0);
	s->kind = QUIET;

	s = &steps[nsteps++];
	s->what = "RDMA2_OPTIONAL whose info runs past the message gets RDMA2_ERR_BAD_HEADER";
	hdr(&s->msg, 0x2006, RPCRDMA_V2, RPCRDMA2_OPTIONAL);
	w32(&s->msg, CALL);
	w32(&s->msg, 0x77);
	w32(&s->msg, 100);
	w32(&s->msg, 0);
	want_v2_error(s, 0x2006, RPCRDMA2_ERR_BAD_HEADER);

	s = &steps[nsteps++];
	s->what = "RDMA2_MSG saying CALL over an RPC REPLY gets RDMA2_ERR_BAD_HEADER";
	hdr(&s->msg, 0x2007, RPCRDMA_V2, RPCRDMA_MSG);
	lists(&s->msg, CALL);
	rpc_reply(&s->msg, 0x2007);
	want_v2_error(s, 0x2007, RPCRDMA2_ERR_BAD_HEADER);

	s = &steps[nsteps++];
	s->what = "RDMA2_MSG saying REPLY over an RPC CALL is dropped: no answer";
	hdr(&s->msg, 0x2008, RPCRDMA_V2, RPCRDMA_MSG);
	lists(&s->msg, REPLY);
	rpc_call(&s->msg, 0x2008);
	s->kind = QUIET;

	s = &steps[nsteps++];
	s->what = "RDMA2_MSG with direction 7 gets RDMA2_ERR_BAD_HEADER";
	hdr(&s->msg, 0x2009, RPCRDMA_V2, RPCRDMA_MSG);
	lists(&s->msg, 7);
	rpc_call(&s->msg, 0x2009);
	want_v2_error(s, 0x2009, RPCRDMA2_ERR_BAD_HEADER);

	s = &steps[nsteps++];
	s->what = "RDMA2_ERROR from the requester is dropped: no answer";
	hdr(&s->msg, 0x200a, RPCRDMA_V2, RPCRDMA_ERROR);
	w32(&s->msg, RPCRDMA2_ERR_BAD_HEADER);
	s->kind = QUIET;

	s = &steps[nsteps++];
	s->what = "RDMA2_MSG without an RPC message gets RDMA2_ERR_BAD_HEADER";
	hdr(&s->msg, 0x200b, RPCRDMA_V2, RPCRDMA_MSG);
	lists(&s->msg, CALL);
	want_v2_error(s, 0x200b, RPCRDMA2_ERR_BAD_HEADER);

	s = &steps[nsteps++];
	s->what = "a call in a Position-Zero Read chunk (RDMA2_NOMSG) is pulled and answered";
	s->p0_call = true;
	s->p0_xid = 0x200c;
	s->kind = EXPECT;
	hdr(&s->want, 0x200c, RPCRDMA_V2, RPCRDMA_MSG);
	lists(&s->want, REPLY);
	rpc_reply(&s->want, 0x200c);

	s = &steps[nsteps++];
	s->what = "RDMA2_NOMSG saying CALL over an RPC REPLY in its Position-Zero chunk gets "
		  "RDMA2_ERR_BAD_HEADER";
	s->p0_call = true;
	s->p0_as_reply = true;
	s->p0_xid = 0x200e;
	want_v2_error(s, 0x200e, RPCRDMA2_ERR_BAD_HEADER);

	step_v2_null(0x200d, "and the connection still serves: NFS NULL in RDMA2_MSG answered");

	for (unsigned i = 0; i < nsteps; i++) {
		if (steps[i].kind == EXPECT)
			xdr_put32(steps[i].want.b + 8, credits);
	}
}

static void arm_timer(unsigned seconds)
{
	struct timeval tv = { (time_t)seconds, 0 };

	evtimer_add(timer, &tv);
}

static void finish(void)
{
	if (linger_s && !lingering && !closed) {
		lingering = true;
		printf("lingering %u s\n", linger_s);
		fflush(stdout);
		arm_timer(linger_s);
		return;
	}
	if (conn && !closed)
		rconn_close(conn);
	else
		event_base_loopexit(base, NULL);
}

static void dump(const char *what, const uint8_t *b, uint32_t len)
{
	printf("  %s (%u bytes):", what, len);
	for (uint32_t i = 0; i < len && i < 96; i += 4)
		printf(" %08x", len - i >= 4 ? xdr_get32(b + i) : 0);
	printf("\n");
}

enum { P0_MAX = 2 };
static struct gw_buf *p0_bufs[P0_MAX];
static unsigned np0;

/*
 * RDMA2_NOMSG, direction CALL, a Read list holding a whole message at
 * position zero: the step's NULL call, or an RPC reply in its place.
 */
static bool build_p0_call(const struct step *s, struct words *w)
{
	struct words call = { .len = 0 };
	struct rconn_exposure exp;

	if (s->p0_as_reply)
		rpc_reply(&call, s->p0_xid);
	else
		rpc_call(&call, s->p0_xid);
	if (np0 == P0_MAX)
		return false;
	struct gw_buf *b = rdma_pool_alloc(rdma_dev_pool(rconn_device(conn)), MSG_MAX);
	if (!b)
		return false;
	p0_bufs[np0++] = b;
	memcpy(b->base, call.b, call.len);
	if (rconn_expose(conn, b, 0, call.len, RCONN_REMOTE_READ, &exp) != 0)
		return false;
	hdr(w, s->p0_xid, RPCRDMA_V2, RPCRDMA_NOMSG);
	w32(w, CALL);
	w_p0_lists(w, exp.rkey, call.len, exp.addr);
	return true;
}

static void run_step(void)
{
	if (cur == nsteps) {
		finish();
		return;
	}
	struct step *s = &steps[cur];
	if (s->p0_call && !build_p0_call(s, &s->msg)) {
		CHECK(0, "%s: call exposed", s->what);
		finish();
		return;
	}
	if (!peer_send(conn, &s->msg)) {
		CHECK(0, "%s: sent", s->what);
		finish();
		return;
	}
	arm_timer(s->kind == QUIET ? QUIET_S : ANSWER_S);
}

static void step_recv(struct gw_buf *buf, uint32_t len)
{
	if (cur >= nsteps) {
		CHECK(0, "no answer after the last step");
		dump("got", buf->base, len);
		gw_buf_put(buf);
		return;
	}
	struct step *s = &steps[cur];
	evtimer_del(timer);
	bool same =
		s->kind == EXPECT && len == s->want.len && memcmp(buf->base, s->want.b, len) == 0;
	CHECK(same, "%s", s->what);
	if (!same) {
		dump("got", buf->base, len);
		if (s->kind == EXPECT)
			dump("want", s->want.b, s->want.len);
	}
	gw_buf_put(buf);
	cur++;
	run_step();
}

/* ---- MODE backward ---- */

static unsigned bc_answered;
static bool bc_first_done;

/* A Version Two backward call: RDMA2_MSG, CALL, credits asked, no chunks, the RPC XID, CALL. */
static bool bc_is_v2_call(const uint8_t *b, uint32_t len, uint32_t *xid)
{
	if (len < RPCRDMA2_HDR_MIN_SIZE + 8)
		return false;
	*xid = xdr_get32(b);
	return xdr_get32(b + 4) == RPCRDMA_V2 && xdr_get32(b + 8) != 0 &&
	       xdr_get32(b + 12) == RPCRDMA_MSG && xdr_get32(b + 16) == CALL &&
	       xdr_get32(b + 20) == 0 && xdr_get32(b + 24) == 0 && xdr_get32(b + 28) == 0 &&
	       xdr_get32(b + 32) == *xid && xdr_get32(b + 36) == CALL;
}

static void bc_recv(struct gw_buf *buf, uint32_t len)
{
	if (!bc_first_done) {
		/* the NULL call that made the connection Version Two */
		struct step *s = &steps[0];
		bool same = len == s->want.len && memcmp(buf->base, s->want.b, len) == 0;
		CHECK(same, "%s", s->what);
		if (!same)
			dump("got", buf->base, len);
		gw_buf_put(buf);
		bc_first_done = true;
		evtimer_del(timer);
		arm_timer(BC_WAIT_S); /* the test server calls back now */
		return;
	}
	uint32_t xid = 0;
	bool ok = bc_is_v2_call(buf->base, len, &xid);
	CHECK(ok, "backward call %#x is RDMA2_MSG, direction CALL, no chunks, RPC CALL, same XID",
	      xid);
	if (!ok)
		dump("got", buf->base, len);
	gw_buf_put(buf);

	struct words w;
	hdr(&w, xid, RPCRDMA_V2, RPCRDMA_MSG);
	xdr_put32(w.b + 8, 4); /* backward credits granted */
	lists(&w, REPLY);
	rpc_reply(&w, xid);
	CHECK(peer_send(conn, &w), "backward reply %#x sent in RDMA2_MSG, direction REPLY", xid);
	if (++bc_answered == BC_TOTAL) {
		evtimer_del(timer);
		arm_timer(QUIET_S); /* the replies reach the test server */
	}
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	if (lingering) {
		finish();
		return;
	}
	if (backward_mode) {
		CHECK(bc_answered == BC_TOTAL, "%u backward calls arrived (%d expected)",
		      bc_answered, BC_TOTAL);
		finish();
		return;
	}
	struct step *s = &steps[cur];
	CHECK(s->kind == QUIET, "%s (no answer within %d s)", s->what,
	      s->kind == QUIET ? QUIET_S : ANSWER_S);
	cur++;
	run_step();
}

static void on_recv(struct rconn *c, void *owner, struct gw_buf *buf, uint32_t len, uint32_t inv)
{
	(void)c;
	(void)owner;
	(void)inv;
	if (lingering) {
		CHECK(0, "nothing arrives while lingering");
		dump("got", buf->base, len);
		gw_buf_put(buf);
		return;
	}
	if (backward_mode)
		bc_recv(buf, len);
	else
		step_recv(buf, len);
}

static void on_established(struct rconn *c, void *owner, const uint8_t *pdata, uint8_t len)
{
	struct rpcrdma_privdata pd;

	(void)c;
	(void)owner;
	established = true;
	CHECK(rpcrdma_privdata_decode(pdata, len, &pd),
	      "the gateway sent RFC 8797 private data (send %u, receive %u)", pd.send_size,
	      pd.recv_size);
	if (backward_mode) {
		if (!peer_send(conn, &steps[0].msg)) {
			CHECK(0, "the first NULL call sent");
			finish();
			return;
		}
		arm_timer(ANSWER_S);
		return;
	}
	run_step();
}

static void on_closed(struct rconn *c, void *owner, enum rconn_close_reason reason)
{
	(void)c;
	(void)owner;
	closed = true;
	close_reason = reason;
	evtimer_del(timer);
	event_base_loopexit(base, NULL);
}

static const struct rconn_ops ops = {
	.established = on_established,
	.recv = on_recv,
	.closed = on_closed,
};

int main(int argc, char **argv)
{
	if (argc < 5 || (strcmp(argv[4], "responder") != 0 && strcmp(argv[4], "backward") != 0)) {
		fprintf(stderr, "usage: rdma_v2client ADDR PORT CREDITS responder|backward "
				"[LINGER_S]\n");
		return 2;
	}
	credits = (uint32_t)strtoul(argv[3], NULL, 10);
	backward_mode = strcmp(argv[4], "backward") == 0;
	linger_s = argc >= 6 ? (unsigned)strtoul(argv[5], NULL, 10) : 0;
	if (linger_s > 600)
		linger_s = 600;
	if (backward_mode) {
		step_v2_null(0x2101, "a NULL call in RDMA2_MSG first, answered in RDMA2_MSG");
		xdr_put32(steps[0].want.b + 8, credits);
	} else {
		build_responder_steps();
	}

	base = event_base_new();
	struct rdma_pool_config pc;
	rdma_pool_default_config(&pc, 4096, 65536, 16);
	struct rdma_ctx *ctx = rdma_ctx_create(base, &pc);
	if (!ctx) {
		printf("FAIL: no RDMA\n");
		return 1;
	}
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(atoi(argv[2])) };
	inet_pton(AF_INET, argv[1], &sa.sin_addr);
	struct rconn_params p = {
		.recv_count = 16,
		.recv_size = 4096,
		.send_depth = 32,
		.max_send_sge = 2,
		.nmw = P0_MAX, /* for the Position-Zero calls */
		.responder_resources = 4,
		.connect_timeout_ms = 5000,
	};
	const struct rpcrdma_privdata pd = { .send_size = 4096, .recv_size = 4096 };
	rpcrdma_privdata_encode(p.private_data, &pd);
	p.private_data_len = RPCRDMA_PD_SIZE;
	timer = evtimer_new(base, on_timer, NULL);
	conn = rconn_connect(ctx, (struct sockaddr *)&sa, NULL, &p, &ops, NULL);
	if (!conn) {
		printf("FAIL: cannot start connecting\n");
		return 1;
	}
	event_base_dispatch(base);

	CHECK(established, "connected to the gateway");
	if (backward_mode)
		CHECK(bc_answered == BC_TOTAL, "%u backward calls answered (%d expected)",
		      bc_answered, BC_TOTAL);
	else
		CHECK(cur == nsteps, "every step ran (%u of %u)", cur, nsteps);
	CHECK(closed && close_reason == RCONN_CLOSE_LOCAL,
	      "the connection stayed up until the client closed it (%s)",
	      closed ? rconn_close_reason_str(close_reason) : "still open");
	for (unsigned i = 0; i < np0; i++)
		gw_buf_put(p0_bufs[i]);
	rconn_destroy(conn);
	event_free(timer);
	rdma_ctx_destroy(ctx);
	event_base_free(base);
	return failures ? 1 : 0;
}
