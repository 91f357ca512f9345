/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/nfs4_session_msgs.h - hand-made NFSv4.1 messages for the
 * shared routes' session tests (test_forward_share_sessions.c,
 * test_reverse_share.c): CREATE_SESSION, BIND_CONN_TO_SESSION and
 * DESTROY_SESSION calls and
 * their replies, as the gateway relays them, and a CB_COMPOUND opening with
 * CB_SEQUENCE, as the server sends it. Each message is built into an
 * exact-size heap copy (ASan sees any read beyond it) and parsed with the
 * stock rules, as the engine does.
 */
#ifndef TESTS_UNIT_NFS4_SESSION_MSGS_H
#define TESTS_UNIT_NFS4_SESSION_MSGS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xdr.h"
#include "ulb-rules/rpc_msg.h"
#include "ulb-rules/ulb.h"

enum {
	MSG_NFS_PROG = 100003,
	MSG_CB_PROG = 0x40000000,
	MSG_OP_BIND_CONN_TO_SESSION = 41,
	MSG_OP_CREATE_SESSION = 43,
	MSG_OP_DESTROY_SESSION = 44,
	MSG_OP_PUTROOTFH = 24,
	MSG_OP_SEQUENCE = 53,
	MSG_NFS4ERR_BADSESSION = 10052,
	/* channel_dir_from_client4 / channel_dir_from_server4 (RFC 8881 section 18.34) */
	MSG_CDFC4_FORE = 1,
	MSG_CDFC4_BACK_OR_BOTH = 7,
	MSG_CDFS4_FORE = 1,
	MSG_CDFS4_BACK = 2,
	MSG_CDFS4_BOTH = 3,
	MSG_MAXRESP = 1049480,
};

struct msg {
	uint8_t buf[1024];
	uint32_t len;
};

static inline void msg_u32(struct msg *m, uint32_t v)
{
	xdr_put32(m->buf + m->len, v);
	m->len += 4;
}

static inline void msg_sid(struct msg *m, const uint8_t sid[ULB_SESSIONID_SIZE])
{
	memcpy(m->buf + m->len, sid, ULB_SESSIONID_SIZE);
	m->len += ULB_SESSIONID_SIZE;
}

static inline void msg_call_hdr(struct msg *m, uint32_t xid, uint32_t prog, uint32_t vers,
				uint32_t proc)
{
	m->len = 0;
	msg_u32(m, xid);
	msg_u32(m, RPC_MSG_CALL);
	msg_u32(m, RPC_VERSION);
	msg_u32(m, prog);
	msg_u32(m, vers);
	msg_u32(m, proc);
	msg_u32(m, RPC_AUTH_NONE);
	msg_u32(m, 0);
	msg_u32(m, RPC_AUTH_NONE);
	msg_u32(m, 0);
	msg_u32(m, 4); /* tag "tag" (COMPOUND and CB_COMPOUND alike) */
	memcpy(m->buf + m->len, "tag\0", 4);
	m->len += 4;
}

/* A COMPOUND reply's header: overall @status, the tag, @nres results. */
static inline void msg_reply_hdr(struct msg *m, uint32_t xid, uint32_t status, uint32_t nres)
{
	m->len = 0;
	msg_u32(m, xid);
	msg_u32(m, RPC_MSG_REPLY);
	msg_u32(m, RPC_MSG_ACCEPTED);
	msg_u32(m, RPC_AUTH_NONE);
	msg_u32(m, 0);
	msg_u32(m, RPC_ACC_SUCCESS);
	msg_u32(m, status);
	msg_u32(m, 4);
	memcpy(m->buf + m->len, "tag\0", 4);
	m->len += 4;
	msg_u32(m, nres);
}

static inline void msg_channel_attrs(struct msg *m, uint32_t maxresp)
{
	msg_u32(m, 0);	     /* headerpadsize */
	msg_u32(m, 1049620); /* maxrequestsize */
	msg_u32(m, maxresp);
	msg_u32(m, 7584); /* maxresponsesize_cached */
	msg_u32(m, 8);	  /* maxoperations */
	msg_u32(m, 64);	  /* maxrequests */
	msg_u32(m, 0);	  /* rdma_ird<> */
}

/* A CREATE_SESSION call alone in its COMPOUND. */
static inline void msg_create_session_call(struct msg *m, uint32_t xid)
{
	msg_call_hdr(m, xid, MSG_NFS_PROG, 4, 1);
	msg_u32(m, 1); /* minorversion */
	msg_u32(m, 1);
	msg_u32(m, MSG_OP_CREATE_SESSION);
	msg_u32(m, 0); /* clientid4 */
	msg_u32(m, 0x1122);
	msg_u32(m, 1); /* sequence */
	msg_u32(m, 3); /* flags: persist, back channel */
	msg_channel_attrs(m, 1049480);
	msg_channel_attrs(m, 4096);
	msg_u32(m, MSG_CB_PROG);
	msg_u32(m, 1);
	msg_u32(m, RPC_AUTH_NONE); /* callback_sec_parms4 */
}

static inline void msg_create_session_reply(struct msg *m, uint32_t xid,
					    const uint8_t sid[ULB_SESSIONID_SIZE])
{
	msg_reply_hdr(m, xid, 0, 1);
	msg_u32(m, MSG_OP_CREATE_SESSION);
	msg_u32(m, 0);
	msg_sid(m, sid);
	msg_u32(m, 1); /* sequence */
	msg_u32(m, 3); /* flags */
	msg_channel_attrs(m, MSG_MAXRESP);
	msg_channel_attrs(m, 4096);
}

/* BIND_CONN_TO_SESSION of @sid for @dir (a CDFC4_*), after PUTROOTFH when @putrootfh. */
static inline void msg_bcts_call(struct msg *m, uint32_t xid, const uint8_t sid[ULB_SESSIONID_SIZE],
				 uint32_t dir, bool putrootfh)
{
	msg_call_hdr(m, xid, MSG_NFS_PROG, 4, 1);
	msg_u32(m, 1); /* minorversion */
	msg_u32(m, putrootfh ? 2 : 1);
	if (putrootfh)
		msg_u32(m, MSG_OP_PUTROOTFH);
	msg_u32(m, MSG_OP_BIND_CONN_TO_SESSION);
	msg_sid(m, sid);
	msg_u32(m, dir);
	msg_u32(m, 1); /* bctsa_use_conn_in_rdma_mode */
}

/* Its reply: @status; when NFS4_OK, @sid and @dir (a CDFS4_*). */
static inline void msg_bcts_reply(struct msg *m, uint32_t xid, uint32_t status,
				  const uint8_t sid[ULB_SESSIONID_SIZE], uint32_t dir,
				  bool putrootfh)
{
	msg_reply_hdr(m, xid, status, putrootfh ? 2 : 1);
	if (putrootfh) {
		msg_u32(m, MSG_OP_PUTROOTFH);
		msg_u32(m, 0);
	}
	msg_u32(m, MSG_OP_BIND_CONN_TO_SESSION);
	msg_u32(m, status);
	if (status != 0)
		return;
	msg_sid(m, sid);
	msg_u32(m, dir);
	msg_u32(m, 1);
}

/* DESTROY_SESSION of @sid alone in its COMPOUND. */
static inline void msg_destroy_session_call(struct msg *m, uint32_t xid,
					    const uint8_t sid[ULB_SESSIONID_SIZE])
{
	msg_call_hdr(m, xid, MSG_NFS_PROG, 4, 1);
	msg_u32(m, 1); /* minorversion */
	msg_u32(m, 1);
	msg_u32(m, MSG_OP_DESTROY_SESSION);
	msg_sid(m, sid);
}

/* Its reply: @status. */
static inline void msg_destroy_session_reply(struct msg *m, uint32_t xid, uint32_t status)
{
	msg_reply_hdr(m, xid, status, 1);
	msg_u32(m, MSG_OP_DESTROY_SESSION);
	msg_u32(m, status);
}

/* A COMPOUND of SEQUENCE on @sid (slot 0) and PUTROOTFH, as a client goes on with its session. */
static inline void msg_sequence_call(struct msg *m, uint32_t xid,
				     const uint8_t sid[ULB_SESSIONID_SIZE])
{
	msg_call_hdr(m, xid, MSG_NFS_PROG, 4, 1);
	msg_u32(m, 1); /* minorversion */
	msg_u32(m, 2);
	msg_u32(m, MSG_OP_SEQUENCE);
	msg_sid(m, sid);
	msg_u32(m, 7); /* sequenceid, slotid, highest_slotid, cachethis */
	msg_u32(m, 0);
	msg_u32(m, 0);
	msg_u32(m, 0);
	msg_u32(m, MSG_OP_PUTROOTFH);
}

/* Its reply: @status for SEQUENCE (and the COMPOUND); PUTROOTFH's NFS4_OK after an OK. */
static inline void msg_sequence_reply(struct msg *m, uint32_t xid, uint32_t status,
				      const uint8_t sid[ULB_SESSIONID_SIZE])
{
	msg_reply_hdr(m, xid, status, status ? 1 : 2);
	msg_u32(m, MSG_OP_SEQUENCE);
	msg_u32(m, status);
	if (status != 0)
		return;
	msg_sid(m, sid);
	msg_u32(m, 7); /* sequenceid, slotid, highest_slotid, target_highest_slotid, status_flags */
	msg_u32(m, 0);
	msg_u32(m, 63);
	msg_u32(m, 63);
	msg_u32(m, 0);
	msg_u32(m, MSG_OP_PUTROOTFH);
	msg_u32(m, 0);
}

/* A CB_COMPOUND of CB_SEQUENCE naming @sid, as the server calls back. */
static inline void msg_cb_sequence(struct msg *m, uint32_t xid,
				   const uint8_t sid[ULB_SESSIONID_SIZE])
{
	msg_call_hdr(m, xid, MSG_CB_PROG, 1, 1);
	msg_u32(m, 1); /* minorversion */
	msg_u32(m, 0); /* callback_ident */
	msg_u32(m, 1);
	msg_u32(m, 11); /* CB_SEQUENCE */
	msg_sid(m, sid);
	msg_u32(m, 1); /* sequenceid, slotid, highest_slotid, cachethis, referring lists */
	msg_u32(m, 0);
	msg_u32(m, 0);
	msg_u32(m, 0);
	msg_u32(m, 0);
}

/* An exact-size heap copy of the first @len bytes, for ASan. */
static inline uint8_t *msg_dup(const struct msg *m, uint32_t len)
{
	uint8_t *p = malloc(len ? len : 1);

	if (p)
		memcpy(p, m->buf, len);
	return p;
}

static inline struct ulb_rules *msg_rules_load(void)
{
	char err[512];
	struct ulb_options o = { .stock_dir = GW_SOURCE_DIR "/ulb-rules",
				 .default_reply_max = 65536 };
	struct ulb_rules *r = ulb_rules_load(&o, err, sizeof(err));

	if (!r)
		fprintf(stderr, "%s\n", err);
	return r;
}

/* Parse the call @m as the engine does on its way to the server. */
static inline enum ulb_status msg_parse_call(const struct ulb_rules *rules, const struct msg *m,
					     struct ulb_call *u)
{
	uint8_t *p = msg_dup(m, m->len);
	enum ulb_status st = p ? ulb_parse_call(rules, NULL, p, m->len, u) : ULB_BAD_HEADER;

	free(p);
	return st;
}

#endif
