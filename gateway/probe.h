/* SPDX-License-Identifier: MIT */
/*
 * gateway/probe.h - `rpcrdma-gw --probe rdma://HOST:PORT`.
 *
 * The walking skeleton of the whole stack, and an operator's first check of
 * an NFS/RDMA server: connect with librdmacm (sending RFC 8797 private
 * data), send one RPC NULL call to NFS version 3 as an RDMA_MSG, receive
 * the reply, and print the credits it grants and the inline sizes the
 * server announced.
 */
#ifndef GW_GATEWAY_PROBE_H
#define GW_GATEWAY_PROBE_H

#include <stdio.h>
#include <sys/socket.h>

struct gw_probe_options {
	const struct sockaddr *dst;
	const char *dst_text; /* for messages */
	unsigned timeout_ms;  /* for the whole probe */
	unsigned program;     /* default 100003 (NFS) */
	unsigned version;     /* default 3 */
};

/* Returns 0 when the NULL call was answered with success; prints to @out. */
int gw_probe_run(const struct gw_probe_options *opt, FILE *out);

#endif
