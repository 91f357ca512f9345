/* SPDX-License-Identifier: MIT */
/*
 * common/xdr.h - XDR (RFC 4506) big-endian word access on raw buffers.
 *
 * libtirpc's XDR streams (xdrmem_create + xdr_u_int) are used where a
 * whole RPC message header is built or decoded once (error replies,
 * the probe). The transport-header codec and the ULB walkers instead use
 * these inline loads: they run for every RPC, must never allocate, and
 * an indirect call per 4-byte word through the XDR ops table costs more
 * than the whole budget of a header decode.
 */
#ifndef GW_COMMON_XDR_H
#define GW_COMMON_XDR_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define XDR_UNIT 4u

/* Round a byte count up to the XDR unit. */
static inline uint32_t xdr_align(uint32_t n)
{
	return (n + 3u) & ~3u;
}

/* Bytes of XDR pad after an opaque of n bytes. */
static inline uint32_t xdr_pad(uint32_t n)
{
	return xdr_align(n) - n;
}

static inline uint32_t xdr_get32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return __builtin_bswap32(v);
}

static inline uint64_t xdr_get64(const void *p)
{
	return ((uint64_t)xdr_get32(p) << 32) | xdr_get32((const uint8_t *)p + 4);
}

static inline void xdr_put32(void *p, uint32_t v)
{
	v = __builtin_bswap32(v);
	memcpy(p, &v, sizeof(v));
}

static inline void xdr_put64(void *p, uint64_t v)
{
	xdr_put32(p, (uint32_t)(v >> 32));
	xdr_put32((uint8_t *)p + 4, (uint32_t)v);
}

#endif
