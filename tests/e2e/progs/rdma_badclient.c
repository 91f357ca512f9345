/* SPDX-License-Identifier: MIT */
/*
 * rdma_badclient ADDR PORT CREDITS MODE [ARG...]: an RPC-over-RDMA client that breaks
 * the rules on purpose, against a reverse-mode gateway (RFC 8797 private
 * data, responder resources for the gateway's RDMA Reads). CREDITS is what
 * the gateway grants; every answer must carry it.
 *
 * MODE "errors", one message at a time, each answer checked byte for byte:
 *   1. a Version Two header            -> RDMA_ERROR ERR_VERS, versions 1..1
 *   2. rdma_proc 9                     -> RDMA_ERROR ERR_CHUNK
 *   3. RDMA_NOMSG without chunks       -> RDMA_ERROR ERR_CHUNK
 *   4. RDMA_DONE                       -> nothing for 2 s
 *   5. an NFSv3 NULL call              -> its RPC reply (the connection stays)
 *   6. the NULL call as RDMA_MSGP      -> its RPC reply in an RDMA_MSG
 *   7. the NULL call in a Position-Zero Read chunk (RDMA_NOMSG)
 *                                      -> the gateway RDMA-Reads it, replies
 *   8. an NFSv3 WRITE whose data length says more than the message holds
 *                                      -> RPC reply GARBAGE_ARGS
 *   9. an NFSv3 NULL call again        -> its RPC reply
 * MODE "overrun" [warm]: CREDITS + 1 NULL calls at once, to an upstream that
 * never answers them: the gateway must close the connection. With "warm", an
 * NFS NULL call (XID 0x1f01) must be answered first, so that the upstream
 * connection is known to be up when the client breaks the rules; so also
 * for "writeimm" and "sendinv".
 * MODE "pipelined" [COUNT]: COUNT (3000) NFS NULL calls, CREDITS outstanding
 * at all times: the next goes the moment an answer comes, which may be
 * before the gateway has seen its answer's Send complete. Every call must
 * be answered once, byte for byte with its XID and the grant, and the
 * connection must stay up (a client at full credit is no overrun).
 * MODE "offer" [COUNT]: as "pipelined" (COUNT 16, XIDs from 0x40000000), but each
 * NULL call offers a Reply chunk of OFFER_LEN bytes (the reply fits inline, so
 * the chunk is never used: its handle is made up, and the answer must give it
 * back with length 0). On a route whose
 * max_session_memory holds only two such offers, the gateway must let no more
 * than two calls at a time go upstream, answer every one, and keep the
 * connection (the test upstream sees the concurrency).
 * MODE "timeout" [CALL_TIMEOUT_S]: a NULL call first (answered), then one
 * (XID 0x7001) that the route's upstream never answers: the gateway must
 * close the connection after two call timeouts (it sends the call again
 * after the first), never sooner, at most three times later, and never
 * answer it.
 * MODE "noreads": connect offering no responder resources, so that the
 * gateway could never pull a Read chunk: the connection must be refused.
 * MODE "idle": connect and send nothing, on a route with an idle timeout:
 * the gateway must disconnect the client.
 * MODE "refused": a well-formed connection request that the route must
 * refuse (the client is outside its allowed_clients).
 * MODE "backward": the route's upstream (a test server) sends the client
 * callbacks through the gateway (RFC 8167 backward calls). Each must arrive
 * as RDMA_MSG with three empty lists and the RPC call's own XID. The first
 * is held for 2 s: with the initial backward grant of 1 no second one may
 * arrive meanwhile. It is answered granting 4 backward credits, and the
 * next one answered at once; then three must arrive together before any is
 * answered (the grant of 4 is honoured). The test server checks the replies.
 * MODE "writeimm" [warm]: an RDMA Write With Immediate of no bytes, then an
 * NFS NULL call: the gateway must close the connection without answering.
 * MODE "sendinv" [warm]: the NULL call by Send With Invalidate (remote
 * invalidation was not offered): the same.
 * MODE "halfopen" [COUNT]: COUNT (200) connections from CM ids without a
 * queue pair, so that the CM reports the gateway's answer and waits for an
 * rdma_establish() that never comes; on a route with connect_timeout_s 2
 * the gateway must end each within HALF_END_S of its answer (the timeout,
 * and the time a loaded emulated machine takes to tear 200 down), and an
 * ordinary connection with a NULL call (to PORT2, PORT by default; the
 * reply must grant CREDITS) must work while they are open and after.
 *
 * Prints "ok: ..." or "FAIL: ..." per check and exits 0 only when all hold.
 */
#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>
#include <rdma/rdma_cma.h>

#include "common/log.h"
#include "rdma/privdata.h"
#include "tests/e2e/progs/peer.h"

enum { MSG_MAX = PEER_MSG_MAX, QUIET_S = 2, ANSWER_S = 10, CLOSE_S = 20 };

/* Transport header: fixed words, then (for MSG and NOMSG) three empty lists. */
static void hdr(struct words *w, uint32_t xid, uint32_t vers, uint32_t proc, bool lists)
{
	w->len = 0;
	w32(w, xid);
	w32(w, vers);
	w32(w, 32); /* credits requested */
	w32(w, proc);
	if (lists) {
		w32(w, 0);
		w32(w, 0);
		w32(w, 0);
	}
}

/* An RPC call header with AUTH_NONE. */
static void rpc_call(struct words *w, uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc)
{
	w32(w, xid);
	w32(w, 0); /* CALL */
	w32(w, 2);
	w32(w, prog);
	w32(w, vers);
	w32(w, proc);
	w32(w, 0);
	w32(w, 0);
	w32(w, 0);
	w32(w, 0);
}

/* An accepted RPC reply with AUTH_NONE and accept_stat @stat (no results: NULL or an error). */
static void rpc_reply(struct words *w, uint32_t xid, uint32_t stat)
{
	w32(w, xid);
	w32(w, 1); /* REPLY */
	w32(w, 0); /* MSG_ACCEPTED */
	w32(w, 0);
	w32(w, 0);
	w32(w, stat);
}

enum step_kind { EXPECT, QUIET };

struct step {
	const char *what;
	struct words msg;
	enum step_kind kind;
	struct words want;
	bool p0_call; /* msg is built when sent: the call goes in a Position-Zero Read chunk */
};

static struct step steps[12];
static unsigned nsteps, cur;
static uint32_t credits;
static struct event_base *base;
static struct event *timer;
static struct rconn *conn;
static bool overrun_mode, noreads_mode, refused_mode, backward_mode, idle_mode, closed, established;
static bool violate_mode; /* "writeimm" or "sendinv" */
static bool write_imm;
static bool pipelined_mode, timeout_mode;
static bool offer_mode;	  /* "pipelined", each call offering a Reply chunk */
static bool warm;	  /* a NULL call answered before the mode's own messages */
static bool warm_pending; /* ... and not answered yet */
static enum rconn_close_reason close_reason;
static unsigned replies_seen;

static void build_error_steps(void)
{
	struct step *s;

	s = &steps[nsteps++];
	s->what = "a Version Two header gets ERR_VERS (1, 1)";
	hdr(&s->msg, 0x1001, 2, 0, true);
	rpc_call(&s->msg, 0x1001, 100003, 3, 0);
	s->kind = EXPECT;
	hdr(&s->want, 0x1001, 1, 4, false);
	w32(&s->want, 1);
	w32(&s->want, 1);
	w32(&s->want, 1);

	s = &steps[nsteps++];
	s->what = "an unknown rdma_proc gets ERR_CHUNK";
	hdr(&s->msg, 0x1002, 1, 9, true);
	rpc_call(&s->msg, 0x1002, 100003, 3, 0);
	s->kind = EXPECT;
	hdr(&s->want, 0x1002, 1, 4, false);
	w32(&s->want, 2);

	s = &steps[nsteps++];
	s->what = "RDMA_NOMSG without chunks gets ERR_CHUNK";
	hdr(&s->msg, 0x1003, 1, 1, true);
	s->kind = EXPECT;
	hdr(&s->want, 0x1003, 1, 4, false);
	w32(&s->want, 2);

	s = &steps[nsteps++];
	s->what = "RDMA_DONE is dropped: no answer";
	hdr(&s->msg, 0x1004, 1, 3, false);
	s->kind = QUIET;

	s = &steps[nsteps++];
	s->what = "after RDMA_DONE the connection works: NFS NULL answered";
	hdr(&s->msg, 0x1005, 1, 0, true);
	rpc_call(&s->msg, 0x1005, 100003, 3, 0);
	s->kind = EXPECT;
	hdr(&s->want, 0x1005, 1, 0, true);
	rpc_reply(&s->want, 0x1005, 0);

	s = &steps[nsteps++];
	s->what = "RDMA_MSGP is taken as RDMA_MSG: NFS NULL answered with RDMA_MSG";
	hdr(&s->msg, 0x1008, 1, 2, false);
	w32(&s->msg, 0); /* rdma_align: no padding asked */
	w32(&s->msg, 0); /* rdma_thresh */
	w32(&s->msg, 0); /* the three chunk lists */
	w32(&s->msg, 0);
	w32(&s->msg, 0);
	rpc_call(&s->msg, 0x1008, 100003, 3, 0);
	s->kind = EXPECT;
	hdr(&s->want, 0x1008, 1, 0, true);
	rpc_reply(&s->want, 0x1008, 0);

	s = &steps[nsteps++];
	s->what = "a call in a Position-Zero Read chunk (RDMA_NOMSG) is pulled and answered";
	s->p0_call = true;
	s->kind = EXPECT;
	hdr(&s->want, 0x1009, 1, 0, true);
	rpc_reply(&s->want, 0x1009, 0);

	s = &steps[nsteps++];
	s->what = "an NFS WRITE whose data length lies gets RPC GARBAGE_ARGS";
	hdr(&s->msg, 0x1006, 1, 0, true);
	rpc_call(&s->msg, 0x1006, 100003, 3, 7);
	w32(&s->msg, 8); /* file handle */
	w64(&s->msg, 0x0102030405060708ull);
	w64(&s->msg, 0);    /* offset */
	w32(&s->msg, 1000); /* count */
	w32(&s->msg, 0);    /* UNSTABLE */
	w32(&s->msg, 1000); /* data: 1000 bytes, says the length ... */
	w64(&s->msg, 0);    /* ... but 8 follow */
	s->kind = EXPECT;
	hdr(&s->want, 0x1006, 1, 0, true);
	rpc_reply(&s->want, 0x1006, 4);

	s = &steps[nsteps++];
	s->what = "and the connection still works: NFS NULL answered";
	hdr(&s->msg, 0x1007, 1, 0, true);
	rpc_call(&s->msg, 0x1007, 100003, 3, 0);
	s->kind = EXPECT;
	hdr(&s->want, 0x1007, 1, 0, true);
	rpc_reply(&s->want, 0x1007, 0);

	/* Every answer grants the gateway's credits. */
	for (unsigned i = 0; i < nsteps; i++) {
		if (steps[i].kind == EXPECT)
			xdr_put32(steps[i].want.b + 8, credits);
	}
}

/* ---- sending ---- */

static bool send_words(const struct words *w)
{
	return peer_send(conn, w);
}

static void arm_timer(int seconds)
{
	struct timeval tv = { seconds, 0 };

	evtimer_add(timer, &tv);
}

static void finish(void)
{
	if (conn && !closed)
		rconn_close(conn);
	else
		event_base_loopexit(base, NULL);
}

static struct gw_buf *p0_buf;
static struct rconn_exposure p0_exp;

/*
 * RDMA_NOMSG whose Read list holds the whole call at position zero: an NFS
 * NULL call in our memory, exposed for the gateway to read.
 */
static bool build_p0_call(struct words *w)
{
	struct words call = { .len = 0 };

	rpc_call(&call, 0x1009, 100003, 3, 0);
	p0_buf = rdma_pool_alloc(rdma_dev_pool(rconn_device(conn)), MSG_MAX);
	if (!p0_buf)
		return false;
	memcpy(p0_buf->base, call.b, call.len);
	if (rconn_expose(conn, p0_buf, 0, call.len, RCONN_REMOTE_READ, &p0_exp) != 0)
		return false;
	w->len = 0;
	w32(w, 0x1009);
	w32(w, 1);
	w32(w, 32);
	w32(w, 1); /* RDMA_NOMSG */
	w_p0_lists(w, p0_exp.rkey, call.len, p0_exp.addr);
	return true;
}

static void run_step(void)
{
	if (cur == nsteps) {
		finish();
		return;
	}
	struct step *s = &steps[cur];
	if (s->p0_call && !build_p0_call(&s->msg)) {
		CHECK(0, "%s: call exposed", s->what);
		finish();
		return;
	}
	if (!send_words(&s->msg)) {
		CHECK(0, "%s: sent", s->what);
		finish();
		return;
	}
	arm_timer(s->kind == QUIET ? QUIET_S : ANSWER_S);
}

static void dump(const char *what, const uint8_t *b, uint32_t len)
{
	printf("  %s (%u bytes):", what, len);
	for (uint32_t i = 0; i < len && i < 64; i += 4)
		printf(" %08x", len - i >= 4 ? xdr_get32(b + i) : 0);
	printf("\n");
}

/* ---- MODE backward ---- */

enum { BC_HOLD_S = 2, BC_WAIT_S = 15, BC_GRANT = 4, BC_TOTAL = 5 };

static unsigned bc_phase; /* 0: first call; 1: holding it; 2: the next; 3: three together */
static uint32_t bc_held[BC_TOTAL];
static unsigned bc_nheld, bc_answered;

/* A backward call: RDMA_MSG, Version One, credits asked, no chunks, the RPC XID. */
static bool bc_is_call(const uint8_t *b, uint32_t len, uint32_t *xid)
{
	if (len < 28 + 8)
		return false;
	*xid = xdr_get32(b);
	return xdr_get32(b + 4) == 1 && xdr_get32(b + 8) != 0 && xdr_get32(b + 12) == 0 &&
	       xdr_get32(b + 16) == 0 && xdr_get32(b + 20) == 0 && xdr_get32(b + 24) == 0 &&
	       xdr_get32(b + 28) == *xid && xdr_get32(b + 32) == 0;
}

/* The backward reply: RDMA_MSG granting BC_GRANT backward credits, an accepted NULL reply. */
static void bc_answer(uint32_t xid)
{
	struct words w;

	hdr(&w, xid, 1, 0, true);
	xdr_put32(w.b + 8, BC_GRANT);
	rpc_reply(&w, xid, 0);
	if (!send_words(&w))
		CHECK(0, "backward reply %#x sent", xid);
	bc_answered++;
}

static void bc_answer_held(void)
{
	for (unsigned i = 0; i < bc_nheld; i++)
		bc_answer(bc_held[i]);
	bc_nheld = 0;
}

static void bc_timer(void)
{
	if (bc_phase == 1) {
		CHECK(bc_nheld == 1,
		      "no second backward call while the first is unanswered and "
		      "the grant is 1 (%u outstanding)",
		      bc_nheld);
		bc_answer_held();
		bc_phase = 2;
		arm_timer(BC_WAIT_S);
		return;
	}
	if (bc_phase == 4) {
		finish(); /* the replies have had time to reach the test server */
		return;
	}
	CHECK(0, "backward calls arrived (phase %u, %u answered, %u held)", bc_phase, bc_answered,
	      bc_nheld);
	finish();
}

static void bc_recv(struct gw_buf *buf, uint32_t len)
{
	uint32_t xid = 0;
	bool ok = bc_is_call(buf->base, len, &xid);

	CHECK(ok, "backward call %#x is RDMA_MSG, Version One, no chunks, RPC CALL, same XID", xid);
	if (!ok)
		dump("got", buf->base, len);
	gw_buf_put(buf);
	if (bc_nheld < BC_TOTAL)
		bc_held[bc_nheld++] = xid;
	switch (bc_phase) {
	case 0:
		bc_phase = 1;
		evtimer_del(timer);
		arm_timer(BC_HOLD_S);
		return;
	case 1:
		return; /* counted when the hold ends */
	case 2:
		bc_answer_held();
		bc_phase = 3;
		return;
	case 3:
		if (bc_nheld < 3)
			return;
		CHECK(1, "three backward calls outstanding at once under a grant of %d", BC_GRANT);
		bc_answer_held();
		bc_phase = 4;
		evtimer_del(timer);
		arm_timer(BC_HOLD_S);
		return;
	default:
		CHECK(0, "no backward call beyond the %d expected (%#x)", BC_TOTAL, xid);
	}
}

static void start_mode(void);

/* ---- MODE pipelined ---- */

enum { PIPE_DEFAULT = 3000, PIPE_MAX = 100000, PIPE_XID = 0x30000000 };
enum { OFFER_DEFAULT = 16, OFFER_XID = 0x40000000, OFFER_LEN = 786432, OFFER_HANDLE = 0x0ffe2ed };

static unsigned pipe_total, pipe_sent, pipe_answered, pipe_wrong;
static bool *pipe_done;		/* per call: its answer has come */
static double pipe_t0, pipe_t1; /* the first call sent, the last answer */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint32_t pipe_xid0(void)
{
	return offer_mode ? OFFER_XID : PIPE_XID;
}

/* The next NFS NULL call, XID pipe_xid0() + its number. */
static bool pipe_send_next(void)
{
	struct words w;
	uint32_t xid = pipe_xid0() + pipe_sent;

	hdr(&w, xid, 1, 0, !offer_mode);
	if (offer_mode) {
		w32(&w, 0); /* no Read list */
		w32(&w, 0); /* no Write list */
		w32(&w, 1); /* a Reply chunk of one segment */
		w32(&w, 1);
		w32(&w, OFFER_HANDLE);
		w32(&w, OFFER_LEN);
		w32(&w, 0);
		w32(&w, 0);
	}
	rpc_call(&w, xid, 100003, 3, 0);
	if (!send_words(&w))
		return false;
	pipe_sent++;
	return true;
}

static void pipe_start(void)
{
	unsigned n = credits < pipe_total ? credits : pipe_total;

	pipe_t0 = now_s();
	for (unsigned i = 0; i < n; i++) {
		if (!pipe_send_next()) {
			CHECK(0, "call %u of the first %u sent", i, n);
			finish();
			return;
		}
	}
	arm_timer(ANSWER_S);
}

/*
 * An answer must be the NULL reply to a call still outstanding, granting
 * CREDITS, byte for byte; the next call goes at once, so that CREDITS are
 * outstanding again the moment the gateway may count them.
 */
static void pipe_recv(struct gw_buf *buf, uint32_t len)
{
	struct words want;
	uint32_t xid = len >= 4 ? xdr_get32(buf->base) : 0;
	uint32_t k = xid - pipe_xid0();

	hdr(&want, xid, 1, 0, !offer_mode);
	if (offer_mode) {
		/* Inline, the Reply chunk given back unused: its one segment, length 0. */
		w32(&want, 0);
		w32(&want, 0);
		w32(&want, 1);
		w32(&want, 1);
		w32(&want, OFFER_HANDLE);
		w32(&want, 0);
		w32(&want, 0);
		w32(&want, 0);
	}
	xdr_put32(want.b + 8, credits);
	rpc_reply(&want, xid, 0);
	bool ok = k < pipe_sent && !pipe_done[k] && len == want.len &&
		  memcmp(buf->base, want.b, len) == 0;
	if (!ok && pipe_wrong++ == 0) {
		printf("  the first wrong answer (xid %#x, %u sent):\n", xid, pipe_sent);
		dump("got", buf->base, len);
	}
	gw_buf_put(buf);
	if (ok) {
		pipe_done[k] = true;
		pipe_answered++;
	}
	evtimer_del(timer);
	if (pipe_answered == pipe_total) {
		pipe_t1 = now_s();
		finish();
		return;
	}
	if (pipe_sent < pipe_total && !pipe_send_next()) {
		CHECK(0, "call %u sent", pipe_sent);
		finish();
		return;
	}
	arm_timer(ANSWER_S);
}

/* ---- MODE timeout ---- */

enum { TIMEOUT_XID = 0x7001 };

static unsigned call_timeout_s; /* the route's call_timeout_s */
static double timeout_t0, timeout_t_closed;

/*
 * One NFS NULL call the upstream never answers (its XID is in the test
 * server's silent range): the gateway sends it again on a new upstream
 * connection after call_timeout, and closes this connection after the
 * second call_timeout; no answer ever comes.
 */
static void timeout_start(void)
{
	struct words w;

	hdr(&w, TIMEOUT_XID, 1, 0, true);
	rpc_call(&w, TIMEOUT_XID, 100003, 3, 0);
	timeout_t0 = now_s();
	CHECK(send_words(&w), "a call the upstream never answers sent (xid %#x)", TIMEOUT_XID);
	arm_timer(6 * call_timeout_s + CLOSE_S); /* three times the two timeouts, and slack */
}

/* ---- the NULL call before a mode's own messages ---- */

enum { WARM_XID = 0x1f01 };

static void warm_send(void)
{
	struct words w;

	hdr(&w, WARM_XID, 1, 0, true);
	rpc_call(&w, WARM_XID, 100003, 3, 0);
	warm_pending = true;
	if (!send_words(&w)) {
		CHECK(0, "a NULL call sent first");
		finish();
		return;
	}
	arm_timer(ANSWER_S);
}

static bool warm_recv(struct gw_buf *buf, uint32_t len)
{
	struct words want;

	hdr(&want, WARM_XID, 1, 0, true);
	xdr_put32(want.b + 8, credits);
	rpc_reply(&want, WARM_XID, 0);
	bool same = len == want.len && memcmp(buf->base, want.b, len) == 0;
	CHECK(same, "a NULL call first is answered: the upstream connection is up");
	if (!same)
		dump("got", buf->base, len);
	gw_buf_put(buf);
	warm_pending = false;
	evtimer_del(timer);
	return same;
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	if (backward_mode) {
		bc_timer();
		return;
	}
	if (warm_pending) {
		CHECK(0, "the NULL call sent first answered within %d s", ANSWER_S);
		finish();
		return;
	}
	if (pipelined_mode) {
		CHECK(0, "an answer within %d s (%u of %u answered, %u sent)", ANSWER_S,
		      pipe_answered, pipe_total, pipe_sent);
		finish();
		return;
	}
	if (timeout_mode) {
		CHECK(0, "the gateway closed the connection within %u s",
		      6 * call_timeout_s + CLOSE_S);
		finish();
		return;
	}
	if (overrun_mode || idle_mode || violate_mode) {
		CHECK(0, "the gateway closed the connection within %d s", CLOSE_S);
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
	replies_seen++;
	if (backward_mode) {
		bc_recv(buf, len);
		return;
	}
	if (warm_pending) {
		if (warm_recv(buf, len))
			start_mode();
		else
			finish();
		return;
	}
	if (pipelined_mode) {
		pipe_recv(buf, len);
		return;
	}
	if (overrun_mode || violate_mode || timeout_mode || cur >= nsteps) {
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

/* ---- MODE writeimm, sendinv ---- */

/*
 * Post what the gateway must refuse, then an ordinary NFS NULL call that
 * a gateway taking the first for a message would answer: an RDMA Write
 * With Immediate of no bytes (no rkey is needed for that, and the gateway
 * exposes nothing to a client), or the call itself by Send With Invalidate
 * (remote invalidation was not offered; the gateway exposes no memory, so
 * the rkey named can only be a stranger's).
 */
static void violate(void)
{
	struct words w;
	struct ibv_qp *qp = rconn_qp(conn);

	hdr(&w, 0x4001, 1, 0, true);
	rpc_call(&w, 0x4001, 100003, 3, 0);
	if (write_imm) {
		struct ibv_send_wr wr = { .wr_id = 0, /* unsignaled: reported only if it fails */
					  .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
					  .imm_data = htonl(0x4001) };
		struct ibv_send_wr *bad;
		CHECK(qp && ibv_post_send(qp, &wr, &bad) == 0,
		      "an RDMA Write With Immediate of no bytes posted");
		CHECK(send_words(&w), "an NFS NULL call sent after it");
		return;
	}
	struct peer_sent *sent = calloc(1, sizeof(*sent));
	if (sent)
		sent->buf = rdma_pool_alloc(rdma_dev_pool(rconn_device(conn)), MSG_MAX);
	if (!sent || !sent->buf) {
		free(sent);
		CHECK(0, "a buffer for the call");
		return;
	}
	memcpy(sent->buf->base, w.b, w.len);
	sent->wr.done = peer_sent_done;
	struct ibv_sge sge = { (uintptr_t)sent->buf->base, w.len, sent->buf->lkey };
	int err = rconn_send(conn, &sge, 1, 0x1234, &sent->wr);
	CHECK(err == 0, "an NFS NULL call sent by Send With Invalidate of rkey 0x1234");
	if (err) {
		gw_buf_put(sent->buf);
		free(sent);
	}
}

/* What the mode sends once the connection is up (after the NULL call first, if asked). */
static void start_mode(void)
{
	if (idle_mode) {
		arm_timer(CLOSE_S);
		return;
	}
	if (violate_mode) {
		violate();
		arm_timer(CLOSE_S);
		return;
	}
	if (pipelined_mode) {
		pipe_start();
		return;
	}
	if (timeout_mode) {
		timeout_start();
		return;
	}
	if (!overrun_mode) {
		run_step();
		return;
	}
	/* More calls than granted, at once; the upstream answers none of them. */
	unsigned n = credits + 1, sent = 0;
	for (unsigned i = 0; i < n; i++) {
		struct words w;
		hdr(&w, 0x2000 + i, 1, 0, true);
		rpc_call(&w, 0x2000 + i, 100003, 3, 0);
		sent += send_words(&w);
	}
	CHECK(sent == n, "%u calls sent with %u credits granted", sent, credits);
	arm_timer(CLOSE_S);
}

static void on_established(struct rconn *c, void *owner, const uint8_t *pdata, uint8_t len)
{
	struct rpcrdma_privdata pd;

	established = true;
	CHECK(rpcrdma_privdata_decode(pdata, len, &pd),
	      "the gateway sent RFC 8797 private data (send %u, receive %u)", pd.send_size,
	      pd.recv_size);
	if (backward_mode) {
		arm_timer(BC_WAIT_S); /* the test server calls once the upstream is connected */
		return;
	}
	if (warm) {
		warm_send();
		return;
	}
	start_mode();
}

static void on_closed(struct rconn *c, void *owner, enum rconn_close_reason reason)
{
	timeout_t_closed = now_s();
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

/* ---- MODE halfopen ---- */

enum { HALF_MAX = 1000, HALF_SETUP_S = 20, HALF_END_S = 15 };

enum half_state { H_ADDR, H_ROUTE, H_CONNECTING, H_HALF_OPEN, H_ENDED, H_FAILED };

struct half {
	struct rdma_cm_id *id;
	enum half_state state;
	double t_resp, t_end;
};

static struct half *halves;
static unsigned nhalves;
static struct rdma_conn_param half_param;

static unsigned half_count(enum half_state st)
{
	unsigned n = 0;

	for (unsigned i = 0; i < nhalves; i++)
		n += halves[i].state == st;
	return n;
}

static void half_event(struct rdma_cm_event *ev)
{
	struct half *h = ev->id->context;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		h->state = H_ROUTE;
		if (rdma_resolve_route(h->id, 2000) != 0)
			h->state = H_FAILED;
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		h->state = H_CONNECTING;
		/* No queue pair: the CM reports the answer and waits for rdma_establish(). */
		/*
		 * A queue pair number no real queue pair has here: the CM refuses
		 * a second request from one (remote QPN, CA) as a stale connection.
		 */
		half_param.qp_num = 0xc00000 + (uint32_t)(h - halves);
		if (rdma_connect(h->id, &half_param) != 0)
			h->state = H_FAILED;
		break;
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		h->state = H_HALF_OPEN;
		h->t_resp = now_s();
		break;
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		if (h->state == H_HALF_OPEN) {
			h->state = H_ENDED;
			h->t_end = now_s();
		} else if (h->state != H_ENDED) {
			printf("  connection %u: %s before the answer\n", (unsigned)(h - halves),
			       rdma_event_str(ev->event));
			h->state = H_FAILED;
		}
		break;
	default:
		break;
	}
}

/* Take CM events until @done(), or until @until (monotonic seconds). */
static void half_pump(struct rdma_event_channel *ch, double until, bool (*done)(void))
{
	while (!done() && now_s() < until) {
		struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		struct rdma_cm_event *ev;
		while (rdma_get_cm_event(ch, &ev) == 0) {
			half_event(ev);
			rdma_ack_cm_event(ev);
			struct pollfd again = { .fd = ch->fd, .events = POLLIN };
			if (poll(&again, 1, 0) <= 0)
				break;
		}
	}
}

static bool half_all_answered(void)
{
	return half_count(H_HALF_OPEN) + half_count(H_ENDED) + half_count(H_FAILED) == nhalves;
}

static bool half_all_ended(void)
{
	return half_count(H_HALF_OPEN) == 0;
}

/* One ordinary connection with one NFS NULL call on it; true when it was answered. */
static bool normal_session(struct rdma_ctx *ctx, const struct sockaddr_in *sa,
			   const struct rconn_params *p, uint32_t xid, const char *what)
{
	struct step *s = &steps[0];

	nsteps = 1;
	cur = 0;
	closed = established = false;
	s->what = what;
	s->kind = EXPECT;
	hdr(&s->msg, xid, 1, 0, true);
	rpc_call(&s->msg, xid, 100003, 3, 0);
	hdr(&s->want, xid, 1, 0, true);
	xdr_put32(s->want.b + 8, credits);
	rpc_reply(&s->want, xid, 0);
	int failed = failures;
	conn = rconn_connect(ctx, (const struct sockaddr *)sa, NULL, p, &ops, NULL);
	if (!conn) {
		CHECK(0, "%s: connecting", what);
		return false;
	}
	event_base_dispatch(base);
	bool ok = established && cur == nsteps && failures == failed;
	rconn_destroy(conn);
	conn = NULL;
	return ok;
}

/*
 * @n connections that never finish: each is answered by the gateway (the
 * CM's CONNECT_RESPONSE) and never established. The gateway must end each
 * within its connect timeout (HALF_END_S allows twice a 2 s timeout and
 * the CM's slack); an ordinary client must connect and be answered while
 * they are open and after.
 */
static void half_open(struct rdma_ctx *ctx, const struct sockaddr_in *sa,
		      const struct sockaddr_in *ordinary, const struct rconn_params *p, unsigned n)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	const struct rpcrdma_privdata pd = { .send_size = 4096, .recv_size = 4096 };
	uint8_t priv[RPCRDMA_PD_SIZE];

	halves = calloc(n, sizeof(*halves));
	if (!ch || !halves) {
		CHECK(0, "an event channel, %u connections", n);
		return;
	}
	rpcrdma_privdata_encode(priv, &pd);
	half_param = (struct rdma_conn_param){ .private_data = priv,
					       .private_data_len = RPCRDMA_PD_SIZE,
					       .responder_resources = 4,
					       .initiator_depth = 4,
					       .retry_count = 7,
					       .rnr_retry_count = 7 };
	double t0 = now_s();
	for (nhalves = 0; nhalves < n; nhalves++) {
		struct half *h = &halves[nhalves];
		if (rdma_create_id(ch, &h->id, h, RDMA_PS_TCP) != 0 ||
		    rdma_resolve_addr(h->id, NULL, (struct sockaddr *)sa, 2000) != 0) {
			h->state = H_FAILED;
			if (h->id)
				nhalves++;
			break;
		}
	}
	half_pump(ch, t0 + HALF_SETUP_S, half_all_answered);
	unsigned open = half_count(H_HALF_OPEN) + half_count(H_ENDED);
	CHECK(open == n, "%u of %u connections answered by the gateway and left half-open (%.1f s)",
	      open, n, now_s() - t0);

	half_pump(ch, now_s() + 0.2, half_all_ended); /* the latest news first */
	unsigned still = half_count(H_HALF_OPEN);
	/*
	 * Tearing down a queue pair takes rxe tens of milliseconds under
	 * emulation, and the half-open connections end together: the
	 * ordinary client may wait seconds for its turn, which is no failure.
	 */
	struct rconn_params patient = *p;
	patient.connect_timeout_ms = 20000;
	bool during =
		normal_session(ctx, ordinary, &patient, 0x1101, "an ordinary client meanwhile");
	CHECK(during && still > 0,
	      "an ordinary client connected and was answered while %u connections were "
	      "half-open",
	      still);

	half_pump(ch, now_s() + HALF_END_S + 2, half_all_ended);
	double worst = 0;
	unsigned late = 0;
	for (unsigned i = 0; i < nhalves; i++) {
		const struct half *h = &halves[i];
		double t = h->state == H_ENDED ? h->t_end - h->t_resp : 1e9;
		if (h->t_resp == 0)
			continue;
		if (t > worst)
			worst = t;
		late += t > HALF_END_S;
	}
	CHECK(late == 0 && open > 0,
	      "the gateway ended every half-open connection within %d s (%u not; the slowest "
	      "after %.1f s)",
	      HALF_END_S, late, worst < 1e9 ? worst : -1.0);

	CHECK(normal_session(ctx, ordinary, p, 0x1102, "an ordinary client after"),
	      "an ordinary client connected and was answered after");
	for (unsigned i = 0; i < nhalves; i++)
		rdma_destroy_id(halves[i].id);
	free(halves);
	rdma_destroy_event_channel(ch);
}

int main(int argc, char **argv)
{
	static const char *const modes[] = { "errors",	 "overrun",   "noreads",  "refused",
					     "backward", "idle",      "writeimm", "sendinv",
					     "halfopen", "pipelined", "timeout",  "offer" };
	bool known = false;
	for (unsigned i = 0; argc >= 5 && i < sizeof(modes) / sizeof(modes[0]); i++)
		known |= strcmp(argv[4], modes[i]) == 0;
	const char *mode = known ? argv[4] : "";
	bool halfopen_mode = strcmp(mode, "halfopen") == 0;
	offer_mode = strcmp(mode, "offer") == 0;
	pipelined_mode = offer_mode || strcmp(mode, "pipelined") == 0;
	timeout_mode = strcmp(mode, "timeout") == 0;
	overrun_mode = strcmp(mode, "overrun") == 0;
	write_imm = strcmp(mode, "writeimm") == 0;
	violate_mode = write_imm || strcmp(mode, "sendinv") == 0;
	/* Modes that break the rules may first make sure the upstream connection is up. */
	warm = timeout_mode ||
	       ((overrun_mode || violate_mode) && argc == 6 && strcmp(argv[5], "warm") == 0);
	unsigned max_args = halfopen_mode ? 7 : pipelined_mode || timeout_mode || warm ? 6 : 5;
	if (!known || argc > (int)max_args) {
		fprintf(stderr,
			"usage: rdma_badclient ADDR PORT CREDITS "
			"errors|noreads|refused|backward|idle\n"
			"       rdma_badclient ADDR PORT CREDITS overrun|writeimm|sendinv [warm]\n"
			"       rdma_badclient ADDR PORT CREDITS halfopen [COUNT [PORT2]]\n"
			"       rdma_badclient ADDR PORT CREDITS pipelined|offer [COUNT]\n"
			"       rdma_badclient ADDR PORT CREDITS timeout [CALL_TIMEOUT_S]\n");
		return 2;
	}
	unsigned half_n = argc >= 6 ? (unsigned)strtoul(argv[5], NULL, 10) : 200;
	if (half_n == 0 || half_n > HALF_MAX)
		half_n = 200;
	unsigned pipe_default = offer_mode ? OFFER_DEFAULT : PIPE_DEFAULT;
	pipe_total = argc >= 6 ? (unsigned)strtoul(argv[5], NULL, 10) : pipe_default;
	if (pipe_total == 0 || pipe_total > PIPE_MAX)
		pipe_total = pipe_default;
	call_timeout_s = argc >= 6 ? (unsigned)strtoul(argv[5], NULL, 10) : 2;
	if (call_timeout_s == 0 || call_timeout_s > 60)
		call_timeout_s = 2;
	credits = (uint32_t)strtoul(argv[3], NULL, 10);
	noreads_mode = strcmp(mode, "noreads") == 0;
	backward_mode = strcmp(mode, "backward") == 0;
	refused_mode = strcmp(mode, "refused") == 0;
	idle_mode = strcmp(mode, "idle") == 0;
	if (strcmp(mode, "errors") == 0)
		build_error_steps();
	if (pipelined_mode) {
		pipe_done = calloc(pipe_total, sizeof(*pipe_done));
		if (!pipe_done || credits == 0 || credits > 1024) {
			printf("FAIL: %u calls with %u credits\n", pipe_total, credits);
			return 1;
		}
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
		/* Room for every answer to calls at full credit. */
		.recv_count = pipelined_mode ? credits + 16 : 16,
		.recv_size = 4096,
		.send_depth = 2 * credits + 16,
		.max_send_sge = 2,
		.nmw = 2,				     /* for the Position-Zero call */
		.responder_resources = noreads_mode ? 0 : 4, /* the gateway's RDMA Reads at us */
		.connect_timeout_ms = 5000,
	};
	const struct rpcrdma_privdata pd = { .remote_inv = false,
					     .send_size = 4096,
					     .recv_size = 4096 };
	rpcrdma_privdata_encode(p.private_data, &pd);
	p.private_data_len = RPCRDMA_PD_SIZE;
	timer = evtimer_new(base, on_timer, NULL);
	if (halfopen_mode) {
		struct sockaddr_in ordinary = sa;
		if (argc == 7)
			ordinary.sin_port = htons(atoi(argv[6]));
		half_open(ctx, &sa, &ordinary, &p, half_n);
		event_free(timer);
		rdma_ctx_destroy(ctx);
		event_base_free(base);
		return failures ? 1 : 0;
	}
	conn = rconn_connect(ctx, (struct sockaddr *)&sa, NULL, &p, &ops, NULL);
	if (!conn) {
		printf("FAIL: cannot start connecting\n");
		return 1;
	}
	event_base_dispatch(base);

	if (noreads_mode || refused_mode) {
		CHECK(!established && closed && close_reason == RCONN_CLOSE_REJECTED,
		      "%s is refused (%s)",
		      noreads_mode ? "a client that allows no RDMA Reads"
				   : "a client outside the route's allowed_clients",
		      closed ? rconn_close_reason_str(close_reason) : "still open");
		rconn_destroy(conn);
		event_free(timer);
		rdma_ctx_destroy(ctx);
		event_base_free(base);
		return failures ? 1 : 0;
	}
	CHECK(established, "connected to the gateway");
	if (backward_mode) {
		CHECK(bc_answered == BC_TOTAL, "%u backward calls answered (%d expected)",
		      bc_answered, BC_TOTAL);
	} else if (idle_mode) {
		CHECK(closed && close_reason == RCONN_CLOSE_DISCONNECTED,
		      "the gateway disconnected the idle client (%s)",
		      closed ? rconn_close_reason_str(close_reason) : "still open");
	} else if (violate_mode) {
		CHECK(closed && close_reason != RCONN_CLOSE_LOCAL &&
			      replies_seen == (warm ? 1u : 0u),
		      "the gateway closed the connection after %s, and answered nothing (%s, %u "
		      "answers)",
		      write_imm ? "the Write With Immediate" : "the Send With Invalidate",
		      closed ? rconn_close_reason_str(close_reason) : "still open", replies_seen);
	} else if (pipelined_mode) {
		double t = (pipe_t1 > 0 ? pipe_t1 : now_s()) - pipe_t0;
		CHECK(pipe_answered == pipe_total && pipe_wrong == 0,
		      "%u NULL calls with %u outstanding at a time: %u answered, each once with "
		      "its XID (%u wrong; %.1f s, %.0f calls/s)",
		      pipe_total, credits, pipe_answered, pipe_wrong, t,
		      t > 0 ? pipe_answered / t : 0.0);
		CHECK(closed && close_reason == RCONN_CLOSE_LOCAL,
		      "the connection stayed up until the client closed it (%s)",
		      closed ? rconn_close_reason_str(close_reason) : "still open");
	} else if (timeout_mode) {
		double t = timeout_t_closed - timeout_t0, lo = 2.0 * call_timeout_s - 0.2,
		       hi = 3 * 2.0 * call_timeout_s;
		CHECK(closed && close_reason == RCONN_CLOSE_DISCONNECTED && replies_seen == 1,
		      "the gateway disconnected the client whose call went unanswered, and "
		      "answered it nothing (%s, %u answers besides the first call's)",
		      closed ? rconn_close_reason_str(close_reason) : "still open",
		      replies_seen - 1);
		CHECK(closed && t >= lo && t <= hi,
		      "after two call timeouts of %u s: %.1f s after the call (%.1f..%.1f allowed)",
		      call_timeout_s, closed ? t : -1.0, lo, hi);
	} else if (overrun_mode) {
		CHECK(closed && close_reason == RCONN_CLOSE_DISCONNECTED,
		      "the gateway disconnected the client that overran its credits (%s, %u "
		      "answers)",
		      closed ? rconn_close_reason_str(close_reason) : "still open", replies_seen);
	} else {
		CHECK(cur == nsteps, "every step ran (%u of %u)", cur, nsteps);
		CHECK(closed && close_reason == RCONN_CLOSE_LOCAL,
		      "the connection stayed up until the client closed it (%s)",
		      closed ? rconn_close_reason_str(close_reason) : "still open");
	}
	/* The connection is closed: its windows are gone with the queue pair. */
	if (p0_buf)
		gw_buf_put(p0_buf);
	rconn_destroy(conn);
	event_free(timer);
	rdma_ctx_destroy(ctx);
	event_base_free(base);
	return failures ? 1 : 0;
}
