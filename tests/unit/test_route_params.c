/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_route_params.c - a route's keys reach the RDMA connections
 * it makes: turn_budget sets each connection's completion budget per pass
 * (twice the records a TCP turn delivers), for the forward route's own and
 * shared connections (fwd_rdma_params()) and for the connections a reverse
 * route accepts (gw_reverse_mode.listen_params); remote_invalidation sets the
 * R bit of a forward connection's RFC 8797 private data and lets the
 * connection take the server's Send With Invalidate.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "gateway/forward/forward_priv.h"
#include "gateway/core/mode.h"
#include "gateway/core/session.h"
#include "rdma/conn.h"
#include "rdma/privdata.h"

static void route_with_budgets(struct gw_route *r, uint32_t budget, uint32_t contended)
{
	memset(r, 0, sizeof(*r));
	r->credits = 64;
	r->backchannel_credits = 2;
	r->inline_send_size = 4096;
	r->inline_receive_size = 4096;
	r->max_write_chunks = 2;
	r->max_chunk_segments = 8;
	r->max_read_segments = 8;
	r->connect_timeout_ms = 5000;
	r->turn_budget = budget;
	r->turn_budget_contended = contended;
}

static void route_with_budget(struct gw_route *r, uint32_t budget)
{
	route_with_budgets(r, budget, 4);
}

static void test_forward_connections_take_the_budget(void **state)
{
	const uint32_t budgets[] = { 1, 4, 16, 256 };
	struct gw_route r;
	struct rpcrdma_privdata pd;

	(void)state;
	for (size_t i = 0; i < sizeof(budgets) / sizeof(budgets[0]); i++) {
		route_with_budget(&r, budgets[i]);
		memset(&pd, 0, sizeof(pd));
		struct rconn_params p = fwd_rdma_params(&r, &pd);
		assert_int_equal(p.cq_budget, 2 * budgets[i]);
		assert_int_equal(p.cq_budget_contended, 2 * 4);
	}
}

static void test_forward_remote_invalidation(void **state)
{
	struct gw_route r;
	struct rpcrdma_privdata pd, sent;

	(void)state;
	for (uint32_t on = 0; on <= 1; on++) {
		route_with_budget(&r, 16);
		r.remote_invalidation = on;
		memset(&pd, 0, sizeof(pd));
		struct rconn_params p = fwd_rdma_params(&r, &pd);
		assert_int_equal(p.remote_invalidation, on);
		assert_int_equal(pd.remote_inv, on);
		assert_int_equal(p.private_data_len, RPCRDMA_PD_SIZE);
		assert_true(rpcrdma_privdata_decode(p.private_data, p.private_data_len, &sent));
		assert_int_equal(sent.remote_inv, on);
	}
}

static void test_reverse_connections_take_the_budget(void **state)
{
	struct gw_route r;
	struct rconn_params p;

	(void)state;
	route_with_budget(&r, 4);
	memset(&p, 0, sizeof(p));
	gw_reverse_mode.listen_params(&r, &p);
	assert_int_equal(p.cq_budget, 8);
	route_with_budget(&r, 16);
	gw_reverse_mode.listen_params(&r, &p);
	assert_int_equal(p.cq_budget, 32);
	/* its connections are the clients, and no TCP turn reports: no contended budget */
	assert_int_equal(p.cq_budget_contended, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forward_connections_take_the_budget),
		cmocka_unit_test(test_forward_remote_invalidation),
		cmocka_unit_test(test_reverse_connections_take_the_budget),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
