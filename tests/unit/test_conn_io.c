/* SPDX-License-Identifier: MIT */
/*
 * rdma/conn_io.c's send queue, against a provider whose post_send records
 * what it is given (ibv_post_send() calls the provider through the
 * context's ops, so a fake context stands in for a device):
 *  - a window's bind waits for the next post and goes in one ibv_post_send()
 *    with the Send that advertises it (one doorbell: on Soft-RoCE, one
 *    write() system call instead of two), unsignaled, before it;
 *  - the provider reads the rkey a bind replaces from ibv_mw.rkey when the
 *    bind is posted: it still holds the old rkey then, the new one after;
 *  - a window bound again before its first bind was posted, and a full
 *    batch of binds, post what waits first, in order;
 *  - a fence posts the binds waiting with it, then its invalidations;
 *  - the send queue space a waiting bind takes is counted at once;
 *  - an unsignaled RDMA Write (a reply's data) waits for the reply's Send
 *    the same way, its pieces copied (the caller's list may be gone); one
 *    with more pieces than a waiting Write holds goes at once, behind what
 *    waits.
 *  - a window the peer may still name is withdrawn (rconn_withdraw()):
 *    deallocated, a new window in its place and free, nothing posted; one
 *    whose bind has not been posted is refused (-EBUSY, nothing done);
 *    without a new window the slot stays empty and the connection has one
 *    window fewer.
 *
 * And its completion passes, against a CQ whose poll hands out queued
 * completions and whose arming is counted:
 *  - a pass takes at most a budget of completions, leaves the CQ unarmed
 *    and comes back in a later loop pass, until the CQ is found empty;
 *    only then is it armed, and polled once more;
 *  - a completion that comes between the last poll and the arming is taken
 *    by the poll after it;
 *  - once the CQ is empty and armed, nothing more runs (no spinning).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <event2/event.h>
#include <rdma/rdma_cma.h>

#include "common/clock.h"
#include "common/turns.h"
#include "rdma/conn_priv.h"

enum { MAX_POSTS = 8, MAX_CHAIN = 16, NMW = 12 };

struct posted_wr {
	enum ibv_wr_opcode opcode;
	unsigned send_flags;
	uint64_t wr_id;
	uint32_t mw_rkey;  /* BIND_MW: ibv_mw.rkey at the post, the rkey it replaces */
	uint32_t new_rkey; /* BIND_MW: the rkey it binds */
	uint32_t inv_rkey; /* LOCAL_INV */
	uint64_t raddr;	   /* RDMA_WRITE */
	uint32_t rkey;	   /* RDMA_WRITE */
	int num_sge;
	struct ibv_sge sge0; /* the first piece, as the provider reads it */
};

static struct {
	unsigned nposts;
	unsigned len[MAX_POSTS];
	struct posted_wr wr[MAX_POSTS][MAX_CHAIN];
} rec;

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	(void)qp;
	*bad = NULL;
	assert_true(rec.nposts < MAX_POSTS);
	unsigned p = rec.nposts++, n = 0;
	for (; wr; wr = wr->next) {
		assert_true(n < MAX_CHAIN);
		struct posted_wr *w = &rec.wr[p][n++];
		w->opcode = wr->opcode;
		w->send_flags = wr->send_flags;
		w->wr_id = wr->wr_id;
		if (wr->opcode == IBV_WR_BIND_MW) {
			w->mw_rkey = wr->bind_mw.mw->rkey;
			w->new_rkey = wr->bind_mw.rkey;
		} else if (wr->opcode == IBV_WR_LOCAL_INV) {
			w->inv_rkey = wr->invalidate_rkey;
		} else if (wr->opcode == IBV_WR_RDMA_WRITE) {
			w->raddr = wr->wr.rdma.remote_addr;
			w->rkey = wr->wr.rdma.rkey;
		}
		w->num_sge = wr->num_sge;
		if (wr->num_sge > 0)
			w->sge0 = wr->sg_list[0];
	}
	rec.len[p] = n;
	return 0;
}

struct fixture {
	struct ibv_context ctx;
	struct ibv_pd pd;
	struct ibv_mw spare[NMW]; /* what the provider allocates */
	unsigned nspare;
	bool alloc_fails;
	struct ibv_mw *deallocated[NMW];
	unsigned ndeallocated;
	struct ibv_qp qp;
	struct rdma_cm_id id;
	struct ibv_mw ibmw[NMW];
	struct rconn_mw mws[NMW];
	int mr; /* stands for the registration: only its address is used */
	uint8_t mem[4096];
	struct gw_buf buf;
	struct rconn c;
};

static struct fixture fx;

static struct ibv_mw *fake_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	assert_int_equal(type, IBV_MW_TYPE_2);
	if (fx.alloc_fails || fx.nspare == NMW)
		return NULL;
	struct ibv_mw *mw = &fx.spare[fx.nspare];
	*mw = (struct ibv_mw){ .context = pd->context,
			       .pd = pd,
			       .rkey = 0x80000u + 0x100u * fx.nspare,
			       .type = IBV_MW_TYPE_2 };
	fx.nspare++;
	return mw;
}

static int fake_dealloc_mw(struct ibv_mw *mw)
{
	assert_true(fx.ndeallocated < NMW);
	fx.deallocated[fx.ndeallocated++] = mw;
	return 0;
}

static int setup(void **state)
{
	(void)state;
	memset(&rec, 0, sizeof(rec));
	memset(&fx, 0, sizeof(fx));
	fx.ctx.ops.post_send = fake_post_send;
	fx.ctx.ops.alloc_mw = fake_alloc_mw;
	fx.ctx.ops.dealloc_mw = fake_dealloc_mw;
	fx.pd.context = &fx.ctx;
	fx.qp.context = &fx.ctx;
	fx.id.qp = &fx.qp;
	fx.buf = (struct gw_buf){ .base = fx.mem, .size = sizeof(fx.mem), .mr = &fx.mr };
	fx.c.state = RCONN_CONNECTED;
	fx.c.id = &fx.id;
	fx.c.params.send_depth = 64;
	fx.c.params.max_send_sge = 4;
	fx.c.params.nmw = NMW;
	fx.c.mws = fx.mws;
	for (int i = NMW - 1; i >= 0; i--) {
		fx.ibmw[i] = (struct ibv_mw){ .context = &fx.ctx,
					      .pd = &fx.pd,
					      .rkey = 0x1000u * (unsigned)(i + 1),
					      .type = IBV_MW_TYPE_2 };
		fx.mws[i] = (struct rconn_mw){ .mw = &fx.ibmw[i], .rkey = fx.ibmw[i].rkey };
		fx.mws[i].next_free = fx.c.mw_free;
		fx.c.mw_free = &fx.mws[i];
	}
	return 0;
}

static void done_noop(struct rconn_wr *wr, enum ibv_wc_status status)
{
	(void)wr;
	(void)status;
}

static int send_one(struct rconn_wr *wr)
{
	struct ibv_sge sge = { .addr = (uintptr_t)fx.mem, .length = 64, .lkey = 1 };
	wr->done = done_noop;
	return rconn_send(&fx.c, &sge, 1, 0, wr);
}

static void test_bind_goes_with_its_send(void **state)
{
	(void)state;
	struct rconn_exposure e;
	struct rconn_wr wr = { 0 };
	uint32_t old = fx.ibmw[0].rkey;

	assert_int_equal(rconn_sq_space(&fx.c), 64);
	assert_int_equal(rconn_expose(&fx.c, &fx.buf, 0, 512, RCONN_REMOTE_WRITE, &e), 0);
	assert_int_equal(rec.nposts, 0);	     /* waits for the Send */
	assert_int_equal(rconn_sq_space(&fx.c), 63); /* but its room is taken */
	assert_int_equal(e.rkey, ibv_inc_rkey(old));
	assert_int_equal(fx.ibmw[0].rkey, old); /* what the provider will read */

	assert_int_equal(send_one(&wr), 0);
	assert_int_equal(rec.nposts, 1); /* one doorbell for both */
	assert_int_equal(rec.len[0], 2);
	assert_int_equal(rec.wr[0][0].opcode, IBV_WR_BIND_MW);
	assert_int_equal(rec.wr[0][0].send_flags & IBV_SEND_SIGNALED, 0);
	assert_int_equal(rec.wr[0][0].wr_id, 0); /* an error completion names no owner */
	assert_int_equal(rec.wr[0][0].mw_rkey, old);
	assert_int_equal(rec.wr[0][0].new_rkey, e.rkey);
	assert_int_equal(rec.wr[0][1].opcode, IBV_WR_SEND);
	assert_int_equal(rec.wr[0][1].send_flags & IBV_SEND_SIGNALED, IBV_SEND_SIGNALED);
	assert_int_equal(rec.wr[0][1].wr_id, (uintptr_t)&wr);
	assert_int_equal(fx.ibmw[0].rkey, e.rkey); /* the next bind replaces this one */
	assert_int_equal(fx.c.sq_posted, 2);
	assert_int_equal(wr.seq, 2); /* its completion retires the bind too */
	assert_int_equal(fx.c.stats.binds, 1);
}

/* Bound, let go (the peer invalidated it), bound again before any post. */
static void test_second_bind_of_a_window_posts_the_first(void **state)
{
	(void)state;
	struct rconn_exposure e1, e2;
	struct rconn_wr fence = { 0 }, wr = { 0 };
	uint32_t old = fx.ibmw[0].rkey;

	fence.done = done_noop;
	assert_int_equal(rconn_expose(&fx.c, &fx.buf, 0, 512, RCONN_REMOTE_READ, &e1), 0);
	assert_int_equal(rconn_fence(&fx.c, &e1, 1, e1.rkey, &fence), 1);
	assert_int_equal(rconn_expose(&fx.c, &fx.buf, 512, 512, RCONN_REMOTE_READ, &e2), 0);
	assert_ptr_equal(e2.mw, &fx.mws[0]);
	assert_int_equal(rec.nposts, 1); /* the first bind, alone */
	assert_int_equal(rec.len[0], 1);
	assert_int_equal(rec.wr[0][0].mw_rkey, old);
	assert_int_equal(rec.wr[0][0].new_rkey, e1.rkey);

	assert_int_equal(send_one(&wr), 0);
	assert_int_equal(rec.nposts, 2);
	assert_int_equal(rec.len[1], 2);
	assert_int_equal(rec.wr[1][0].opcode, IBV_WR_BIND_MW);
	assert_int_equal(rec.wr[1][0].mw_rkey, e1.rkey);
	assert_int_equal(rec.wr[1][0].new_rkey, e2.rkey);
	assert_int_equal(rec.wr[1][1].opcode, IBV_WR_SEND);
	assert_int_equal(fx.ibmw[0].rkey, e2.rkey);
	assert_int_equal(fx.c.sq_posted, 3);
}

/*
 * A call's window, advertised by its Send, is withdrawn: deallocated, and
 * a new window takes the slot, free, with the new window's own rkey; no
 * work request is posted (an invalidation would leave the old window free
 * under its rkey, for a late Send With Invalidate to find).
 */
static void test_withdraw_replaces_the_window(void **state)
{
	(void)state;
	struct rconn_exposure e;
	struct rconn_wr wr = { 0 };

	assert_int_equal(rconn_expose(&fx.c, &fx.buf, 0, 512, RCONN_REMOTE_READ, &e), 0);
	assert_int_equal(send_one(&wr), 0);
	assert_int_equal(rec.nposts, 1);
	struct ibv_mw *old = e.mw->mw;
	struct rconn_mw *slot = e.mw;

	assert_int_equal(rconn_withdraw(&fx.c, &e, 1), 0);
	assert_null(e.mw);
	assert_int_equal(rec.nposts, 1); /* nothing posted */
	assert_int_equal(fx.ndeallocated, 1);
	assert_ptr_equal(fx.deallocated[0], old);
	assert_ptr_equal(slot->mw, &fx.spare[0]);
	assert_int_equal(slot->rkey, fx.spare[0].rkey);
	assert_false(slot->bound);
	assert_int_equal(fx.c.mw_in_use, 0);
	assert_int_equal(rconn_mw_space(&fx.c), NMW);
	assert_ptr_equal(fx.c.mw_free, slot); /* the next bind takes the new window */

	struct rconn_exposure e2;
	assert_int_equal(rconn_expose(&fx.c, &fx.buf, 0, 512, RCONN_REMOTE_READ, &e2), 0);
	assert_ptr_equal(e2.mw, slot);
	assert_int_equal(e2.rkey, ibv_inc_rkey(fx.spare[0].rkey));
}

/* A window whose bind still waits was never advertised: not withdrawn, nothing done. */
static void test_withdraw_refuses_an_unposted_bind(void **state)
{
	(void)state;
	struct rconn_exposure e[2];
	struct rconn_wr wr = { 0 };

	assert_int_equal(rconn_expose(&fx.c, &fx.buf, 0, 512, RCONN_REMOTE_READ, &e[0]), 0);
	assert_int_equal(send_one(&wr), 0);
	assert_int_equal(rconn_expose(&fx.c, &fx.buf, 512, 512, RCONN_REMOTE_READ, &e[1]), 0);
	assert_int_equal(rconn_withdraw(&fx.c, e, 2), -EBUSY);
	assert_non_null(e[0].mw);
	assert_non_null(e[1].mw);
	assert_int_equal(fx.ndeallocated, 0);
	assert_int_equal(fx.c.mw_in_use, 2);
}

/* No window to replace one: the slot stays empty, one window fewer from then on. */
static void test_withdraw_without_a_new_window(void **state)
{
	(void)state;
	struct rconn_exposure e;
	struct rconn_wr wr = { 0 };

	assert_int_equal(rconn_expose(&fx.c, &fx.buf, 0, 512, RCONN_REMOTE_READ, &e), 0);
	assert_int_equal(send_one(&wr), 0);
	struct rconn_mw *slot = e.mw;
	fx.alloc_fails = true;
	assert_int_equal(rconn_withdraw(&fx.c, &e, 1), 0);
	assert_int_equal(fx.ndeallocated, 1);
	assert_null(slot->mw);
	assert_int_equal(fx.c.mw_in_use, 0);
	assert_int_equal(rconn_mw_space(&fx.c), NMW - 1);
	for (struct rconn_mw *m = fx.c.mw_free; m; m = m->next_free)
		assert_ptr_not_equal(m, slot);
}

static void test_full_batch_posts_what_waits(void **state)
{
	(void)state;
	struct rconn_exposure e[RCONN_WAIT_MAX + 1];
	struct rconn_wr wr = { 0 };

	for (unsigned i = 0; i < RCONN_WAIT_MAX + 1; i++)
		assert_int_equal(
			rconn_expose(&fx.c, &fx.buf, 256 * i, 256, RCONN_REMOTE_WRITE, &e[i]), 0);
	assert_int_equal(rec.nposts, 1);
	assert_int_equal(rec.len[0], RCONN_WAIT_MAX);
	for (unsigned i = 0; i < RCONN_WAIT_MAX; i++)
		assert_int_equal(rec.wr[0][i].new_rkey, e[i].rkey); /* in order */
	assert_int_equal(send_one(&wr), 0);
	assert_int_equal(rec.len[1], 2);
	assert_int_equal(rec.wr[1][0].new_rkey, e[RCONN_WAIT_MAX].rkey);
	assert_int_equal(fx.c.sq_posted, RCONN_WAIT_MAX + 2);
}

/* A call given up before its Send: the fence carries the bind, then invalidates it. */
static void test_fence_posts_the_binds_before_it(void **state)
{
	(void)state;
	struct rconn_exposure e;
	struct rconn_wr fence = { 0 };

	fence.done = done_noop;
	assert_int_equal(rconn_expose(&fx.c, &fx.buf, 0, 128, RCONN_REMOTE_WRITE, &e), 0);
	assert_int_equal(rconn_fence(&fx.c, &e, 1, 0, &fence), 0);
	assert_int_equal(rec.nposts, 1);
	assert_int_equal(rec.len[0], 2);
	assert_int_equal(rec.wr[0][0].opcode, IBV_WR_BIND_MW);
	assert_int_equal(rec.wr[0][1].opcode, IBV_WR_LOCAL_INV);
	assert_int_equal(rec.wr[0][1].inv_rkey, e.rkey);
	assert_int_equal(rec.wr[0][1].send_flags & IBV_SEND_SIGNALED, IBV_SEND_SIGNALED);
	assert_int_equal(fence.seq, 2);
}

/* A waiting bind holds its send-queue slot: a full queue refuses the next WR. */
static void test_waiting_bind_counts_in_the_queue(void **state)
{
	(void)state;
	struct rconn_exposure e1, e2;
	struct rconn_wr wr = { 0 };

	fx.c.params.send_depth = 2;
	assert_int_equal(rconn_expose(&fx.c, &fx.buf, 0, 128, RCONN_REMOTE_WRITE, &e1), 0);
	assert_int_equal(rconn_expose(&fx.c, &fx.buf, 128, 128, RCONN_REMOTE_WRITE, &e2), 0);
	assert_int_equal(rconn_sq_space(&fx.c), 0);
	assert_int_equal(send_one(&wr), -EAGAIN);
	assert_int_equal(rec.nposts, 0);
	struct rconn_exposure e3;
	assert_int_equal(rconn_expose(&fx.c, &fx.buf, 256, 128, RCONN_REMOTE_WRITE, &e3), -EAGAIN);
	assert_int_equal(fx.c.mw_in_use, 2);
}

/* A reply's data into the client's Write chunk, then the reply: one post. */
static void test_write_waits_for_the_send(void **state)
{
	(void)state;
	struct rconn_wr wr = { 0 };
	struct ibv_sge sge = { .addr = (uintptr_t)fx.mem + 8, .length = 4096 - 8, .lkey = 7 };

	assert_int_equal(rconn_write(&fx.c, &sge, 1, 0xabc, 0x5000, NULL), 0);
	sge = (struct ibv_sge){ 0 }; /* the caller's list is gone */
	assert_int_equal(rec.nposts, 0);
	assert_int_equal(rconn_sq_space(&fx.c), 63);
	assert_int_equal(send_one(&wr), 0);
	assert_int_equal(rec.nposts, 1);
	assert_int_equal(rec.len[0], 2);
	assert_int_equal(rec.wr[0][0].opcode, IBV_WR_RDMA_WRITE);
	assert_int_equal(rec.wr[0][0].send_flags & IBV_SEND_SIGNALED, 0);
	assert_int_equal(rec.wr[0][0].rkey, 0xabc);
	assert_int_equal(rec.wr[0][0].raddr, 0x5000);
	assert_int_equal(rec.wr[0][0].num_sge, 1);
	assert_int_equal(rec.wr[0][0].sge0.addr, (uintptr_t)fx.mem + 8);
	assert_int_equal(rec.wr[0][0].sge0.length, 4096 - 8);
	assert_int_equal(rec.wr[0][0].sge0.lkey, 7);
	assert_int_equal(rec.wr[0][1].opcode, IBV_WR_SEND);
	assert_int_equal(wr.seq, 2);
	assert_int_equal(fx.c.stats.writes, 1);
}

static void test_long_write_goes_behind_what_waits(void **state)
{
	(void)state;
	struct ibv_sge one = { .addr = (uintptr_t)fx.mem, .length = 16, .lkey = 7 };
	struct ibv_sge many[RCONN_WAIT_SGE + 1];

	fx.c.params.max_send_sge = RCONN_WAIT_SGE + 1;
	for (unsigned i = 0; i < RCONN_WAIT_SGE + 1; i++)
		many[i] = (struct ibv_sge){ .addr = (uintptr_t)fx.mem + 16 * i,
					    .length = 16,
					    .lkey = 7 };
	assert_int_equal(rconn_write(&fx.c, &one, 1, 1, 0x100, NULL), 0);
	assert_int_equal(rconn_write(&fx.c, many, RCONN_WAIT_SGE + 1, 2, 0x200, NULL), 0);
	assert_int_equal(rec.nposts, 1);
	assert_int_equal(rec.len[0], 2);
	assert_int_equal(rec.wr[0][0].raddr, 0x100);
	assert_int_equal(rec.wr[0][1].raddr, 0x200);
	assert_int_equal(rec.wr[0][1].num_sge, RCONN_WAIT_SGE + 1);
	/* More pieces than the connection allows: refused, nothing posted or taken. */
	struct ibv_sge too_many[RCONN_WAIT_SGE + 2];
	memset(too_many, 0, sizeof(too_many));
	assert_int_equal(rconn_write(&fx.c, too_many, RCONN_WAIT_SGE + 2, 3, 0x300, NULL), -EINVAL);
	assert_int_equal(fx.c.sq_posted, 2);
}

/* ---- completion passes ---- */

enum { CQ_WRS = 200 };

static struct {
	struct ibv_cq cq;
	struct rconn_wr wrs[CQ_WRS];
	unsigned queued; /* completions in the CQ, handed out in order */
	unsigned next;	 /* the next one to hand out */
	unsigned done;	 /* completions delivered to their WR, in order */
	bool in_order;
	unsigned arms;
	unsigned arrive_on_arm; /* completions that come as the CQ is armed */
	unsigned polls_after_empty;
} cqs;

static int fake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	int got = 0;

	(void)cq;
	while (got < n && cqs.next < cqs.queued) {
		memset(&wc[got], 0, sizeof(wc[got]));
		wc[got].wr_id = (uintptr_t)&cqs.wrs[cqs.next++];
		wc[got].status = IBV_WC_SUCCESS;
		wc[got].opcode = IBV_WC_SEND;
		got++;
	}
	if (got == 0)
		cqs.polls_after_empty++;
	return got;
}

static int fake_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	(void)cq;
	(void)solicited_only;
	cqs.arms++;
	cqs.queued += cqs.arrive_on_arm;
	cqs.arrive_on_arm = 0;
	return 0;
}

static void done_count(struct rconn_wr *wr, enum ibv_wc_status status)
{
	if (wr != &cqs.wrs[cqs.done] || status != IBV_WC_SUCCESS)
		cqs.in_order = false;
	cqs.done++;
}

static struct event_base *cq_setup(void)
{
	struct event_base *base = event_base_new();

	assert_non_null(base);
	memset(&cqs, 0, sizeof(cqs));
	cqs.in_order = true;
	fx.ctx.ops.poll_cq = fake_poll_cq;
	fx.ctx.ops.req_notify_cq = fake_req_notify_cq;
	cqs.cq.context = &fx.ctx;
	fx.c.cq = &cqs.cq;
	fx.c.cq_more = evtimer_new(base, rconn_cq_more, &fx.c);
	assert_non_null(fx.c.cq_more);
	for (unsigned i = 0; i < CQ_WRS; i++)
		cqs.wrs[i].done = done_count;
	return base;
}

static void cq_teardown(struct event_base *base)
{
	event_free(fx.c.cq_more);
	fx.c.cq_more = NULL;
	fx.c.cq = NULL;
	event_base_free(base);
}

/* A flood of completions is taken in bounded passes, one per turn of the loop. */
static void test_cq_pass_is_bounded(void **state)
{
	(void)state;
	struct event_base *base = cq_setup();
	unsigned passes = 1;

	cqs.queued = 100;
	rconn_cq_event(&fx.c.cq_handler);
	assert_int_equal(cqs.done, 32);
	assert_int_equal(cqs.arms, 0); /* it may hold more: not armed */
	assert_int_equal(fx.c.stats.cq_yields, 1);
	assert_true(evtimer_pending(fx.c.cq_more, NULL));
	while (cqs.done < 100 && passes < 10) {
		assert_int_equal(event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK), 0);
		passes++;
		assert_true(cqs.done <= 32u * passes);
	}
	assert_int_equal(cqs.done, 100);
	assert_true(cqs.in_order);
	/* the pass that found it empty armed it, polled again, and stopped */
	assert_int_equal(cqs.arms, 1);
	assert_false(evtimer_pending(fx.c.cq_more, NULL));
	assert_int_equal(fx.c.stats.cq_yields, 3);
	/* nothing left to run: an empty, armed CQ waits for its event */
	unsigned polls = cqs.polls_after_empty;
	assert_int_equal(event_base_loop(base, EVLOOP_NONBLOCK), 1); /* no events */
	assert_int_equal(cqs.polls_after_empty, polls);
	cq_teardown(base);
}

/* A route's turn_budget: a pass takes params.cq_budget completions, no more. */
static void test_cq_pass_budget_from_params(void **state)
{
	(void)state;
	struct event_base *base = cq_setup();

	fx.c.params.cq_budget = 8;
	cqs.queued = 20;
	rconn_cq_event(&fx.c.cq_handler);
	assert_int_equal(cqs.done, 8);
	assert_int_equal(fx.c.stats.cq_yields, 1);
	assert_int_equal(event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK), 0);
	assert_int_equal(cqs.done, 16);
	assert_int_equal(event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK), 0);
	assert_int_equal(cqs.done, 20);
	assert_true(cqs.in_order);
	fx.c.params.cq_budget = 0;
	cq_teardown(base);
}

/*
 * A forward route's turn_budget_contended: while the loop serves more than
 * one client (common/turns.h), a pass takes params.cq_budget_contended;
 * otherwise params.cq_budget. The connection's own passes never count as a
 * client's turn.
 */
static void test_cq_pass_budget_contended(void **state)
{
	static int client_a, client_b;
	(void)state;
	struct event_base *base = cq_setup();

	gw_turns_reset();
	fx.c.params.cq_budget = 8;
	fx.c.params.cq_budget_contended = 2;
	cqs.queued = 20;
	rconn_cq_event(&fx.c.cq_handler);
	assert_int_equal(cqs.done, 8); /* no client has taken a turn */
	gw_turn_taken(&client_a, gw_now_us());
	gw_turn_taken(&client_b, gw_now_us());
	assert_int_equal(event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK), 0);
	assert_int_equal(cqs.done, 10);
	gw_turns_reset();
	assert_int_equal(event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK), 0);
	assert_int_equal(cqs.done, 18);
	assert_true(cqs.in_order);
	fx.c.params.cq_budget = 0;
	fx.c.params.cq_budget_contended = 0;
	cq_teardown(base);
}

/* A completion between the last empty poll and the arming is not left behind. */
static void test_cq_completion_during_arming(void **state)
{
	(void)state;
	struct event_base *base = cq_setup();

	cqs.queued = 5;
	cqs.arrive_on_arm = 3;
	rconn_cq_event(&fx.c.cq_handler);
	assert_int_equal(cqs.done, 8);
	assert_true(cqs.in_order);
	assert_int_equal(cqs.arms, 1);
	assert_int_equal(fx.c.stats.cq_yields, 0);
	assert_false(evtimer_pending(fx.c.cq_more, NULL));

	/* the same when the poll after the arming finds a full budget: come back */
	cqs.arrive_on_arm = 40;
	rconn_cq_event(&fx.c.cq_handler);
	assert_int_equal(cqs.done, 8 + 32);
	assert_int_equal(cqs.arms, 2);
	assert_int_equal(fx.c.stats.cq_yields, 1);
	assert_true(evtimer_pending(fx.c.cq_more, NULL));
	assert_int_equal(event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK), 0);
	assert_int_equal(cqs.done, 48);
	assert_true(cqs.in_order);
	assert_int_equal(cqs.arms, 3);
	assert_false(evtimer_pending(fx.c.cq_more, NULL));
	cq_teardown(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_bind_goes_with_its_send, setup),
		cmocka_unit_test_setup(test_second_bind_of_a_window_posts_the_first, setup),
		cmocka_unit_test_setup(test_withdraw_replaces_the_window, setup),
		cmocka_unit_test_setup(test_withdraw_refuses_an_unposted_bind, setup),
		cmocka_unit_test_setup(test_withdraw_without_a_new_window, setup),
		cmocka_unit_test_setup(test_full_batch_posts_what_waits, setup),
		cmocka_unit_test_setup(test_fence_posts_the_binds_before_it, setup),
		cmocka_unit_test_setup(test_waiting_bind_counts_in_the_queue, setup),
		cmocka_unit_test_setup(test_write_waits_for_the_send, setup),
		cmocka_unit_test_setup(test_long_write_goes_behind_what_waits, setup),
		cmocka_unit_test_setup(test_cq_pass_is_bounded, setup),
		cmocka_unit_test_setup(test_cq_pass_budget_from_params, setup),
		cmocka_unit_test_setup(test_cq_pass_budget_contended, setup),
		cmocka_unit_test_setup(test_cq_completion_during_arming, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
