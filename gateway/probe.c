/* SPDX-License-Identifier: MIT */
#include "gateway/probe.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include <event2/event.h>
#include <rpc/rpc.h>

#include "common/clock.h"
#include "common/log.h"
#include "rdma/conn.h"
#include "rdma/device.h"
#include "rdma/privdata.h"
#include "rdma/rpcrdma_hdr.h"
#include "ulb-rules/rpc_msg.h"

enum { PROBE_INLINE = 4096, PROBE_CREDITS = 32 };

struct probe {
	const struct gw_probe_options *opt;
	FILE *out;
	struct event_base *base;
	struct rconn *conn;
	struct rpcrdma_limits limits;
	struct rpcrdma_thresholds thresholds;
	struct rconn_wr send_wr;
	struct gw_buf *send_buf;
	uint32_t xid;
	int result; /* 0 success, 1 failure; -1 not finished */
	bool closing;
};

static void probe_finish(struct probe *p, int result)
{
	if (p->result < 0)
		p->result = result;
	if (!p->closing) {
		p->closing = true;
		rconn_close(p->conn);
	}
}

/*
 * The RPC call header is built with libtirpc's own encoder: a probe is not
 * the data path, and the library gets the credential and verifier layout
 * right by construction.
 */
static int probe_encode_null_call(struct probe *p, uint8_t *buf, unsigned cap)
{
	struct rpc_msg call;
	XDR xdrs;

	memset(&call, 0, sizeof(call));
	call.rm_xid = p->xid;
	call.rm_direction = CALL;
	call.rm_call.cb_rpcvers = RPC_MSG_VERSION;
	call.rm_call.cb_prog = p->opt->program;
	call.rm_call.cb_vers = p->opt->version;
	call.rm_call.cb_proc = 0; /* NULL */
	call.rm_call.cb_cred.oa_flavor = AUTH_NONE;
	call.rm_call.cb_verf.oa_flavor = AUTH_NONE;
	xdrmem_create(&xdrs, (char *)buf, cap, XDR_ENCODE);
	bool ok = xdr_callmsg(&xdrs, &call);
	int len = ok ? (int)xdr_getpos(&xdrs) : -1;
	xdr_destroy(&xdrs);
	return len;
}

static void probe_send_done(struct rconn_wr *wr, enum ibv_wc_status status)
{
	struct probe *p = (struct probe *)((char *)wr - offsetof(struct probe, send_wr));

	gw_buf_put(p->send_buf);
	p->send_buf = NULL;
	if (status != IBV_WC_SUCCESS) {
		fprintf(p->out, "probe: the call was not sent: %s\n", ibv_wc_status_str(status));
		probe_finish(p, 1);
	}
}

static void probe_established(struct rconn *c, void *owner, const uint8_t *pdata, uint8_t len)
{
	struct probe *p = owner;
	struct rpcrdma_privdata own = { .remote_inv = true,
					.send_size = PROBE_INLINE,
					.recv_size = PROBE_INLINE };
	struct rpcrdma_privdata peer;

	fprintf(p->out, "probe: connected to %s (device %s)\n", p->opt->dst_text,
		rdma_dev_name(rconn_device(c)));
	if (rpcrdma_privdata_decode(pdata, len, &peer))
		fprintf(p->out,
			"probe: server private data (RFC 8797): send %u, receive %u, "
			"remote invalidation %s\n",
			peer.send_size, peer.recv_size, peer.remote_inv ? "yes" : "no");
	else
		fprintf(p->out, "probe: server sent no RFC 8797 private data: "
				"assuming 1024-byte inline both ways\n");
	rpcrdma_inline_thresholds(&own, &peer, &p->thresholds);
	fprintf(p->out, "probe: inline thresholds: calls %u bytes, replies %u bytes\n",
		p->thresholds.send, p->thresholds.recv);

	p->send_buf = rdma_pool_alloc(rdma_dev_pool(rconn_device(c)), PROBE_INLINE);
	if (!p->send_buf) {
		fprintf(p->out, "probe: no send buffer\n");
		probe_finish(p, 1);
		return;
	}
	uint8_t *b = p->send_buf->base;
	ssize_t hlen =
		rpcrdma_encode_msg_inline(b, PROBE_INLINE, RPCRDMA_V1, p->xid, PROBE_CREDITS);
	int rlen =
		hlen > 0 ? probe_encode_null_call(p, b + hlen, PROBE_INLINE - (unsigned)hlen) : -1;
	if (rlen < 0) {
		fprintf(p->out, "probe: cannot encode the call\n");
		probe_finish(p, 1);
		return;
	}
	struct ibv_sge sge = { .addr = (uintptr_t)b,
			       .length = (uint32_t)hlen + (uint32_t)rlen,
			       .lkey = p->send_buf->lkey };
	p->send_wr.done = probe_send_done;
	int err = rconn_send(c, &sge, 1, 0, &p->send_wr);
	if (err) {
		fprintf(p->out, "probe: send failed: %s\n", strerror(-err));
		probe_finish(p, 1);
		return;
	}
	fprintf(p->out,
		"probe: sent RPC NULL call, xid %#x, program %u version %u, as RDMA_MSG "
		"(%zd + %d bytes), requesting %u credits\n",
		p->xid, p->opt->program, p->opt->version, hlen, rlen, PROBE_CREDITS);
}

static int probe_check_reply(struct probe *p, const uint8_t *rpc, uint32_t len)
{
	struct rpc_reply_hdr rh;

	if (!rpc_reply_hdr_parse(rpc, len, &rh)) {
		fprintf(p->out, "probe: the RPC reply does not decode\n");
		return 1;
	}
	if (rh.reply_stat != RPC_MSG_ACCEPTED) {
		fprintf(p->out, "probe: the call was denied (reject status %u)\n", rh.stat);
		return 1;
	}
	if (rh.stat != RPC_ACC_SUCCESS) {
		fprintf(p->out, "probe: the call was accepted with error status %u\n", rh.stat);
		return 1;
	}
	fprintf(p->out, "probe: reply accepted: success\n");
	return 0;
}

static void probe_recv(struct rconn *c, void *owner, struct gw_buf *buf, uint32_t len,
		       uint32_t inv_rkey)
{
	struct probe *p = owner;
	struct rpcrdma_hdr h;
	enum rpcrdma_reason r = rpcrdma_hdr_decode(&h, buf->base, len, &p->limits);
	int result = 1;

	if (r != RPCRDMA_OK) {
		fprintf(p->out, "probe: bad transport header in the reply: %s\n",
			rpcrdma_reason_name(r));
	} else if (h.proc == RPCRDMA_ERROR) {
		if (h.err == RPCRDMA_ERR_VERS)
			fprintf(p->out, "probe: server answered ERR_VERS (it speaks %u..%u)\n",
				h.vers_low, h.vers_high);
		else
			fprintf(p->out, "probe: server answered ERR_CHUNK\n");
	} else if (h.xid != p->xid || h.proc != RPCRDMA_MSG) {
		fprintf(p->out, "probe: unexpected message (xid %#x, proc %u)\n", h.xid, h.proc);
	} else if ((r = rpcrdma_hdr_check_xid(&h, buf->base + h.hdr_len, h.inline_len)) !=
		   RPCRDMA_OK) {
		fprintf(p->out, "probe: RPC message does not match its header: %s\n",
			rpcrdma_reason_name(r));
	} else {
		fprintf(p->out,
			"probe: reply xid %#x, RDMA_MSG, %u bytes inline, credits granted: %u\n",
			h.xid, h.inline_len, h.credits);
		result = probe_check_reply(p, buf->base + h.hdr_len, h.inline_len);
	}
	gw_buf_put(buf);
	probe_finish(p, result);
}

static void probe_closed(struct rconn *c, void *owner, enum rconn_close_reason reason)
{
	struct probe *p = owner;

	if (p->result < 0)
		fprintf(p->out, "probe: connection to %s failed: %s\n", p->opt->dst_text,
			rconn_close_reason_str(reason));
	probe_finish(p, 1);
	event_base_loopexit(p->base, NULL);
}

static void probe_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct probe *p = arg;

	fprintf(p->out, "probe: no answer from %s within %u ms\n", p->opt->dst_text,
		p->opt->timeout_ms);
	probe_finish(p, 1);
}

static const struct rconn_ops probe_ops = {
	.established = probe_established,
	.recv = probe_recv,
	.closed = probe_closed,
};

int gw_probe_run(const struct gw_probe_options *opt, FILE *out)
{
	struct probe p = { .opt = opt, .out = out, .result = -1 };
	struct rdma_pool_config pool_cfg;
	struct rconn_params params = {
		.recv_count = 4,
		.recv_size = PROBE_INLINE,
		.send_depth = 16,
		.max_send_sge = 2,
		.responder_resources = 1, /* the Linux server refuses 0 */
		.initiator_depth = 1,
		.connect_timeout_ms = opt->timeout_ms,
	};
	struct rpcrdma_privdata own = { .remote_inv = true,
					.send_size = PROBE_INLINE,
					.recv_size = PROBE_INLINE };

	rpcrdma_limits_default(&p.limits);
	if (getrandom(&p.xid, sizeof(p.xid), 0) != sizeof(p.xid))
		p.xid = (uint32_t)time(NULL);
	rpcrdma_privdata_encode(params.private_data, &own);
	params.private_data_len = RPCRDMA_PD_SIZE;

	p.base = event_base_new();
	rdma_pool_default_config(&pool_cfg, PROBE_INLINE, 65536, 4);
	struct rdma_ctx *ctx = p.base ? rdma_ctx_create(p.base, &pool_cfg) : NULL;
	if (!ctx) {
		fprintf(out, "probe: RDMA is not available here (no rdma_ucm, or no device)\n");
		if (p.base)
			event_base_free(p.base);
		return 1;
	}
	struct event *timer = evtimer_new(p.base, probe_timeout, &p);
	struct timeval tv = gw_ms_timeval(opt->timeout_ms);
	evtimer_add(timer, &tv);

	p.conn = rconn_connect(ctx, opt->dst, NULL, &params, &probe_ops, &p);
	if (p.conn)
		event_base_dispatch(p.base);
	else
		p.result = 1;

	event_free(timer);
	rconn_destroy(p.conn);
	rdma_ctx_destroy(ctx);
	event_base_free(p.base);
	return p.result == 0 ? 0 : 1;
}
