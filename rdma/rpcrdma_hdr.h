/* SPDX-License-Identifier: MIT */
/*
 * rdma/rpcrdma_hdr.h - the RPC-over-RDMA transport header: decoding in
 * place, validation, and encoding (RFC 8166, RFC 8167).
 *
 * Decoding never copies and never allocates. rpcrdma_hdr_decode() walks the
 * receive buffer once, checks every rule that can be checked without knowing
 * which side of the conversation the message belongs to, and fills a
 * version-neutral struct rpcrdma_hdr whose chunks point back into the
 * buffer: segments are read on demand with rpcrdma_chunk_seg() and
 * rpcrdma_read_seg(). The buffer must therefore outlive the struct; a caller
 * that wants to repost the receive buffer before the reply copies what it
 * needs with rpcrdma_chunk_copy() first.
 *
 * Every failure has its own enum rpcrdma_reason, with a short stable name
 * (for counters and logs) and the answer a responder gives: ERR_VERS,
 * ERR_CHUNK, or drop. A requester never answers a reply with RDMA_ERROR: on
 * the reply path every failure means "drop the reply" (RFC 8166 "Error
 * Handling"; 5666bis-01 section 5.5).
 *
 * Which version is spoken is a property of the message (decode) or of the
 * connection (encode: the version field of each descriptor). Version One
 * (RFC 8166) and Version Two (draft-cel-nfsv4-rpcrdma-version-two-01,
 * section 4.2) are spoken; the version field of the fixed header is checked
 * against the versions the caller enables in struct rpcrdma_limits, and a
 * message of any other version decodes to RPCRDMA_R_BAD_VERSION, answered
 * with ERR_VERS carrying the enabled range. The one exception is an
 * RDMA_ERROR/ERR_VERS, the same in every version and the answer version
 * negotiation waits for: it is decoded whatever its version field says (the
 * Linux server echoes the refused version there).
 *
 * Version Two differs from Version One in the body after rdma_proc:
 * RDMA2_MSG and RDMA2_NOMSG carry a direction word (the RPC msg_type of the
 * message, section 4.2.2) before the same three chunk lists; RDMA2_ERROR has
 * RDMA2_ERR_BAD_HEADER (ERR_CHUNK's value) and RDMA2_ERR_INVAL_OPTION, and no
 * payload may follow it; RDMA2_OPTIONAL carries a direction, a type and
 * opaque information, and whatever follows is payload; RDMA_MSGP and
 * RDMA_DONE do not exist. Both decoders refuse the other's forms. Each
 * version's rules live in its own decoder, and both fill the same struct
 * rpcrdma_hdr: callers that dispatch on proc and on the reason's action see
 * one interface.
 *
 * The draft defines no optional type, so none is recognised: an
 * RDMA2_OPTIONAL that is well formed decodes to RPCRDMA_R_UNKNOWN_OPTION
 * (its members set), which a responder answers with RDMA2_ERR_INVAL_OPTION
 * and the message's XID (section 3.1).
 *
 * The encoders write into a caller buffer: call the size function first, or
 * pass a buffer of at least that size. They never produce RDMA_MSGP or
 * RDMA_DONE, and they refuse (-EINVAL) a description that the decoder here
 * would reject, so a gateway cannot send what it would not accept.
 */
#ifndef GW_RDMA_RPCRDMA_HDR_H
#define GW_RDMA_RPCRDMA_HDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/xdr.h"

/* Protocol versions (the second word of every transport header). */
#define RPCRDMA_V1 1u
#define RPCRDMA_V2 2u /* draft-cel-nfsv4-rpcrdma-version-two-01 */

/*
 * The inline threshold a Version Two sender assumes without RFC 8797
 * private data: every Version Two receiver supports 4096 bytes (the draft's
 * section 2.3), where Version One's default is 1024.
 */
#define RPCRDMA_V2_INLINE_DEFAULT 4096u

/* rdma_proc values (5666bis-01 section 5.1.4) */
enum rpcrdma_proc {
	RPCRDMA_MSG = 0,
	RPCRDMA_NOMSG = 1,
	RPCRDMA_MSGP = 2, /* deprecated: accepted as RPCRDMA_MSG, never sent */
	RPCRDMA_DONE = 3, /* deprecated: dropped, never sent */
	RPCRDMA_ERROR = 4,
	RPCRDMA2_OPTIONAL = 5, /* Version Two only */
};

/* rdma_err values; Version Two's RDMA2_ERR_BAD_HEADER has ERR_CHUNK's value */
enum rpcrdma_errcode {
	RPCRDMA_ERR_VERS = 1,
	RPCRDMA_ERR_CHUNK = 2,
	RPCRDMA2_ERR_BAD_HEADER = 2,
	RPCRDMA2_ERR_INVAL_OPTION = 3, /* Version Two only */
};

/* ONC RPC msg_type (RFC 5531), the word after the XID of an RPC message */
enum rpcrdma_rpc_dir {
	RPCRDMA_RPC_CALL = 0,
	RPCRDMA_RPC_REPLY = 1,
	RPCRDMA_DIR_NONE = 2, /* not on the wire: a Version One header, which has no direction */
};

/* Sizes of fixed parts on the wire, in bytes. */
#define RPCRDMA_FIXED_SIZE     16u /* xid, vers, credit, proc */
#define RPCRDMA_HDR_MIN_SIZE   28u /* RDMA_MSG/NOMSG with three empty lists */
#define RPCRDMA_ERR_CHUNK_SIZE 20u
#define RPCRDMA_ERR_VERS_SIZE  28u
#define RPCRDMA_SEG_SIZE       16u /* handle, length, offset (HLOO) */
#define RPCRDMA_READ_SEG_SIZE  24u /* list marker, position, HLOO */
#define RPCRDMA2_HDR_MIN_SIZE  32u /* RDMA2_MSG/NOMSG: direction and three empty lists */
#define RPCRDMA2_OPT_MIN_SIZE  28u /* RDMA2_OPTIONAL with empty rdma_optinfo */

/*
 * The longest chunk this codec accepts. Keeping every chunk length at or
 * below it means xdr_align() of a length and the sum of a position and a
 * rounded-up length never wrap in 32 bits, which every XDR offset is.
 */
#define RPCRDMA_MAX_CHUNK_LEN 0xfffffffcu

/*
 * Capacity of the decoded header: the most Read chunks (distinct positions)
 * and Write chunks a configuration can allow. These size the arrays in
 * struct rpcrdma_hdr, so that decoding never allocates.
 */
#define RPCRDMA_MAX_READ_CHUNKS	 16u
#define RPCRDMA_MAX_WRITE_CHUNKS 16u

/*
 * Limits the decoder enforces, filled by the configuration (defaults from
 * rpcrdma_limits_default()). The defaults cover what the Linux peers send:
 * the client offers at most a Position-Zero chunk plus one Read chunk, one
 * Write chunk and at most 16 segments per chunk (RFC 8267 sets the same
 * floor for NFS servers); the Linux server takes several Read chunks.
 */
struct rpcrdma_limits {
	uint32_t max_read_chunks;  /* distinct positions, P0 included; default 4, cap 16 */
	uint32_t max_write_chunks; /* default 4, cap RPCRDMA_MAX_WRITE_CHUNKS */
	uint32_t max_chunk_segs;   /* segments in any one Read, Write or Reply chunk; default 16 */
	uint32_t versions;	   /* bit v set: version v is spoken; default 1u << RPCRDMA_V1 */
};

#define RPCRDMA_DEFAULT_READ_CHUNKS  4u
#define RPCRDMA_DEFAULT_WRITE_CHUNKS 4u
#define RPCRDMA_DEFAULT_CHUNK_SEGS   16u

void rpcrdma_limits_default(struct rpcrdma_limits *lim);

/*
 * Clamp a configured struct to the capacities above (a configuration layer
 * reports values it had to lower; the decoder never reads beyond its arrays
 * even when handed an unclamped struct). Returns true when nothing changed.
 */
bool rpcrdma_limits_clamp(struct rpcrdma_limits *lim);

/*
 * The versions range to advertise in ERR_VERS: the lowest and highest bits
 * set in lim->versions among the versions this codec speaks (1 and 2).
 */
void rpcrdma_versions_range(const struct rpcrdma_limits *lim, uint32_t *low, uint32_t *high);

/* One RDMA segment in host byte order. */
struct rpcrdma_seg {
	uint32_t handle;
	uint32_t length;
	uint64_t offset;
};

/* One Read list entry in host byte order. */
struct rpcrdma_read_seg {
	uint32_t position;
	struct rpcrdma_seg seg;
};

/*
 * A decoded chunk: its segments stay in the receive buffer. Segment i starts
 * at xdr + i * stride (RPCRDMA_SEG_SIZE apart for Write and Reply chunks;
 * RPCRDMA_READ_SEG_SIZE apart for a Read chunk, whose xdr points at the
 * first segment's handle, past its position).
 */
struct rpcrdma_chunk {
	const uint8_t *xdr;
	uint32_t nsegs;
	uint32_t stride;
	uint32_t position; /* Read chunks; 0 for Write and Reply chunks */
	uint32_t length;   /* sum of the segment lengths, <= RPCRDMA_MAX_CHUNK_LEN */
};

/*
 * A decoded transport header. Only the members that the message's type
 * defines are set: arrays beyond their counts, and the chunk lists of an
 * RDMA_ERROR, are left untouched (decoding must stay cheap).
 */
struct rpcrdma_hdr {
	uint32_t xid;
	uint32_t version;
	uint32_t credits;
	uint32_t proc;	    /* enum rpcrdma_proc; RDMA_MSGP is reported as RPCRDMA_MSG */
	uint32_t wire_proc; /* rdma_proc as received (RPCRDMA_MSGP stays visible for counters) */
	uint32_t hdr_len; /* bytes of transport header: where the RPC message of an RDMA_MSG starts
			   */
	uint32_t inline_len; /* bytes after the transport header in the buffer */

	/* RPCRDMA_ERROR */
	uint32_t err;	   /* enum rpcrdma_errcode */
	uint32_t vers_low; /* RPCRDMA_ERR_VERS */
	uint32_t vers_high;

	/* RPCRDMA_MSGP's padding hints; an optimisation hint that may be ignored (5666bis-01
	 * section 5.7.1) */
	uint32_t msgp_align;
	uint32_t msgp_thresh;

	/*
	 * Version Two: the direction word of RDMA2_MSG, RDMA2_NOMSG and
	 * RDMA2_OPTIONAL (enum rpcrdma_rpc_dir); RPCRDMA_RPC_REPLY for
	 * RDMA2_ERROR, which only a responder sends (section 4.2.2);
	 * RPCRDMA_DIR_NONE for every Version One header.
	 */
	uint32_t direction;
	/* RDMA2_OPTIONAL: rdma_opttype and rdma_optinfo (in the buffer, opt_len bytes) */
	uint32_t opt_type;
	uint32_t opt_len;
	const uint8_t *opt_info;

	/* RPCRDMA_MSG and RPCRDMA_NOMSG */
	const uint8_t *read_list; /* first Read list entry's position word */
	uint32_t read_nsegs;	  /* Read list entries, wire order, RPCRDMA_READ_SEG_SIZE apart */
	uint32_t nreads;	  /* Read chunks: runs of entries with one position */
	uint32_t nwrites;
	bool has_reply;
	struct rpcrdma_chunk reply;
	struct rpcrdma_chunk read[RPCRDMA_MAX_READ_CHUNKS];   /* by position; P0 first */
	struct rpcrdma_chunk write[RPCRDMA_MAX_WRITE_CHUNKS]; /* in list order */
};

/* Why a header (or an RPC message against its header) was refused. */
enum rpcrdma_reason {
	RPCRDMA_OK = 0,
	/* fixed fields */
	RPCRDMA_R_SHORT_FIXED, /* fewer than 16 bytes: no XID/version/proc to answer */
	RPCRDMA_R_BAD_VERSION, /* a version not enabled (Version Two included) */
	RPCRDMA_R_BAD_PROC,    /* rdma_proc unknown */
	RPCRDMA_R_RDMA_DONE, /* RDMA_DONE: dropped without processing (5666bis-01 section 5.7.2) */
	/* chunk lists */
	RPCRDMA_R_SHORT_HEADER,	   /* the lists run past the end of the buffer */
	RPCRDMA_R_BAD_LIST_MARKER, /* an optional-data discriminator other than 0 or 1 */
	RPCRDMA_R_TOO_MANY_READ_CHUNKS,
	RPCRDMA_R_TOO_MANY_WRITE_CHUNKS,
	RPCRDMA_R_TOO_MANY_SEGMENTS, /* in one Read, Write or Reply chunk */
	RPCRDMA_R_POSITION_UNALIGNED,
	RPCRDMA_R_READ_LIST_UNSORTED,
	RPCRDMA_R_READ_CHUNKS_OVERLAP, /* a chunk starts inside the previous one (with its pad) */
	RPCRDMA_R_LENGTH_OVERFLOW,     /* a chunk longer than RPCRDMA_MAX_CHUNK_LEN, or position +
					  length */
	RPCRDMA_R_POSITION_ZERO_WITH_MSG, /* P0 chunk in RDMA_MSG: the message would be there twice
					   */
	RPCRDMA_R_NOMSG_WITHOUT_CHUNKS, /* RDMA_NOMSG with neither a P0 Read chunk nor a Reply chunk
					 */
	RPCRDMA_R_POSITION_BEYOND_MSG,	/* a Read chunk placed past the end of the message */
	/* RDMA_ERROR bodies */
	RPCRDMA_R_ERROR_SHORT,
	RPCRDMA_R_ERROR_BAD_CODE,
	/* the RPC message against the transport header: rpcrdma_hdr_check_xid() */
	RPCRDMA_R_RPC_SHORT, /* fewer than 8 bytes (XID and msg_type) of RPC message */
	RPCRDMA_R_XID_MISMATCH,
	/* role checks: rpcrdma_hdr_check_call() and rpcrdma_hdr_check_reply() */
	RPCRDMA_R_CALL_NOMSG_WITHOUT_P0, /* an RDMA_NOMSG call must carry the call in P0 */
	RPCRDMA_R_REPLY_HAS_READ_LIST,
	RPCRDMA_R_REPLY_NOMSG_WITHOUT_REPLY_CHUNK,
	RPCRDMA_R_REPLY_MSG_USES_REPLY_CHUNK, /* RDMA_MSG reply with data in the Reply chunk */
	RPCRDMA_R_REPLY_WRITE_LIST_MISMATCH,  /* chunks or segments other than those offered */
	RPCRDMA_R_REPLY_CHUNK_MISMATCH,
	/* Version Two (draft-cel-nfsv4-rpcrdma-version-two-01) */
	RPCRDMA_R_BAD_DIRECTION,	/* a direction word other than CALL or REPLY */
	RPCRDMA_R_MSG_WITHOUT_PAYLOAD,	/* RDMA2_MSG with no RPC message after it (4.2.1) */
	RPCRDMA_R_ERROR_WITH_PAYLOAD,	/* bytes after an RDMA2_ERROR (4.2.1) */
	RPCRDMA_R_OPTION_TOO_LONG,	/* rdma_optinfo runs past the end of the message */
	RPCRDMA_R_UNKNOWN_OPTION,	/* a well-formed RDMA2_OPTIONAL from a requester (CALL) */
	RPCRDMA_R_UNKNOWN_OPTION_REPLY, /* the same from a responder: errors go the other way */
	/* the direction word against the RPC message (rpcrdma_hdr_check_xid) or the role */
	RPCRDMA_R_DIRECTION_MISMATCH,
	RPCRDMA_R__COUNT
};

enum rpcrdma_action {
	RPCRDMA_ACT_ACCEPT = 0,	      /* RPCRDMA_OK */
	RPCRDMA_ACT_ERR_VERS,	      /* answer RDMA_ERROR/ERR_VERS with rpcrdma_versions_range() */
	RPCRDMA_ACT_ERR_CHUNK,	      /* answer RDMA_ERROR/ERR_CHUNK */
	RPCRDMA_ACT_DROP,	      /* count and drop, answer nothing */
	RPCRDMA_ACT_ERR_INVAL_OPTION, /* answer RDMA2_ERROR/RDMA2_ERR_INVAL_OPTION (Version Two) */
};

/* Short stable name ("short_header", "read_list_unsorted", ...); "?" when out of range. */
const char *rpcrdma_reason_name(enum rpcrdma_reason r);
/* What a responder does about r (see the file comment for requesters). */
enum rpcrdma_action rpcrdma_reason_action(enum rpcrdma_reason r);

/*
 * Decode the transport header at buf (len bytes received) into h.
 * On RPCRDMA_OK the fixed fields and the members of the message's type are
 * set. On failure, h->xid, h->version, h->credits and h->wire_proc are set
 * whenever the buffer held them (the answer needs the XID), the rest is
 * unspecified.
 */
enum rpcrdma_reason rpcrdma_hdr_decode(struct rpcrdma_hdr *h, const void *buf, size_t len,
				       const struct rpcrdma_limits *lim);

/*
 * The RPC message of h starts with h's XID (5666bis-01 section 5.1.1) and has
 * room for its msg_type, and, in Version Two, that msg_type is the header's
 * direction (RPCRDMA_R_DIRECTION_MISMATCH otherwise: section 4.2.2). rpc is
 * where the message starts: buf + h->hdr_len for RDMA_MSG, the
 * Position-Zero data for RDMA_NOMSG.
 */
enum rpcrdma_reason rpcrdma_hdr_check_xid(const struct rpcrdma_hdr *h, const void *rpc, size_t len);

/* msg_type of an RPC message with at least 8 bytes (after rpcrdma_hdr_check_xid). */
static inline uint32_t rpcrdma_rpc_msg_type(const void *rpc)
{
	return xdr_get32((const uint8_t *)rpc + 4);
}

/*
 * Rules for a decoded RDMA_MSG or RDMA_NOMSG that is a call (the receiver is
 * its responder): an RDMA_NOMSG call must bring the call in a P0 chunk; a
 * Version Two header must say CALL. Other types carry no chunk lists and
 * pass.
 */
enum rpcrdma_reason rpcrdma_hdr_check_call(const struct rpcrdma_hdr *h);

/*
 * What a requester offered in a call, to check the reply against: the
 * segments of each Write chunk and of the Reply chunk (NULL: none).
 */
struct rpcrdma_chunk_desc {
	uint32_t nsegs;
	const struct rpcrdma_seg *segs;
};

struct rpcrdma_offer {
	uint32_t nwrites;
	const struct rpcrdma_chunk_desc *writes;
	const struct rpcrdma_chunk_desc *reply;
};

/*
 * Rules for a decoded RDMA_MSG or RDMA_NOMSG that is a reply (the receiver
 * is the requester): a Version Two header says REPLY; no Read list;
 * RDMA_NOMSG only with a Reply chunk;
 * RDMA_MSG with no data in a Reply chunk; and, when offer is not NULL, the
 * Write list and Reply chunk echo exactly the offered chunks (count of
 * chunks, count of segments, handles and offsets) with lengths no larger
 * than offered. A peer that writes past what it reports is not caught here:
 * that is what the memory windows fence.
 */
enum rpcrdma_reason rpcrdma_hdr_check_reply(const struct rpcrdma_hdr *h,
					    const struct rpcrdma_offer *offer);
/* (Other types than RDMA_MSG and RDMA_NOMSG pass rpcrdma_hdr_check_reply() too.) */

/* Segment i of a decoded chunk (i < c->nsegs). */
static inline void rpcrdma_chunk_seg(const struct rpcrdma_chunk *c, uint32_t i,
				     struct rpcrdma_seg *s)
{
	const uint8_t *p = c->xdr + (size_t)i * c->stride;

	s->handle = xdr_get32(p);
	s->length = xdr_get32(p + 4);
	s->offset = xdr_get64(p + 8);
}

/* Read list entry i in wire order (i < h->read_nsegs). */
static inline void rpcrdma_read_seg(const struct rpcrdma_hdr *h, uint32_t i,
				    struct rpcrdma_read_seg *s)
{
	const uint8_t *p = h->read_list + (size_t)i * RPCRDMA_READ_SEG_SIZE;

	s->position = xdr_get32(p);
	s->seg.handle = xdr_get32(p + 4);
	s->seg.length = xdr_get32(p + 8);
	s->seg.offset = xdr_get64(p + 12);
}

/* True when the first Read chunk is at position zero. */
static inline bool rpcrdma_hdr_has_p0(const struct rpcrdma_hdr *h)
{
	return h->nreads > 0 && h->read[0].position == 0;
}

/* Copy a chunk's segments out of the receive buffer; returns how many (<= cap). */
uint32_t rpcrdma_chunk_copy(const struct rpcrdma_chunk *c, struct rpcrdma_seg *out, uint32_t cap);

/*
 * Encoding. A Read chunk to offer: its position and segments.
 */
struct rpcrdma_read_chunk_desc {
	uint32_t position;
	uint32_t nsegs;
	const struct rpcrdma_seg *segs;
};

/*
 * A requester's call header (also a backward-direction call or reply: proc
 * RPCRDMA_MSG with no chunks, RFC 8167). proc is RPCRDMA_MSG or
 * RPCRDMA_NOMSG; Read chunks in ascending position order, positions 4-byte
 * aligned, P0 only with RPCRDMA_NOMSG; an RPCRDMA_NOMSG needs a P0 chunk or a
 * Reply chunk. reply NULL: no Reply chunk. direction is written by Version
 * Two only: the msg_type of the RPC message (RPCRDMA_RPC_CALL, the zero
 * value, for a call; RPCRDMA_RPC_REPLY for a backward-direction reply).
 */
struct rpcrdma_call_desc {
	uint32_t version;
	uint32_t xid;
	uint32_t credits;
	uint32_t proc;
	uint32_t nreads;
	const struct rpcrdma_read_chunk_desc *reads;
	uint32_t nwrites;
	const struct rpcrdma_chunk_desc *writes;
	const struct rpcrdma_chunk_desc *reply;
	uint32_t direction;
};

/*
 * A responder's reply header. writes are the call's Write chunks, all of
 * them, in order (every offered chunk comes back, its segment count unchanged: 5666bis-01
 * section 4.4.5); write_used[i] is the bytes written into chunk i, without XDR pad, 0 for an unused
 * chunk. The lengths echoed fill the segments in order, as splice_plan() writes them, and the
 * segment counts never change. reply is the call's Reply chunk or NULL (return none); reply_used is
 * the bytes of the reply written there: RPCRDMA_NOMSG needs it, RPCRDMA_MSG must leave it 0 (the
 * Linux client refuses an RDMA_MSG with data in the Reply chunk). A Version Two reply says REPLY.
 */
struct rpcrdma_reply_desc {
	uint32_t version;
	uint32_t xid;
	uint32_t credits;
	uint32_t proc;
	uint32_t nwrites;
	const struct rpcrdma_chunk_desc *writes;
	const uint32_t *write_used;
	const struct rpcrdma_chunk_desc *reply;
	uint32_t reply_used;
};

/*
 * Size functions return the header's length in bytes, or -EINVAL for a
 * description the encoder refuses, or -EPROTONOSUPPORT for a version it does
 * not speak. Encoders return the bytes written, the same errors, or
 * -EMSGSIZE when cap is smaller than the size; nothing is written then.
 */
ssize_t rpcrdma_call_hdr_size(const struct rpcrdma_call_desc *d);
ssize_t rpcrdma_encode_call(void *buf, size_t cap, const struct rpcrdma_call_desc *d);
ssize_t rpcrdma_reply_hdr_size(const struct rpcrdma_reply_desc *d);
ssize_t rpcrdma_encode_reply(void *buf, size_t cap, const struct rpcrdma_reply_desc *d);

/*
 * RDMA_MSG with three empty lists: inline calls and replies, both
 * directions; direction is the RPC message's msg_type (Version Two writes it).
 */
ssize_t rpcrdma_encode_inline(void *buf, size_t cap, uint32_t version, uint32_t xid,
			      uint32_t credits, uint32_t direction);
/* The same without a direction: Version One only (-EINVAL for Version Two). */
ssize_t rpcrdma_encode_msg_inline(void *buf, size_t cap, uint32_t version, uint32_t xid,
				  uint32_t credits);

/*
 * RDMA_ERROR/ERR_VERS, written as Version One: its layout is the same in
 * every version, and a peer that speaks only Version One can read it
 * (5666bis-01 section 5.5; the draft's section 5.2).
 */
ssize_t rpcrdma_encode_err_vers(void *buf, size_t cap, uint32_t xid, uint32_t credits, uint32_t low,
				uint32_t high);
/* RDMA_ERROR/ERR_CHUNK, Version One. */
ssize_t rpcrdma_encode_err_chunk(void *buf, size_t cap, uint32_t xid, uint32_t credits);
/*
 * An RDMA_ERROR without a body in the version of the message it answers:
 * ERR_CHUNK in Version One; RDMA2_ERR_BAD_HEADER or RDMA2_ERR_INVAL_OPTION
 * in Version Two. -EINVAL for a code the version does not have (ERR_VERS
 * included: rpcrdma_encode_err_vers()).
 */
ssize_t rpcrdma_encode_error(void *buf, size_t cap, uint32_t version, uint32_t xid,
			     uint32_t credits, uint32_t err);

/*
 * An RDMA2_OPTIONAL header (Version Two only). direction: CALL from a
 * requester, REPLY from a responder, or the msg_type of the RPC message
 * that follows (section 4.2.2); info_len bytes of rdma_optinfo, padded to a
 * multiple of 4 on the wire. Whatever payload follows is the caller's.
 */
struct rpcrdma_opt_desc {
	uint32_t xid;
	uint32_t credits;
	uint32_t direction;
	uint32_t type;
	uint32_t info_len;
	const void *info;
};

ssize_t rpcrdma_optional_hdr_size(const struct rpcrdma_opt_desc *d);
ssize_t rpcrdma_encode_optional(void *buf, size_t cap, const struct rpcrdma_opt_desc *d);

#endif
