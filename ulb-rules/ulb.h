/* SPDX-License-Identifier: MIT */
/*
 * ulb-rules/ulb.h - Upper-Layer Bindings (RFC 8166 section 6, RFC 8267):
 * which parts of an RPC message may travel by Direct Data Placement, and how
 * large a reply can be.
 *
 * For every call the gateway relays it needs, from the call alone:
 *   - the DDP-eligible argument items (NFS WRITE data, NFSv3 SYMLINK path,
 *     NFSv4 CREATE(NF4LNK) linkdata): where their data bytes are, so that a
 *     requester can expose them as Read chunks;
 *   - the DDP-eligible result items to expect (READ data, READLINK path) and
 *     their largest length, so that a requester can offer Write chunks;
 *   - an upper bound of the reply's size, so that it can decide whether a
 *     Reply chunk is needed and how large it must be;
 * and, for the reply, where the eligible result items are, either in a full
 * reply (a responder moves the first N into the requester's N Write chunks)
 * or in a reduced reply whose item data the peer has already placed in
 * Write chunks (a requester puts each one back in its place).
 *
 * What is eligible is data: JSON rule files (docs/ulb-rules.md) describe,
 * per program, version and procedure, the XDR shape of the arguments and
 * results. They are compiled at start-up into an immutable rule set; the
 * walkers interpret the compiled shapes. NFSv4 COMPOUND is walked by C that
 * applies the shape of each operation in turn.
 *
 * Nothing here allocates or does I/O per message; all message input is
 * untrusted and never read out of bounds. The rule set and the structures
 * filled here hold no pointers into the message: offsets only.
 */
#ifndef GW_ULB_ULB_H
#define GW_ULB_ULB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Most eligible items reported per message, each way. An NFS call has at
 * most a few; when a COMPOUND has more, the ones beyond stay inline (for
 * results: the requester offers no chunk for them, which RFC 8267 allows).
 */
#define ULB_MAX_ITEMS 8

/* Length of an NFSv4.1 session id. */
#define ULB_SESSIONID_SIZE 16

/* Default of ulb_options.default_reply_max. */
#define ULB_DEFAULT_REPLY_MAX (1u << 20)

/*
 * The largest RPC reply header counted in every reply bound: XID, msg_type,
 * reply_stat, a verifier of up to 400 bytes, accept_stat. The verifier a
 * server returns to an AUTH_SYS call is normally empty, but AUTH_SHORT is
 * allowed, and a bound must hold.
 */
#define ULB_REPLY_HDR_MAX (24u + 400u)

/*
 * The most RPCSEC_GSS integrity or privacy adds to a reply's results: the
 * databody opaque's length, the sequence number and a checksum or wrap
 * token of at most 400 bytes (RFC 2203 section 5.3.2; a Kerberos v5 wrap
 * token, RFC 4121, adds under 100 to what it encrypts), rounded up to a
 * kilobyte for whatever mechanism pads more.
 */
#define ULB_GSS_BODY_OVERHEAD 1024u

/* ------------------------------------------------------------------ */
/* Rule sets                                                          */

struct ulb_rules;

struct ulb_options {
	/*
	 * Directory of the stock rule files (every *.json in it, in name
	 * order). NULL: GW_RULES_DIR when it exists, else the source tree's
	 * ulb-rules/ (GW_SOURCE_RULES_DIR), so that an uninstalled build runs.
	 * "" loads no stock files.
	 */
	const char *stock_dir;
	/* Further rule files named in the configuration. */
	const char *const *files;
	size_t n_files;
	/*
	 * Reply bound for what the rules do not bound (unknown programs and
	 * procedures, RPCSEC_GSS privacy, results without a maximum). Such a
	 * bound is an estimate. 0 means ULB_DEFAULT_REPLY_MAX.
	 */
	uint32_t default_reply_max;
};

/*
 * Load and compile the rules. Returns NULL on failure with a message
 * "FILE:LINE:COL: reason" in @err (jansson's position for syntax errors,
 * the offending member's position for the rest).
 */
struct ulb_rules *ulb_rules_load(const struct ulb_options *opts, char *err, size_t errlen);
/*
 * A set is shared by reference: whoever keeps using it (a session whose
 * calls were parsed with it) takes a reference, so that a reload can put a
 * new set in place while calls parsed with the old one are still in
 * flight. ulb_rules_free() drops one reference (the load's or a ref's) and
 * frees the set with the last. Single-threaded, like the rest.
 */
struct ulb_rules *ulb_rules_ref(struct ulb_rules *rules);
void ulb_rules_free(struct ulb_rules *rules);

/* How many program versions the set binds (for the start-up log). */
size_t ulb_rules_count(const struct ulb_rules *rules);

/* ------------------------------------------------------------------ */
/* NFSv4.1+ sessions of one connection                                */

#define ULB_SESSIONS_MAX 8

/*
 * The sessions created on one connection and the largest reply each
 * allows (the fore channel's ca_maxresponsesize, which counts the whole RPC
 * reply). The engine owns one table per connection and passes it to
 * ulb_parse_reply, which adds a session from each successful CREATE_SESSION
 * and removes one on DESTROY_SESSION, and to ulb_parse_call, which bounds a
 * COMPOUND starting with SEQUENCE by its session's limit. When full, the
 * oldest entry is replaced. Zero-initialised is empty.
 *
 * An entry also says whether the connection holds the session's back
 * channel: set by CREATE_SESSION and by a BIND_CONN_TO_SESSION whose result
 * includes the back channel (RFC 8881 section 18.34), cleared when another
 * connection of a shared route binds it (ulb_sessions_unbind_back).
 */
struct ulb_session {
	uint8_t id[ULB_SESSIONID_SIZE];
	uint32_t maxresp; /* 0: not known (a session only bound here) */
	uint32_t age;	  /* larger is newer; 0 is an unused slot */
	bool back;	  /* backward calls naming it are this connection's */
};

struct ulb_sessions {
	struct ulb_session s[ULB_SESSIONS_MAX];
	uint32_t clock;
};

void ulb_sessions_add(struct ulb_sessions *t, const uint8_t id[ULB_SESSIONID_SIZE],
		      uint32_t maxresp);
void ulb_sessions_remove(struct ulb_sessions *t, const uint8_t id[ULB_SESSIONID_SIZE]);
/* Whether the table holds the session. */
bool ulb_sessions_has(const struct ulb_sessions *t, const uint8_t id[ULB_SESSIONID_SIZE]);
/*
 * The session's back channel is this connection's (BIND_CONN_TO_SESSION):
 * an entry it already has keeps its limit, a new one has none (0).
 */
void ulb_sessions_bind_back(struct ulb_sessions *t, const uint8_t id[ULB_SESSIONID_SIZE]);
/* Another connection took the session's back channel: whether this one held it. The
 * entry stays, for its limit. */
bool ulb_sessions_unbind_back(struct ulb_sessions *t, const uint8_t id[ULB_SESSIONID_SIZE]);
/* Whether the table holds the session and its back channel. */
bool ulb_sessions_has_back(const struct ulb_sessions *t, const uint8_t id[ULB_SESSIONID_SIZE]);
/* The session's ca_maxresponsesize, or 0 when unknown. */
uint32_t ulb_sessions_maxresp(const struct ulb_sessions *t, const uint8_t id[ULB_SESSIONID_SIZE]);

/*
 * The session a backward call (RFC 8167) is for: the csa_sessionid of the
 * CB_SEQUENCE that must open a CB_COMPOUND (RFC 8881 section 20.9). @msg is
 * the whole RPC call message from its XID. False when it is not a
 * well-formed CB_COMPOUND whose first operation is CB_SEQUENCE (CB_NULL
 * included: it names no session); every length is checked against @len.
 */
bool ulb_cb_sessionid(const uint8_t *msg, size_t len, uint8_t id[ULB_SESSIONID_SIZE]);

/* ------------------------------------------------------------------ */
/* Calls                                                              */

enum ulb_status {
	/* Parsed; the items and the reply bound are valid. */
	ULB_OK = 0,
	/*
	 * An NFSv4 operation without a rule: the arguments after it cannot be
	 * walked, so the message has no DDP items at all and travels as a long
	 * message. The reply bound is the session's or the default estimate.
	 * Counted in ulb_counters.ddp_stopped.
	 */
	ULB_DDP_STOPPED,
	/* The arguments do not parse: a responder answers GARBAGE_ARGS. */
	ULB_GARBAGE_ARGS,
	/* The call header is unusable; see ulb_call.hdr_status. */
	ULB_BAD_HEADER,
};

/* A DDP-eligible item found in a message. */
struct ulb_item {
	/*
	 * Offset of the item's data bytes in the message. The item's 4-byte
	 * XDR length word is just before it and always stays inline.
	 */
	uint32_t offset;
	/* The XDR length of the data, without pad. */
	uint32_t length;
};

/* Result items bounded by this are "unknown size": offer no Write chunk. */
#define ULB_LEN_UNKNOWN UINT32_MAX

struct ulb_call {
	enum ulb_status status;
	/* enum rpc_hdr_status of the header, when status is ULB_BAD_HEADER */
	uint8_t hdr_status;
	/* RPCSEC_GSS: gss_proc and service (RPC_GSS_*); 0 for other flavors */
	uint8_t gss_proc;
	uint8_t gss_service;
	/* The rules bind this program, version and procedure. */
	bool known;

	uint32_t xid;
	uint32_t prog;
	uint32_t vers;
	uint32_t proc;
	uint32_t flavor;      /* credential flavor */
	uint32_t args_offset; /* offset of the procedure arguments */

	/* Eligible argument items, in message order. */
	uint8_t n_args;
	/* Eligible result items to expect, in reply order: their largest length
	 * (ULB_LEN_UNKNOWN when the call does not bound it). */
	uint8_t n_results;
	/*
	 * Bit k set: result item k is opaque data (READ), clear: an XDR string
	 * (a READLINK path). Requesters may treat them differently: the Linux
	 * client offers Write chunks for READ data only.
	 */
	uint32_t result_opaque;
	struct ulb_item args[ULB_MAX_ITEMS];
	uint32_t result_max[ULB_MAX_ITEMS];

	/*
	 * Upper bound of the whole RPC reply message (header included, no
	 * transport framing), and whether it is exact. An estimate (NFSACL
	 * GETACL, NFSv4.0 GETATTR, the default for what is not bounded) may be
	 * exceeded: RFC 8267 allows one retry with a larger Reply chunk.
	 */
	uint32_t reply_max;
	bool reply_exact;
	/* NFSv4 COMPOUND: an operation that changes state, or one not known. */
	bool nfs4_mutates;
	/*
	 * The reply may advertise I/O or message sizes that ulb_clamp_reply()
	 * can lower: NFSv3 FSINFO, or a COMPOUND with CREATE_SESSION or a
	 * GETATTR asking for maxread or maxwrite (among the operations walked).
	 * Never under RPCSEC_GSS integrity or privacy, whose body must not
	 * change, nor for a call that did not parse.
	 */
	bool advertises_sizes;

	/* NFSv4 COMPOUND */
	uint32_t minorversion;
	uint32_t nops;
	uint32_t stop_op;      /* ULB_DDP_STOPPED: the operation without a rule */
	bool has_sequence;     /* first operation is SEQUENCE: sessionid is valid */
	bool destroys_session; /* has DESTROY_SESSION: destroy_id is valid */
	bool binds_session;    /* has BIND_CONN_TO_SESSION: bind_id is valid */
	uint8_t sessionid[ULB_SESSIONID_SIZE];
	uint8_t destroy_id[ULB_SESSIONID_SIZE];
	uint8_t bind_id[ULB_SESSIONID_SIZE];

	/* The rule set and procedure rule the reply is walked with. */
	const struct ulb_rules *rules;
	const struct ulb_proc *rule;
};

/*
 * Parse the RPC call @msg (@len bytes, no record mark or transport header)
 * into @call. @sessions may be NULL (no NFSv4.1 session limits known).
 * Returns call->status. The message is a full call: every item's data is in
 * place.
 */
enum ulb_status ulb_parse_call(const struct ulb_rules *rules, const struct ulb_sessions *sessions,
			       const uint8_t *msg, size_t len, struct ulb_call *call);

/*
 * Executing @call a second time changes nothing: every procedure or NFSv4
 * operation in it only reads (NFSv2/3 and NFSACL by procedure, NFSv4 by
 * operation). False for anything not known, for a call the rules could
 * not walk, and for RPCSEC_GSS privacy (the procedure is encrypted) and
 * GSS context calls. A requester may send such a call again under a new
 * XID, which the server's duplicate request cache does not recognise
 * (but not an RPCSEC_GSS call of any service: its verifier covers the XID).
 */
bool ulb_call_read_only(const struct ulb_call *call);

/*
 * May @call reach the server a second time under an XID its duplicate
 * request cache does not know, with no harm done? True when it only reads
 * (ulb_call_read_only()), or when it is an NFSv4.1+ COMPOUND starting with
 * SEQUENCE, whose repeat the server answers from the session slot's reply
 * cache instead of executing it. Never an RPCSEC_GSS call, whatever its
 * service: its verifier is a checksum of the header from the XID on (RFC
 * 2203 section 5.3.1), so the server refuses it under another XID, and the
 * client takes that refusal for a dead context and starts again, for ever.
 * The RFC 8267 retry asks it (forward mode), and so does a shared route's
 * XID map, which keeps the answered calls this refuses for their client's
 * retransmissions (gateway/maps/wirexid.h).
 */
bool ulb_call_safe_twice(const struct ulb_call *call);

/*
 * Must @call reach the server under the XID its client gave it? True for
 * RPCSEC_GSS (its verifier covers the XID, RFC 2203 section 5.3.1): a
 * shared route sends it under its own XID (wirexid_map_own_xid()).
 */
bool ulb_call_keeps_xid(const struct ulb_call *call);

/* ------------------------------------------------------------------ */
/* Replies                                                            */

enum ulb_reply_status {
	/* Walked; items are valid (there may be none). */
	ULB_REPLY_OK = 0,
	/* Not an accepted, successful reply, or a program without results to
	 * walk: no items, nothing wrong. */
	ULB_REPLY_NO_RESULTS,
	/* An NFSv4 operation without a rule: items before it are valid, the
	 * rest unknown. A full reply can still go as a long message. */
	ULB_REPLY_STOPPED,
	/* The results do not parse, or the header is not a reply. */
	ULB_REPLY_GARBAGE,
};

struct ulb_reply_item {
	/*
	 * Full reply: offset of the data bytes. Reduced reply: the offset in
	 * the reduced message where the data belongs (just after its length
	 * word); for an item that was not moved, where its data is.
	 */
	uint32_t offset;
	/* From the item's length word, without pad. */
	uint32_t length;
	/* The item's data was in a Write chunk (its bit in @moved). */
	bool moved;
};

struct ulb_reply {
	enum ulb_reply_status status;
	uint32_t xid;
	uint32_t reply_stat; /* RPC_MSG_ACCEPTED / RPC_MSG_DENIED */
	uint32_t stat;	     /* accept_stat or reject_stat */
	uint32_t results_offset;
	uint32_t nfs4_status; /* COMPOUND: the overall status */
	uint32_t stop_op;     /* ULB_REPLY_STOPPED: the operation */
	/*
	 * A successful BIND_CONN_TO_SESSION gave this connection the back
	 * channel of session @bound_id (already noted in the table): on a
	 * shared route, the other clients' entries lose it.
	 */
	bool binds_back;
	uint8_t bound_id[ULB_SESSIONID_SIZE];
	/*
	 * A successful DESTROY_SESSION ended session @destroyed_id (already
	 * gone from the table): on a shared route, what was kept of it for a
	 * gone client goes too.
	 */
	bool destroys;
	uint8_t destroyed_id[ULB_SESSIONID_SIZE];
	/* Eligible result items in reply order. Items beyond ULB_MAX_ITEMS are
	 * counted in n_seen but not reported; they cannot have been moved. */
	uint8_t n_items;
	uint32_t n_seen;
	struct ulb_reply_item items[ULB_MAX_ITEMS];
};

/*
 * Walk the reply @msg to the call @call described (parsed with the same
 * rule set, which must still exist). @moved: bit k set when the data of the
 * k-th eligible result item is not in @msg but was placed in a Write chunk
 * (the reduced reply of RPC-over-RDMA: the item's length word stays inline,
 * its data and pad are gone); 0 for a full reply. @sessions, when not NULL,
 * learns sessions from CREATE_SESSION, back channels from BIND_CONN_TO_SESSION
 * (reply->binds_back), and forgets sessions on DESTROY_SESSION.
 * Returns reply->status.
 */
enum ulb_reply_status ulb_parse_reply(const struct ulb_call *call, struct ulb_sessions *sessions,
				      const uint8_t *msg, size_t len, uint32_t moved,
				      struct ulb_reply *reply);

/* ------------------------------------------------------------------ */
/* Lowering the sizes a server advertises                             */

/*
 * A server may advertise larger I/O than a route carries (its largest
 * record); a client then sends WRITEs the route refuses, and hangs. The
 * gateway lowers the advertised sizes in the reply on their way to the
 * client, so that the client never asks for more.
 */

/* Sizes a route carries: what ulb_clamp_reply() lowers a server's advertised sizes to.
 * 0 leaves those fields alone. */
struct ulb_size_caps {
	uint32_t io_max;  /* READ/WRITE/READDIR payload: NFSv3 FSINFO rtmax, rtpref, wtmax, wtpref,
			     dtpref; NFSv4 maxread, maxwrite attributes */
	uint32_t msg_max; /* a whole RPC message: NFSv4.1+ CREATE_SESSION fore channel
			     ca_maxrequestsize, ca_maxresponsesize, ca_maxresponsesize_cached */
};

enum ulb_clamp_field {
	ULB_CLAMP_RTMAX,
	ULB_CLAMP_RTPREF,
	ULB_CLAMP_WTMAX,
	ULB_CLAMP_WTPREF,
	ULB_CLAMP_DTPREF,
	ULB_CLAMP_MAXREAD,
	ULB_CLAMP_MAXWRITE,
	ULB_CLAMP_MAXREQ,
	ULB_CLAMP_MAXRESP,
	ULB_CLAMP_MAXRESP_CACHED,
	ULB_CLAMP_NFIELDS
};

struct ulb_clamp_report {
	uint32_t fields; /* bit (1u << ulb_clamp_field) per value lowered */
	/* The server's value of each lowered field, and what it was lowered to. When a
	 * COMPOUND lowers a field twice (two GETATTRs), the first is reported. */
	uint64_t advertised[ULB_CLAMP_NFIELDS];
	uint64_t clamped[ULB_CLAMP_NFIELDS];
};

/* Name of a field for logs and metrics labels: "rtmax", "wtmax", "maxread",
 * "ca_maxrequestsize", ...; "unknown" out of range. */
const char *ulb_clamp_field_name(enum ulb_clamp_field f);

/*
 * Lower, in place, every size the reply @msg (@len bytes; @moved as for
 * ulb_parse_reply) to @call advertises above @caps. Returns report->fields
 * (0: nothing changed). Only for calls with call->advertises_sizes; anything
 * that does not walk changes nothing. Only the bytes of a lowered value
 * change, so the message keeps its length. @report may be NULL.
 */
uint32_t ulb_clamp_reply(const struct ulb_call *call, uint8_t *msg, size_t len, uint32_t moved,
			 const struct ulb_size_caps *caps, struct ulb_clamp_report *report);

/* ------------------------------------------------------------------ */
/* Counters: each worker thread's own (the parser's diagnostics)      */

struct ulb_counters {
	uint64_t calls;
	uint64_t garbage_args;
	uint64_t bad_headers;
	uint64_t ddp_stopped; /* calls with an NFSv4 operation without a rule */
	uint64_t replies;
	uint64_t garbage_replies;
	uint64_t replies_stopped;
	uint64_t unknown_programs; /* calls to a program/version/procedure without rules */
};

extern _Thread_local struct ulb_counters ulb_counters;

#endif
