#include "support/tcprig.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/xdr.h"

void gwt_rig_record(struct tcp_conn *c, struct gw_buf *buf, uint32_t off, uint32_t len, void *arg)
{
	struct gwt_rig *h = arg;
	unsigned int r = h->nrec++;

	if (r >= GWT_RIG_MAX_RECS) {
		h->bad_content = true;
		gw_buf_put(buf);
		return;
	}
	h->lens[r] = len;
	h->rx_wait_us[r] = tcp_conn_rx_wait_us(c);
	if ((uint64_t)off + len > buf->size)
		h->bad_content = true;
	for (uint32_t i = 0; i < len && !h->bad_content; i++)
		if (buf->base[off + i] != gwt_pattern(r, i))
			h->bad_content = true;
	if (h->hold)
		h->held[r] = buf;
	else
		gw_buf_put(buf);
	if (h->pause_at != 0 && h->nrec == h->pause_at)
		tcp_conn_pause_read(c);
	if (h->free_at != 0 && h->nrec == h->free_at) {
		tcp_conn_free(c);
		h->c = NULL;
	}
}

void gwt_rig_pressure(struct tcp_conn *c, bool congested, void *arg)
{
	struct gwt_rig *h = arg;

	if (congested) {
		h->congested_calls++;
		h->queued_at_congested = tcp_conn_output_queued(c);
	} else {
		h->relieved_calls++;
		h->queued_at_relieved = tcp_conn_output_queued(c);
	}
}

void gwt_rig_starved(struct tcp_conn *c, void *arg)
{
	struct gwt_rig *h = arg;

	(void)c;
	h->starved_calls++;
}

/* The usual owner: free the connection when it closes. */
void gwt_rig_closed(struct tcp_conn *c, const struct tcp_close_info *why, void *arg)
{
	struct gwt_rig *h = arg;

	h->closed = true;
	h->why = *why;
	tcp_conn_free(c);
	h->c = NULL;
}

const struct tcp_conn_ops gwt_rig_ops = {
	.record = gwt_rig_record,
	.output_pressure = gwt_rig_pressure,
	.starved = gwt_rig_starved,
	.closed = gwt_rig_closed,
};

uint32_t gwt_lcg(uint32_t *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return *seed >> 8;
}

static void feed_cb(evutil_socket_t fd, short what, void *arg)
{
	struct gwt_rig *h = arg;
	size_t left = h->feed.len - h->feed_pos;
	size_t n = 1 + gwt_lcg(&h->feed_seed) % h->feed_max_chunk;
	ssize_t w;

	(void)what;
	if (left == 0) {
		event_del(h->feed_ev);
		return;
	}
	if (n > left)
		n = left;
	w = send(fd, h->feed.data + h->feed_pos, n, MSG_NOSIGNAL);
	if (w > 0)
		h->feed_pos += (size_t)w;
	else if (w < 0 && errno != EAGAIN && errno != EINTR)
		event_del(h->feed_ev);
}

static void sink_cb(evutil_socket_t fd, short what, void *arg)
{
	struct gwt_rig *h = arg;
	uint8_t buf[65536];

	(void)what;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n > 0) {
			gwt_stream_put(&h->sunk, buf, (size_t)n);
			continue;
		}
		if (n == 0)
			h->sink_eof = true;
		else if (errno == EAGAIN || errno == EINTR)
			return;
		else
			h->sink_err = errno;
		event_del(h->sink_ev);
		return;
	}
}

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
}

int gwt_sock_pair(int fds[2], bool tcp)
{
	if (!tcp)
		return socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0 ? 0 : -1;

	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	int l = socket(AF_INET, SOCK_STREAM, 0);
	int ret = -1;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (l < 0)
		return -1;
	fds[0] = fds[1] = -1;
	if (bind(l, (struct sockaddr *)&sin, sizeof(sin)) != 0 || listen(l, 1) != 0 ||
	    getsockname(l, (struct sockaddr *)&sin, &sl) != 0)
		goto out;
	fds[1] = socket(AF_INET, SOCK_STREAM, 0);
	if (fds[1] < 0 || connect(fds[1], (struct sockaddr *)&sin, sizeof(sin)) != 0)
		goto out;
	fds[0] = accept(l, NULL, NULL);
	if (fds[0] >= 0)
		ret = 0;
out:
	if (ret != 0 && fds[1] >= 0)
		close(fds[1]);
	close(l);
	return ret;
}

static void rig_abort(const char *what)
{
	fprintf(stderr, "tcprig: %s: %s\n", what, errno ? strerror(errno) : "failed");
	abort();
}

struct gwt_rig *gwt_rig_new(bool tcp)
{
	struct gwt_rig *h = calloc(1, sizeof(*h));
	struct timeval tv = { 0, 5000 };
	int fds[2];

	if (!h)
		rig_abort("calloc");
	h->base = event_base_new();
	if (!h->base)
		rig_abort("event_base_new");
	h->tick = event_new(h->base, -1, EV_PERSIST, tick_cb, NULL);
	if (!h->tick || event_add(h->tick, &tv) != 0)
		rig_abort("the tick");
	if (gwt_sock_pair(fds, tcp) != 0)
		rig_abort("the socket pair");
	h->peer = fds[1];
	if (evutil_make_socket_nonblocking(h->peer) != 0)
		rig_abort("the peer non-blocking");
	gwt_bufsrc_init(&h->src);
	tcp_conn_config_default(&h->cfg);
	h->cfg.recv_size = 512;
	h->cfg.readahead = 64;
	h->feed_max_chunk = 4096;
	h->feed_seed = 1;
	h->feed_ev = event_new(h->base, h->peer, EV_WRITE | EV_PERSIST, feed_cb, h);
	h->sink_ev = event_new(h->base, h->peer, EV_READ | EV_PERSIST, sink_cb, h);
	if (!h->feed_ev || !h->sink_ev)
		rig_abort("the peer's events");
	h->conn_fd = fds[0];
	return h;
}

int gwt_rig_start(struct gwt_rig *h)
{
	h->c = tcp_conn_new(h->base, h->conn_fd, &h->cfg, &h->src.src, &gwt_rig_ops, h);
	return h->c ? 0 : -1;
}

void gwt_rig_feed(struct gwt_rig *h, const struct gwt_stream *s)
{
	gwt_stream_put(&h->feed, s->data, s->len);
	event_add(h->feed_ev, NULL);
}

int gwt_rig_send_records(struct gwt_rig *h, unsigned int first, unsigned int n, size_t len)
{
	uint8_t *rec = malloc(len ? len : 1);
	int rc = 0, err = errno;

	if (!rec)
		abort();
	for (unsigned int r = first; r < first + n && rc == 0; r++) {
		gwt_pattern_fill(rec, r, len);
		rc = tcp_conn_send_copy(h->c, rec, len);
		err = errno;
	}
	free(rec);
	errno = err;
	return rc;
}

int gwt_rig_write_now(struct gwt_rig *h, const struct gwt_stream *s)
{
	return send(h->peer, s->data, s->len, MSG_NOSIGNAL) == (ssize_t)s->len ? 0 : -1;
}

void gwt_rig_sink(struct gwt_rig *h, bool on)
{
	if (on)
		event_add(h->sink_ev, NULL);
	else
		event_del(h->sink_ev);
}

int gwt_rig_shrink_sndbuf(struct gwt_rig *h)
{
	int sz = 4096;

	if (setsockopt(tcp_conn_fd(h->c), SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz)) != 0 ||
	    setsockopt(h->peer, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz)) != 0)
		return -1;
	return 0;
}

long gwt_rig_decode_sunk(const struct gwt_rig *h, uint32_t len_each)
{
	size_t pos = 0;
	long n = 0;

	while (pos < h->sunk.len) {
		if (h->sunk.len - pos < 4)
			return -1;
		uint32_t m = xdr_get32(h->sunk.data + pos);
		if (!(m & RM_LAST_FRAG) || (m & RM_LEN_MASK) != len_each)
			return -1;
		pos += 4;
		if (h->sunk.len - pos < len_each)
			return -1;
		for (uint32_t i = 0; i < len_each; i++)
			if (h->sunk.data[pos + i] != gwt_pattern((unsigned int)n, i))
				return -1;
		pos += len_each;
		n++;
	}
	return n;
}

int gwt_rig_free(struct gwt_rig *h)
{
	int ret;

	for (unsigned int i = 0; i < h->nrec && i < GWT_RIG_MAX_RECS; i++)
		if (h->held[i])
			gw_buf_put(h->held[i]);
	if (h->c)
		tcp_conn_free(h->c);
	/* everything the connection took from the source went back */
	ret = gwt_bufsrc_all_back(&h->src);
	event_free(h->feed_ev);
	event_free(h->sink_ev);
	event_free(h->tick);
	close(h->peer);
	event_base_free(h->base);
	free(h->feed.data);
	free(h->sunk.data);
	free(h);
	return ret;
}
