/* SPDX-License-Identifier: MIT */
/*
 * tcp/tcp_conn.c - a record-marked TCP connection on libevent.
 *
 * Reentrancy: the owner may pause, send, close, abort or free the
 * connection from inside any of its callbacks. Every entry point that can
 * call back holds the connection (depth); tcp_conn_free() inside a callback
 * only marks it, and the memory goes when the outermost hold is released.
 * Loops that call back re-check the state after every callback.
 */
#include "tcp/tcp_conn.h"

#include <assert.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/turns.h"

/* Reads per readiness event before other connections get their turn. */
#define TCP_CONN_READS_PER_EVENT 16
/*
 * Records delivered per turn before other connections get theirs. One
 * read can bring hundreds of small pipelined calls, and each is admitted,
 * marshalled and posted inside the delivery: unbounded, a flooding client's
 * turn holds every other client's ready socket for as long as that takes.
 * 16 small calls cost a few tens of microseconds of the gateway's time (a
 * fraction of one RPC's round trip), yet are enough for one turn to keep a
 * server's credits busy and to let the replies of a batch leave in one
 * write; a client with more buffered yields (tcp_conn_yield()).
 */
/* iovecs per sendmsg(); libevent's own writev uses at most 128. */
#define TCP_CONN_IOV 64
/* Bytes thrown away per read while waiting for the peer's FIN. */
#define TCP_CONN_DISCARD 4096

enum tcp_conn_state {
	TCP_CONN_OPEN,
	/* Graceful close: sending what is queued. */
	TCP_CONN_FLUSHING,
	/* Graceful close: half-closed, waiting for the peer's FIN. */
	TCP_CONN_LINGERING,
	TCP_CONN_CLOSED,
};

/* Why reading is paused; it runs when no bit is set. */
#define TCP_PAUSE_OWNER	 0x1u
#define TCP_PAUSE_SOURCE 0x2u

struct tcp_conn {
	evutil_socket_t fd;
	enum tcp_conn_state state;
	unsigned int paused;
	/* read_ev is added */
	bool reading;
	/* write_ev is added: a flush found the socket full (tcp_conn_update_write()) */
	bool write_armed;
	/* flush_ev is active: output is written later in this loop pass */
	bool flush_scheduled;
	/* yield_ev is added: records still buffered wait for the next loop pass */
	bool yielded;
	bool congested;
	/* Entry points in progress; tcp_conn_free() waits for them. */
	unsigned int depth;
	bool free_pending;
	struct tcp_conn_config cfg;
	struct gw_buf_source *src;
	struct tcp_conn_ops ops;
	void *arg;
	/* The buffer the parser reads into; NULL while no record is pending. */
	struct gw_buf *rx;
	struct rm_parser rm;
	struct event *read_ev;
	struct event *write_ev;
	/* No descriptor: made active to flush once per loop pass (tcp_conn_schedule_flush()). */
	struct event *flush_ev;
	/* A zero timeout: the next turn of a connection that yielded (tcp_conn_yield()). */
	struct event *yield_ev;
	struct event *close_timer;
	/* The record deadline: added while a record is under way (see tcp_conn_watch_record()). */
	struct event *record_timer;
	bool record_armed;
	/* tcp_conn_record_seq() when the deadline was set: a later value means a new record. */
	uint64_t record_armed_at;
	struct evbuffer *out;
	struct tcp_conn_stats stats;
	uint64_t rx_wait_us; /* of the last read (rx_timestamps) */
	/* A write error tcp_conn_flush_now() met, reported by the scheduled flush. */
	int deferred_err;
};

static const char *const tcp_close_reason_names[TCP_CLOSE_REASON_COUNT] = {
	[TCP_CLOSE_EOF] = "eof",
	[TCP_CLOSE_ERROR] = "error",
	[TCP_CLOSE_BAD_RECORD] = "bad-record",
	[TCP_CLOSE_LOCAL] = "local",
	[TCP_CLOSE_TIMEOUT] = "close-timeout",
	[TCP_CLOSE_RECORD_TIMEOUT] = "record_timeout",
};

const char *tcp_close_reason_name(enum tcp_close_reason reason)
{
	if ((unsigned int)reason >= TCP_CLOSE_REASON_COUNT)
		return "unknown";
	return tcp_close_reason_names[reason];
}

void tcp_conn_config_default(struct tcp_conn_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->max_record = (1u << 20) + 4096;
	cfg->recv_size = 4096;
	cfg->readahead = 1024;
	cfg->readahead_max = 64u << 10;
	cfg->out_high = 4u << 20;
	cfg->out_low = 1u << 20;
	cfg->out_max = 64u << 20;
	cfg->close_timeout_ms = 5000;
	cfg->record_timeout_ms = 30000;
}

/* ---- lifetime ---------------------------------------------------------- */

static void tcp_conn_destroy(struct tcp_conn *c)
{
	event_free(c->read_ev);
	event_free(c->write_ev);
	event_free(c->flush_ev);
	event_free(c->yield_ev);
	event_free(c->close_timer);
	event_free(c->record_timer);
	evbuffer_free(c->out);
	free(c);
}

static void tcp_conn_hold(struct tcp_conn *c)
{
	c->depth++;
}

static void tcp_conn_unhold(struct tcp_conn *c)
{
	if (--c->depth == 0 && c->free_pending)
		tcp_conn_destroy(c);
}

static const char *tcp_conn_peer(const struct tcp_conn *c, char *buf, size_t len)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t sl = sizeof(ss);
	char host[NI_MAXHOST], serv[NI_MAXSERV];

	if (getpeername(c->fd, (struct sockaddr *)&ss, &sl) == 0 &&
	    (ss.ss_family == AF_INET || ss.ss_family == AF_INET6) &&
	    getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), serv, sizeof(serv),
			NI_NUMERICHOST | NI_NUMERICSERV) == 0)
		snprintf(buf, len, ss.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, serv);
	else
		snprintf(buf, len, "fd %d", (int)c->fd);
	return buf;
}

static void tcp_conn_record_disarm(struct tcp_conn *c)
{
	if (c->record_armed) {
		evtimer_del(c->record_timer);
		c->record_armed = false;
	}
}

/* A yielded turn is given up when reading stops: pause, a dry source, close. */
static void tcp_conn_cancel_yield(struct tcp_conn *c)
{
	if (c->yielded) {
		evtimer_del(c->yield_ev);
		c->yielded = false;
	}
}

static void tcp_conn_init_parser(struct tcp_conn *c)
{
	rm_init(&c->rm, c->cfg.max_record, c->cfg.readahead);
	rm_set_readahead_max(&c->rm, c->cfg.readahead_max);
	/* Without the callback nobody could answer the call: the record stays an error. */
	if (c->cfg.skip_oversized && c->ops.oversized)
		rm_set_skip_oversized(&c->rm, RM_OVERSIZED_HEAD);
}

/* Give back the receive buffer; the parser restarts between records. */
static void tcp_conn_drop_rx(struct tcp_conn *c)
{
	tcp_conn_record_disarm(c);
	if (c->rx) {
		gw_buf_put(c->rx);
		c->rx = NULL;
	}
	tcp_conn_init_parser(c);
}

/*
 * Close the socket and let go of everything it held: the receive buffer
 * and queued output (putting the references of pieces sent by reference).
 * reset: send RST rather than FIN, and drop unsent data at once.
 */
static void tcp_conn_teardown(struct tcp_conn *c, bool reset)
{
	if (c->state == TCP_CONN_CLOSED)
		return;
	c->state = TCP_CONN_CLOSED;
	event_del(c->read_ev);
	event_del(c->write_ev);
	event_del(c->flush_ev);
	event_del(c->close_timer);
	tcp_conn_cancel_yield(c);
	tcp_conn_record_disarm(c);
	c->reading = false;
	c->write_armed = false;
	c->flush_scheduled = false;
	if (reset) {
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };

		setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	evutil_closesocket(c->fd);
	c->fd = -1;
	tcp_conn_drop_rx(c);
	evbuffer_drain(c->out, evbuffer_get_length(c->out));
}

/* The connection ends for a reason of its own; tell the owner. */
static void tcp_conn_fail(struct tcp_conn *c, enum tcp_close_reason reason, int err,
			  enum rm_error record_err)
{
	struct tcp_close_info why = { .reason = reason, .err = err, .record_err = record_err };

	if (c->state == TCP_CONN_CLOSED)
		return;
	/* A peer that held a record open past its deadline gets a reset, as a slow close does. */
	tcp_conn_teardown(c, reason == TCP_CLOSE_TIMEOUT || reason == TCP_CLOSE_RECORD_TIMEOUT);
	if (c->ops.closed)
		c->ops.closed(c, &why, c->arg);
}

/* ---- input --------------------------------------------------------------- */

static void tcp_conn_update_read(struct tcp_conn *c)
{
	bool want;

	if (c->state == TCP_CONN_OPEN)
		want = c->paused == 0;
	else
		want = c->state == TCP_CONN_LINGERING;
	if (want == c->reading)
		return;
	c->reading = want;
	if (!want) {
		event_del(c->read_ev);
		tcp_conn_cancel_yield(c);
		return;
	}
	event_add(c->read_ev, NULL);
	/* Records already read in do not make the socket readable again. */
	if (c->state == TCP_CONN_OPEN && rm_pending(&c->rm) > 0)
		event_active(c->read_ev, EV_READ, 0);
}

static void tcp_conn_starve(struct tcp_conn *c)
{
	c->stats.starved++;
	c->paused |= TCP_PAUSE_SOURCE;
	tcp_conn_update_read(c);
	if (c->ops.starved)
		c->ops.starved(c, c->arg);
}

/*
 * The parser needs a buffer of at least need bytes. The bytes it moves are
 * those already read of one record: its mark and some read-ahead.
 *
 * A mark for a large record asks at once for a buffer of the record's
 * whole size (up to max_record), before its bytes arrive. It is taken
 * whole, not grown as bytes come: the record is read straight into
 * registered memory and later exposed from there in one piece, which
 * growing would turn into copies. What bounds the memory a client can
 * pin this way is time and number instead: the record deadline
 * (record_timeout_ms) gives the buffer back when a record is not
 * finished, and the owner's session limits bound how many such records
 * can be under way at once.
 */
static bool tcp_conn_switch_rx(struct tcp_conn *c, uint32_t need)
{
	struct gw_buf *old = c->rx, *nb;
	/* Room for a record like the last one too: it then comes in one read. */
	uint32_t want = need > rm_size_hint(&c->rm) ? need : rm_size_hint(&c->rm);

	c->stats.rx_switches++;
	/* Nobody else holds the buffer: slide the pending bytes to its start. */
	if (old && old->refs == 1 && old->size >= want &&
	    rm_set_buffer(&c->rm, old->base, old->size)) {
		c->stats.rx_moved = rm_moved(&c->rm);
		return true;
	}
	nb = gw_buf_alloc(c->src, want > c->cfg.recv_size ? want : c->cfg.recv_size);
	if (!nb) {
		tcp_conn_starve(c);
		return false;
	}
	if (!rm_set_buffer(&c->rm, nb->base, nb->size)) {
		gw_err("tcp: buffer source returned %u bytes for %u", nb->size, need);
		gw_buf_put(nb);
		tcp_conn_fail(c, TCP_CLOSE_ERROR, ENOBUFS, RM_OK);
		return false;
	}
	c->stats.rx_buffers++;
	c->stats.rx_moved = rm_moved(&c->rm);
	if (old)
		gw_buf_put(old);
	c->rx = nb;
	return true;
}

/*
 * Hold a buffer only while part of a record is in it: an idle client must
 * not pin pool memory, and a buffer whose records are all handed out goes
 * back to the pool as soon as their consumers let go.
 */
static void tcp_conn_release_idle_rx(struct tcp_conn *c)
{
	if (c->rx && rm_pending(&c->rm) == 0) {
		rm_set_buffer(&c->rm, NULL, 0);
		gw_buf_put(c->rx);
		c->rx = NULL;
	}
}

static void tcp_conn_deliver(struct tcp_conn *c, const struct rm_span *sp)
{
	c->stats.records_in++;
	c->stats.rx_moved = rm_moved(&c->rm);
	c->ops.record(c, gw_buf_get(c->rx), sp->off, sp->len, c->arg);
}

/*
 * An oversized record begins: the owner gets its head now, in the buffer
 * it lies in, before the parser reads over it with the rest of the record.
 */
static void tcp_conn_oversized(struct tcp_conn *c, const struct rm_span *sp)
{
	c->stats.records_skipped++;
	c->stats.rx_moved = rm_moved(&c->rm);
	c->ops.oversized(c, c->rx->base + sp->off, sp->len, rm_oversized_len(&c->rm), c->arg);
}

static void tcp_conn_bad_record(struct tcp_conn *c, enum rm_error e)
{
	char peer[NI_MAXHOST + NI_MAXSERV + 4];

	gw_warn("tcp %s: bad record marking (%s) after %llu records, closing",
		tcp_conn_peer(c, peer, sizeof(peer)), rm_error_name(e),
		(unsigned long long)c->stats.records_in);
	tcp_conn_fail(c, TCP_CLOSE_BAD_RECORD, 0, e);
}

static void tcp_conn_peer_eof(struct tcp_conn *c)
{
	enum rm_error e = rm_eof(&c->rm);

	if (e != RM_OK) {
		tcp_conn_bad_record(c, e);
		return;
	}
	tcp_conn_fail(c, TCP_CLOSE_EOF, 0, RM_OK);
}

enum tcp_read_result {
	/* The read filled the window: there may be more. */
	TCP_READ_FULL,
	/* A short read: the socket is most likely empty now. */
	TCP_READ_SHORT,
	/* Nothing to read, or the connection is closed. */
	TCP_READ_NONE,
};

/* A wait longer than this, or a receive time this far ahead, is a clock step. */
#define TCP_CONN_RX_WAIT_SANE_NS (60ll * 1000 * 1000 * 1000)
#define TCP_CONN_RX_WAIT_SKEW_NS (1000ll * 1000)

/*
 * The read's receive time (SCM_TIMESTAMPNS: CLOCK_REALTIME, of the newest
 * segment it took) against the clock now. The first read of a turn comes
 * before anything else in the callback, so the pass's clock reading
 * (common/clock.h), which the owner's timestamps of the records share, is
 * now; later reads of the turn read the clock again.
 */
static void tcp_conn_note_rx_wait(struct tcp_conn *c, struct msghdr *mh, bool first_of_turn)
{
	c->rx_wait_us = TCP_CONN_RX_WAIT_UNKNOWN;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_TIMESTAMPNS ||
		    cm->cmsg_len < CMSG_LEN(sizeof(struct timespec)))
			continue;
		struct timespec ts;
		memcpy(&ts, CMSG_DATA(cm), sizeof(ts));
		int64_t now = gw_realtime_ns(first_of_turn ? gw_now_pass_us() : gw_now_us());
		int64_t ns = now - ((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
		/* Slightly negative: the two clocks' reading, not a wait. Far off: a step. */
		if (ns < -TCP_CONN_RX_WAIT_SKEW_NS || ns > TCP_CONN_RX_WAIT_SANE_NS)
			return;
		c->rx_wait_us = ns > 0 ? (uint64_t)ns / 1000 : 0;
		return;
	}
}

/*
 * One read straight into the receive buffer, at the place and for the
 * length the parser asked for (the window is always contiguous): read(2),
 * or with rx_timestamps recvmsg(2), whose control message carries the
 * receive time.
 */
static ssize_t tcp_conn_read_once(struct tcp_conn *c, const struct rm_span *sp, bool first_of_turn)
{
	if (!c->cfg.rx_timestamps)
		return read(c->fd, c->rx->base + sp->off, sp->len);

	union {
		char buf[CMSG_SPACE(sizeof(struct timespec))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = c->rx->base + sp->off, .iov_len = sp->len };
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = ctl.buf,
		.msg_controllen = sizeof(ctl.buf),
	};
	ssize_t n = recvmsg(c->fd, &mh, 0);

	if (n > 0)
		tcp_conn_note_rx_wait(c, &mh, first_of_turn);
	return n;
}

static enum tcp_read_result tcp_conn_read_into(struct tcp_conn *c, const struct rm_span *sp,
					       bool first_of_turn)
{
	ssize_t n;

	do {
		n = tcp_conn_read_once(c, sp, first_of_turn);
		c->stats.reads++;
	} while (n < 0 && errno == EINTR);
	if (n > 0) {
		rm_filled(&c->rm, (uint32_t)n);
		c->stats.bytes_in += (uint64_t)n;
		return (size_t)n < sp->len ? TCP_READ_SHORT : TCP_READ_FULL;
	}
	if (n == 0)
		tcp_conn_peer_eof(c);
	else if (errno != EAGAIN && errno != EWOULDBLOCK)
		tcp_conn_fail(c, TCP_CLOSE_ERROR, errno, RM_OK);
	return TCP_READ_NONE;
}

/*
 * Records begun and done with so far, delivered or skipped: a later
 * value means the deadline's record is no longer the one under way.
 */
static uint64_t tcp_conn_record_seq(const struct tcp_conn *c)
{
	return c->stats.records_in + c->stats.records_skipped;
}

/*
 * Keep the record deadline: set when a record is under way and the
 * deadline is not already running for it, removed between records. A
 * client that sends each record whole never sets it; one that pipelines
 * re-sets it at most once per read event, when the record it ran for was
 * delivered and another has begun. Nothing is done per read(2).
 */
static void tcp_conn_record_arm(struct tcp_conn *c)
{
	struct timeval tv = gw_ms_timeval(c->cfg.record_timeout_ms);

	evtimer_add(c->record_timer, &tv);
	c->record_armed = true;
	c->record_armed_at = tcp_conn_record_seq(c);
}

static void tcp_conn_watch_record(struct tcp_conn *c)
{
	if (c->cfg.record_timeout_ms == 0 || c->state != TCP_CONN_OPEN)
		return;
	if (rm_pending(&c->rm) == 0)
		tcp_conn_record_disarm(c);
	else if (!c->record_armed || c->record_armed_at != tcp_conn_record_seq(c))
		tcp_conn_record_arm(c);
}

static void tcp_conn_on_record_timer(evutil_socket_t fd, short what, void *arg)
{
	struct tcp_conn *c = arg;
	char peer[NI_MAXHOST + NI_MAXSERV + 4];

	(void)fd;
	(void)what;
	c->record_armed = false;
	if (c->state != TCP_CONN_OPEN)
		return;
	if (c->paused != 0 || c->yielded) {
		/* We stopped reading, not the peer: the record gets another period. */
		tcp_conn_record_arm(c);
		return;
	}
	tcp_conn_hold(c);
	gw_warn("tcp %s: a record was not finished within %u ms (%u bytes in), closing",
		tcp_conn_peer(c, peer, sizeof(peer)), c->cfg.record_timeout_ms, rm_pending(&c->rm));
	tcp_conn_fail(c, TCP_CLOSE_RECORD_TIMEOUT, ETIMEDOUT, RM_OK);
	tcp_conn_unhold(c);
}

/*
 * The turn's budget of records is spent with bytes still buffered: run
 * again in a later pass of the loop, after the other connections' ready
 * events. Not by the read event: it is level-triggered on the socket, and
 * the socket may be empty while the records wait here. Not by
 * event_active() either: an event made active from a callback runs in the
 * same pass, before the loop looks at the sockets again, so a client whose
 * call arrived meanwhile would still wait for the whole backlog. A timer
 * of zero makes the loop poll the sockets (without blocking) first, and
 * runs after the I/O events that poll found.
 */
static void tcp_conn_yield(struct tcp_conn *c)
{
	static const struct timeval now = { 0, 0 };

	if (c->yielded)
		return;
	c->yielded = true;
	c->stats.yields++;
	evtimer_add(c->yield_ev, &now);
}

/*
 * A client connection's turn that delivered records tells the loop it is
 * being served (common/turns.h); the next turns of every client connection
 * on the loop are then cut to their contended budget while others are.
 */
static unsigned int tcp_conn_turn_budget(const struct tcp_conn *c)
{
	return gw_turns_budget(c->cfg.records_per_turn, c->cfg.records_per_turn_contended);
}

static void tcp_conn_turn_taken(const struct tcp_conn *c, unsigned int records)
{
	if (records > 0 && c->cfg.records_per_turn_contended != 0)
		gw_turn_taken(c, gw_now_pass_us());
}

static void tcp_conn_parse_and_read(struct tcp_conn *c)
{
	unsigned int reads = 0, records = 0;
	unsigned int budget = tcp_conn_turn_budget(c);
	bool drained = false;
	struct rm_span sp;

	while (c->state == TCP_CONN_OPEN && c->paused == 0) {
		if (records == budget) {
			if (rm_pending(&c->rm) > 0)
				tcp_conn_yield(c);
			else
				tcp_conn_release_idle_rx(c);
			return;
		}
		enum rm_status st = rm_next(&c->rm, &sp);

		/* Skipped bytes are counted as the parser throws them away. */
		c->stats.bytes_skipped = rm_skipped(&c->rm);
		switch (st) {
		case RM_RECORD:
			records++;
			tcp_conn_deliver(c, &sp);
			break;
		case RM_OVERSIZED:
			tcp_conn_oversized(c, &sp);
			break;
		case RM_NEED_BUFFER:
			if (!tcp_conn_switch_rx(c, sp.len))
				return;
			break;
		case RM_ERROR:
			tcp_conn_bad_record(c, rm_error(&c->rm));
			return;
		case RM_NEED_INPUT:
			if (drained) {
				tcp_conn_release_idle_rx(c);
				return;
			}
			/* Level-triggered: the event fires again if more is there. */
			if (reads++ == TCP_CONN_READS_PER_EVENT)
				return;
			switch (tcp_conn_read_into(c, &sp, reads == 1)) {
			case TCP_READ_FULL:
				break;
			case TCP_READ_SHORT:
				/* Parse what came, but spare the read that would fail. */
				drained = true;
				break;
			case TCP_READ_NONE:
				if (c->state == TCP_CONN_OPEN)
					tcp_conn_release_idle_rx(c);
				return;
			}
			break;
		}
	}
}

static void tcp_conn_read_records(struct tcp_conn *c)
{
	uint64_t before = c->stats.records_in;

	tcp_conn_parse_and_read(c);
	tcp_conn_turn_taken(c, (unsigned int)(c->stats.records_in - before));
	tcp_conn_watch_record(c);
}

/* Graceful close, last step: discard input until the peer's FIN. */
static void tcp_conn_linger_read(struct tcp_conn *c)
{
	uint8_t sink[TCP_CONN_DISCARD];

	for (unsigned int i = 0; i < TCP_CONN_READS_PER_EVENT; i++) {
		ssize_t n = read(c->fd, sink, sizeof(sink));

		if (n > 0)
			continue;
		if (n == 0) {
			tcp_conn_fail(c, TCP_CLOSE_LOCAL, 0, RM_OK);
			return;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			tcp_conn_fail(c, TCP_CLOSE_ERROR, errno, RM_OK);
		return;
	}
}

static void tcp_conn_on_read(evutil_socket_t fd, short what, void *arg)
{
	struct tcp_conn *c = arg;

	(void)fd;
	(void)what;
	tcp_conn_hold(c);
	/* The owner's timestamps of the records read here share one clock reading. */
	gw_clock_pass_begin();
	if (c->state == TCP_CONN_OPEN)
		tcp_conn_read_records(c);
	else if (c->state == TCP_CONN_LINGERING)
		tcp_conn_linger_read(c);
	gw_clock_pass_end();
	tcp_conn_unhold(c);
}

/* The next turn of a connection that yielded with records buffered. */
static void tcp_conn_on_yield(evutil_socket_t fd, short what, void *arg)
{
	struct tcp_conn *c = arg;

	c->yielded = false;
	/* A pause or close cancels the turn; this is a last guard. */
	if (c->state != TCP_CONN_OPEN || c->paused != 0)
		return;
	tcp_conn_on_read(fd, what, arg);
}

void tcp_conn_pause_read(struct tcp_conn *c)
{
	c->paused |= TCP_PAUSE_OWNER;
	tcp_conn_update_read(c);
}

void tcp_conn_resume_read(struct tcp_conn *c)
{
	c->paused &= ~TCP_PAUSE_OWNER;
	tcp_conn_update_read(c);
}

void tcp_conn_source_ready(struct tcp_conn *c)
{
	if (!(c->paused & TCP_PAUSE_SOURCE))
		return;
	c->paused &= ~TCP_PAUSE_SOURCE;
	tcp_conn_update_read(c);
}

/* ---- output -------------------------------------------------------------- */

/*
 * Output is written once per loop pass, not once per record, and the
 * socket's write event is added only while the socket is full:
 *  - a queued record schedules a flush by making flush_ev (an event with no
 *    descriptor) active: no system call. It runs later in the same pass,
 *    after the callbacks already due, so the replies that one batch of
 *    completions produced leave together in one sendmsg();
 *  - a flush that cannot write everything (EAGAIN or a short write) adds
 *    write_ev, and the flush that empties the queue removes it. A client
 *    that keeps up thus costs no epoll_ctl() per reply (adding and removing
 *    the write event per reply were two of the ~18 system calls per RPC).
 * While write_ev is added, new records wait for it rather than schedule a
 * flush that would only find the socket full again. Nothing inside a flush
 * schedules one (that would spin the loop).
 */
static void tcp_conn_update_write(struct tcp_conn *c)
{
	bool want = (c->state == TCP_CONN_OPEN || c->state == TCP_CONN_FLUSHING) &&
		    evbuffer_get_length(c->out) > 0;

	if (want == c->write_armed)
		return;
	c->write_armed = want;
	if (want) {
		c->stats.write_waits++;
		event_add(c->write_ev, NULL);
	} else {
		event_del(c->write_ev);
	}
}

static void tcp_conn_schedule_flush(struct tcp_conn *c)
{
	if (c->flush_scheduled || c->write_armed)
		return;
	c->flush_scheduled = true;
	event_active(c->flush_ev, EV_WRITE, 0);
}

static void tcp_conn_check_congestion(struct tcp_conn *c)
{
	if (c->congested || c->cfg.out_high == 0 || evbuffer_get_length(c->out) < c->cfg.out_high)
		return;
	c->congested = true;
	c->stats.congested++;
	if (c->ops.output_pressure)
		c->ops.output_pressure(c, true, c->arg);
}

static void tcp_conn_check_relief(struct tcp_conn *c)
{
	if (!c->congested || evbuffer_get_length(c->out) > c->cfg.out_low)
		return;
	c->congested = false;
	if (c->ops.output_pressure)
		c->ops.output_pressure(c, false, c->arg);
}

/*
 * Write what the socket takes, with sendmsg() over the evbuffer's chains:
 * pieces added by reference leave from the gw_buf they live in. 0 when
 * all is written or the socket is full, else the errno of the failure.
 */
static int tcp_conn_write_out(struct tcp_conn *c)
{
	while (evbuffer_get_length(c->out) > 0) {
		struct evbuffer_iovec ev[TCP_CONN_IOV];
		struct iovec iov[TCP_CONN_IOV];
		struct msghdr msg = { .msg_iov = iov };
		size_t total = 0;
		ssize_t n;
		int nv = evbuffer_peek(c->out, -1, NULL, ev, TCP_CONN_IOV);

		if (nv > TCP_CONN_IOV)
			nv = TCP_CONN_IOV;
		for (int i = 0; i < nv; i++) {
			iov[i].iov_base = ev[i].iov_base;
			iov[i].iov_len = ev[i].iov_len;
			total += ev[i].iov_len;
		}
		msg.msg_iovlen = (size_t)nv;
		n = sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		c->stats.writes++;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			return errno;
		}
		/* Drained chains added by reference put their gw_buf here. */
		evbuffer_drain(c->out, (size_t)n);
		c->stats.bytes_out += (uint64_t)n;
		if ((size_t)n < total)
			break;
	}
	return 0;
}

static void tcp_conn_flush(struct tcp_conn *c)
{
	int err = c->deferred_err ? c->deferred_err : tcp_conn_write_out(c);

	if (err) {
		tcp_conn_fail(c, TCP_CLOSE_ERROR, err, RM_OK);
		return;
	}
	/* Whatever is left did not fit: wait for the socket (or stop waiting). */
	tcp_conn_update_write(c);
	tcp_conn_check_relief(c);
}

void tcp_conn_flush_now(struct tcp_conn *c)
{
	/* With write_ev added the socket is full: its room will write the rest. */
	if (c->state != TCP_CONN_OPEN || c->write_armed || c->deferred_err ||
	    evbuffer_get_length(c->out) == 0)
		return;
	/*
	 * No callback may run inside the owner's call: the state changes a
	 * flush makes (write event, relief, a failure) are left to the flush
	 * that queueing the output scheduled, which finds little or nothing
	 * left to write and costs no system call then.
	 */
	c->deferred_err = tcp_conn_write_out(c);
	tcp_conn_schedule_flush(c);
}

static void tcp_conn_half_close(struct tcp_conn *c)
{
	if (shutdown(c->fd, SHUT_WR) < 0) {
		tcp_conn_fail(c, TCP_CLOSE_ERROR, errno, RM_OK);
		return;
	}
	c->state = TCP_CONN_LINGERING;
	tcp_conn_update_write(c);
	tcp_conn_update_read(c);
}

/* The socket has room (write_ev), or records were queued in this pass (flush_ev). */
static void tcp_conn_on_write(evutil_socket_t fd, short what, void *arg)
{
	struct tcp_conn *c = arg;

	(void)fd;
	(void)what;
	tcp_conn_hold(c);
	if (c->state == TCP_CONN_OPEN || c->state == TCP_CONN_FLUSHING)
		tcp_conn_flush(c);
	if (c->state == TCP_CONN_FLUSHING && evbuffer_get_length(c->out) == 0)
		tcp_conn_half_close(c);
	tcp_conn_unhold(c);
}

static void tcp_conn_on_flush(evutil_socket_t fd, short what, void *arg)
{
	struct tcp_conn *c = arg;

	c->flush_scheduled = false;
	tcp_conn_on_write(fd, what, arg);
}

static void tcp_conn_put_ref(const void *data, size_t len, void *extra)
{
	(void)data;
	(void)len;
	gw_buf_put(extra);
}

static bool tcp_conn_add_piece(struct tcp_conn *c, const struct tcp_piece *pc)
{
	struct gw_buf *buf = pc->buf;
	int rc;

	if (pc->len == 0)
		return true;
	if (!buf)
		return evbuffer_add(c->out, pc->data, pc->len) == 0;
	/* Inside its buffer: tcp_conn_send_record() checked every piece first. */
	gw_buf_get(buf);
	rc = evbuffer_add_reference(c->out, buf->base + pc->off, pc->len, tcp_conn_put_ref, buf);
	if (rc == 0)
		return true;
	/* libevent does not call the cleanup when adding fails. */
	gw_buf_put(buf);
	return false;
}

int tcp_conn_send_record(struct tcp_conn *c, const struct tcp_piece *pieces, unsigned int n)
{
	uint8_t mark[RM_MARK_SIZE];
	uint64_t total = 0;
	size_t queued;

	if (c->state != TCP_CONN_OPEN) {
		errno = ENOTCONN;
		return -1;
	}
	for (unsigned int i = 0; i < n; i++) {
		const struct tcp_piece *pc = &pieces[i];
		/*
		 * A run-time check in every build, before anything is queued
		 * (the stream stays whole): a piece outside its buffer would
		 * send what lies beyond it, another session's record, to the peer.
		 */
		if (pc->buf && (uint64_t)pc->off + pc->len > pc->buf->size) {
			gw_err("tcp: a piece of %u bytes at %u lies outside its %u-byte buffer: "
			       "record not sent",
			       pc->len, pc->off, pc->buf->size);
			errno = EFAULT;
			return -1;
		}
		total += pc->len;
	}
	if (total > RM_LEN_MASK) {
		errno = EMSGSIZE;
		return -1;
	}
	queued = evbuffer_get_length(c->out);
	if (c->cfg.out_max != 0 && queued + RM_MARK_SIZE + total > c->cfg.out_max) {
		errno = ENOBUFS;
		return -1;
	}

	tcp_conn_hold(c);
	rm_encode_mark(mark, (uint32_t)total, true);
	bool ok = evbuffer_add(c->out, mark, sizeof(mark)) == 0;
	for (unsigned int i = 0; ok && i < n; i++)
		ok = tcp_conn_add_piece(c, &pieces[i]);
	if (!ok) {
		/* Part of a record is queued: the stream cannot be repaired. */
		gw_err("tcp: out of memory queueing a record, closing");
		tcp_conn_fail(c, TCP_CLOSE_ERROR, ENOMEM, RM_OK);
		tcp_conn_unhold(c);
		errno = ENOMEM;
		return -1;
	}
	c->stats.records_out++;
	tcp_conn_schedule_flush(c);
	tcp_conn_check_congestion(c);
	tcp_conn_unhold(c);
	return 0;
}

int tcp_conn_send_copy(struct tcp_conn *c, const void *data, size_t len)
{
	struct tcp_piece pc = { .data = data, .len = (uint32_t)len };

	if (len > RM_LEN_MASK) {
		errno = EMSGSIZE;
		return -1;
	}
	return tcp_conn_send_record(c, &pc, 1);
}

int tcp_conn_send_ref(struct tcp_conn *c, struct gw_buf *buf, uint32_t off, uint32_t len)
{
	struct tcp_piece pc = { .buf = buf, .off = off, .len = len };

	return tcp_conn_send_record(c, &pc, 1);
}

/* ---- closing ------------------------------------------------------------- */

static void tcp_conn_on_close_timer(evutil_socket_t fd, short what, void *arg)
{
	struct tcp_conn *c = arg;
	char peer[NI_MAXHOST + NI_MAXSERV + 4];

	(void)fd;
	(void)what;
	tcp_conn_hold(c);
	gw_info("tcp %s: close did not complete in %u ms, resetting",
		tcp_conn_peer(c, peer, sizeof(peer)), c->cfg.close_timeout_ms);
	tcp_conn_fail(c, TCP_CLOSE_TIMEOUT, ETIMEDOUT, RM_OK);
	tcp_conn_unhold(c);
}

void tcp_conn_close(struct tcp_conn *c)
{
	if (c->state != TCP_CONN_OPEN)
		return;
	c->state = TCP_CONN_FLUSHING;
	tcp_conn_drop_rx(c);
	tcp_conn_update_read(c);
	if (c->cfg.close_timeout_ms != 0) {
		struct timeval tv = gw_ms_timeval(c->cfg.close_timeout_ms);

		evtimer_add(c->close_timer, &tv);
	}
	/*
	 * Flush and half-close from the loop: closed() must not run inside
	 * the owner's own call. With write_ev added, the socket's room does it.
	 */
	tcp_conn_schedule_flush(c);
}

void tcp_conn_abort(struct tcp_conn *c)
{
	tcp_conn_teardown(c, true);
}

void tcp_conn_free(struct tcp_conn *c)
{
	if (!c)
		return;
	tcp_conn_abort(c);
	if (c->depth > 0) {
		c->free_pending = true;
		return;
	}
	tcp_conn_destroy(c);
}

/* ---- setup and queries --------------------------------------------------- */

struct tcp_conn *tcp_conn_new(struct event_base *base, evutil_socket_t fd,
			      const struct tcp_conn_config *cfg, struct gw_buf_source *src,
			      const struct tcp_conn_ops *ops, void *arg)
{
	struct tcp_conn *c;
	int one = 1;

	assert(ops->record != NULL);
	if (evutil_make_socket_nonblocking(fd) < 0)
		return NULL;
	/* Fails harmlessly on non-TCP sockets (socketpairs in tests). */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* Without it the reads carry no time, and the waits are unknown: nothing else changes. */
	if (cfg->rx_timestamps &&
	    setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) != 0)
		gw_debug("tcp: SO_TIMESTAMPNS: %s", strerror(errno));

	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->fd = fd;
	c->cfg = *cfg;
	c->rx_wait_us = TCP_CONN_RX_WAIT_UNKNOWN;
	if (c->cfg.records_per_turn == 0)
		c->cfg.records_per_turn = TCP_CONN_RECORDS_PER_TURN_DEFAULT;
	if (c->cfg.out_low > c->cfg.out_high)
		c->cfg.out_low = c->cfg.out_high;
	c->src = src;
	c->ops = *ops;
	c->arg = arg;
	c->read_ev = event_new(base, fd, EV_READ | EV_PERSIST, tcp_conn_on_read, c);
	c->write_ev = event_new(base, fd, EV_WRITE | EV_PERSIST, tcp_conn_on_write, c);
	c->flush_ev = event_new(base, -1, 0, tcp_conn_on_flush, c);
	c->yield_ev = evtimer_new(base, tcp_conn_on_yield, c);
	c->close_timer = evtimer_new(base, tcp_conn_on_close_timer, c);
	c->record_timer = evtimer_new(base, tcp_conn_on_record_timer, c);
	c->out = evbuffer_new();
	if (!c->read_ev || !c->write_ev || !c->flush_ev || !c->yield_ev || !c->close_timer ||
	    !c->record_timer || !c->out) {
		if (c->read_ev)
			event_free(c->read_ev);
		if (c->write_ev)
			event_free(c->write_ev);
		if (c->flush_ev)
			event_free(c->flush_ev);
		if (c->yield_ev)
			event_free(c->yield_ev);
		if (c->close_timer)
			event_free(c->close_timer);
		if (c->record_timer)
			event_free(c->record_timer);
		if (c->out)
			evbuffer_free(c->out);
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	tcp_conn_init_parser(c);
	c->state = TCP_CONN_OPEN;
	tcp_conn_update_read(c);
	return c;
}

size_t tcp_conn_output_queued(const struct tcp_conn *c)
{
	return evbuffer_get_length(c->out);
}

bool tcp_conn_output_congested(const struct tcp_conn *c)
{
	return c->congested;
}

bool tcp_conn_write_waiting(const struct tcp_conn *c)
{
	return c->write_armed;
}

bool tcp_conn_read_paused(const struct tcp_conn *c)
{
	return c->state != TCP_CONN_OPEN || c->paused != 0;
}

evutil_socket_t tcp_conn_fd(const struct tcp_conn *c)
{
	return c->fd;
}

uint64_t tcp_conn_rx_wait_us(const struct tcp_conn *c)
{
	return c->rx_wait_us;
}

const struct tcp_conn_stats *tcp_conn_stats(const struct tcp_conn *c)
{
	return &c->stats;
}
