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
#include <sys/types.h>

#include "rdma/rpcrdma_hdr.h"

/* The words given as an array and their count: two arguments, for the functions below. */
#define GWT_WORDS(...)                                                                             \
	((const uint32_t[]){ __VA_ARGS__ }), (sizeof((const uint32_t[]){ __VA_ARGS__ }) / 4)

/* An RDMA segment: handle, length, and the offset's two words, high first. */
#define GWT_SEG(handle, length, offset)                                                            \
	(handle), (length), (uint32_t)((uint64_t)(offset) >> 32), (uint32_t)(offset)

/* The @n words of @w into @b (4 * @n bytes), in network order. */
void gwt_put_words(uint8_t *b, const uint32_t *w, size_t n);

/*
 * A heap copy of exactly @len bytes, so that AddressSanitizer sees a read
 * past its end: the @n words of @w in network order, cut short where @len
 * ends inside them, then bytes 0xab up to @len (where a test puts the RPC
 * message that follows a header). The caller frees it; it aborts when
 * memory runs out: a test cannot go on.
 */
uint8_t *gwt_words_dup(const uint32_t *w, size_t n, size_t len);

/*
 * 0 when the @len bytes at @b are exactly the @n words of @w in network
 * order, as an encoder must have written them; -1 otherwise, the length or
 * the first word that differs said on stderr. @len is signed so that an
 * encoder's result, an error included, is passed as it came.
 */
int gwt_words_cmp(const uint8_t *b, ssize_t len, const uint32_t *w, size_t n);

/* A transport header decoded from a copy of exactly its bytes. */
struct gwt_hdr_msg {
	uint8_t *buf; /* the copy (gwt_words_dup()), the test's to free */
	size_t len;
	struct rpcrdma_hdr h;
	enum rpcrdma_reason r;
};

/*
 * The header @w (@n words) followed by @extra bytes of RPC message, which
 * starts with the words of @rpc (@nrpc of them, as many as fit whole in
 * @extra) and goes on in bytes 0xab, copied as gwt_words_dup() does and
 * decoded under @lim into @m; m->h is filled with 0x5a first, so that what
 * the decoder did not set shows.
 */
void gwt_hdr_decode(struct gwt_hdr_msg *m, const uint32_t *w, size_t n, size_t extra,
		    const uint32_t *rpc, size_t nrpc, const struct rpcrdma_limits *lim);

/* The reason gwt_hdr_decode() finds for that message (the copy freed). */
enum rpcrdma_reason gwt_hdr_reason(const uint32_t *w, size_t n, size_t extra, const uint32_t *rpc,
				   size_t nrpc, const struct rpcrdma_limits *lim);

/*
 * Every cut of the header @w (@n words), from @from bytes up to one byte
 * short of the whole, decoded under @lim from a copy of exactly its length
 * (gwt_words_dup()): the first length whose reason is not @want (said on
 * stderr), or 4 * @n when every cut's is.
 */
size_t gwt_hdr_first_cut_not(const uint32_t *w, size_t n, size_t from,
			     const struct rpcrdma_limits *lim, enum rpcrdma_reason want);

#endif
