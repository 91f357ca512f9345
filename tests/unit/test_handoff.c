/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_handoff.c - connection requests handed from worker 0 to
 * another worker (gateway/core/handoff.h). The requests are stand-ins: the
 * migration and the refusal are linked in with -Wl,--wrap
 * (test_handoff.wrap) and record what was done to which request.
 *
 * - nothing is taken while no worker is attached, and the caller keeps it;
 * - a request posted is moved to the attached worker's rdma_ctx first, and
 *   delivered on that worker's loop with its route, in order;
 * - a request posted from another thread wakes the worker's loop;
 * - the queue holds GW_HANDOFF_MAX_QUEUED; one more is refused, unmoved;
 * - a failed migration is passed back, the request neither queued nor kept;
 * - detaching refuses what is still queued, and takes nothing more;
 * - the counters say what was taken and refused.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <event2/event.h>

#include "gateway/core/handoff.h"
#include "rdma/conn.h"

enum { MAX_REQ = 2 * GW_HANDOFF_MAX_QUEUED };

/* Stand-in requests: addresses in this array, never dereferenced by the code under test. */
static char reqs[MAX_REQ];
static struct rdma_ctx *const worker_ctx = (struct rdma_ctx *)&reqs[MAX_REQ - 1];

static struct {
	unsigned migrated[MAX_REQ];
	struct rdma_ctx *migrated_to[MAX_REQ];
	unsigned rejected[MAX_REQ];
	int migrate_err; /* the next migrations fail with it */
	size_t delivered_route[MAX_REQ];
	int delivered_order[MAX_REQ];
	unsigned ndelivered;
	pthread_t deliver_thread;
} seen;

static struct rconn_request *req(int i)
{
	return (struct rconn_request *)&reqs[i];
}

static int req_index(struct rconn_request *r)
{
	return (int)((char *)r - reqs);
}

int __wrap_rconn_request_migrate(struct rconn_request *r, struct rdma_ctx *to);
int __wrap_rconn_request_migrate(struct rconn_request *r, struct rdma_ctx *to)
{
	if (seen.migrate_err)
		return seen.migrate_err;
	seen.migrated[req_index(r)]++;
	seen.migrated_to[req_index(r)] = to;
	return 0;
}

void __wrap_rconn_request_reject(struct rconn_request *r);
void __wrap_rconn_request_reject(struct rconn_request *r)
{
	seen.rejected[req_index(r)]++;
}

static void deliver(void *arg, size_t route, struct rconn_request *r)
{
	int i = req_index(r);

	assert_ptr_equal(arg, &seen);
	seen.delivered_route[i] = route;
	seen.delivered_order[seen.ndelivered++] = i;
	seen.deliver_thread = pthread_self();
}

static int setup(void **state)
{
	(void)state;
	memset(&seen, 0, sizeof(seen));
	return 0;
}

static void test_unattached_takes_nothing(void **state)
{
	struct gw_handoff *h = gw_handoff_new();
	struct gw_handoff_stats st;

	(void)state;
	assert_non_null(h);
	assert_int_equal(gw_handoff_post(h, 0, req(1)), -ENOTCONN);
	assert_int_equal(seen.migrated[1], 0);
	assert_int_equal(seen.rejected[1], 0); /* the caller still owns it */
	gw_handoff_get_stats(h, &st);
	assert_int_equal(st.posted, 0);
	assert_int_equal(st.refused, 1);
	gw_handoff_free(h);
}

static void test_posted_are_moved_then_delivered_in_order(void **state)
{
	struct event_base *base = event_base_new();
	struct gw_handoff *h = gw_handoff_new();

	(void)state;
	assert_int_equal(gw_handoff_attach(h, base, worker_ctx, deliver, &seen), 0);
	for (int i = 1; i <= 5; i++) {
		assert_int_equal(gw_handoff_post(h, (size_t)i % 3, req(i)), 0);
		/* Moved at once, on the poster's thread, before the worker sees it. */
		assert_int_equal(seen.migrated[i], 1);
		assert_ptr_equal(seen.migrated_to[i], worker_ctx);
	}
	assert_int_equal(seen.ndelivered, 0); /* not before the worker's loop turns */
	event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	assert_int_equal(seen.ndelivered, 5);
	for (int i = 1; i <= 5; i++) {
		assert_int_equal(seen.delivered_order[i - 1], i);
		assert_int_equal(seen.delivered_route[i], (size_t)i % 3);
		assert_int_equal(seen.rejected[i], 0);
	}
	struct gw_handoff_stats st;
	gw_handoff_get_stats(h, &st);
	assert_int_equal(st.posted, 5);
	assert_int_equal(st.refused, 0);
	gw_handoff_detach(h);
	gw_handoff_free(h);
	event_base_free(base);
}

struct poster {
	struct gw_handoff *h;
	int first, n;
};

static void *post_from_thread(void *arg)
{
	struct poster *p = arg;

	for (int i = p->first; i < p->first + p->n; i++) {
		if (gw_handoff_post(p->h, 7, req(i)) != 0)
			return (void *)1;
	}
	return NULL;
}

static void test_post_from_another_thread_wakes_the_loop(void **state)
{
	struct event_base *base = event_base_new();
	struct gw_handoff *h = gw_handoff_new();
	struct poster p = { .h = h, .first = 10, .n = 40 };
	pthread_t t;
	void *ret;

	(void)state;
	assert_int_equal(gw_handoff_attach(h, base, worker_ctx, deliver, &seen), 0);
	assert_int_equal(pthread_create(&t, NULL, post_from_thread, &p), 0);
	/* The loop blocks until a wake-up comes: each post writes the eventfd. */
	while (seen.ndelivered < 40)
		assert_int_equal(event_base_loop(base, EVLOOP_ONCE), 0);
	assert_int_equal(pthread_join(t, &ret), 0);
	assert_null(ret);
	assert_true(pthread_equal(seen.deliver_thread, pthread_self()));
	for (int i = 0; i < 40; i++)
		assert_int_equal(seen.delivered_order[i], 10 + i);
	gw_handoff_detach(h);
	gw_handoff_free(h);
	event_base_free(base);
}

static void test_full_queue_refuses_unmoved(void **state)
{
	struct event_base *base = event_base_new();
	struct gw_handoff *h = gw_handoff_new();
	int i;

	(void)state;
	assert_int_equal(gw_handoff_attach(h, base, worker_ctx, deliver, &seen), 0);
	for (i = 0; i < GW_HANDOFF_MAX_QUEUED; i++)
		assert_int_equal(gw_handoff_post(h, 0, req(i)), 0);
	assert_int_equal(gw_handoff_post(h, 0, req(i)), -EBUSY);
	assert_int_equal(seen.migrated[i], 0); /* still the poster's, on its channel */
	assert_int_equal(seen.rejected[i], 0);
	event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	assert_int_equal(seen.ndelivered, GW_HANDOFF_MAX_QUEUED);
	/* Room again once the worker took them. */
	assert_int_equal(gw_handoff_post(h, 0, req(i)), 0);
	struct gw_handoff_stats st;
	gw_handoff_get_stats(h, &st);
	assert_int_equal(st.posted, GW_HANDOFF_MAX_QUEUED + 1);
	assert_int_equal(st.refused, 1);
	gw_handoff_detach(h);
	assert_int_equal(seen.rejected[i], 1); /* queued at the detach */
	gw_handoff_free(h);
	event_base_free(base);
}

static void test_failed_migration_is_passed_back(void **state)
{
	struct event_base *base = event_base_new();
	struct gw_handoff *h = gw_handoff_new();

	(void)state;
	assert_int_equal(gw_handoff_attach(h, base, worker_ctx, deliver, &seen), 0);
	seen.migrate_err = -EINVAL;
	assert_int_equal(gw_handoff_post(h, 0, req(3)), -EINVAL);
	seen.migrate_err = 0;
	event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	assert_int_equal(seen.ndelivered, 0);
	assert_int_equal(seen.rejected[3], 0);
	gw_handoff_detach(h);
	gw_handoff_free(h);
	event_base_free(base);
}

static void test_detach_refuses_the_queued_and_takes_no_more(void **state)
{
	struct event_base *base = event_base_new();
	struct gw_handoff *h = gw_handoff_new();

	(void)state;
	assert_int_equal(gw_handoff_attach(h, base, worker_ctx, deliver, &seen), 0);
	assert_int_equal(gw_handoff_post(h, 1, req(20)), 0);
	assert_int_equal(gw_handoff_post(h, 1, req(21)), 0);
	gw_handoff_detach(h);
	assert_int_equal(seen.rejected[20], 1);
	assert_int_equal(seen.rejected[21], 1);
	assert_int_equal(gw_handoff_post(h, 1, req(22)), -ENOTCONN);
	assert_int_equal(seen.migrated[22], 0);
	/* The wake-up written before the detach delivers nothing: the event is gone. */
	event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	assert_int_equal(seen.ndelivered, 0);
	gw_handoff_free(h);
	assert_int_equal(seen.rejected[22], 0); /* never queued: the caller's */
	event_base_free(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_unattached_takes_nothing, setup),
		cmocka_unit_test_setup(test_posted_are_moved_then_delivered_in_order, setup),
		cmocka_unit_test_setup(test_post_from_another_thread_wakes_the_loop, setup),
		cmocka_unit_test_setup(test_full_queue_refuses_unmoved, setup),
		cmocka_unit_test_setup(test_failed_migration_is_passed_back, setup),
		cmocka_unit_test_setup(test_detach_refuses_the_queued_and_takes_no_more, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
