/* SPDX-License-Identifier: MIT */
/*
 * bench_tcp_side: what the gateway's thread spends on the TCP side, in the
 * kernel's TCP path and in tcp/tcp_conn.c, per RPC and per byte, measured
 * natively on loopback (no RDMA: the other side of the gateway is left out).
 *
 * The gateway's end is the project's own connection module (tcp_conn on an
 * event_base, as in the gateway): records are read into buffers from a
 * recycling buffer source (the gateway's registered pool, without the
 * registration), each record is answered at once with a reply record sent
 * by reference (sendmsg() from where it lies, as READ data and inline
 * replies leave the gateway), and the record's buffer is put. A peer thread
 * plays the NFS client on a loopback TCP connection with blocking sockets:
 * it keeps a window of calls outstanding and sends one more call for each
 * reply it reads.
 *
 * Shapes:
 *   ping-pong   200-byte call, 120-byte reply, one call outstanding
 *   pipelined   the same, 32 calls outstanding (a turn takes many records,
 *               replies queued in one pass leave in one sendmsg())
 *   WRITE-like  1 MiB + 200-byte calls (one kernel-to-user copy into the
 *               record's buffer), 120-byte replies, 4 outstanding
 *   READ-like   200-byte calls, 1 MiB + 120-byte replies sent by reference
 *               from a user buffer with sendmsg(), 4 outstanding
 *   4 KiB       WRITE-like and READ-like with 4 KiB of data, one call
 *               outstanding and 32
 *
 * "gateway CPU" is the event loop thread's own CPU time
 * (CLOCK_THREAD_CPUTIME_ID) between two records delivered in the steady
 * state, divided by the records delivered in between; the user/system
 * split is getrusage(RUSAGE_THREAD), sampled by the tick. The peer's
 * CPU is given too: on loopback the receiving socket's TCP processing runs
 * in softirq context inside the sender's sendmsg(), so each side pays part
 * of the other's (see docs/performance.md).
 *
 *   bench_tcp_side [SECONDS [SHAPE]]   seconds per shape (default 2); only
 *                                      the shapes whose name holds SHAPE
 *
 * Per RPC it also prints the read() calls on the gateway's socket and the
 * bytes the record parser moved (tcp_conn_stats.reads and rx_moved).
 *
 * Build with -DCMAKE_BUILD_TYPE=Release. It prints figures; it never passes
 * or fails on speed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "common/buf.h"
#include "common/log.h"
#include "common/xdr.h"
#include "tcp/record.h"
#include "tcp/tcp_conn.h"

#define SMALL_CALL  200u
#define SMALL_REPLY 120u
#define BULK	    (1u << 20)
#define SMALL_IO    4096u
#define WARMUP	    64u

static double now_s(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* ---- a recycling buffer source: the pool's two classes, unregistered ---- */

struct pool_buf {
	struct gw_buf b;
	struct pool_buf *next;
};

struct pool {
	struct gw_buf_source src;
	uint32_t small_size;
	uint32_t big_size;
	struct pool_buf *free_small;
	struct pool_buf *free_big;
	unsigned int made;
};

static void pool_free(struct gw_buf *b)
{
	struct pool_buf *pb = (struct pool_buf *)b;
	struct pool *p = b->pool;
	struct pool_buf **head = b->size == p->small_size ? &p->free_small : &p->free_big;

	pb->next = *head;
	*head = pb;
}

static struct gw_buf *pool_alloc(struct gw_buf_source *src, size_t min_size)
{
	struct pool *p = (struct pool *)src;
	bool small = min_size <= p->small_size;
	struct pool_buf **head = small ? &p->free_small : &p->free_big;
	struct pool_buf *pb = *head;

	if (min_size > p->big_size)
		return NULL;
	if (pb) {
		*head = pb->next;
	} else {
		pb = calloc(1, sizeof(*pb));
		if (!pb)
			die("calloc");
		pb->b.size = small ? p->small_size : p->big_size;
		pb->b.base = malloc(pb->b.size);
		if (!pb->b.base)
			die("malloc");
		/* Touch it now: a registered pool is resident. */
		memset(pb->b.base, 0, pb->b.size);
		pb->b.free_fn = pool_free;
		pb->b.pool = p;
		p->made++;
	}
	pb->b.refs = 1;
	return &pb->b;
}

static void pool_destroy(struct pool *p)
{
	struct pool_buf *lists[2] = { p->free_small, p->free_big };

	for (int i = 0; i < 2; i++) {
		while (lists[i]) {
			struct pool_buf *next = lists[i]->next;

			free(lists[i]->b.base);
			free(lists[i]);
			lists[i] = next;
		}
	}
}

/* ---- one shape ------------------------------------------------------------ */

struct shape {
	const char *name;
	uint32_t call_len;  /* record payload, peer to gateway */
	uint32_t reply_len; /* record payload, gateway to peer */
	unsigned int window;
};

struct sample {
	double wall;
	double cpu;
	double utime;
	double stime;
	uint64_t records;
	struct tcp_conn_stats st;
};

struct result {
	uint64_t records;
	double wall;
	double cpu;
	double utime;
	double stime;
	uint64_t reads_bytes;
	uint64_t writes;
	uint64_t reads;
	uint64_t moved;
	uint64_t bytes_out;
	double peer_cpu;
	uint64_t peer_replies;
};

struct run {
	const struct shape *sh;
	double seconds;
	struct event_base *base;
	struct tcp_conn *conn;
	struct gw_buf reply;
	uint64_t records;
	bool measuring;
	bool done;
	struct sample s0, s1;
	/* Gateway to peer: 1 measuring, 2 stop sending calls. */
	atomic_int phase;
	/* Peer side. */
	int peer_fd;
	double peer_cpu;
	uint64_t peer_replies;
	int peer_err;
};

static void take_sample(struct run *r, struct sample *s)
{
	struct rusage ru;

	s->wall = now_s(CLOCK_MONOTONIC);
	s->cpu = now_s(CLOCK_THREAD_CPUTIME_ID);
	if (getrusage(RUSAGE_THREAD, &ru) != 0)
		die("getrusage");
	s->utime = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6;
	s->stime = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
	s->records = r->records;
	s->st = *tcp_conn_stats(r->conn);
}

static void noop_free(struct gw_buf *b)
{
	(void)b;
}

static void on_record(struct tcp_conn *c, struct gw_buf *buf, uint32_t off, uint32_t len, void *arg)
{
	struct run *r = arg;

	(void)off;
	if (len != r->sh->call_len) {
		fprintf(stderr, "bench_tcp_side: record of %u bytes, expected %u\n", len,
			r->sh->call_len);
		exit(1);
	}
	if (tcp_conn_send_ref(c, &r->reply, 0, r->sh->reply_len) != 0)
		die("tcp_conn_send_ref");
	gw_buf_put(buf);
	r->records++;
	if (r->done)
		return;
	if (!r->measuring) {
		if (r->records == WARMUP) {
			take_sample(r, &r->s0);
			r->measuring = true;
			atomic_store(&r->phase, 1);
		}
		return;
	}
	if (now_s(CLOCK_MONOTONIC) - r->s0.wall >= r->seconds) {
		take_sample(r, &r->s1);
		r->done = true;
		atomic_store(&r->phase, 2);
	}
}

static void on_closed(struct tcp_conn *c, const struct tcp_close_info *why, void *arg)
{
	struct run *r = arg;

	(void)c;
	if (why->reason != TCP_CLOSE_EOF)
		fprintf(stderr, "bench_tcp_side: connection closed: %s (%s)\n",
			tcp_close_reason_name(why->reason), strerror(why->err));
	event_base_loopbreak(r->base);
}

/* ---- the peer: an NFS client keeping a window of calls outstanding -------- */

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void *peer_main(void *arg)
{
	struct run *r = arg;
	const struct shape *sh = r->sh;
	size_t rec = RM_MARK_SIZE + sh->call_len;
	/* Small calls: a window's worth back to back, sent in one write. */
	unsigned int batch = sh->call_len < 65536 ? sh->window : 1;
	size_t rbuf_size = (size_t)BULK + 65536;
	uint8_t *calls = malloc(rec * batch);
	uint8_t *rbuf = malloc(rbuf_size);
	unsigned int outstanding = 0, to_send = sh->window;
	uint32_t hdr_got = 0, body_left = 0;
	uint8_t hdr[4];
	uint64_t replies = 0, replies0 = 0;
	double cpu0 = 0;
	int seen = 0;

	if (!calls || !rbuf)
		die("malloc");
	for (unsigned int i = 0; i < batch; i++) {
		rm_encode_mark(calls + i * rec, sh->call_len, true);
		memset(calls + i * rec + RM_MARK_SIZE, (int)(0x40 + i), sh->call_len);
	}
	for (;;) {
		int phase = atomic_load(&r->phase);

		if (phase != seen) {
			if (seen == 0) {
				cpu0 = now_s(CLOCK_THREAD_CPUTIME_ID);
				replies0 = replies;
			}
			if (phase == 2) {
				r->peer_cpu = now_s(CLOCK_THREAD_CPUTIME_ID) - cpu0;
				r->peer_replies = replies - replies0;
			}
			seen = phase;
		}
		if (seen == 2)
			to_send = 0;
		while (to_send > 0) {
			unsigned int k = to_send < batch ? to_send : batch;

			if (write_all(r->peer_fd, calls, rec * k) != 0)
				goto fail;
			to_send -= k;
			outstanding += k;
		}
		if (outstanding == 0)
			break;

		ssize_t n = read(r->peer_fd, rbuf, rbuf_size);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			goto fail;
		for (size_t i = 0; i < (size_t)n;) {
			if (body_left == 0 && hdr_got < 4) {
				hdr[hdr_got++] = rbuf[i++];
				if (hdr_got == 4) {
					body_left = xdr_get32(hdr) & RM_LEN_MASK;
					if (body_left != sh->reply_len)
						goto fail;
				}
				continue;
			}
			size_t take = (size_t)n - i < body_left ? (size_t)n - i : body_left;

			i += take;
			body_left -= (uint32_t)take;
			if (body_left == 0) {
				hdr_got = 0;
				replies++;
				outstanding--;
				to_send++;
			}
		}
	}
	shutdown(r->peer_fd, SHUT_WR);
	/* Wait for the gateway's side to close. */
	while (read(r->peer_fd, rbuf, rbuf_size) > 0)
		;
	close(r->peer_fd);
	free(calls);
	free(rbuf);
	return NULL;
fail:
	r->peer_err = errno ? errno : EPROTO;
	fprintf(stderr, "bench_tcp_side: peer: %s\n", strerror(r->peer_err));
	exit(1);
}

/* ---- a loopback connection ------------------------------------------------ */

static void connect_pair(int *gw_fd, int *peer_fd)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	int one = 1;
	int lfd = socket(AF_INET, SOCK_STREAM, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(lfd, 1) != 0 ||
	    getsockname(lfd, (struct sockaddr *)&sa, &sl) != 0)
		die("listen");
	*peer_fd = socket(AF_INET, SOCK_STREAM, 0);
	if (*peer_fd < 0 || connect(*peer_fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		die("connect");
	setsockopt(*peer_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	*gw_fd = accept(lfd, NULL, NULL);
	if (*gw_fd < 0)
		die("accept");
	close(lfd);
}

static void run_shape(const struct shape *sh, double seconds, struct result *res)
{
	static const struct tcp_conn_ops ops = { .record = on_record, .closed = on_closed };
	struct tcp_conn_config cfg;
	struct pool pool = { .src.alloc = pool_alloc };
	struct run r = { .sh = sh, .seconds = seconds };
	pthread_t peer;
	int gw_fd;

	/* As the gateway's routes: defaults with a 1 MiB + 4 KiB record limit. */
	tcp_conn_config_default(&cfg);
	pool.small_size = cfg.recv_size;
	pool.big_size = tcp_conn_rx_buffer_size(&cfg);

	r.reply.size = sh->reply_len;
	r.reply.base = malloc(sh->reply_len);
	if (!r.reply.base)
		die("malloc");
	memset(r.reply.base, 0x5a, sh->reply_len);
	r.reply.refs = 1;
	r.reply.free_fn = noop_free;

	r.base = event_base_new();
	if (!r.base)
		die("event_base_new");
	connect_pair(&gw_fd, &r.peer_fd);
	r.conn = tcp_conn_new(r.base, gw_fd, &cfg, &pool.src, &ops, &r);
	if (!r.conn)
		die("tcp_conn_new");
	if (pthread_create(&peer, NULL, peer_main, &r) != 0)
		die("pthread_create");
	event_base_dispatch(r.base);
	pthread_join(peer, NULL);
	if (!r.done) {
		fprintf(stderr, "bench_tcp_side: %s: the run ended early\n", sh->name);
		exit(1);
	}
	res->records = r.s1.records - r.s0.records;
	res->wall = r.s1.wall - r.s0.wall;
	res->cpu = r.s1.cpu - r.s0.cpu;
	res->utime = r.s1.utime - r.s0.utime;
	res->stime = r.s1.stime - r.s0.stime;
	res->reads_bytes = r.s1.st.bytes_in - r.s0.st.bytes_in;
	res->writes = r.s1.st.writes - r.s0.st.writes;
	res->reads = r.s1.st.reads - r.s0.st.reads;
	res->moved = r.s1.st.rx_moved - r.s0.st.rx_moved;
	res->bytes_out = r.s1.st.bytes_out - r.s0.st.bytes_out;
	res->peer_cpu = r.peer_cpu;
	res->peer_replies = r.peer_replies;

	tcp_conn_free(r.conn);
	event_base_free(r.base);
	gw_buf_put(&r.reply);
	free(r.reply.base);
	pool_destroy(&pool);
}

int main(int argc, char **argv)
{
	static const struct shape shapes[] = {
		{ "ping-pong 200 B / 120 B", SMALL_CALL, SMALL_REPLY, 1 },
		{ "pipelined x32 200 B / 120 B", SMALL_CALL, SMALL_REPLY, 32 },
		{ "WRITE-like 1 MiB in", BULK + SMALL_CALL, SMALL_REPLY, 4 },
		{ "READ-like 1 MiB out", SMALL_CALL, BULK + SMALL_REPLY, 4 },
		{ "WRITE-like 4 KiB ping-pong", SMALL_IO + SMALL_CALL, SMALL_REPLY, 1 },
		{ "WRITE-like 4 KiB x32", SMALL_IO + SMALL_CALL, SMALL_REPLY, 32 },
		{ "READ-like 4 KiB ping-pong", SMALL_CALL, SMALL_IO + SMALL_REPLY, 1 },
		{ "READ-like 4 KiB x32", SMALL_CALL, SMALL_IO + SMALL_REPLY, 32 },
	};
	double seconds = argc > 1 ? atof(argv[1]) : 2;
	const char *only = argc > 2 ? argv[2] : NULL;

	if (seconds <= 0) {
		fprintf(stderr, "usage: bench_tcp_side [SECONDS [SHAPE-SUBSTRING]]\n");
		return 2;
	}
	gw_log_set_level(GW_LOG_WARN);
	printf("gateway thread CPU (CLOCK_THREAD_CPUTIME_ID) on loopback TCP, tcp_conn, "
	       "%.1f s per shape\n\n",
	       seconds);
	printf("%-28s %9s %8s %7s %9s %9s %8s %8s %8s %8s %9s\n", "shape", "RPCs", "us/RPC", "sys%",
	       "ns/byte", "GB/s/core", "reads", "moved B", "writes", "busy%", "peer us");
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		const struct shape *sh = &shapes[i];
		struct result res;
		double us, bytes = 0, ns_b = 0, gbs = 0, sys;

		if (only && !strstr(sh->name, only))
			continue;
		run_shape(sh, seconds, &res);
		us = res.cpu * 1e6 / (double)res.records;
		/* The bulk direction's bytes on the wire: record payload and mark. */
		if (sh->call_len >= BULK)
			bytes = (double)res.reads_bytes;
		else if (sh->reply_len >= BULK)
			bytes = (double)res.bytes_out;
		if (bytes > 0) {
			ns_b = res.cpu * 1e9 / bytes;
			gbs = bytes / res.cpu * 1e-9;
		}
		sys = res.utime + res.stime > 0 ? 100.0 * res.stime / (res.utime + res.stime) : 0;
		printf("%-28s %9llu %8.2f %7.0f ", sh->name, (unsigned long long)res.records, us,
		       sys);
		if (bytes > 0)
			printf("%9.3f %9.2f ", ns_b, gbs);
		else
			printf("%9s %9s ", "-", "-");
		printf("%8.3f %8.1f %8.2f %8.0f %9.2f\n", (double)res.reads / (double)res.records,
		       (double)res.moved / (double)res.records,
		       (double)res.writes / (double)res.records, 100.0 * res.cpu / res.wall,
		       res.peer_replies ? res.peer_cpu * 1e6 / (double)res.peer_replies : 0.0);
	}
	printf("\nus/RPC: gateway thread CPU per call+reply; sys%%: its system share "
	       "(getrusage, tick-sampled);\n"
	       "ns/byte, GB/s/core: per byte of the bulk direction (1 MiB records);\n"
	       "reads: read() calls per RPC; moved B: bytes the record parser moved per RPC "
	       "(rx_moved);\n"
	       "writes: sendmsg() calls per RPC; busy%%: gateway thread CPU / wall time;\n"
	       "peer us: the client thread's CPU per RPC (on loopback it runs the gateway "
	       "socket's receive\nprocessing inside its sends, and the gateway runs the "
	       "peer's inside its own).\n");
	return 0;
}
