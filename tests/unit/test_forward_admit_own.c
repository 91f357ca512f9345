/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_forward_admit_own.c - forward mode's admission of a
 * client's call on a connection of its own:
 *  - when the session's XID table (gateway/maps/xidmap.h) cannot grow for
 *    want of memory, the call that needed the room is answered SYSTEM_ERR
 *    and counted no_buffers, its slot freed, and the calls already mapped
 *    stay as they were; both places that map an XID: a call from the
 *    client (fwd_record(), forward_admit.c), and the RFC 8267 retry of a
 *    call under an XID of the gateway's own (fwd_call_retry(),
 *    forward_marshal.c);
 *  - with the route's client_reserved_port, a call from a client port of
 *    1024 or above is answered AUTH_ERROR (AUTH_TOOWEAK) and counted
 *    insecure_port, unless it is NULL or uses RPCSEC_GSS.
 *
 * This executable links with -Wl,--wrap (test_forward_admit_own.wrap):
 * malloc, to fail the table's growth (the next allocation of the size of
 * the grown table, once armed); tcp_conn_send_copy, which records what
 * would go to the client instead of writing to a socket; rdma_dev_pool,
 * a plain-memory pool for the device's. The session's grant is 0, so
 * that admitted calls wait in its queue and nothing goes to an RDMA
 * connection, which the session does not have.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "common/xdr.h"
#include "gateway/forward/forward_priv.h"
#include "rdma/pool.h"
#include "tests/unit/nfs4_session_msgs.h"

enum {
	NCALLS = 32,
	FULL = XIDMAP_START_SIZE / 2, /* XIDs the first table holds */
	REC_LEN = 40,		      /* an NFSv3 NULL call, AUTH_NONE */
	GSS_REC_LEN = 60,	      /* an NFSv3 call without arguments, RPCSEC_GSS */
	MAX_OUT = 8,
};

struct fixture {
	struct ulb_rules *rules;
	struct rdma_pool *pool;
	struct gw_route cfg;
	struct gw_route_rt *route;
	struct fwd_session *s;
	char tcp_stand_in; /* the client's TCP connection: only "has one" is looked at */
	char dev;
	struct gw_buf *bufs[NCALLS + 8];
	unsigned nbufs;
	/* What went to the client. */
	uint8_t out[MAX_OUT][64];
	size_t out_len[MAX_OUT];
	unsigned nout;
};

static struct fixture *fx;

/* ---- the stand-ins (tests/unit/test_forward_admit_own.wrap) ---- */

void *__real_malloc(size_t size);
void *__wrap_malloc(size_t size);
int __wrap_tcp_conn_send_copy(struct tcp_conn *c, const void *data, size_t len);
struct rdma_pool *__wrap_rdma_dev_pool(const struct rdma_dev *dev);

static size_t malloc_fail_size; /* 0: none fails */
static unsigned malloc_failed;

void *__wrap_malloc(size_t size)
{
	if (malloc_fail_size && size == malloc_fail_size) {
		malloc_fail_size = 0;
		malloc_failed++;
		return NULL;
	}
	return __real_malloc(size);
}

int __wrap_tcp_conn_send_copy(struct tcp_conn *c, const void *data, size_t len)
{
	assert_ptr_equal(c, &fx->tcp_stand_in);
	assert_true(fx->nout < MAX_OUT);
	assert_true(len <= sizeof(fx->out[0]));
	memcpy(fx->out[fx->nout], data, len);
	fx->out_len[fx->nout++] = len;
	return 0;
}

struct rdma_pool *__wrap_rdma_dev_pool(const struct rdma_dev *dev)
{
	(void)dev;
	return fx->pool;
}

/* ---- the session ---- */

static void buf_free(struct gw_buf *buf)
{
	(void)buf; /* the fixture frees every buffer it made */
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	fx = f;
	struct rdma_pool_config pc = {
		.nclasses = 1, .classes = { { .buf_size = 4096, .per_slab = 4, .max_bufs = 4 } }
	};
	f->pool = rdma_pool_create(NULL, &pc);
	f->rules = msg_rules_load();
	f->route = calloc(1, sizeof(*f->route));
	f->s = calloc(1, sizeof(*f->s));
	if (!f->pool || !f->rules || !f->route || !f->s)
		return -1;
	f->cfg = (struct gw_route){
		.name = "own", .credits = 1, .queue_limit = NCALLS, .max_session_memory = 64u << 20
	};
	f->route->cfg = &f->cfg;
	TAILQ_INIT(&f->route->sessions);

	struct fwd_session *s = f->s;
	s->base.id = 1;
	s->base.route = f->route;
	s->base.rules = f->rules;
	snprintf(s->base.client, sizeof(s->base.client), "192.0.2.1:700");
	s->up = &fwd_own_upstream;
	s->conn = s;
	s->state = FS_READY;
	s->fd = -1;
	s->tcp = (struct tcp_conn *)&f->tcp_stand_in;
	s->dev = (struct rdma_dev *)&f->dev;
	s->granted = 0;
	s->window = 0; /* nothing goes: calls wait in the queue */
	TAILQ_INIT(&s->queue);
	s->calls = calloc(NCALLS, sizeof(*s->calls));
	if (!s->calls || xidmap_init(&s->xids, NCALLS) != 0)
		return -1;
	s->ncalls = NCALLS;
	gw_slots_init(&s->slots, s->calls, sizeof(*s->calls), offsetof(struct fwd_call, next_free),
		      NCALLS);
	s->next_retry_xid = 0x77000000u;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	xidmap_destroy(&f->s->xids);
	gw_counters_release(&f->s->base.counters);
	free(f->s->calls);
	free(f->s);
	for (unsigned i = 0; i < f->nbufs; i++) {
		free(f->bufs[i]->base);
		free(f->bufs[i]);
	}
	gw_counters_release(&f->route->counters);
	free(f->route);
	ulb_rules_free(f->rules);
	rdma_pool_destroy(f->pool);
	free(f);
	fx = NULL;
	return 0;
}

/*
 * The client sends an NFSv3 call @proc, XID @xid, as the TCP side hands it
 * over: AUTH_NONE, or, with @gss, an RPCSEC_GSS DATA credential (service
 * none, an empty handle). Its arguments are zeros.
 */
static void client_call_proc(struct fixture *f, uint32_t xid, uint32_t proc, bool gss)
{
	/* Header 6 words, the credential 2 (AUTH_NONE) or 7 (GSS), the verifier 2. */
	uint32_t w[GSS_REC_LEN / 4] = { xid, 0 /* CALL */, 2, 100003, 3, proc };
	uint32_t len = gss ? GSS_REC_LEN : REC_LEN;
	struct gw_buf *b = calloc(1, sizeof(*b));

	assert_non_null(b);
	b->base = calloc(1, len);
	assert_non_null(b->base);
	b->size = len;
	b->refs = 1;
	b->free_fn = buf_free;
	assert_true(f->nbufs < sizeof(f->bufs) / sizeof(f->bufs[0]));
	f->bufs[f->nbufs++] = b;
	if (gss) {
		/* 6, 20 bytes: version 1, RPCSEC_GSS_DATA, seq 1, rpc_gss_svc_none, no handle. */
		const uint32_t cred[] = { 6, 20, 1, 0, 1, 1, 0 };
		memcpy(&w[6], cred, sizeof(cred));
	}
	for (size_t i = 0; i < len / 4; i++)
		xdr_put32(b->base + 4 * i, w[i]);
	fwd_record((struct tcp_conn *)&f->tcp_stand_in, b, 0, len, f->s);
}

/* The client sends an NFSv3 NULL call, XID @xid. */
static void client_call(struct fixture *f, uint32_t xid)
{
	client_call_proc(f, xid, 0, false);
}

/* The next allocation of a table grown from XIDMAP_START_SIZE fails. */
static void fail_growth(void)
{
	malloc_fail_size = (size_t)2 * XIDMAP_START_SIZE * sizeof(struct xidmap_entry);
	malloc_failed = 0;
}

static uint64_t event(const struct fixture *f, enum gw_event_kind ev)
{
	assert_int_equal(f->route->counters.events[ev], f->s->base.counters.events[ev]);
	return f->s->base.counters.events[ev];
}

/* What went to the client (record @n) is an accepted reply to @xid with SYSTEM_ERR. */
static void assert_system_err(const struct fixture *f, unsigned n, uint32_t xid)
{
	assert_true(n < f->nout);
	assert_int_equal(f->out_len[n], 24);
	const uint32_t want[] = {
		xid, 1 /* REPLY */, 0 /* MSG_ACCEPTED */, 0, 0, RPC_ACC_SYSTEM_ERR
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_int_equal(xdr_get32(f->out[n] + 4 * i), want[i]);
}

/* Calls 0x100.. fill the first table: admitted and queued. */
static void fill_first_table(struct fixture *f)
{
	for (uint32_t i = 0; i < FULL; i++)
		client_call(f, 0x100 + i);
	assert_int_equal(f->s->queued, FULL);
	assert_int_equal(f->s->xids.count, FULL);
	assert_int_equal(f->s->xids.mask + 1, XIDMAP_START_SIZE);
	assert_int_equal(f->nout, 0);
}

/*
 * The ninth call needs a larger table, which cannot be had: it is answered
 * SYSTEM_ERR and counted no_buffers, its slot and record given back; the
 * eight before it wait as they did. With memory again, the client's next
 * call (its retransmission) is admitted.
 */
static void test_client_call_without_room(void **state)
{
	struct fixture *f = *state;

	fill_first_table(f);
	fail_growth();
	client_call(f, 0x900);
	assert_int_equal(malloc_failed, 1);
	assert_int_equal(event(f, GW_EV_NO_BUFFERS), 1);
	assert_int_equal(event(f, GW_EV_RPC_ERROR_REPLY), 1);
	assert_int_equal(f->nout, 1);
	assert_system_err(f, 0, 0x900);
	assert_int_equal(f->s->slots.busy, FULL); /* its slot is free again */
	assert_int_equal(f->bufs[FULL]->refs, 0); /* and its record */
	assert_int_equal(f->s->queued, FULL);
	assert_int_equal(f->s->xids.count, FULL);
	assert_int_equal(xidmap_find(&f->s->xids, 0x900), XIDMAP_NONE);
	for (uint32_t i = 0; i < FULL; i++)
		assert_int_not_equal(xidmap_find(&f->s->xids, 0x100 + i), XIDMAP_NONE);

	client_call(f, 0x900);
	assert_int_equal(f->s->queued, FULL + 1);
	assert_int_not_equal(xidmap_find(&f->s->xids, 0x900), XIDMAP_NONE);
	assert_int_equal(f->s->xids.mask + 1, 2 * XIDMAP_START_SIZE);
	assert_int_equal(event(f, GW_EV_NO_BUFFERS), 1);
	assert_int_equal(f->nout, 1);
}

/*
 * A call answered ERR_CHUNK is to go again under an XID of the gateway's
 * own (fwd_call_retry()), into a full table that cannot grow: it is
 * answered SYSTEM_ERR under the client's XID and counted no_buffers, and
 * not sent; the calls mapped stay.
 */
static void test_retry_without_room(void **state)
{
	struct fixture *f = *state;

	fill_first_table(f);
	/*
	 * Call 0x100 as it is when its ERR_CHUNK reply has been fenced
	 * (fwd_call_answered(), fwd_fence_done()): off the queue and out of
	 * the table, to go again. Another call takes its place in the table.
	 */
	struct fwd_call *c = TAILQ_FIRST(&f->s->queue);
	assert_int_equal(c->xid, 0x100);
	TAILQ_REMOVE(&f->s->queue, c, qlink);
	f->s->queued--;
	assert_true(xidmap_remove(&f->s->xids, c->wire_xid));
	c->state = FC_FENCING;
	c->retry = true;
	client_call(f, 0x200);
	assert_int_equal(f->s->xids.count, FULL);

	fail_growth();
	fwd_call_retry(c, IBV_WC_SUCCESS);
	assert_int_equal(malloc_failed, 1);
	assert_int_equal(event(f, GW_EV_NO_BUFFERS), 1);
	assert_int_equal(f->nout, 1);
	assert_system_err(f, 0, 0x100);
	assert_int_equal(c->state, FC_FREE);
	assert_int_equal(f->s->slots.busy, FULL);
	assert_int_equal(f->s->queued, FULL);
	assert_int_equal(f->s->xids.count, FULL);
	assert_int_equal(f->s->xids.mask + 1, XIDMAP_START_SIZE);
	for (uint32_t i = 1; i < FULL; i++)
		assert_int_not_equal(xidmap_find(&f->s->xids, 0x100 + i), XIDMAP_NONE);
	assert_int_not_equal(xidmap_find(&f->s->xids, 0x200), XIDMAP_NONE);
}

/* The client's address: 192.0.2.1 at @port. */
static void client_port(struct fixture *f, uint16_t port)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)&f->s->peer;

	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(0xc0000201);
	sin->sin_port = htons(port);
}

/*
 * client_reserved_port: from port 40000 a GETATTR is answered AUTH_ERROR
 * (AUTH_TOOWEAK), counted insecure_port, its slot and record given back,
 * nothing queued; NULL and an RPCSEC_GSS call from that port go (queued),
 * as nfsd spares them; from port 700 the GETATTR goes. Without the key,
 * the GETATTR from port 40000 goes too.
 */
static void test_client_port_judged(void **state)
{
	struct fixture *f = *state;

	f->cfg.client_reserved_port = 1;
	client_port(f, 40000);
	client_call_proc(f, 0x10, 1 /* GETATTR */, false);
	assert_int_equal(event(f, GW_EV_INSECURE_PORT), 1);
	assert_int_equal(f->nout, 1);
	assert_int_equal(f->out_len[0], 20);
	const uint32_t want[] = {
		0x10, 1 /* REPLY */, 1 /* MSG_DENIED */, 1 /* AUTH_ERROR */, 5 /* AUTH_TOOWEAK */
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_int_equal(xdr_get32(f->out[0] + 4 * i), want[i]);
	assert_int_equal(f->s->slots.busy, 0);
	assert_int_equal(f->bufs[0]->refs, 0);
	assert_int_equal(f->s->queued, 0);

	client_call_proc(f, 0x11, 0 /* NULL */, false);
	client_call_proc(f, 0x12, 1, true);
	assert_int_equal(f->s->queued, 2);
	client_port(f, 700);
	client_call_proc(f, 0x13, 1, false);
	assert_int_equal(f->s->queued, 3);
	f->cfg.client_reserved_port = 0;
	client_port(f, 40000);
	client_call_proc(f, 0x14, 1, false);
	assert_int_equal(f->s->queued, 4);
	assert_int_equal(event(f, GW_EV_INSECURE_PORT), 1);
	assert_int_equal(f->nout, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_client_call_without_room, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retry_without_room, setup, teardown),
		cmocka_unit_test_setup_teardown(test_client_port_judged, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
