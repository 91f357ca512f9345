/* SPDX-License-Identifier: MIT */
/*
 * rconn_check SERVER_ADDR [CLIENT_ADDR]: exercises rdma/conn on a real device
 * (rxe in the test guest), both ends in one process and one event loop.
 *
 *  1. connect with private data; each side sees the other's bytes;
 *  2. the client sends a message, the server receives it;
 *  3. the client exposes a buffer for remote read; the server RDMA-Reads it;
 *  4. the client exposes a buffer for remote write; the server RDMA-Writes it
 *     and then Sends; the client sees the data;
 *  5. the client fences both windows; the server's next Read must fail with
 *     a remote access error, which fails the server's connection, and the
 *     client then sees a disconnect;
 *  6. every signaled work request completed exactly once and every pool
 *     buffer came back.
 * Prints one line per step and exits 0 only when all hold.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "common/log.h"
#include "tests/e2e/progs/peer.h"

#define PORT	    7471
#define PATTERN_LEN 8192

struct msg {
	uint32_t kind; /* 1 hello, 2 read this, 3 write there, 4 fenced, 5 written */
	uint32_t rkey;
	uint64_t addr;
	uint32_t len;
};

struct side {
	const char *name;
	struct rconn *conn;
	struct rdma_ctx *ctx;
	struct gw_buf *data;
	struct rconn_exposure exp[2];
	struct rconn_wr wr;
	struct rconn_wr fence_wr;
	int wr_done;
	enum ibv_wc_status last_status;
	bool established;
	bool closed;
	enum rconn_close_reason reason;
	uint8_t pdata[8];
	uint8_t plen;
};

static struct side server = { .name = "server" }, client = { .name = "client" };
static struct event_base *base;
static struct msg last_remote; /* what the client advertised for reading */

/* A Send that owns its buffer until its completion. */
struct sent {
	struct rconn_wr wr;
	struct gw_buf *buf;
	void (*then)(enum ibv_wc_status st);
};

static int sends_outstanding;

static void sent_done(struct rconn_wr *wr, enum ibv_wc_status st)
{
	struct sent *s = (struct sent *)wr;
	gw_buf_put(s->buf);
	sends_outstanding--;
	if (s->then)
		s->then(st);
	free(s);
}

static void send_msg_then(struct rconn *c, const struct msg *m, void (*then)(enum ibv_wc_status))
{
	struct sent *s = calloc(1, sizeof(*s));
	s->buf = rdma_pool_alloc(rdma_dev_pool(rconn_device(c)), sizeof(*m));
	s->wr.done = sent_done;
	s->then = then;
	memcpy(s->buf->base, m, sizeof(*m));
	struct ibv_sge sge = { (uintptr_t)s->buf->base, sizeof(*m), s->buf->lkey };
	sends_outstanding++;
	if (rconn_send(c, &sge, 1, 0, &s->wr) != 0) {
		CHECK(0, "send posted");
		sent_done(&s->wr, IBV_WC_GENERAL_ERR);
	}
}

static void send_msg(struct side *s, const struct msg *m)
{
	send_msg_then(s->conn, m, NULL);
}

static void server_read_done(struct rconn_wr *wr, enum ibv_wc_status st);

static void server_read(void)
{
	struct ibv_sge sge = { (uintptr_t)server.data->base, last_remote.len, server.data->lkey };
	memset(server.data->base, 0, last_remote.len);
	server.wr.done = server_read_done;
	int err = rconn_read(server.conn, &sge, 1, last_remote.rkey, last_remote.addr, &server.wr);
	if (err)
		CHECK(0, "server: read posted (%d)", err);
}

static int server_reads;

static void server_read_done(struct rconn_wr *wr, enum ibv_wc_status st)
{
	server.wr_done++;
	server.last_status = st;
	server_reads++;
	if (server_reads == 1) {
		bool same = true;
		for (uint32_t i = 0; i < last_remote.len; i++)
			same &= server.data->base[i] == (uint8_t)(i * 7 + 1);
		CHECK(st == IBV_WC_SUCCESS && same,
		      "server: RDMA Read through the window got the data (%s)",
		      ibv_wc_status_str(st));
	} else {
		CHECK(st != IBV_WC_SUCCESS, "server: RDMA Read after the fence failed (%s)",
		      ibv_wc_status_str(st));
	}
}

static void write_then_send_done(enum ibv_wc_status st)
{
	CHECK(st == IBV_WC_SUCCESS, "server: RDMA Write + Send completed (%s)",
	      ibv_wc_status_str(st));
}

static void server_recv(struct rconn *c, void *owner, struct gw_buf *buf, uint32_t len,
			uint32_t inv)
{
	struct msg m;
	memcpy(&m, buf->base, sizeof(m));
	gw_buf_put(buf);
	if (m.kind == 1) {
		CHECK(len == sizeof(m), "server: received the client's message");
	} else if (m.kind == 2) {
		last_remote = m;
		server_read();
	} else if (m.kind == 3) {
		/* The second half: the first is the target of a Read in flight. */
		uint8_t *src = server.data->base + PATTERN_LEN;
		for (uint32_t i = 0; i < m.len; i++)
			src[i] = (uint8_t)(i * 3 + 5);
		struct ibv_sge sge = { (uintptr_t)src, m.len, server.data->lkey };
		if (rconn_write(c, &sge, 1, m.rkey, m.addr, NULL) != 0)
			CHECK(0, "server: write posted");
		struct msg done = { .kind = 5 };
		send_msg_then(c, &done, write_then_send_done);
	} else if (m.kind == 4) {
		server_read(); /* must fail now */
	}
}

static void fence_done(struct rconn_wr *wr, enum ibv_wc_status st)
{
	client.wr_done++;
	CHECK(st == IBV_WC_SUCCESS, "client: windows invalidated (%s)", ibv_wc_status_str(st));
	struct msg m = { .kind = 4 };
	send_msg(&client, &m);
}

static void client_recv(struct rconn *c, void *owner, struct gw_buf *buf, uint32_t len,
			uint32_t inv)
{
	struct msg m;
	memcpy(&m, buf->base, sizeof(m));
	gw_buf_put(buf);
	if (m.kind != 5)
		return;
	bool same = true;
	uint8_t *w = client.data->base + PATTERN_LEN;
	for (uint32_t i = 0; i < 1000; i++)
		same &= w[i] == (uint8_t)(i * 3 + 5);
	CHECK(same, "client: the server's RDMA Write landed in the exposed window");
	CHECK(w[1000] == 0xee, "client: nothing written past the window");
	client.fence_wr.done = fence_done;
	int r = rconn_fence(c, client.exp, 2, 0, &client.fence_wr);
	CHECK(r == 0, "client: fence posted");
}

static void client_established(struct rconn *c, void *owner, const uint8_t *p, uint8_t len)
{
	client.established = true;
	CHECK(len >= 8 && memcmp(p, "SRVDATA!", 8) == 0, "client: got the server's private data");
	struct msg m = { .kind = 1 };
	send_msg(&client, &m);

	client.data = rdma_pool_alloc(rdma_dev_pool(rconn_device(c)), 2 * PATTERN_LEN);
	for (uint32_t i = 0; i < PATTERN_LEN; i++)
		client.data->base[i] = (uint8_t)(i * 7 + 1);
	memset(client.data->base + PATTERN_LEN, 0xee, PATTERN_LEN);
	int e1 = rconn_expose(c, client.data, 0, PATTERN_LEN, RCONN_REMOTE_READ, &client.exp[0]);
	int e2 =
		rconn_expose(c, client.data, PATTERN_LEN, 1000, RCONN_REMOTE_WRITE, &client.exp[1]);
	CHECK(e1 == 0 && e2 == 0 && client.exp[0].rkey != client.exp[1].rkey,
	      "client: two windows bound with distinct rkeys");
	struct msg r = { .kind = 2,
			 .rkey = client.exp[0].rkey,
			 .addr = client.exp[0].addr,
			 .len = PATTERN_LEN };
	send_msg(&client, &r);
	struct msg w = {
		.kind = 3, .rkey = client.exp[1].rkey, .addr = client.exp[1].addr, .len = 1000
	};
	send_msg(&client, &w);
}

static void server_established(struct rconn *c, void *owner, const uint8_t *p, uint8_t len)
{
	server.established = true;
	server.conn = c;
	server.data = rdma_pool_alloc(rdma_dev_pool(rconn_device(c)), 2 * PATTERN_LEN);
}

static void closed_cb(struct rconn *c, void *owner, enum rconn_close_reason reason)
{
	struct side *s = owner;
	s->closed = true;
	s->reason = reason;
	printf("%s: closed: %s\n", s->name, rconn_close_reason_str(reason));
	if (server.closed && client.closed)
		event_base_loopexit(base, NULL);
}

static const struct rconn_ops client_ops = { client_established, client_recv, closed_cb };
static const struct rconn_ops server_ops = { server_established, server_recv, closed_cb };

static bool accept_cb(struct rlistener *l, void *owner, const struct sockaddr *peer,
		      const uint8_t *pdata, uint8_t plen, const struct rdma_conn_param *req,
		      struct rconn_params *params, const struct rconn_ops **ops, void **conn_owner)
{
	CHECK(plen >= 8 && memcmp(pdata, "CLTDATA!", 8) == 0,
	      "server: got the client's private data");
	CHECK(req->responder_resources >= 1, "server: client offers responder resources");
	memcpy(params->private_data, "SRVDATA!", 8);
	params->private_data_len = 8;
	*ops = &server_ops;
	*conn_owner = &server;
	return true;
}

static void conn_params(struct rconn_params *p, uint32_t nmw)
{
	memset(p, 0, sizeof(*p));
	p->recv_count = 8;
	p->recv_size = 4096;
	p->send_depth = 64;
	p->max_send_sge = 4;
	p->nmw = nmw;
	p->responder_resources = 4;
	p->initiator_depth = 4;
	p->connect_timeout_ms = 5000;
}

static void on_timeout(evutil_socket_t fd, short w, void *arg)
{
	printf("FAIL: timed out\n");
	failures++;
	event_base_loopexit(base, NULL);
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: rconn_check SERVER_ADDR [CLIENT_ADDR]\n");
		return 2;
	}
	gw_log_set_level(GW_LOG_DEBUG);
	base = event_base_new();
	struct rdma_pool_config pc;
	rdma_pool_default_config(&pc, 4096, 65536, 16);
	struct rdma_ctx *ctx = rdma_ctx_create(base, &pc);
	if (!ctx)
		return 1;

	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(PORT) };
	struct sockaddr_in ca = { .sin_family = AF_INET };
	inet_pton(AF_INET, argv[1], &sa.sin_addr);
	if (argc == 3)
		inet_pton(AF_INET, argv[2], &ca.sin_addr);

	struct rconn_params lp, cp;
	conn_params(&lp, 0);
	conn_params(&cp, 4);
	static const struct rlistener_ops lops = { .accept = accept_cb };
	struct rlistener *l = rlistener_create(ctx, (struct sockaddr *)&sa, 8, &lp, &lops, NULL);
	CHECK(l != NULL, "listener created");
	memcpy(cp.private_data, "CLTDATA!", 8);
	cp.private_data_len = 8;
	client.conn =
		rconn_connect(ctx, (struct sockaddr *)&sa,
			      argc == 3 ? (struct sockaddr *)&ca : NULL, &cp, &client_ops, &client);
	CHECK(client.conn != NULL, "connect started");

	struct event *t = evtimer_new(base, on_timeout, NULL);
	struct timeval tv = { 30, 0 };
	evtimer_add(t, &tv);
	event_base_dispatch(base);
	event_free(t);

	CHECK(server.established && client.established, "both sides established");
	CHECK(server_reads == 2, "server: two reads completed (%d)", server_reads);
	CHECK(server.reason == RCONN_CLOSE_TRANSPORT, "server: closed by the failed read");
	CHECK(client.reason == RCONN_CLOSE_DISCONNECTED, "client: saw the disconnect");
	CHECK(client.wr_done == 1, "client: fence completed once");

	struct rdma_dev *dev = rconn_device(client.conn);
	if (!dev || !server.conn) {
		printf("FAIL: no connection to check further\n");
		return 1;
	}
	gw_buf_put(client.data);
	gw_buf_put(server.data);
	rconn_destroy(client.conn);
	rconn_destroy(server.conn);
	rlistener_destroy(l);
	CHECK(sends_outstanding == 0, "every send completed once");
	struct rdma_pool_stats ps;
	rdma_pool_get_stats(rdma_dev_pool(dev), &ps);
	unsigned in_use = 0;
	for (int i = 0; i < RDMA_POOL_MAX_CLASSES; i++)
		in_use += ps.in_use[i];
	CHECK(in_use == 0, "every pool buffer came back (%u in use)", in_use);
	rdma_ctx_destroy(ctx);
	event_base_free(base);
	return failures ? 1 : 0;
}
