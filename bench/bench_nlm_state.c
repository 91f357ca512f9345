/* SPDX-License-Identifier: MIT */
/*
 * bench_nlm_state: what the NLM relay's state (gateway/side/nlm/nlm_state.c)
 * costs per relayed lock call, in the shapes a real client and a forger of
 * UDP sources make:
 *
 *   known owner     a client's owner already in the table (one of its
 *                   calls in flight: its next LOCK, UNLOCK or TEST): the
 *                   owner hash
 *   new owner       a new process of a client host already known, with
 *                   every client slot in use (max_clients of them), the
 *                   host the last of them
 *   new host        a host never seen, every client slot held by an idle
 *                   host (a flood of forged sources each sending one TEST):
 *                   the least recently used idle host is forgotten with
 *                   its owners to make room
 *   new host, own prefix  the same, the new hosts all of one /24, at their
 *                   prefix's share of the table
 *
 * Each call is what the relay does for a call the server answers and that
 * leaves nothing held: nlm_state_owner(), nlm_state_call_begin(),
 * nlm_state_call_end(settled). Default limits (1024 clients, 4096 owners).
 *
 *   bench_nlm_state [ITERATIONS]   per shape (default 200000)
 *
 * Build with -DCMAKE_BUILD_TYPE=Release. It prints figures; it never passes
 * or fails on speed.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gateway/side/nlm/nlm_state.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Host @n: 10.x.y.z spread over many /24s, or all in 10.200.0.0/16's /24s when @one_net. */
static struct gw_host host_of(uint32_t n, bool one_net)
{
	struct gw_host h = { .family = AF_INET };
	uint32_t a =
		one_net ? (0x0ac80000u | (n & 0xff)) : (0x0a000000u | ((n * 2654435761u) >> 8));

	a = htonl(a);
	memcpy(h.addr, &a, 4);
	return h;
}

static const uint8_t OH[8] = { 'o', 'w', 'n', 'e', 'r' };

/* One relayed call of @h's owner @svid that leaves nothing held. */
static void call(struct nlm_state *st, const struct gw_host *h, int32_t svid)
{
	const uint8_t *oh = OH;
	struct nlm_owner_id id;

	if (nlm_state_owner(st, h, svid, (struct nlm_bytes){ oh, sizeof(OH) }, &id) != 0)
		return;
	nlm_state_call_begin(st, &id);
	nlm_state_call_end(st, &id, true);
}

/* Fill the client table with idle hosts that keep an owner (a LOCK given up unanswered). */
static void fill(struct nlm_state *st, uint32_t clients)
{
	static const uint8_t oh[8] = { 'i', 'd', 'l', 'e' };
	struct nlm_owner_id id;

	for (uint32_t i = 0; i < clients; i++) {
		struct gw_host h = host_of(0x100000 + i, false);
		if (nlm_state_owner(st, &h, 1, (struct nlm_bytes){ oh, sizeof(oh) }, &id) == 0) {
			nlm_state_call_begin(st, &id);
			nlm_state_call_end(st, &id, false); /* unanswered: the owner stays, idle */
		}
	}
}

static void shape(const char *name, uint32_t iters, int kind)
{
	struct nlm_state_limits lim = { 0 };
	struct nlm_state *st = nlm_state_new(&lim, 1);
	uint32_t clients;

	if (!st) {
		fprintf(stderr, "nlm_state_new failed\n");
		exit(1);
	}
	clients = nlm_state_limits(st)->max_clients;
	fill(st, clients);
	/* The host filled last: the one a scan of the client table finds last. */
	struct gw_host known = host_of(0x100000 + clients - 1, false);
	struct nlm_owner_id held;
	/* The known owner has a call in flight throughout (a LOCK that waits): it stays. */
	if (kind == 0 &&
	    nlm_state_owner(st, &known, 1, (struct nlm_bytes){ OH, sizeof(OH) }, &held) == 0)
		nlm_state_call_begin(st, &held);
	uint64_t t0 = now_ns();
	for (uint32_t i = 0; i < iters; i++) {
		struct gw_host h;
		switch (kind) {
		case 0: /* the same owner again */
			call(st, &known, 1);
			break;
		case 1: /* a new owner of a known host (forgotten again after its call) */
			call(st, &known, (int32_t)(2 + i % 1000));
			break;
		case 2:
			h = host_of(i, false);
			call(st, &h, 1);
			break;
		default:
			h = host_of(i, true);
			call(st, &h, 1);
			break;
		}
	}
	uint64_t ns = now_ns() - t0;
	const struct nlm_state_stats *ss = nlm_state_stats(st);
	printf("%-22s %10.0f %12llu %12llu\n", name, (double)ns / iters,
	       (unsigned long long)ss->clients_reclaimed,
	       (unsigned long long)(ss->clients_full + ss->client_prefix_full));
	nlm_state_free(st);
}

int main(int argc, char **argv)
{
	uint32_t iters = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 200000;

	if (iters == 0)
		iters = 1;
	printf("NLM relay state per relayed call (default limits, table full of idle hosts)\n");
	printf("%-22s %10s %12s %12s\n", "shape", "ns/call", "reclaimed", "refused");
	shape("known owner", iters, 0);
	shape("new owner", iters, 1);
	shape("new host", iters, 2);
	shape("new host, one /24", iters, 3);
	return 0;
}
