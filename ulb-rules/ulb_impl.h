/* SPDX-License-Identifier: MIT */
/*
 * ulb-rules/ulb_impl.h - the compiled form of the rules, shared by the
 * loader and the walkers of this module. Private: nothing outside
 * ulb-rules/ includes it.
 *
 * A rule file's XDR shapes compile to a flat array of nodes. Children of a
 * struct and arms of a union are runs in side arrays, so that a walk is a
 * loop over small fixed records. Each node knows whether its encoding has a
 * fixed size, which lets the walker step over a file handle or an fattr3 in
 * one addition.
 */
#ifndef GW_ULB_IMPL_H
#define GW_ULB_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "ulb-rules/rpc_msg.h"
#include "ulb-rules/ulb.h"

/* Named numeric values saved while walking arguments (per rule file). */
#define ULB_MAX_VALUES 16
#define ULB_NONE       UINT32_MAX
#define ULB_MAX_DEPTH  24

enum ulb_kind {
	UK_VOID,
	UK_U32, /* int, unsigned int, enum, bool */
	UK_U64, /* hyper, unsigned hyper */
	UK_FIXED,
	UK_OPAQUE, /* opaque<>, string<> */
	UK_STRUCT,
	UK_OPTIONAL, /* T * */
	UK_ARRAY,    /* T<> */
	UK_LIST,     /* XDR linked list: (TRUE T)* FALSE */
	UK_UNION,
};

enum {
	UN_FIXED = 1 << 0,     /* encoded size is always @fixed_len */
	UN_DDP = 1 << 1,       /* a DDP-eligible opaque */
	UN_SAVE = 1 << 2,      /* value (or union discriminant, or opaque length) saved in @save */
	UN_MAX_VALUE = 1 << 3, /* opaque/array maximum is the saved value @max_value */
	UN_HAS_DDP = 1 << 4,   /* the subtree holds a DDP item */
	UN_STRING = 1 << 5,    /* an XDR string (a path), not opaque data */
};

struct ulb_node {
	uint8_t kind;
	uint8_t flags;
	uint8_t save;	   /* value slot */
	uint8_t max_value; /* value slot of the maximum */
	uint32_t max;	   /* FIXED: size; OPAQUE/ARRAY: literal maximum */
	uint32_t fixed_len;
	uint32_t first; /* STRUCT: first kid; OPTIONAL/ARRAY/LIST: element; UNION: first arm */
	uint32_t count; /* STRUCT: kids; UNION: arms */
	uint32_t dflt;	/* UNION: default arm's node, ULB_NONE when none */
};

struct ulb_arm {
	uint32_t value;
	uint32_t node;
};

/*
 * An upper bound as a linear form of the saved values: base plus, for each
 * value, coef times the value rounded up to XDR units. Values are never
 * negative, so the maximum of two forms is bounded by the form of the
 * element-wise maxima, which is how union arms combine.
 */
struct ulb_bound {
	uint32_t base;
	uint32_t coef[ULB_MAX_VALUES];
	bool unbounded;
	bool estimate;
};

/* A result item to expect: its maximum is literal or a saved value. */
struct ulb_expect {
	uint32_t max;  /* literal maximum, ULB_LEN_UNKNOWN when none */
	uint8_t value; /* value slot, or ULB_NO_VALUE */
	bool string;   /* an XDR string (READLINK's path), not opaque data */
};
#define ULB_NO_VALUE 0xff

/* A procedure, or an NFSv4 operation. */
struct ulb_proc {
	bool present;
	bool compound; /* NFSv4 COMPOUND: walked by ulb_nfs4.c */
	uint32_t num;
	char name[32];
	uint32_t args;		/* node, ULB_NONE: not described */
	uint32_t results;	/* node, ULB_NONE: not described */
	struct ulb_bound reply; /* bound of the results (the op's, with its opcode) */
	uint8_t n_expect;
	struct ulb_expect expect[ULB_MAX_ITEMS];
};

struct ulb_version {
	uint32_t prog;
	uint32_t vers;
	const char *file;
	uint32_t n_procs; /* procs[] is indexed by procedure number */
	struct ulb_proc *procs;
	bool has_default; /* "reply_max" of the version: for procedures without a rule */
	struct ulb_bound dflt;
	uint32_t n_ops; /* COMPOUND: ops[] indexed by operation number */
	struct ulb_proc *ops;
	uint32_t next; /* hash chain, ULB_NONE at the end */
};

#define ULB_HASH_SIZE 64

struct ulb_rules {
	uint32_t refs; /* ulb_rules_load() and each ulb_rules_ref() */
	uint32_t default_reply_max;
	struct ulb_node *nodes;
	uint32_t n_nodes;
	uint32_t *kids;
	uint32_t n_kids;
	struct ulb_arm *arms;
	uint32_t n_arms;
	struct ulb_version *versions;
	uint32_t n_versions;
	uint32_t hash[ULB_HASH_SIZE];
	char **files; /* names of the files loaded, owned */
	uint32_t n_files;
};

static inline uint32_t ulb_hash(uint32_t prog, uint32_t vers)
{
	return (prog * 31u + vers) & (ULB_HASH_SIZE - 1);
}

const struct ulb_version *ulb_find_version(const struct ulb_rules *r, uint32_t prog, uint32_t vers);

/* ---- the shape walker (ulb_walk.c) ---- */

struct ulb_walk {
	const struct ulb_rules *r;
	const uint8_t *msg;
	uint32_t len;
	uint32_t pos;
	/* collect DDP items into items[] (calls: arguments; replies: results) */
	bool collect;
	uint32_t moved;	 /* reply walk: bit k, the k-th item's data is not inline */
	uint32_t n_seen; /* DDP items met, including those not reported */
	uint8_t n_items;
	struct ulb_reply_item *items;
	uint64_t values[ULB_MAX_VALUES];
};

/* Walk node @n from w->pos; false when the data does not fit the shape. */
bool ulb_walk_node(struct ulb_walk *w, uint32_t n);
void ulb_walk_reset_values(struct ulb_walk *w);

/* Evaluate @b with the saved values; sets *exact, returns bytes (saturated),
 * or UINT32_MAX with *unbounded when the form has no bound. */
uint64_t ulb_bound_eval(const struct ulb_bound *b, const uint64_t *values, bool *estimate,
			bool *unbounded);

/* Set call->reply_max to the RPC reply header plus @body plus @extra (GSS
 * wrapping); unbounded falls back to the default estimate. */
void ulb_set_reply_bound(struct ulb_call *call, const struct ulb_rules *rules, uint64_t body,
			 bool estimate, bool unbounded, uint32_t extra);

/* Fill the expected result items of @p into @call (appending). */
void ulb_expect_results(const struct ulb_proc *p, const uint64_t *values, struct ulb_call *call);

/* The call's body and its reply's are plain XDR, which the gateway may change:
 * not checksummed or encrypted by RPCSEC_GSS integrity or privacy. */
static inline bool ulb_plain_body(const struct ulb_call *call)
{
	return call->flavor != RPC_AUTH_GSS ||
	       (call->gss_proc == RPC_GSS_PROC_DATA && call->gss_service == RPC_GSS_SVC_NONE);
}

/* ---- NFSv4 COMPOUND (ulb_nfs4.c) ---- */

/*
 * CREATE_SESSION4resok (RFC 8881 section 18.36): sessionid, sequence, flags,
 * then the fore channel's channel_attrs4: headerpadsize, maxrequestsize,
 * maxresponsesize, maxresponsesize_cached... Offsets from the resok's start.
 */
#define ULB_CS_FORE_OFF		  (ULB_SESSIONID_SIZE + 4 + 4)
#define ULB_CS_MAXREQ_OFF	  (ULB_CS_FORE_OFF + 4)
#define ULB_CS_MAXRESP_OFF	  (ULB_CS_FORE_OFF + 8)
#define ULB_CS_MAXRESP_CACHED_OFF (ULB_CS_FORE_OFF + 12)

/* What ulb_nfs4_next_result() met. */
enum ulb_nfs4_step {
	ULB_NFS4_RESULT,  /* an operation's result, NFS4_OK */
	ULB_NFS4_END,	  /* an operation failed, or ILLEGAL: the results end here */
	ULB_NFS4_STOPPED, /* an operation without a rule: what follows is unknown */
	ULB_NFS4_GARBAGE, /* the result does not fit its shape */
};

/* COMPOUND4res up to its first result: status, tag, result count. False when it
 * does not parse. */
bool ulb_nfs4_reply_head(struct ulb_walk *w, uint32_t *status, uint32_t *nres);

/*
 * Walk the next operation result with the shape of its operation. *op is
 * the operation; on ULB_NFS4_RESULT, *start is the offset of its status and
 * w->pos the end of the result, the shape checked in between.
 */
enum ulb_nfs4_step ulb_nfs4_next_result(const struct ulb_version *v, struct ulb_walk *w,
					uint32_t *op, uint32_t *start);

void ulb_nfs4_parse_call(const struct ulb_version *v, const struct ulb_sessions *sessions,
			 struct ulb_walk *w, uint32_t extra, struct ulb_call *call);
void ulb_nfs4_parse_reply(const struct ulb_version *v, const struct ulb_call *call,
			  struct ulb_sessions *sessions, struct ulb_walk *w,
			  struct ulb_reply *reply);

#endif
