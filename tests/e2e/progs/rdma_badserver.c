/* SPDX-License-Identifier: MIT */
/*
 * rdma_badserver ADDR PORT: an RPC-over-RDMA server that a forward-mode
 * gateway connects to, for what the kernel NFS server never does on demand
 * (and on PORT + 1 the same without RFC 8797 private data).
 * It serves the gateway's connections (one per TCP client session, one
 * after another or at once), answers each call as its RPC XID says, checks
 * what the gateway sends, and exits once a call 0x3fff asked it to stop and
 * every connection is gone (or on SIGTERM).
 *
 * Replies grant GRANT credits unless the XID says otherwise. Checked on
 * every call: Version One and never more calls outstanding on a connection
 * than the last grant allows (1 until the first reply, RFC 8166 section
 * 3.3; a grant of 0 counts as 1), capped by the credits the call asks for.
 * Checked on calls without chunks: RDMA_MSG, the RPC XID equal to the
 * transport XID.
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
 *   0x36xx  "another client's data": an NFSv3 READ has its Write chunk
 *           filled with PATTERN; a GETACL has its Reply chunk filled with an
 *           RPC reply header and PATTERN (RDMA_NOMSG). The gateway's buffers
 *           then hold PATTERN when they go back to its pool.
 *   0x37xx  lengths claimed, bytes never written: 0x3701 a READ reply whose
 *           Write chunk claims the whole chunk and nothing was written;
 *           0x3702 the same with only LAZY_HEAD written at its start; 0x3703
 *           a GETACL answered by RDMA_NOMSG whose Reply chunk claims the
 *           whole chunk and holds only the RPC reply header. The client must
 *           get zeros where nothing was written, never PATTERN.
 *   0x38xx  credits: 0x3800 is answered granting 0, and so are the held
 *           0x3810..0x381f (the gateway must take 0 as 1: one call at a
 *           time); 0x3820 is answered granting 2^32 - 1, and so are the held
 *           0x3830..0x384f (the gateway must stay within the credits it
 *           asked for, and use them all)
 *   0x39xx  swallowed: never answered (the gateway's call timeout must end
 *           the session: this connection is closed by the gateway); so is
 *           any call to program PROG_SWALLOW, whatever its XID (a route
 *           with upstream_connections > 0 sends calls under XIDs of its own)
 *   0x3a01  a READ: RDMA Write With Immediate of the chunk's length into its
 *           Write chunk, then a normal reply (the gateway must close the
 *           connection at the Write With Immediate and deliver nothing)
 *   0x3b01  a READ answered normally, but by Send With Invalidate naming the
 *           call's own Write chunk: a rule broken when the gateway's private
 *           data did not offer remote invalidation (RFC 8797), else allowed
 *           (the gateway must deliver the reply, its data intact)
 *   0x3b11, 0x3b12  two READs in flight: 0x3b12 is answered by Send With
 *           Invalidate naming the rkey of 0x3b11's chunk; 0x3b11 is never
 *           answered
 *   0x3c01  answered, then FLOOD backward calls (RFC 8167, RDMA_MSG, msg_type
 *           CALL, program 0x40000000) without waiting for replies: the
 *           gateway grants fewer, so it must answer the excess itself with
 *           SYSTEM_ERR, and relay the client's replies to the rest
 *   0x3fff  answered; the server exits once every connection is gone
 *
 * A Version Two call (from a route with max_rpcrdma_version 2; the Version
 * Two draft, section 4.2) must be RDMA2_MSG, direction CALL, without
 * chunks, with equal XIDs, and is answered in Version Two, except:
 *
 *   0x3d01  first an RDMA2_MSG whose direction (CALL) contradicts the RPC
 *           REPLY it carries, then the reply
 *   0x3d02  first an RDMA2_OPTIONAL of an unknown type, direction REPLY
 *           (a responder's: nobody can answer it), then the reply
 *   0x3d03  first a Version One reply on the Version Two connection, then
 *           the reply
 *   0x3d04  answered RDMA2_ERROR RDMA2_ERR_INVAL_OPTION
 *   0x3d05  answered RDMA2_ERROR RDMA2_ERR_BAD_HEADER
 *   0x3d07  an NFSv4.0 GETATTR (a reply the gateway only estimates)
 *           answered RDMA2_ERR_BAD_HEADER: Version One's ERR_CHUNK has the
 *           same value, and must not make the gateway retry it with a
 *           Reply chunk (that retry would arrive here with one)
 *
 * The gateway must drop the first three bad messages and deliver the reply
 * that follows, and answer the client SYSTEM_ERR for the two errors.
 *
 * On PORT + 1 the server accepts without RFC 8797 private data: a Version
 * Two requester must then take 4096-byte inline messages each way (the
 * draft's section 5.1), where Version One would take 1024. 0x3d10 there
 * is a call of INLINE_V2 bytes to a program the gateway does not know: it
 * must come inline, in RDMA2_MSG without a Read list (a Reply chunk may be
 * offered).
 *
 * The TCP client side of the test checks what the gateway made of each.
 * Prints "ok: ..." or "FAIL: ..." per check and exits 0 only when all hold.
 */
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "rdma/privdata.h"
#include "tests/e2e/progs/peer.h"

enum {
	GRANT = 2,
	PROG_SWALLOW = 0x20003900,
	HOLD_MS = 200,
	HELD_MAX = 64,
	BIG_REPLY = 12288,
	MAX_PEERS = 32,
	PEER_BUFS = 16,
	SRC_SIZE = 65536, /* the most a chunk is filled with */
	FLOOD = 10,	  /* backward calls sent at once */
	FLOOD_XID = 0xC000,
	INLINE_V2 = 3000, /* above Version One's 1024, within Version Two's 4096 */
};

static const char PATTERN[] = "OTHER-CLIENT-SECRET-";
static const char LAZY_HEAD[] = "LAZY-HEAD-BYTES!"; /* 16 bytes */

/* One connection from the gateway (one TCP client session). */
struct peer {
	struct rconn *conn;
	bool live;
	uint32_t limit;	    /* what the gateway may have outstanding now */
	uint32_t requested; /* the credits its last call asked for */
	uint32_t outstanding;
	uint32_t held[HELD_MAX];
	unsigned nheld;
	struct event *hold_timer;
	struct gw_buf *bufs[PEER_BUFS]; /* sources of our RDMA Writes, kept until the end */
	unsigned nbufs;
	bool broke_rules;	 /* we posted what the gateway must refuse */
	bool swallowed;		 /* a call is never answered */
	bool no_pd;		 /* accepted without RFC 8797 private data */
	bool remote_inv;	 /* the gateway offered remote invalidation */
	uint32_t first_b_handle; /* 0x3b11's Write chunk */
	enum rconn_close_reason reason;
};

static struct event_base *base;
static struct peer peers[MAX_PEERS];
static unsigned npeers, live_peers;
static bool stop_asked;
static uint32_t calls, bad_calls, over_grant, max_out_31;
static unsigned errors_sent;
/* The calls whose replies exceed their estimates, by program: 0 NFSACL, 1 NFS. */
static unsigned big_calls[2], big_refused[2], big_answered[2];
static uint32_t big_first_xid[2];
/* Credits: the most outstanding under a grant of 0, and of 2^32 - 1; what was asked. */
static uint32_t max_out_g0, max_out_gmax, asked_gmax, calls_g0, calls_gmax;
/* Chunks filled with PATTERN, lazy answers, the rule breakers closed by the gateway. */
static unsigned patterns_sent, lazy_sent, breakers, breakers_closed, swallowed_closed;
/*
 * Send With Invalidate of the call's own chunk where the gateway offered it
 * (that the client got the reply, and the gateway counted no violation, is
 * forward_errors' to see: a close looks the same from here either way).
 */
static unsigned inv_allowed;
static unsigned swallowers;
/* The backward flood: replies that came back, by accept_stat. */
static unsigned flood_sent, bc_success, bc_system_err, bc_other;
/* Version Two calls, those that were not what the gateway may send, bad messages sent. */
static unsigned v2_calls, v2_bad, v2_tricks;
/* 0x3d10 calls of at least INLINE_V2 bytes inline, on a connection without private data. */
static unsigned v2_big_inline;

static void send_words(struct peer *p, const struct words *w)
{
	if (!peer_send(p->conn, w))
		CHECK(0, "answer sent");
}

/* What a reply to @xid grants. */
static uint32_t grant_for(uint32_t xid)
{
	if (xid >= 0x3800 && xid < 0x3820)
		return 0;
	if (xid >= 0x3820 && xid < 0x3850)
		return UINT32_MAX;
	return GRANT;
}

/* The fixed words; then, for RDMA_MSG, the lists follow. */
static void hdr(struct words *w, uint32_t xid, uint32_t proc)
{
	w->len = 0;
	w32(w, xid);
	w32(w, 1);
	w32(w, grant_for(xid));
	w32(w, proc);
}

/* An accepted reply with AUTH_NONE and accept_stat SUCCESS, no results (NULL). */
static void null_reply(struct words *w, uint32_t xid)
{
	w32(w, xid);
	w32(w, 1); /* REPLY */
	w32(w, 0); /* MSG_ACCEPTED */
	w32(w, 0); /* AUTH_NONE */
	w32(w, 0);
	w32(w, 0); /* SUCCESS */
}

/* Every answer is a reply: one call less is outstanding, and the grant is renewed. */
static void answered(struct peer *p, uint32_t xid)
{
	uint32_t g = grant_for(xid);

	p->outstanding--;
	if (g == 0)
		g = 1; /* RFC 8166: a requester reads 0 as 1 */
	p->limit = g < p->requested ? g : p->requested;
}

/* ---- a call's chunks ---- */

struct seg {
	uint32_t handle, length;
	uint64_t offset;
};

struct call_info {
	uint32_t xid, proc, nreads;
	bool write, reply; /* a Write chunk (its first segment), a Reply chunk */
	struct seg wseg, rseg;
	uint32_t rpc; /* where the RPC call starts (RDMA_MSG) */
};

/*
 * Decode the transport header of a call whose chunk lists start at @o (16
 * in Version One, 20 after Version Two's direction word); false when it
 * does not parse.
 */
static bool parse_call_at(const uint8_t *b, uint32_t len, struct call_info *ci, uint32_t o)
{
	memset(ci, 0, sizeof(*ci));
	if (len < 28)
		return false;
	ci->xid = xdr_get32(b);
	ci->proc = xdr_get32(b + 12);
	while (o + 4 <= len && xdr_get32(b + o) == 1) { /* Read list entries */
		o += 4 + 20;
		ci->nreads++;
	}
	o += 4;
	while (o + 8 <= len && xdr_get32(b + o) == 1) { /* Write chunks */
		uint32_t n = xdr_get32(b + o + 4);
		o += 8;
		if (n > 16 || o + 16 * n > len)
			return false;
		if (!ci->write && n > 0) {
			ci->write = true;
			ci->wseg = (struct seg){ xdr_get32(b + o), xdr_get32(b + o + 4),
						 xdr_get64(b + o + 8) };
		}
		o += 16 * n;
	}
	o += 4;
	if (o + 4 > len)
		return false;
	if (xdr_get32(b + o) == 1) {
		if (o + 8 + 16 > len)
			return false;
		uint32_t n = xdr_get32(b + o + 4);
		ci->reply = n > 0;
		ci->rseg = (struct seg){ xdr_get32(b + o + 8), xdr_get32(b + o + 12),
					 xdr_get64(b + o + 16) };
		o += 8 + 16 * n;
	} else {
		o += 4;
	}
	ci->rpc = o;
	return o <= len;
}

static bool parse_call(const uint8_t *b, uint32_t len, struct call_info *ci)
{
	return parse_call_at(b, len, ci, 16);
}

/* A registered buffer of @size bytes kept until the connection is gone. */
static struct gw_buf *peer_buf(struct peer *p, uint32_t size)
{
	if (p->nbufs == PEER_BUFS)
		return NULL;
	struct gw_buf *b = rdma_pool_alloc(rdma_dev_pool(rconn_device(p->conn)), size);
	if (b)
		p->bufs[p->nbufs++] = b;
	return b;
}

/* @n bytes of PATTERN, repeated, at @dst. */
static void fill_pattern(uint8_t *dst, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		dst[i] = (uint8_t)PATTERN[i % (sizeof(PATTERN) - 1)];
}

/* RDMA Write @n bytes of @src into @s (unsignaled: the next Send retires it). */
static bool write_into(struct peer *p, struct gw_buf *src, uint32_t n, const struct seg *s)
{
	struct ibv_sge sge = { (uintptr_t)src->base, n, src->lkey };

	return n == 0 || rconn_write(p->conn, &sge, 1, s->handle, s->offset, NULL) == 0;
}

/*
 * An NFSv3 READ reply whose data went into the Write chunk @s, claimed
 * @n bytes long: RDMA_MSG with the Write list, then the reply up to the
 * data's length word (status, no attributes, count, eof, length).
 */
static void read_reply(struct words *w, uint32_t xid, const struct seg *s, uint32_t n)
{
	hdr(w, xid, 0);
	w32(w, 0); /* no Read list */
	w32(w, 1); /* a Write chunk of one segment */
	w32(w, 1);
	w32(w, s->handle);
	w32(w, n);
	w64(w, s->offset);
	w32(w, 0); /* end of the Write list */
	w32(w, 0); /* no Reply chunk */
	null_reply(w, xid);
	w32(w, 0); /* NFS3_OK */
	w32(w, 0); /* no post-op attributes */
	w32(w, n); /* count */
	w32(w, 0); /* eof */
	w32(w, n); /* the data's length; the data is in the chunk */
}

/* RDMA_NOMSG: the reply, @n bytes, is in the Reply chunk @s. */
static void nomsg_reply(struct words *w, uint32_t xid, const struct seg *s, uint32_t n)
{
	hdr(w, xid, 1);
	w32(w, 0);
	w32(w, 0);
	w32(w, 1); /* the Reply chunk, with the bytes written */
	w32(w, 1);
	w32(w, s->handle);
	w32(w, n);
	w64(w, s->offset);
}

static uint32_t min32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* 0x36xx: fill the offered chunk with PATTERN and answer. */
static void answer_pattern(struct peer *p, const struct call_info *ci)
{
	struct gw_buf *src = peer_buf(p, SRC_SIZE);
	struct words w;

	if (!src || !(ci->write || ci->reply)) {
		CHECK(0, "call %#x: a chunk to fill, a buffer to fill it from", ci->xid);
		return;
	}
	if (ci->write) {
		uint32_t n = min32(ci->wseg.length, SRC_SIZE);
		fill_pattern(src->base, n);
		if (!write_into(p, src, n, &ci->wseg))
			CHECK(0, "call %#x: PATTERN written", ci->xid);
		read_reply(&w, ci->xid, &ci->wseg, n);
	} else {
		uint32_t n = min32(ci->rseg.length, SRC_SIZE);
		struct words r = { .len = 0 };
		null_reply(&r, ci->xid);
		memcpy(src->base, r.b, r.len); /* the RPC header, then PATTERN from byte 24 */
		fill_pattern(src->base + r.len, n - r.len);
		if (!write_into(p, src, n, &ci->rseg))
			CHECK(0, "call %#x: PATTERN written", ci->xid);
		nomsg_reply(&w, ci->xid, &ci->rseg, n);
	}
	patterns_sent++;
	answered(p, ci->xid);
	send_words(p, &w);
}

/* 0x37xx: claim the whole chunk, write little or nothing. */
static void answer_lazy(struct peer *p, const struct call_info *ci)
{
	struct gw_buf *src = peer_buf(p, 4096);
	struct words w;

	if (!src || (ci->xid == 0x3703 ? !ci->reply : !ci->write)) {
		CHECK(0, "call %#x: the chunk expected, a buffer", ci->xid);
		return;
	}
	if (ci->xid == 0x3703) {
		struct words r = { .len = 0 };
		null_reply(&r, ci->xid);
		memcpy(src->base, r.b, r.len);
		if (!write_into(p, src, r.len, &ci->rseg))
			CHECK(0, "call %#x: the RPC header written", ci->xid);
		nomsg_reply(&w, ci->xid, &ci->rseg, ci->rseg.length);
	} else {
		uint32_t n = ci->xid == 0x3702 ? sizeof(LAZY_HEAD) - 1 : 0;
		memcpy(src->base, LAZY_HEAD, sizeof(LAZY_HEAD) - 1);
		if (!write_into(p, src, min32(n, ci->wseg.length), &ci->wseg))
			CHECK(0, "call %#x: the head written", ci->xid);
		read_reply(&w, ci->xid, &ci->wseg, ci->wseg.length);
	}
	lazy_sent++;
	answered(p, ci->xid);
	send_words(p, &w);
}

/* 0x3a01: RDMA Write With Immediate into the offered Write chunk, then the reply. */
static void answer_write_imm(struct peer *p, const struct call_info *ci)
{
	struct gw_buf *src = peer_buf(p, SRC_SIZE);
	struct ibv_qp *qp = rconn_qp(p->conn);
	struct words w;

	if (!src || !ci->write || !qp) {
		CHECK(0, "call %#x: a Write chunk, a buffer, the queue pair", ci->xid);
		return;
	}
	uint32_t n = min32(ci->wseg.length, SRC_SIZE);
	fill_pattern(src->base, n);
	struct ibv_sge sge = { (uintptr_t)src->base, n, src->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 0, /* unsignaled: rconn takes a failed wr_id 0 as the connection failing */
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
		.imm_data = htonl(0x12345678),
	};
	wr.wr.rdma.remote_addr = ci->wseg.offset;
	wr.wr.rdma.rkey = ci->wseg.handle;
	struct ibv_send_wr *bad;
	int err = ibv_post_send(qp, &wr, &bad);
	CHECK(err == 0,
	      "call %#x: RDMA Write With Immediate of %u bytes posted into its Write chunk",
	      ci->xid, n);
	p->broke_rules = true;
	breakers++;
	read_reply(&w, ci->xid, &ci->wseg, n);
	answered(p, ci->xid);
	send_words(p, &w);
}

/* Send @w by Send With Invalidate naming @rkey. */
static void send_inv(struct peer *p, const struct words *w, uint32_t rkey)
{
	struct peer_sent *s = calloc(1, sizeof(*s));

	if (s)
		s->buf = rdma_pool_alloc(rdma_dev_pool(rconn_device(p->conn)), PEER_MSG_MAX);
	if (!s || !s->buf) {
		free(s);
		CHECK(0, "a buffer for the Send With Invalidate");
		return;
	}
	s->wr.done = peer_sent_done;
	memcpy(s->buf->base, w->b, w->len);
	struct ibv_sge sge = { (uintptr_t)s->buf->base, w->len, s->buf->lkey };
	int err = rconn_send(p->conn, &sge, 1, rkey, &s->wr);
	CHECK(err == 0, "a Send With Invalidate of rkey %#x posted", rkey);
	if (err) {
		gw_buf_put(s->buf);
		free(s);
	}
}

/* 0x3bxx: a normal READ reply, data written, sent with Send With Invalidate. */
static void answer_send_inv(struct peer *p, const struct call_info *ci)
{
	struct gw_buf *src = peer_buf(p, SRC_SIZE);
	struct words w;

	if (!src || !ci->write) {
		CHECK(0, "call %#x: a Write chunk, a buffer", ci->xid);
		return;
	}
	if (ci->xid == 0x3b11) {
		p->first_b_handle = ci->wseg.handle; /* never answered */
		return;
	}
	uint32_t rkey = ci->xid == 0x3b12 ? p->first_b_handle : ci->wseg.handle;
	if (rkey == 0) {
		CHECK(0, "call %#x: 0x3b11 came first", ci->xid);
		return;
	}
	uint32_t n = min32(ci->wseg.length, SRC_SIZE);
	fill_pattern(src->base, n);
	if (!write_into(p, src, n, &ci->wseg))
		CHECK(0, "call %#x: data written", ci->xid);
	read_reply(&w, ci->xid, &ci->wseg, n);
	if (ci->xid == 0x3b01 && p->remote_inv) {
		inv_allowed++;
	} else {
		p->broke_rules = true;
		breakers++;
	}
	answered(p, ci->xid);
	send_inv(p, &w, rkey);
}

/* 0x3c01's aftermath: backward calls, far more than the gateway grants, at once. */
static void flood_backward(struct peer *p)
{
	for (uint32_t i = 0; i < FLOOD; i++) {
		struct words w;
		w.len = 0;
		w32(&w, FLOOD_XID + i);
		w32(&w, 1);
		w32(&w, 1); /* backward credits asked */
		w32(&w, 0); /* RDMA_MSG */
		w32(&w, 0);
		w32(&w, 0);
		w32(&w, 0);
		w32(&w, FLOOD_XID + i);
		w32(&w, 0); /* CALL */
		w32(&w, 2);
		w32(&w, 0x40000000);
		w32(&w, 1);
		w32(&w, 0); /* CB_NULL */
		w32(&w, 0);
		w32(&w, 0);
		w32(&w, 0);
		w32(&w, 0);
		flood_sent += peer_send(p->conn, &w);
	}
}

static void answer(struct peer *p, uint32_t xid)
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
	answered(p, xid);
	send_words(p, &w);
	if (xid == 0x3c01)
		flood_backward(p);
}

/* Replies held back, answered in arrival order when their time comes. */
static void on_hold(evutil_socket_t fd, short what, void *arg)
{
	struct peer *p = arg;

	for (unsigned i = 0; i < p->nheld && p->live; i++)
		answer(p, p->held[i]);
	p->nheld = 0;
}

static void hold(struct peer *p, uint32_t xid)
{
	if (p->nheld == HELD_MAX) {
		CHECK(0, "room to hold call %#x", xid);
		return;
	}
	p->held[p->nheld++] = xid;
	if (!evtimer_pending(p->hold_timer, NULL)) {
		struct timeval tv = { 0, HOLD_MS * 1000 };
		evtimer_add(p->hold_timer, &tv);
	}
}

/*
 * A call whose reply exceeds what the gateway estimated: the first attempt
 * (a Reply chunk under BIG_REPLY bytes, or none) gets ERR_CHUNK, as from the
 * Linux server; the retry must come under a new XID with a Reply chunk of
 * one segment large enough, and gets a BIG_REPLY-byte reply written into it.
 */
static void big_reply(struct peer *p, const uint8_t *b, uint32_t len)
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
		answered(p, xid);
		send_words(p, &w);
		return;
	}
	struct seg s = { xdr_get32(b + 32), xdr_get32(b + 36), xdr_get64(b + 40) };
	CHECK(xdr_get32(b + 28) == 1 && big_refused[k] == 1 && xid != big_first_xid[k] &&
		      xdr_get32(b + rpc) == xid,
	      "program %u: the call came again under a new XID (%#x after %#x) with a "
	      "%u-byte Reply chunk",
	      xdr_get32(b + rpc + 12), xid, big_first_xid[k], s.length);
	/* The reply: accepted, SUCCESS, then a pattern the client checks. */
	struct gw_buf *big = peer_buf(p, BIG_REPLY);
	if (!big) {
		CHECK(0, "a buffer for the big reply");
		return;
	}
	struct words r = { .len = 0 };
	null_reply(&r, xid);
	memcpy(big->base, r.b, r.len);
	for (uint32_t i = r.len; i < BIG_REPLY; i++)
		big->base[i] = (uint8_t)(i * 7 + 3);
	if (!write_into(p, big, BIG_REPLY, &s)) {
		CHECK(0, "the big reply written into the Reply chunk");
		return;
	}
	nomsg_reply(&w, xid, &s, BIG_REPLY);
	big_answered[k]++;
	answered(p, xid);
	send_words(p, &w);
}

/* A backward reply from the gateway: the client's, or the gateway's own SYSTEM_ERR. */
static void backward_reply(const uint8_t *b, uint32_t len)
{
	uint32_t xid = xdr_get32(b);
	uint32_t stat = len >= 28 + 24 ? xdr_get32(b + 28 + 20) : UINT32_MAX;

	if (xid < FLOOD_XID || xid >= FLOOD_XID + FLOOD || len < 28 + 24 ||
	    xdr_get32(b + 28) != xid || xdr_get32(b + 28 + 8) != 0)
		bc_other++;
	else if (stat == 0)
		bc_success++;
	else if (stat == 5)
		bc_system_err++;
	else
		bc_other++;
}

/* ---- Version Two ---- */

enum { V2_MSG = 0, V2_ERROR = 4, V2_OPTIONAL = 5, V2_CALL = 0, V2_REPLY = 1 };

/* An RDMA2_MSG without chunks, direction @dir, carrying a NULL reply to @xid. */
static void v2_msg_reply(struct words *w, uint32_t xid, uint32_t dir)
{
	w->len = 0;
	w32(w, xid);
	w32(w, 2);
	w32(w, GRANT);
	w32(w, V2_MSG);
	w32(w, dir);
	w32(w, 0);
	w32(w, 0);
	w32(w, 0);
	null_reply(w, xid);
}

/* What comes before the reply to 0x3d01..0x3d03; false for the other XIDs. */
static bool v2_trick(struct words *w, uint32_t xid)
{
	switch (xid) {
	case 0x3d01:
		v2_msg_reply(w, xid, V2_CALL); /* a REPLY said to be a CALL */
		return true;
	case 0x3d02:
		w->len = 0;
		w32(w, xid);
		w32(w, 2);
		w32(w, GRANT);
		w32(w, V2_OPTIONAL);
		w32(w, V2_REPLY);
		w32(w, 0x7e57);	    /* rdma_opttype: the draft defines none */
		w32(w, 4);	    /* rdma_optinfo, 4 bytes */
		w32(w, 0xdeadbeef); /* and no payload */
		return true;
	case 0x3d03:
		hdr(w, xid, 0); /* Version One RDMA_MSG */
		w32(w, 0);
		w32(w, 0);
		w32(w, 0);
		null_reply(w, xid);
		return true;
	default:
		return false;
	}
}

/*
 * A Version Two call: check its form, answer it as its XID says. Calls
 * come as RDMA2_MSG, direction CALL, the RPC call inline under the same
 * XID; only 0x3d10, whose reply the gateway cannot estimate, may offer a
 * Reply chunk (answered inline all the same: the reply is small).
 */
static void v2_call(struct peer *p, const uint8_t *b, uint32_t len)
{
	uint32_t xid = xdr_get32(b);
	struct call_info ci;
	struct words w;

	v2_calls++;
	if (!(len >= 24 && parse_call_at(b, len, &ci, 20) && ci.proc == V2_MSG &&
	      xdr_get32(b + 16) == V2_CALL && ci.nreads == 0 && !ci.write &&
	      (!ci.reply || xid == 0x3d10) && ci.rpc + 8 <= len && xdr_get32(b + ci.rpc) == xid &&
	      xdr_get32(b + ci.rpc + 4) == 0)) {
		v2_bad++;
		printf("  call %#x: not an RDMA2_MSG CALL inline, same XID\n", xid);
	} else if (xid == 0x3d10 && p->no_pd && len - ci.rpc >= INLINE_V2) {
		v2_big_inline++;
	}
	if (v2_trick(&w, xid)) {
		v2_tricks++;
		send_words(p, &w);
	}
	if (xid == 0x3d04 || xid == 0x3d05 || xid == 0x3d07) {
		w.len = 0;
		w32(&w, xid);
		w32(&w, 2);
		w32(&w, GRANT);
		w32(&w, V2_ERROR);
		w32(&w, xid == 0x3d04 ? 3 : 2); /* RDMA2_ERR_INVAL_OPTION, RDMA2_ERR_BAD_HEADER */
		errors_sent++;
	} else {
		v2_msg_reply(&w, xid, V2_REPLY);
	}
	answered(p, xid);
	send_words(p, &w);
}

/* Track what the gateway has outstanding on @p against what it may. */
static void count_call(struct peer *p, uint32_t xid, uint32_t asked)
{
	calls++;
	p->requested = asked;
	p->outstanding++;
	if (p->outstanding > p->limit) {
		over_grant++;
		printf("  call %#x: %u outstanding with %u allowed\n", xid, p->outstanding,
		       p->limit);
	}
	if ((xid & ~0xffu) == 0x3100 && p->outstanding > max_out_31)
		max_out_31 = p->outstanding;
	if (xid >= 0x3810 && xid < 0x3820) {
		calls_g0++;
		if (p->outstanding > max_out_g0)
			max_out_g0 = p->outstanding;
	}
	if (xid >= 0x3830 && xid < 0x3850) {
		calls_gmax++;
		asked_gmax = asked;
		if (p->outstanding > max_out_gmax)
			max_out_gmax = p->outstanding;
	}
}

static void on_recv(struct rconn *c, void *owner, struct gw_buf *buf, uint32_t len, uint32_t inv)
{
	struct peer *p = owner;
	const uint8_t *b = buf->base;
	struct call_info ci;
	bool parsed = parse_call(b, len, &ci);

	p->conn = c;

	/* First: Version Two's layout read as Version One's can pass for a backward reply. */
	if (len >= 12 && xdr_get32(b + 4) == 2) {
		count_call(p, xdr_get32(b), xdr_get32(b + 8));
		v2_call(p, b, len);
		gw_buf_put(buf);
		return;
	}
	if (parsed && ci.proc == 0 && ci.rpc + 8 <= len && xdr_get32(b + ci.rpc + 4) == 1) {
		backward_reply(b, len);
		gw_buf_put(buf);
		return;
	}
	uint32_t xid = len >= 4 ? xdr_get32(b) : 0;
	count_call(p, xid, len >= 12 ? xdr_get32(b + 8) : 0);
	if (!parsed || xdr_get32(b + 4) != 1) {
		bad_calls++;
		printf("  call %#x: not a Version One call that parses\n", xid);
		gw_buf_put(buf);
		return;
	}
	/* Behind a shared route the XID is the gateway's: there the program says it. */
	bool by_prog = ci.rpc + 16 <= len && xdr_get32(b + ci.rpc + 12) == PROG_SWALLOW;
	switch (by_prog ? 0x3900 : xid & ~0xffu) {
	case 0x3600:
		answer_pattern(p, &ci);
		break;
	case 0x3700:
		answer_lazy(p, &ci);
		break;
	case 0x3900:
		p->swallowed = true;
		swallowers++;
		break;
	case 0x3a00:
		answer_write_imm(p, &ci);
		break;
	case 0x3b00:
		if (ci.write)
			answer_send_inv(p, &ci);
		else
			answer(p, xid); /* the NULL call that brings the grant to 2 */
		break;
	default:
		if (ci.reply || xid == 0x3302) {
			/* A Reply chunk is offered (GETACL), or the GETATTR without one. */
			big_reply(p, b, len);
			break;
		}
		if (!(ci.proc == 0 && ci.nreads == 0 && !ci.write && xdr_get32(b + 28) == xid &&
		      xdr_get32(b + 32) == 0)) {
			bad_calls++;
			printf("  call %#x: not a Version One RDMA_MSG without chunks, same XID\n",
			       xid);
		}
		if (xid == 0x3fff)
			stop_asked = true;
		if ((xid & ~0xffu) == 0x3100 || (xid >= 0x3810 && xid < 0x3820) ||
		    (xid >= 0x3830 && xid < 0x3850))
			hold(p, xid);
		else
			answer(p, xid);
	}
	gw_buf_put(buf);
}

/* The accept callback does not know the rconn yet: each callback tells it. */
static void on_established(struct rconn *c, void *owner, const uint8_t *pdata, uint8_t len)
{
	((struct peer *)owner)->conn = c;
}

static void on_closed(struct rconn *c, void *owner, enum rconn_close_reason reason)
{
	struct peer *p = owner;

	p->conn = c;
	p->live = false;
	p->reason = reason;
	evtimer_del(p->hold_timer);
	live_peers--;
	if (p->broke_rules && reason != RCONN_CLOSE_LOCAL)
		breakers_closed++;
	if (p->swallowed && reason != RCONN_CLOSE_LOCAL)
		swallowed_closed++;
	if (stop_asked && live_peers == 0)
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
	struct rpcrdma_privdata pd = { 0 };

	if (npeers == MAX_PEERS) {
		CHECK(0, "room for connection %u", npeers + 1);
		return false;
	}
	if (!rpcrdma_privdata_decode(pdata, pdata_len, &pd))
		CHECK(0, "the gateway sent RFC 8797 private data");
	struct peer *p = &peers[npeers++];
	p->no_pd = owner != NULL;
	p->remote_inv = pd.remote_inv;
	p->live = true;
	p->limit = 1; /* until the first reply */
	p->requested = UINT32_MAX;
	p->hold_timer = evtimer_new(base, on_hold, p);
	live_peers++;
	*ops = &conn_ops;
	*conn_owner = p;
	return true;
}

static void on_term(evutil_socket_t fd, short what, void *arg)
{
	printf("  SIGTERM: stopping\n");
	event_base_loopexit(base, NULL);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: rdma_badserver ADDR PORT\n");
		return 2;
	}
	base = event_base_new();
	struct rdma_pool_config pc;
	rdma_pool_default_config(&pc, 4096, SRC_SIZE, 64);
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
	struct event *term = evsignal_new(base, SIGTERM, on_term, NULL);
	evsignal_add(term, NULL);
	struct rlistener *l =
		rlistener_create(ctx, (struct sockaddr *)&sa, 16, &defaults, &lops, NULL);
	/* The second listener sends no private data; its owner marks its connections. */
	static int no_pd_marker;
	struct rconn_params no_pd = defaults;
	no_pd.private_data_len = 0;
	sa.sin_port = htons(atoi(argv[2]) + 1);
	struct rlistener *l2 =
		l ? rlistener_create(ctx, (struct sockaddr *)&sa, 16, &no_pd, &lops, &no_pd_marker)
		  : NULL;
	if (!l || !l2) {
		printf("FAIL: cannot listen on %s:%s and the port after it\n", argv[1], argv[2]);
		return 1;
	}
	printf("listening\n");
	fflush(stdout);
	event_base_dispatch(base);

	CHECK(stop_asked && live_peers == 0,
	      "asked to stop, every connection gone (%u connections, %u live)", npeers, live_peers);
	CHECK(bad_calls == 0,
	      "every call was a Version One call that parses; without chunks, RDMA_MSG with "
	      "equal XIDs (%u bad)",
	      bad_calls);
	CHECK(over_grant == 0, "never more calls outstanding than granted (%u over)", over_grant);
	CHECK(max_out_31 == GRANT,
	      "the gateway used the whole grant: %u calls outstanding at most, %d granted",
	      max_out_31, GRANT);
	CHECK(errors_sent == 5,
	      "ERR_VERS, ERR_CHUNK, RDMA2_ERR_INVAL_OPTION and RDMA2_ERR_BAD_HEADER (twice) were "
	      "sent (%u)",
	      errors_sent);
	CHECK(v2_calls == 11 && v2_bad == 0 && v2_tricks == 3,
	      "11 Version Two calls (%u), each an RDMA2_MSG CALL without chunks (%u not); 3 bad "
	      "messages sent (%u)",
	      v2_calls, v2_bad, v2_tricks);
	CHECK(v2_big_inline == 1,
	      "without private data, a %u-byte call came inline in Version Two (%u)", INLINE_V2,
	      v2_big_inline);
	CHECK(big_calls[0] == 2 && big_refused[0] == 1 && big_answered[0] == 1,
	      "GETACL: refused once for a small Reply chunk, answered on the retry (%u calls)",
	      big_calls[0]);
	CHECK(big_calls[1] == 2 && big_refused[1] == 1 && big_answered[1] == 1,
	      "GETATTR: refused once without a Reply chunk, answered on the retry (%u calls)",
	      big_calls[1]);
	CHECK(patterns_sent >= 2 && lazy_sent == 3,
	      "chunks filled with PATTERN (%u), lazy answers claiming unwritten bytes (%u of 3)",
	      patterns_sent, lazy_sent);
	CHECK(calls_g0 > 1 && max_out_g0 == 1,
	      "a grant of 0 was taken as 1: %u calls, at most %u outstanding", calls_g0,
	      max_out_g0);
	CHECK(calls_gmax > asked_gmax && asked_gmax > 1 && max_out_gmax == asked_gmax,
	      "a grant of 2^32 - 1 was capped by the %u credits asked: %u calls, at most %u "
	      "outstanding",
	      asked_gmax, calls_gmax, max_out_gmax);
	CHECK(swallowers == 1 && swallowed_closed == 1,
	      "the connection with a call never answered was closed by the gateway (%u of %u)",
	      swallowed_closed, swallowers);
	CHECK(inv_allowed == 1,
	      "one Send With Invalidate of the call's own chunk where the gateway offered it "
	      "(%u)",
	      inv_allowed);
	CHECK(breakers == 4 && breakers_closed == 4,
	      "the connections where Write With Immediate or Send With Invalidate came were "
	      "closed by the gateway (%u of %u)",
	      breakers_closed, breakers);
	CHECK(flood_sent == FLOOD && bc_system_err + bc_success == FLOOD && bc_success >= 1 &&
		      bc_system_err >= 1 && bc_other == 0,
	      "%u backward calls at once: %u answered by the client, %u SYSTEM_ERR from the "
	      "gateway, %u other",
	      flood_sent, bc_success, bc_system_err, bc_other);
	printf("%u calls served on %u connections\n", calls, npeers);
	rlistener_destroy(l);
	rlistener_destroy(l2);
	for (unsigned i = 0; i < npeers; i++) {
		if (peers[i].conn)
			rconn_destroy(peers[i].conn);
	}
	/* After the connections: their Writes are long done. */
	for (unsigned i = 0; i < npeers; i++) {
		for (unsigned k = 0; k < peers[i].nbufs; k++)
			gw_buf_put(peers[i].bufs[k]);
		event_free(peers[i].hold_timer);
	}
	event_free(term);
	rdma_ctx_destroy(ctx);
	event_base_free(base);
	return failures ? 1 : 0;
}
