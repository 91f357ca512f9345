/*
 * A source of buffers (struct gw_buf_source) for the tests of code that reads
 * into the buffers it takes, tcp_conn's above all. Each buffer is allocated at
 * exactly the size asked, so that AddressSanitizer sees an overrun; the source
 * can be limited, to play a pool that runs dry, can round its requests up to
 * two classes as the gateway's pool does, and counts what it gives and gets
 * back, so that a test can check that every buffer went back.
 */
#ifndef GW_TESTS_SUPPORT_BUFSRC_H
#define GW_TESTS_SUPPORT_BUFSRC_H

#include <stddef.h>

#include "common/buf.h"

struct gwt_bufsrc {
	struct gw_buf_source src;
	unsigned int limit; /* most buffers out at once; 0: no limit */
	unsigned int outstanding;
	unsigned int allocs;
	unsigned int frees;
	unsigned int failed;
	/* Buffers freed while references were left: a reference put once too often. */
	unsigned int bad_frees;
	size_t largest;
	/* If set, the pool's two classes: requests above small get a buffer of big bytes. */
	size_t small, big;
};

/* An empty source with no limit and one class. */
void gwt_bufsrc_init(struct gwt_bufsrc *s);

/*
 * The source's alloc(): a buffer of at least @min_size bytes with one
 * reference, or NULL when the limit is reached (counted in failed). It aborts
 * when memory runs out: a test cannot go on.
 */
struct gw_buf *gwt_bufsrc_alloc(struct gw_buf_source *src, size_t min_size);

/*
 * 0 when every buffer the source gave out came back, each freed with no
 * reference left; -1 otherwise.
 */
int gwt_bufsrc_all_back(const struct gwt_bufsrc *s);

#endif
