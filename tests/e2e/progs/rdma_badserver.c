/* SPDX-License-Identifier: MIT */
/*
 * rdma_badserver ADDR PORT: an RPC-over-RDMA server that a forward-mode
 * gateway connects to, for what the kernel NFS server never does on demand.
 * It serves one connection, answers each call as its RPC XID says, checks
 * what the gateway sends, and exits when the gateway disconnects.
 *
 * Every reply grants GRANT credits. Checked on every call: Version One,
 * RDMA_MSG, the RPC XID equal to the transport XID, and never more calls
 * outstanding than granted (1 until the first reply, RFC 8166 section 3.3).
 *
 *   0x31xx  NULL calls: each reply is held HOLD_MS, so the calls the client
 *           sends at once queue in the gateway for credits; the most
 *           outstanding at once must reach GRANT and never exceed it
 *   0x3201  answered RDMA_ERROR ERR_VERS (2, 2): this server speaks only a
 *           version the gateway does not
 *   0x3202  answered RDMA_ERROR ERR_CHUNK
 *   0x3203  answered with a Write chunk the call never offered (a reply
 *           that breaks the protocol)
 *   0x3204  answered normally: the connection still works
 *   0x3301  an NFSACL GETACL call, whose reply the gateway can only estimate
 *           (8 KiB, so it offers a Reply chunk): a chunk smaller than the
 *           BIG_REPLY-byte reply gets ERR_CHUNK; the gateway must send the
 *           call again (RFC 8267) under an XID of its own with a Reply chunk
 *           large enough, which gets the reply, RDMA-written into the chunk
 *           and announced by RDMA_NOMSG
 *   0x3302  an NFSv4.0 GETATTR, estimated small enough for inline (no Reply
 *           chunk): ERR_CHUNK, and the same for its retry
 *
 * The TCP client side of the test checks what the gateway made of each.
 * Prints "ok: ..." or "FAIL: ..." per check and exits 0 only when all hold.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "rdma/privdata.h"
#include "tests/e2e/progs/peer.h"

enum { GRANT = 2, HOLD_MS = 200, HELD_MAX = 64, BIG_REPLY = 12288 };

static struct event_base *base;
static struct rconn *conn;
static bool connected, finished;
static uint32_t granted = 1; /* what the gateway may have outstanding now */
static uint32_t outstanding, max_outstanding, over_grant, calls, bad_calls;
static unsigned errors_sent;
/* The calls whose replies exceed their estimates, by program: 0 NFSACL, 1 NFS. */
static unsigned big_calls[2], big_refused[2], big_answered[2];
static uint32_t big_first_xid[2];
static struct gw_buf *bigs[4]; /* big replies written into Reply chunks */
static unsigned nbigs;

static void send_words(const struct words *w)
{
	if (!peer_send(conn, w))
		CHECK(0, "answer sent");
}

/* The fixed words; then, for RDMA_MSG, the lists follow. */
static void hdr(struct words *w, uint32_t xid, uint32_t proc)
{
	w->len = 0;
	w32(w, xid);
	w32(w, 1);
	w32(w, GRANT);
	w32(w, proc);
}

/* An accepted NULL reply with AUTH_NONE. */
static void null_reply(struct words *w, uint32_t xid)
{
	w32(w, xid);
	w32(w, 1); /* REPLY */
	w32(w, 0); /* MSG_ACCEPTED */
	w32(w, 0); /* AUTH_NONE */
	w32(w, 0);
	w32(w, 0); /* SUCCESS */
}

/* Every answer is a reply: one credit comes back and the grant is GRANT. */
static void answered(void)
{
	outstanding--;
	granted = GRANT;
}

static void answer(uint32_t xid)
{
	struct words w;

	switch (xid) {
	case 0x3201:
		hdr(&w, xid, 4); /* RDMA_ERROR */
		w32(&w, 1);	 /* ERR_VERS */
		w32(&w, 2);
		w32(&w, 2);
		errors_sent++;
		break;
	case 0x3202:
		hdr(&w, xid, 4);
		w32(&w, 2); /* ERR_CHUNK */
		errors_sent++;
		break;
	case 0x3203:
		/* A Write list of one chunk of one segment: nothing was offered. */
		hdr(&w, xid, 0);
		w32(&w, 0); /* no Read list */
		w32(&w, 1);
		w32(&w, 1);
		w32(&w, 0x1234); /* handle */
		w32(&w, 8);	 /* length */
		w32(&w, 0);	 /* offset */
		w32(&w, 0);
		w32(&w, 0); /* end of the Write list */
		w32(&w, 0); /* no Reply chunk */
		null_reply(&w, xid);
		break;
	default:
		hdr(&w, xid, 0);
		w32(&w, 0);
		w32(&w, 0);
		w32(&w, 0);
		null_reply(&w, xid);
		break;
	}
	answered();
	send_words(&w);
}

/* Replies held back, answered in arrival order when their time comes. */
static uint32_t held[HELD_MAX];
static unsigned nheld;
static struct event *hold_timer;

static void on_hold(evutil_socket_t fd, short what, void *arg)
{
	for (unsigned i = 0; i < nheld; i++)
		answer(held[i]);
	nheld = 0;
}

static void hold(uint32_t xid)
{
	if (nheld == HELD_MAX) {
		CHECK(0, "room to hold call %#x", xid);
		return;
	}
	held[nheld++] = xid;
	if (!evtimer_pending(hold_timer, NULL)) {
		struct timeval tv = { 0, HOLD_MS * 1000 };
		evtimer_add(hold_timer, &tv);
	}
}

/*
 * A call whose reply exceeds what the gateway estimated: the first attempt
 * (a Reply chunk under BIG_REPLY bytes, or none) gets ERR_CHUNK, as from the
 * Linux server; the retry must come under a new XID with a Reply chunk of
 * one segment large enough, and gets a BIG_REPLY-byte reply written into it.
 */
static void big_reply(const uint8_t *b, uint32_t len)
{
	uint32_t xid = xdr_get32(b);
	bool chunk = len >= 48 && xdr_get32(b + 24) == 1;
	uint32_t rpc = chunk ? 48 : 28; /* where the RPC call starts */
	unsigned k = len >= rpc + 16 && xdr_get32(b + rpc + 12) == 100227 ? 0 : 1;
	struct words w;

	big_calls[k]++;
	if (!chunk || xdr_get32(b + 36) < BIG_REPLY) {
		big_refused[k]++;
		big_first_xid[k] = xid;
		hdr(&w, xid, 4);
		w32(&w, 2); /* ERR_CHUNK */
		answered();
		send_words(&w);
		return;
	}
	uint32_t handle = xdr_get32(b + 32), length = xdr_get32(b + 36);
	uint64_t offset = xdr_get64(b + 40);
	CHECK(xdr_get32(b + 28) == 1 && big_refused[k] == 1 && xid != big_first_xid[k] &&
		      xdr_get32(b + rpc) == xid,
	      "program %u: the call came again under a new XID (%#x after %#x) with a "
	      "%u-byte Reply chunk",
	      xdr_get32(b + rpc + 12), xid, big_first_xid[k], length);
	/* The reply: accepted, SUCCESS, then a pattern the client checks. */
	struct gw_buf *big = rdma_pool_alloc(rdma_dev_pool(rconn_device(conn)), BIG_REPLY);
	if (!big) {
		CHECK(0, "a buffer for the big reply");
		return;
	}
	struct words r = { .len = 0 };
	null_reply(&r, xid);
	memcpy(big->base, r.b, r.len);
	for (uint32_t i = r.len; i < BIG_REPLY; i++)
		big->base[i] = (uint8_t)(i * 7 + 3);
	struct ibv_sge sge = { (uintptr_t)big->base, BIG_REPLY, big->lkey };
	if (rconn_write(conn, &sge, 1, handle, offset, NULL) != 0) {
		CHECK(0, "the big reply written into the Reply chunk");
		gw_buf_put(big);
		return;
	}
	bigs[nbigs++] = big; /* until the connection is gone: its Write completes unsignaled */
	hdr(&w, xid, 1);     /* RDMA_NOMSG */
	w32(&w, 0);
	w32(&w, 0);
	w32(&w, 1); /* the Reply chunk, with the bytes written */
	w32(&w, 1);
	w32(&w, handle);
	w32(&w, BIG_REPLY);
	w32(&w, (uint32_t)(offset >> 32));
	w32(&w, (uint32_t)offset);
	big_answered[k]++;
	answered();
	send_words(&w);
}

static void on_recv(struct rconn *c, void *owner, struct gw_buf *buf, uint32_t len, uint32_t inv)
{
	const uint8_t *b = buf->base;
	bool ok = len >= 28 + 24 && xdr_get32(b + 4) == 1 && xdr_get32(b + 12) == 0 &&
		  xdr_get32(b + 16) == 0 && xdr_get32(b + 20) == 0 && xdr_get32(b + 24) == 0 &&
		  xdr_get32(b + 28) == xdr_get32(b) && xdr_get32(b + 32) == 0;
	uint32_t xid = len >= 4 ? xdr_get32(b) : 0;

	conn = c;
	calls++;
	outstanding++;
	if (outstanding > max_outstanding)
		max_outstanding = outstanding;
	if (outstanding > granted) {
		over_grant++;
		printf("  call %#x: %u outstanding with %u granted\n", xid, outstanding, granted);
	}
	if ((len >= 64 && xdr_get32(b + 24) == 1) || xid == 0x3302) {
		/* A Reply chunk is offered (GETACL), or the GETATTR without one. */
		big_reply(b, len);
		gw_buf_put(buf);
		return;
	}
	if (!ok) {
		bad_calls++;
		printf("  call %#x: not a Version One RDMA_MSG without chunks, same XID\n", xid);
	}
	gw_buf_put(buf);
	if ((xid & 0xff00) == 0x3100)
		hold(xid);
	else
		answer(xid);
}

static void on_established(struct rconn *c, void *owner, const uint8_t *pdata, uint8_t len)
{
	conn = c;
	connected = true;
}

static void on_closed(struct rconn *c, void *owner, enum rconn_close_reason reason)
{
	conn = c;
	finished = true;
	event_base_loopexit(base, NULL);
}

static const struct rconn_ops conn_ops = {
	.established = on_established,
	.recv = on_recv,
	.closed = on_closed,
};

static bool on_accept(struct rlistener *l, void *owner, const struct sockaddr *peer,
		      const uint8_t *pdata, uint8_t pdata_len, const struct rdma_conn_param *req,
		      struct rconn_params *params, const struct rconn_ops **ops, void **conn_owner)
{
	struct rpcrdma_privdata pd;

	if (connected)
		return false; /* one connection */
	CHECK(rpcrdma_privdata_decode(pdata, pdata_len, &pd),
	      "the gateway sent RFC 8797 private data (send %u, receive %u)", pd.send_size,
	      pd.recv_size);
	*ops = &conn_ops;
	*conn_owner = NULL;
	return true;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: rdma_badserver ADDR PORT\n");
		return 2;
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
	struct rconn_params defaults = {
		.recv_count = 32,
		.recv_size = 4096,
		.send_depth = 64,
		.max_send_sge = 2,
		.connect_timeout_ms = 5000,
	};
	const struct rpcrdma_privdata pd = { .send_size = 4096, .recv_size = 4096 };
	rpcrdma_privdata_encode(defaults.private_data, &pd);
	defaults.private_data_len = RPCRDMA_PD_SIZE;
	static const struct rlistener_ops lops = { .accept = on_accept };
	hold_timer = evtimer_new(base, on_hold, NULL);
	struct rlistener *l =
		rlistener_create(ctx, (struct sockaddr *)&sa, 4, &defaults, &lops, NULL);
	if (!l) {
		printf("FAIL: cannot listen on %s:%s\n", argv[1], argv[2]);
		return 1;
	}
	printf("listening\n");
	fflush(stdout);
	event_base_dispatch(base);

	CHECK(connected, "the gateway connected");
	CHECK(bad_calls == 0,
	      "every call was a Version One RDMA_MSG, no chunks, XIDs equal (%u bad)", bad_calls);
	CHECK(over_grant == 0, "never more calls outstanding than granted (%u over)", over_grant);
	CHECK(max_outstanding == GRANT,
	      "the gateway used the whole grant: %u calls outstanding at most, %d granted",
	      max_outstanding, GRANT);
	CHECK(errors_sent == 2, "ERR_VERS and ERR_CHUNK were sent (%u)", errors_sent);
	CHECK(big_calls[0] == 2 && big_refused[0] == 1 && big_answered[0] == 1,
	      "GETACL: refused once for a small Reply chunk, answered on the retry (%u calls)",
	      big_calls[0]);
	CHECK(big_calls[1] == 2 && big_refused[1] == 1 && big_answered[1] == 1,
	      "GETATTR: refused once without a Reply chunk, answered on the retry (%u calls)",
	      big_calls[1]);
	printf("%u calls served\n", calls);
	rlistener_destroy(l);
	if (conn)
		rconn_destroy(conn);
	for (unsigned i = 0; i < nbigs; i++)
		gw_buf_put(bigs[i]); /* after the connection: their Writes are long done */
	event_free(hold_timer);
	rdma_ctx_destroy(ctx);
	event_base_free(base);
	return failures ? 1 : 0;
}
