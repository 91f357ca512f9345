#include "support/rdmahdr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xdr.h"

void gwt_put_words(uint8_t *b, const uint32_t *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		xdr_put32(b + 4 * i, w[i]);
}

uint8_t *gwt_words_dup(const uint32_t *w, size_t n, size_t len)
{
	uint8_t *b = malloc(len ? len : 1);

	if (!b)
		abort();
	for (size_t i = 0; i < n && 4 * i < len; i++) {
		uint8_t word[4];

		xdr_put32(word, w[i]);
		memcpy(b + 4 * i, word, len - 4 * i < 4 ? len - 4 * i : 4);
	}
	if (len > 4 * n)
		memset(b + 4 * n, 0xab, len - 4 * n);
	return b;
}

int gwt_words_cmp(const uint8_t *b, ssize_t len, const uint32_t *w, size_t n)
{
	if (len != (ssize_t)(n * 4)) {
		fprintf(stderr, "%zd bytes, expected %zu words (%zu bytes)\n", len, n, n * 4);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		if (xdr_get32(b + 4 * i) != w[i]) {
			fprintf(stderr, "word %zu: %#x, expected %#x\n", i, xdr_get32(b + 4 * i),
				w[i]);
			return -1;
		}
	}
	return 0;
}

void gwt_hdr_decode(struct gwt_hdr_msg *m, const uint32_t *w, size_t n, size_t extra,
		    const uint32_t *rpc, size_t nrpc, const struct rpcrdma_limits *lim)
{
	m->len = n * 4 + extra;
	m->buf = gwt_words_dup(w, n, m->len);
	for (size_t i = 0; i < nrpc && 4 * (i + 1) <= extra; i++)
		xdr_put32(m->buf + n * 4 + 4 * i, rpc[i]);
	memset(&m->h, 0x5a, sizeof(m->h));
	m->r = rpcrdma_hdr_decode(&m->h, m->buf, m->len, lim);
}

enum rpcrdma_reason gwt_hdr_reason(const uint32_t *w, size_t n, size_t extra, const uint32_t *rpc,
				   size_t nrpc, const struct rpcrdma_limits *lim)
{
	struct gwt_hdr_msg m;

	gwt_hdr_decode(&m, w, n, extra, rpc, nrpc, lim);
	free(m.buf);
	return m.r;
}

size_t gwt_hdr_first_cut_not(const uint32_t *w, size_t n, size_t from,
			     const struct rpcrdma_limits *lim, enum rpcrdma_reason want)
{
	for (size_t len = from; len < n * 4; len++) {
		struct rpcrdma_hdr h;
		uint8_t *b = gwt_words_dup(w, n, len);
		enum rpcrdma_reason r = rpcrdma_hdr_decode(&h, b, len, lim);

		free(b);
		if (r != want) {
			fprintf(stderr, "cut at %zu bytes: %s, expected %s\n", len,
				rpcrdma_reason_name(r), rpcrdma_reason_name(want));
			return len;
		}
	}
	return n * 4;
}
