/* SPDX-License-Identifier: MIT */
/*
 * bench_forward: the protocol work forward mode does per RPC, without the
 * system calls and verbs around it. For an NFSv4.1 WRITE of 1 MiB (SEQUENCE,
 * PUTFH, WRITE) and a READ of 1 MiB (SEQUENCE, PUTFH, READ), as the Linux
 * client sends them, one iteration does what the gateway does for one call:
 *
 *   WRITE: ULB walk of the call, choice of a Read chunk, reduce, encode the
 *          call's transport header, XID map insert; then decode the server's
 *          reply header, check it, walk the reply, XID map remove, counters.
 *   READ:  ULB walk, choice of a Write chunk, encode the header with it, XID
 *          map insert; decode the reply header with the Write list echo, check
 *          it against the offer, walk the reduced reply to find where the data
 *          goes, splice the reply back together, XID map remove, counters.
 *
 * It prints time per RPC and instructions per RPC: from the CPU's counter
 * (perf_event_open) where the machine allows it, else by running itself
 * under `valgrind --tool=callgrind --toggle-collect=bench_one_rpc`.
 *
 *   bench_forward                 both shapes
 *   bench_forward SHAPE ITERS     one shape (what the callgrind runs do)
 *
 * Build with -DCMAKE_BUILD_TYPE=Release. It prints figures; it never passes
 * or fails on speed.
 */
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/xdr.h"
#include "gateway/counters/counters.h"
#include "gateway/maps/xidmap.h"
#include "rdma/rpcrdma_hdr.h"
#include "rdma/splice.h"
#include "ulb-rules/ulb.h"

enum { DATA = 1 << 20, MSG_MAX = DATA + 1024 };

struct xdr_w {
	uint8_t *p;
	uint32_t n;
};

static void put(struct xdr_w *w, uint32_t v)
{
	xdr_put32(w->p + w->n, v);
	w->n += 4;
}

static void put64(struct xdr_w *w, uint64_t v)
{
	put(w, (uint32_t)(v >> 32));
	put(w, (uint32_t)v);
}

static void put_bytes(struct xdr_w *w, const void *b, uint32_t len)
{
	memcpy(w->p + w->n, b, len);
	memset(w->p + w->n + len, 0, xdr_pad(len));
	w->n += xdr_align(len);
}

static const uint8_t sessionid[16] = { 0x33, 0xd6, 0x02, 0x6b, 0x20, 0xc1, 0x61, 0x4d, 1 };
static const uint8_t fh[28] = { 1, 0, 6, 0, 0x86, 0x2c, 0x92, 0x55 };

/* RPC call header with AUTH_SYS, as the Linux client sends it, then a v4.1 COMPOUND. */
static void put_compound_head(struct xdr_w *w, uint32_t xid, uint32_t nops)
{
	put(w, xid);
	put(w, 0); /* CALL */
	put(w, 2);
	put(w, 100003);
	put(w, 4);
	put(w, 1);  /* COMPOUND */
	put(w, 1);  /* AUTH_SYS */
	put(w, 28); /* stamp, "client", uid, gid, no gids */
	put(w, 0x12345678);
	put(w, 6);
	put_bytes(w, "client", 6);
	put(w, 0);
	put(w, 0);
	put(w, 0);
	put(w, 0); /* verifier AUTH_NONE */
	put(w, 0);
	put(w, 0); /* tag */
	put(w, 1); /* minorversion */
	put(w, nops);
	put(w, 53); /* SEQUENCE */
	put_bytes(w, sessionid, 16);
	put(w, 7);
	put(w, 0);
	put(w, 0);
	put(w, 0);
	put(w, 22); /* PUTFH */
	put(w, sizeof(fh));
	put_bytes(w, fh, sizeof(fh));
}

static uint32_t make_write_call(uint8_t *buf, uint32_t xid)
{
	struct xdr_w w = { buf, 0 };

	put_compound_head(&w, xid, 3);
	put(&w, 38); /* WRITE */
	put(&w, 1);  /* stateid seqid + other */
	put(&w, 0xa);
	put(&w, 0xb);
	put(&w, 0xc);
	put64(&w, 0);
	put(&w, 2); /* FILE_SYNC */
	put(&w, DATA);
	memset(buf + w.n, 0x5a, DATA);
	w.n += DATA;
	return w.n;
}

static uint32_t make_read_call(uint8_t *buf, uint32_t xid)
{
	struct xdr_w w = { buf, 0 };

	put_compound_head(&w, xid, 3);
	put(&w, 25); /* READ */
	put(&w, 1);
	put(&w, 0xa);
	put(&w, 0xb);
	put(&w, 0xc);
	put64(&w, 0);
	put(&w, DATA);
	return w.n;
}

/* The reply head: RPC accepted SUCCESS, COMPOUND status, SEQUENCE and PUTFH results. */
static void put_reply_head(struct xdr_w *w, uint32_t xid)
{
	put(w, xid);
	put(w, 1);
	put(w, 0);
	put(w, 0);
	put(w, 0);
	put(w, 0);
	put(w, 0); /* status */
	put(w, 0); /* tag */
	put(w, 3);
	put(w, 53);
	put(w, 0);
	put_bytes(w, sessionid, 16);
	put(w, 7);
	put(w, 0);
	put(w, 29);
	put(w, 29);
	put(w, 0);
	put(w, 22);
	put(w, 0);
}

static uint32_t make_write_reply(uint8_t *buf, uint32_t xid)
{
	struct xdr_w w = { buf, 0 };

	/* transport header: RDMA_MSG, no chunks */
	put(&w, xid);
	put(&w, 1);
	put(&w, 64);
	put(&w, 0);
	put(&w, 0);
	put(&w, 0);
	put(&w, 0);
	put_reply_head(&w, xid);
	put(&w, 38);
	put(&w, 0);
	put(&w, DATA);
	put(&w, 2);
	put64(&w, 0x1122334455667788ull); /* write verifier */
	return w.n;
}

/* A reduced READ reply: the data went into the Write chunk, its length stays. */
static uint32_t make_read_reply(uint8_t *buf, uint32_t xid, const struct rpcrdma_seg *seg)
{
	struct xdr_w w = { buf, 0 };

	put(&w, xid);
	put(&w, 1);
	put(&w, 64);
	put(&w, 0);
	put(&w, 0); /* no Read list */
	put(&w, 1); /* one Write chunk */
	put(&w, 1);
	put(&w, seg->handle);
	put(&w, DATA);
	put64(&w, seg->offset);
	put(&w, 0); /* end of Write list */
	put(&w, 0); /* no Reply chunk */
	put_reply_head(&w, xid);
	put(&w, 25);
	put(&w, 0);
	put(&w, 0); /* eof */
	put(&w, DATA);
	return w.n;
}

struct bench {
	struct ulb_rules *rules;
	struct ulb_sessions sessions;
	struct rpcrdma_limits limits;
	struct xidmap xids;
	struct gw_counters counters;
	uint8_t *call;
	uint32_t call_len;
	uint8_t *reply;
	uint32_t reply_len;
	uint8_t *data; /* the Write chunk's buffer */
	uint8_t hdr[1024];
	bool read;
	uint32_t xid;
};

/* The work of one RPC; callgrind counts only this function and its callees. */
__attribute__((noinline)) void bench_one_rpc(struct bench *b);
__attribute__((noinline)) void bench_one_rpc(struct bench *b)
{
	struct ulb_call call;
	struct rpcrdma_seg seg = { 0x9a4, DATA, 0x7f0000000000ull };
	struct rpcrdma_chunk_desc chunk = { 1, &seg };
	struct iovec iov[8];
	struct splice_out out = { .iov = iov, .cap = 8 };
	struct rpcrdma_read_chunk_desc rd;
	struct rpcrdma_call_desc d = { .version = RPCRDMA_V1, .xid = b->xid, .credits = 64 };

	/* The call. */
	ulb_parse_call(b->rules, &b->sessions, b->call, b->call_len, &call);
	if (b->read) {
		d.nwrites = 1;
		d.writes = &chunk;
	} else {
		struct splice_item it = { call.args[0].offset, call.args[0].length };
		splice_reduce(b->call, b->call_len, &it, 1, NULL, &out);
		rd = (struct rpcrdma_read_chunk_desc){ it.offset, 1, &seg };
		d.nreads = 1;
		d.reads = &rd;
	}
	d.proc = RPCRDMA_MSG;
	rpcrdma_encode_call(b->hdr, sizeof(b->hdr), &d);
	xidmap_insert(&b->xids, b->xid, 1);
	gw_counters_count_call(&b->counters, call.prog, call.vers, call.proc);

	/* The reply. */
	struct rpcrdma_hdr h;
	rpcrdma_hdr_decode(&h, b->reply, b->reply_len, &b->limits);
	rpcrdma_hdr_check_xid(&h, b->reply + h.hdr_len, h.inline_len);
	struct rpcrdma_offer offer = { .nwrites = b->read ? 1 : 0, .writes = &chunk };
	rpcrdma_hdr_check_reply(&h, &offer);
	xidmap_find(&b->xids, h.xid);
	struct ulb_reply rep;
	ulb_parse_reply(&call, &b->sessions, b->reply + h.hdr_len, h.inline_len, b->read ? 1 : 0,
			&rep);
	if (b->read) {
		struct splice_insert ins = { rep.items[0].offset, b->data, rep.items[0].length };
		out.cnt = 0;
		splice_rebuild_reply(b->reply + h.hdr_len, h.inline_len, &ins, 1, &out);
	}
	xidmap_remove(&b->xids, b->xid);
	gw_counters_count_reply(&b->counters, call.prog, call.vers, call.proc);
	gw_hist_add(&b->counters.gateway_us, 7);
}

static int setup(struct bench *b, bool read)
{
	char err[256];
	struct ulb_options uo = { 0 };

	memset(b, 0, sizeof(*b));
	b->rules = ulb_rules_load(&uo, err, sizeof(err));
	if (!b->rules) {
		fprintf(stderr, "bench_forward: %s\n", err);
		return -1;
	}
	ulb_sessions_add(&b->sessions, sessionid, 1049620);
	rpcrdma_limits_default(&b->limits);
	xidmap_init(&b->xids, 128);
	b->read = read;
	b->xid = 0x8a1562ab;
	b->call = malloc(MSG_MAX);
	b->reply = malloc(MSG_MAX);
	b->data = malloc(DATA);
	struct rpcrdma_seg seg = { 0x9a4, DATA, 0x7f0000000000ull };
	b->call_len = read ? make_read_call(b->call, b->xid) : make_write_call(b->call, b->xid);
	b->reply_len =
		read ? make_read_reply(b->reply, b->xid, &seg) : make_write_reply(b->reply, b->xid);
	/* Check once that every step sees what the gateway would. */
	struct ulb_call call;
	enum ulb_status st = ulb_parse_call(b->rules, &b->sessions, b->call, b->call_len, &call);
	if (st != ULB_OK || (read ? call.n_results : call.n_args) != 1) {
		fprintf(stderr, "bench_forward: the %s call does not walk (%d)\n",
			read ? "READ" : "WRITE", st);
		return -1;
	}
	return 0;
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static long perf_instructions_open(void)
{
	struct perf_event_attr a = { .type = PERF_TYPE_HARDWARE,
				     .size = sizeof(a),
				     .config = PERF_COUNT_HW_INSTRUCTIONS,
				     .disabled = 1,
				     .exclude_kernel = 1,
				     .exclude_hv = 1 };
	return syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
}

static double callgrind_instructions(const char *self, const char *shape, unsigned long iters)
{
	char out[128], file_opt[160], iters_s[32], line[512];
	snprintf(out, sizeof(out), "/tmp/bench_forward.%d.callgrind", (int)getpid());
	snprintf(file_opt, sizeof(file_opt), "--callgrind-out-file=%s", out);
	snprintf(iters_s, sizeof(iters_s), "%lu", iters);
	pid_t pid = fork();
	if (pid == 0) {
		if (!freopen("/dev/null", "w", stderr))
			_exit(127);
		execlp("valgrind", "valgrind", "--tool=callgrind", "--toggle-collect=bench_one_rpc",
		       file_opt, self, shape, iters_s, (char *)NULL);
		_exit(127);
	}
	int status;
	waitpid(pid, &status, 0);
	FILE *f = fopen(out, "r");
	double total = -1;
	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "summary:", 8) == 0)
			total = atof(line + 8);
	}
	if (f)
		fclose(f);
	unlink(out);
	return total < 0 ? -1 : total / iters;
}

static int run_shape(const char *shape, unsigned long iters, bool quiet, double *ns_per)
{
	struct bench b;
	if (setup(&b, strcmp(shape, "read") == 0) != 0)
		return -1;
	double t0 = now_ns();
	for (unsigned long i = 0; i < iters; i++)
		bench_one_rpc(&b);
	double t1 = now_ns();
	if (ns_per)
		*ns_per = (t1 - t0) / iters;
	if (!quiet && b.counters.calls != iters)
		fprintf(stderr, "bench_forward: counted %llu calls\n",
			(unsigned long long)b.counters.calls);
	ulb_rules_free(b.rules);
	xidmap_destroy(&b.xids);
	free(b.call);
	free(b.reply);
	free(b.data);
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const shapes[][2] = {
		{ "write", "NFSv4.1 WRITE 1 MiB (SEQUENCE, PUTFH, WRITE): Read chunk" },
		{ "read", "NFSv4.1 READ 1 MiB (SEQUENCE, PUTFH, READ): Write chunk" },
	};

	if (argc == 3)
		return run_shape(argv[1], strtoul(argv[2], NULL, 10), true, NULL) ? 1 : 0;

	printf("per-RPC protocol work in forward mode (no system calls, no verbs)\n");
	printf("%-7s %10s %14s  %s\n", "shape", "ns/RPC", "instr/RPC", "what");
	for (unsigned i = 0; i < 2; i++) {
		double ns = 0, instr = -1;
		if (run_shape(shapes[i][0], 200000, false, &ns) != 0)
			return 1;
		long fd = perf_instructions_open();
		if (fd >= 0) {
			struct bench b;
			setup(&b, i == 1);
			uint64_t count = 0;
			ioctl((int)fd, PERF_EVENT_IOC_RESET, 0);
			ioctl((int)fd, PERF_EVENT_IOC_ENABLE, 0);
			for (int k = 0; k < 10000; k++)
				bench_one_rpc(&b);
			ioctl((int)fd, PERF_EVENT_IOC_DISABLE, 0);
			if (read((int)fd, &count, sizeof(count)) == sizeof(count))
				instr = count / 10000.0;
			close((int)fd);
			ulb_rules_free(b.rules);
			xidmap_destroy(&b.xids);
			free(b.call);
			free(b.reply);
			free(b.data);
		} else {
			instr = callgrind_instructions(argv[0], shapes[i][0], 2000);
		}
		if (instr < 0)
			printf("%-7s %10.0f %14s  %s\n", shapes[i][0], ns, "n/a", shapes[i][1]);
		else
			printf("%-7s %10.0f %14.0f  %s\n", shapes[i][0], ns, instr, shapes[i][1]);
	}
	return 0;
}
