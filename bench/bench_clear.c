/* SPDX-License-Identifier: MIT */
/*
 * bench_clear: what clearing memory before the peer may write it costs
 * (forward mode zeroes every Write and Reply chunk before exposing it, so
 * that a server claiming bytes it never wrote shows zeros, never another
 * client's record: docs/security.md). Prints ns and GB/s per chunk size,
 * for a buffer that is cache-cold (a pool slab cycled through) and one that
 * is warm (the same buffer again), next to the time a 100 Gb/s link takes
 * to carry the same bytes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <time.h>

enum { POOL = 256u << 20 };

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double clear_ns(uint8_t *pool, size_t size, int rounds, int cold)
{
	size_t nbuf = POOL / size;
	uint64_t t0 = now_ns();

	for (int r = 0; r < rounds; r++) {
		uint8_t *b = pool + (cold ? ((size_t)r % nbuf) * size : 0);
		memset(b, 0, size);
		/* Keep the compiler from proving the store dead. */
		__asm__ volatile("" : : "r"(b) : "memory");
	}
	return (double)(now_ns() - t0) / rounds;
}

int main(void)
{
	static const size_t sizes[] = { 4096, 16384, 65536, 262144, 1048576, 1048576 + 4096 };
	uint8_t *pool = aligned_alloc(4096, POOL);

	if (!pool)
		return 1;
	memset(pool, 1, POOL); /* fault every page in */
	printf("%-10s %12s %10s %12s %10s %14s\n", "bytes", "cold ns", "cold GB/s", "warm ns",
	       "warm GB/s", "100Gb/s wire ns");
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t sz = sizes[i];
		int rounds = (int)((2048u << 20) / sz);
		double cold = clear_ns(pool, sz, rounds, 1);
		double warm = clear_ns(pool, sz, rounds, 0);
		printf("%-10zu %12.0f %10.1f %12.0f %10.1f %14.0f\n", sz, cold, (double)sz / cold,
		       warm, (double)sz / warm, (double)sz * 8 / 100.0);
	}
	free(pool);
	return 0;
}
