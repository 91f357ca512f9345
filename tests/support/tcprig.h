/*
 * A tcp_conn (tcp/tcp_conn.h) on a real event loop, with the test's end of
 * its socket (the "peer"), over a socketpair or loopback TCP, for the tests of
 * tcp_conn. The peer writes from a feeder event in chunks of random size, so
 * records arrive across partial reads, and reads through a sink event that can
 * be switched off to play a client that does not drain its replies.
 *
 * The rig's callbacks note what the connection does: each record delivered
 * (its length, its wait in the socket, its bytes checked against
 * gwt_pattern() in the order records come), output pressure, starvation and
 * the close; the usual owner, they free the connection when it closes.
 * Buffers come from a gwt_bufsrc. The loop has a tick armed, so that the
 * blocking turns of support/loop.h never block for long.
 */
#ifndef GW_TESTS_SUPPORT_TCPRIG_H
#define GW_TESTS_SUPPORT_TCPRIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#include "tcp/tcp_conn.h"

#include "support/bufsrc.h"
#include "support/record.h"

/* The most records a rig notes. */
#define GWT_RIG_MAX_RECS 2048

/* The deadline of every wait in the tests of tcp_conn: generous, nothing asserts speed. */
#define GWT_RIG_WAIT_MS 30000

struct gwt_rig {
	struct event_base *base;
	struct event *tick;
	evutil_socket_t peer;
	evutil_socket_t conn_fd;
	struct tcp_conn *c;
	struct tcp_conn_config cfg;
	struct gwt_bufsrc src;

	/* records in */
	unsigned int nrec;
	uint32_t lens[GWT_RIG_MAX_RECS];
	uint64_t rx_wait_us[GWT_RIG_MAX_RECS]; /* tcp_conn_rx_wait_us() in the callback */
	struct gw_buf *held[GWT_RIG_MAX_RECS];
	bool hold;	       /* keep each record's buffer in held[] rather than put it */
	bool bad_content;      /* a record's bytes were not its pattern, or too many came */
	unsigned int pause_at; /* pause reading when this many records came */
	unsigned int free_at;  /* free the connection when this many records came */

	/* callbacks */
	bool closed;
	struct tcp_close_info why;
	unsigned int congested_calls;
	unsigned int relieved_calls;
	size_t queued_at_congested;
	size_t queued_at_relieved;
	unsigned int starved_calls;

	/* the peer writing */
	struct event *feed_ev;
	struct gwt_stream feed;
	size_t feed_pos;
	size_t feed_max_chunk;
	uint32_t feed_seed;

	/* the peer reading */
	struct event *sink_ev;
	struct gwt_stream sunk;
	bool sink_eof;
	int sink_err;
};

/* The rig's callbacks (@arg is the rig), for a test that adds one of its own to them. */
void gwt_rig_record(struct tcp_conn *c, struct gw_buf *buf, uint32_t off, uint32_t len, void *arg);
void gwt_rig_pressure(struct tcp_conn *c, bool congested, void *arg);
void gwt_rig_starved(struct tcp_conn *c, void *arg);
void gwt_rig_closed(struct tcp_conn *c, const struct tcp_close_info *why, void *arg);

/* Those four. */
extern const struct tcp_conn_ops gwt_rig_ops;

/* A step of a linear congruential generator: reproducible sizes from @seed. */
uint32_t gwt_lcg(uint32_t *seed);

/* A connected pair of stream sockets: loopback TCP when @tcp, else AF_UNIX. 0, or -1. */
int gwt_sock_pair(int fds[2], bool tcp);

/*
 * The loop and the socket pair, and the connection's configuration with a
 * small receive size and read-ahead (512, 64), which the test may change
 * before gwt_rig_start(). It aborts when the loop or the sockets cannot be had:
 * a test cannot go on.
 */
struct gwt_rig *gwt_rig_new(bool tcp);

/* The connection, with h->cfg and the rig's callbacks: 0, or -1 when tcp_conn_new() failed. */
int gwt_rig_start(struct gwt_rig *h);

/* The peer writes @s from the loop, in chunks of 1 to feed_max_chunk bytes. */
void gwt_rig_feed(struct gwt_rig *h, const struct gwt_stream *s);

/* The peer writes @s at once, bypassing the feeder (the loop is not running): 0, or -1. */
int gwt_rig_write_now(struct gwt_rig *h, const struct gwt_stream *s);

/*
 * Records @first .. @first + @n - 1 of @len bytes each, their bytes
 * gwt_pattern() of their number, queued on the connection with
 * tcp_conn_send_copy(): 0, or -1 at the first one refused (errno as that
 * call left it). It aborts when memory runs out: a test cannot go on.
 */
int gwt_rig_send_records(struct gwt_rig *h, unsigned int first, unsigned int n, size_t len);

/* The peer reads what comes (into h->sunk) while @on. */
void gwt_rig_sink(struct gwt_rig *h, bool on);

/*
 * Small socket buffers on both ends, so that a peer that does not read holds
 * output back soon (after gwt_rig_start()): 0, or -1.
 */
int gwt_rig_shrink_sndbuf(struct gwt_rig *h);

/*
 * How many records the peer received, each of @len_each bytes of
 * gwt_pattern() in order, in one fragment; -1 when the bytes are anything else.
 */
long gwt_rig_decode_sunk(const struct gwt_rig *h, uint32_t len_each);

/*
 * Puts the buffers of held records, frees the connection if it is still
 * there, then the rig. 0 when every buffer the connection took from the
 * source went back, -1 otherwise.
 */
int gwt_rig_free(struct gwt_rig *h);

#endif
