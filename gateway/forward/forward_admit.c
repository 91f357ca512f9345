/* SPDX-License-Identifier: MIT */
/*
 * gateway/forward/forward_admit.c - forward mode, call slots, and records from the client: a CALL
 * parsed by its Upper-Layer Binding into a slot and onto the send queue, a
 * REPLY handed to the backward direction. Reading pauses when slots or
 * max_session_memory run out.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "common/clock.h"
#include "common/host.h"
#include "common/log.h"
#include "common/xdr.h"
#include "gateway/core/session.h"
#include "gateway/maps/xidmap.h"
#include "rdma/conn.h"
#include "rdma/device.h"
#include "rdma/privdata.h"
#include "rdma/rpcrdma_hdr.h"
#include "rdma/splice.h"
#include "tcp/tcp_conn.h"
#include "ulb-rules/rpc_msg.h"
#include "ulb-rules/ulb.h"
#include "gateway/forward/forward_priv.h"

/* ---- call slots ---- */

/* A freed slot; else one never used (fwd_alloc_slots() says why they are made late). */
static struct fwd_call *fwd_call_get(struct fwd_session *s)
{
	bool fresh;
	struct fwd_call *c = gw_slots_get(&s->slots, &fresh);

	if (c && fresh) {
		c->s = s;
		c->index = (uint32_t)(c - s->calls);
		c->upx = WIREXID_NONE;
		c->state = FC_FREE;
	}
	return c;
}

static void fwd_call_release_buffers(struct fwd_call *c)
{
	if (c->rec)
		gw_buf_put(c->rec);
	if (c->hdr)
		gw_buf_put(c->hdr);
	for (uint32_t k = 0; k < c->nwrites; k++) {
		if (c->wbuf[k])
			gw_buf_put(c->wbuf[k]);
	}
	if (c->rbuf)
		gw_buf_put(c->rbuf);
	if (c->reply)
		gw_buf_put(c->reply);
}

/* Return @c to the free list once nothing refers to its memory any more. */
/*
 * client_reserved_port: the export's `secure` option, held here. The Linux
 * server takes every RPC-over-RDMA call as from a secure port
 * (svc_rdma_secure_port()), and the gateway's own upstream port is
 * reserved anyway, so the client's port is judged at the gateway, as nfsd
 * judges it (nfsd_originating_port_ok()): NULL (mount.nfs probes from any
 * port) and RPCSEC_GSS calls go whatever the port.
 */
static bool fwd_port_refused(const struct fwd_session *s, const struct fwd_call *c)
{
	if (!s->base.route->cfg->client_reserved_port || c->ulb.proc == 0 ||
	    c->ulb.flavor >= RPC_AUTH_GSS)
		return false;
	/* A local socket has no port to judge. */
	return (s->peer.ss_family == AF_INET || s->peer.ss_family == AF_INET6) &&
	       gw_sockaddr_port(&s->peer) >= IPPORT_RESERVED;
}

void fwd_call_put(struct fwd_call *c)
{
	struct fwd_session *s = c->s;

	if (c->send_pending || c->fence_pending)
		return;
	if (c->qos_admitted)
		fwd_qos_done(c);
	fwd_call_release_buffers(c);
	s->mem_held -= c->mem;
	s->up->call_freed(c);
	uint32_t index = c->index;
	memset(c, 0, sizeof(*c));
	c->s = s;
	c->index = index;
	c->upx = WIREXID_NONE;
	c->state = FC_FREE;
	gw_slots_put(&s->slots, c);
	if (s->mem_paused && s->mem_held <= s->base.route->cfg->max_session_memory / 2)
		s->mem_paused = false;
	if (s->read_paused && !s->mem_paused && s->state == FS_READY &&
	    s->queued < s->base.route->cfg->queue_limit && !fwd_qos_holding(s)) {
		s->read_paused = false;
		tcp_conn_resume_read(s->tcp);
	}
	if (s->draining && s->slots.busy == 0) {
		fwd_session_close(s); /* may free s */
		return;
	}
	fwd_maybe_free(s);
}

/*
 * The session is closing and @c will get no reply: a call on the wire is
 * taken off it. Its memory is safe to reuse once no work request refers to
 * it (fwd_call_put() waits for those): rconn_close() moved the queue pair to
 * the error state, so the server can no longer reach any of its windows.
 */
void fwd_call_abandon(struct fwd_call *c)
{
	struct fwd_session *s = c->s;

	if (c->state == FC_SENT)
		s->up->call_done(c, false);
	c->state = FC_DONE;
	fwd_call_put(c);
}

/* ---- calls from the client ---- */

static void fwd_call_admit(struct fwd_session *s, struct gw_buf *buf, uint32_t off, uint32_t len)
{
	struct fwd_call *c = fwd_call_get(s);

	if (!c) {
		/* Cannot happen: reading pauses when slots run out. */
		gw_err("forward %s: no call slot; dropping a call", s->base.client);
		gw_buf_put(buf);
		return;
	}
	c->rec = buf;
	c->rec_off = off;
	c->rec_len = len;
	c->mem = len;
	s->mem_held += len;
	c->t_in = gw_now_pass_us();
	gw_session_touch(&s->base, c->t_in);
	enum ulb_status st =
		ulb_parse_call(s->base.rules, &s->ulb_sessions, buf->base + off, len, &c->ulb);
	c->xid = xdr_get32(buf->base + off);
	c->wire_xid = c->xid;
	if (st == ULB_DDP_STOPPED)
		gw_count_event(&s->base, GW_EV_ULB_UNKNOWN_OP);
	/*
	 * A call the ULB cannot parse still goes to the server, inline or in
	 * Position Zero: the server is the one to answer GARBAGE_ARGS. Its
	 * reply may be as large as any.
	 */
	if (st == ULB_GARBAGE_ARGS || st == ULB_BAD_HEADER) {
		c->ulb.n_args = 0;
		c->ulb.n_results = 0;
		if (c->ulb.reply_max == 0)
			c->ulb.reply_max = rdma_pool_max_size(fwd_pool(s));
	}
	gw_count_call(&s->base, c->ulb.prog, c->ulb.vers, c->ulb.proc);
	if (fwd_port_refused(s, c)) {
		gw_count_event(&s->base, GW_EV_INSECURE_PORT);
		fwd_reply_auth_error(s, c->xid, RPC_AUTHSTAT_TOOWEAK);
		c->state = FC_DONE;
		fwd_call_put(c); /* may free s (a draining session's last call) */
		return;
	}
	if (s->base.route->qos)
		fwd_qos_admit(s, c); /* held to its class's limits first (forward_qos.c) */
	else
		s->up->admit(s, c); /* mapped to its wire XID, queued, sent when it may */
}

/*
 * A record larger than the route carries (tcp_conn skips it without holding
 * it: skip_oversized). A client that sends one ignored the sizes the route
 * told it (size_clamp.h) or could not be told them (RPCSEC_GSS integrity
 * and privacy). Closing the connection, as for a broken stream, made the
 * Linux client reconnect and send the same record again for ever; a call
 * answered GARBAGE_ARGS (the arguments could not be taken) ends in an I/O
 * error for that one request and the connection goes on. Logged at most once
 * a second per route, with a count, so that no client can make the log grow
 * without bound.
 */
void fwd_oversized(struct tcp_conn *tc, const uint8_t *head, uint32_t head_len, uint64_t record_len,
		   void *arg)
{
	struct fwd_session *s = arg;
	struct gw_route_rt *rt = s->base.route;
	uint32_t xid, type;
	uint64_t more;

	(void)tc;
	bool call = rpc_msg_peek(head, head_len, &xid, &type) && type == RPC_MSG_CALL;
	if (gw_ratelimit_allow(&rt->oversize_log, gw_now_pass_us(), &more))
		gw_warn("forward %s: a record of %llu bytes is larger than the route carries "
			"(max_record_size %u): %s; its rsize or wsize is larger than the route's: "
			"mount with smaller ones, or raise max_record_size (%llu more since the "
			"last "
			"line)",
			s->base.client, (unsigned long long)record_len, rt->cfg->max_record_size,
			call ? "skipped, the call answered GARBAGE_ARGS" : "skipped (not a call)",
			(unsigned long long)more);
	if (!call) {
		gw_count_event(&s->base, GW_EV_MALFORMED_RECORD);
		return;
	}
	gw_count_event(&s->base, GW_EV_RECORD_TOO_LARGE_ANSWERED);
	if (s->state == FS_READY && !s->draining)
		fwd_reply_error(s, xid, RPC_ACC_GARBAGE_ARGS);
}

void fwd_record(struct tcp_conn *tc, struct gw_buf *buf, uint32_t off, uint32_t len, void *arg)
{
	struct fwd_session *s = arg;
	uint32_t xid, type;

	GW_COUNT(&s->base, tcp_bytes_in, len + 4);
	if (s->state != FS_READY || s->draining) {
		gw_buf_put(buf);
		return;
	}
	if (!rpc_msg_peek(buf->base + off, len, &xid, &type)) {
		gw_count_event(&s->base, GW_EV_MALFORMED_RECORD);
		gw_buf_put(buf);
		return;
	}
	if (type == RPC_MSG_REPLY) {
		/* The msg_type tells a backward reply from a call, never the XID. */
		fwd_backward_reply(s, buf, off, len, xid);
		return;
	}
	uint64_t waited = tcp_conn_rx_wait_us(tc);
	if (waited != TCP_CONN_RX_WAIT_UNKNOWN) {
		gw_hist_add(&s->base.counters.socket_us, waited);
		gw_hist_add(&s->base.route->counters.socket_us, waited);
	}
	fwd_call_admit(s, buf, off, len);
	if (s->state != FS_READY)
		return;
	if (s->mem_held >= s->base.route->cfg->max_session_memory && !s->mem_paused) {
		/* Resumed by fwd_call_put() once half of it is free again. */
		s->mem_paused = true;
		gw_count_event(&s->base, GW_EV_SESSION_MEMORY_LIMIT);
	}
	if (gw_slots_full(&s->slots) || s->queued >= s->base.route->cfg->queue_limit ||
	    s->mem_paused) {
		s->read_paused = true;
		tcp_conn_pause_read(s->tcp);
	}
}
