/* SPDX-License-Identifier: MIT */
/*
 * ulb-rules/ulb_session.c - the per-connection table of NFSv4.1 sessions
 * and their reply-size limits. A handful of entries: a client normally
 * creates one session per server, a trunked client a few.
 */
#include <string.h>

#include "common/xdr.h"
#include "ulb-rules/rpc_msg.h"
#include "ulb-rules/ulb.h"

/* Index of the session, or -1. */
static int session_find(const struct ulb_sessions *t, const uint8_t id[ULB_SESSIONID_SIZE])
{
	for (int i = 0; i < ULB_SESSIONS_MAX; i++)
		if (t->s[i].age && memcmp(t->s[i].id, id, ULB_SESSIONID_SIZE) == 0)
			return i;
	return -1;
}

void ulb_sessions_add(struct ulb_sessions *t, const uint8_t id[ULB_SESSIONID_SIZE],
		      uint32_t maxresp)
{
	int found = session_find(t, id);
	struct ulb_session *s = &t->s[found >= 0 ? found : 0];

	if (found < 0) {
		/* a free slot, else the oldest */
		for (int i = 0; i < ULB_SESSIONS_MAX; i++) {
			if (!t->s[i].age) {
				s = &t->s[i];
				break;
			}
			if (t->s[i].age < s->age)
				s = &t->s[i];
		}
	}
	memcpy(s->id, id, ULB_SESSIONID_SIZE);
	s->maxresp = maxresp;
	s->back = true;
	if (++t->clock == 0) {
		/* after 2^32 sessions: restart the ages (which old entry goes
		 * first is then arbitrary, which is harmless) */
		for (int i = 0; i < ULB_SESSIONS_MAX; i++)
			if (t->s[i].age)
				t->s[i].age = 1;
		t->clock = 2;
	}
	s->age = t->clock;
}

void ulb_sessions_remove(struct ulb_sessions *t, const uint8_t id[ULB_SESSIONID_SIZE])
{
	int i = session_find(t, id);

	if (i >= 0)
		memset(&t->s[i], 0, sizeof(t->s[i]));
}

bool ulb_sessions_has(const struct ulb_sessions *t, const uint8_t id[ULB_SESSIONID_SIZE])
{
	return session_find(t, id) >= 0;
}

void ulb_sessions_bind_back(struct ulb_sessions *t, const uint8_t id[ULB_SESSIONID_SIZE])
{
	int i = session_find(t, id);

	if (i >= 0)
		t->s[i].back = true;
	else
		ulb_sessions_add(t, id, 0);
}

bool ulb_sessions_unbind_back(struct ulb_sessions *t, const uint8_t id[ULB_SESSIONID_SIZE])
{
	int i = session_find(t, id);
	bool held = i >= 0 && t->s[i].back;

	if (i >= 0)
		t->s[i].back = false;
	return held;
}

bool ulb_sessions_has_back(const struct ulb_sessions *t, const uint8_t id[ULB_SESSIONID_SIZE])
{
	int i = session_find(t, id);

	return i >= 0 && t->s[i].back;
}

uint32_t ulb_sessions_maxresp(const struct ulb_sessions *t, const uint8_t id[ULB_SESSIONID_SIZE])
{
	int i = session_find(t, id);

	return i >= 0 ? t->s[i].maxresp : 0;
}

/* The callback program's procedures and operation (RFC 8881 section 20). */
enum { CB_PROC_COMPOUND = 1, CB_OP_SEQUENCE = 11, CB_TAG_MAX = 1024 };

bool ulb_cb_sessionid(const uint8_t *msg, size_t len, uint8_t id[ULB_SESSIONID_SIZE])
{
	struct rpc_call_hdr h;

	if (rpc_call_hdr_parse(msg, len, &h) != RPC_HDR_OK || h.proc != CB_PROC_COMPOUND)
		return false;
	size_t pos = h.args_off;
	/* CB_COMPOUND4args: tag, minorversion, callback_ident, then the operations. */
	if (pos > len || len - pos < 4)
		return false;
	uint32_t taglen = xdr_get32(msg + pos);
	pos += 4;
	if (taglen > CB_TAG_MAX || len - pos < (size_t)xdr_align(taglen))
		return false;
	pos += xdr_align(taglen);
	if (len - pos < 4 + 4 + 4 + 4 + ULB_SESSIONID_SIZE)
		return false;
	uint32_t nops = xdr_get32(msg + pos + 8);
	uint32_t op = xdr_get32(msg + pos + 12);
	if (nops == 0 || op != CB_OP_SEQUENCE)
		return false;
	memcpy(id, msg + pos + 16, ULB_SESSIONID_SIZE);
	return true;
}
