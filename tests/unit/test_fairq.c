/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "gateway/maps/fairq.h"

/* A call as a caller would hold one: the item embedded, and who sent it. */
struct call {
	struct fairq_item it;
	unsigned client;
	unsigned n;
};

static struct call *call_of(struct fairq_item *it)
{
	return it ? (struct call *)((char *)it - offsetof(struct call, it)) : NULL;
}

static void queue_calls(struct fairq *q, struct fairq_client *c, struct call *calls, unsigned n,
			unsigned client, uint64_t now)
{
	for (unsigned i = 0; i < n; i++) {
		calls[i].client = client;
		calls[i].n = i;
		fairq_enqueue(q, c, &calls[i].it, now);
	}
}

/* A new client @c of @q, with no cap of its own, that queues @n calls at time 0 as client @who. */
static void client_queues(struct fairq *q, struct fairq_client *c, struct call *calls, unsigned n,
			  unsigned who)
{
	fairq_client_init(c, 0);
	queue_calls(q, c, calls, n, who, 0);
}

/* One client with 64 calls queued, another with 1 after it: the second goes within 2 picks. */
static void test_deep_queue_does_not_starve(void **state)
{
	(void)state;
	struct fairq q;
	struct fairq_client a, b;
	struct call ca[64], cb[1];

	for (uint32_t grant = 1; grant <= 64; grant *= 8) {
		fairq_init(&q, 1, grant);
		client_queues(&q, &a, ca, 64, 0);
		client_queues(&q, &b, cb, 1, 1);
		unsigned picks = 0, b_at = 0;
		while (!b_at) {
			struct call *c = call_of(fairq_pick(&q, 1));
			assert_non_null(c);
			picks++;
			if (c->client == 1)
				b_at = picks;
			else
				fairq_complete(&q, &a);
		}
		assert_true(b_at <= 2);
		/* A's calls keep their order. */
		fairq_complete(&q, &b);
		for (unsigned n = 1; n < 64; n++) {
			struct call *c = call_of(fairq_pick(&q, 2));
			assert_non_null(c);
			assert_int_equal(c->client, 0);
			assert_int_equal(c->n, n);
			fairq_complete(&q, &a);
		}
		assert_null(fairq_pick(&q, 3));
		assert_int_equal(q.queued, 0);
		assert_int_equal(q.in_flight, 0);
	}
}

/* Picks alternate between clients, and a quantum of 4 gives turns of 4. */
static void test_round_robin_and_quantum(void **state)
{
	(void)state;
	struct fairq q;
	struct fairq_client a, b, c;
	struct call ca[8], cb[8], cc[8];
	const unsigned want1[] = { 0, 1, 2, 0, 1, 2 };
	const unsigned want4[] = { 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 0, 0 };

	fairq_init(&q, 1, 100);
	client_queues(&q, &a, ca, 8, 0);
	client_queues(&q, &b, cb, 8, 1);
	client_queues(&q, &c, cc, 8, 2);
	for (unsigned i = 0; i < 6; i++)
		assert_int_equal(call_of(fairq_pick(&q, 0))->client, want1[i]);

	fairq_init(&q, 4, 100);
	client_queues(&q, &a, ca, 8, 0);
	client_queues(&q, &b, cb, 8, 1);
	client_queues(&q, &c, cc, 8, 2);
	for (unsigned i = 0; i < 14; i++)
		assert_int_equal(call_of(fairq_pick(&q, 0))->client, want4[i]);
}

/*
 * The cap of a client on a shared connection: half the credits by default
 * (at least 1), or the route's shared_client_max_in_flight, at most the
 * credits.
 */
static void test_share_cap(void **state)
{
	(void)state;
	assert_int_equal(fairq_share_cap(64, 0), 32);
	assert_int_equal(fairq_share_cap(4, 0), 2);
	assert_int_equal(fairq_share_cap(1, 0), 1);
	assert_int_equal(fairq_share_cap(0, 0), 1);
	assert_int_equal(fairq_share_cap(64, 4), 4);
	assert_int_equal(fairq_share_cap(64, 1), 1);
	assert_int_equal(fairq_share_cap(4, 8), 4);
	assert_int_equal(fairq_share_cap(64, 1024), 64);
}

/* A client at its cap waits for its own replies while the others use the credits. */
static void test_per_client_cap(void **state)
{
	(void)state;
	struct fairq q;
	struct fairq_client a, b;
	struct call ca[10], cb[3];

	fairq_init(&q, 1, 32);
	fairq_client_init(&a, 2);
	fairq_client_init(&b, 0);
	queue_calls(&q, &a, ca, 10, 0, 0);
	assert_non_null(fairq_pick(&q, 0));
	assert_non_null(fairq_pick(&q, 0));
	assert_null(fairq_pick(&q, 0)); /* credits free, but A is at its cap */
	assert_int_equal(a.in_flight, 2);
	queue_calls(&q, &b, cb, 3, 1, 0);
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(call_of(fairq_pick(&q, 0))->client, 1);
	assert_null(fairq_pick(&q, 0));
	fairq_complete(&q, &a);
	struct call *c = call_of(fairq_pick(&q, 0));
	assert_non_null(c);
	assert_int_equal(c->client, 0);
	assert_int_equal(c->n, 2);
	assert_null(fairq_pick(&q, 0));
	assert_int_equal(a.in_flight, 2);
	assert_int_equal(a.queued, 7);
}

static void count_drop(struct fairq_item *it, void *arg)
{
	unsigned *dropped = arg;

	assert_int_equal(call_of(it)->client, 0); /* only the leaving client's calls */
	(*dropped)++;
}

/* A client that goes away drops its queued calls only; its calls in flight keep their credits. */
static void test_detach_drops_only_its_calls(void **state)
{
	(void)state;
	struct fairq q;
	struct fairq_client a, b;
	struct call ca[5], cb[3];
	unsigned dropped = 0;

	fairq_init(&q, 1, 2);
	client_queues(&q, &a, ca, 5, 0);
	client_queues(&q, &b, cb, 3, 1);
	assert_int_equal(call_of(fairq_pick(&q, 0))->client, 0);
	assert_int_equal(call_of(fairq_pick(&q, 0))->client, 1);
	fairq_client_detach(&q, &a, count_drop, &dropped);
	assert_int_equal(dropped, 4);
	assert_true(a.dropped == 4);
	assert_int_equal(q.queued, 2);
	assert_int_equal(q.orphans, 1);
	assert_null(fairq_pick(&q, 0)); /* A's call in flight still holds its credit */
	fairq_complete(&q, NULL);
	assert_int_equal(q.orphans, 0);
	struct call *c = call_of(fairq_pick(&q, 0));
	assert_int_equal(c->client, 1);
	assert_int_equal(c->n, 1);
	fairq_complete(&q, &b);
	fairq_complete(&q, &b);
	c = call_of(fairq_pick(&q, 0));
	assert_int_equal(c->n, 2);
	assert_null(fairq_pick(&q, 0));
	assert_int_equal(q.queued, 0);
}

/* The grant shrinks (no pick until in flight is below it) and grows; 0 reads as 1. */
static void test_grant_changes(void **state)
{
	(void)state;
	struct fairq q;
	struct fairq_client a;
	struct call ca[20];
	unsigned n = 0;

	fairq_init(&q, 1, 4);
	client_queues(&q, &a, ca, 20, 0);
	while (fairq_pick(&q, 0))
		n++;
	assert_int_equal(n, 4);
	assert_true(q.stalls == 1);
	fairq_set_grant(&q, 2);
	fairq_complete(&q, &a);
	assert_null(fairq_pick(&q, 0)); /* 3 in flight, grant 2 */
	fairq_complete(&q, &a);
	assert_null(fairq_pick(&q, 0)); /* 2 in flight, grant 2 */
	fairq_complete(&q, &a);
	assert_non_null(fairq_pick(&q, 0));
	assert_null(fairq_pick(&q, 0));
	fairq_set_grant(&q, 8);
	for (n = 0; fairq_pick(&q, 0); n++)
		;
	assert_int_equal(n, 6);
	assert_int_equal(q.in_flight, 8);
	fairq_set_grant(&q, 0);
	assert_int_equal(q.grant, 1);
	for (unsigned i = 0; i < 8; i++)
		fairq_complete(&q, &a);
	assert_non_null(fairq_pick(&q, 0));
	assert_null(fairq_pick(&q, 0));
	assert_int_equal(q.in_flight, 1);
}

/* Queue time per client: total and longest, from the caller's timestamps. */
static void test_queue_time_counted(void **state)
{
	(void)state;
	struct fairq q;
	struct fairq_client a;
	struct call ca[2];

	fairq_init(&q, 1, 1);
	fairq_client_init(&a, 0);
	fairq_enqueue(&q, &a, &ca[0].it, 100);
	fairq_enqueue(&q, &a, &ca[1].it, 150);
	assert_ptr_equal(fairq_pick(&q, 350), &ca[0].it);
	assert_null(fairq_pick(&q, 400));
	fairq_complete(&q, &a);
	assert_ptr_equal(fairq_pick(&q, 1150), &ca[1].it);
	assert_true(a.queue_us == 250 + 1000);
	assert_true(a.queue_max_us == 1000);
	assert_true(a.picked == 2);
	assert_int_equal(a.queued, 0);
}

/* One queued call taken out; the last one takes its client out of the ring. */
static void test_remove_one(void **state)
{
	(void)state;
	struct fairq q;
	struct fairq_client a, b;
	struct call ca[2], cb[1];

	fairq_init(&q, 1, 8);
	client_queues(&q, &a, ca, 2, 0);
	client_queues(&q, &b, cb, 1, 1);
	fairq_remove(&q, &ca[0].it);
	fairq_remove(&q, &cb[0].it);
	assert_ptr_equal(fairq_pick(&q, 0), &ca[1].it);
	assert_null(fairq_pick(&q, 0));
	assert_int_equal(q.queued, 0);
}

/*
 * A client whose replies are not read is paused: the others' calls go, none
 * of its own, however many it queues; resumed, its calls go again.
 */
static void test_pause_skips_only_that_client(void **state)
{
	(void)state;
	struct fairq q;
	struct fairq_client a, b;
	struct call ca[4], cb[2];

	fairq_init(&q, 1, 8);
	client_queues(&q, &a, ca, 2, 0);
	client_queues(&q, &b, cb, 2, 1);
	fairq_client_pause(&q, &a, true);
	queue_calls(&q, &a, ca + 2, 2, 0, 0); /* queued while paused: still not picked */
	assert_ptr_equal(fairq_pick(&q, 0), &cb[0].it);
	fairq_complete(&q, &b); /* a completion of another client does not bring it back */
	assert_ptr_equal(fairq_pick(&q, 0), &cb[1].it);
	assert_null(fairq_pick(&q, 0));
	assert_int_equal(q.queued, 4);
	fairq_client_pause(&q, &a, false);
	for (unsigned i = 0; i < 4; i++)
		assert_ptr_equal(fairq_pick(&q, 0), &ca[i].it);
	assert_null(fairq_pick(&q, 0));
}

/*
 * A picked call that could not go (no buffer) comes back first: its credit
 * is free again, its client keeps its turn, and its call is the next one.
 */
static void test_unpick_keeps_the_turn(void **state)
{
	(void)state;
	struct fairq q;
	struct fairq_client a, b;
	struct call ca[2], cb[1];

	fairq_init(&q, 1, 1);
	client_queues(&q, &a, ca, 2, 0);
	client_queues(&q, &b, cb, 1, 1);
	struct fairq_item *it = fairq_pick(&q, 5);
	assert_ptr_equal(it, &ca[0].it);
	assert_null(fairq_pick(&q, 5)); /* grant 1, in use */
	fairq_unpick(&q, it);
	assert_int_equal(q.in_flight, 0);
	assert_int_equal(a.in_flight, 0);
	assert_int_equal(a.queued, 2);
	assert_int_equal(q.queued, 3);
	/* The same call again, then b's turn, then a's second. */
	assert_ptr_equal(fairq_pick(&q, 6), &ca[0].it);
	fairq_complete(&q, &a);
	assert_ptr_equal(fairq_pick(&q, 7), &cb[0].it);
	fairq_complete(&q, &b);
	assert_ptr_equal(fairq_pick(&q, 8), &ca[1].it);
	fairq_complete(&q, &a);
	assert_null(fairq_pick(&q, 9));
	assert_int_equal(q.picks, 3);
	assert_int_equal(a.picked, 2);
}

/* Picks @q's next call, which must be client @who's. */
static void pick_of(struct fairq *q, unsigned who, uint64_t now)
{
	struct call *c = call_of(fairq_pick(q, now));

	assert_non_null(c);
	assert_int_equal(c->client, who);
}

/*
 * The contended cap (fairq_set_contended_cap()): A with a deep queue keeps
 * its whole cap (32 of a grant of 64) while alone. Once B's call is picked,
 * A is held at 4 in flight: no call of A's goes until its replies bring it
 * below 4, then one at a time. When B has been quiet for the window, A's
 * whole cap is back. With no contended cap, A keeps 32 throughout.
 */
static void test_contended_cap(void **state)
{
	(void)state;
	const uint32_t caps[] = { 4, 0 };

	for (size_t k = 0; k < 2; k++) {
		struct fairq q;
		struct fairq_client a, b;
		struct call ca[128], cb[2];
		uint64_t t = 1000;

		fairq_init(&q, 1, 64);
		fairq_set_contended_cap(&q, caps[k]);
		fairq_client_init(&a, 32);
		fairq_client_init(&b, 32);
		queue_calls(&q, &a, ca, 128, 0, t);
		for (unsigned i = 0; i < 32; i++)
			pick_of(&q, 0, t);
		assert_null(fairq_pick(&q, t)); /* A at its own cap */
		assert_false(fairq_contended(&q, t));

		/* B's call goes at once (32 of 64 credits are free), and contends */
		queue_calls(&q, &b, cb, 1, 1, t);
		pick_of(&q, 1, t);
		assert_true(fairq_contended(&q, t));
		if (caps[k] == 0) {
			fairq_complete(&q, &a);
			pick_of(&q, 0, t); /* A refills at once */
			continue;
		}
		/* A's replies: none of A's calls goes until A is below 4 */
		for (unsigned i = 0; i < 28; i++) {
			fairq_complete(&q, &a);
			assert_null(fairq_pick(&q, t + i));
		}
		assert_int_equal(a.in_flight, 4);
		fairq_complete(&q, &a);
		pick_of(&q, 0, t + 100);
		assert_int_equal(a.in_flight, 4);
		assert_null(fairq_pick(&q, t + 100));

		/* B quiet for longer than the window: A refills to its own cap */
		t += 100 + GW_CONTENTION_WINDOW_US;
		assert_false(fairq_contended(&q, t));
		fairq_complete(&q, &b);
		fairq_complete(&q, &a);
		for (unsigned i = 0; i < 29; i++)
			pick_of(&q, 0, t);
		assert_int_equal(a.in_flight, 32);
		assert_null(fairq_pick(&q, t));
	}
}

/* A change of client after a quiet spell is one client after another: no contention. */
static void test_contended_needs_overlap(void **state)
{
	(void)state;
	struct fairq q;
	struct fairq_client a, b;
	struct call ca[8], cb[8];

	fairq_init(&q, 1, 64);
	fairq_set_contended_cap(&q, 2);
	fairq_client_init(&a, 0);
	fairq_client_init(&b, 0);
	queue_calls(&q, &a, ca, 1, 0, 1000);
	pick_of(&q, 0, 1000);
	queue_calls(&q, &b, cb, 8, 1, 1000 + GW_CONTENTION_WINDOW_US);
	for (unsigned i = 0; i < 8; i++)
		pick_of(&q, 1, 1000 + GW_CONTENTION_WINDOW_US);
	assert_false(fairq_contended(&q, 1000 + GW_CONTENTION_WINDOW_US));
	/* A client that went away is forgotten as the last one */
	fairq_client_detach(&q, &b, NULL, NULL);
	queue_calls(&q, &a, ca + 1, 1, 0, 1001 + GW_CONTENTION_WINDOW_US);
	pick_of(&q, 0, 1001 + GW_CONTENTION_WINDOW_US);
	assert_false(fairq_contended(&q, 1001 + GW_CONTENTION_WINDOW_US));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_deep_queue_does_not_starve),
		cmocka_unit_test(test_round_robin_and_quantum),
		cmocka_unit_test(test_share_cap),
		cmocka_unit_test(test_per_client_cap),
		cmocka_unit_test(test_detach_drops_only_its_calls),
		cmocka_unit_test(test_grant_changes),
		cmocka_unit_test(test_queue_time_counted),
		cmocka_unit_test(test_remove_one),
		cmocka_unit_test(test_unpick_keeps_the_turn),
		cmocka_unit_test(test_pause_skips_only_that_client),
		cmocka_unit_test(test_contended_cap),
		cmocka_unit_test(test_contended_needs_overlap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
