/* SPDX-License-Identifier: MIT */
/*
 * rdma/splice.h - XDR splicing between a whole RPC message and the pieces
 * RPC-over-RDMA moves it in (RFC 8166 "XDR Encoding with Chunks";
 * 5666bis-01 sections 4.4.4 and 4.4.5).
 *
 * A message travels as its inline part (in the Send, or in a Position-Zero
 * Read chunk or the Reply chunk) with DDP-eligible items taken out and
 * moved by RDMA Read or Write. These functions do the byte arithmetic of
 * taking items out and putting them back, with XDR's round-up rules:
 *
 *  - an item's XDR pad leaves with the item and is never moved: a chunk
 *    carries the item's bytes only, and whoever rebuilds the stream puts
 *    the pad back (from a static zero buffer) right after the item;
 *  - inline content after a chunk starts on the next 4-byte boundary of
 *    the rebuilt stream: it carries no pad for the chunk either;
 *  - a Read chunk's position counts bytes of the rebuilt (whole) stream,
 *    pads of earlier chunks included; a Write chunk has no position: the
 *    requester finds where its data goes by parsing the reduced reply.
 *
 * Nothing here copies data or allocates: results are iovecs pointing into
 * the caller's buffers (and at the zero pad), in arrays the caller owns.
 * Bad input, however large its numbers, is refused with a status.
 */
#ifndef GW_RDMA_SPLICE_H
#define GW_RDMA_SPLICE_H

#include <stdint.h>
#include <sys/uio.h>

#include "rdma/rpcrdma_hdr.h"

enum splice_status {
	SPLICE_OK = 0,
	SPLICE_E_IOV_FULL,    /* the result needs more iovecs than the array holds */
	SPLICE_E_UNALIGNED,   /* a position or offset that is not a multiple of 4 */
	SPLICE_E_ORDER,	      /* pieces out of order, or overlapping (pads included) */
	SPLICE_E_RANGE,	      /* a piece placed past the end of the message */
	SPLICE_E_OVERFLOW,    /* the result would be longer than 2^32 - 4 bytes */
	SPLICE_E_P0_INLINE,   /* a Position-Zero chunk together with inline bytes */
	SPLICE_E_CHUNK_SMALL, /* the chunk's segments hold less than the item */
	SPLICE_E_STEPS_FULL,  /* the plan needs more steps than the array holds */
	SPLICE_E__COUNT
};

/* Short stable name for counters and logs ("iov_full", ...); "?" when out of range. */
const char *splice_status_name(enum splice_status s);

/* Where a result goes: the caller's iovec array, its capacity; count and bytes out. */
struct splice_out {
	struct iovec *iov;
	unsigned cap;
	unsigned cnt; /* iovecs used */
	uint32_t len; /* bytes they cover */
};

/*
 * (a) Rebuild a received call (responder side). inl is the inline part of
 * the message (what followed the header of an RDMA_MSG). chunks are the Read
 * chunks in ascending position, each with its data already pulled into
 * contiguous memory (data, len = the chunk's length). A chunk at position 0
 * is the whole message (RDMA_NOMSG): inl must then be empty, and the other
 * chunks are placed into the P0 data. Every other position must be 4-byte
 * aligned, at or after the end (with pad) of the previous chunk, and inside
 * the message built so far. Every chunk whose length is not a multiple of 4
 * is followed by its pad.
 */
struct splice_chunk {
	uint32_t position;
	const void *data;
	uint32_t len;
};

enum splice_status splice_rebuild(const void *inl, uint32_t inl_len,
				  const struct splice_chunk *chunks, unsigned n,
				  struct splice_out *out);

/*
 * (b) Reduce a contiguous message by taking out items (sender side: the
 * requester's call items for Read chunks, the responder's reply items for
 * Write chunks). items are in ascending offset, each offset 4-byte aligned,
 * each item with its pad inside the message and clear of the next item.
 * out gets the inline remainder; out->len is the inline size left. The
 * Read chunk position of item i is items[i].offset itself (positions count
 * the whole stream); reduced_offset[i] (if not NULL) is where item i's data
 * would be put back in the reduced stream, what (d) takes.
 */
struct splice_item {
	uint32_t offset; /* of the item's first data byte, past its length word */
	uint32_t len;	 /* data bytes, without pad */
};

enum splice_status splice_reduce(const void *msg, uint32_t msg_len, const struct splice_item *items,
				 unsigned n, uint32_t *reduced_offset, struct splice_out *out);

/*
 * (c) Plan the RDMA operations that move an item of item_len bytes through
 * a chunk: segments are filled in order, each step one RDMA Write (item
 * into a Write or Reply chunk) or RDMA Read (a Read chunk into local
 * memory) of at most max_step bytes (0: no limit, else a device's
 * max_msg_sz). local_offset counts from the start of the item. seg_len,
 * if not NULL, gets nsegs entries: the bytes placed in each segment, the
 * lengths a reply echoes (what rpcrdma_encode_reply() writes for
 * write_used = item_len). Zero-length segments get no step.
 */
struct splice_step {
	uint32_t seg; /* index of the segment in the chunk */
	uint32_t handle;
	uint64_t remote_offset;
	uint32_t local_offset;
	uint32_t len;
};

enum splice_status splice_plan(const struct rpcrdma_seg *segs, uint32_t nsegs, uint32_t item_len,
			       uint32_t max_step, struct splice_step *steps, unsigned cap,
			       unsigned *nsteps, uint32_t *seg_len);

/*
 * (d) Rebuild a received reply (requester side): inl is the reduced reply
 * (from the Send, or the Reply chunk for RDMA_NOMSG), items the data each
 * Write chunk brought back and the offset in inl where it goes (found by
 * parsing inl: right after the item's length word). Offsets are ascending
 * (equal offsets are inserted in order), 4-byte aligned and at most
 * inl_len. Each item is followed by its pad.
 */
struct splice_insert {
	uint32_t offset;
	const void *data;
	uint32_t len;
};

enum splice_status splice_rebuild_reply(const void *inl, uint32_t inl_len,
					const struct splice_insert *items, unsigned n,
					struct splice_out *out);

#endif
