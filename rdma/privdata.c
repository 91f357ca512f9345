/* SPDX-License-Identifier: MIT */
/*
 * rdma/privdata.c - RFC 8797 private data and inline thresholds.
 */
#include "rdma/privdata.h"

#include "common/xdr.h"

/* bytes -> size octet: round down to whole KiB, within 1 .. 256 KiB */
static uint8_t size_encode(uint32_t bytes)
{
	if (bytes < RPCRDMA_INLINE_DEFAULT)
		bytes = RPCRDMA_INLINE_DEFAULT;
	if (bytes > RPCRDMA_INLINE_MAX)
		bytes = RPCRDMA_INLINE_MAX;
	return (uint8_t)(bytes / 1024u - 1u);
}

static uint32_t size_decode(uint8_t octet)
{
	return ((uint32_t)octet + 1u) * 1024u;
}

void rpcrdma_privdata_default(struct rpcrdma_privdata *pd)
{
	pd->remote_inv = false;
	pd->send_size = RPCRDMA_INLINE_DEFAULT;
	pd->recv_size = RPCRDMA_INLINE_DEFAULT;
}

void rpcrdma_privdata_encode(uint8_t out[RPCRDMA_PD_SIZE], const struct rpcrdma_privdata *pd)
{
	xdr_put32(out, RPCRDMA_PD_MAGIC);
	out[4] = RPCRDMA_PD_VERSION;
	out[5] = pd->remote_inv ? RPCRDMA_PD_FLAG_REMOTE_INV : 0;
	out[6] = size_encode(pd->send_size);
	out[7] = size_encode(pd->recv_size);
}

bool rpcrdma_privdata_decode(const void *buf, size_t len, struct rpcrdma_privdata *pd)
{
	const uint8_t *p = buf;

	rpcrdma_privdata_default(pd);
	if (!p || len < RPCRDMA_PD_SIZE)
		return false;
	if (xdr_get32(p) != RPCRDMA_PD_MAGIC || p[4] != RPCRDMA_PD_VERSION)
		return false;
	pd->remote_inv = (p[5] & RPCRDMA_PD_FLAG_REMOTE_INV) != 0;
	pd->send_size = size_decode(p[6]);
	pd->recv_size = size_decode(p[7]);
	return true;
}

static uint32_t min32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

void rpcrdma_inline_thresholds(const struct rpcrdma_privdata *local,
			       const struct rpcrdma_privdata *peer, struct rpcrdma_thresholds *t)
{
	t->send = min32(local->send_size, peer->recv_size);
	t->recv = min32(peer->send_size, local->recv_size);
}
