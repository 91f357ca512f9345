/* SPDX-License-Identifier: MIT */
/*
 * gateway/reverse/reverse_plan.h - the byte arithmetic of the reverse pipeline (the
 * gateway as RPC-over-RDMA responder), kept apart from the verbs so that it
 * can be tested on its own.
 *
 * Calls. A call that comes with Read chunks is assembled into ONE contiguous
 * message, so that the ULB can parse it and TCP can send it by reference.
 * Its "base" stream is the inline part of an RDMA_MSG (in the receive buffer)
 * or the Position-Zero Read chunk of an RDMA_NOMSG (at the client); every
 * other Read chunk is inserted into the base at its position, followed by the
 * XDR pad that the requester did not send (RFC 8166 section 3.5.3, 4.4.4.1 of
 * 5666bis). rev_call_layout() says where everything goes; rev_layout_map()
 * maps a base byte to the message; rev_read_next() turns the Read list into
 * RDMA Reads that land each byte at its final place, so bulk data is never
 * copied.
 *
 * Replies. A reply record from the upstream is a full RPC reply.
 * rev_plan_reply() decides how it goes back: result item k into the client's
 * Write chunk k (no pad written), the rest inline when header and reduced
 * reply fit the client's receive threshold, else into the Reply chunk
 * (RDMA_NOMSG), else ERR_CHUNK. rev_iov_slice() cuts a gathered message into
 * the pieces of one RDMA Write.
 *
 * Credits. rev_admit_call() decides what a new call from the client may do:
 * go on, wait for a call slot, or be refused as a credit overrun.
 *
 * Remote invalidation. rev_inv_rkey() names the client's memory region the
 * answer may invalidate (RFC 8797 Send With Invalidate).
 *
 * Nothing here allocates, copies bulk data or does I/O; all input (chunk
 * lists, positions, item offsets) is untrusted and checked.
 */
#ifndef GW_GATEWAY_REVERSE_PLAN_H
#define GW_GATEWAY_REVERSE_PLAN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "rdma/rpcrdma_hdr.h"
#include "rdma/splice.h"
#include "ulb-rules/ulb.h"

/* ---- calls with Read chunks ---- */

struct rev_insert {
	uint32_t at;	   /* offset in the base stream before which the chunk goes */
	uint32_t position; /* its offset in the whole message: its Read position */
	uint32_t len;	   /* its length, without pad */
};

struct rev_call_layout {
	bool p0;	    /* the base stream is a Position-Zero chunk (RDMA_NOMSG) */
	uint32_t base_len;  /* inline part, or Position-Zero chunk length */
	uint32_t total_len; /* the whole message, pads included */
	uint32_t ninserts;
	struct rev_insert ins[RPCRDMA_MAX_READ_CHUNKS];
};

enum rev_layout_status {
	REV_LAYOUT_OK = 0,
	REV_LAYOUT_NO_CHUNKS, /* nothing to read: the call is the inline part */
	REV_LAYOUT_BAD,	      /* positions out of order or outside the message */
	REV_LAYOUT_TOO_LONG,  /* the whole message exceeds max_len */
};

/*
 * Lay out the call of decoded header @h (RDMA_MSG or RDMA_NOMSG, after
 * rpcrdma_hdr_check_call()). @max_len bounds the whole message.
 */
enum rev_layout_status rev_call_layout(const struct rpcrdma_hdr *h, uint32_t max_len,
				       struct rev_call_layout *l);

/*
 * Where base byte @off (< base_len) goes in the message; *run gets how many
 * base bytes from @off on go there contiguously (up to the next insertion
 * or the end of the base).
 */
uint32_t rev_layout_map(const struct rev_call_layout *l, uint32_t off, uint32_t *run);

/* One RDMA Read: @len bytes at the client's @handle/@remote into message offset @dst. */
struct rev_read_op {
	uint32_t handle;
	uint64_t remote;
	uint32_t len;
	uint32_t dst;
};

/* Where rev_read_next() is in the Read list; zero-initialise to start. */
struct rev_read_cursor {
	uint32_t entry;	    /* Read list entry, wire order */
	uint32_t done;	    /* bytes of that entry already planned */
	uint32_t chunk_off; /* bytes of its chunk in earlier entries */
	uint32_t position;  /* the position of the chunk being walked */
};

enum rev_read_status {
	REV_READ_OP = 0, /* *op is the next Read */
	REV_READ_END,	 /* every entry is planned */
	REV_READ_BAD,	 /* the list does not match the layout */
};

/*
 * The next RDMA Read of a call's Read list (@read_list is the decoded
 * header's read_list, @nentries its read_nsegs), for layout @l made from
 * the same header. A Position-Zero segment that spans an insertion point is
 * split there; zero-length segments are skipped.
 */
enum rev_read_status rev_read_next(const struct rev_call_layout *l, const uint8_t *read_list,
				   uint32_t nentries, struct rev_read_cursor *cur,
				   struct rev_read_op *op);

/* ---- replies ---- */

struct rev_reply_in {
	const uint8_t *msg; /* the full RPC reply from the upstream */
	uint32_t len;
	/* Its DDP-eligible result items, in reply order (ulb_parse_reply()). */
	const struct ulb_reply_item *items;
	uint32_t nitems;
	/* What the client offered: its Write chunks and Reply chunk (NULL: none). */
	uint32_t nwrites;
	const struct rpcrdma_chunk_desc *writes;
	const struct rpcrdma_chunk_desc *reply;
	uint32_t send_max; /* inline threshold toward the client, header included */
	uint32_t version;
	uint32_t xid;
	uint32_t credits;
};

enum rev_reply_how {
	REV_REPLY_INLINE,    /* RDMA_MSG: header, then the reduced reply */
	REV_REPLY_NOMSG,     /* RDMA_NOMSG: the reduced reply goes into the Reply chunk */
	REV_REPLY_ERR_CHUNK, /* it fits nothing the client offered */
};

struct rev_reply_plan {
	enum rev_reply_how how;
	const char *why; /* REV_REPLY_ERR_CHUNK: a short stable reason for logs */
	/* Chunk k of the Write list gets write_used[k] bytes from msg + write_off[k]. */
	uint32_t write_used[RPCRDMA_MAX_WRITE_CHUNKS];
	uint32_t write_off[RPCRDMA_MAX_WRITE_CHUNKS];
	uint32_t moved_bytes;
	uint32_t hdr_len; /* of the transport header to encode from desc */
	/* What to encode (pointers into @in and this plan). */
	struct rpcrdma_reply_desc desc;
};

/*
 * Plan the reply: the reduced reply (what stays after moving items into
 * Write chunks) is described in @reduced as iovecs into @in->msg. Item k
 * goes into Write chunk k when the chunk has room for it (a chunk with no
 * room at all means "return it inline", RFC 8267); items beyond the Write
 * list stay inline; every offered chunk is echoed, unused ones with zero
 * lengths. An item larger than its chunk's room is ERR_CHUNK: the client
 * asked for that item in that chunk (RFC 8166 section 4.4.5).
 */
void rev_plan_reply(const struct rev_reply_in *in, struct splice_out *reduced,
		    struct rev_reply_plan *p);

/*
 * The bytes [@off, @off + @len) of the concatenation of @iov[0..@n) as
 * iovecs in @out (at most @cap). Returns how many, or 0 when the range is
 * empty, beyond the data, or needs more than @cap.
 */
unsigned rev_iov_slice(const struct iovec *iov, unsigned n, uint32_t off, uint32_t len,
		       struct iovec *out, unsigned cap);

/* ---- credits ---- */

enum rev_admit {
	REV_ADMIT_TAKE,	   /* within the grant, and a slot is free: handle it now */
	REV_ADMIT_WAIT,	   /* within the grant, no slot free yet: keep it until one is */
	REV_ADMIT_OVERRUN, /* more calls outstanding than granted: the client broke the rules */
};

/*
 * A call arrives while @outstanding calls hold a credit (received, their
 * answer not yet posted) and @free_slots call slots are free. Only the
 * credits judge the client, counted as 5666bis section 4.3 has it: a
 * credit comes back when the answer is posted, never later than the client
 * can see it, so a client that keeps to its @grant is never refused. A
 * slot, though, is held until its answer's Send has completed, which the
 * gateway may learn after the client has sent its next call: running out
 * of slots is the gateway's own business, and the call waits.
 */
enum rev_admit rev_admit_call(uint32_t outstanding, uint32_t grant, uint32_t free_slots);

/* ---- remote invalidation ---- */

/*
 * The handle a reply to the call of @h may invalidate at the client, when
 * the client offered remote invalidation: the one handle every segment of
 * its chunks (Read list, Write chunks, Reply chunk) names, as the Linux
 * server chooses it; 0 when they name more than one, when there is none,
 * or when that handle is 0 (which Send With Invalidate cannot say apart
 * from none). The Linux client registers each chunk in a region of its
 * own: a call with one chunk, such as an NFS READ or WRITE, has one.
 */
uint32_t rev_inv_rkey(const struct rpcrdma_hdr *h);

#endif
