/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_workers.c - the worker threads' protocol (gateway/workers.h)
 * with stand-in engines (linked with -Wl,--wrap, test_workers.wrap): each
 * stand-in runs a 1 ms timer on its worker's loop, which shows whether the
 * loop turns.
 *
 * - a snapshot reads every engine while the other workers are parked (their
 *   loops stand still), and they go on afterwards;
 * - a worker stuck in a long call is left out of a snapshot after the time
 *   limit, and is in the next one once it comes back;
 * - a drain reaches every worker on its own thread, and its end is told on
 *   the caller's loop once all are drained;
 * - a reload commits on every worker's own thread, or on none when one
 *   worker's rule files do not load;
 * - a worker that fails to start leaves nothing behind;
 * - a worker whose loop ends on its own is answered at once: nothing waits
 *   for it, and its engine is stopped from the main thread.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <event2/event.h>

#include "gateway/core/engine.h"
#include "gateway/workers.h"

#include "support/loop.h"

enum { MAX_FAKES = 8 };

struct fake_engine {
	struct event_base *base;
	unsigned worker;
	struct event *tick;
	atomic_uint ticks;
	atomic_uint stall_ms;	    /* the next tick sleeps this long (a stuck worker) */
	atomic_bool break_loop;	    /* the next tick ends the loop (a failing backend) */
	atomic_uint sessions_asked; /* asked by a worker whose loop ended, for its log line */
	struct event *drained;
	void (*drain_done)(void *arg);
	void *drain_arg;
	pthread_t drain_thread;
	pthread_t commit_thread;
	pthread_t stop_thread;
	unsigned drains, commits, stops;
	const struct gw_config *committed;
};

static struct fake_engine fakes[MAX_FAKES];
static pthread_t main_thread;
static int fail_start_at = -1;	 /* worker whose engine does not start */
static int fail_prepare_at = -1; /* worker whose rule files do not load */
static atomic_int prepared_live; /* reload sets not yet committed or aborted */

/* The last snapshot: how many engines, and whether the parked ones stood still. */
static size_t snap_n;
static bool snap_others_still;

static void fake_tick(evutil_socket_t fd, short what, void *arg)
{
	struct fake_engine *f = arg;

	(void)fd;
	(void)what;
	atomic_fetch_add(&f->ticks, 1);
	unsigned ms = atomic_exchange(&f->stall_ms, 0);
	if (ms)
		usleep(ms * 1000u);
	if (atomic_exchange(&f->break_loop, false))
		event_base_loopbreak(f->base);
}

struct gw_engine *__wrap_gw_engine_start_worker(struct event_base *base,
						const struct gw_config *cfg,
						const struct gw_mode_ops *const *modes,
						unsigned worker, unsigned nworkers,
						struct gw_engine_shared *shared, char *err,
						size_t errlen);
struct gw_engine *__wrap_gw_engine_start_worker(struct event_base *base,
						const struct gw_config *cfg,
						const struct gw_mode_ops *const *modes,
						unsigned worker, unsigned nworkers,
						struct gw_engine_shared *shared, char *err,
						size_t errlen)
{
	(void)cfg;
	(void)modes;
	(void)nworkers;
	(void)shared;
	if ((int)worker == fail_start_at || worker >= MAX_FAKES) {
		snprintf(err, errlen, "cannot listen (stand-in)");
		return NULL;
	}
	struct fake_engine *f = &fakes[worker];
	memset(f, 0, sizeof(*f));
	f->base = base;
	f->worker = worker;
	f->tick = event_new(base, -1, EV_PERSIST, fake_tick, f);
	struct timeval ms = { 0, 1000 };
	assert_non_null(f->tick);
	assert_int_equal(event_add(f->tick, &ms), 0);
	return (struct gw_engine *)f;
}

void __wrap_gw_engine_stop(struct gw_engine *eng);
void __wrap_gw_engine_stop(struct gw_engine *eng)
{
	struct fake_engine *f = (struct fake_engine *)eng;

	f->stops++;
	f->stop_thread = pthread_self();
	event_free(f->tick);
	f->tick = NULL;
	if (f->drained) {
		event_free(f->drained);
		f->drained = NULL;
	}
}

static void fake_drained(evutil_socket_t fd, short what, void *arg)
{
	struct fake_engine *f = arg;

	(void)fd;
	(void)what;
	f->drain_done(f->drain_arg);
}

void __wrap_gw_engine_drain(struct gw_engine *eng, unsigned timeout_ms, void (*done)(void *arg),
			    void *arg);
void __wrap_gw_engine_drain(struct gw_engine *eng, unsigned timeout_ms, void (*done)(void *arg),
			    void *arg)
{
	struct fake_engine *f = (struct fake_engine *)eng;
	struct timeval later = { 0, 5000 };

	(void)timeout_ms;
	f->drains++;
	f->drain_thread = pthread_self();
	f->drain_done = done;
	f->drain_arg = arg;
	/* Its sessions take a moment to finish. (A worker's thread: no cmocka assert here.) */
	f->drained = evtimer_new(f->base, fake_drained, f);
	if (!f->drained || evtimer_add(f->drained, &later) != 0)
		abort();
}

size_t __wrap_gw_engine_sessions(const struct gw_engine *eng);
size_t __wrap_gw_engine_sessions(const struct gw_engine *eng)
{
	struct fake_engine *f = (struct fake_engine *)eng;

	atomic_fetch_add(&f->sessions_asked, 1);
	return 0;
}

struct gw_engine_reload *__wrap_gw_engine_reload_prepare(const struct gw_engine *eng,
							 const struct gw_config *next, char *err,
							 size_t errlen);
struct gw_engine_reload *__wrap_gw_engine_reload_prepare(const struct gw_engine *eng,
							 const struct gw_config *next, char *err,
							 size_t errlen)
{
	const struct fake_engine *f = (const struct fake_engine *)eng;

	(void)next;
	if ((int)f->worker == fail_prepare_at) {
		snprintf(err, errlen, "route r: ulb_rules: x.json:1:1: bad (stand-in)");
		return NULL;
	}
	atomic_fetch_add(&prepared_live, 1);
	return malloc(16); /* a rule set stand-in: ASan names it if it is never let go */
}

void __wrap_gw_engine_reload_commit(struct gw_engine *eng, const struct gw_config *next,
				    struct gw_engine_reload *rl);
void __wrap_gw_engine_reload_commit(struct gw_engine *eng, const struct gw_config *next,
				    struct gw_engine_reload *rl)
{
	struct fake_engine *f = (struct fake_engine *)eng;

	f->commits++;
	f->commit_thread = pthread_self();
	f->committed = next;
	atomic_fetch_sub(&prepared_live, 1);
	free(rl);
}

void __wrap_gw_engine_reload_abort(struct gw_engine_reload *rl);
void __wrap_gw_engine_reload_abort(struct gw_engine_reload *rl)
{
	if (!rl)
		return;
	atomic_fetch_sub(&prepared_live, 1);
	free(rl);
}

void __wrap_gw_engines_snapshot(struct gw_engine *const *engs, size_t n,
				struct gw_stats_visitor *v);
void __wrap_gw_engines_snapshot(struct gw_engine *const *engs, size_t n, struct gw_stats_visitor *v)
{
	unsigned before[MAX_FAKES];

	(void)v;
	snap_n = n;
	for (size_t i = 0; i < n; i++)
		before[i] = atomic_load(&((struct fake_engine *)engs[i])->ticks);
	usleep(30000); /* 30 ticks of a loop that turns */
	snap_others_still = true;
	for (size_t i = 0; i < n; i++) {
		const struct fake_engine *f = (const struct fake_engine *)engs[i];
		if (f->worker != 0 && atomic_load(&f->ticks) != before[i])
			snap_others_still = false;
	}
}

unsigned __wrap_rdma_comp_vectors_max(void);
unsigned __wrap_rdma_comp_vectors_max(void)
{
	return 0;
}

/* ---- helpers ---- */

static struct gw_config cfg_of(unsigned workers)
{
	struct gw_config c;

	memset(&c, 0, sizeof(c));
	c.workers = workers;
	return c;
}

static struct gw_workers *start(struct event_base *base, const struct gw_config *cfg)
{
	char err[256] = "";
	struct gw_workers *ws = gw_workers_start(base, cfg, err, sizeof(err));

	if (!ws)
		fail_msg("gw_workers_start: %s", err);
	return ws;
}

/* Wait until worker @k's loop has turned @n more times (it runs). */
static bool turns(unsigned k, unsigned n)
{
	unsigned from = atomic_load(&fakes[k].ticks);

	for (int i = 0; i < 10000; i++) {
		if (atomic_load(&fakes[k].ticks) >= from + n)
			return true;
		usleep(1000);
	}
	return false;
}

static int setup(void **state)
{
	(void)state;
	main_thread = pthread_self();
	fail_start_at = fail_prepare_at = -1;
	atomic_store(&prepared_live, 0);
	memset(fakes, 0, sizeof(fakes));
	return 0;
}

static struct gw_stats_visitor no_visitor;

/* ---- tests ---- */

static void test_snapshot_parks_the_others(void **state)
{
	(void)state;
	struct event_base *base = event_base_new();
	struct gw_config cfg = cfg_of(3);
	struct gw_workers *ws = start(base, &cfg);

	assert_int_equal(gw_workers_count(ws), 3);
	assert_true(turns(1, 5));
	assert_true(turns(2, 5));
	gw_workers_snapshot(ws, &no_visitor);
	assert_int_equal(snap_n, 3);
	assert_true(snap_others_still);
	/* Released: they turn again. */
	assert_true(turns(1, 5));
	assert_true(turns(2, 5));
	gw_workers_stop(ws);
	for (unsigned k = 0; k < 3; k++)
		assert_int_equal(fakes[k].stops, 1);
	/* Each engine stopped on the thread that ran it. */
	assert_true(pthread_equal(fakes[0].stop_thread, main_thread));
	assert_false(pthread_equal(fakes[1].stop_thread, main_thread));
	assert_false(pthread_equal(fakes[2].stop_thread, main_thread));
	event_base_free(base);
}

static void test_stuck_worker_left_out(void **state)
{
	(void)state;
	struct event_base *base = event_base_new();
	struct gw_config cfg = cfg_of(2);
	struct gw_workers *ws = start(base, &cfg);

	assert_true(turns(1, 2));
	atomic_store(&fakes[1].stall_ms, 3500); /* longer than the 2 s a snapshot waits */
	for (int i = 0; i < 100 && atomic_load(&fakes[1].stall_ms) != 0; i++)
		usleep(1000);
	assert_int_equal(atomic_load(&fakes[1].stall_ms), 0); /* it is in its long call */
	gw_workers_snapshot(ws, &no_visitor);
	assert_int_equal(snap_n, 1); /* worker 0's engine alone */
	/* Back from its call, it parks for the next one (and not for the cancelled one). */
	assert_true(turns(1, 2));
	gw_workers_snapshot(ws, &no_visitor);
	assert_int_equal(snap_n, 2);
	assert_true(snap_others_still);
	assert_true(turns(1, 2));
	gw_workers_stop(ws);
	event_base_free(base);
}

static void on_all_drained(void *arg)
{
	*(int *)arg += 1;
}

/* Whether on_all_drained() has run: what a test waits for after gw_workers_drain(). */
static bool drained(void *arg)
{
	return *(int *)arg != 0;
}

static void test_drain_reaches_every_worker(void **state)
{
	(void)state;
	struct event_base *base = event_base_new();
	struct gw_config cfg = cfg_of(3);
	struct gw_workers *ws = start(base, &cfg);
	int done = 0;

	gw_workers_drain(ws, 1000, on_all_drained, &done);
	gwt_spin_until(base, 10000, drained, &done);
	assert_int_equal(done, 1);
	for (unsigned k = 0; k < 3; k++)
		assert_int_equal(fakes[k].drains, 1);
	assert_true(pthread_equal(fakes[0].drain_thread, main_thread));
	assert_false(pthread_equal(fakes[1].drain_thread, main_thread));
	assert_false(pthread_equal(fakes[2].drain_thread, main_thread));
	gw_workers_stop(ws);
	event_base_free(base);
}

static void test_reload_on_every_thread_or_none(void **state)
{
	(void)state;
	struct event_base *base = event_base_new();
	struct gw_config cfg = cfg_of(3), next = cfg_of(3), broken = cfg_of(3);
	struct gw_workers *ws = start(base, &cfg);
	char err[256] = "";

	assert_int_equal(gw_workers_reload(ws, &next, err, sizeof(err)), 0);
	for (unsigned k = 0; k < 3; k++) {
		assert_int_equal(fakes[k].commits, 1);
		assert_ptr_equal(fakes[k].committed, &next);
	}
	assert_true(pthread_equal(fakes[0].commit_thread, main_thread));
	assert_false(pthread_equal(fakes[1].commit_thread, main_thread));
	assert_false(pthread_equal(fakes[2].commit_thread, main_thread));

	/* Worker 2's rule files do not load: nobody changes, nothing is left prepared. */
	fail_prepare_at = 2;
	assert_int_equal(gw_workers_reload(ws, &broken, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "ulb_rules"));
	for (unsigned k = 0; k < 3; k++) {
		assert_int_equal(fakes[k].commits, 1);
		assert_ptr_equal(fakes[k].committed, &next);
	}
	assert_int_equal(atomic_load(&prepared_live), 0);
	gw_workers_stop(ws);
	event_base_free(base);
}

static void test_start_failure_leaves_nothing(void **state)
{
	(void)state;
	struct event_base *base = event_base_new();
	struct gw_config cfg = cfg_of(3);
	char err[256] = "";

	fail_start_at = 2;
	assert_null(gw_workers_start(base, &cfg, err, sizeof(err)));
	assert_non_null(strstr(err, "worker 2: cannot listen"));
	/* The two that started were stopped, on this thread: no worker thread ran. */
	assert_int_equal(fakes[0].stops, 1);
	assert_int_equal(fakes[1].stops, 1);
	assert_true(pthread_equal(fakes[1].stop_thread, main_thread));
	event_base_free(base);
}

static void test_loop_that_ends_alone(void **state)
{
	(void)state;
	struct event_base *base = event_base_new();
	struct gw_config cfg = cfg_of(2), next = cfg_of(2);
	struct gw_workers *ws = start(base, &cfg);
	char err[256] = "";
	int done = 0;

	assert_true(turns(1, 2));
	atomic_store(&fakes[1].break_loop, true);
	/* Its thread has seen its loop end once it asks for its sessions, to log them. */
	for (int i = 0; i < 10000 && atomic_load(&fakes[1].sessions_asked) == 0; i++)
		usleep(1000);
	assert_int_not_equal(atomic_load(&fakes[1].sessions_asked), 0);
	/* Nothing waits for it: no park, no commit, no drain of it. */
	gw_workers_snapshot(ws, &no_visitor);
	assert_int_equal(snap_n, 1);
	assert_int_equal(gw_workers_reload(ws, &next, err, sizeof(err)), 0);
	assert_int_equal(fakes[0].commits, 1);
	assert_int_equal(fakes[1].commits, 0);
	assert_int_equal(atomic_load(&prepared_live), 0);
	gw_workers_drain(ws, 1000, on_all_drained, &done);
	gwt_spin_until(base, 10000, drained, &done);
	assert_int_equal(done, 1);
	assert_int_equal(fakes[1].drains, 0);
	/* Its engine is stopped after all, from here, once its thread is joined. */
	gw_workers_stop(ws);
	assert_int_equal(fakes[1].stops, 1);
	assert_true(pthread_equal(fakes[1].stop_thread, main_thread));
	event_base_free(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_snapshot_parks_the_others, setup),
		cmocka_unit_test_setup(test_stuck_worker_left_out, setup),
		cmocka_unit_test_setup(test_drain_reaches_every_worker, setup),
		cmocka_unit_test_setup(test_reload_on_every_thread_or_none, setup),
		cmocka_unit_test_setup(test_start_failure_leaves_nothing, setup),
		cmocka_unit_test_setup(test_loop_that_ends_alone, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
