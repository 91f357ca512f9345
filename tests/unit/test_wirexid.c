/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <cmocka.h>

#include "gateway/maps/wirexid.h"

enum { TTL = 1000 };

/*
 * Allocations (tests/unit/test_wirexid.wrap: this executable links with
 * -Wl,--wrap for each, so wirexid.c's come here): counted, so that a test
 * can show the map allocates nothing after init; with alloc_fail_in at
 * n > 0, the n-th from then on fails, once.
 */
void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);

static unsigned allocs;
static unsigned alloc_fail_in;

static bool alloc_fails(void)
{
	allocs++;
	return alloc_fail_in > 0 && --alloc_fail_in == 0;
}

void *__wrap_malloc(size_t size)
{
	return alloc_fails() ? NULL : __real_malloc(size);
}

void *__wrap_calloc(size_t n, size_t size)
{
	return alloc_fails() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t size)
{
	return alloc_fails() ? NULL : __real_realloc(p, size);
}

static void map_init(struct wirexid *m, uint32_t max, uint16_t channels)
{
	struct wirexid_params p = {
		.max_entries = max, .ttl_us = TTL, .channels = channels, .seed = 42
	};
	assert_int_equal(wirexid_init(m, &p), 0);
}

/* The key of a call from 192.0.2.@host, port @port, with @xid. */
static struct wirexid_key key_of(uint8_t host, uint16_t port, uint32_t xid)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct wirexid_key k;
	char a[32];

	snprintf(a, sizeof(a), "192.0.2.%u", host);
	assert_int_equal(inet_pton(AF_INET, a, &sin.sin_addr), 1);
	assert_true(wirexid_key_from_sockaddr(&k, (struct sockaddr *)&sin, xid));
	return k;
}

/*
 * Everything the map says of its answered entries agrees with what it
 * holds: each list oldest first; a kept entry in its address's record and
 * only there; each record's count, the counts' lists and the largest; the
 * records in use and free adding up to those ever made, never more than
 * the map's size.
 */
static void check_ledger(const struct wirexid *m)
{
	uint32_t answered = 0, kept = 0, clients = 0, in_lists = 0, most = 0, n = 0;

	for (uint32_t i = 0; i < m->made; i++) {
		const struct wirexid_entry *e = &m->e[i];
		if (e->state != WIREXID_ANSWERED) {
			assert_int_equal(e->client, 0);
			continue;
		}
		answered++;
		if (e->client == 0)
			continue;
		kept++;
		assert_int_equal(e->twice, WIREXID_RUN_ONCE);
		assert_memory_equal(m->cl[e->client].addr, e->key.addr, 16);
	}
	assert_int_equal(m->st.answered, answered);
	assert_int_equal(m->st.kept, kept);
	const struct wirexid_age *lists[2] = { &m->safe, &m->kept };
	for (unsigned l = 0; l < 2; l++) {
		uint64_t t = 0;
		uint32_t prev = WIREXID_NONE;
		for (uint32_t i = lists[l]->head; i != WIREXID_NONE; i = m->e[i].next) {
			assert_int_equal(m->e[i].state, WIREXID_ANSWERED);
			assert_int_equal(m->e[i].client != 0, l == 1);
			assert_int_equal(m->e[i].prev, prev);
			assert_true(m->e[i].expire_us >= t);
			t = m->e[i].expire_us;
			prev = i;
			n++;
		}
		assert_int_equal(lists[l]->tail, prev);
	}
	assert_int_equal(n, answered);
	assert_true(m->cl_made >= 1 && m->cl_made - 1 <= m->max);
	for (uint32_t b = 0; b <= m->mask; b++) {
		for (uint32_t c = m->cl_head[b]; c != 0; c = m->cl[c].hnext) {
			const struct wirexid_client *r = &m->cl[c];
			uint32_t count = 0, prev = WIREXID_NONE;
			uint64_t t = 0;
			assert_true(c < m->cl_made);
			assert_true(r->kept > 0);
			for (uint32_t i = r->head; i != WIREXID_NONE; i = m->e[i].cnext) {
				assert_int_equal(m->e[i].client, c);
				assert_int_equal(m->e[i].cprev, prev);
				assert_true(m->e[i].expire_us >= t);
				t = m->e[i].expire_us;
				prev = i;
				count++;
			}
			assert_int_equal(r->tail, prev);
			assert_int_equal(count, r->kept);
			if (r->kept > most)
				most = r->kept;
			in_lists += r->kept;
			clients++;
		}
	}
	assert_int_equal(in_lists, kept);
	assert_int_equal(m->st.kept_clients, clients);
	assert_int_equal(m->most, most);
	uint32_t listed = 0;
	for (uint32_t k = 1; k <= m->max; k++) {
		uint32_t prev = 0;
		for (uint32_t c = m->by_kept[k]; c != 0; c = m->cl[c].bnext) {
			assert_int_equal(m->cl[c].kept, k);
			assert_int_equal(m->cl[c].bprev, prev);
			prev = c;
			listed++;
		}
		if (k > most)
			assert_int_equal(m->by_kept[k], 0);
	}
	assert_int_equal(listed, clients);
	uint32_t free_records = 0;
	for (uint32_t c = m->cl_free; c != 0; c = m->cl[c].hnext)
		free_records++;
	assert_int_equal(free_records + clients, m->cl_made - 1);
}

/* A new call of @k answered at once: its entry. */
static uint32_t answered_call(struct wirexid *m, const struct wirexid_key *k,
			      enum wirexid_twice twice, uint64_t owner, uint64_t now)
{
	uint32_t i;

	assert_int_equal(wirexid_map(m, k, (uint16_t)(owner % m->channels), owner, twice, now, &i),
			 WIREXID_NEW);
	const struct wirexid_entry *e = wirexid_get(m, i);
	assert_int_equal(wirexid_reply(m, e->chan, e->wire_xid, now), i);
	return i;
}

static void test_params_checked(void **state)
{
	(void)state;
	struct wirexid m;
	struct wirexid_params p = { .channels = 0 };
	assert_int_equal(wirexid_init(&m, &p), -EINVAL);
	p.channels = WIREXID_MAX_CHANNELS + 1;
	assert_int_equal(wirexid_init(&m, &p), -EINVAL);
	p.channels = 1;
	p.max_entries = WIREXID_MAX_ENTRIES + 1;
	assert_int_equal(wirexid_init(&m, &p), -EINVAL);
	p.max_entries = 0; /* the default */
	assert_int_equal(wirexid_init(&m, &p), 0);
	assert_int_equal(m.max, WIREXID_DEFAULT_MAX);
	assert_true(m.ttl_us == WIREXID_DEFAULT_TTL_US);
	wirexid_destroy(&m);
}

static void test_key_families(void **state)
{
	(void)state;
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6, .sin6_port = htons(700) };
	struct sockaddr_un su = { .sun_family = AF_UNIX };
	struct wirexid_key k6, k4 = key_of(7, 700, 99);

	/* An IPv4 peer and the same peer seen on a dual-stack socket are one client. */
	assert_int_equal(inet_pton(AF_INET6, "::ffff:192.0.2.7", &s6.sin6_addr), 1);
	assert_true(wirexid_key_from_sockaddr(&k6, (struct sockaddr *)&s6, 99));
	assert_memory_equal(&k4, &k6, sizeof(k4));
	s6.sin6_port = htons(701);
	assert_true(wirexid_key_from_sockaddr(&k6, (struct sockaddr *)&s6, 99));
	assert_memory_not_equal(&k4, &k6, sizeof(k4));
	assert_false(wirexid_key_from_sockaddr(&k6, (struct sockaddr *)&su, 99));
}

/*
 * The DRC case: a call in flight, retransmitted on the same connection, is
 * absorbed; once answered, the client reconnects from the same port (a new
 * connection id) and retransmits: same channel, same wire XID, reply to the
 * new connection.
 */
static void test_retransmission_keeps_wire_xid(void **state)
{
	(void)state;
	struct wirexid m;
	struct wirexid_key k = key_of(1, 801, 0x1234);
	uint32_t i, j;

	map_init(&m, 64, 4);
	assert_int_equal(wirexid_map(&m, &k, 2, 10, WIREXID_SAFE_TWICE, 0, &i), WIREXID_NEW);
	const struct wirexid_entry *e = wirexid_get(&m, i);
	uint32_t wire = e->wire_xid;
	assert_int_equal(e->chan, 2);

	assert_int_equal(wirexid_map(&m, &k, 3, 10, WIREXID_SAFE_TWICE, 5, &j), WIREXID_IN_FLIGHT);
	assert_int_equal(j, i);
	/* The client reconnected while the call was in flight: the reply goes to it. */
	assert_int_equal(wirexid_map(&m, &k, 0, 11, WIREXID_SAFE_TWICE, 6, &j), WIREXID_IN_FLIGHT);
	assert_int_equal(j, i);
	assert_true(e->owner == 11);

	assert_int_equal(wirexid_reply(&m, 2, wire, 10), i);
	assert_int_equal(e->state, WIREXID_ANSWERED);
	/* Reply lost with the connection; reconnect, retransmit, other channel hint. */
	assert_int_equal(wirexid_map(&m, &k, 1, 12, WIREXID_SAFE_TWICE, 500, &j), WIREXID_RESEND);
	assert_int_equal(j, i);
	assert_int_equal(e->chan, 2);
	assert_int_equal(e->wire_xid, wire);
	assert_true(e->owner == 12);
	assert_int_equal(e->state, WIREXID_INFLIGHT);
	assert_int_equal(wirexid_reply(&m, 2, wire, 600), i);

	assert_true(m.st.new_calls == 1);
	assert_true(m.st.hits_in_flight == 2);
	assert_true(m.st.hits_answered == 1);
	wirexid_destroy(&m);
}

/*
 * Entries are made as first needed, and a freed one is used again before a
 * new one: a pool sized for every slot of every client stays untouched
 * (out of resident memory) beyond what the calls really held at once.
 */
static void test_entries_made_when_needed(void **state)
{
	(void)state;
	struct wirexid m;
	uint32_t i, j;

	map_init(&m, 4096, 2);
	assert_int_equal(m.made, 0);
	for (uint32_t n = 0; n < 100; n++) {
		struct wirexid_key k = key_of(1, 801, n);
		assert_int_equal(wirexid_map(&m, &k, 0, 10, WIREXID_SAFE_TWICE, 0, &i),
				 WIREXID_NEW);
		wirexid_cancel(&m, i);
	}
	assert_int_equal(m.made, 1);
	struct wirexid_key a = key_of(1, 801, 1000), b = key_of(2, 801, 1000);
	assert_int_equal(wirexid_map(&m, &a, 0, 10, WIREXID_SAFE_TWICE, 0, &i), WIREXID_NEW);
	assert_int_equal(wirexid_map(&m, &b, 0, 11, WIREXID_SAFE_TWICE, 0, &j), WIREXID_NEW);
	assert_true(i != j);
	assert_int_equal(m.made, 2);
	/* The untouched rest is still all there: the map fills to its size. */
	for (uint32_t n = 2; n < 4096; n++) {
		struct wirexid_key k = key_of(3, 801, n);
		assert_int_equal(wirexid_map(&m, &k, 1, 12, WIREXID_SAFE_TWICE, 0, &i),
				 WIREXID_NEW);
	}
	assert_int_equal(m.made, 4096);
	struct wirexid_key k = key_of(4, 801, 1);
	assert_int_equal(wirexid_map(&m, &k, 1, 13, WIREXID_SAFE_TWICE, 0, &i), WIREXID_FULL);
	wirexid_destroy(&m);
}

/* One XID from three clients (other host, other port): three wire XIDs, replies kept apart. */
static void test_clients_get_distinct_wire_xids(void **state)
{
	(void)state;
	struct wirexid m;
	struct wirexid_key k[3] = { key_of(1, 801, 7), key_of(2, 801, 7), key_of(1, 802, 7) };
	uint32_t idx[3], wire[3];

	map_init(&m, 64, 1);
	for (unsigned c = 0; c < 3; c++) {
		assert_int_equal(wirexid_map(&m, &k[c], 0, 100 + c, WIREXID_SAFE_TWICE, 0, &idx[c]),
				 WIREXID_NEW);
		wire[c] = wirexid_get(&m, idx[c])->wire_xid;
		for (unsigned d = 0; d < c; d++) {
			assert_int_not_equal(idx[c], idx[d]);
			assert_int_not_equal(wire[c], wire[d]);
		}
	}
	/* Replies in another order find their own client. */
	for (unsigned c = 3; c-- > 0;) {
		uint32_t i = wirexid_reply(&m, 0, wire[c], 1);
		assert_int_equal(i, idx[c]);
		assert_true(wirexid_get(&m, i)->owner == 100 + c);
		assert_int_equal(wirexid_get(&m, i)->key.xid, 7);
	}
	wirexid_destroy(&m);
}

/* A reply is accepted once, on its channel, for a call in flight; anything else is stray. */
static void test_stray_replies_rejected(void **state)
{
	(void)state;
	struct wirexid m;
	struct wirexid_key k = key_of(1, 801, 1), k2 = key_of(1, 801, 2);
	uint32_t i, i2;

	map_init(&m, 8, 2);
	assert_int_equal(wirexid_map(&m, &k, 0, 1, WIREXID_SAFE_TWICE, 0, &i), WIREXID_NEW);
	uint32_t wire = wirexid_get(&m, i)->wire_xid;
	assert_int_equal(wirexid_reply(&m, 0, wire + 1000, 1), WIREXID_NONE); /* never issued */
	assert_int_equal(wirexid_reply(&m, 1, wire, 1), WIREXID_NONE);	      /* other channel */
	assert_int_equal(wirexid_reply(&m, 7, wire, 1), WIREXID_NONE);	      /* no such channel */
	assert_int_equal(wirexid_reply(&m, 0, wire, 1), i);
	assert_int_equal(wirexid_reply(&m, 0, wire, 2), WIREXID_NONE); /* answered already */

	/* Cancelled (never sent): a late reply finds nothing. */
	assert_int_equal(wirexid_map(&m, &k2, 0, 1, WIREXID_SAFE_TWICE, 3, &i2), WIREXID_NEW);
	uint32_t wire2 = wirexid_get(&m, i2)->wire_xid;
	wirexid_cancel(&m, i2);
	assert_int_equal(wirexid_reply(&m, 0, wire2, 4), WIREXID_NONE);

	/* Expired: the late reply finds nothing, even after the entry served another client. */
	struct wirexid_key k3 = key_of(9, 900, 1);
	uint32_t i3;
	assert_int_equal(wirexid_map(&m, &k3, 0, 2, WIREXID_SAFE_TWICE, 5000, &i3), WIREXID_NEW);
	assert_true(m.st.expired == 1);
	assert_int_equal(wirexid_reply(&m, 0, wire, 5001), WIREXID_NONE);
	assert_int_not_equal(wirexid_get(&m, i3)->wire_xid, wire);
	assert_true(m.st.stray == 6);
	wirexid_destroy(&m);
}

/*
 * A reply looked up before it is known to end the call (it may ask for a
 * retry): the in-flight entry is found and stays in flight; anything else
 * is stray.
 */
static void test_lookup_reply_leaves_it_in_flight(void **state)
{
	(void)state;
	struct wirexid m;
	struct wirexid_key k = key_of(1, 801, 7);
	uint32_t i;

	map_init(&m, 8, 2);
	assert_int_equal(wirexid_map(&m, &k, 1, 1, WIREXID_SAFE_TWICE, 0, &i), WIREXID_NEW);
	uint32_t wire = wirexid_get(&m, i)->wire_xid;
	assert_int_equal(wirexid_lookup_reply(&m, 1, wire), i);
	assert_int_equal(wirexid_lookup_reply(&m, 1, wire), i);
	assert_int_equal(wirexid_get(&m, i)->state, WIREXID_INFLIGHT);
	assert_int_equal(wirexid_lookup_reply(&m, 0, wire), WIREXID_NONE);     /* other channel */
	assert_int_equal(wirexid_lookup_reply(&m, 9, wire), WIREXID_NONE);     /* no such channel */
	assert_int_equal(wirexid_lookup_reply(&m, 1, wire + 1), WIREXID_NONE); /* never issued */
	assert_int_equal(m.st.stray, 3);
	/* Rewired for a retry: only the new XID finds it. */
	wirexid_rewire(&m, i);
	assert_int_equal(wirexid_lookup_reply(&m, 1, wire), WIREXID_NONE);
	assert_int_equal(wirexid_lookup_reply(&m, 1, wirexid_get(&m, i)->wire_xid), i);
	/* Answered: no longer found. */
	assert_int_equal(wirexid_reply(&m, 1, wirexid_get(&m, i)->wire_xid, 1), i);
	assert_int_equal(wirexid_lookup_reply(&m, 1, wirexid_get(&m, i)->wire_xid), WIREXID_NONE);
	wirexid_destroy(&m);
}

/* Full of calls in flight: a new call is refused; none of them is taken back. */
static void test_full_refuses_never_evicts_in_flight(void **state)
{
	(void)state;
	enum { N = 4 };
	struct wirexid m;
	struct wirexid_key k[N + 2];
	uint32_t idx[N], wire[N], x;

	map_init(&m, N, 1);
	for (unsigned c = 0; c < N + 2; c++)
		k[c] = key_of(3, (uint16_t)(1000 + c), 5);
	for (unsigned c = 0; c < N; c++) {
		assert_int_equal(wirexid_map(&m, &k[c], 0, c, WIREXID_SAFE_TWICE, 0, &idx[c]),
				 WIREXID_NEW);
		wire[c] = wirexid_get(&m, idx[c])->wire_xid;
	}
	assert_int_equal(wirexid_map(&m, &k[N], 0, 9, WIREXID_SAFE_TWICE, 1, &x), WIREXID_FULL);
	assert_int_equal(wirexid_map(&m, &k[N], 0, 9, WIREXID_SAFE_TWICE, 1 + 100 * TTL, &x),
			 WIREXID_FULL);
	assert_true(m.st.full == 2);
	for (unsigned c = 0; c < N; c++) {
		assert_int_equal(wirexid_map(&m, &k[c], 0, c, WIREXID_SAFE_TWICE, 2, &x),
				 WIREXID_IN_FLIGHT);
		assert_int_equal(x, idx[c]);
	}
	/* One answered: the next new call recycles it (early: an eviction), not an in-flight one.
	 */
	assert_int_equal(wirexid_reply(&m, 0, wire[1], 3), idx[1]);
	assert_int_equal(wirexid_map(&m, &k[N], 0, 9, WIREXID_SAFE_TWICE, 4, &x), WIREXID_NEW);
	assert_int_equal(x, idx[1]);
	assert_true(m.st.evicted == 1);
	assert_int_equal(wirexid_map(&m, &k[N + 1], 0, 9, WIREXID_SAFE_TWICE, 5, &x), WIREXID_FULL);
	for (unsigned c = 0; c < N; c++)
		if (c != 1)
			assert_int_equal(wirexid_reply(&m, 0, wire[c], 6), idx[c]);
	assert_int_equal(m.st.in_flight, 1);
	assert_int_equal(m.st.answered, N - 1);
	wirexid_destroy(&m);
}

/* Answered entries live for the TTL: a retransmission within it matches, after it is new. */
static void test_ttl_expiry(void **state)
{
	(void)state;
	struct wirexid m;
	struct wirexid_key k = key_of(4, 4000, 77);
	uint32_t i, j;

	map_init(&m, 8, 1);
	assert_int_equal(wirexid_map(&m, &k, 0, 1, WIREXID_SAFE_TWICE, 0, &i), WIREXID_NEW);
	uint32_t wire = wirexid_get(&m, i)->wire_xid;
	assert_int_equal(wirexid_reply(&m, 0, wire, 100), i);
	assert_int_equal(wirexid_map(&m, &k, 0, 2, WIREXID_SAFE_TWICE, 100 + TTL - 1, &j),
			 WIREXID_RESEND);
	assert_int_equal(wirexid_reply(&m, 0, wire, 200), i); /* the TTL runs from this answer */
	wirexid_expire(&m, 200 + TTL - 1);
	assert_int_equal(m.st.answered, 1);
	wirexid_expire(&m, 200 + TTL);
	assert_int_equal(m.st.answered, 0);
	assert_true(m.st.expired == 1);
	assert_int_equal(wirexid_map(&m, &k, 0, 3, WIREXID_SAFE_TWICE, 200 + TTL, &j), WIREXID_NEW);
	assert_int_not_equal(wirexid_get(&m, j)->wire_xid, wire);
	wirexid_destroy(&m);
}

/*
 * Wire XIDs are never handed out twice on a channel while entries recycle:
 * 20,000 calls through 8 entries, one channel, every wire XID distinct.
 */
static void test_wire_xids_not_reused(void **state)
{
	(void)state;
	enum { CALLS = 20000 };
	struct wirexid m;
	uint32_t *seen = calloc(CALLS, sizeof(*seen));
	uint32_t i;

	assert_non_null(seen);
	map_init(&m, 8, 1);
	for (uint32_t n = 0; n < CALLS; n++) {
		struct wirexid_key k =
			key_of((uint8_t)(n % 200), 700, 1); /* one XID from 200 clients */
		k.port = (uint16_t)(n / 200);
		assert_int_equal(wirexid_map(&m, &k, 0, n, WIREXID_SAFE_TWICE, n, &i), WIREXID_NEW);
		seen[n] = wirexid_get(&m, i)->wire_xid;
		assert_int_equal(wirexid_reply(&m, 0, seen[n], n), i);
	}
	for (uint32_t n = 1; n < CALLS; n++)
		assert_int_equal(seen[n], seen[n - 1] + 1); /* the channel's counter */
	assert_true(m.st.evicted + m.st.expired == CALLS - 8);
	free(seen);
	wirexid_destroy(&m);
}

/* A counter that meets a value still held skips it: a live wire XID is never issued twice. */
static void test_counter_skips_live_xid(void **state)
{
	(void)state;
	struct wirexid m;
	struct wirexid_key a = key_of(5, 1, 1), b = key_of(5, 2, 1);
	uint32_t i, j;

	map_init(&m, 8, 1);
	assert_int_equal(wirexid_map(&m, &a, 0, 1, WIREXID_SAFE_TWICE, 0, &i), WIREXID_NEW);
	m.next_xid[0] = wirexid_get(&m, i)->wire_xid; /* as after 2^32 allocations */
	assert_int_equal(wirexid_map(&m, &b, 0, 1, WIREXID_SAFE_TWICE, 0, &j), WIREXID_NEW);
	assert_int_equal(wirexid_get(&m, j)->wire_xid, wirexid_get(&m, i)->wire_xid + 1);
	wirexid_destroy(&m);
}

/*
 * A wire XID is unique per channel, not across them: two channels may carry
 * the same one, and a reply is matched on its channel. Channels 0 and 16
 * share the buckets of a 16-bucket table, so the chain holds both.
 */
static void test_same_wire_xid_on_two_channels(void **state)
{
	(void)state;
	struct wirexid m;
	struct wirexid_key a = key_of(8, 1, 1), b = key_of(8, 2, 1);
	uint32_t i, j;

	map_init(&m, 16, 17);
	m.next_xid[16] = m.next_xid[0];
	assert_int_equal(wirexid_map(&m, &a, 0, 1, WIREXID_SAFE_TWICE, 0, &i), WIREXID_NEW);
	assert_int_equal(wirexid_map(&m, &b, 16, 2, WIREXID_SAFE_TWICE, 0, &j), WIREXID_NEW);
	uint32_t wire = wirexid_get(&m, i)->wire_xid;
	assert_int_equal(wirexid_get(&m, j)->wire_xid, wire);
	assert_int_equal(wirexid_reply(&m, 16, wire, 1), j);
	assert_int_equal(wirexid_reply(&m, 0, wire, 1), i);
	wirexid_destroy(&m);
}

/* The RFC 8267 retry goes under a fresh wire XID; the first attempt's XID is dead. */
static void test_rewire(void **state)
{
	(void)state;
	struct wirexid m;
	struct wirexid_key k = key_of(6, 6000, 3);
	uint32_t i;

	map_init(&m, 8, 2);
	assert_int_equal(wirexid_map(&m, &k, 1, 1, WIREXID_SAFE_TWICE, 0, &i), WIREXID_NEW);
	uint32_t first = wirexid_get(&m, i)->wire_xid;
	wirexid_rewire(&m, i);
	uint32_t second = wirexid_get(&m, i)->wire_xid;
	assert_int_not_equal(first, second);
	assert_int_equal(wirexid_get(&m, i)->chan, 1);
	assert_int_equal(wirexid_reply(&m, 1, first, 1), WIREXID_NONE);
	assert_int_equal(wirexid_reply(&m, 1, second, 1), i);
	wirexid_destroy(&m);
}

/*
 * Random churn on a small map against a reference of what is live: every
 * verdict and every reply agrees, and the counts add up. Many keys share
 * buckets, which exercises unlinking from the middle of chains.
 */
static void test_churn_matches_reference(void **state)
{
	(void)state;
	enum { MAX = 32, KEYS = 96, CH = 3 };
	struct wirexid m;
	int ref[KEYS]; /* -1 unknown, else the entry's state */
	uint32_t idx[KEYS];
	uint64_t now = 0;

	struct wirexid_key keys[KEYS];

	map_init(&m, MAX, CH);
	for (unsigned n = 0; n < KEYS; n++) {
		ref[n] = -1;
		keys[n] = key_of((uint8_t)(n % 3), (uint16_t)(n / 3), 0xabc);
	}
	srand(11);
	for (unsigned step = 0; step < 200000; step++) {
		unsigned n = (unsigned)rand() % KEYS;
		struct wirexid_key k = keys[n];
		uint32_t i;

		now += (unsigned)rand() % 8;
		wirexid_expire(&m, now);
		/* What the map forgot (expired, or recycled for another key), the reference
		 * forgets. */
		for (unsigned x = 0; x < KEYS; x++) {
			if (ref[x] == WIREXID_ANSWERED &&
			    (m.e[idx[x]].state != WIREXID_ANSWERED ||
			     memcmp(&m.e[idx[x]].key, &keys[x], sizeof(keys[x])) != 0))
				ref[x] = -1;
		}
		switch (rand() % 4) {
		case 0:
		case 1: {
			/* Keys of one address (n % 3) mix both kinds, as an NFSv3 client does. */
			enum wirexid_twice t = rand() % 2 ? WIREXID_SAFE_TWICE : WIREXID_RUN_ONCE;
			enum wirexid_verdict v =
				wirexid_map(&m, &k, (uint16_t)(n % CH), n, t, now, &i);
			if (ref[n] == WIREXID_INFLIGHT) {
				assert_int_equal(v, WIREXID_IN_FLIGHT);
				assert_int_equal(i, idx[n]);
			} else if (ref[n] == WIREXID_ANSWERED) {
				assert_int_equal(v, WIREXID_RESEND);
				assert_int_equal(i, idx[n]);
				ref[n] = WIREXID_INFLIGHT;
			} else if (v == WIREXID_NEW) {
				idx[n] = i;
				ref[n] = WIREXID_INFLIGHT;
			} else {
				assert_int_equal(v, WIREXID_FULL);
				assert_int_equal(m.st.in_flight, MAX);
			}
			break;
		}
		case 2:
			if (ref[n] == WIREXID_INFLIGHT) {
				const struct wirexid_entry *e = &m.e[idx[n]];
				assert_int_equal(wirexid_reply(&m, e->chan, e->wire_xid, now),
						 idx[n]);
				ref[n] = WIREXID_ANSWERED;
			}
			break;
		default:
			if (ref[n] == WIREXID_INFLIGHT && rand() % 4 == 0) {
				wirexid_cancel(&m, idx[n]);
				ref[n] = -1;
			}
			break;
		}
		unsigned live = 0;
		for (unsigned x = 0; x < KEYS; x++)
			live += ref[x] == WIREXID_INFLIGHT;
		assert_int_equal(m.st.in_flight, live);
		assert_true(m.st.in_flight + m.st.answered <= MAX);
		if (step % 64 == 0)
			check_ledger(&m);
	}
	check_ledger(&m);
	assert_true(m.st.evicted_safe > 0 && m.st.evicted_own > 0 && m.st.evicted_other > 0);
	assert_true(m.st.evicted == m.st.evicted_safe + m.st.evicted_own + m.st.evicted_other);
	wirexid_destroy(&m);
}

/*
 * The hash tables are set up whole at init, so they are a fixed cost of a
 * shared route: a bucket per WIREXID_ENTRIES_PER_BUCKET entries (a quarter of
 * a bucket-per-entry table's 2 MiB at 140,800 entries, max_sessions 1,100
 * at the defaults), never fewer than 16; and a map that full of calls still
 * finds each of them by key and by wire XID.
 */
static void test_tables_sized_a_bucket_per_four_entries(void **state)
{
	(void)state;
	struct wirexid m;
	uint32_t idx;

	map_init(&m, 140800, 2);
	assert_int_equal(m.mask + 1, 65536);
	for (uint32_t i = 0; i < 140800; i++)
		assert_int_equal(wirexid_map(&m, &(struct wirexid_key){ .xid = i },
					     (uint16_t)(i & 1), i, WIREXID_SAFE_TWICE, 0, &idx),
				 WIREXID_NEW);
	assert_int_equal(wirexid_map(&m, &(struct wirexid_key){ .xid = 140800 }, 0, 1,
				     WIREXID_SAFE_TWICE, 0, &idx),
			 WIREXID_FULL);
	for (uint32_t i = 0; i < 140800; i += 7) {
		assert_int_equal(wirexid_map(&m, &(struct wirexid_key){ .xid = i }, 0, i,
					     WIREXID_SAFE_TWICE, 0, &idx),
				 WIREXID_IN_FLIGHT);
		const struct wirexid_entry *e = wirexid_get(&m, idx);
		assert_int_equal(e->key.xid, i);
		assert_int_equal(wirexid_lookup_reply(&m, e->chan, e->wire_xid), idx);
	}
	wirexid_destroy(&m);
	map_init(&m, 16, 1);
	assert_int_equal(m.mask + 1, 16);
	wirexid_destroy(&m);
}

/* ---- retention: whose answered entries a full map recycles ---- */

/*
 * Client A's REMOVE was answered, but the reply was lost with its
 * connection. Meanwhile client B, on the same route, makes four times the
 * map's size in NULLs and GETATTRs, eight at a time from several mounts.
 * A reconnects from its port and retransmits: the REMOVE goes out again
 * under the wire XID and on the channel it had, for the server's
 * duplicate request cache. B's calls recycled only B's own kind.
 */
static void test_read_only_flood_keeps_another_clients_remove(void **state)
{
	(void)state;
	enum { MAX = 64, WINDOW = 8 };
	struct wirexid m;
	struct wirexid_key a = key_of(1, 801, 0xa1);
	uint32_t ia, j, idx[WINDOW];
	uint64_t now = 0;

	map_init(&m, MAX, 2);
	ia = answered_call(&m, &a, WIREXID_RUN_ONCE, 11, now); /* channel 1 */
	uint32_t wire = wirexid_get(&m, ia)->wire_xid;
	for (uint32_t n = 0; n < 4 * MAX; n += WINDOW) {
		now++;
		for (uint32_t w = 0; w < WINDOW; w++) {
			struct wirexid_key b = key_of(2, (uint16_t)(700 + w), 0x2000 + n + w);
			assert_int_equal(
				wirexid_map(&m, &b, 0, 20 + w, WIREXID_SAFE_TWICE, now, &idx[w]),
				WIREXID_NEW);
		}
		for (uint32_t w = 0; w < WINDOW; w++) {
			const struct wirexid_entry *e = wirexid_get(&m, idx[w]);
			assert_int_equal(wirexid_reply(&m, e->chan, e->wire_xid, now), idx[w]);
		}
	}
	assert_true(now < TTL);
	assert_int_equal(wirexid_map(&m, &a, 0, 12, WIREXID_RUN_ONCE, now, &j), WIREXID_RESEND);
	assert_int_equal(j, ia);
	assert_int_equal(wirexid_get(&m, j)->wire_xid, wire);
	assert_int_equal(wirexid_get(&m, j)->chan, 1);
	assert_true(wirexid_get(&m, j)->owner == 12);
	assert_true(m.st.evicted > 0);
	assert_true(m.st.evicted == m.st.evicted_safe);
	check_ledger(&m);
	wirexid_destroy(&m);
}

/*
 * Client B makes REMOVEs, CREATEs and RENAMEs as fast as it can, four times
 * the map's size of them, each from a new port (many mounts, reconnects):
 * one address, so it recycles its own oldest, never A's. A's three
 * answered calls all go again under their wire XIDs.
 */
static void test_run_once_flood_recycles_its_own(void **state)
{
	(void)state;
	enum { MAX = 64, A_CALLS = 3 };
	struct wirexid m;
	struct wirexid_key a[A_CALLS];
	uint32_t ia[A_CALLS], wire[A_CALLS], j;
	uint64_t now = 0;

	map_init(&m, MAX, 1);
	for (uint32_t n = 0; n < A_CALLS; n++) {
		a[n] = key_of(1, 801, 0xa0 + n);
		ia[n] = answered_call(&m, &a[n], WIREXID_RUN_ONCE, 10, now);
		wire[n] = wirexid_get(&m, ia[n])->wire_xid;
	}
	for (uint32_t n = 0; n < 4 * MAX; n++) {
		struct wirexid_key b = key_of(2, (uint16_t)(1000 + n), 0xb0);
		answered_call(&m, &b, WIREXID_RUN_ONCE, 20 + n, ++now);
	}
	for (uint32_t n = 0; n < A_CALLS; n++) {
		assert_int_equal(wirexid_map(&m, &a[n], 0, 11, WIREXID_RUN_ONCE, now, &j),
				 WIREXID_RESEND);
		assert_int_equal(j, ia[n]);
		assert_int_equal(wirexid_get(&m, j)->wire_xid, wire[n]);
	}
	assert_int_equal(m.st.kept_clients, 1); /* B; A's calls are in flight again */
	check_ledger(&m);
	assert_true(m.st.evicted_own >= 3 * MAX);
	assert_true(m.st.evicted == m.st.evicted_own);
	wirexid_destroy(&m);
}

/*
 * A flood of reads when the map is full recycles the oldest answered read,
 * whoever made it, before any kept call, even one older still: A's
 * answered REMOVE (the oldest entry of all) stays, A's READs go first.
 */
static void test_read_only_flood_recycles_reads_oldest_first(void **state)
{
	(void)state;
	enum { MAX = 16 };
	struct wirexid m;
	struct wirexid_key rm = key_of(1, 801, 1);
	uint32_t reads[MAX - 1], i, j;

	map_init(&m, MAX, 1);
	uint32_t irm = answered_call(&m, &rm, WIREXID_RUN_ONCE, 1, 0);
	for (uint32_t n = 0; n < MAX - 1; n++) {
		struct wirexid_key r = key_of(1, 801, 100 + n);
		reads[n] = answered_call(&m, &r, WIREXID_SAFE_TWICE, 1, 1 + n);
	}
	uint32_t took[3 * MAX];
	for (uint32_t n = 0; n < 3 * MAX; n++) {
		struct wirexid_key b = key_of(2, 700, 500 + n);
		assert_int_equal(wirexid_map(&m, &b, 0, 2, WIREXID_SAFE_TWICE, 100, &i),
				 WIREXID_NEW);
		took[n] = i;
		assert_int_equal(wirexid_reply(&m, 0, wirexid_get(&m, i)->wire_xid, 100), i);
	}
	assert_int_equal(wirexid_map(&m, &rm, 0, 3, WIREXID_RUN_ONCE, 101, &j), WIREXID_RESEND);
	assert_int_equal(j, irm);
	for (uint32_t n = 0; n < MAX - 1; n++)
		assert_int_equal(took[n], reads[n]); /* A's reads, oldest first */
	assert_true(m.st.evicted == 3 * MAX);
	assert_true(m.st.evicted_safe == 3 * MAX);
	check_ledger(&m);
	wirexid_destroy(&m);
}

/*
 * The map is full of kept calls: D answered two long ago (the oldest
 * entries), A all the rest. C, new, makes ten REMOVEs: below its share,
 * each takes the oldest of the address that holds the most (A), never D's,
 * though D's are older. Then A, far above its share, recycles its own.
 */
static void test_below_share_takes_from_the_largest(void **state)
{
	(void)state;
	enum { MAX = 64, D_CALLS = 2 };
	struct wirexid m;
	struct wirexid_key d[D_CALLS], a[MAX];
	uint32_t id[D_CALLS], ia[MAX], i, j;
	uint64_t now = 0;

	map_init(&m, MAX, 1);
	for (uint32_t n = 0; n < D_CALLS; n++) {
		d[n] = key_of(4, 900, n);
		id[n] = answered_call(&m, &d[n], WIREXID_RUN_ONCE, 4, now++);
	}
	for (uint32_t n = 0; n < MAX - D_CALLS; n++) {
		a[n] = key_of(1, (uint16_t)(800 + n % 3), n);
		ia[n] = answered_call(&m, &a[n], WIREXID_RUN_ONCE, 1, now++);
	}
	uint32_t took[10];
	for (uint32_t n = 0; n < 10; n++) {
		struct wirexid_key c = key_of(3, 700, n);
		took[n] = answered_call(&m, &c, WIREXID_RUN_ONCE, 3, now++);
	}
	for (uint32_t n = 0; n < D_CALLS; n++) {
		assert_int_equal(wirexid_map(&m, &d[n], 0, 5, WIREXID_RUN_ONCE, now, &j),
				 WIREXID_RESEND);
		assert_int_equal(j, id[n]);
	}
	for (uint32_t n = 0; n < 10; n++)
		assert_int_equal(took[n], ia[n]);
	assert_true(m.st.evicted_other == 10);
	assert_true(m.st.evicted == 10);
	assert_int_equal(m.most, MAX - D_CALLS - 10);
	check_ledger(&m);
	/* A: 52 of the 62 kept entries, 2 addresses: above its share, its own oldest. */
	struct wirexid_key a2 = key_of(1, 801, 0x999);
	i = answered_call(&m, &a2, WIREXID_RUN_ONCE, 1, now++);
	assert_int_equal(i, ia[10]);
	assert_true(m.st.evicted_own == 1);
	/* What A kept goes again under its wire XID; what it gave up is a new call now. */
	assert_int_equal(wirexid_map(&m, &a[11], 0, 1, WIREXID_RUN_ONCE, now, &j), WIREXID_RESEND);
	assert_int_equal(j, ia[11]);
	assert_int_equal(wirexid_map(&m, &a[0], 0, 1, WIREXID_RUN_ONCE, now, &j), WIREXID_NEW);
	check_ledger(&m);
	wirexid_destroy(&m);
}

/*
 * A read that finds every answered entry kept (no read answered to
 * recycle) takes the oldest of the address holding the most: a map full
 * of answers is never a refusal, and the reader's answer is then a read's
 * to recycle, not another kept entry.
 */
static void test_read_into_a_map_of_kept_calls(void **state)
{
	(void)state;
	enum { MAX = 16 };
	struct wirexid m;
	uint32_t ia[MAX], i;

	map_init(&m, MAX, 1);
	for (uint32_t n = 0; n < MAX; n++) { /* 192.0.2.1 holds 10, 192.0.2.2 holds 6 */
		struct wirexid_key a = key_of(n < 10 ? 1 : 2, 800, n);
		ia[n] = answered_call(&m, &a, WIREXID_RUN_ONCE, 1, n);
	}
	struct wirexid_key r = key_of(9, 700, 1), r2 = key_of(9, 700, 2);
	i = answered_call(&m, &r, WIREXID_SAFE_TWICE, 9, 20);
	assert_int_equal(i, ia[0]);
	assert_true(m.st.evicted_other == 1);
	assert_int_equal(answered_call(&m, &r2, WIREXID_SAFE_TWICE, 9, 21), i);
	assert_true(m.st.evicted_safe == 1);
	assert_int_equal(m.st.kept, MAX - 1);
	check_ledger(&m);
	wirexid_destroy(&m);
}

/*
 * A call answered kept, retransmitted, answered again: its address holds
 * it once, the newest now; a READ retransmitted as a WRITE of the same
 * XID (the same call: one copy that may not run twice is enough) is kept.
 */
static void test_retransmission_keeps_ledger_straight(void **state)
{
	(void)state;
	struct wirexid m;
	struct wirexid_key k1 = key_of(1, 801, 1), k2 = key_of(1, 802, 2), k3 = key_of(1, 803, 3);
	uint32_t i1, i2, i3, j;

	map_init(&m, 8, 1);
	i1 = answered_call(&m, &k1, WIREXID_RUN_ONCE, 1, 0);
	i2 = answered_call(&m, &k2, WIREXID_RUN_ONCE, 1, 1);
	assert_int_equal(m.cl[m.e[i1].client].kept, 2);
	assert_int_equal(m.cl[m.e[i1].client].head, i1);
	assert_int_equal(wirexid_map(&m, &k1, 0, 2, WIREXID_RUN_ONCE, 2, &j), WIREXID_RESEND);
	assert_int_equal(m.st.kept, 1);
	check_ledger(&m);
	assert_int_equal(wirexid_reply(&m, 0, m.e[i1].wire_xid, 3), i1);
	assert_int_equal(m.cl[m.e[i1].client].head, i2);
	assert_int_equal(m.cl[m.e[i1].client].tail, i1);
	check_ledger(&m);

	i3 = answered_call(&m, &k3, WIREXID_SAFE_TWICE, 1, 4);
	assert_int_equal(m.e[i3].client, 0);
	assert_int_equal(wirexid_map(&m, &k3, 0, 1, WIREXID_RUN_ONCE, 5, &j), WIREXID_RESEND);
	assert_int_equal(wirexid_reply(&m, 0, m.e[i3].wire_xid, 6), i3);
	assert_int_not_equal(m.e[i3].client, 0);
	assert_int_equal(m.st.kept, 3);
	/* ... and a later copy that says it may run twice does not undo that. */
	assert_int_equal(wirexid_map(&m, &k3, 0, 1, WIREXID_SAFE_TWICE, 7, &j), WIREXID_RESEND);
	assert_int_equal(wirexid_reply(&m, 0, m.e[i3].wire_xid, 8), i3);
	assert_int_not_equal(m.e[i3].client, 0);
	check_ledger(&m);
	wirexid_destroy(&m);
}

/*
 * After the TTL every answered entry goes, kept or not: the ledger is empty
 * again, its records free for other addresses, and the map fills to its
 * size with calls in flight.
 */
static void test_ttl_expiry_frees_every_kind(void **state)
{
	(void)state;
	enum { MAX = 32 };
	struct wirexid m;
	uint32_t i;

	map_init(&m, MAX, 1);
	for (uint32_t n = 0; n < MAX; n++) {
		struct wirexid_key k = key_of((uint8_t)(1 + n % 5), 800, n);
		answered_call(&m, &k, n % 3 ? WIREXID_RUN_ONCE : WIREXID_SAFE_TWICE, n, n);
	}
	assert_int_equal(m.st.kept_clients, 5);
	assert_true(m.st.kept > 0 && m.st.kept < MAX);
	uint32_t made = m.cl_made;
	wirexid_expire(&m, MAX - 1 + TTL - 1);
	assert_int_equal(m.st.answered, 1);
	wirexid_expire(&m, MAX - 1 + TTL);
	assert_int_equal(m.st.answered, 0);
	assert_int_equal(m.st.kept, 0);
	assert_int_equal(m.st.kept_clients, 0);
	assert_int_equal(m.most, 0);
	assert_true(m.st.expired == MAX);
	assert_true(m.st.evicted == 0);
	for (uint32_t b = 0; b <= m.mask; b++)
		assert_int_equal(m.cl_head[b], 0);
	check_ledger(&m);
	/* Other addresses reuse the records. */
	for (uint32_t n = 0; n < 5; n++) {
		struct wirexid_key k = key_of((uint8_t)(100 + n), 800, n);
		answered_call(&m, &k, WIREXID_RUN_ONCE, n, 2 * TTL);
	}
	assert_int_equal(m.cl_made, made);
	for (uint32_t n = 5; n < MAX; n++) {
		struct wirexid_key k = key_of(200, 800, n);
		assert_int_equal(wirexid_map(&m, &k, 0, n, WIREXID_RUN_ONCE, 2 * TTL, &i),
				 WIREXID_NEW);
	}
	assert_int_equal(wirexid_map(&m, &(struct wirexid_key){ .xid = 1 }, 0, 1,
				     WIREXID_SAFE_TWICE, 2 * TTL, &i),
			 WIREXID_NEW); /* the oldest kept entry, of one of the five */
	assert_int_equal(m.st.in_flight, MAX - 4);
	check_ledger(&m);
	wirexid_destroy(&m);
}

/*
 * Bounded memory: after init the map allocates nothing, whatever its
 * callers do - here 40,000 calls from 3,000 addresses (each its own
 * client), both kinds, retransmissions, replies, cancels and expiry - and
 * the ledger never holds more records than the map has entries. An
 * allocation failing at init, any of them, is -ENOMEM with nothing left
 * behind (the sanitizer's leak check).
 */
static void test_memory_bounded_after_init(void **state)
{
	(void)state;
	enum { MAX = 128, ADDRS = 3000, CALLS = 40000 };
	struct wirexid m;
	uint32_t most_records = 0, idx = 0;
	uint64_t now = 0;
	struct wirexid_params p = { .max_entries = MAX, .ttl_us = TTL, .channels = 2, .seed = 7 };

	for (unsigned fail = 1;; fail++) {
		alloc_fail_in = fail;
		int rc = wirexid_init(&m, &p);
		if (rc == 0) {
			assert_true(fail > 4); /* entries, three tables, the ledger's three */
			alloc_fail_in = 0;
			wirexid_destroy(&m);
			break;
		}
		assert_int_equal(rc, -ENOMEM);
		assert_null(m.e);
	}
	assert_int_equal(wirexid_init(&m, &p), 0);
	unsigned at_init = allocs;
	srand(5);
	for (uint32_t n = 0; n < CALLS; n++) {
		struct wirexid_key k = { .xid = (uint32_t)rand() % 4 };
		uint32_t a = (uint32_t)rand() % ADDRS;
		memcpy(k.addr, &a, sizeof(a));
		k.port = (uint16_t)(rand() % 3);
		now += (unsigned)rand() % 3;
		enum wirexid_verdict v =
			wirexid_map(&m, &k, (uint16_t)(n & 1), n,
				    rand() % 2 ? WIREXID_RUN_ONCE : WIREXID_SAFE_TWICE, now, &idx);
		if (v == WIREXID_FULL)
			continue;
		const struct wirexid_entry *e = wirexid_get(&m, idx);
		if (rand() % 8 == 0)
			wirexid_cancel(&m, idx);
		else if (e->state == WIREXID_INFLIGHT && rand() % 8 != 0)
			wirexid_reply(&m, e->chan, e->wire_xid, now);
		if (m.cl_made - 1 > most_records)
			most_records = m.cl_made - 1;
		assert_true(m.st.kept_clients <= MAX);
	}
	assert_int_equal(allocs, at_init);
	assert_true(most_records <= MAX);
	assert_true(m.st.evicted_other > 0 && m.st.evicted_own > 0);
	check_ledger(&m);
	wirexid_destroy(&m);
}

/*
 * An RPCSEC_GSS call keeps its XID on the wire (issue 30: the GSS verifier
 * covers it): its wire XID is the client's own, its retransmission goes
 * again under it, a rewire leaves it, and the channel's counter skips it.
 */
static void test_own_xid_goes_under_its_own_xid(void **state)
{
	(void)state;
	struct wirexid m;
	uint32_t idx, other;
	struct wirexid_key a = key_of(1, 800, 0x5eed0001);

	map_init(&m, 64, 2);
	assert_int_equal(wirexid_map_own_xid(&m, &a, 1, 7, 0, &idx), WIREXID_NEW);
	assert_int_equal(wirexid_get(&m, idx)->wire_xid, 0x5eed0001);
	assert_int_equal(wirexid_get(&m, idx)->chan, 1);
	wirexid_rewire(&m, idx);
	assert_int_equal(wirexid_get(&m, idx)->wire_xid, 0x5eed0001);
	assert_int_equal(wirexid_reply(&m, 1, 0x5eed0001, 10), idx);
	/* Its retransmission: the same entry and XID; it is kept as a run-once call. */
	assert_int_equal(wirexid_map_own_xid(&m, &a, 1, 8, 20, &other), WIREXID_RESEND);
	assert_int_equal(other, idx);
	assert_int_equal(wirexid_get(&m, idx)->wire_xid, 0x5eed0001);
	assert_int_equal(wirexid_get(&m, idx)->twice, WIREXID_RUN_ONCE);
	/* The counter never hands out a value an own-XID call holds. */
	m.next_xid[1] = 0x5eed0001;
	struct wirexid_key b = key_of(2, 800, 0x77);
	assert_int_equal(wirexid_map(&m, &b, 1, 9, WIREXID_RUN_ONCE, 30, &other), WIREXID_NEW);
	assert_int_equal(wirexid_get(&m, other)->wire_xid, 0x5eed0002);
	check_ledger(&m);
	wirexid_destroy(&m);
}

/*
 * Two clients' GSS calls with one XID: on another channel both go; on the
 * same channel, while the first is in flight the second is refused and
 * takes nothing; once the first is answered, the second displaces it.
 */
static void test_own_xid_held_by_another_call(void **state)
{
	(void)state;
	struct wirexid m;
	uint32_t ia, ib;
	struct wirexid_key a = key_of(1, 800, 0xabc), b = key_of(2, 900, 0xabc);

	map_init(&m, 64, 2);
	assert_int_equal(wirexid_map_own_xid(&m, &a, 0, 1, 0, &ia), WIREXID_NEW);
	assert_int_equal(wirexid_map_own_xid(&m, &b, 0, 2, 0, &ib), WIREXID_XID_BUSY);
	assert_int_equal(m.st.own_xid_busy, 1);
	assert_int_equal(m.st.in_flight, 1);
	assert_int_equal(wirexid_map_own_xid(&m, &b, 1, 2, 0, &ib), WIREXID_NEW);
	assert_int_equal(wirexid_get(&m, ib)->wire_xid, 0xabc);
	wirexid_cancel(&m, ib);

	assert_int_equal(wirexid_reply(&m, 0, 0xabc, 10), ia);
	assert_int_equal(wirexid_map_own_xid(&m, &b, 0, 2, 20, &ib), WIREXID_NEW);
	assert_int_equal(m.st.own_xid_displaced, 1);
	assert_int_equal(wirexid_get(&m, ib)->wire_xid, 0xabc);
	/* B's reply on that channel is B's, never A's. */
	assert_int_equal(wirexid_reply(&m, 0, 0xabc, 30), ib);
	assert_memory_equal(wirexid_get(&m, ib)->key.addr, b.addr, 16);
	check_ledger(&m);
	wirexid_destroy(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_params_checked),
		cmocka_unit_test(test_key_families),
		cmocka_unit_test(test_retransmission_keeps_wire_xid),
		cmocka_unit_test(test_entries_made_when_needed),
		cmocka_unit_test(test_clients_get_distinct_wire_xids),
		cmocka_unit_test(test_stray_replies_rejected),
		cmocka_unit_test(test_lookup_reply_leaves_it_in_flight),
		cmocka_unit_test(test_full_refuses_never_evicts_in_flight),
		cmocka_unit_test(test_ttl_expiry),
		cmocka_unit_test(test_wire_xids_not_reused),
		cmocka_unit_test(test_counter_skips_live_xid),
		cmocka_unit_test(test_same_wire_xid_on_two_channels),
		cmocka_unit_test(test_rewire),
		cmocka_unit_test(test_churn_matches_reference),
		cmocka_unit_test(test_tables_sized_a_bucket_per_four_entries),
		cmocka_unit_test(test_read_only_flood_keeps_another_clients_remove),
		cmocka_unit_test(test_run_once_flood_recycles_its_own),
		cmocka_unit_test(test_read_only_flood_recycles_reads_oldest_first),
		cmocka_unit_test(test_below_share_takes_from_the_largest),
		cmocka_unit_test(test_read_into_a_map_of_kept_calls),
		cmocka_unit_test(test_retransmission_keeps_ledger_straight),
		cmocka_unit_test(test_ttl_expiry_frees_every_kind),
		cmocka_unit_test(test_memory_bounded_after_init),
		cmocka_unit_test(test_own_xid_goes_under_its_own_xid),
		cmocka_unit_test(test_own_xid_held_by_another_call),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
