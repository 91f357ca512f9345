/*
 * RPC-over-RDMA transport headers (RFC 8166, RFC 8267 and Version Two),
 * written in a test as the list of their XDR words, so that the words on the
 * wire stand in the test as the RFCs draw them:
 *
 *	gwt_put_words(buf, GWT_WORDS(xid, 1, 32, RDMA_MSG, 1, 0, GWT_SEG(h, l, o), ...));
 */
#ifndef GW_TESTS_SUPPORT_RDMAHDR_H
#define GW_TESTS_SUPPORT_RDMAHDR_H

#include <stddef.h>
#include <stdint.h>

/* The words given as an array and their count: two arguments, for the functions below. */
#define GWT_WORDS(...)                                                                             \
	((const uint32_t[]){ __VA_ARGS__ }), (sizeof((const uint32_t[]){ __VA_ARGS__ }) / 4)

/* An RDMA segment: handle, length, and the offset's two words, high first. */
#define GWT_SEG(handle, length, offset)                                                            \
	(handle), (length), (uint32_t)((uint64_t)(offset) >> 32), (uint32_t)(offset)

/* The @n words of @w into @b (4 * @n bytes), in network order. */
void gwt_put_words(uint8_t *b, const uint32_t *w, size_t n);

#endif
