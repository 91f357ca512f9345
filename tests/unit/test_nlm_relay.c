/* SPDX-License-Identifier: MIT */
/*
 * The NLM relay's rewriting (gateway/side/nlm/nlm_relay.c) on messages built here:
 * two clients with the same svid and owner handle get different upstream
 * owners and the gateway's caller name; what does not decode is answered
 * GARBAGE_ARGS, the refused procedures PROC_UNAVAIL; a granted LOCK is
 * recorded for its client and an UNLOCK forgets it; a TEST holder is shown
 * to its own client as its own; a client's SM_NOTIFY becomes an UNLOCK of
 * its lock only, sent upstream, and is answered. SHARE and UNSHARE are
 * rewritten and recorded as locks are; FREE_ALL is the sender's reboot.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/clock.h"
#include "common/xdr.h"
#include "gateway/counters/counters.h"
#include "gateway/side/nlm/nlm_relay.h"
#include "gateway/side/rpc/portmap.h"

#include "support/rpcmsg.h"
#include "support/udp.h"

static const char GW_NAME[] = "gw.example";

/* The relay's own calls, as the side_relay would send them. */
static uint8_t sent[8][512];
static size_t sent_len[8], nsent;

static bool capture(void *arg, const uint8_t *msg, size_t len)
{
	(void)arg;
	if (nsent == 8 || len > sizeof(sent[0]))
		return false;
	memcpy(sent[nsent], msg, len);
	sent_len[nsent++] = len;
	return true;
}

/* An RPC call header with AUTH_NONE; its length (40). */
static const uint8_t FH[32] = { 1, 2, 3, 4, 5, 6, 7, 8 };

/*
 * A @proc of version 4 on @fh (sizeof(FH) bytes) by (@svid, "oh-1"), named
 * "client", exclusive, with @reclaim and @block as given.
 */
static size_t nlm_call_on(uint8_t *b, size_t cap, uint32_t xid, uint32_t proc, int32_t svid,
			  const uint8_t *fh, bool reclaim, bool block)
{
	struct nlm_args a = {
		.vers = 4,
		.kind = nlm_args_kind(proc),
		.cookie = { (const uint8_t *)"ck", 2 },
		.exclusive = true,
		.reclaim = reclaim,
		.block = block,
		.lock = { .caller = { (const uint8_t *)"client", 6 },
			  .fh = { fh, sizeof(FH) },
			  .oh = { (const uint8_t *)"oh-1", 4 },
			  .svid = svid },
	};
	size_t h = gwt_rpc_call_none(b, xid, NLM_PROG, 4, proc), m;
	assert_int_equal(nlm_encode_args(&a, b + h, cap - h, &m), 0);
	return h + m;
}

/* A LOCK (or @proc) on FH by (@svid, "oh-1"), neither reclaim nor block. */
static size_t lock_call(uint8_t *b, size_t cap, uint32_t xid, uint32_t proc, int32_t svid)
{
	return nlm_call_on(b, cap, xid, proc, svid, FH, false, false);
}

/* A LOCK of @svid with @reclaim and @block set as given. */
static size_t lock_flags(uint8_t *b, size_t cap, uint32_t xid, int32_t svid, bool reclaim,
			 bool block)
{
	return nlm_call_on(b, cap, xid, NLMPROC_LOCK, svid, FH, reclaim, block);
}

struct fixture {
	struct gw_counters counters;
	struct nlm_relay *rl;
};

/* A relay with the state's limits @lim (0: a default), its own calls captured. */
static struct nlm_relay *relay_with(struct gw_counters *c, struct nlm_state_limits lim)
{
	struct nlm_relay_config cfg = {
		.route_name = "t",
		.caller_name = GW_NAME,
		.counters = c,
		.send = capture,
		.limits = lim,
	};
	nsent = 0;
	struct nlm_relay *rl = nlm_relay_new(&cfg);
	assert_non_null(rl);
	return rl;
}

static struct nlm_relay *relay_new(struct gw_counters *c)
{
	return relay_with(c, (struct nlm_state_limits){ 0 });
}

/* A fixture: a relay with the default limits. */
static int relay_setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->rl = relay_new(&f->counters);
	*state = f;
	return 0;
}

static int relay_teardown(void **state)
{
	struct fixture *f = *state;

	nlm_relay_free(f->rl);
	free(f);
	return 0;
}

/* Run the call hook on @msg from @p; the verdict, the output in @out. */
static enum side_relay_verdict call(struct nlm_relay *rl, const struct side_service_peer *p,
				    const uint8_t *msg, size_t len, uint8_t *out, size_t *n)
{
	struct rpc_call_hdr h;
	assert_int_equal(rpc_call_decode(msg, len, &h), RPC_HDR_CALL);
	return nlm_relay_call_hook(rl, p, &h, msg, len, out, 4096, n);
}

static void decode_rewritten(const uint8_t *msg, size_t len, uint32_t proc, struct nlm_args *a)
{
	struct rpc_call_hdr h;
	assert_int_equal(rpc_call_decode(msg, len, &h), RPC_HDR_CALL);
	assert_int_equal(nlm_decode_args(4, proc, msg + h.args_off, len - h.args_off, a), 0);
}

/*
 * The side service a client's call came in by: never looked into, only
 * told from NULL (the relay's own calls).
 */
static char client_svc_stands_in;
#define CLIENT_SVC ((struct side_service *)(void *)&client_svc_stands_in)

/*
 * The server's reply to the rewritten call @up with results @res (@rn
 * bytes): a client's call from @p, or the relay's own for a @p without an
 * address.
 */
static enum side_relay_verdict reply(struct nlm_relay *rl, const struct side_service_peer *p,
				     uint8_t *up, size_t up_len, uint32_t proc, const uint8_t *res,
				     size_t rn, uint8_t *out, size_t *n)
{
	struct relay_call c = { .used = true,
				.svc = p->addrlen ? CLIENT_SVC : NULL,
				.peer = *p,
				.vers = 4,
				.proc = proc,
				.msg = up,
				.len = (uint32_t)up_len };
	uint8_t msg[512];
	size_t h = rpc_encode_accept_error(msg, sizeof(msg), 7, RPCSTAT_SUCCESS, 0, 0);
	memcpy(msg + h, res, rn);
	return nlm_relay_reply_hook(rl, &c, msg, h + rn, out, 4096, n);
}

/* nlm_res: cookie "ck", @stat. */
static size_t res_bytes(uint8_t *b, uint32_t stat)
{
	return gwt_nlm_res(b, "ck", 2, stat);
}

/* The NLM stat (last word) of an answer the relay gave itself. */
static uint32_t answered_stat(const uint8_t *out, size_t n)
{
	size_t off;
	assert_true(rpc_reply_results(out, n, &off));
	return xdr_get32(out + n - 4);
}

/* A SHARE (or UNSHARE) of version 4 on @fh by @oh, deny write, access read+write. */
static size_t share_call(uint8_t *b, size_t cap, uint32_t xid, uint32_t proc, const char *oh,
			 const uint8_t *fh)
{
	struct nlm_args a = {
		.vers = 4,
		.kind = NLM_ARGS_SHARE,
		.cookie = { (const uint8_t *)"ck", 2 },
		.mode = 2,
		.access = 3,
		.lock = { .caller = { (const uint8_t *)"pcnfs", 5 },
			  .fh = { fh, sizeof(FH) },
			  .oh = { (const uint8_t *)oh, (uint32_t)strlen(oh) } },
	};
	size_t h = gwt_rpc_call_none(b, xid, NLM_PROG, 4, proc), m;
	assert_int_equal(nlm_encode_args(&a, b + h, cap - h, &m), 0);
	return h + m;
}

/* nlm_shareres: cookie "ck", @stat, sequence 0. */
static size_t shareres_bytes(uint8_t *b, uint32_t stat)
{
	size_t n = res_bytes(b, stat);
	xdr_put32(b + n, 0);
	return n + 4;
}

/*
 * @msg (a call @proc from @p) relayed upstream rewritten, and the server's
 * answer with @stat back through the reply hook: an nlm_shareres to a SHARE
 * or UNSHARE, an nlm_res to the others.
 */
static void relay_answered(struct nlm_relay *rl, const struct side_service_peer *p,
			   const uint8_t *msg, size_t len, uint32_t proc, uint32_t stat)
{
	uint8_t up[4096], out[4096], res[16];
	size_t nu, n;
	bool share = proc == NLMPROC_SHARE || proc == NLMPROC_UNSHARE;

	assert_int_equal(call(rl, p, msg, len, up, &nu), SIDE_RELAY_REWRITTEN);
	reply(rl, p, up, nu, proc, res, share ? shareres_bytes(res, stat) : res_bytes(res, stat),
	      out, &n);
}

/* The host key of @p, as the relay's state records a client. */
static struct gw_host host_of(const struct side_service_peer *p)
{
	struct gw_host h;

	gw_host_from_sockaddr(&h, (const struct sockaddr *)&p->addr, p->addrlen);
	return h;
}

/* FREE_ALL of version 4: nlm_notify { "client-a", @state }. */
static size_t free_all_call(uint8_t *b, uint32_t xid, int32_t state)
{
	size_t h = gwt_rpc_call_none(b, xid, NLM_PROG, 4, NLMPROC_FREE_ALL);
	xdr_put32(b + h, 8);
	memcpy(b + h + 4, "client-a", 8);
	xdr_put32(b + h + 12, (uint32_t)state);
	return h + 16;
}

/*
 * After the gateway's restart, within the window: a reclaim goes upstream
 * as an ordinary non-blocking LOCK (the server is not in grace), a new
 * LOCK or NM_LOCK is answered DENIED_GRACE_PERIOD without an owner made, a
 * TEST passes. Outside the window (never set, or over) a reclaim passes
 * unchanged and a new LOCK is relayed.
 */
static void test_reclaim_converted_in_the_gateway_grace(void **state)
{
	struct fixture *f = *state;
	struct nlm_relay *rl = f->rl;
	struct side_service_peer pa = gwt_side_peer(0x0a090002, 800),
				 pb = gwt_side_peer(0x0a090003, 800);
	uint8_t msg[512], out[4096];
	size_t len, n;
	struct nlm_args a;

	/* No window: the reclaim passes as a reclaim (the server's own reboot). */
	len = lock_flags(msg, sizeof(msg), 1, 10, true, true);
	assert_int_equal(call(rl, &pa, msg, len, out, &n), SIDE_RELAY_REWRITTEN);
	decode_rewritten(out, n, NLMPROC_LOCK, &a);
	assert_true(a.reclaim);
	assert_true(a.block);

	nlm_relay_set_reclaim_window(rl, gw_now_us() + 60 * 1000000ull);
	assert_int_equal(call(rl, &pa, msg, len, out, &n), SIDE_RELAY_REWRITTEN);
	decode_rewritten(out, n, NLMPROC_LOCK, &a);
	assert_false(a.reclaim);
	assert_false(a.block);
	assert_int_equal(a.lock.oh.len, NLM_TOKEN_LEN); /* still rewritten */
	assert_int_equal(nlm_relay_stats(rl)->reclaims_converted, 1);

	/* Another client's new LOCK waits: the reclaims come first. */
	uint32_t owners = nlm_state_owners(nlm_relay_state(rl));
	len = lock_flags(msg, sizeof(msg), 2, 20, false, true);
	assert_int_equal(call(rl, &pb, msg, len, out, &n), SIDE_RELAY_ANSWERED);
	assert_int_equal(answered_stat(out, n), NLM_DENIED_GRACE_PERIOD);
	len = lock_call(msg, sizeof(msg), 3, NLMPROC_NM_LOCK, 21);
	assert_int_equal(call(rl, &pb, msg, len, out, &n), SIDE_RELAY_ANSWERED);
	assert_int_equal(answered_stat(out, n), NLM_DENIED_GRACE_PERIOD);
	assert_int_equal(nlm_relay_stats(rl)->grace_refused, 2);
	assert_int_equal(nlm_state_owners(nlm_relay_state(rl)), owners);
	len = lock_call(msg, sizeof(msg), 4, NLMPROC_TEST, 20);
	assert_int_equal(call(rl, &pb, msg, len, out, &n), SIDE_RELAY_REWRITTEN);
	/* The TEST left the window open: a reclaim after it is still converted. */
	len = lock_flags(msg, sizeof(msg), 41, 11, true, true);
	assert_int_equal(call(rl, &pa, msg, len, out, &n), SIDE_RELAY_REWRITTEN);
	decode_rewritten(out, n, NLMPROC_LOCK, &a);
	assert_false(a.reclaim);
	assert_int_equal(nlm_relay_stats(rl)->reclaims_converted, 2);
	/* A new SHARE waits too (no owner made); a share reclaim passes. */
	owners = nlm_state_owners(nlm_relay_state(rl));
	len = share_call(msg, sizeof(msg), 42, NLMPROC_SHARE, "oh-s", FH);
	assert_int_equal(call(rl, &pb, msg, len, out, &n), SIDE_RELAY_ANSWERED);
	assert_int_equal(xdr_get32(out + n - 8), NLM_DENIED_GRACE_PERIOD);
	assert_int_equal(nlm_state_owners(nlm_relay_state(rl)), owners);
	xdr_put32(msg + len - 4, 1); /* reclaim */
	assert_int_equal(call(rl, &pb, msg, len, out, &n), SIDE_RELAY_REWRITTEN);
	assert_int_equal(nlm_relay_stats(rl)->grace_refused, 3);

	/* The window over: both as before. */
	nlm_relay_set_reclaim_window(rl, gw_now_us() - 1);
	len = lock_flags(msg, sizeof(msg), 5, 20, false, true);
	assert_int_equal(call(rl, &pb, msg, len, out, &n), SIDE_RELAY_REWRITTEN);
	len = lock_flags(msg, sizeof(msg), 6, 10, true, false);
	assert_int_equal(call(rl, &pa, msg, len, out, &n), SIDE_RELAY_REWRITTEN);
	decode_rewritten(out, n, NLMPROC_LOCK, &a);
	assert_true(a.reclaim);
	assert_int_equal(nlm_relay_stats(rl)->reclaims_converted, 2);
	assert_int_equal(nlm_relay_stats(rl)->grace_refused, 3);

	/* The server's own reboot ends the window: its grace wants real reclaims. */
	struct nlm_peer hs[4];
	nlm_relay_set_reclaim_window(rl, gw_now_us() + 60 * 1000000ull);
	nlm_relay_server_rebooted(rl, hs, 4);
	len = lock_flags(msg, sizeof(msg), 7, 10, true, false);
	assert_int_equal(call(rl, &pa, msg, len, out, &n), SIDE_RELAY_REWRITTEN);
	decode_rewritten(out, n, NLMPROC_LOCK, &a);
	assert_true(a.reclaim);
}

static void test_owners_rewritten_per_client(void **state)
{
	struct fixture *f = *state;
	struct nlm_relay *rl = f->rl;
	struct side_service_peer pa = gwt_side_peer(0x0a090002, 800),
				 pb = gwt_side_peer(0x0a090003, 800);
	uint8_t msg[512], oa[4096], ob[4096];
	size_t len = lock_call(msg, sizeof(msg), 1, NLMPROC_LOCK, 4242), na, nb;
	struct nlm_args a, b;

	assert_int_equal(call(rl, &pa, msg, len, oa, &na), SIDE_RELAY_REWRITTEN);
	assert_int_equal(call(rl, &pb, msg, len, ob, &nb), SIDE_RELAY_REWRITTEN);
	decode_rewritten(oa, na, NLMPROC_LOCK, &a);
	decode_rewritten(ob, nb, NLMPROC_LOCK, &b);
	/* The same svid and oh from two hosts: two owners upstream, neither the client's. */
	assert_int_not_equal(a.lock.svid, b.lock.svid);
	assert_int_not_equal(a.lock.svid, 4242);
	assert_int_equal(a.lock.oh.len, NLM_TOKEN_LEN);
	assert_memory_not_equal(a.lock.oh.p, b.lock.oh.p, NLM_TOKEN_LEN);
	/* The gateway's name; the rest of the lock as the client sent it. */
	assert_int_equal(a.lock.caller.len, strlen(GW_NAME));
	assert_memory_equal(a.lock.caller.p, GW_NAME, strlen(GW_NAME));
	assert_int_equal(a.lock.fh.len, sizeof(FH));
	assert_memory_equal(a.lock.fh.p, FH, sizeof(FH));
	assert_true(a.exclusive);
	assert_int_equal(a.cookie.len, 2);
	/* The same owner again: the same upstream owner. */
	assert_int_equal(call(rl, &pa, msg, len, ob, &nb), SIDE_RELAY_REWRITTEN);
	decode_rewritten(ob, nb, NLMPROC_LOCK, &b);
	assert_int_equal(a.lock.svid, b.lock.svid);
}

static void test_bad_calls_answered(void **state)
{
	struct fixture *f = *state;
	struct nlm_relay *rl = f->rl;
	struct side_service_peer pa = gwt_side_peer(0x0a090002, 800);
	uint8_t msg[512], out[4096];
	size_t len = lock_call(msg, sizeof(msg), 9, NLMPROC_LOCK, 1), n;

	/* A lock whose caller name runs past the end. */
	assert_int_equal(call(rl, &pa, msg, len - 8, out, &n), SIDE_RELAY_ANSWERED);
	assert_int_equal(n, 24);
	assert_int_equal(xdr_get32(out), 9);
	assert_int_equal(xdr_get32(out + 20), RPCSTAT_GARBAGE_ARGS);
	assert_int_equal(f->counters.events[GW_EV_GARBAGE_ARGS], 1);
	/* LOCK_MSG without the async table, GRANTED (a server's): refused. */
	const uint32_t refused[] = { NLMPROC_LOCK_MSG, NLMPROC_GRANTED };
	for (size_t i = 0; i < 2; i++) {
		len = lock_call(msg, sizeof(msg), 10, NLMPROC_LOCK, 1);
		xdr_put32(msg + 20, refused[i]);
		assert_int_equal(call(rl, &pa, msg, len, out, &n), SIDE_RELAY_ANSWERED);
		assert_int_equal(xdr_get32(out + 20), RPCSTAT_PROC_UNAVAIL);
	}
	/* Version 1 has no SHARE, NM_LOCK or FREE_ALL. */
	const uint32_t v3_only[] = { NLMPROC_SHARE, NLMPROC_NM_LOCK, NLMPROC_FREE_ALL };
	for (size_t i = 0; i < 3; i++) {
		xdr_put32(msg + 16, 1);
		xdr_put32(msg + 20, v3_only[i]);
		assert_int_equal(call(rl, &pa, msg, len, out, &n), SIDE_RELAY_ANSWERED);
		assert_int_equal(xdr_get32(out + 20), RPCSTAT_PROC_UNAVAIL);
	}
	/* Version 2 does not exist. */
	xdr_put32(msg + 16, 2);
	xdr_put32(msg + 20, NLMPROC_LOCK);
	assert_int_equal(call(rl, &pa, msg, len, out, &n), SIDE_RELAY_ANSWERED);
	assert_int_equal(xdr_get32(out + 20), RPCSTAT_PROG_MISMATCH);
	/* NULL passes. */
	len = gwt_rpc_call_none(msg, 11, NLM_PROG, 4, NLMPROC_NULL);
	assert_int_equal(call(rl, &pa, msg, len, out, &n), SIDE_RELAY_PASS);
}

/*
 * Two clients' SHAREs with the same owner handle go upstream as two
 * owners, with the gateway's caller name and the mode and access as sent;
 * the shareres passes back unchanged; the granted one is recorded for its
 * client only, an UNLOCK does not forget it, and an UNSHARE granted (under
 * the same upstream owner) forgets it. An UNSHARE of an owner never seen is answered GRANTED
 * without an owner made; a SHARE that does not decode is GARBAGE_ARGS.
 */
static void test_shares_rewritten_recorded_and_forgotten(void **state)
{
	struct fixture *f = *state;
	struct nlm_relay *rl = f->rl;
	struct side_service_peer pa = gwt_side_peer(0x0a090002, 800),
				 pb = gwt_side_peer(0x0a090003, 800);
	struct gw_host ha = host_of(&pa), hb = host_of(&pb);
	uint8_t msg[512], upa[4096], upb[4096], out[4096], res[16];
	size_t len = share_call(msg, sizeof(msg), 1, NLMPROC_SHARE, "oh-1", FH), na, nb, n;
	struct nlm_args a, b;

	assert_int_equal(call(rl, &pa, msg, len, upa, &na), SIDE_RELAY_REWRITTEN);
	assert_int_equal(call(rl, &pb, msg, len, upb, &nb), SIDE_RELAY_REWRITTEN);
	decode_rewritten(upa, na, NLMPROC_SHARE, &a);
	decode_rewritten(upb, nb, NLMPROC_SHARE, &b);
	assert_int_equal(a.lock.oh.len, NLM_TOKEN_LEN);
	assert_int_equal(b.lock.oh.len, NLM_TOKEN_LEN);
	assert_memory_not_equal(a.lock.oh.p, b.lock.oh.p, NLM_TOKEN_LEN);
	assert_int_equal(a.lock.caller.len, strlen(GW_NAME));
	assert_memory_equal(a.lock.caller.p, GW_NAME, strlen(GW_NAME));
	assert_memory_equal(a.lock.fh.p, FH, sizeof(FH));
	assert_int_equal(a.mode, 2);
	assert_int_equal(a.access, 3);
	assert_int_equal(a.cookie.len, 2);

	/* A's granted, B's denied: the shareres passes back; only A's recorded. */
	assert_int_equal(reply(rl, &pa, upa, na, NLMPROC_SHARE, res,
			       shareres_bytes(res, NLM_GRANTED), out, &n),
			 SIDE_RELAY_PASS);
	assert_int_equal(reply(rl, &pb, upb, nb, NLMPROC_SHARE, res,
			       shareres_bytes(res, NLM_DENIED), out, &n),
			 SIDE_RELAY_PASS);
	assert_int_equal(nlm_state_client_locks(nlm_relay_state(rl), &ha), 1);
	assert_int_equal(nlm_state_client_locks(nlm_relay_state(rl), &hb), 0);

	/*
	 * A's lock on the file by the share's own owner (svid 0, the same oh:
	 * one upstream owner), then its whole-file UNLOCK granted: the share
	 * stays recorded.
	 */
	len = lock_call(msg, sizeof(msg), 5, NLMPROC_LOCK, 0);
	relay_answered(rl, &pa, msg, len, NLMPROC_LOCK, NLM_GRANTED);
	assert_int_equal(nlm_state_client_locks(nlm_relay_state(rl), &ha), 2);
	len = lock_call(msg, sizeof(msg), 6, NLMPROC_UNLOCK, 0);
	relay_answered(rl, &pa, msg, len, NLMPROC_UNLOCK, NLM_GRANTED);
	assert_int_equal(nlm_state_client_locks(nlm_relay_state(rl), &ha), 1);

	/* A's UNSHARE goes up under A's upstream owner; granted, the record goes. */
	uint8_t a_oh[NLM_TOKEN_LEN];
	memcpy(a_oh, a.lock.oh.p, NLM_TOKEN_LEN);
	len = share_call(msg, sizeof(msg), 2, NLMPROC_UNSHARE, "oh-1", FH);
	assert_int_equal(call(rl, &pa, msg, len, upa, &na), SIDE_RELAY_REWRITTEN);
	decode_rewritten(upa, na, NLMPROC_UNSHARE, &a);
	assert_memory_equal(a.lock.oh.p, a_oh, NLM_TOKEN_LEN);
	/* Not granted: kept. */
	reply(rl, &pa, upa, na, NLMPROC_UNSHARE, res, shareres_bytes(res, NLM_DENIED_GRACE_PERIOD),
	      out, &n);
	assert_int_equal(nlm_state_client_locks(nlm_relay_state(rl), &ha), 1);
	assert_int_equal(reply(rl, &pa, upa, na, NLMPROC_UNSHARE, res,
			       shareres_bytes(res, NLM_GRANTED), out, &n),
			 SIDE_RELAY_PASS);
	assert_int_equal(nlm_state_client_locks(nlm_relay_state(rl), &ha), 0);

	/* An UNSHARE of an owner never seen: GRANTED, no owner made. */
	uint32_t owners = nlm_state_owners(nlm_relay_state(rl));
	len = share_call(msg, sizeof(msg), 3, NLMPROC_UNSHARE, "oh-9", FH);
	assert_int_equal(call(rl, &pb, msg, len, out, &n), SIDE_RELAY_ANSWERED);
	assert_int_equal(xdr_get32(out + 20), RPCSTAT_SUCCESS);
	assert_int_equal(xdr_get32(out + n - 8), NLM_GRANTED);
	assert_int_equal(nlm_state_owners(nlm_relay_state(rl)), owners);

	/* Truncated, and one byte short of its reclaim flag: GARBAGE_ARGS. */
	len = share_call(msg, sizeof(msg), 4, NLMPROC_SHARE, "oh-1", FH);
	assert_int_equal(call(rl, &pa, msg, len - 4, out, &n), SIDE_RELAY_ANSWERED);
	assert_int_equal(xdr_get32(out + 20), RPCSTAT_GARBAGE_ARGS);
	xdr_put32(msg + len - 4, 2); /* reclaim: neither TRUE nor FALSE */
	assert_int_equal(call(rl, &pa, msg, len, out, &n), SIDE_RELAY_ANSWERED);
	assert_int_equal(xdr_get32(out + 20), RPCSTAT_GARBAGE_ARGS);
	assert_int_equal(f->counters.events[GW_EV_GARBAGE_ARGS], 2);
}

/* Take a lock (svid 77, "oh-1") and a share ("oh-1") for @p, both granted. */
static void lock_and_share(struct nlm_relay *rl, const struct side_service_peer *p)
{
	uint8_t msg[512];
	size_t len = lock_call(msg, sizeof(msg), 1, NLMPROC_LOCK, 77);

	relay_answered(rl, p, msg, len, NLMPROC_LOCK, NLM_GRANTED);
	len = share_call(msg, sizeof(msg), 2, NLMPROC_SHARE, "oh-1", FH);
	relay_answered(rl, p, msg, len, NLMPROC_SHARE, NLM_GRANTED);
}

/*
 * A client's FREE_ALL is not relayed: it is answered (void result) and
 * becomes an UNLOCK and an UNSHARE of that client's owners only, through
 * the release queue, which takes the server's shareres to the UNSHARE as
 * done. The other client's SM_NOTIFY later UNSHAREs its share too. A
 * FREE_ALL that does not decode releases nothing.
 */
static void test_free_all_releases_only_the_senders_locks_and_shares(void **state)
{
	struct fixture *f = *state;
	struct nlm_relay *rl = f->rl;
	struct side_service_peer pa = gwt_side_peer(0x0a090002, 800),
				 pb = gwt_side_peer(0x0a090003, 800);
	struct gw_host ha = host_of(&pa), hb = host_of(&pb);
	uint8_t msg[512], out[4096], res[16];
	size_t n;

	lock_and_share(rl, &pa);
	lock_and_share(rl, &pb);
	assert_int_equal(nlm_state_client_locks(nlm_relay_state(rl), &ha), 2);
	assert_int_equal(nlm_state_client_locks(nlm_relay_state(rl), &hb), 2);
	assert_int_equal(nsent, 0);

	/* Garbage: nothing released. */
	size_t len = free_all_call(msg, 8, 1);
	assert_int_equal(call(rl, &pa, msg, len - 4, out, &n), SIDE_RELAY_ANSWERED);
	assert_int_equal(xdr_get32(out + 20), RPCSTAT_GARBAGE_ARGS);
	assert_int_equal(nsent, 0);

	/* A's, from another port than its lockd's: answered void, never passed upstream. */
	struct side_service_peer pa2 = gwt_side_peer(0x0a090002, 1023);
	assert_int_equal(call(rl, &pa2, msg, len, out, &n), SIDE_RELAY_ANSWERED);
	assert_int_equal(n, 24);
	assert_int_equal(xdr_get32(out), 8);
	assert_int_equal(xdr_get32(out + 20), RPCSTAT_SUCCESS);
	assert_int_equal(nlm_state_client_locks(nlm_relay_state(rl), &ha), 0);
	assert_int_equal(nlm_state_client_locks(nlm_relay_state(rl), &hb), 2);
	assert_int_equal(nsent, 2);
	bool unlocked = false, unshared = false;
	for (size_t i = 0; i < nsent; i++) {
		struct rpc_call_hdr uh;
		struct nlm_args u;
		assert_int_equal(rpc_call_decode(sent[i], sent_len[i], &uh), RPC_HDR_CALL);
		decode_rewritten(sent[i], sent_len[i], uh.proc, &u);
		assert_memory_equal(u.lock.caller.p, GW_NAME, strlen(GW_NAME));
		assert_memory_equal(u.lock.fh.p, FH, sizeof(FH));
		struct nlm_client_owner co;
		/* A's owner, as the state maps it back (svid from the token for a share). */
		int32_t svid = u.lock.svid;
		if (uh.proc == NLMPROC_UNSHARE) {
			struct nlm_owner_id id;
			assert_true(nlm_state_owner_of_token(u.lock.oh, &id));
			svid = id.svid;
			unshared = true;
			/* The server's shareres: the queue's entry is done. */
			uint32_t pending = nlm_relay_release_pending(rl);
			struct side_service_peer own = { .addrlen = 0 };
			reply(rl, &own, sent[i], sent_len[i], NLMPROC_UNSHARE, res,
			      shareres_bytes(res, NLM_GRANTED), out, &n);
			assert_int_equal(nlm_relay_release_pending(rl), pending - 1);
		} else {
			assert_int_equal(uh.proc, NLMPROC_UNLOCK);
			unlocked = true;
		}
		/* Forgotten now (the client rebooted): no owner of B's either. */
		assert_false(nlm_relay_client_of(rl, svid, u.lock.oh, &co));
	}
	assert_true(unlocked && unshared);
	assert_int_equal(nlm_relay_stats(rl)->release_done, 1);

	/* B's SM_NOTIFY: its UNLOCK and UNSHARE. */
	uint8_t notify[128];
	size_t nl = gwt_sm_notify_call(notify, 5, "host-b", 3), unlocks;
	nsent = 0;
	nlm_relay_nsm_answer(rl, &pb, notify, nl, out, sizeof(out), &unlocks);
	assert_int_equal(unlocks, 2);
	assert_int_equal(nsent, 2);
	struct rpc_call_hdr h0, h1;
	assert_int_equal(rpc_call_decode(sent[0], sent_len[0], &h0), RPC_HDR_CALL);
	assert_int_equal(rpc_call_decode(sent[1], sent_len[1], &h1), RPC_HDR_CALL);
	assert_int_equal(h0.proc + h1.proc, NLMPROC_UNLOCK + NLMPROC_UNSHARE);
	assert_int_equal(nlm_state_client_locks(nlm_relay_state(rl), &hb), 0);
}

static void test_owner_bound_denies_nolocks(void **state)
{
	(void)state;
	struct gw_counters c = { 0 };
	struct nlm_relay *rl = relay_with(&c, (struct nlm_state_limits){ .max_clients = 1 });
	struct side_service_peer pa = gwt_side_peer(0x0a090002, 800),
				 pb = gwt_side_peer(0x0a090003, 800);
	uint8_t msg[512], out[4096];
	size_t len = lock_call(msg, sizeof(msg), 12, NLMPROC_LOCK, 1), n;

	assert_int_equal(call(rl, &pa, msg, len, out, &n), SIDE_RELAY_REWRITTEN);
	/* A second client host over the bound: NLM4_DENIED_NOLOCKS with its cookie. */
	assert_int_equal(call(rl, &pb, msg, len, out, &n), SIDE_RELAY_ANSWERED);
	assert_int_equal(n, 24 + 12);
	assert_int_equal(xdr_get32(out + 20), RPCSTAT_SUCCESS);
	assert_int_equal(xdr_get32(out + 24), 2);
	assert_memory_equal(out + 28, "ck", 2);
	assert_int_equal(xdr_get32(out + 32), NLM_DENIED_NOLOCKS);
	assert_int_equal(c.events[GW_EV_NO_BUFFERS], 1);
	nlm_relay_free(rl);
}

/*
 * A LOCK granted after its owner was forgotten (the client's SM_NOTIFY came
 * while the LOCK was upstream) is given back and the client refused: no
 * lock is left on the server that nothing records.
 */
static void test_lock_of_forgotten_owner_given_back(void **state)
{
	struct fixture *f = *state;
	struct nlm_relay *rl = f->rl;
	struct side_service_peer pa = gwt_side_peer(0x0a090002, 800),
				 pa_statd = gwt_side_peer(0x0a090002, 900);
	struct gw_host ha = host_of(&pa);
	uint8_t msg[512], upa[4096], out[4096], res[16], notify[128];
	size_t len = lock_call(msg, sizeof(msg), 1, NLMPROC_LOCK, 77), na, n, unlocks;

	/* A lock held, then a second LOCK on the wire when the client reboots. */
	relay_answered(rl, &pa, msg, len, NLMPROC_LOCK, NLM_GRANTED);
	assert_int_equal(nlm_state_client_locks(nlm_relay_state(rl), &ha), 1);
	len = lock_call(msg, sizeof(msg), 2, NLMPROC_LOCK, 77);
	assert_int_equal(call(rl, &pa, msg, len, upa, &na), SIDE_RELAY_REWRITTEN);
	size_t nl = gwt_sm_notify_call(notify, 5, "host-a", 3);
	nlm_relay_nsm_answer(rl, &pa_statd, notify, nl, out, sizeof(out), &unlocks);
	assert_int_equal(unlocks, 1);
	assert_int_equal(nsent, 1);
	/* The second LOCK's GRANTED: refused to the client, given back upstream. */
	assert_int_equal(
		reply(rl, &pa, upa, na, NLMPROC_LOCK, res, res_bytes(res, NLM_GRANTED), out, &n),
		SIDE_RELAY_REWRITTEN);
	assert_int_equal(xdr_get32(out + n - 4), NLM_DENIED_NOLOCKS);
	assert_int_equal(nsent, 2);
	struct rpc_call_hdr uh;
	assert_int_equal(rpc_call_decode(sent[1], sent_len[1], &uh), RPC_HDR_CALL);
	assert_int_equal(uh.proc, NLMPROC_UNLOCK);
	assert_int_equal(nlm_state_client_locks(nlm_relay_state(rl), &ha), 0);
}

/*
 * A CANCEL of a blocked request on the range of a lock the owner holds
 * leaves the lock recorded: the client's reboot still releases it.
 */
static void test_cancel_keeps_held_lock(void **state)
{
	struct fixture *f = *state;
	struct nlm_relay *rl = f->rl;
	struct side_service_peer pa = gwt_side_peer(0x0a090002, 800);
	struct gw_host ha = host_of(&pa);
	uint8_t msg[512];
	size_t len = lock_call(msg, sizeof(msg), 1, NLMPROC_LOCK, 77);

	relay_answered(rl, &pa, msg, len, NLMPROC_LOCK, NLM_GRANTED);
	len = lock_call(msg, sizeof(msg), 2, NLMPROC_LOCK, 77);
	relay_answered(rl, &pa, msg, len, NLMPROC_LOCK, NLM_BLOCKED);
	len = lock_call(msg, sizeof(msg), 3, NLMPROC_CANCEL, 77);
	relay_answered(rl, &pa, msg, len, NLMPROC_CANCEL, NLM_GRANTED);
	assert_int_equal(nlm_state_client_locks(nlm_relay_state(rl), &ha), 1);
}

static void test_locks_recorded_and_released_by_notify(void **state)
{
	struct fixture *f = *state;
	struct nlm_relay *rl = f->rl;
	struct side_service_peer pa = gwt_side_peer(0x0a090002, 800),
				 pb = gwt_side_peer(0x0a090003, 800);
	struct gw_host ha = host_of(&pa), hb = host_of(&pb);
	uint8_t msg[512], upa[4096], upb[4096], out[4096], res[16];
	size_t len = lock_call(msg, sizeof(msg), 1, NLMPROC_LOCK, 77), na, nb, n;
	struct nlm_args a;

	assert_int_equal(call(rl, &pa, msg, len, upa, &na), SIDE_RELAY_REWRITTEN);
	assert_int_equal(call(rl, &pb, msg, len, upb, &nb), SIDE_RELAY_REWRITTEN);
	/* A's granted, B's denied: only A's recorded. */
	assert_int_equal(
		reply(rl, &pa, upa, na, NLMPROC_LOCK, res, res_bytes(res, NLM_GRANTED), out, &n),
		SIDE_RELAY_PASS);
	assert_int_equal(
		reply(rl, &pb, upb, nb, NLMPROC_LOCK, res, res_bytes(res, NLM_DENIED), out, &n),
		SIDE_RELAY_PASS);
	assert_int_equal(nlm_state_client_locks(nlm_relay_state(rl), &ha), 1);
	assert_int_equal(nlm_state_client_locks(nlm_relay_state(rl), &hb), 0);

	/* B's TEST sees A's owner as the gateway's token, A sees its own svid. */
	decode_rewritten(upa, na, NLMPROC_LOCK, &a);
	/* @upa is reused below: keep A's upstream owner handle. */
	uint8_t a_oh[NLM_TOKEN_LEN];
	memcpy(a_oh, a.lock.oh.p, NLM_TOKEN_LEN);
	a.lock.oh.p = a_oh;
	uint8_t tres[64];
	struct nlm_testres tr = {
		.cookie = { (const uint8_t *)"ck", 2 },
		.stat = NLM_DENIED,
		.holder = { .exclusive = true, .svid = a.lock.svid, .oh = a.lock.oh }
	};
	size_t tn;
	assert_int_equal(nlm_encode_testres(4, &tr, tres, sizeof(tres), &tn), 0);
	len = lock_call(msg, sizeof(msg), 2, NLMPROC_TEST, 77);
	assert_int_equal(call(rl, &pa, msg, len, upa, &na), SIDE_RELAY_REWRITTEN);
	assert_int_equal(reply(rl, &pa, upa, na, NLMPROC_TEST, tres, tn, out, &n),
			 SIDE_RELAY_REWRITTEN);
	struct nlm_testres got;
	assert_int_equal(nlm_decode_testres(4, out + 24, n - 24, &got), 0);
	assert_int_equal(got.holder.svid, 77);
	assert_int_equal(got.holder.oh.len, 4);
	assert_int_equal(call(rl, &pb, msg, len, upb, &nb), SIDE_RELAY_REWRITTEN);
	assert_int_equal(reply(rl, &pb, upb, nb, NLMPROC_TEST, tres, tn, out, &n),
			 SIDE_RELAY_REWRITTEN);
	assert_int_equal(nlm_decode_testres(4, out + 24, n - 24, &got), 0);
	assert_int_equal(got.holder.svid, a.lock.svid);
	assert_int_equal(got.holder.oh.len, NLM_TOKEN_LEN);

	/* B's SM_NOTIFY releases nothing of A's. */
	uint8_t notify[128];
	size_t nl = gwt_sm_notify_call(notify, 5, "host-b", 3), unlocks;
	n = nlm_relay_nsm_answer(rl, &pb, notify, nl, out, sizeof(out), &unlocks);
	assert_int_equal(n, 24);
	assert_int_equal(xdr_get32(out + 20), RPCSTAT_SUCCESS);
	assert_int_equal(unlocks, 0);
	assert_int_equal(nsent, 0);
	/* A's (from its statd's port, not its lockd's): one UNLOCK of A's owner, sent. */
	struct side_service_peer pa_statd = gwt_side_peer(0x0a090002, 900);
	n = nlm_relay_nsm_answer(rl, &pa_statd, notify, nl, out, sizeof(out), &unlocks);
	assert_int_equal(n, 24);
	assert_int_equal(unlocks, 1);
	assert_int_equal(nsent, 1);
	assert_int_equal(nlm_state_client_locks(nlm_relay_state(rl), &ha), 0);
	struct nlm_args u;
	struct rpc_call_hdr uh;
	assert_int_equal(rpc_call_decode(sent[0], sent_len[0], &uh), RPC_HDR_CALL);
	assert_int_equal(uh.prog, NLM_PROG);
	assert_int_equal(uh.proc, NLMPROC_UNLOCK);
	decode_rewritten(sent[0], sent_len[0], NLMPROC_UNLOCK, &u);
	assert_int_equal(u.lock.svid, a.lock.svid);
	assert_memory_equal(u.lock.oh.p, a.lock.oh.p, NLM_TOKEN_LEN);
	assert_memory_equal(u.lock.fh.p, FH, sizeof(FH));
	assert_memory_equal(u.lock.caller.p, GW_NAME, strlen(GW_NAME));

	/* An UNLOCK granted forgets the record. */
	len = lock_call(msg, sizeof(msg), 3, NLMPROC_LOCK, 5);
	relay_answered(rl, &pb, msg, len, NLMPROC_LOCK, NLM_GRANTED);
	assert_int_equal(nlm_state_client_locks(nlm_relay_state(rl), &hb), 1);
	len = lock_call(msg, sizeof(msg), 4, NLMPROC_UNLOCK, 5);
	relay_answered(rl, &pb, msg, len, NLMPROC_UNLOCK, NLM_GRANTED);
	assert_int_equal(nlm_state_client_locks(nlm_relay_state(rl), &hb), 0);

	/* NSM: a truncated SM_NOTIFY is GARBAGE_ARGS, SM_MON from the network PROC_UNAVAIL. */
	n = nlm_relay_nsm_answer(rl, &pb, notify, nl - 4, out, sizeof(out), &unlocks);
	assert_int_equal(xdr_get32(out + 20), RPCSTAT_GARBAGE_ARGS);
	xdr_put32(notify + 20, 2);
	n = nlm_relay_nsm_answer(rl, &pb, notify, nl, out, sizeof(out), &unlocks);
	assert_int_equal(xdr_get32(out + 20), RPCSTAT_PROC_UNAVAIL);
}

/*
 * A client's SM_NOTIFY with the state it sent last (a retransmission, a
 * replay) releases nothing: the locks taken since its reboot stay. A new
 * state releases them.
 */
static void test_repeated_notify_state_releases_nothing(void **state)
{
	struct fixture *f = *state;
	struct nlm_relay *rl = f->rl;
	struct side_service_peer pa = gwt_side_peer(0x0a090002, 800);
	struct gw_host ha = host_of(&pa);
	uint8_t msg[512], out[4096], notify[128];
	size_t len, unlocks;
	size_t nl = gwt_sm_notify_call(notify, 5, "host-a", 3);

	nlm_relay_nsm_answer(rl, &pa, notify, nl, out, sizeof(out), &unlocks);
	/* After its reboot (state 3) it locks. */
	len = lock_call(msg, sizeof(msg), 1, NLMPROC_LOCK, 77);
	relay_answered(rl, &pa, msg, len, NLMPROC_LOCK, NLM_GRANTED);
	assert_int_equal(nlm_state_client_locks(nlm_relay_state(rl), &ha), 1);
	/* State 3 again: answered, nothing released. */
	nlm_relay_nsm_answer(rl, &pa, notify, nl, out, sizeof(out), &unlocks);
	assert_int_equal(xdr_get32(out + 20), RPCSTAT_SUCCESS);
	assert_int_equal(unlocks, 0);
	assert_int_equal(nlm_state_client_locks(nlm_relay_state(rl), &ha), 1);
	assert_int_equal(nlm_state_stats(nlm_relay_state(rl))->notify_repeated, 1);
	/* Its next reboot, state 5: released. */
	nl = gwt_sm_notify_call(notify, 5, "host-a", 5);
	nlm_relay_nsm_answer(rl, &pa, notify, nl, out, sizeof(out), &unlocks);
	assert_int_equal(unlocks, 1);
	assert_int_equal(nlm_state_client_locks(nlm_relay_state(rl), &ha), 0);
}

/*
 * An UNLOCK of an owner the gateway never saw: answered GRANTED (as lockd
 * answers an UNLOCK that finds nothing), not relayed, and no owner made.
 */
static void test_unlock_of_unknown_owner_makes_no_owner(void **state)
{
	struct fixture *f = *state;
	struct nlm_relay *rl = f->rl;
	struct side_service_peer pa = gwt_side_peer(0x0a090002, 800);
	uint8_t msg[512], out[4096];
	size_t len, n;

	for (int32_t svid = 1; svid <= 50; svid++) {
		len = lock_call(msg, sizeof(msg), (uint32_t)svid, NLMPROC_UNLOCK, svid);
		assert_int_equal(call(rl, &pa, msg, len, out, &n), SIDE_RELAY_ANSWERED);
		assert_int_equal(xdr_get32(out), (uint32_t)svid);
		assert_int_equal(xdr_get32(out + n - 4), NLM_GRANTED);
	}
	assert_int_equal(nlm_state_owners(nlm_relay_state(rl)), 0);
	assert_int_equal(nlm_state_clients(nlm_relay_state(rl)), 0);
	/* A known owner's UNLOCK is relayed. */
	len = lock_call(msg, sizeof(msg), 60, NLMPROC_LOCK, 7);
	assert_int_equal(call(rl, &pa, msg, len, out, &n), SIDE_RELAY_REWRITTEN);
	len = lock_call(msg, sizeof(msg), 61, NLMPROC_UNLOCK, 7);
	assert_int_equal(call(rl, &pa, msg, len, out, &n), SIDE_RELAY_REWRITTEN);
	assert_int_equal(nlm_state_owners(nlm_relay_state(rl)), 1);
}

/* ---- the release queue: a rebooted client's UNLOCKs ------------------------ */

/* The relay's clock in these tests. */
static uint64_t fake_us;

static uint64_t fake_clock(void)
{
	return fake_us;
}

/* The relay's clock moves on by @us, then the release queue's tick. */
static void tick_after(struct nlm_relay *rl, uint64_t us)
{
	fake_us += us;
	nlm_relay_release_tick(rl);
}

/* @n ticks of the release queue, a second apart. */
static void ticks(struct nlm_relay *rl, int n)
{
	for (int t = 0; t < n; t++)
		tick_after(rl, 1000000);
}

/*
 * The upstream link of these tests: it keeps every UNLOCK sent and takes
 * one only while @link_room (the side_relay's free slots) allows.
 */
enum { LINK_MAX = 1024 };
static uint8_t link_msg[LINK_MAX][512];
static size_t link_len[LINK_MAX], link_n, link_room;

static bool link_send(void *arg, const uint8_t *msg, size_t len)
{
	(void)arg;
	if (!link_room || link_n == LINK_MAX || len > sizeof(link_msg[0]))
		return false;
	link_room--;
	memcpy(link_msg[link_n], msg, len);
	link_len[link_n++] = len;
	return true;
}

static struct nlm_relay *release_relay(struct gw_counters *c, uint32_t max_locks,
				       uint32_t per_client)
{
	struct nlm_relay_config cfg = {
		.route_name = "t",
		.caller_name = GW_NAME,
		.counters = c,
		.limits = { .max_locks = max_locks, .max_locks_per_client = per_client },
		.send = link_send,
		.now_us = fake_clock,
	};
	fake_us = 1000000;
	link_n = 0;
	link_room = LINK_MAX;
	struct nlm_relay *rl = nlm_relay_new(&cfg);
	assert_non_null(rl);
	return rl;
}

/* A fixture: a release relay with the default limits (see release_relay()). */
static int release_setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->rl = release_relay(&f->counters, 0, 0);
	*state = f;
	return 0;
}

/* A LOCK of (@svid, "oh-1") from @p on the file numbered @file, granted. */
static void lock_granted(struct nlm_relay *rl, const struct side_service_peer *p, int32_t svid,
			 uint32_t file)
{
	uint8_t fh[32] = { 0 }, msg[512];

	xdr_put32(fh, file);
	relay_answered(
		rl, p, msg,
		nlm_call_on(msg, sizeof(msg), file + 1, NLMPROC_LOCK, svid, fh, false, false),
		NLMPROC_LOCK, NLM_GRANTED);
}

/* @p's statd says its host rebooted with @st; the UNLOCKs it made. */
static size_t notify_reboot(struct nlm_relay *rl, const struct side_service_peer *p, int32_t st)
{
	uint8_t notify[128], out[64];
	size_t unlocks;

	assert_int_equal(nlm_relay_nsm_answer(rl, p, notify,
					      gwt_sm_notify_call(notify, 5, "host-a", st), out,
					      sizeof(out), &unlocks),
			 24);
	return unlocks;
}

/* The file number of the UNLOCK sent @k-th. */
static uint32_t unlock_file(size_t k)
{
	struct nlm_args u;

	decode_rewritten(link_msg[k], link_len[k], NLMPROC_UNLOCK, &u);
	assert_int_equal(u.lock.fh.len, 32);
	return xdr_get32(u.lock.fh.p);
}

/* The server answers the UNLOCK sent @k-th with @stat, echoing its cookie. */
static void answer_unlock(struct nlm_relay *rl, size_t k, uint32_t stat)
{
	struct side_service_peer none = { .addrlen = 0 };
	struct nlm_args u;
	uint8_t res[64], out[4096];
	size_t rn, n;

	decode_rewritten(link_msg[k], link_len[k], NLMPROC_UNLOCK, &u);
	struct nlm_testres r = { .cookie = u.cookie, .stat = stat };
	assert_int_equal(nlm_encode_testres(4, &r, res, sizeof(res), &rn), 0);
	/* The relay's own call: no service behind it (c->svc NULL). */
	assert_int_equal(
		reply(rl, &none, link_msg[k], link_len[k], NLMPROC_UNLOCK, res, rn, out, &n),
		SIDE_RELAY_PASS);
}

/* The server answers the UNSHARE sent @k-th with @stat, echoing its cookie. */
static void answer_unshare(struct nlm_relay *rl, size_t k, uint32_t stat)
{
	struct side_service_peer none = { .addrlen = 0 };
	struct rpc_call_hdr h;
	struct nlm_args u;
	uint8_t res[64], out[4096];
	size_t rn, n;

	assert_int_equal(rpc_call_decode(link_msg[k], link_len[k], &h), RPC_HDR_CALL);
	assert_int_equal(h.proc, NLMPROC_UNSHARE);
	decode_rewritten(link_msg[k], link_len[k], NLMPROC_UNSHARE, &u);
	struct nlm_shareres r = { .cookie = u.cookie, .stat = stat };
	assert_int_equal(nlm_encode_shareres(&r, res, sizeof(res), &rn), 0);
	assert_int_equal(
		reply(rl, &none, link_msg[k], link_len[k], NLMPROC_UNSHARE, res, rn, out, &n),
		SIDE_RELAY_PASS);
}

/*
 * A FREE_ALL's UNSHARE goes through the release queue as an UNLOCK does:
 * answered DENIED_GRACE_PERIOD (Linux lockd refuses UNSHARE in its grace)
 * it is sent again after NLM_RELEASE_DELAY_US, still an UNSHARE, and
 * GRANTED ends it.
 */
static void test_release_queue_retries_unshare_in_grace(void **state)
{
	struct fixture *f = *state;
	struct nlm_relay *rl = f->rl;
	struct side_service_peer pa = gwt_side_peer(0x0a090002, 800);
	uint8_t msg[512], out[4096];
	size_t len = share_call(msg, sizeof(msg), 1, NLMPROC_SHARE, "oh-1", FH), n;

	relay_answered(rl, &pa, msg, len, NLMPROC_SHARE, NLM_GRANTED);
	len = free_all_call(msg, 2, 1);
	assert_int_equal(call(rl, &pa, msg, len, out, &n), SIDE_RELAY_ANSWERED);
	assert_int_equal(link_n, 1);
	answer_unshare(rl, 0, NLM_DENIED_GRACE_PERIOD);
	assert_int_equal(nlm_relay_release_pending(rl), 1);
	assert_int_equal(nlm_relay_release_in_flight(rl), 0);
	tick_after(rl, NLM_RELEASE_DELAY_US);
	assert_int_equal(link_n, 2);
	answer_unshare(rl, 1, NLM_GRANTED);
	assert_int_equal(nlm_relay_release_pending(rl), 0);
	assert_int_equal(nlm_relay_stats(rl)->release_retried, 1);
	assert_int_equal(nlm_relay_stats(rl)->release_done, 1);
}

/*
 * 300 (owner, fh) of one client: every one gets its UNLOCK although the
 * link takes only 10 at a time, never more than the window in flight,
 * and a link with no room at all for a while loses none of them.
 */
static void test_release_queue_sends_all_through_a_narrow_link(void **state)
{
	struct fixture *f = *state;
	struct nlm_relay *rl = f->rl;
	struct side_service_peer pa = gwt_side_peer(0x0a090002, 800);
	bool released[300] = { false };
	size_t answered = 0;

	for (uint32_t file = 0; file < 300; file++)
		lock_granted(rl, &pa, 77, file);
	assert_int_equal(nlm_state_locks(nlm_relay_state(rl)), 300);
	link_room = 10;
	assert_int_equal(notify_reboot(rl, &pa, 3), 300);
	assert_int_equal(link_n, 10);
	assert_int_equal(nlm_relay_release_pending(rl), 300);
	assert_int_equal(nlm_relay_stats(rl)->release_queued, 300);

	/* The link full: ticks send nothing and drop nothing. */
	link_room = 0;
	ticks(rl, 3);
	assert_int_equal(link_n, 10);
	assert_int_equal(nlm_relay_release_pending(rl), 300);

	/* Each answer frees a slot of the link; the ticks send what is due. */
	while (answered < link_n) {
		link_room++;
		released[unlock_file(answered)] = true;
		answer_unlock(rl, answered++, NLM_GRANTED);
		assert_true(nlm_relay_release_in_flight(rl) <= NLM_RELEASE_WINDOW);
		if (answered % 7 == 0)
			tick_after(rl, 1000000);
		link_room = link_room > 10 ? 10 : link_room;
	}
	assert_int_equal(link_n, 300);
	for (uint32_t file = 0; file < 300; file++)
		assert_true(released[file]);
	assert_int_equal(nlm_relay_release_pending(rl), 0);
	assert_int_equal(nlm_relay_stats(rl)->release_done, 300);
	assert_int_equal(nlm_relay_stats(rl)->release_retried, 0);

	/* A wide link: the window, not the link, bounds what is in flight. */
	for (uint32_t file = 0; file < 40; file++)
		lock_granted(rl, &pa, 78, file);
	link_room = LINK_MAX;
	assert_int_equal(notify_reboot(rl, &pa, 5), 40);
	assert_int_equal(link_n, 300 + NLM_RELEASE_WINDOW);
	assert_int_equal(nlm_relay_release_in_flight(rl), NLM_RELEASE_WINDOW);
}

/*
 * The release relay's client held locks on files 0, 1 and 2 (owner 77) and
 * rebooted: its three UNLOCKs are sent, unanswered yet.
 */
static void three_locks_released(struct nlm_relay *rl)
{
	struct side_service_peer pa = gwt_side_peer(0x0a090002, 800);

	lock_granted(rl, &pa, 77, 0);
	lock_granted(rl, &pa, 77, 1);
	lock_granted(rl, &pa, 77, 2);
	assert_int_equal(notify_reboot(rl, &pa, 3), 3);
	assert_int_equal(link_n, 3);
}

/*
 * An UNLOCK answered DENIED_GRACE_PERIOD or DENIED_NOLOCKS is sent again
 * after NLM_RELEASE_DELAY_US, not before; one answered GRANTED or
 * NLM4_STALE_FH is final and never sent again.
 */
static void test_release_queue_retries_grace_and_nolocks(void **state)
{
	struct fixture *f = *state;
	struct nlm_relay *rl = f->rl;
	const uint32_t NLM4_STALE_FH = 7; /* RFC 1813 nlm4_stats */

	three_locks_released(rl);
	uint32_t grace = unlock_file(0), nolocks = unlock_file(1);
	answer_unlock(rl, 0, NLM_DENIED_GRACE_PERIOD);
	answer_unlock(rl, 1, NLM_DENIED_NOLOCKS);
	answer_unlock(rl, 2, NLM_GRANTED);
	assert_int_equal(nlm_relay_release_pending(rl), 2);
	assert_int_equal(nlm_relay_release_in_flight(rl), 0);

	tick_after(rl, NLM_RELEASE_DELAY_US - 1000000);
	assert_int_equal(link_n, 3);
	tick_after(rl, 1000000);
	assert_int_equal(link_n, 5);
	size_t k0 = unlock_file(3) == grace ? 3 : 4, k1 = 7 - k0;
	assert_int_equal(unlock_file(k0), grace);
	assert_int_equal(unlock_file(k1), nolocks);
	assert_int_equal(nlm_relay_stats(rl)->release_retried, 2);

	/* Still in grace once more, then granted; the other's file is stale: final. */
	answer_unlock(rl, k0, NLM_DENIED_GRACE_PERIOD);
	answer_unlock(rl, k1, NLM4_STALE_FH);
	tick_after(rl, NLM_RELEASE_DELAY_US);
	assert_int_equal(link_n, 6);
	assert_int_equal(unlock_file(5), grace);
	answer_unlock(rl, 5, NLM_GRANTED);
	assert_int_equal(nlm_relay_release_pending(rl), 0);
	assert_int_equal(nlm_relay_stats(rl)->release_done, 3);
	ticks(rl, 60);
	assert_int_equal(link_n, 6);
}

/* The server refuses the UNLOCK sent @k-th with the RPC error @stat (accept_stat). */
static void answer_unlock_rpc_error(struct nlm_relay *rl, size_t k, uint32_t stat)
{
	uint8_t msg[64], out[4096];
	size_t n, h = rpc_encode_accept_error(msg, sizeof(msg), 7, stat, 0, 0);
	struct relay_call c = { .used = true,
				.vers = 4,
				.proc = NLMPROC_UNLOCK,
				.msg = link_msg[k],
				.len = (uint32_t)link_len[k] };

	assert_int_equal(nlm_relay_reply_hook(rl, &c, msg, h, out, sizeof(out), &n),
			 SIDE_RELAY_PASS);
}

/*
 * An UNLOCK refused with an RPC error that would come again (GARBAGE_ARGS,
 * PROC_UNAVAIL) is given up at once, not re-sent for ten minutes; one
 * refused with SYSTEM_ERR (the server short of memory now) is sent again.
 * Giving up counts no call_timeout: the side_relay counts its own timeouts.
 */
static void test_release_queue_gives_up_refused_unlocks(void **state)
{
	struct fixture *f = *state;
	struct nlm_relay *rl = f->rl;

	three_locks_released(rl);
	uint32_t busy = unlock_file(2);
	answer_unlock_rpc_error(rl, 0, RPCSTAT_GARBAGE_ARGS);
	answer_unlock_rpc_error(rl, 1, RPCSTAT_PROC_UNAVAIL);
	answer_unlock_rpc_error(rl, 2, RPCSTAT_SYSTEM_ERR);
	assert_int_equal(nlm_relay_release_pending(rl), 1);
	assert_int_equal(nlm_relay_stats(rl)->release_given_up, 2);
	assert_int_equal(f->counters.events[GW_EV_CALL_TIMEOUT], 0);

	tick_after(rl, NLM_RELEASE_DELAY_US);
	assert_int_equal(link_n, 4);
	assert_int_equal(unlock_file(3), busy);
	answer_unlock(rl, 3, NLM_GRANTED);
	assert_int_equal(nlm_relay_release_pending(rl), 0);
	assert_int_equal(nlm_relay_stats(rl)->release_done, 1);
	ticks(rl, 60);
	assert_int_equal(link_n, 4);
}

/*
 * An UNLOCK with no answer is sent again once the side_relay has given it
 * up (its timeout, 15 s by default, and a tick); a late answer to the
 * send given up is not taken for the new one's.
 */
static void test_release_queue_resends_unanswered(void **state)
{
	struct fixture *f = *state;
	struct nlm_relay *rl = f->rl;
	struct side_service_peer pa = gwt_side_peer(0x0a090002, 800);

	lock_granted(rl, &pa, 77, 9);
	assert_int_equal(notify_reboot(rl, &pa, 3), 1);
	assert_int_equal(link_n, 1);
	tick_after(rl, 15 * 1000000);
	assert_int_equal(link_n, 1); /* the side_relay may still have it */
	tick_after(rl, 1000000);
	assert_int_equal(link_n, 2);
	assert_int_equal(unlock_file(1), 9);
	assert_int_equal(nlm_relay_stats(rl)->release_retried, 1);
	assert_int_equal(nlm_relay_release_in_flight(rl), 1);

	answer_unlock(rl, 0, NLM_GRANTED);
	assert_int_equal(nlm_relay_release_pending(rl), 1);
	answer_unlock(rl, 1, NLM_GRANTED);
	assert_int_equal(nlm_relay_release_pending(rl), 0);
	assert_int_equal(nlm_relay_stats(rl)->release_done, 1);
}

/*
 * An UNLOCK never answered is sent again and again, and given up only
 * after NLM_RELEASE_GIVE_UP_US: logged, counted, then sent no more.
 */
static void test_release_queue_gives_up_after_the_bound(void **state)
{
	struct fixture *f = *state;
	struct nlm_relay *rl = f->rl;
	struct side_service_peer pa = gwt_side_peer(0x0a090002, 800);
	uint64_t start = fake_us;

	lock_granted(rl, &pa, 77, 1);
	assert_int_equal(notify_reboot(rl, &pa, 3), 1);
	while (fake_us - start < NLM_RELEASE_GIVE_UP_US - 30 * 1000000ull)
		tick_after(rl, 1000000);
	assert_int_equal(nlm_relay_release_pending(rl), 1);
	assert_int_equal(nlm_relay_stats(rl)->release_given_up, 0);
	assert_true(link_n >= 30);
	ticks(rl, 60);
	assert_int_equal(nlm_relay_release_pending(rl), 0);
	assert_int_equal(nlm_relay_stats(rl)->release_given_up, 1);
	/* Its sends' timeouts were the side_relay's to count (a fake link here). */
	assert_int_equal(f->counters.events[GW_EV_CALL_TIMEOUT], 0);
	size_t sent_then = link_n;
	ticks(rl, 120);
	assert_int_equal(link_n, sent_then);
}

/*
 * The queue holds max_locks entries: past that a rebooted client's
 * UNLOCKs are refused, counted (release_full, NO_BUFFERS), not lost
 * silently. The server's own reboot makes the queued ones moot.
 */
static void test_release_queue_full_counted(void **state)
{
	(void)state;
	struct gw_counters c = { 0 };
	struct nlm_relay *rl = release_relay(&c, 8, 4);
	struct side_service_peer pa = gwt_side_peer(0x0a090002, 800),
				 pb = gwt_side_peer(0x0a090003, 800);
	struct nlm_peer hs[4];

	link_room = 0; /* nothing answered: all stay queued */
	for (uint32_t f = 0; f < 4; f++) {
		lock_granted(rl, &pa, 1, f);
		lock_granted(rl, &pb, 1, f);
	}
	assert_int_equal(notify_reboot(rl, &pa, 3), 4);
	assert_int_equal(notify_reboot(rl, &pb, 3), 4);
	assert_int_equal(nlm_relay_release_pending(rl), 8);
	for (uint32_t f = 0; f < 4; f++)
		lock_granted(rl, &pa, 1, f);
	assert_int_equal(notify_reboot(rl, &pa, 5), 4);
	assert_int_equal(nlm_relay_release_pending(rl), 8);
	assert_int_equal(nlm_relay_stats(rl)->release_full, 4);
	assert_int_equal(c.events[GW_EV_NO_BUFFERS], 4);

	nlm_relay_server_rebooted(rl, hs, 4);
	assert_int_equal(nlm_relay_release_pending(rl), 0);
	assert_int_equal(nlm_relay_stats(rl)->release_done, 8);
	link_room = LINK_MAX;
	tick_after(rl, 60 * 1000000ull);
	assert_int_equal(link_n, 0);
	nlm_relay_free(rl);
}

/* ---- the state a datagram's sender can make the relay hold ------------------ */

/* The relay's state holds @clients client hosts and @owners owners. */
static void assert_held(const struct nlm_state *st, uint32_t clients, uint32_t owners)
{
	assert_int_equal(nlm_state_clients(st), clients);
	assert_int_equal(nlm_state_owners(st), owners);
}

static struct side_service_peer peer6(const char *addr)
{
	struct side_service_peer p = { .addrlen = sizeof(struct sockaddr_in6) };
	struct sockaddr_in6 *a = (struct sockaddr_in6 *)&p.addr;
	a->sin6_family = AF_INET6;
	a->sin6_port = htons(800);
	assert_int_equal(inet_pton(AF_INET6, addr, &a->sin6_addr), 1);
	return p;
}

/*
 * A TEST (or LOCK...) of @p's (@svid, "oh-1"), relayed and answered @stat
 * by the server: the call hook's verdict, and what the client gets in @out.
 */
static enum side_relay_verdict ask(struct nlm_relay *rl, const struct side_service_peer *p,
				   uint32_t proc, int32_t svid, uint32_t stat, uint8_t *out,
				   size_t *n)
{
	uint8_t msg[512], up[4096], res[16];
	size_t len = lock_call(msg, sizeof(msg), (uint32_t)svid, proc, svid), nu;
	enum side_relay_verdict v = call(rl, p, msg, len, up, &nu);

	if (v != SIDE_RELAY_REWRITTEN) {
		memcpy(out, up, nu);
		*n = nu;
		return v;
	}
	size_t rn = res_bytes(res, stat);
	if (reply(rl, p, up, nu, proc, res, rn, out, n) == SIDE_RELAY_PASS) {
		/* What the client gets then: the server's reply as it came. */
		*n = rpc_encode_accept_error(out, 4096, 7, RPCSTAT_SUCCESS, 0, 0);
		memcpy(out + *n, res, rn);
		*n += rn;
	}
	return v;
}

/*
 * The side_relay ends @p's call @up (@n bytes) without a reply: given up
 * unanswered (@went_up: it went upstream), or never sent.
 */
static void give_up(struct nlm_relay *rl, const struct side_service_peer *p, uint32_t proc,
		    uint8_t *up, size_t n, bool went_up)
{
	struct relay_call c = { .svc = CLIENT_SVC,
				.peer = *p,
				.vers = 4,
				.proc = proc,
				.sent_us = went_up ? 1 : 0,
				.msg = up,
				.len = (uint32_t)n };

	nlm_relay_gone_hook(rl, &c);
}

/*
 * 1,100 TESTs, each from another forged address (more than nlm_max_clients,
 * 1024), each answered by the server: none refused, and none leaves a
 * client or owner behind; a LOCK from a new host afterwards is relayed and
 * its grant recorded, not answered DENIED_NOLOCKS.
 */
static void test_forged_tests_do_not_fill_the_client_table(void **state)
{
	struct fixture *f = *state;
	struct nlm_relay *rl = f->rl;
	const struct nlm_state *st = nlm_relay_state(rl);
	uint8_t out[4096];
	size_t n;

	for (uint32_t i = 0; i < 1100; i++) {
		struct side_service_peer p = gwt_side_peer(0x0a100000 + i, 800);
		assert_int_equal(ask(rl, &p, NLMPROC_TEST, 5, NLM_GRANTED, out, &n),
				 SIDE_RELAY_REWRITTEN);
		assert_held(st, 0, 0);
	}
	struct side_service_peer pa = gwt_side_peer(0x0a090002, 800);
	struct gw_host ha = host_of(&pa);
	assert_int_equal(ask(rl, &pa, NLMPROC_LOCK, 7, NLM_GRANTED, out, &n), SIDE_RELAY_REWRITTEN);
	assert_int_equal(answered_stat(out, n), NLM_GRANTED);
	assert_int_equal(nlm_state_client_locks(st, &ha), 1);
	assert_int_equal(nlm_state_clients(st), 1);
	assert_int_equal(f->counters.events[GW_EV_NO_BUFFERS], 0);
}

/*
 * What holds nothing upstream does not outlive its reply: a TEST, a LOCK
 * the server denied, an UNLOCK of the owner's last lock. A lock granted
 * keeps its owner and client.
 */
static void test_nothing_held_leaves_no_entry(void **state)
{
	struct fixture *f = *state;
	struct nlm_relay *rl = f->rl;
	const struct nlm_state *st = nlm_relay_state(rl);
	struct side_service_peer pa = gwt_side_peer(0x0a090002, 800);
	uint8_t out[4096];
	size_t n;

	assert_int_equal(ask(rl, &pa, NLMPROC_TEST, 7, NLM_DENIED, out, &n), SIDE_RELAY_REWRITTEN);
	assert_held(st, 0, 0);
	assert_int_equal(ask(rl, &pa, NLMPROC_LOCK, 7, NLM_DENIED, out, &n), SIDE_RELAY_REWRITTEN);
	assert_held(st, 0, 0);
	assert_int_equal(ask(rl, &pa, NLMPROC_LOCK, 7, NLM_GRANTED, out, &n), SIDE_RELAY_REWRITTEN);
	assert_int_equal(nlm_state_owners(st), 1);
	assert_int_equal(nlm_state_locks(st), 1);
	/* A TEST by the same owner leaves it as it was. */
	assert_int_equal(ask(rl, &pa, NLMPROC_TEST, 7, NLM_GRANTED, out, &n), SIDE_RELAY_REWRITTEN);
	assert_int_equal(nlm_state_owners(st), 1);
	assert_int_equal(ask(rl, &pa, NLMPROC_UNLOCK, 7, NLM_GRANTED, out, &n),
			 SIDE_RELAY_REWRITTEN);
	assert_int_equal(nlm_state_locks(st), 0);
	assert_held(st, 0, 0);
	/* A share refused, then one granted. */
	uint8_t msg[512];
	size_t len = share_call(msg, sizeof(msg), 20, NLMPROC_SHARE, "oh-s", FH);
	relay_answered(rl, &pa, msg, len, NLMPROC_SHARE, NLM_DENIED);
	assert_int_equal(nlm_state_owners(st), 0);
	relay_answered(rl, &pa, msg, len, NLMPROC_SHARE, NLM_GRANTED);
	assert_int_equal(nlm_state_owners(st), 1);
}

/*
 * A call the side_relay gives up unanswered (its gone hook): a TEST's
 * owner goes; a LOCK's stays, idle (the server may hold that lock), so the
 * client's retransmission goes upstream under the same owner; one never
 * sent (the relay's table full) leaves nothing.
 */
static void test_unanswered_calls_end(void **state)
{
	struct fixture *f = *state;
	struct nlm_relay *rl = f->rl;
	const struct nlm_state *st = nlm_relay_state(rl);
	struct side_service_peer pa = gwt_side_peer(0x0a090002, 800);
	uint8_t msg[512], up[4096];
	size_t len, nu;
	struct nlm_args a, again;

	len = lock_call(msg, sizeof(msg), 1, NLMPROC_TEST, 7);
	assert_int_equal(call(rl, &pa, msg, len, up, &nu), SIDE_RELAY_REWRITTEN);
	give_up(rl, &pa, NLMPROC_TEST, up, nu, true);
	assert_int_equal(nlm_state_owners(st), 0);

	len = lock_call(msg, sizeof(msg), 2, NLMPROC_LOCK, 7);
	assert_int_equal(call(rl, &pa, msg, len, up, &nu), SIDE_RELAY_REWRITTEN);
	decode_rewritten(up, nu, NLMPROC_LOCK, &a);
	int32_t svid = a.lock.svid;
	give_up(rl, &pa, NLMPROC_LOCK, up, nu, true);
	assert_int_equal(nlm_state_owners(st), 1);
	assert_int_equal(call(rl, &pa, msg, len, up, &nu), SIDE_RELAY_REWRITTEN);
	decode_rewritten(up, nu, NLMPROC_LOCK, &again);
	assert_int_equal(again.lock.svid, svid);
	/* Never sent: the same LOCK leaves nothing now. */
	give_up(rl, &pa, NLMPROC_LOCK, up, nu, false);
	assert_held(st, 0, 0);
}

/*
 * A LOCK in flight keeps its client and owner under any pressure: with
 * the table full of calls in flight a new host is refused rather than
 * one of them reclaimed, and the LOCK's grant, when it comes, is recorded
 * under the owner it went with (not given back, not DENIED_NOLOCKS). An
 * idle client (its LOCK given up unanswered) is reclaimed for a new host.
 */
static void test_lock_in_flight_survives_pressure(void **state)
{
	(void)state;
	struct gw_counters c = { 0 };
	struct nlm_relay *rl = relay_with(&c, (struct nlm_state_limits){ .max_clients = 2 });
	const struct nlm_state *st = nlm_relay_state(rl);
	struct side_service_peer pa = gwt_side_peer(0x0a090002, 800),
				 pb = gwt_side_peer(0x0a0a0002, 800);
	uint8_t msg[512], upa[4096], upb[4096], out[4096], res[16];
	size_t len = lock_call(msg, sizeof(msg), 1, NLMPROC_LOCK, 7), na, nb, n;
	struct gw_host ha = host_of(&pa);

	assert_int_equal(call(rl, &pa, msg, len, upa, &na), SIDE_RELAY_REWRITTEN);
	/* Forged TESTs from many hosts pass through the one free slot. */
	for (uint32_t i = 0; i < 100; i++) {
		struct side_service_peer p = gwt_side_peer(0x0b000000 + i * 256, 800);
		assert_int_equal(ask(rl, &p, NLMPROC_TEST, 5, NLM_GRANTED, out, &n),
				 SIDE_RELAY_REWRITTEN);
	}
	/* Another LOCK in flight: the table is full of calls in flight. */
	assert_int_equal(call(rl, &pb, msg, len, upb, &nb), SIDE_RELAY_REWRITTEN);
	struct side_service_peer pc = gwt_side_peer(0x0c000001, 800);
	assert_int_equal(ask(rl, &pc, NLMPROC_TEST, 5, NLM_GRANTED, out, &n), SIDE_RELAY_ANSWERED);
	assert_int_equal(xdr_get32(out + n - 4), NLM_DENIED_NOLOCKS);
	assert_int_equal(nlm_state_stats(st)->clients_full, 1);
	/* A's grant: recorded, passed to A unchanged, nothing given back. */
	assert_int_equal(
		reply(rl, &pa, upa, na, NLMPROC_LOCK, res, res_bytes(res, NLM_GRANTED), out, &n),
		SIDE_RELAY_PASS);
	assert_int_equal(nlm_state_client_locks(st, &ha), 1);
	assert_int_equal(nsent, 0);
	/* B's LOCK given up unanswered: idle, so C's TEST takes its place. */
	give_up(rl, &pb, NLMPROC_LOCK, upb, nb, true);
	assert_int_equal(ask(rl, &pc, NLMPROC_TEST, 5, NLM_GRANTED, out, &n), SIDE_RELAY_REWRITTEN);
	assert_int_equal(nlm_state_stats(st)->clients_reclaimed, 1);
	assert_int_equal(nlm_state_client_locks(st, &ha), 1);
	nlm_relay_free(rl);
}

/*
 * One network's forged sources cannot take the client table: with the
 * default limits (1024 client hosts, a quarter per prefix), 300 hosts of
 * one IPv6 /64 each take a lock; the first 256 get it, the rest are
 * answered DENIED_NOLOCKS (counted as client_prefix_full); hosts of another
 * /64, and IPv4 hosts, still get theirs.
 */
static void test_one_prefix_cannot_take_the_table(void **state)
{
	struct fixture *f = *state;
	struct nlm_relay *rl = f->rl;
	const struct nlm_state *st = nlm_relay_state(rl);
	uint8_t out[4096];
	size_t n;
	uint32_t granted = 0;

	for (uint32_t i = 1; i <= 300; i++) {
		char addr[64];
		snprintf(addr, sizeof(addr), "fd00:1:2:3::%x", i);
		struct side_service_peer p = peer6(addr);
		if (ask(rl, &p, NLMPROC_LOCK, 7, NLM_GRANTED, out, &n) == SIDE_RELAY_REWRITTEN) {
			granted++;
			continue;
		}
		assert_int_equal(xdr_get32(out + n - 4), NLM_DENIED_NOLOCKS);
	}
	assert_int_equal(granted, 256);
	assert_int_equal(nlm_state_stats(st)->client_prefix_full, 44);
	assert_int_equal(nlm_state_stats(st)->clients_full, 0);
	struct side_service_peer other = peer6("fd00:1:2:4::1"),
				 v4 = gwt_side_peer(0x0a090002, 800);
	assert_int_equal(ask(rl, &other, NLMPROC_LOCK, 7, NLM_GRANTED, out, &n),
			 SIDE_RELAY_REWRITTEN);
	assert_int_equal(answered_stat(out, n), NLM_GRANTED);
	assert_int_equal(ask(rl, &v4, NLMPROC_LOCK, 7, NLM_GRANTED, out, &n), SIDE_RELAY_REWRITTEN);
	assert_int_equal(nlm_state_clients(st), 258);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_owners_rewritten_per_client, relay_setup,
						relay_teardown),
		cmocka_unit_test_setup_teardown(test_bad_calls_answered, relay_setup,
						relay_teardown),
		cmocka_unit_test(test_owner_bound_denies_nolocks),
		cmocka_unit_test_setup_teardown(test_locks_recorded_and_released_by_notify,
						relay_setup, relay_teardown),
		cmocka_unit_test_setup_teardown(test_repeated_notify_state_releases_nothing,
						relay_setup, relay_teardown),
		cmocka_unit_test_setup_teardown(test_unlock_of_unknown_owner_makes_no_owner,
						relay_setup, relay_teardown),
		cmocka_unit_test_setup_teardown(test_lock_of_forgotten_owner_given_back,
						relay_setup, relay_teardown),
		cmocka_unit_test_setup_teardown(test_cancel_keeps_held_lock, relay_setup,
						relay_teardown),
		cmocka_unit_test_setup_teardown(test_reclaim_converted_in_the_gateway_grace,
						relay_setup, relay_teardown),
		cmocka_unit_test_setup_teardown(test_release_queue_sends_all_through_a_narrow_link,
						release_setup, relay_teardown),
		cmocka_unit_test_setup_teardown(test_release_queue_retries_grace_and_nolocks,
						release_setup, relay_teardown),
		cmocka_unit_test_setup_teardown(test_release_queue_gives_up_refused_unlocks,
						release_setup, relay_teardown),
		cmocka_unit_test_setup_teardown(test_release_queue_resends_unanswered,
						release_setup, relay_teardown),
		cmocka_unit_test_setup_teardown(test_release_queue_gives_up_after_the_bound,
						release_setup, relay_teardown),
		cmocka_unit_test(test_release_queue_full_counted),
		cmocka_unit_test_setup_teardown(test_shares_rewritten_recorded_and_forgotten,
						relay_setup, relay_teardown),
		cmocka_unit_test_setup_teardown(
			test_free_all_releases_only_the_senders_locks_and_shares, relay_setup,
			relay_teardown),
		cmocka_unit_test_setup_teardown(test_release_queue_retries_unshare_in_grace,
						release_setup, relay_teardown),
		cmocka_unit_test_setup_teardown(test_forged_tests_do_not_fill_the_client_table,
						relay_setup, relay_teardown),
		cmocka_unit_test_setup_teardown(test_nothing_held_leaves_no_entry, relay_setup,
						relay_teardown),
		cmocka_unit_test_setup_teardown(test_unanswered_calls_end, relay_setup,
						relay_teardown),
		cmocka_unit_test(test_lock_in_flight_survives_pressure),
		cmocka_unit_test_setup_teardown(test_one_prefix_cannot_take_the_table, relay_setup,
						relay_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
