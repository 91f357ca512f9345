/* SPDX-License-Identifier: MIT */
/*
 * tests/e2e/progs/peer.h - what the end-to-end test peers share (each
 * program in progs/ stands alone; this header is their common part):
 * the ok/FAIL check lines the jobs read, XDR messages built word by word,
 * and Sends of such messages from a registered buffer that lives until the
 * Send completes.
 */
#ifndef GW_TESTS_E2E_PEER_H
#define GW_TESTS_E2E_PEER_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xdr.h"
#include "rdma/conn.h"
#include "rdma/device.h"
#include "rdma/pool.h"

/* Checks that failed; main() exits non-zero when there are any. */
static int failures;

/* One line per check, "ok: ..." or "FAIL: ...", flushed: the job reads them as they come. */
#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (cond) {                                                                        \
			printf("ok: " __VA_ARGS__);                                                \
		} else {                                                                           \
			printf("FAIL: " __VA_ARGS__);                                              \
			failures++;                                                                \
		}                                                                                  \
		printf("\n");                                                                      \
		fflush(stdout);                                                                    \
	} while (0)

enum { PEER_MSG_MAX = 256 };

/* A message under construction, XDR words. */
struct words {
	uint8_t b[PEER_MSG_MAX];
	uint32_t len;
};

static inline void w32(struct words *w, uint32_t v)
{
	xdr_put32(w->b + w->len, v);
	w->len += 4;
}

static inline void w64(struct words *w, uint64_t v)
{
	xdr_put64(w->b + w->len, v);
	w->len += 8;
}

/*
 * The chunk lists of a Position-Zero call (RDMA_NOMSG / RDMA2_NOMSG): the
 * whole call in one Read segment at position 0, no Write list, no Reply chunk.
 */
static inline void w_p0_lists(struct words *w, uint32_t rkey, uint32_t len, uint64_t addr)
{
	w32(w, 1); /* Read list: one entry at position 0 */
	w32(w, 0);
	w32(w, rkey);
	w32(w, len);
	w64(w, addr);
	w32(w, 0); /* end of the Read list */
	w32(w, 0); /* no Write list */
	w32(w, 0); /* no Reply chunk */
}

struct peer_sent {
	struct rconn_wr wr; /* first */
	struct gw_buf *buf;
};

static inline void peer_sent_done(struct rconn_wr *wr, enum ibv_wc_status st)
{
	struct peer_sent *s = (struct peer_sent *)wr;

	(void)st;
	gw_buf_put(s->buf);
	free(s);
}

/* Send @w on @conn from a buffer of the device's pool; false when it could not be posted. */
static inline bool peer_send(struct rconn *conn, const struct words *w)
{
	struct peer_sent *s = calloc(1, sizeof(*s));

	if (!s)
		return false;
	s->buf = rdma_pool_alloc(rdma_dev_pool(rconn_device(conn)), PEER_MSG_MAX);
	if (!s->buf) {
		free(s);
		return false;
	}
	s->wr.done = peer_sent_done;
	memcpy(s->buf->base, w->b, w->len);
	struct ibv_sge sge = { (uintptr_t)s->buf->base, w->len, s->buf->lkey };
	if (rconn_send(conn, &sge, 1, 0, &s->wr) != 0) {
		gw_buf_put(s->buf);
		free(s);
		return false;
	}
	return true;
}

#endif
