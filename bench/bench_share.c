/* SPDX-License-Identifier: MIT */
/*
 * bench_share: cost of the two modules of a shared upstream (issue 17):
 *   - gateway/wirexid: memory per entry (entry plus its share of both hash
 *     tables), ns per new call mapped, per reply, per retransmission found,
 *     per stray reply refused, per new call that recycles an answered entry
 *     (of a call safe to run twice; of one that must not: kept, its own
 *     address's or the largest holder's);
 *   - gateway/fairq: ns per enqueue and per pick (+ completion), with many
 *     clients in the ring.
 * Usage: bench_share [CLIENTS]   (default 1000)
 *
 * Build with -DCMAKE_BUILD_TYPE=Release: figures from the Asan build measure
 * the sanitizers. It prints figures; it never passes or fails on speed.
 */
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gateway/maps/fairq.h"
#include "gateway/maps/wirexid.h"

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Call @n: one of @clients clients (10.x.y.z, port 700 + client % 300), XIDs in sequence. */
static void key_of(struct wirexid_key *k, uint32_t n, uint32_t clients, uint32_t xid_base)
{
	uint32_t c = n % clients;
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons((uint16_t)(700 + c % 300)),
				   .sin_addr.s_addr = htonl(0x0a000000u + c) };

	wirexid_key_from_sockaddr(k, (struct sockaddr *)&sin, xid_base + n / clients);
}

static void report(const char *what, double t0, uint32_t n)
{
	printf("  %-44s %8.1f ns\n", what, (now_ns() - t0) / n);
}

static int bench_wirexid(uint32_t clients)
{
	struct wirexid_params p = { .channels = 2, .seed = 1 };
	struct wirexid m;
	uint32_t *idx, *wire, sink = 0;
	struct wirexid_key *keys;
	uint64_t now = 0;
	double t0;

	if (wirexid_init(&m, &p) != 0)
		return 1;
	uint32_t n = m.max;
	idx = calloc(n, sizeof(*idx));
	wire = calloc(n, sizeof(*wire));
	keys = calloc(2 * (size_t)n, sizeof(*keys));
	if (!idx || !wire || !keys)
		return 1;
	for (uint32_t i = 0; i < 2 * n; i++)
		key_of(&keys[i], i, clients, 0x5000);

	/* The ledger at its largest: a record per entry (one address per kept call), its tables. */
	size_t ledger = sizeof(struct wirexid_client) * ((size_t)n + 1) +
			sizeof(uint32_t) * ((size_t)m.mask + 1) +
			sizeof(uint32_t) * ((size_t)n + 1);

	printf("wirexid: %u entries, %u clients, 2 channels\n", n, clients);
	printf("  %-44s %8zu B\n", "memory per entry (entry + both tables)",
	       sizeof(struct wirexid_entry) + 2 * sizeof(uint32_t) * (m.mask + 1) / n);
	printf("  %-44s %8zu B\n", "ledger per entry, at most (made as used)", ledger / n);
	printf("  %-44s %8.2f MiB\n", "memory of the map",
	       (double)(sizeof(struct wirexid_entry) * n + 2 * sizeof(uint32_t) * (m.mask + 1)) /
		       (1 << 20));
	printf("  %-44s %8.2f MiB\n", "the ledger, at most", (double)ledger / (1 << 20));

	t0 = now_ns();
	for (uint32_t i = 0; i < n; i++)
		wirexid_map(&m, &keys[i], (uint16_t)(i & 1), i % clients, WIREXID_SAFE_TWICE, now,
			    &idx[i]);
	report("map, new call (free entry)", t0, n);
	for (uint32_t i = 0; i < n; i++)
		wire[i] = wirexid_get(&m, idx[i])->wire_xid;

	t0 = now_ns();
	for (uint32_t i = 0; i < n; i++)
		wirexid_map(&m, &keys[i], 0, i % clients, WIREXID_SAFE_TWICE, now, &sink);
	report("map, retransmission of a call in flight", t0, n);

	t0 = now_ns();
	for (uint32_t i = 0; i < n; i++)
		sink += wirexid_reply(&m, (uint16_t)(i & 1), wire[i], now);
	report("reply (in flight -> answered)", t0, n);

	t0 = now_ns();
	for (uint32_t i = 0; i < n; i++)
		sink += wirexid_reply(&m, (uint16_t)(i & 1), wire[i] + 0x40000000u, now);
	report("reply with no call (stray, dropped)", t0, n);

	t0 = now_ns();
	for (uint32_t i = 0; i < n; i++)
		wirexid_map(&m, &keys[i], 0, i % clients, WIREXID_SAFE_TWICE, now, &idx[i]);
	report("map, retransmission of an answered call", t0, n);
	for (uint32_t i = 0; i < n; i++)
		wirexid_reply(&m, wirexid_get(&m, idx[i])->chan, wirexid_get(&m, idx[i])->wire_xid,
			      now);

	t0 = now_ns();
	for (uint32_t i = 0; i < n; i++)
		wirexid_map(&m, &keys[n + i], (uint16_t)(i & 1), i % clients, WIREXID_SAFE_TWICE,
			    now, &idx[i]);
	report("map, new call recycling an answered entry", t0, n);

	printf("  (stray %llu, evicted %llu, checksum %u)\n", (unsigned long long)m.st.stray,
	       (unsigned long long)m.st.evicted, sink & 1);
	wirexid_destroy(&m);

	/*
	 * Calls that must not run twice (REMOVE...): the map full of them,
	 * answered, kept for their addresses. New ones from the same clients
	 * recycle kept entries (their own, or the largest holder's when below
	 * their share); then a new address's, which holds none, take the
	 * largest holder's oldest each time.
	 */
	if (wirexid_init(&m, &p) != 0)
		return 1;
	for (uint32_t i = 0; i < n; i++) {
		wirexid_map(&m, &keys[i], (uint16_t)(i & 1), i % clients, WIREXID_RUN_ONCE, now,
			    &idx[i]);
		wirexid_reply(&m, wirexid_get(&m, idx[i])->chan, wirexid_get(&m, idx[i])->wire_xid,
			      now);
	}
	t0 = now_ns();
	for (uint32_t i = 0; i < n / 2; i++)
		wirexid_map(&m, &keys[n + i], (uint16_t)(i & 1), i % clients, WIREXID_RUN_ONCE, now,
			    &idx[i]);
	report("map, new run-once call recycling a kept entry", t0, n / 2);
	for (uint32_t i = 0; i < n / 2; i++)
		wirexid_reply(&m, wirexid_get(&m, idx[i])->chan, wirexid_get(&m, idx[i])->wire_xid,
			      now);
	uint64_t own = m.st.evicted_own, other = m.st.evicted_other;
	for (uint32_t i = 0; i < n / 2; i++) { /* one address, 11.0.0.0, that holds nothing */
		key_of(&keys[i], i, 1, 0x9000);
		keys[i].addr[12] = 11;
	}
	t0 = now_ns();
	for (uint32_t i = 0; i < n / 2; i++)
		wirexid_map(&m, &keys[i], (uint16_t)(i & 1), 0, WIREXID_RUN_ONCE, now, &idx[i]);
	report("map, new call taking the largest holder's", t0, n / 2);
	printf("  (kept recycled: own %llu, other %llu; then other %llu; %u addresses)\n",
	       (unsigned long long)own, (unsigned long long)other,
	       (unsigned long long)(m.st.evicted_other - other), m.st.kept_clients);
	free(idx);
	free(wire);
	free(keys);
	wirexid_destroy(&m);
	return 0;
}

static int bench_fairq(uint32_t clients)
{
	enum { PER_CLIENT = 16 };
	uint32_t n = clients * PER_CLIENT;
	struct fairq_client *c = calloc(clients, sizeof(*c));
	struct fairq_item *it = calloc(n, sizeof(*it));
	struct fairq q;
	double t0;

	if (!c || !it)
		return 1;
	fairq_init(&q, 1, 128);
	for (uint32_t i = 0; i < clients; i++)
		fairq_client_init(&c[i], 8);
	printf("fairq: %u clients, %u calls queued each, grant 128, cap 8\n", clients,
	       (unsigned)PER_CLIENT);
	printf("  %-44s %8zu B\n", "memory per client (struct fairq_client)",
	       sizeof(struct fairq_client));
	printf("  %-44s %8zu B\n", "memory per call (struct fairq_item)",
	       sizeof(struct fairq_item));

	t0 = now_ns();
	for (uint32_t i = 0; i < n; i++)
		fairq_enqueue(&q, &c[i % clients], &it[i], i);
	report("enqueue", t0, n);

	uint32_t picked = 0;
	t0 = now_ns();
	while (picked < n) {
		struct fairq_item *x = fairq_pick(&q, n + picked);
		if (!x)
			break;
		picked++;
		fairq_complete(&q, x->client);
	}
	report("pick + complete", t0, picked ? picked : 1);
	printf("  (picked %u of %u)\n", picked, n);
	free(c);
	free(it);
	return picked == n ? 0 : 1;
}

int main(int argc, char **argv)
{
	uint32_t clients = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 0) : 1000;

	if (clients == 0 || clients > 1000000) {
		fprintf(stderr, "usage: bench_share [CLIENTS 1..1000000]\n");
		return 2;
	}
	return bench_wirexid(clients) | bench_fairq(clients);
}
