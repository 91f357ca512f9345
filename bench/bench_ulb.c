/* SPDX-License-Identifier: MIT */
/*
 * bench_ulb: cost of the ULB walkers per message, in nanoseconds and (when
 * perf events are allowed) instructions:
 *   - NFSv3 WRITE call (32-byte handle, 4 KiB of data)
 *   - NFSv4.1 SEQUENCE + PUTFH + WRITE + GETATTR call, with a known session
 *   - NFSv4.1 SEQUENCE + PUTFH + READ reply: locate the READ data
 * Usage: bench_ulb [ITERATIONS]
 */
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/version.h"
#include "common/xdr.h"
#include "ulb-rules/ulb.h"

struct xb {
	uint8_t buf[8192];
	uint32_t len;
};

static void u32(struct xb *b, uint32_t v)
{
	xdr_put32(b->buf + b->len, v);
	b->len += 4;
}

static void bytes(struct xb *b, uint8_t fill, uint32_t n)
{
	memset(b->buf + b->len, fill, n);
	b->len += xdr_align(n);
}

static void opaque(struct xb *b, uint8_t fill, uint32_t n)
{
	u32(b, n);
	bytes(b, fill, n);
}

static void call_hdr(struct xb *b, uint32_t vers, uint32_t proc)
{
	b->len = 0;
	u32(b, 1);
	u32(b, 0);
	u32(b, 2);
	u32(b, 100003);
	u32(b, vers);
	u32(b, proc);
	u32(b, 1); /* AUTH_SYS with an empty machine name and no groups */
	u32(b, 20);
	bytes(b, 0, 20);
	u32(b, 0);
	u32(b, 0);
}

static const uint8_t sid[ULB_SESSIONID_SIZE] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };

static void sequence(struct xb *b)
{
	u32(b, 53);
	memcpy(b->buf + b->len, sid, sizeof(sid));
	b->len += sizeof(sid);
	bytes(b, 0, 16);
}

static int perf_fd = -1;

static void perf_open(void)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_HARDWARE;
	a.size = sizeof(a);
	a.config = PERF_COUNT_HW_INSTRUCTIONS;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	perf_fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
}

static uint64_t perf_read(void)
{
	uint64_t v = 0;
	if (perf_fd < 0 || read(perf_fd, &v, sizeof(v)) != sizeof(v))
		return 0;
	return v;
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

enum what { CALL, REPLY };

static void run(const char *name, enum what what, const struct ulb_rules *r,
		const struct ulb_sessions *s, const struct xb *call, const struct xb *reply,
		long iters)
{
	struct ulb_call c;
	struct ulb_reply rp;
	unsigned found = 0;

	ulb_parse_call(r, s, call->buf, call->len, &c);
	if (perf_fd >= 0) {
		ioctl(perf_fd, PERF_EVENT_IOC_RESET, 0);
		ioctl(perf_fd, PERF_EVENT_IOC_ENABLE, 0);
	}
	double t0 = now_ns();
	for (long i = 0; i < iters; i++) {
		if (what == CALL) {
			ulb_parse_call(r, s, call->buf, call->len, &c);
			found += c.n_args;
		} else {
			ulb_parse_reply(&c, NULL, reply->buf, reply->len, 0, &rp);
			found += rp.n_items;
		}
	}
	double t1 = now_ns();
	if (perf_fd >= 0)
		ioctl(perf_fd, PERF_EVENT_IOC_DISABLE, 0);
	uint64_t ins = perf_read();
	printf("%-44s %7.1f ns", name, (t1 - t0) / iters);
	if (ins)
		printf("  %6.0f instructions", (double)ins / iters);
	printf("  (%u items)\n", found / (unsigned)iters);
}

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 2000000;
	char err[512];
	struct ulb_options o = { .stock_dir = GW_SOURCE_RULES_DIR };
	struct ulb_rules *r = ulb_rules_load(&o, err, sizeof(err));
	if (!r) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	struct ulb_sessions s;
	memset(&s, 0, sizeof(s));
	ulb_sessions_add(&s, sid, 1049480);
	perf_open();

	struct xb call, reply;
	call_hdr(&call, 3, 7); /* WRITE3args */
	opaque(&call, 0xf0, 32);
	bytes(&call, 0, 8);
	u32(&call, 4096);
	u32(&call, 2);
	opaque(&call, 'w', 4096);
	run("v3 WRITE call", CALL, r, NULL, &call, NULL, iters);

	call_hdr(&call, 4, 1);
	opaque(&call, 0, 0);
	u32(&call, 1);
	u32(&call, 4);
	sequence(&call);
	u32(&call, 22);
	opaque(&call, 0xf0, 28);
	u32(&call, 38);
	bytes(&call, 0x55, 16);
	bytes(&call, 0, 8);
	u32(&call, 2);
	opaque(&call, 'w', 4096);
	u32(&call, 9); /* GETATTR of 2 bitmap words */
	u32(&call, 2);
	u32(&call, 0x0010011a);
	u32(&call, 0x00b0a23a);
	run("v4.1 SEQUENCE+PUTFH+WRITE+GETATTR call", CALL, r, &s, &call, NULL, iters);

	call_hdr(&call, 4, 1);
	opaque(&call, 0, 0);
	u32(&call, 1);
	u32(&call, 3);
	sequence(&call);
	u32(&call, 22);
	opaque(&call, 0xf0, 28);
	u32(&call, 25);
	bytes(&call, 0x55, 16);
	bytes(&call, 0, 8);
	u32(&call, 4096);
	reply.len = 0;
	u32(&reply, 1);
	u32(&reply, 1);
	u32(&reply, 0);
	u32(&reply, 0);
	u32(&reply, 0);
	u32(&reply, 0);
	u32(&reply, 0); /* COMPOUND status, empty tag, 3 results */
	opaque(&reply, 0, 0);
	u32(&reply, 3);
	u32(&reply, 53);
	u32(&reply, 0);
	memcpy(reply.buf + reply.len, sid, sizeof(sid));
	reply.len += sizeof(sid);
	bytes(&reply, 0, 20);
	u32(&reply, 22);
	u32(&reply, 0);
	u32(&reply, 25);
	u32(&reply, 0);
	u32(&reply, 1);
	opaque(&reply, 'r', 4096);
	run("v4.1 SEQUENCE+PUTFH+READ reply locate", REPLY, r, &s, &call, &reply, iters);

	ulb_rules_free(r);
	return 0;
}
