/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_stats_merge.c - one route's figures over several workers
 * (gateway/stats/stats_merge.h): totals summed, the latency by procedure summed
 * by procedure although each worker's table put it in another slot, shared
 * channels side by side and their XID figures summed, the NLM figures of
 * the one worker that has them, devices summed; and the worker count that
 * `workers` comes to (gateway/workers.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "gateway/counters/rpc_names.h"
#include "gateway/stats/stats_merge.h"
#include "gateway/workers.h"

/* A worker's route: its own counters and latency table, slots in its own order. */
struct worker_route {
	struct gw_counters totals;
	struct gw_hist lat[GW_PROC_SLOTS];
	struct gw_stats_shared shared;
	struct gw_stats_route r;
};

static void worker_route_init(struct worker_route *w, uint32_t live)
{
	memset(w, 0, sizeof(*w));
	assert_int_equal(gw_counters_reserve_procs(&w->totals), 0);
	w->r = (struct gw_stats_route){
		.name = "nfs",
		.mode = "forward",
		.listen = "0.0.0.0:2049",
		.upstream = "rdma://server:20049",
		.totals = &w->totals,
		.proc_upstream_us = w->lat,
		.live_sessions = live,
	};
}

/* Count @calls replies of (prog, vers, proc), each with an upstream time of @us. */
static void count(struct worker_route *w, uint32_t prog, uint32_t vers, uint32_t proc,
		  unsigned calls, uint64_t us)
{
	for (unsigned i = 0; i < calls; i++) {
		gw_counters_count_call(&w->totals, prog, vers, proc);
		struct gw_proc_count *p = gw_counters_count_reply(&w->totals, prog, vers, proc);
		assert_non_null(p);
		unsigned nslots;
		struct gw_proc_count *base = gw_counters_procs(&w->totals, &nslots);
		gw_hist_add(&w->lat[p - base], us);
	}
}

/* The merged latency histogram of (prog, vers, proc). */
static const struct gw_hist *merged_lat(struct gw_stats_route_acc *acc, uint32_t prog,
					uint32_t vers, uint32_t proc)
{
	unsigned nslots;
	struct gw_proc_count *base = gw_counters_procs(&acc->totals, &nslots);

	for (unsigned i = 0; i < nslots; i++) {
		if (base[i].used && base[i].prog == prog && base[i].vers == vers &&
		    base[i].proc == proc)
			return &acc->route.proc_upstream_us[i];
	}
	fail_msg("procedure %u/%u/%u not in the merged table", prog, vers, proc);
	return NULL;
}

/* The slot (prog, vers, proc) takes in @c. */
static size_t slot_of(struct gw_counters *c, uint32_t prog, uint32_t vers, uint32_t proc)
{
	unsigned nslots;
	struct gw_proc_count *base = gw_counters_procs(c, &nslots);

	return (size_t)(gw_counters_proc(c, prog, vers, proc) - base);
}

struct proc_key {
	uint32_t prog, vers, proc;
};

/*
 * Two known procedures whose slots depend on which was counted first (they
 * hash to the same place): in two workers that saw them in other orders,
 * the same slot holds different procedures.
 */
static void colliding_procs(struct proc_key *p, struct proc_key *q)
{
	static const struct proc_key progs[] = {
		{ 100003, 2, 0 }, { 100003, 3, 0 }, { 100003, 4, 0 }, { 100005, 1, 0 },
		{ 100005, 3, 0 }, { 100021, 1, 0 }, { 100021, 3, 0 }, { 100021, 4, 0 },
		{ 100227, 3, 0 }, { 100000, 2, 0 }, { 100024, 1, 0 },
	};
	struct proc_key known[512];
	size_t n = 0;

	for (size_t g = 0; g < sizeof(progs) / sizeof(progs[0]); g++) {
		for (uint32_t proc = 0; proc < 40 && n < 512; proc++) {
			if (gw_rpc_procedure_known(progs[g].prog, progs[g].vers, proc))
				known[n++] =
					(struct proc_key){ progs[g].prog, progs[g].vers, proc };
		}
	}
	for (size_t i = 0; i < n; i++) {
		for (size_t j = i + 1; j < n; j++) {
			struct gw_counters x = { 0 }, y = { 0 };
			assert_int_equal(gw_counters_reserve_procs(&x), 0);
			assert_int_equal(gw_counters_reserve_procs(&y), 0);
			(void)slot_of(&x, known[i].prog, known[i].vers, known[i].proc);
			size_t xj = slot_of(&x, known[j].prog, known[j].vers, known[j].proc);
			size_t yj = slot_of(&y, known[j].prog, known[j].vers, known[j].proc);
			gw_counters_release(&x);
			gw_counters_release(&y);
			if (xj != yj) {
				*p = known[i];
				*q = known[j];
				return;
			}
		}
	}
	fail_msg("no two of %zu known procedures share a slot: pick others for this test", n);
}

static void test_totals_and_latency_by_procedure(void **state)
{
	(void)state;
	static struct worker_route a, b;
	struct gw_stats_route_acc acc;
	struct proc_key p = { 0 }, q = { 0 };

	colliding_procs(&p, &q);
	worker_route_init(&a, 3);
	worker_route_init(&b, 5);
	/* Worker a saw p first, worker b q first: they sit in other slots in each. */
	count(&a, p.prog, p.vers, p.proc, 4, 100);  /* 100 us */
	count(&a, q.prog, q.vers, q.proc, 2, 5000); /* 5 ms */
	count(&b, q.prog, q.vers, q.proc, 3, 5000);
	count(&b, p.prog, p.vers, p.proc, 1, 100);
	assert_int_not_equal(slot_of(&a.totals, p.prog, p.vers, p.proc),
			     slot_of(&b.totals, p.prog, p.vers, p.proc));
	/* NFSv3 NULL, unless it is one of the two: then NFSv2 NULL. */
	struct proc_key r = { 100003, 3, 0 };
	if ((p.prog == 100003 && p.vers == 3 && p.proc == 0) ||
	    (q.prog == 100003 && q.vers == 3 && q.proc == 0))
		r.vers = 2;
	count(&b, r.prog, r.vers, r.proc, 6, 2000); /* only on b */
	a.totals.events[GW_EV_CALL_TIMEOUT] = 2;
	b.totals.events[GW_EV_CALL_TIMEOUT] = 1;
	a.totals.tcp_bytes_in = 1000;
	b.totals.tcp_bytes_in = 234;

	assert_int_equal(gw_stats_route_acc_init(&acc), 0);
	a.r.sessions_by_state[GW_SESSION_READY] = 1; /* of its 3 */
	a.r.sessions_by_state[GW_SESSION_DRAINING] = 2;
	b.r.sessions_by_state[GW_SESSION_READY] = 4; /* of its 5 */
	b.r.sessions_by_state[GW_SESSION_CONNECTING] = 1;
	gw_stats_route_acc_add(&acc, &a.r);
	gw_stats_route_acc_add(&acc, &b.r);

	assert_string_equal(acc.route.name, "nfs");
	assert_string_equal(acc.route.mode, "forward");
	assert_int_equal(acc.route.live_sessions, 8);
	/* the states of the workers' sessions, summed state by state */
	assert_int_equal(acc.route.sessions_by_state[GW_SESSION_READY], 5);
	assert_int_equal(acc.route.sessions_by_state[GW_SESSION_DRAINING], 2);
	assert_int_equal(acc.route.sessions_by_state[GW_SESSION_CONNECTING], 1);
	assert_int_equal(acc.route.sessions_by_state[GW_SESSION_CLOSING], 0);
	assert_int_equal(acc.route.totals->calls, 16);
	assert_int_equal(acc.route.totals->replies, 16);
	assert_int_equal(acc.route.totals->tcp_bytes_in, 1234);
	assert_int_equal(acc.route.totals->events[GW_EV_CALL_TIMEOUT], 3);
	assert_null(acc.route.shared);
	assert_null(acc.route.nlm);

	const struct gw_hist *hp = merged_lat(&acc, p.prog, p.vers, p.proc);
	const struct gw_hist *hq = merged_lat(&acc, q.prog, q.vers, q.proc);
	const struct gw_hist *hr = merged_lat(&acc, r.prog, r.vers, r.proc);
	assert_int_equal(hp->count, 5);
	assert_int_equal(hp->sum_us, 500);
	assert_int_equal(hq->count, 5);
	assert_int_equal(hq->sum_us, 25000);
	assert_int_equal(hr->count, 6);
	assert_int_equal(hr->sum_us, 12000);
	gw_stats_route_acc_fini(&acc);
	gw_counters_release(&a.totals);
	gw_counters_release(&b.totals);
}

static void test_shared_channels_side_by_side(void **state)
{
	(void)state;
	static struct worker_route a, b;
	struct gw_stats_route_acc acc;

	worker_route_init(&a, 0);
	worker_route_init(&b, 0);
	a.shared.nchannels = 2;
	a.shared.channels[0].calls_in_flight = 1;
	a.shared.channels[1].calls_in_flight = 2;
	a.shared.xid_entries = 1024;
	a.shared.xid_new = 10;
	a.shared.bc_adopted = 1;
	a.shared.xid_kept_clients = 3;
	a.shared.xid_evicted_own = 7;
	b.shared.nchannels = 2;
	b.shared.channels[0].calls_in_flight = 3;
	b.shared.channels[1].calls_in_flight = 4;
	b.shared.xid_entries = 1024;
	b.shared.xid_new = 5;
	b.shared.bc_kept_now = 2;
	b.shared.xid_kept_clients = 1;
	b.shared.xid_evicted_own = 1;
	b.shared.xid_evicted_other = 4;
	a.r.shared = &a.shared;
	b.r.shared = &b.shared;

	assert_int_equal(gw_stats_route_acc_init(&acc), 0);
	gw_stats_route_acc_add(&acc, &a.r);
	gw_stats_route_acc_add(&acc, &b.r);
	assert_non_null(acc.route.shared);
	assert_int_equal(acc.route.shared->nchannels, 4);
	for (uint32_t i = 0; i < 4; i++)
		assert_int_equal(acc.route.shared->channels[i].calls_in_flight, i + 1);
	assert_int_equal(acc.route.shared->xid_entries, 2048);
	assert_int_equal(acc.route.shared->xid_new, 15);
	assert_int_equal(acc.route.shared->bc_adopted, 1);
	assert_int_equal(acc.route.shared->bc_kept_now, 2);
	assert_int_equal(acc.route.shared->xid_kept_clients, 4); /* each worker's map its own */
	assert_int_equal(acc.route.shared->xid_evicted_own, 8);
	assert_int_equal(acc.route.shared->xid_evicted_other, 4);
	gw_stats_route_acc_fini(&acc);

	/* More channels than the view holds: the first GW_STATS_MAX_CHANNELS, no overrun. */
	a.shared.nchannels = GW_STATS_MAX_CHANNELS;
	b.shared.nchannels = GW_STATS_MAX_CHANNELS;
	assert_int_equal(gw_stats_route_acc_init(&acc), 0);
	gw_stats_route_acc_add(&acc, &a.r);
	gw_stats_route_acc_add(&acc, &b.r);
	assert_int_equal(acc.route.shared->nchannels, GW_STATS_MAX_CHANNELS);
	gw_stats_route_acc_fini(&acc);
	gw_counters_release(&a.totals);
	gw_counters_release(&b.totals);
}

static void test_nlm_from_the_worker_that_has_it(void **state)
{
	(void)state;
	static struct worker_route a, b;
	struct gw_stats_nlm nlm = { .locks = 7, .gr_state = 13 };
	struct gw_stats_route_acc acc;

	worker_route_init(&a, 0);
	worker_route_init(&b, 0);
	a.r.nlm = &nlm; /* worker 0 runs the side relays */
	assert_int_equal(gw_stats_route_acc_init(&acc), 0);
	gw_stats_route_acc_add(&acc, &a.r);
	gw_stats_route_acc_add(&acc, &b.r);
	assert_non_null(acc.route.nlm);
	assert_int_equal(acc.route.nlm->locks, 7);
	assert_int_equal(acc.route.nlm->gr_state, 13); /* a state, never summed */
	gw_stats_route_acc_fini(&acc);
	gw_counters_release(&a.totals);
	gw_counters_release(&b.totals);
}

static void test_devices_summed(void **state)
{
	(void)state;
	struct gw_stats_device d = { .name = "rxe0", .bytes_registered = 100, .buffers_total = 4 };
	const struct gw_stats_device e = { .name = "rxe0",
					   .bytes_registered = 50,
					   .alloc_failures = 2,
					   .buffers_in_use = 1,
					   .buffers_total = 2 };

	gw_stats_device_add(&d, &e);
	assert_int_equal(d.bytes_registered, 150);
	assert_int_equal(d.alloc_failures, 2);
	assert_int_equal(d.buffers_in_use, 1);
	assert_int_equal(d.buffers_total, 6);
}

static void test_workers_resolved(void **state)
{
	(void)state;
	/* Asked for: what was asked, up to the most. */
	assert_int_equal(gw_workers_resolve(1, 8, 2), 1);
	assert_int_equal(gw_workers_resolve(4, 2, 1), 4);
	assert_int_equal(gw_workers_resolve(200, 8, 0), GW_WORKERS_MAX);
	/* 0: one per CPU, no more than the completion vectors when known. */
	assert_int_equal(gw_workers_resolve(0, 8, 0), 8);
	assert_int_equal(gw_workers_resolve(0, 8, 2), 2);
	assert_int_equal(gw_workers_resolve(0, 2, 16), 2);
	assert_int_equal(gw_workers_resolve(0, 0, 0), 1);
	assert_int_equal(gw_workers_resolve(0, 512, 0), GW_WORKERS_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_totals_and_latency_by_procedure),
		cmocka_unit_test(test_shared_channels_side_by_side),
		cmocka_unit_test(test_nlm_from_the_worker_that_has_it),
		cmocka_unit_test(test_devices_summed),
		cmocka_unit_test(test_workers_resolved),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
