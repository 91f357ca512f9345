/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the portmapper codec (gateway/side/rpc/portmap.c), the decoders
 * every datagram and record to the gateway's portmapper and MOUNT relay
 * meets first.
 *
 * Input: one RPC message as a client (or, for the GETPORT reply decoder,
 * the server's portmapper) would send it. Byte 0 picks the size of the
 * reply buffer (so that short buffers are exercised as well as the
 * gateway's own 8 KiB); the message is copied into an allocation of
 * exactly its size, so that ASan sees any read past its end.
 *
 * Checked: a reply never exceeds its buffer, is at least a reply header
 * long when there is one, and carries the call's XID; the header decoder
 * and the answer agree on what can be answered.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "common/xdr.h"
#include "gateway/side/rpc/portmap.h"

#define check(cond)                                                                                \
	do {                                                                                       \
		if (!(cond))                                                                       \
			__builtin_trap();                                                          \
	} while (0)

static void table(struct pmap_table *t)
{
	struct sockaddr_in *a = (struct sockaddr_in *)&t->addr;

	memset(t, 0, sizeof(*t));
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(0xc0000202);
	t->addrlen = sizeof(*a);
	for (uint32_t v = 2; v <= 4; v++)
		pmap_table_add(t, PMAP_PROG, v, PMAP_IPPROTO_UDP, 111);
	pmap_table_add(t, 100003, 3, PMAP_IPPROTO_TCP, 2049);
	for (uint32_t v = 1; v <= 3; v++)
		pmap_table_add(t, 100005, v, PMAP_IPPROTO_UDP, 20048);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct pmap_table t;
	static bool ready;
	struct rpc_call_hdr h, h2;
	size_t n;
	uint16_t port;
	uint32_t xid;

	if (!ready) {
		table(&t);
		ready = true;
	}
	if (size < 1)
		return 0;
	size_t cap = data[0] < 128 ? data[0] : 8192;
	uint8_t *msg = malloc(size - 1 ? size - 1 : 1);
	uint8_t *out = malloc(cap ? cap : 1);
	memcpy(msg, data + 1, size - 1);

	enum rpc_hdr_status st = rpc_call_decode(msg, size - 1, &h2);
	enum pmap_outcome o = pmap_answer(&t, msg, size - 1, out, cap, &n, &h);
	check(n <= cap);
	if (st == RPC_HDR_CALL)
		check(h2.args_off <= size - 1);
	if (o == PMAP_NO_REPLY)
		check(n == 0 && st != RPC_HDR_CALL && st != RPC_HDR_BAD_RPCVERS &&
		      st != RPC_HDR_BAD_AUTH);
	if (n) {
		check(n >= 20 && n % 4 == 0);
		check(rpc_msg_xid(out, n, &xid) && rpc_msg_xid(msg, size - 1, &h2.xid) &&
		      xid == h2.xid);
		check(rpc_msg_is_reply(out, n));
	}
	if (pmap_decode_getport_reply(msg, size - 1, &port) == 0)
		check(rpc_msg_is_reply(msg, size - 1));
	free(msg);
	free(out);
	return 0;
}
