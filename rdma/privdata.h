/* SPDX-License-Identifier: MIT */
/*
 * rdma/privdata.h - RDMA-CM private data of RPC-over-RDMA Version One
 * (RFC 8797) and the inline thresholds it sets.
 *
 * Both peers may put 8 octets in the private data of the CM connect
 * request and accept: a format identifier, a version, flags, and the
 * largest message each side will send and can receive inline:
 *
 *    0                   1                   2                   3
 *   +---------------------------------------------------------------+
 *   |                 format identifier 0xf6ab0e18                   |
 *   +---------------+---------------+---------------+---------------+
 *   |  version (1)  | flags (bit0=R)|   send size   | receive size  |
 *   +---------------+---------------+---------------+---------------+
 *
 * A size octet s means (s + 1) * 1024 bytes: 1 KiB to 256 KiB. The R bit
 * says the sender accepts Send With Invalidate. Private data that is absent,
 * short, of another format or of an unknown version counts as absent: R
 * clear and 1024 bytes each way, Version One's default inline threshold.
 *
 * Each direction's inline threshold is the smaller of what its sender
 * sends and what its receiver receives. Note that the Linux server sizes
 * its inline replies by its own send size (4096) without looking at the
 * client's receive size: a requester talking to it posts receive buffers of
 * at least 4096 bytes whatever it advertised (docs/architecture.md).
 */
#ifndef GW_RDMA_PRIVDATA_H
#define GW_RDMA_PRIVDATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RPCRDMA_PD_MAGIC	   0xf6ab0e18u
#define RPCRDMA_PD_SIZE		   8u
#define RPCRDMA_PD_VERSION	   1u
#define RPCRDMA_PD_FLAG_REMOTE_INV 0x01u
#define RPCRDMA_INLINE_DEFAULT	   1024u	  /* without private data */
#define RPCRDMA_INLINE_MAX	   (256u * 1024u) /* largest a size octet can say */

struct rpcrdma_privdata {
	bool remote_inv;    /* R: the sender accepts Send With Invalidate */
	uint32_t send_size; /* bytes: largest inline message the sender sends */
	uint32_t recv_size; /* bytes: largest inline message the sender can receive */
};

/*
 * Write pd as 8 octets. Sizes are rounded down to a multiple of 1024 and
 * clamped to 1 KiB .. 256 KiB, so the peer is never promised more than pd
 * says. The reserved flag bits are written as zero.
 */
void rpcrdma_privdata_encode(uint8_t out[RPCRDMA_PD_SIZE], const struct rpcrdma_privdata *pd);

/*
 * Read a peer's private data (buf may be NULL when there was none). Returns
 * true when it is this format and version; otherwise fills pd with the
 * defaults (R clear, 1024 both ways) and returns false. Reserved flag bits
 * and octets past the eighth are ignored.
 */
bool rpcrdma_privdata_decode(const void *buf, size_t len, struct rpcrdma_privdata *pd);

/* The defaults a peer without private data is taken to have. */
void rpcrdma_privdata_default(struct rpcrdma_privdata *pd);

/* Inline thresholds of a connection, in bytes. */
struct rpcrdma_thresholds {
	uint32_t send; /* largest message this side may send: min(local send, peer receive) */
	uint32_t recv; /* largest message the peer may send: min(peer send, local receive) */
};

void rpcrdma_inline_thresholds(const struct rpcrdma_privdata *local,
			       const struct rpcrdma_privdata *peer, struct rpcrdma_thresholds *t);

#endif
