/* SPDX-License-Identifier: MIT */
/*
 * tcp/tcp_conn.h - one record-marked TCP connection on the event loop.
 *
 * Input: a raw read event, not a bufferevent, so that bytes land where the
 * record parser (tcp/record.h) says, in gw_bufs from the connection's
 * buffer source (registered RDMA memory in the gateway). Each complete
 * record goes to the owner as (buffer reference, offset, length); the
 * owner holds that reference until it is done with the record, so a buffer
 * that holds several pipelined records lives until the last is released.
 * The connection holds a buffer only while part of a record is in it.
 * A turn (one read event) delivers a bounded number of records; with more
 * already buffered the connection yields and goes on in a later pass of
 * the loop, after the other connections' ready sockets, so that a client
 * pipelining hundreds of calls in one read cannot hold the others'
 * (counted in tcp_conn_stats.yields).
 *
 * Output: an evbuffer. A record is a mark plus pieces, each copied (small
 * things: headers, inline replies) or added by reference to a gw_buf (bulk
 * data, which then leaves through sendmsg() from where it lies; the
 * reference is put once the bytes are written or dropped). Output is
 * written with MSG_NOSIGNAL: no SIGPIPE handling is needed. Records queued
 * in one pass of the event loop are written together later in that pass,
 * never inside the send call (unless the owner asks, tcp_conn_flush_now());
 * the socket's write event is added only while the socket is full.
 *
 * Back-pressure, both ways:
 *  - the owner pauses and resumes reading (e.g. while calls cannot be sent
 *    upstream); a pause takes effect at once, even between records that
 *    are already in the buffer;
 *  - reading also stops by itself when the buffer source is dry; the owner
 *    is told (starved) and calls tcp_conn_source_ready() when buffers come
 *    back;
 *  - queued output above a high watermark tells the owner to stop
 *    producing replies for this client, and below the low watermark that
 *    it may go on; a hard limit refuses output beyond it.
 *
 * Closing: EOF, socket errors, bad records and a record not finished in
 * time close the connection and report the reason through the closed
 * callback. A record larger than max_record is a bad record too, unless
 * the owner asks for it to be skipped (skip_oversized and the oversized
 * callback): it is then read and thrown away without being buffered, the
 * owner gets its head to answer the call, and the connection goes on with
 * the next record. tcp_conn_close() is the
 * graceful close (stop reading, flush, half-close, wait for the peer's FIN
 * within a time limit); tcp_conn_abort() resets the connection at once.
 * Either way the owner frees the connection with tcp_conn_free(), which is
 * allowed inside any callback of that connection.
 *
 * Callbacks run from the event loop, except output_pressure(true), which
 * runs inside the tcp_conn_send_*() call that crossed the high watermark,
 * so the owner stops producing at once (and closed() when such a call
 * fails with ENOMEM).
 */
#ifndef GW_TCP_TCP_CONN_H
#define GW_TCP_TCP_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/util.h>

#include "common/buf.h"
#include "tcp/record.h"

struct event_base;
struct tcp_conn;

struct tcp_conn_config {
	/* Largest record payload accepted from the peer. */
	uint32_t max_record;
	/*
	 * Buffer size asked of the source while the next record's size is
	 * unknown (or the last record's size, when larger and at most
	 * readahead_max: rm_size_hint()); larger records get a buffer of
	 * their own size (see tcp_conn_rx_buffer_size()).
	 */
	uint32_t recv_size;
	/* Bytes read beyond the current fragment (rm_init()). */
	uint32_t readahead;
	/*
	 * The most the read-ahead grows to while small records keep coming
	 * (rm_set_readahead_max()); at most this plus a mark moves when a
	 * buffer is switched. Below readahead: a fixed read-ahead.
	 */
	uint32_t readahead_max;
	/* Queued output at which output_pressure(true) is called; 0: never. */
	size_t out_high;
	/* Queued output at which output_pressure(false) follows. */
	size_t out_low;
	/* Sends that would queue more than this fail (ENOBUFS); 0: no limit. */
	size_t out_max;
	/* A graceful close that takes longer is turned into an abort. */
	unsigned int close_timeout_ms;
	/*
	 * Once the first byte of a record (its mark) has arrived, the whole
	 * record must be in within this, or the connection is reset
	 * (TCP_CLOSE_RECORD_TIMEOUT); 0: no deadline. Time between records
	 * is not counted: that is idle, which the owner governs.
	 */
	unsigned int record_timeout_ms;
	/*
	 * Ask the kernel for the receive time of what each read takes
	 * (SO_TIMESTAMPNS), so that tcp_conn_rx_wait_us() can tell how long a
	 * record waited in the socket for the owner's event loop to come to
	 * it: the one wait the owner's own clock, read once a record is in,
	 * cannot see.
	 */
	bool rx_timestamps;
	/*
	 * Records one turn of the event loop delivers before the connection
	 * yields to the others (0: TCP_CONN_RECORDS_PER_TURN_DEFAULT). Fewer:
	 * a client with a deep pipeline holds the loop for less time, so the
	 * other clients' calls wait less; more loop passes per call.
	 */
	unsigned int records_per_turn;
	/*
	 * The budget while the worker's loop is serving other clients too
	 * (common/turns.h), and whether this connection's turns count as a
	 * client's there: 0, the default, takes no part (records_per_turn
	 * always, its turns not reported), as a connection to an upstream
	 * server should. Above records_per_turn: records_per_turn.
	 */
	unsigned int records_per_turn_contended;
	/*
	 * Skip records larger than max_record rather than closing the
	 * connection (tcp/record.h, rm_set_skip_oversized()): each is
	 * reported to ops.oversized, which must be set too, or this has no
	 * effect. For a client connection, whose owner can answer the call
	 * with an error: a client that was never told the limit would
	 * otherwise reconnect and resend the same record for ever.
	 */
	bool skip_oversized;
};

enum { TCP_CONN_RECORDS_PER_TURN_DEFAULT = 16 };

/* Defaults: 1 MiB + 4 KiB records, 4 KiB receive buffers, 1 KiB read-ahead
 * growing to 64 KiB, 4/1 MiB watermarks, 64 MiB output limit, 5 s to close,
 * 30 s per record. */
void tcp_conn_config_default(struct tcp_conn_config *cfg);

/* The largest buffer a connection asks of its source. */
static inline uint32_t tcp_conn_rx_buffer_size(const struct tcp_conn_config *cfg)
{
	return cfg->max_record + RM_BUF_SLACK;
}

enum tcp_close_reason {
	/* The peer closed its side between records. */
	TCP_CLOSE_EOF,
	/* A socket error; err holds the errno. */
	TCP_CLOSE_ERROR,
	/* The peer broke record marking; record_err says how. */
	TCP_CLOSE_BAD_RECORD,
	/* A graceful close (tcp_conn_close()) completed. */
	TCP_CLOSE_LOCAL,
	/* A graceful close ran out of time and was aborted. */
	TCP_CLOSE_TIMEOUT,
	/* A record was begun and not finished within record_timeout_ms: reset. */
	TCP_CLOSE_RECORD_TIMEOUT,
	TCP_CLOSE_REASON_COUNT
};

struct tcp_close_info {
	enum tcp_close_reason reason;
	int err;
	enum rm_error record_err;
};

/* A short, stable name of a close reason for logs and counters. */
const char *tcp_close_reason_name(enum tcp_close_reason reason);

struct tcp_conn_ops {
	/*
	 * A complete record: len bytes at buf->base + off. The callee owns
	 * one reference to buf and puts it when done with the record.
	 */
	void (*record)(struct tcp_conn *c, struct gw_buf *buf, uint32_t off, uint32_t len,
		       void *arg);
	/*
	 * Queued output crossed out_high (congested true) or fell back to
	 * out_low (false). Optional.
	 */
	void (*output_pressure)(struct tcp_conn *c, bool congested, void *arg);
	/*
	 * The buffer source had nothing; reading has stopped until the owner
	 * calls tcp_conn_source_ready(). Optional (but then nobody will).
	 */
	void (*starved)(struct tcp_conn *c, void *arg);
	/*
	 * The connection is closed: the socket is gone, queued output was
	 * dropped (its references put) and no other callback follows. Not
	 * called for tcp_conn_abort() or tcp_conn_free().
	 */
	void (*closed)(struct tcp_conn *c, const struct tcp_close_info *why, void *arg);
	/*
	 * With skip_oversized: a record larger than max_record begins, once
	 * per such record, when its first head_len bytes are in, and before
	 * the rest of it is read and thrown away. head holds the start of its
	 * payload (the RPC call header: RM_OVERSIZED_HEAD bytes, fewer only
	 * when max_record is smaller) and is valid during the call only: copy
	 * what is needed. record_len is the payload length its marks announced
	 * so far, more than max_record (further fragments may follow). The
	 * callee may send (an error reply), pause, close or free the
	 * connection. The record's deadline (record_timeout_ms) runs until
	 * its last byte is thrown away. Optional.
	 */
	void (*oversized)(struct tcp_conn *c, const uint8_t *head, uint32_t head_len,
			  uint64_t record_len, void *arg);
};

struct tcp_conn_stats {
	uint64_t records_in;
	uint64_t bytes_in;
	/* read(2) calls on the socket for records (those that found nothing too). */
	uint64_t reads;
	uint64_t records_out;
	uint64_t bytes_out;
	/* Buffers taken from the source. */
	uint64_t rx_buffers;
	/* Times the parser needed another buffer (or its bytes slid to the front of this one). */
	uint64_t rx_switches;
	/* Bytes the parser moved (a mark and read-ahead at each switch; marks squeezed out). */
	uint64_t rx_moved;
	/* Times the source had no buffer. */
	uint64_t starved;
	/* Times queued output crossed the high watermark. */
	uint64_t congested;
	/* sendmsg() calls: one per flush while the socket takes everything. */
	uint64_t writes;
	/* Times a flush found the socket full and the write event was added. */
	uint64_t write_waits;
	/*
	 * Turns that ended with records still buffered (more than a turn's
	 * budget came in at once) and went on in a later loop pass.
	 */
	uint64_t yields;
	/* Oversized records skipped (skip_oversized), counted as each begins. */
	uint64_t records_skipped;
	/* Their payload bytes thrown away so far, the heads included (not in records_in). */
	uint64_t bytes_skipped;
};

/*
 * Wrap a connected stream socket (made non-blocking here; TCP_NODELAY on
 * TCP sockets, since RPC replies must not wait for ACKs). The connection
 * owns fd from now on and starts reading. cfg and ops are copied.
 * Returns NULL (errno set, fd not closed) on failure.
 */
struct tcp_conn *tcp_conn_new(struct event_base *base, evutil_socket_t fd,
			      const struct tcp_conn_config *cfg, struct gw_buf_source *src,
			      const struct tcp_conn_ops *ops, void *arg);

/*
 * Frees the connection; if it is still open, it is aborted first. Safe
 * inside this connection's callbacks (the memory goes when they return).
 */
void tcp_conn_free(struct tcp_conn *c);

/* Reset the connection now (RST), dropping queued output. No callback. */
void tcp_conn_abort(struct tcp_conn *c);

/*
 * Graceful close: stop reading (records not yet delivered are dropped),
 * send what is queued, half-close, then wait for the peer's FIN. Ends with
 * closed(TCP_CLOSE_LOCAL) or, after close_timeout_ms, with an abort and
 * closed(TCP_CLOSE_TIMEOUT). Sends fail from now on.
 */
void tcp_conn_close(struct tcp_conn *c);

/* Owner's back-pressure on input; takes effect before the next record. */
void tcp_conn_pause_read(struct tcp_conn *c);
void tcp_conn_resume_read(struct tcp_conn *c);

/* Buffers are available again after starved(): try reading again. */
void tcp_conn_source_ready(struct tcp_conn *c);

/* A piece of an outgoing record. */
struct tcp_piece {
	/* Sent by reference when set: buf->base[off, off + len). */
	struct gw_buf *buf;
	/* Copied when buf is NULL: data[0, len). */
	const void *data;
	uint32_t off;
	uint32_t len;
};

/*
 * Queue one record: a mark for the total length, then the pieces, all or
 * nothing. Pieces by reference take their own reference to their gw_buf;
 * the caller keeps its own. Returns 0, or -1 with errno: ENOTCONN (closed
 * or closing), EMSGSIZE (longer than a fragment can be), ENOBUFS (over
 * out_max), ENOMEM (libevent could not queue; the connection is then
 * closed, since a half-queued record would corrupt the stream).
 */
int tcp_conn_send_record(struct tcp_conn *c, const struct tcp_piece *pieces, unsigned int n);

/* A record of len bytes copied from data. */
int tcp_conn_send_copy(struct tcp_conn *c, const void *data, size_t len);

/* A record of buf->base[off, off + len), sent by reference. */
int tcp_conn_send_ref(struct tcp_conn *c, struct gw_buf *buf, uint32_t off, uint32_t len);

/*
 * Write the queued output now instead of later in this loop pass. For an
 * owner that knows no further record for this peer can be queued in this
 * pass (a client with no other call outstanding): its record would
 * otherwise wait for the rest of the pass (other clients' completions and
 * turns) with nothing to be coalesced with. What the socket does not take,
 * and a write error, are left to the flush the send scheduled: no callback
 * runs inside this call. Costs no extra system call: the scheduled flush
 * then finds nothing to write.
 */
void tcp_conn_flush_now(struct tcp_conn *c);

/* Bytes queued for output and not yet written. */
size_t tcp_conn_output_queued(const struct tcp_conn *c);

/* True between output_pressure(true) and output_pressure(false). */
bool tcp_conn_output_congested(const struct tcp_conn *c);

/*
 * True while the socket is full: the write event is added until the output
 * queue drains. Queued records are otherwise written once per loop pass.
 */
bool tcp_conn_write_waiting(const struct tcp_conn *c);

/* True while reading is paused by the owner, a dry source, or closing. */
bool tcp_conn_read_paused(const struct tcp_conn *c);

/* The socket; -1 once closed. */
evutil_socket_t tcp_conn_fd(const struct tcp_conn *c);

const struct tcp_conn_stats *tcp_conn_stats(const struct tcp_conn *c);

/*
 * In the record callback (with rx_timestamps): how long the newest bytes
 * of the read that completed this record had been in the socket when that
 * read took them, in microseconds. TCP_CONN_RX_WAIT_UNKNOWN without
 * rx_timestamps, when the kernel gave no time, or when the clock stepped.
 */
#define TCP_CONN_RX_WAIT_UNKNOWN UINT64_MAX
uint64_t tcp_conn_rx_wait_us(const struct tcp_conn *c);

#endif
