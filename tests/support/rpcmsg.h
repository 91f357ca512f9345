/*
 * RPC call headers (RFC 5531) as a peer puts them on the wire, for tests that
 * feed calls to the code under test, and the few NLM and NSM bodies that the
 * tests of the side services send as a client, server or statd would. Written
 * word by word here rather than with gwcore's encoders, so that a test does
 * not take its input from the code it checks.
 */
#ifndef GW_TESTS_SUPPORT_RPCMSG_H
#define GW_TESTS_SUPPORT_RPCMSG_H

#include <stddef.h>
#include <stdint.h>

/* The length of a call header with AUTH_NONE credential and verifier. */
#define GWT_RPC_CALL_NONE_LEN 40

/*
 * The header of a call (RPC version 2) of @prog @vers @proc with @xid and
 * AUTH_NONE credential and verifier into @b (GWT_RPC_CALL_NONE_LEN bytes at
 * least); the arguments follow it. Its length.
 */
size_t gwt_rpc_call_none(uint8_t *b, uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc);

/*
 * A statd's SM_NOTIFY call (NSM, program 100024 version 1, procedure 6):
 * @mon_name, the host that rebooted, and its new @state, into @b
 * (GWT_RPC_CALL_NONE_LEN + 8 bytes and the name rounded up to 4 at least).
 * Its length.
 */
size_t gwt_sm_notify_call(uint8_t *b, uint32_t xid, const char *mon_name, int32_t state);

/*
 * An NLM result (nlm4_res, the reply body of most NLM procedures): the
 * cookie @cookie of @cookie_len bytes, padded, then @stat, into @b. Its
 * length.
 */
size_t gwt_nlm_res(uint8_t *b, const void *cookie, uint32_t cookie_len, uint32_t stat);

#endif
