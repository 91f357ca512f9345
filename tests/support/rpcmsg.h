/*
 * RPC call headers (RFC 5531) as a peer puts them on the wire, for tests that
 * feed calls to the code under test. Written word by word here rather than
 * with gwcore's encoder, so that a test does not take its input from the code
 * it checks.
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

#endif
