/* SPDX-License-Identifier: MIT */
/*
 * gateway/side/nlm/nlm_xdr.h - the parts of the NLM protocol (program 100021,
 * versions 1, 3 and 4) the NLM relay must read and rewrite: the lock
 * (caller name, file handle, owner handle, svid, range) inside the
 * arguments of TEST, LOCK, CANCEL, UNLOCK and GRANTED and their _MSG forms,
 * the holder inside a TEST reply (or TEST_RES call), and the status of the
 * other replies; the share (caller name, file handle, owner handle, mode,
 * access) of SHARE and UNSHARE and their reply, and FREE_ALL's arguments. Used by gateway/nlm_relay
 * and nlm_callback (docs/architecture.md, "NLM and NSM relay").
 *
 * Why rewrite at all: Linux lockd tells its peers apart by source address
 * only, so every client behind the gateway is one host to the server; the
 * relay gives each (client, svid, oh) an owner of its own
 * (gateway/side/nlm/nlm_state.h) and must put it in the calls and take it out of the
 * replies.
 *
 * Decoding gives views (pointer and length) into the caller's buffer, no
 * copy; every length from the peer is checked against the protocol's bound
 * and the message must end exactly where its arguments do. Encoding writes
 * a whole new argument body, since a rewritten owner handle or caller name
 * need not have the original's length; the svid alone is rewritten in place
 * (nlm_put_svid()).
 *
 * Versions 1 and 3 differ from 4 only in the lock and holder: 32-bit
 * offsets and lengths, a file handle of at most 32 bytes (NFSv2's) instead
 * of 64 (NFSv3's).
 */
#ifndef GW_GATEWAY_NLM_XDR_H
#define GW_GATEWAY_NLM_XDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
	NLM_PROG = 100021,
	NSM_PROG = 100024,
	NSM_VERS = 1,
	NSMPROC_NULL = 0,
	NSMPROC_NOTIFY = 6,
	NSM_MAXSTRLEN = 1024,	 /* SM_MAXSTRLEN: mon_name */
	NLM_LM_MAXSTRLEN = 1024, /* caller_name */
	NLM_MAXNETOBJ = 1024,	 /* MAXNETOBJ_SZ: cookie, oh */
	NLM4_FHSIZE = 64,	 /* v4: NFSv3 handles */
	NLM3_FHSIZE = 32,	 /* v1 and v3: NFSv2 handles */
};

/* Procedure numbers (the same in every version). */
enum nlm_proc {
	NLMPROC_NULL = 0,
	NLMPROC_TEST = 1,
	NLMPROC_LOCK = 2,
	NLMPROC_CANCEL = 3,
	NLMPROC_UNLOCK = 4,
	NLMPROC_GRANTED = 5,
	NLMPROC_TEST_MSG = 6,
	NLMPROC_LOCK_MSG = 7,
	NLMPROC_CANCEL_MSG = 8,
	NLMPROC_UNLOCK_MSG = 9,
	NLMPROC_GRANTED_MSG = 10,
	NLMPROC_TEST_RES = 11,
	NLMPROC_LOCK_RES = 12,
	NLMPROC_CANCEL_RES = 13,
	NLMPROC_UNLOCK_RES = 14,
	NLMPROC_GRANTED_RES = 15,
	NLMPROC_SHARE = 20,    /* v3 and v4: nlm_shareargs -> nlm_shareres */
	NLMPROC_UNSHARE = 21,  /* the same */
	NLMPROC_NM_LOCK = 22,  /* v3 and v4: lockargs, never blocks */
	NLMPROC_FREE_ALL = 23, /* v3 and v4: nlm_notify, void result */
};

/* nlm4_stats (v1/v3 use the first five values). */
enum nlm_stat {
	NLM_GRANTED = 0,
	NLM_DENIED = 1,
	NLM_DENIED_NOLOCKS = 2,
	NLM_BLOCKED = 3,
	NLM_DENIED_GRACE_PERIOD = 4,
};

/* Bytes of the decoded message (not a copy), or bytes to encode. */
struct nlm_bytes {
	const uint8_t *p;
	uint32_t len;
};

struct nlm_lock {
	struct nlm_bytes caller; /* caller_name, <= NLM_LM_MAXSTRLEN */
	struct nlm_bytes fh;
	struct nlm_bytes oh;
	int32_t svid;
	uint64_t offset, len; /* v1/v3: 32 bits on the wire */
	uint32_t svid_off;    /* where the svid is in the decoded buffer */
};

/* Which argument shape a procedure has. */
enum nlm_args_kind {
	NLM_ARGS_NONE = 0, /* not one with a lock: the relay passes it unchanged */
	NLM_ARGS_TEST,	   /* TEST, TEST_MSG, GRANTED, GRANTED_MSG */
	NLM_ARGS_LOCK,	   /* LOCK, LOCK_MSG, NM_LOCK */
	NLM_ARGS_CANCEL,   /* CANCEL, CANCEL_MSG */
	NLM_ARGS_UNLOCK,   /* UNLOCK, UNLOCK_MSG */
	NLM_ARGS_SHARE,	   /* SHARE, UNSHARE (v3 and v4 only) */
};

struct nlm_args {
	uint32_t vers;
	enum nlm_args_kind kind;
	struct nlm_bytes cookie;
	bool block;	 /* LOCK, CANCEL */
	bool exclusive;	 /* all but UNLOCK */
	bool reclaim;	 /* LOCK */
	int32_t state;	 /* LOCK: the client's NSM state */
	uint32_t mode;	 /* SHARE: fsh_mode (deny none, read, write, both) */
	uint32_t access; /* SHARE: fsh_access (none, read, write, both) */
	/*
	 * A SHARE's nlm_share is caller_name, fh, oh: those fields of @lock
	 * (no svid, no range on the wire; left 0). `reclaim` is its too.
	 */
	struct nlm_lock lock;
};

struct nlm_holder {
	bool exclusive;
	int32_t svid;
	struct nlm_bytes oh;
	uint64_t offset, len;
};

/* A TEST reply, or the argument of TEST_RES. */
struct nlm_testres {
	struct nlm_bytes cookie;
	uint32_t stat;
	struct nlm_holder holder; /* when stat is NLM_DENIED */
};

/* The reply of LOCK, CANCEL, UNLOCK, GRANTED, or the argument of their _RES. */
struct nlm_res {
	struct nlm_bytes cookie;
	uint32_t stat;
};

/* The reply of SHARE and UNSHARE. */
struct nlm_shareres {
	struct nlm_bytes cookie;
	uint32_t stat;
	int32_t sequence;
};

/* The argument shape of @proc, NLM_ARGS_NONE for the others. */
enum nlm_args_kind nlm_args_kind(uint32_t proc);

/*
 * Decode the arguments of @proc (version @vers) from @buf (the call's
 * argument body, nothing after it). 0; -EPROTONOSUPPORT for a version other
 * than 1, 3, 4 or a procedure without a lock (SHARE and UNSHARE: other than 3
 * or 4); -EBADMSG for a truncated or
 * oversized field, a boolean other than 0 or 1, or bytes left over.
 */
int nlm_decode_args(uint32_t vers, uint32_t proc, const uint8_t *buf, size_t len,
		    struct nlm_args *a);
/*
 * Encode @a into @out. 0 and *@n; -ENOSPC when @cap is short; -EINVAL for a
 * field over its bound or a range a v1/v3 lock cannot carry (over 32 bits).
 */
int nlm_encode_args(const struct nlm_args *a, uint8_t *out, size_t cap, size_t *n);

/* Write @svid over the svid of a decoded lock (@buf is the decoded buffer). */
void nlm_put_svid(uint8_t *buf, const struct nlm_lock *l, int32_t svid);

/* The same for a TEST reply body and a plain result body. */
int nlm_decode_testres(uint32_t vers, const uint8_t *buf, size_t len, struct nlm_testres *r);
int nlm_encode_testres(uint32_t vers, const struct nlm_testres *r, uint8_t *out, size_t cap,
		       size_t *n);
int nlm_decode_res(const uint8_t *buf, size_t len, struct nlm_res *r);

/* SHARE's and UNSHARE's reply body: 0 or -EBADMSG (nothing may follow). */
int nlm_decode_shareres(const uint8_t *buf, size_t len, struct nlm_shareres *r);
/* 0 and *@n; -EINVAL for a cookie over its bound, -ENOSPC when @cap is short. */
int nlm_encode_shareres(const struct nlm_shareres *r, uint8_t *out, size_t cap, size_t *n);

/*
 * FREE_ALL's nlm_notify (name<LM_MAXSTRLEN>, state; nothing after): @name a
 * view into @buf. 0 or -EBADMSG.
 */
int nlm_decode_notify(const uint8_t *buf, size_t len, struct nlm_bytes *name, int32_t *state);

/* NSM SM_NOTIFY's stat_chge (mon_name<SM_MAXSTRLEN>, state; nothing after) into @state: 0 or
 * -EINVAL. */
int nsm_decode_stat_chge(const uint8_t *buf, size_t len, int32_t *state);

#endif
