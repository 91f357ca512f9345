/* SPDX-License-Identifier: MIT */
/*
 * bench_hdr: cost of decoding one transport header, for the shapes the Linux
 * peers send (see tests/data/rpcrdma/): time per decode, and instructions
 * per decode from the CPU's counter (perf_event_open) or, where the machine
 * has none, from callgrind: the bench then runs itself under
 * `valgrind --tool=callgrind --toggle-collect=rpcrdma_hdr_decode` once per
 * shape and divides the instructions collected by the decodes made.
 *
 *   bench_hdr                 every shape
 *   bench_hdr SHAPE ITERS     one shape, ITERS decodes (what the callgrind runs do)
 *
 * Build with -DCMAKE_BUILD_TYPE=Release: figures from the Asan build measure
 * the sanitizers. It prints figures; it never passes or fails on speed.
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
#include <valgrind/valgrind.h>

#include "rdma/rpcrdma_hdr.h"

struct shape {
	const char *name;
	const char *what;
	uint32_t w[64];
	unsigned n;
	unsigned rpc; /* bytes of RPC message after the header */
};

#define XID	     0x8a1562abu
#define SEG(h, l, o) (h), (l), (uint32_t)((uint64_t)(o) >> 32), (uint32_t)(o)
#define O	     0x8a1562ab506bd800ull

static const struct shape shapes[] = {
	{ "call-inline",
	  "RDMA_MSG, no chunks (GETATTR call)",
	  { XID, 1, 128, 0, 0, 0, 0 },
	  7,
	  132 },
	{ "call-read-chunk",
	  "RDMA_MSG, Read chunk of 2 segments (WRITE call)",
	  { XID, 1, 128, 0, 1, 112, SEG(0x9a4, 131072, O), 1, 112, SEG(0x8ae, 131072, O + 131072),
	    0, 0, 0 },
	  19,
	  112 },
	{ "call-write-chunk",
	  "RDMA_MSG, Write chunk of 2 segments (READ call)",
	  { XID, 1, 128, 0, 0, 1, 2, SEG(0x9fe, 262144, O), SEG(0x756, 4, O + 0x100), 0, 0 },
	  17,
	  120 },
	{ "call-reply-chunk",
	  "RDMA_MSG, Reply chunk of 3 segments (GETACL call)",
	  { XID, 1, 128, 0, 0, 0, 1, 3, SEG(0x9fe, 256, O), SEG(0x808, 28672, O + 0x1000),
	    SEG(0x756, 4, O + 0x100) },
	  20,
	  124 },
	{ "reply-nomsg",
	  "RDMA_NOMSG, Reply chunk of 3 segments (long reply)",
	  { XID, 1, 64, 1, 0, 0, 1, 3, SEG(0x9fe, 184, O), SEG(0x808, 0, O + 0x1000),
	    SEG(0x756, 0, O + 0x100) },
	  20,
	  0 },
	{ "call-p0",
	  "RDMA_NOMSG, Position-Zero chunk and Reply chunk (long call)",
	  { XID, 1, 128, 1, 1, 0, SEG(0x123, 6000, O), 0, 0, 1, 1, SEG(0x456, 8192, O + 0x2000) },
	  18,
	  0 },
	/* Version Two (draft-cel-nfsv4-rpcrdma-version-two-01): a direction word before the lists
	 */
	{ "v2-call-inline",
	  "RDMA2_MSG, CALL, no chunks (GETATTR call)",
	  { XID, 2, 128, 0, 0, 0, 0, 0 },
	  8,
	  132 },
	{ "v2-call-read-chunk",
	  "RDMA2_MSG, CALL, Read chunk of 2 segments (WRITE call)",
	  { XID, 2, 128, 0, 0, 1, 112, SEG(0x9a4, 131072, O), 1, 112,
	    SEG(0x8ae, 131072, O + 131072), 0, 0, 0 },
	  20,
	  112 },
	{ "v2-call-write-chunk",
	  "RDMA2_MSG, CALL, Write chunk of 2 segments (READ call)",
	  { XID, 2, 128, 0, 0, 0, 1, 2, SEG(0x9fe, 262144, O), SEG(0x756, 4, O + 0x100), 0, 0 },
	  18,
	  120 },
	{ "v2-reply-nomsg",
	  "RDMA2_NOMSG, REPLY, Reply chunk of 3 segments (long reply)",
	  { XID, 2, 64, 1, 1, 0, 0, 1, 3, SEG(0x9fe, 184, O), SEG(0x808, 0, O + 0x1000),
	    SEG(0x756, 0, O + 0x100) },
	  21,
	  0 },
};

#define NSHAPES (sizeof(shapes) / sizeof(shapes[0]))

static unsigned build(const struct shape *s, uint8_t *buf)
{
	for (unsigned i = 0; i < s->n; i++)
		xdr_put32(buf + 4 * i, s->w[i]);
	memset(buf + 4 * s->n, 0, s->rpc);
	if (s->rpc)
		xdr_put32(buf + 4 * s->n, XID);
	return 4 * s->n + s->rpc;
}

/* The loop that is measured: decode, and read what a caller reads. */
static uint64_t run(const struct shape *s, unsigned long iters)
{
	static uint8_t buf[1024];
	unsigned len = build(s, buf);
	struct rpcrdma_limits lim;
	struct rpcrdma_hdr h;
	uint64_t sink = 0;

	rpcrdma_limits_default(&lim);
	lim.versions |= 1u << RPCRDMA_V2;
	for (unsigned long i = 0; i < iters; i++) {
		/* the compiler must not hoist the decode out of the loop */
		__asm__ volatile("" : : "r"(buf) : "memory");
		if (rpcrdma_hdr_decode(&h, buf, len, &lim) != RPCRDMA_OK)
			abort();
		sink += h.hdr_len + h.nreads + h.nwrites;
	}
	return sink;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Instructions per decode from the CPU's counter; < 0 when there is none. */
static double counted_instructions(const struct shape *s, unsigned long iters)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_HARDWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_HW_INSTRUCTIONS,
		.disabled = 1,
		.exclude_kernel = 1,
		.exclude_hv = 1,
	};
	uint64_t with, without;
	int fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);

	if (fd < 0)
		return -1;
	/* subtract the loop's own cost: measure iters and 2 * iters */
	ioctl(fd, PERF_EVENT_IOC_RESET, 0);
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	run(s, iters);
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	if (read(fd, &without, sizeof(without)) != sizeof(without))
		without = 0;
	ioctl(fd, PERF_EVENT_IOC_RESET, 0);
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	run(s, 2 * iters);
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	if (read(fd, &with, sizeof(with)) != sizeof(with))
		with = 0;
	close(fd);
	if (!with || !without || with < without)
		return -1;
	return (double)(with - without) / iters;
}

/*
 * Instructions per decode under callgrind: only rpcrdma_hdr_decode (with
 * what it calls) is collected, so the loop around it is not counted.
 */
static double callgrind_instructions(const char *self, const struct shape *s, unsigned long iters)
{
	char out[64], iterstr[32], line[512];
	double ir = -1;
	FILE *f;
	pid_t pid;
	int status;

	snprintf(out, sizeof(out), "/tmp/bench_hdr.%d.callgrind", (int)getpid());
	snprintf(iterstr, sizeof(iterstr), "%lu", iters);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		char file_opt[96];
		snprintf(file_opt, sizeof(file_opt), "--callgrind-out-file=%s", out);
		if (!freopen("/dev/null", "w", stderr) || !freopen("/dev/null", "w", stdout))
			_exit(127);
		execlp("valgrind", "valgrind", "--tool=callgrind",
		       "--toggle-collect=rpcrdma_hdr_decode", file_opt, self, s->name, iterstr,
		       (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		return -1;
	f = fopen(out, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "summary:", 8) == 0 || strncmp(line, "totals:", 7) == 0)
			ir = strtod(strchr(line, ':') + 1, NULL) / iters;
	}
	fclose(f);
	unlink(out);
	return ir;
}

int main(int argc, char **argv)
{
	const unsigned long iters = 2000000, cg_iters = 10000;
	int counter = 1;

	if (argc == 3) { /* one shape, for a callgrind run */
		for (unsigned i = 0; i < NSHAPES; i++)
			if (strcmp(argv[1], shapes[i].name) == 0)
				return run(&shapes[i], strtoul(argv[2], NULL, 0)) == 0;
		return 2;
	}
#if defined(__SANITIZE_ADDRESS__) || !defined(__OPTIMIZE__)
	printf("note: not an optimised build without sanitizers; use -DCMAKE_BUILD_TYPE=Release\n");
#endif
	printf("%-18s %9s %12s  %s\n", "shape", "ns/decode", "instr/decode", "what");
	for (unsigned i = 0; i < NSHAPES; i++) {
		const struct shape *s = &shapes[i];
		double t0, t1, instr;

		run(s, iters / 10); /* warm up */
		t0 = now();
		run(s, iters);
		t1 = now();
		instr = counter ? counted_instructions(s, iters / 10) : -1;
		if (instr < 0) {
			counter = 0;
			instr = callgrind_instructions(argv[0], s, cg_iters);
		}
		if (instr < 0)
			printf("%-18s %9.1f %12s  %s\n", s->name, (t1 - t0) * 1e9 / iters, "n/a",
			       s->what);
		else
			printf("%-18s %9.1f %12.1f  %s\n", s->name, (t1 - t0) * 1e9 / iters, instr,
			       s->what);
	}
	printf("instructions: %s\n", counter ? "CPU counter (perf_event_open), user space"
					     : "callgrind, rpcrdma_hdr_decode and its callees");
	return 0;
}
