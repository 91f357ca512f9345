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
	assert_int_equal(wirexid_map(&m, &k, 2, 10, 0, &i), WIREXID_NEW);
	const struct wirexid_entry *e = wirexid_get(&m, i);
	uint32_t wire = e->wire_xid;
	assert_int_equal(e->chan, 2);

	assert_int_equal(wirexid_map(&m, &k, 3, 10, 5, &j), WIREXID_IN_FLIGHT);
	assert_int_equal(j, i);
	/* The client reconnected while the call was in flight: the reply goes to it. */
	assert_int_equal(wirexid_map(&m, &k, 0, 11, 6, &j), WIREXID_IN_FLIGHT);
	assert_int_equal(j, i);
	assert_true(e->owner == 11);

	assert_int_equal(wirexid_reply(&m, 2, wire, 10), i);
	assert_int_equal(e->state, WIREXID_ANSWERED);
	/* Reply lost with the connection; reconnect, retransmit, other channel hint. */
	assert_int_equal(wirexid_map(&m, &k, 1, 12, 500, &j), WIREXID_RESEND);
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
		assert_int_equal(wirexid_map(&m, &k, 0, 10, 0, &i), WIREXID_NEW);
		wirexid_cancel(&m, i);
	}
	assert_int_equal(m.made, 1);
	struct wirexid_key a = key_of(1, 801, 1000), b = key_of(2, 801, 1000);
	assert_int_equal(wirexid_map(&m, &a, 0, 10, 0, &i), WIREXID_NEW);
	assert_int_equal(wirexid_map(&m, &b, 0, 11, 0, &j), WIREXID_NEW);
	assert_true(i != j);
	assert_int_equal(m.made, 2);
	/* The untouched rest is still all there: the map fills to its size. */
	for (uint32_t n = 2; n < 4096; n++) {
		struct wirexid_key k = key_of(3, 801, n);
		assert_int_equal(wirexid_map(&m, &k, 1, 12, 0, &i), WIREXID_NEW);
	}
	assert_int_equal(m.made, 4096);
	struct wirexid_key k = key_of(4, 801, 1);
	assert_int_equal(wirexid_map(&m, &k, 1, 13, 0, &i), WIREXID_FULL);
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
		assert_int_equal(wirexid_map(&m, &k[c], 0, 100 + c, 0, &idx[c]), WIREXID_NEW);
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
	assert_int_equal(wirexid_map(&m, &k, 0, 1, 0, &i), WIREXID_NEW);
	uint32_t wire = wirexid_get(&m, i)->wire_xid;
	assert_int_equal(wirexid_reply(&m, 0, wire + 1000, 1), WIREXID_NONE); /* never issued */
	assert_int_equal(wirexid_reply(&m, 1, wire, 1), WIREXID_NONE);	      /* other channel */
	assert_int_equal(wirexid_reply(&m, 7, wire, 1), WIREXID_NONE);	      /* no such channel */
	assert_int_equal(wirexid_reply(&m, 0, wire, 1), i);
	assert_int_equal(wirexid_reply(&m, 0, wire, 2), WIREXID_NONE); /* answered already */

	/* Cancelled (never sent): a late reply finds nothing. */
	assert_int_equal(wirexid_map(&m, &k2, 0, 1, 3, &i2), WIREXID_NEW);
	uint32_t wire2 = wirexid_get(&m, i2)->wire_xid;
	wirexid_cancel(&m, i2);
	assert_int_equal(wirexid_reply(&m, 0, wire2, 4), WIREXID_NONE);

	/* Expired: the late reply finds nothing, even after the entry served another client. */
	struct wirexid_key k3 = key_of(9, 900, 1);
	uint32_t i3;
	assert_int_equal(wirexid_map(&m, &k3, 0, 2, 5000, &i3), WIREXID_NEW);
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
	assert_int_equal(wirexid_map(&m, &k, 1, 1, 0, &i), WIREXID_NEW);
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
		assert_int_equal(wirexid_map(&m, &k[c], 0, c, 0, &idx[c]), WIREXID_NEW);
		wire[c] = wirexid_get(&m, idx[c])->wire_xid;
	}
	assert_int_equal(wirexid_map(&m, &k[N], 0, 9, 1, &x), WIREXID_FULL);
	assert_int_equal(wirexid_map(&m, &k[N], 0, 9, 1 + 100 * TTL, &x), WIREXID_FULL);
	assert_true(m.st.full == 2);
	for (unsigned c = 0; c < N; c++) {
		assert_int_equal(wirexid_map(&m, &k[c], 0, c, 2, &x), WIREXID_IN_FLIGHT);
		assert_int_equal(x, idx[c]);
	}
	/* One answered: the next new call recycles it (early: an eviction), not an in-flight one.
	 */
	assert_int_equal(wirexid_reply(&m, 0, wire[1], 3), idx[1]);
	assert_int_equal(wirexid_map(&m, &k[N], 0, 9, 4, &x), WIREXID_NEW);
	assert_int_equal(x, idx[1]);
	assert_true(m.st.evicted == 1);
	assert_int_equal(wirexid_map(&m, &k[N + 1], 0, 9, 5, &x), WIREXID_FULL);
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
	assert_int_equal(wirexid_map(&m, &k, 0, 1, 0, &i), WIREXID_NEW);
	uint32_t wire = wirexid_get(&m, i)->wire_xid;
	assert_int_equal(wirexid_reply(&m, 0, wire, 100), i);
	assert_int_equal(wirexid_map(&m, &k, 0, 2, 100 + TTL - 1, &j), WIREXID_RESEND);
	assert_int_equal(wirexid_reply(&m, 0, wire, 200), i); /* the TTL runs from this answer */
	wirexid_expire(&m, 200 + TTL - 1);
	assert_int_equal(m.st.answered, 1);
	wirexid_expire(&m, 200 + TTL);
	assert_int_equal(m.st.answered, 0);
	assert_true(m.st.expired == 1);
	assert_int_equal(wirexid_map(&m, &k, 0, 3, 200 + TTL, &j), WIREXID_NEW);
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
		assert_int_equal(wirexid_map(&m, &k, 0, n, n, &i), WIREXID_NEW);
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
	assert_int_equal(wirexid_map(&m, &a, 0, 1, 0, &i), WIREXID_NEW);
	m.next_xid[0] = wirexid_get(&m, i)->wire_xid; /* as after 2^32 allocations */
	assert_int_equal(wirexid_map(&m, &b, 0, 1, 0, &j), WIREXID_NEW);
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
	assert_int_equal(wirexid_map(&m, &a, 0, 1, 0, &i), WIREXID_NEW);
	assert_int_equal(wirexid_map(&m, &b, 16, 2, 0, &j), WIREXID_NEW);
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
	assert_int_equal(wirexid_map(&m, &k, 1, 1, 0, &i), WIREXID_NEW);
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
			enum wirexid_verdict v =
				wirexid_map(&m, &k, (uint16_t)(n % CH), n, now, &i);
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
	}
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
					     (uint16_t)(i & 1), i, 0, &idx),
				 WIREXID_NEW);
	assert_int_equal(wirexid_map(&m, &(struct wirexid_key){ .xid = 140800 }, 0, 1, 0, &idx),
			 WIREXID_FULL);
	for (uint32_t i = 0; i < 140800; i += 7) {
		assert_int_equal(wirexid_map(&m, &(struct wirexid_key){ .xid = i }, 0, i, 0, &idx),
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
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
