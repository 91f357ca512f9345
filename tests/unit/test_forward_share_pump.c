/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_forward_share_pump.c - a shared forward channel's pump
 * (gateway/forward/forward_share.c) when memory windows run out: a call that finds
 * no window waits in the channel's queue (fwd_marshal()'s -EAGAIN), neither
 * failed nor sent, and goes, in its turn and with its bytes as the client
 * sent them, once a window comes back:
 *  - from a reply (fwd_recv(): the fence gives the call's windows back and
 *    the channel is pumped there and then);
 *  - from a call the server left unanswered and that was given up
 *    (fwd_share_orphan(), from the engine's sweep): the pump is deferred to
 *    an event of the loop (share_pump_later()), and the call goes once the
 *    loop runs. The given-up call's window is replaced, not invalidated
 *    (rconn_withdraw()): the server may still answer it, by Send With
 *    Invalidate of its rkey.
 *
 * A reply by Send With Invalidate naming the answered call's own window
 * saves that window's fence: no LOCAL_INV, the reply delivered at once,
 * counted remote_invalidations. One naming another call's window, or
 * answering no call, is refused (rconn_violation(), wrapped here): the
 * window it invalidated must never be invalidated again.
 *
 * A reconnected client's NFSv4.1 READ whose data comes in a Write chunk
 * (fwd_deliver_spliced()) makes it a candidate for its gone connection's
 * back channel, as an inline reply does (fwd_learn_sessions()).
 *
 * A reply is written to its client at once (tcp_conn_flush_now()) when the
 * client holds no other call, and left to the loop pass's flush, where
 * replies of one batch leave together, while it does (fwd_reply_flush()).
 *
 * And when a client reaches its own max_session_memory (fwd_marshal()'s
 * -EDQUOT), that client alone waits: the other clients' calls go on, and
 * its call goes once its own memory comes down.
 *
 * The channel's RDMA connection is a real struct rconn (rdma/conn_io.c)
 * on a fake provider whose post_send records what it is given, as in
 * test_conn_io.c; its completions never come unless the test says so.
 * The device's pool is a plain-memory pool and the engine's event base
 * the test's own: this executable links with -Wl,--wrap for
 * rdma_dev_pool, rdma_dev_wait_for_buffers, rdma_pool_alloc (whose buffers
 * get a stand-in registration), gw_engine_base and
 * tcp_conn_send_ref and tcp_conn_send_record, which take the replies
 * delivered to the clients, rconn_violation, and tcp_conn_flush_now
 * (tests/unit/test_forward_share_pump.wrap). The calls are long ones
 * (larger than the inline threshold): each goes in a Position-Zero Read
 * chunk, one window, so that windows, not credits, are what runs out.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>
#include <event2/event.h>
#include <rdma/rdma_cma.h>

#include "common/clock.h"
#include "common/xdr.h"
#include "gateway/forward/forward_priv.h"
#include "rdma/conn_priv.h"
#include "rdma/pool.h"
#include "tests/unit/nfs4_session_msgs.h"

enum {
	NMW = 3,	  /* the channel's memory windows */
	CREDITS = 16,	  /* the grant: never what runs out here */
	THRESHOLD = 1024, /* inline threshold, both ways */
	REC_LEN = 2000,	  /* a call record: longer than the threshold */
	NCALLS = 8,	  /* call slots per client */
	MAX_SENDS = 32,
	MAX_RECS = 32,
};

/* A Send the provider was given, with the bytes of the window bound with it. */
struct sent {
	uint32_t wire_xid; /* the transport header's */
	uint32_t len;	   /* the window's */
	uint8_t bytes[REC_LEN];
};

struct fixture {
	struct event_base *base;
	struct rdma_pool *pool;
	struct gw_route cfg;
	struct gw_route_rt *route;
	struct fwd_share sh;
	struct fwd_route fr; /* the route's forward state: sh */
	struct fwd_session *ch;
	struct fwd_session *a, *b;
	struct fwd_session *a2; /* A reconnected from the same port, when a test makes it */
	/* The channel's connection on the fake provider. */
	struct ibv_context ctx;
	struct ibv_qp qp;
	struct rdma_cm_id id;
	struct ibv_pd pd;
	struct ibv_mw ibmw[NMW];
	struct rconn_mw mws[NMW];
	/* Windows the provider allocated in place of deallocated ones, and those deallocated. */
	struct ibv_mw spare[NMW];
	unsigned nspare;
	struct ibv_mw *deallocated[NMW];
	unsigned ndeallocated;
	struct rconn c;
	int mr;	  /* stands for the registration: only its address is used */
	char dev; /* stands for the device: only "has one" is looked at */
	/* Records and replies made by the test, freed at teardown. */
	struct gw_buf *bufs[2 * MAX_RECS];
	unsigned nbufs;
	/* What went out. */
	struct sent sent[MAX_SENDS];
	unsigned nsent;
	unsigned local_invs;
	/* Replies delivered to the clients: their XIDs. */
	uint32_t delivered[MAX_SENDS];
	unsigned ndelivered;
	/* tcp_conn_flush_now() calls: the connection, and the replies delivered by then. */
	struct tcp_conn *flushed[MAX_SENDS];
	unsigned flushed_after[MAX_SENDS];
	unsigned nflushed;
	/* rconn_violation() calls: why, the last time. */
	unsigned violations;
	const char *violation;
	/* The test sets max_session_memory low: a session may wait for buffers for it. */
	bool mem_limited;
};

static struct fixture *fx;

/* ---- the stand-ins (tests/unit/test_forward_share_pump.wrap) ---- */

struct rdma_pool *__wrap_rdma_dev_pool(const struct rdma_dev *dev);
void __wrap_rdma_dev_wait_for_buffers(struct rdma_dev *dev, struct rdma_pool_waiter *w);
struct event_base *__wrap_gw_engine_base(const struct gw_engine *eng);
struct gw_buf *__real_rdma_pool_alloc(struct rdma_pool *pool, size_t size);
struct gw_buf *__wrap_rdma_pool_alloc(struct rdma_pool *pool, size_t size);
int __wrap_tcp_conn_send_ref(struct tcp_conn *c, struct gw_buf *buf, uint32_t off, uint32_t len);
int __wrap_tcp_conn_send_record(struct tcp_conn *c, const struct tcp_piece *pieces, unsigned n);
void __wrap_tcp_conn_flush_now(struct tcp_conn *c);
void __wrap_rconn_violation(struct rconn *c, const char *why, uint32_t len);

void __wrap_rconn_violation(struct rconn *c, const char *why, uint32_t len)
{
	assert_ptr_equal(c, &fx->c);
	assert_true(len > 0);
	fx->violations++;
	fx->violation = why;
}

struct rdma_pool *__wrap_rdma_dev_pool(const struct rdma_dev *dev)
{
	(void)dev;
	return fx->pool;
}

void __wrap_rdma_dev_wait_for_buffers(struct rdma_dev *dev, struct rdma_pool_waiter *w)
{
	(void)dev;
	(void)w;
	if (!fx->mem_limited)
		fail_msg("the pool ran dry: the test sizes it for every call");
}

/*
 * Its own stand-in, not support/fakeclock's (which would also fake the pass
 * clock): this test runs on the real clock. Using a gwt_fake_* symbol here
 * would link both definitions, and the link would fail.
 */
struct event_base *__wrap_gw_engine_base(const struct gw_engine *eng)
{
	(void)eng;
	return fx->base;
}

/* The plain-memory pool has no registration: its buffers stand for registered ones. */
struct gw_buf *__wrap_rdma_pool_alloc(struct rdma_pool *pool, size_t size)
{
	struct gw_buf *b = __real_rdma_pool_alloc(pool, size);

	if (b && !b->mr)
		b->mr = &fx->mr;
	return b;
}

int __wrap_tcp_conn_send_ref(struct tcp_conn *c, struct gw_buf *buf, uint32_t off, uint32_t len)
{
	(void)c;
	assert_true(len >= 4);
	assert_true(fx->ndelivered < MAX_SENDS);
	fx->delivered[fx->ndelivered++] = xdr_get32(buf->base + off);
	return 0;
}

int __wrap_tcp_conn_send_record(struct tcp_conn *c, const struct tcp_piece *pieces, unsigned n)
{
	(void)c;
	assert_true(n > 0 && pieces[0].len >= 4);
	assert_true(fx->ndelivered < MAX_SENDS);
	const uint8_t *p = pieces[0].buf ? pieces[0].buf->base + pieces[0].off : pieces[0].data;
	fx->delivered[fx->ndelivered++] = xdr_get32(p);
	return 0;
}

void __wrap_tcp_conn_flush_now(struct tcp_conn *c)
{
	assert_true(fx->nflushed < MAX_SENDS);
	fx->flushed[fx->nflushed] = c;
	fx->flushed_after[fx->nflushed++] = fx->ndelivered;
}

/*
 * The provider: a bind waits for the Send that advertises it and goes in
 * the same post (rdma/conn_io.c), so a Send's window is the last bind
 * before it in the chain; its bytes are read here, as the server's RDMA
 * Read would read them. A Send with no window of a call record (an inline
 * call, its window a Write chunk's) is recorded with a length of 0.
 */
static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	const struct ibv_mw_bind_info *bound = NULL;

	(void)qp;
	*bad = NULL;
	for (; wr; wr = wr->next) {
		if (wr->opcode == IBV_WR_BIND_MW) {
			bound = &wr->bind_mw.bind_info;
		} else if (wr->opcode == IBV_WR_LOCAL_INV) {
			fx->local_invs++;
		} else if (wr->opcode == IBV_WR_SEND) {
			if (fx->nsent == MAX_SENDS) {
				fail_msg("more Sends than the test expects");
				return EINVAL;
			}
			struct sent *s = &fx->sent[fx->nsent++];
			s->wire_xid = xdr_get32((const uint8_t *)(uintptr_t)wr->sg_list[0].addr);
			s->len = 0;
			if (bound && bound->mw_access_flags & IBV_ACCESS_REMOTE_READ &&
			    bound->length <= REC_LEN) {
				s->len = (uint32_t)bound->length;
				memcpy(s->bytes, (const void *)(uintptr_t)bound->addr,
				       bound->length);
			}
			bound = NULL;
		}
	}
	return 0;
}

/* Windows: a deallocation is recorded, an allocation hands out a spare window. */
static struct ibv_mw *fake_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	assert_int_equal(type, IBV_MW_TYPE_2);
	assert_true(fx->nspare < NMW);
	struct ibv_mw *mw = &fx->spare[fx->nspare];
	*mw = (struct ibv_mw){ .context = pd->context,
			       .pd = pd,
			       .rkey = 0x80000u + 0x100u * fx->nspare,
			       .type = IBV_MW_TYPE_2 };
	fx->nspare++;
	return mw;
}

static int fake_dealloc_mw(struct ibv_mw *mw)
{
	assert_true(fx->ndeallocated < NMW);
	fx->deallocated[fx->ndeallocated++] = mw;
	return 0;
}

static void buf_free(struct gw_buf *buf)
{
	(void)buf; /* the fixture frees every buffer it made */
}

static struct gw_buf *test_buf(struct fixture *f, uint32_t size)
{
	struct gw_buf *b = calloc(1, sizeof(*b));

	assert_non_null(b);
	b->base = calloc(1, size);
	assert_non_null(b->base);
	b->size = size;
	b->refs = 1;
	b->lkey = 7;
	b->mr = &f->mr;
	b->free_fn = buf_free;
	assert_true(f->nbufs < sizeof(f->bufs) / sizeof(f->bufs[0]));
	f->bufs[f->nbufs++] = b;
	return b;
}

/* ---- the route, its channel and its clients ---- */

static void channel_connection(struct fixture *f)
{
	f->ctx.ops.post_send = fake_post_send;
	f->ctx.ops.alloc_mw = fake_alloc_mw;
	f->ctx.ops.dealloc_mw = fake_dealloc_mw;
	f->pd.context = &f->ctx;
	f->qp.context = &f->ctx;
	f->id.qp = &f->qp;
	f->c.state = RCONN_CONNECTED;
	f->c.id = &f->id;
	f->c.params.send_depth = 256;
	f->c.params.max_send_sge = 4;
	f->c.params.nmw = NMW;
	f->c.mws = f->mws;
	for (int i = NMW - 1; i >= 0; i--) {
		f->ibmw[i] = (struct ibv_mw){ .context = &f->ctx,
					      .pd = &f->pd,
					      .rkey = 0x1000u * (unsigned)(i + 1),
					      .type = IBV_MW_TYPE_2 };
		f->mws[i] = (struct rconn_mw){ .mw = &f->ibmw[i], .rkey = f->ibmw[i].rkey };
		f->mws[i].next_free = f->c.mw_free;
		f->c.mw_free = &f->mws[i];
	}
}

static struct fwd_session *client(struct fixture *f, uint64_t id, const char *addr, uint16_t port)
{
	struct fwd_session *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	s->base.id = id;
	s->base.route = f->route;
	snprintf(s->base.client, sizeof(s->base.client), "%s:%u", addr, port);
	s->state = FS_READY;
	s->fd = -1;
	s->ch = f->ch;
	s->conn = f->ch;
	s->up = &fwd_share_upstream;
	s->dev = (struct rdma_dev *)&f->dev;
	TAILQ_INIT(&s->queue);
	s->calls = calloc(NCALLS, sizeof(*s->calls));
	assert_non_null(s->calls);
	s->ncalls = NCALLS;
	gw_slots_init(&s->slots, s->calls, sizeof(*s->calls), offsetof(struct fwd_call, next_free),
		      NCALLS);
	struct sockaddr_in *sin = (struct sockaddr_in *)&s->peer;
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	assert_int_equal(inet_pton(AF_INET, addr, &sin->sin_addr), 1);
	fairq_client_init(&s->fq_client, f->sh.cap);
	f->ch->users++;
	TAILQ_INSERT_TAIL(&f->route->sessions, &s->base, link);
	return s;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	fx = f;
	f->base = event_base_new();
	struct rdma_pool_config pc = {
		.nclasses = 1, .classes = { { .buf_size = 4096, .per_slab = 16, .max_bufs = 64 } }
	};
	f->pool = rdma_pool_create(NULL, &pc);
	f->route = calloc(1, sizeof(*f->route));
	f->ch = calloc(1, sizeof(*f->ch));
	if (!f->base || !f->pool || !f->route || !f->ch)
		return -1;
	f->cfg = (struct gw_route){ .name = "share",
				    .credits = CREDITS,
				    .queue_limit = NCALLS,
				    .max_read_segments = 4,
				    .max_write_chunks = 4,
				    .max_session_memory = 64u << 20 };
	f->route->cfg = &f->cfg;
	rpcrdma_limits_default(&f->route->limits);
	TAILQ_INIT(&f->route->sessions);

	struct wirexid_params up = { .max_entries = 256, .channels = 1, .seed = 1 };
	if (wirexid_init(&f->sh.map, &up) != 0)
		return -1;
	f->sh.by_entry = calloc(up.max_entries, sizeof(struct fwd_call *));
	if (!f->sh.by_entry)
		return -1;
	f->sh.route = f->route;
	f->sh.nchan = 1;
	f->sh.cap = CREDITS; /* each client may use the whole grant */
	f->fr.share = &f->sh;
	f->route->mode_state = &f->fr;

	channel_connection(f);
	struct fwd_session *ch = f->ch;
	ch->is_channel = true;
	ch->up = &fwd_share_upstream;
	ch->conn = ch;
	ch->share = &f->sh;
	ch->base.route = f->route;
	snprintf(ch->base.client, sizeof(ch->base.client), "share shared connection 0");
	ch->fd = -1;
	ch->state = FS_READY;
	TAILQ_INIT(&ch->queue);
	TAILQ_INIT(&ch->gss_wait);
	ch->rdma = &f->c;
	ch->dev = (struct rdma_dev *)&f->dev;
	ch->version = RPCRDMA_V1;
	ch->version_settled = true;
	ch->thr = (struct rpcrdma_thresholds){ .send = THRESHOLD, .recv = THRESHOLD };
	ch->granted = CREDITS;
	ch->window = CREDITS;
	fairq_init(&ch->fq, 1, 1);
	fwd_share_set_grant(ch);
	f->sh.chan[0] = ch;

	f->a = client(f, 1, "192.0.2.1", 700);
	f->b = client(f, 2, "192.0.2.2", 701);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	struct fwd_session *clients[] = { f->a, f->b, f->a2 };

	for (size_t k = 0; k < sizeof(clients) / sizeof(clients[0]); k++) {
		struct fwd_session *s = clients[k];
		if (!s)
			continue;
		/* Header buffers of calls whose Send never completed here. */
		for (uint32_t i = 0; i < s->slots.made; i++) {
			if (s->calls[i].hdr)
				gw_buf_put(s->calls[i].hdr);
		}
		gw_counters_release(&s->base.counters);
		free(s->calls);
		free(s);
	}
	if (f->ch->pump_ev)
		event_free(f->ch->pump_ev);
	gw_counters_release(&f->ch->base.counters);
	free(f->ch);
	for (unsigned i = 0; i < f->nbufs; i++) {
		free(f->bufs[i]->base);
		free(f->bufs[i]);
	}
	wirexid_destroy(&f->sh.map);
	bc_orphans_fini(&f->sh.gone_holders);
	free(f->sh.by_entry);
	gw_counters_release(&f->route->counters);
	free(f->route);
	rdma_pool_destroy(f->pool);
	event_base_free(f->base);
	free(f);
	fx = NULL;
	return 0;
}

/* ---- calls and replies ---- */

/* Byte @i of the record of client call @xid: its XID, then a pattern of its own. */
static uint8_t rec_byte(uint32_t xid, uint32_t i)
{
	return (uint8_t)(xid * 31u + i * 7u + (i >> 8));
}

/*
 * Client @s sends an NFSv3 call of procedure @proc, REC_LEN bytes, XID @xid,
 * in slot @slot: admitted on the channel.
 */
static struct fwd_call *call_as(struct fixture *f, struct fwd_session *s, uint32_t slot,
				uint32_t xid, uint32_t proc, uint32_t flavor)
{
	bool fresh;
	struct fwd_call *c = gw_slots_get(&s->slots, &fresh);

	(void)fresh;
	assert_true(slot < NCALLS);
	assert_ptr_equal(c, &s->calls[slot]); /* the slot fwd_call_get() would take */
	*c = (struct fwd_call){ .s = s, .index = slot, .upx = WIREXID_NONE, .xid = xid };
	c->rec = test_buf(f, REC_LEN);
	c->rec_len = REC_LEN;
	xdr_put32(c->rec->base, xid);
	for (uint32_t i = 4; i < REC_LEN; i++)
		c->rec->base[i] = rec_byte(xid, i);
	c->mem = REC_LEN;
	s->mem_held += REC_LEN;
	c->ulb.status = ULB_OK;
	c->ulb.prog = 100003;
	c->ulb.vers = 3;
	c->ulb.proc = proc;
	c->ulb.flavor = flavor;
	c->ulb.reply_exact = true;
	c->ulb.reply_max = 200;
	fwd_share_admit(s, c);
	return c;
}

static struct fwd_call *call_proc(struct fixture *f, struct fwd_session *s, uint32_t slot,
				  uint32_t xid, uint32_t proc)
{
	return call_as(f, s, slot, xid, proc, 0);
}

/* A WRITE: not read-only, its reply exact and small. */
static struct fwd_call *call(struct fixture *f, struct fwd_session *s, uint32_t slot, uint32_t xid)
{
	return call_proc(f, s, slot, xid, 7);
}

/* Send @n went out as call @c: its wire XID, and the record's bytes, the XID aside, intact. */
static void assert_sent_as(const struct fixture *f, unsigned n, const struct fwd_call *c)
{
	assert_true(n < f->nsent);
	const struct sent *s = &f->sent[n];
	assert_int_equal(s->wire_xid, c->wire_xid);
	assert_int_equal(s->len, REC_LEN);
	assert_int_equal(xdr_get32(s->bytes), c->wire_xid); /* the call's XID is the wire's */
	for (uint32_t i = 4; i < REC_LEN; i++) {
		if (s->bytes[i] != rec_byte(c->xid, i))
			fail_msg("call %#x: byte %u is %#x, sent %#x", c->xid, i, s->bytes[i],
				 rec_byte(c->xid, i));
	}
}

/*
 * The server answers the call in flight under @wire_xid, inline, with a
 * grant of CREDITS; by Send With Invalidate of @inv_rkey when not 0.
 */
static void reply_inv(struct fixture *f, uint32_t wire_xid, uint32_t inv_rkey)
{
	struct gw_buf *b = test_buf(f, 256);
	ssize_t h = rpcrdma_encode_msg_inline(b->base, b->size, RPCRDMA_V1, wire_xid, CREDITS);

	assert_true(h > 0);
	uint8_t *p = b->base + h;
	const uint32_t rpc[] = { wire_xid, 1 /* REPLY */, 0 /* MSG_ACCEPTED */, 0, 0,
				 0 /* SUCCESS */ };
	for (size_t i = 0; i < sizeof(rpc) / sizeof(rpc[0]); i++)
		xdr_put32(p + 4 * i, rpc[i]);
	fwd_recv(&f->c, f->ch, b, (uint32_t)h + (uint32_t)sizeof(rpc), inv_rkey);
}

static void reply(struct fixture *f, uint32_t wire_xid)
{
	reply_inv(f, wire_xid, 0);
}

/* The Send of @c completed. */
static void send_completes(struct fixture *f, struct fwd_call *c)
{
	assert_true(c->send_pending);
	rconn_wr_untrack(&f->c, &c->send_wr);
	c->send_wr.done(&c->send_wr, IBV_WC_SUCCESS);
}

/* ---- tests ---- */

/*
 * Six calls, three windows: three go, three wait in the channel's queue,
 * queued and neither failed nor sent. Each reply gives one window back,
 * and the next waiting call goes at once, in the order they came, with
 * its bytes as the client sent them.
 */
static void test_calls_wait_for_windows_and_go_in_order(void **state)
{
	struct fixture *f = *state;
	struct fwd_call *c[6];

	for (uint32_t i = 0; i < 6; i++)
		c[i] = call(f, f->a, i, 0xa000 + i);
	assert_int_equal(f->nsent, NMW);
	assert_int_equal(rconn_mw_space(&f->c), 0);
	for (uint32_t i = 0; i < NMW; i++) {
		assert_int_equal(c[i]->state, FC_SENT);
		assert_sent_as(f, i, c[i]);
	}
	for (uint32_t i = NMW; i < 6; i++)
		assert_int_equal(c[i]->state, FC_QUEUED);
	assert_int_equal(f->ch->fq.queued, 3);
	assert_int_equal(f->a->queued, 3);
	assert_int_equal(f->ch->in_flight, NMW);
	/* waiting is not failing: no call was ended, no error counted */
	assert_int_equal(f->a->slots.busy, 6);

	for (uint32_t i = 0; i < 3; i++) {
		reply(f, c[i]->wire_xid);
		assert_int_equal(c[i]->state, FC_FENCING);
		assert_int_equal(f->local_invs, i + 1);
		/* the window came back and went to the next waiting call, at once */
		assert_int_equal(f->nsent, NMW + i + 1);
		assert_int_equal(c[NMW + i]->state, FC_SENT);
		assert_sent_as(f, NMW + i, c[NMW + i]);
		for (uint32_t j = NMW + i + 1; j < 6; j++)
			assert_int_equal(c[j]->state, FC_QUEUED);
	}
	assert_int_equal(f->ch->fq.queued, 0);
	assert_int_equal(f->ch->in_flight, NMW);
	assert_int_equal(f->route->counters.events[GW_EV_UNMATCHED_REPLY], 0);
}

/*
 * Client A's calls hold every window; B's call waits for one. A goes
 * (its connection reset) and its calls, which the server never answers,
 * are given up one by one by the sweep (fwd_share_orphan()): their windows
 * come back, and the channel is pumped once the loop runs - not from
 * inside the sweep - so B's call goes then, intact.
 */
static void test_orphan_pumps_the_channel_later(void **state)
{
	struct fixture *f = *state;
	struct fwd_call *a[NMW];

	for (uint32_t i = 0; i < NMW; i++) {
		a[i] = call(f, f->a, i, 0xa000 + i);
		send_completes(f, a[i]);
	}
	struct fwd_call *b = call(f, f->b, 0, 0xb000);
	assert_int_equal(f->nsent, NMW);
	assert_int_equal(b->state, FC_QUEUED);

	/* A goes: its calls on the wire stay, holding their windows. */
	f->a->state = FS_CLOSING;
	fwd_share_client_close(f->a);
	assert_int_equal(b->state, FC_QUEUED);
	assert_int_equal(f->nsent, NMW);

	struct ibv_mw *a0_window = a[0]->exp[0].mw->mw;
	unsigned local_invs = f->local_invs;
	f->a->in_close = true; /* as fwd_sweep_shared_calls() does */
	assert_true(fwd_share_orphan(a[0]));
	f->a->in_close = false;
	assert_int_equal(rconn_mw_space(&f->c), 1);
	/* Its window was deallocated and another took its place: no invalidation posted. */
	assert_int_equal(f->ndeallocated, 1);
	assert_ptr_equal(f->deallocated[0], a0_window);
	assert_int_equal(f->nspare, 1);
	assert_int_equal(f->local_invs, local_invs);
	assert_int_equal(b->state, FC_QUEUED); /* not from inside the sweep */
	assert_int_equal(f->nsent, NMW);

	assert_true(event_base_loop(f->base, EVLOOP_NONBLOCK) >= 0);
	assert_int_equal(f->nsent, NMW + 1);
	assert_int_equal(b->state, FC_SENT);
	assert_sent_as(f, NMW, b);
	assert_ptr_equal(b->exp[0].mw->mw, &f->spare[0]); /* B's call went through the new window */
	assert_int_equal(f->sh.orphaned[0], 1);
	assert_int_equal(f->ch->orphans, 1);
}

/*
 * A reconnected client's retransmission of a call still queued (issue: the
 * queued copy was cancelled with the old connection, and the client waited
 * for its next retransmission, 60 s): A's call waits for a window; A comes
 * back from the same port (A2) and sends it again before A's connection is
 * gone. When A goes, the call is still queued, now A2's, and goes when a
 * window comes back, intact, under the entry's wire XID.
 */
static void test_taken_over_queued_call_goes_for_its_new_owner(void **state)
{
	struct fixture *f = *state;
	struct fwd_call *a[NMW];

	for (uint32_t i = 0; i < NMW; i++) {
		a[i] = call(f, f->a, i, 0xa000 + i);
		send_completes(f, a[i]);
	}
	struct fwd_call *x = call(f, f->a, NMW, 0xa0ff);
	assert_int_equal(x->state, FC_QUEUED);
	uint32_t wire = x->wire_xid;

	f->a2 = client(f, 3, "192.0.2.1", 700); /* A's address and port */
	struct fwd_call *y = call(f, f->a2, 0, 0xa0ff);
	assert_int_equal(y->state, FC_QUEUED);
	assert_int_equal(y->wire_xid, wire);
	assert_int_equal(f->a2->base.counters.events[GW_EV_RETRANSMIT_ABSORBED], 1);
	assert_int_equal(f->a->queued, 0);
	assert_int_equal(f->a2->queued, 1);

	f->a->state = FS_CLOSING;
	fwd_share_client_close(f->a);
	assert_int_equal(y->state, FC_QUEUED);
	assert_int_equal(f->nsent, NMW);

	reply(f, a[0]->wire_xid); /* a window comes back */
	assert_int_equal(f->nsent, NMW + 1);
	assert_int_equal(y->state, FC_SENT);
	assert_sent_as(f, NMW, y);
}

/* The fence of answered call @c (its windows' local invalidation) completed. */
static void fence_completes(struct fixture *f, struct fwd_call *c)
{
	assert_true(c->fence_pending);
	rconn_wr_untrack(&f->c, &c->fence_wr);
	c->fence_wr.done(&c->fence_wr, IBV_WC_SUCCESS);
}

/*
 * max_session_memory for MEM_CALLS calls of a client marshalled (record
 * and transport header buffer each) and one more record queued: the next
 * call's header buffer is one too many while a call is in flight.
 */
enum { MEM_CALLS = 1 };
static const uint64_t mem_limit = MEM_CALLS * (REC_LEN + FWD_HDR_MAX) + REC_LEN + FWD_HDR_MAX / 2;

/*
 * Client A, a bulk writer, is at its own memory limit: a call in flight
 * and the next one queued. Client B's calls go while A's waits - A is set
 * aside, not put back at the head of the ring where every pump would stop
 * at it. When A's call is answered and its memory freed, A's next call
 * goes: the pump for it is deferred to the loop (it runs from
 * fwd_call_put()), and nothing else would pump the channel then.
 */
static void test_client_at_memory_limit_waits_alone(void **state)
{
	struct fixture *f = *state;

	f->cfg.max_session_memory = mem_limit;
	f->mem_limited = true;
	struct fwd_call *a0 = call(f, f->a, 0, 0xa000);
	struct fwd_call *a1 = call(f, f->a, 1, 0xa001);
	assert_int_equal(a0->state, FC_SENT);
	assert_int_equal(a1->state, FC_QUEUED);
	assert_int_equal(f->nsent, 1);
	assert_true(f->a->base.counters.events[GW_EV_SESSION_MEMORY_LIMIT] > 0);

	/* B, one call after another (the same limit holds for it), is served, in one slot. */
	for (uint32_t i = 0; i < 3; i++) {
		struct fwd_call *b = call(f, f->b, 0, 0xb000 + i);
		assert_int_equal(b->state, FC_SENT);
		assert_int_equal(f->nsent, 2 + i);
		assert_sent_as(f, 1 + i, b);
		assert_int_equal(a1->state, FC_QUEUED);
		assert_int_equal(f->a->queued, 1);
		assert_int_equal(f->ch->fq.queued, 1);
		send_completes(f, b);
		reply(f, b->wire_xid);
		fence_completes(f, b);
		assert_true(event_base_loop(f->base, EVLOOP_NONBLOCK) >= 0);
		assert_int_equal(a1->state, FC_QUEUED); /* A still waits for its memory */
	}

	/* A's call is answered; its memory is freed once its fence completes. */
	send_completes(f, a0);
	reply(f, a0->wire_xid);
	assert_int_equal(a1->state, FC_QUEUED);
	fence_completes(f, a0);
	assert_int_equal(f->a->mem_held, REC_LEN);
	assert_false(f->a->mem_wait);
	assert_true(event_base_loop(f->base, EVLOOP_NONBLOCK) >= 0);
	assert_int_equal(a1->state, FC_SENT);
	assert_int_equal(f->nsent, 5);
	assert_sent_as(f, 4, a1);
	assert_int_equal(f->ch->fq.queued, 0);
	assert_int_equal(f->ndelivered, 4);
	assert_int_equal(f->delivered[3], 0xa000);
}

/*
 * A client set aside for its memory whose calls in flight all end
 * without freeing enough (a reply still held) is resumed all the same:
 * with nothing in flight the limit does not hold, and it must not be
 * left paused for ever.
 */
static void test_client_with_nothing_in_flight_is_resumed(void **state)
{
	struct fixture *f = *state;

	/* Room for one call marshalled and nothing else. */
	f->cfg.max_session_memory = REC_LEN + FWD_HDR_MAX;
	f->mem_limited = true;
	struct fwd_call *a0 = call(f, f->a, 0, 0xa000);
	struct fwd_call *a1 = call(f, f->a, 1, 0xa001);
	struct fwd_call *a2 = call(f, f->a, 2, 0xa002);
	assert_int_equal(a0->state, FC_SENT);
	assert_int_equal(f->nsent, 1);
	assert_true(f->a->mem_wait);

	send_completes(f, a0);
	reply(f, a0->wire_xid);
	fence_completes(f, a0);
	/* two records queued: past the limit, but nothing is in flight */
	assert_true(f->a->mem_held + FWD_HDR_MAX > f->cfg.max_session_memory);
	assert_false(f->a->mem_wait);
	assert_true(event_base_loop(f->base, EVLOOP_NONBLOCK) >= 0);
	assert_int_equal(a1->state, FC_SENT);
	assert_int_equal(a2->state, FC_QUEUED);
	assert_true(f->a->mem_wait);
}

/*
 * A client that goes while set aside for its memory leaves the scheduler
 * clean: its queued call is dropped, nothing of it stays in the ring, and
 * the other client's calls go on.
 */
static void test_client_closing_while_waiting_for_memory(void **state)
{
	struct fixture *f = *state;

	f->cfg.max_session_memory = mem_limit;
	f->mem_limited = true;
	struct fwd_call *a0 = call(f, f->a, 0, 0xa000);
	struct fwd_call *a1 = call(f, f->a, 1, 0xa001);
	assert_int_equal(a1->state, FC_QUEUED);
	assert_true(f->a->mem_wait);

	f->a->state = FS_CLOSING;
	fwd_share_client_close(f->a);
	assert_false(f->a->mem_wait);
	assert_int_equal(f->a->queued, 0);
	assert_int_equal(f->ch->fq.queued, 0);
	assert_true(TAILQ_EMPTY(&f->ch->fq.ring));
	assert_int_equal(a1->state, FC_FREE);

	/* A's call in flight ends unanswered; B goes on. */
	struct fwd_call *b0 = call(f, f->b, 0, 0xb000);
	assert_int_equal(b0->state, FC_SENT);
	send_completes(f, a0);
	f->a->in_close = true;
	assert_true(fwd_share_orphan(a0));
	f->a->in_close = false;
	assert_true(event_base_loop(f->base, EVLOOP_NONBLOCK) >= 0);
	assert_true(TAILQ_EMPTY(&f->ch->fq.ring));
	assert_int_equal(f->ch->fq.queued, 0);
	assert_int_equal(f->ch->fq.orphans, 0);
}

/* ---- Send With Invalidate ---- */

/*
 * A's call is answered by Send With Invalidate of its own window: no
 * LOCAL_INV is posted, the window is free again and the reply delivered
 * at once (no fence to wait for), counted on the client and the route.
 * Without the claim in fwd_call_answered() the window would be fenced
 * (invalidated a second time: a NULL dereference in rxe) and the reply
 * would wait for it.
 */
static void test_send_with_invalidate_saves_the_fence(void **state)
{
	struct fixture *f = *state;
	char tcp_a;

	f->a->tcp = (struct tcp_conn *)&tcp_a;
	struct fwd_call *a0 = call(f, f->a, 0, 0xa000);
	send_completes(f, a0);
	assert_int_equal(rconn_mw_space(&f->c), NMW - 1);

	reply_inv(f, a0->wire_xid, a0->exp[0].rkey);
	assert_int_equal(f->violations, 0);
	assert_int_equal(f->local_invs, 0);
	assert_false(a0->fence_pending);
	assert_int_equal(rconn_mw_space(&f->c), NMW);
	assert_int_equal(f->ndelivered, 1);
	assert_int_equal(f->delivered[0], 0xa000);
	assert_int_equal(f->a->base.counters.remote_invalidations, 1);
	assert_int_equal(f->route->counters.remote_invalidations, 1);
}

/*
 * Two of A's calls in flight. The reply to the first names the second's
 * window: refused (the connection is failed) before either call is
 * touched: nothing delivered, no window fenced (the second's must never
 * be invalidated by the gateway; the first's go with the connection). A
 * reply to no call by Send With Invalidate is refused too. Nothing is
 * counted as saved.
 */
static void test_send_with_invalidate_of_another_window_refused(void **state)
{
	struct fixture *f = *state;
	char tcp_a;

	f->a->tcp = (struct tcp_conn *)&tcp_a;
	struct fwd_call *a0 = call(f, f->a, 0, 0xa000);
	struct fwd_call *a1 = call(f, f->a, 1, 0xa001);
	send_completes(f, a0);
	send_completes(f, a1);

	reply_inv(f, a0->wire_xid, a1->exp[0].rkey);
	assert_int_equal(f->violations, 1);
	assert_non_null(strstr(f->violation, "Send With Invalidate"));
	assert_int_equal(a0->state, FC_SENT);
	assert_int_equal(a1->state, FC_SENT);
	assert_non_null(a0->exp[0].mw); /* both windows left to the teardown */
	assert_non_null(a1->exp[0].mw);
	assert_int_equal(f->local_invs, 0);
	assert_int_equal(f->ndelivered, 0);

	reply_inv(f, 0x5eed, a1->exp[0].rkey);
	assert_int_equal(f->violations, 2);
	assert_int_equal(f->local_invs, 0);
	assert_int_equal(f->a->base.counters.remote_invalidations, 0);
	assert_int_equal(f->route->counters.remote_invalidations, 0);
}

/* ---- when a reply is written ---- */

/*
 * Client A has two calls on the wire, client B one. A's first reply waits
 * for the loop pass's flush (its second may come in the same pass and
 * leave in the same sendmsg()); its second, after which A holds no call,
 * is written at once, and so is B's only one. Without fwd_reply_flush()
 * no reply is written before the pass's end.
 */
static void test_reply_written_at_once_when_nothing_else_is_held(void **state)
{
	struct fixture *f = *state;
	char tcp_a, tcp_b;

	f->a->tcp = (struct tcp_conn *)&tcp_a;
	f->b->tcp = (struct tcp_conn *)&tcp_b;
	struct fwd_call *a0 = call(f, f->a, 0, 0xa000);
	struct fwd_call *a1 = call(f, f->a, 1, 0xa001);
	struct fwd_call *b0 = call(f, f->b, 0, 0xb000);
	assert_int_equal(f->nsent, 3);
	send_completes(f, a0);
	send_completes(f, a1);
	send_completes(f, b0);

	reply(f, a0->wire_xid);
	fence_completes(f, a0);
	assert_int_equal(f->ndelivered, 1);
	assert_int_equal(f->nflushed, 0); /* A still has a call on the wire */

	reply(f, b0->wire_xid);
	fence_completes(f, b0);
	assert_int_equal(f->ndelivered, 2);
	assert_int_equal(f->nflushed, 1);
	assert_ptr_equal(f->flushed[0], &tcp_b);
	assert_int_equal(f->flushed_after[0], 2);

	reply(f, a1->wire_xid);
	assert_int_equal(f->nflushed, 1); /* answered, still being fenced: not yet delivered */
	fence_completes(f, a1);
	assert_int_equal(f->ndelivered, 3);
	assert_int_equal(f->delivered[2], 0xa001);
	assert_int_equal(f->nflushed, 2);
	assert_ptr_equal(f->flushed[1], &tcp_a);
	assert_int_equal(f->flushed_after[1], 3);
	assert_int_equal(f->a->slots.busy, 0);
	assert_int_equal(f->b->slots.busy, 0);
	f->a->tcp = NULL;
	f->b->tcp = NULL;
}

/*
 * What the route's XID map keeps of an answered call is what the call
 * does: A's WRITE must not run twice, so its entry is kept for A's address
 * against other clients' calls; B's GETATTR only reads, so its entry is
 * any client's to recycle (gateway/maps/wirexid.h, "Retention").
 */
static void test_answered_entries_kept_by_what_the_call_does(void **state)
{
	struct fixture *f = *state;
	const struct wirexid *m = &f->sh.map;

	struct fwd_call *a0 = call_proc(f, f->a, 0, 0xa000, 7); /* WRITE */
	struct fwd_call *b0 = call_proc(f, f->b, 0, 0xb000, 1); /* GETATTR */
	uint32_t ia = a0->upx, ib = b0->upx;
	send_completes(f, a0);
	send_completes(f, b0);
	reply(f, a0->wire_xid);
	fence_completes(f, a0);
	reply(f, b0->wire_xid);
	fence_completes(f, b0);
	assert_int_equal(m->st.answered, 2);
	assert_int_equal(m->st.kept, 1);
	assert_int_equal(m->st.kept_clients, 1);
	assert_int_equal(wirexid_get(m, ia)->state, WIREXID_ANSWERED);
	assert_int_not_equal(wirexid_get(m, ia)->client, 0);
	assert_int_equal(wirexid_get(m, ib)->state, WIREXID_ANSWERED);
	assert_int_equal(wirexid_get(m, ib)->client, 0);
}

/*
 * RPCSEC_GSS through a shared channel (issue 30): the call goes on the wire
 * under the client's own XID, which the GSS verifier covers; a second
 * client's GSS call with that XID, while the first is on the wire, waits
 * (sends nothing, holds its slot, counted); once the first is answered, it
 * goes when the loop runs, under that XID too.
 */
static void test_gss_call_keeps_its_xid(void **state)
{
	struct fixture *f = *state;

	struct fwd_call *a0 = call_as(f, f->a, 0, 0x9a55, 7, RPC_AUTH_GSS);
	assert_int_equal(a0->state, FC_SENT);
	assert_int_equal(a0->wire_xid, 0x9a55);
	assert_sent_as(f, 0, a0);

	struct fwd_call *b0 = call_as(f, f->b, 0, 0x9a55, 7, RPC_AUTH_GSS);
	assert_int_equal(b0->state, FC_GSS_WAIT);
	assert_int_equal(f->nsent, 1);
	assert_int_equal(f->b->queued, 1);
	assert_int_equal(f->sh.map.st.own_xid_busy, 1);
	assert_int_equal(f->b->base.counters.events[GW_EV_GSS_XID_WAIT], 1);
	assert_true(event_base_loop(f->base, EVLOOP_NONBLOCK) >= 0);
	assert_int_equal(b0->state, FC_GSS_WAIT); /* nothing left the wire: still waiting */

	send_completes(f, a0);
	reply(f, 0x9a55);
	fence_completes(f, a0);
	assert_int_equal(f->ndelivered, 1);
	assert_int_equal(f->delivered[0], 0x9a55);
	assert_true(event_base_loop(f->base, EVLOOP_NONBLOCK) >= 0);
	assert_int_equal(b0->state, FC_SENT);
	assert_int_equal(b0->wire_xid, 0x9a55);
	assert_int_equal(f->b->queued, 0);
	assert_sent_as(f, 1, b0);
	assert_int_equal(f->sh.map.st.own_xid_displaced, 1);
}

/* A client that goes while its GSS call waits for its XID: the call goes with it, nothing sent. */
static void test_gss_call_waiting_goes_with_its_client(void **state)
{
	struct fixture *f = *state;

	struct fwd_call *a0 = call_as(f, f->a, 0, 0x9a56, 7, RPC_AUTH_GSS);
	struct fwd_call *b0 = call_as(f, f->b, 0, 0x9a56, 7, RPC_AUTH_GSS);
	assert_int_equal(b0->state, FC_GSS_WAIT);
	f->b->state = FS_CLOSING;
	fwd_share_client_close(f->b);
	assert_int_equal(b0->state, FC_FREE); /* its slot is back */
	assert_int_equal(f->b->queued, 0);
	assert_true(TAILQ_EMPTY(&f->ch->gss_wait));
	send_completes(f, a0);
	reply(f, 0x9a56);
	fence_completes(f, a0);
	assert_true(event_base_loop(f->base, EVLOOP_NONBLOCK) >= 0);
	assert_int_equal(f->nsent, 1);
}

/* ---- a READ whose data comes in a Write chunk ---- */

enum { OP_PUTFH = 22, OP_READ = 25, READ_COUNT = 1500, READ_GOT = 1200 };

static const uint8_t sid_x[ULB_SESSIONID_SIZE] = { 0x5e, 1, 2,	3,  4,	5,  6,	7,
						   8,	 9, 10, 11, 12, 13, 14, 15 };

/* Client @s sends an NFSv4.1 SEQUENCE (on @sid), PUTFH, READ of READ_COUNT bytes, XID @xid. */
static struct fwd_call *read_call(struct fixture *f, struct ulb_rules *rules, struct fwd_session *s,
				  uint32_t slot, uint32_t xid, const uint8_t *sid)
{
	struct msg m;
	struct fwd_call *c = &s->calls[slot];

	msg_sequence_call(&m, xid, sid);
	m.len -= 4;		  /* PUTROOTFH out, PUTFH and READ in */
	xdr_put32(m.buf + 52, 3); /* numops */
	msg_u32(&m, OP_PUTFH);
	msg_u32(&m, 8);
	msg_u32(&m, 0xf11e);
	msg_u32(&m, 0xf11e);
	msg_u32(&m, OP_READ);
	for (int i = 0; i < 4; i++)
		msg_u32(&m, 0); /* stateid4 */
	msg_u32(&m, 0);		/* offset */
	msg_u32(&m, 0);
	msg_u32(&m, READ_COUNT);

	bool fresh;

	assert_ptr_equal(gw_slots_get(&s->slots, &fresh),
			 c); /* the slot fwd_call_get() would take */
	*c = (struct fwd_call){ .s = s, .index = slot, .upx = WIREXID_NONE, .xid = xid };
	c->rec = test_buf(f, m.len);
	memcpy(c->rec->base, m.buf, m.len);
	c->rec_len = m.len;
	c->mem = m.len;
	s->mem_held += m.len;
	assert_int_equal(ulb_parse_call(rules, &s->ulb_sessions, c->rec->base, m.len, &c->ulb),
			 ULB_OK);
	fwd_share_admit(s, c);
	return c;
}

/*
 * The server answers READ call @c: READ_GOT bytes RDMA Written into its
 * Write chunk, and the reduced reply inline (SEQUENCE NFS4_OK, PUTFH, READ
 * with its data's length word and no data); then the call's fence completes.
 */
static void read_reply(struct fixture *f, struct fwd_call *c, const uint8_t *sid)
{
	struct msg m;

	assert_int_equal(c->nwrites, 1);
	memset(c->wbuf[0]->base, 0xda, READ_GOT); /* the server's RDMA Write */
	msg_sequence_reply(&m, c->wire_xid, 0, sid);
	xdr_put32(m.buf + 36, 3); /* results: SEQUENCE, PUTFH, READ */
	m.len -= 8;		  /* PUTROOTFH out */
	msg_u32(&m, OP_PUTFH);
	msg_u32(&m, 0);
	msg_u32(&m, OP_READ);
	msg_u32(&m, 0);
	msg_u32(&m, 1); /* eof */
	msg_u32(&m, READ_GOT);

	struct gw_buf *b = test_buf(f, 1024);
	const uint32_t used = READ_GOT;
	struct rpcrdma_reply_desc d = { .version = RPCRDMA_V1,
					.xid = c->wire_xid,
					.credits = CREDITS,
					.proc = RPCRDMA_MSG,
					.nwrites = 1,
					.writes = c->wdesc,
					.write_used = &used };
	ssize_t h = rpcrdma_encode_reply(b->base, b->size, &d);
	assert_true(h > 0 && (size_t)h + m.len <= b->size);
	memcpy(b->base + h, m.buf, m.len);
	send_completes(f, c);
	fwd_recv(&f->c, f->ch, b, (uint32_t)h + m.len, 0);
	fence_completes(f, c);
}

/*
 * Client A's connection went holding session X's back channel; A connected
 * again from a new port (client B here: A's address) and only READs large
 * files, so every reply of its comes with a Write chunk. Once the server
 * has answered its SEQUENCE on X NFS4_OK, the next callback for X is its.
 */
static void test_spliced_reply_makes_a_candidate(void **state)
{
	struct fixture *f = *state;
	struct ulb_rules *rules = msg_rules_load();
	char tcp_stand_in;
	struct wirexid_key k;

	assert_non_null(rules);
	f->b->peer = f->a->peer;
	((struct sockaddr_in *)&f->b->peer)->sin_port = htons(705);
	assert_true(wirexid_key_from_sockaddr(&k, (const struct sockaddr *)&f->a->peer, 0));
	bc_orphans_add(&f->sh.gone_holders, sid_x, k.addr, MSG_MAXRESP, gw_now_pass_us());
	f->b->base.started_us = gw_now_us() + 1000000;
	f->b->tcp = (struct tcp_conn *)&tcp_stand_in;

	struct fwd_call *c = read_call(f, rules, f->b, 0, 0xb000, sid_x);
	assert_int_equal(c->state, FC_SENT);
	read_reply(f, c, sid_x);
	assert_int_equal(f->ndelivered, 1);
	assert_int_equal(f->delivered[0], 0xb000);
	assert_int_equal(f->b->base.counters.bytes_write_chunk, READ_GOT); /* spliced */
	assert_int_equal(c->state, FC_FREE);
	assert_true(ulb_sessions_has(&f->b->ulb_sessions, sid_x));

	struct msg cb;
	const char *why = NULL;
	msg_cb_sequence(&cb, 0xcb, sid_x);
	assert_ptr_equal(fwd_share_cb_client(f->ch, cb.buf, cb.len, &why), f->b);
	assert_int_equal(f->b->base.counters.events[GW_EV_BACKCHANNEL_ADOPTED], 1);
	assert_int_equal(bc_orphans_count(&f->sh.gone_holders), 0);
	f->b->tcp = NULL;
	ulb_rules_free(rules);
}

/*
 * RPCSEC_GSS (issue: krb5p through a forward route hung): a GSS call is never
 * sent again under a new XID, whatever its service, since its verifier covers
 * the XID; and a krb5p call, whose encrypted reply cannot be sized, is offered
 * a Reply chunk for the largest record the route carries plus the GSS
 * wrapping at once, not the estimate (which the operator may have lowered).
 */
static void test_gss_calls_never_retried_and_krb5p_sized_for_the_route(void **state)
{
	struct fixture *f = *state;
	struct fwd_call c = { .s = f->a };
	uint32_t nwrites = 99, size = 0;
	bool chunk = false;

	c.ulb.status = ULB_OK;
	c.ulb.prog = 100003;
	c.ulb.vers = 4;
	c.ulb.proc = 1;
	c.ulb.minorversion = 1;
	c.ulb.has_sequence = true;
	c.ulb.flavor = RPC_AUTH_SYS;
	assert_true(ulb_call_safe_twice(&c.ulb)); /* the session slot's cache answers a repeat */
	c.ulb.flavor = RPC_AUTH_GSS;		  /* krb5: svc none */
	c.ulb.gss_proc = RPC_GSS_PROC_DATA;
	c.ulb.gss_service = RPC_GSS_SVC_NONE;
	assert_false(ulb_call_safe_twice(&c.ulb));

	/* krb5p: nothing of the COMPOUND is visible (no SEQUENCE, no operation) */
	c.ulb.gss_service = RPC_GSS_SVC_PRIVACY;
	c.ulb.has_sequence = false;
	c.ulb.reply_max = 512; /* reply_size_estimate, lowered */
	c.ulb.reply_exact = false;
	assert_false(ulb_call_safe_twice(&c.ulb));
	f->cfg.max_record_size = 2048;
	fwd_plan_reply(f->ch, &c, &nwrites, &chunk, &size);
	assert_true(chunk);
	assert_int_equal(nwrites, 0);
	assert_int_equal(size, 2048 + ULB_REPLY_HDR_MAX + ULB_GSS_BODY_OVERHEAD);
	/* never more than the pool's largest buffer */
	f->cfg.max_record_size = 1u << 20;
	fwd_plan_reply(f->ch, &c, &nwrites, &chunk, &size);
	assert_true(chunk);
	assert_int_equal(size, rdma_pool_max_size(f->pool));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_calls_wait_for_windows_and_go_in_order, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_send_with_invalidate_saves_the_fence, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_send_with_invalidate_of_another_window_refused,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_orphan_pumps_the_channel_later, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_taken_over_queued_call_goes_for_its_new_owner,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_client_at_memory_limit_waits_alone, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_client_with_nothing_in_flight_is_resumed,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_client_closing_while_waiting_for_memory, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_answered_entries_kept_by_what_the_call_does,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_gss_call_keeps_its_xid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gss_call_waiting_goes_with_its_client, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_spliced_reply_makes_a_candidate, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_reply_written_at_once_when_nothing_else_is_held, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_gss_calls_never_retried_and_krb5p_sized_for_the_route, setup,
			teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
