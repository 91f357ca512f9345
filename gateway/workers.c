/* SPDX-License-Identifier: MIT */
#include "gateway/workers.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "common/log.h"
#include "gateway/core/engine.h"
#include "gateway/core/handoff.h"
#include "gateway/modes.h"
#include "rdma/device.h"

enum worker_cmd { WCMD_NONE, WCMD_PARK, WCMD_RELOAD, WCMD_DRAIN, WCMD_STOP };

struct gw_worker {
	struct gw_workers *ws;
	struct event_base *base; /* its own; worker 0's is the caller's */
	struct gw_engine *eng;
	pthread_t thread;
	struct event *cmd_ev;
	const struct gw_config *next;
	struct gw_engine_reload *rl;
	/*
	 * The command, under @lock: the caller sets it and waits for
	 * @cmd_done; the worker carries it out on its own thread. One command
	 * at a time, always from the caller's thread.
	 */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned index;
	enum worker_cmd cmd;
	unsigned release_gen; /* a parked worker goes on when this moves */
	unsigned drain_ms;
	/* The caller writes a byte here when a command waits (workers 1..N-1). */
	int pipe[2];
	bool thread_started;
	/* Its loop ended without being told to (an epoll failure): nothing it owns is touched. */
	atomic_bool exited;
	bool sync_ready;
	bool cmd_done;
	bool stopping; /* STOP was taken: the loop's end is expected */
};

struct gw_workers {
	struct event_base *base;
	unsigned n;
	struct gw_worker *w;
	struct gw_engine **engs; /* [n]; NULL once a worker has stopped */
	struct gw_engine_shared shared;
	/* Each worker's engine tells it drained through this pipe, to the caller's loop. */
	int done_pipe[2];
	struct event *done_ev;
	unsigned drains_pending;
	void (*drain_done)(void *arg);
	void *drain_arg;
};

unsigned gw_workers_resolve(unsigned configured, unsigned ncpus, unsigned comp_vectors)
{
	unsigned n = configured;

	if (n == 0) {
		/*
		 * One per core; more workers than completion vectors would
		 * share the vectors' interrupts without adding any.
		 */
		n = ncpus ? ncpus : 1;
		if (comp_vectors && n > comp_vectors)
			n = comp_vectors;
	}
	if (n > GW_WORKERS_MAX)
		n = GW_WORKERS_MAX;
	return n ? n : 1;
}

unsigned gw_workers_count(const struct gw_workers *ws)
{
	return ws->n;
}

/* ---- on a worker's thread ---- */

static void worker_ack(struct gw_worker *w)
{
	pthread_mutex_lock(&w->lock);
	w->cmd_done = true;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/*
 * Wait here, inside a callback of the worker's own loop, until the caller
 * has read the engine: nothing of the worker runs meanwhile.
 */
static void worker_park(struct gw_worker *w)
{
	pthread_mutex_lock(&w->lock);
	unsigned gen = w->release_gen;
	w->cmd_done = true;
	pthread_cond_broadcast(&w->cond);
	while (w->release_gen == gen)
		pthread_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
}

/* The engine has drained: tell the caller's loop, whichever thread this is. */
static void worker_drained(void *arg)
{
	struct gw_worker *w = arg;
	uint8_t idx = (uint8_t)w->index;

	while (write(w->ws->done_pipe[1], &idx, 1) < 0 && errno == EINTR)
		;
}

static void worker_on_cmd(evutil_socket_t fd, short what, void *arg)
{
	struct gw_worker *w = arg;
	char bytes[16];

	(void)what;
	while (read(fd, bytes, sizeof(bytes)) > 0)
		;
	pthread_mutex_lock(&w->lock);
	enum worker_cmd cmd = w->cmd;
	w->cmd = WCMD_NONE;
	pthread_mutex_unlock(&w->lock);
	switch (cmd) {
	case WCMD_NONE:
		return;
	case WCMD_PARK:
		worker_park(w);
		return;
	case WCMD_RELOAD:
		gw_engine_reload_commit(w->eng, w->next, w->rl);
		w->rl = NULL;
		break;
	case WCMD_DRAIN:
		gw_engine_drain(w->eng, w->drain_ms, worker_drained, w);
		break;
	case WCMD_STOP:
		pthread_mutex_lock(&w->lock);
		w->stopping = true;
		pthread_mutex_unlock(&w->lock);
		event_base_loopbreak(w->base);
		break;
	}
	worker_ack(w);
}

static void *worker_main(void *arg)
{
	struct gw_worker *w = arg;
	char name[16];

	/* "gw-worker-N" in top -H and /proc/PID/task/TID/comm. */
	snprintf(name, sizeof(name), "gw-worker-%u", w->index);
	pthread_setname_np(pthread_self(), name);
	event_base_dispatch(w->base);
	pthread_mutex_lock(&w->lock);
	bool told = w->stopping;
	if (!told) {
		/*
		 * The loop ended on its own (it has a persistent event, so only
		 * a failure of the backend ends it): say so, and leave the
		 * engine to gw_workers_stop(), on the main thread once this one
		 * is joined. Commands to it are answered at once from now on.
		 */
		atomic_store(&w->exited, true);
		pthread_cond_broadcast(&w->cond);
	}
	pthread_mutex_unlock(&w->lock);
	if (!told) {
		gw_err("worker %u: its event loop ended; its %zu sessions are no longer served",
		       w->index, gw_engine_sessions(w->eng));
		/*
		 * Nobody reads its RDMA CM channel any more: worker 0 must stop
		 * handing it connections (they are refused from now on, and the
		 * clients waiting in its queue are refused now, not left to time
		 * out).
		 */
		if (w->ws->shared.handoffs)
			gw_handoff_detach(w->ws->shared.handoffs[w->index]);
		return NULL;
	}
	/* Stopped: close the engine here, on the thread whose loop it runs on. */
	gw_engine_stop(w->eng);
	w->eng = NULL;
	return NULL;
}

/* ---- on the caller's thread ---- */

/* Set @cmd for @w and wake its loop. */
static void worker_post(struct gw_worker *w, enum worker_cmd cmd)
{
	static const uint8_t one = 1;

	pthread_mutex_lock(&w->lock);
	w->cmd = cmd;
	w->cmd_done = false;
	pthread_mutex_unlock(&w->lock);
	/* A full pipe already holds a wake-up: the worker will look at the command. */
	while (write(w->pipe[1], &one, 1) < 0 && errno == EINTR)
		;
}

static void worker_call(struct gw_worker *w, enum worker_cmd cmd)
{
	worker_post(w, cmd);
	pthread_mutex_lock(&w->lock);
	while (!w->cmd_done && !atomic_load(&w->exited))
		pthread_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
}

/*
 * Park @w for a snapshot, waiting at most @timeout_ms for it to take the
 * command: a worker stuck in a long call (a device's teardown can hold a
 * thread for seconds) must not hold the stats endpoint and worker 0's
 * whole loop with it. False when it did not come: the command is taken
 * back, and the snapshot goes without that worker. A worker that has taken
 * the command is about to park: it is waited for.
 */
static bool worker_park_within(struct gw_worker *w, unsigned timeout_ms)
{
	struct timespec until;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	worker_post(w, WCMD_PARK);
	pthread_mutex_lock(&w->lock);
	while (!w->cmd_done) {
		if (atomic_load(&w->exited)) {
			pthread_mutex_unlock(&w->lock);
			return false;
		}
		if (w->cmd == WCMD_PARK &&
		    pthread_cond_timedwait(&w->cond, &w->lock, &until) == ETIMEDOUT &&
		    w->cmd == WCMD_PARK && !w->cmd_done) {
			w->cmd = WCMD_NONE;
			pthread_mutex_unlock(&w->lock);
			return false;
		}
		if (w->cmd != WCMD_PARK && !w->cmd_done)
			pthread_cond_wait(&w->cond, &w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	return true;
}

static void worker_release(struct gw_worker *w)
{
	pthread_mutex_lock(&w->lock);
	w->release_gen++;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

static bool worker_running(const struct gw_worker *w)
{
	return w->index > 0 && w->thread_started && w->ws->engs[w->index] &&
	       !atomic_load(&w->exited);
}

static void on_worker_drained(evutil_socket_t fd, short what, void *arg)
{
	struct gw_workers *ws = arg;
	uint8_t idx[64];
	ssize_t got;

	(void)what;
	while ((got = read(fd, idx, sizeof(idx))) > 0) {
		for (ssize_t i = 0; i < got && ws->drains_pending > 0; i++)
			ws->drains_pending--;
	}
	if (ws->drains_pending == 0 && ws->drain_done) {
		void (*done)(void *) = ws->drain_done;
		ws->drain_done = NULL;
		done(ws->drain_arg);
	}
}

void gw_workers_drain(struct gw_workers *ws, unsigned timeout_ms, void (*done)(void *arg),
		      void *arg)
{
	ws->drain_done = done;
	ws->drain_arg = arg;
	ws->drains_pending = ws->n;
	/*
	 * No worker admits from now on, before any listener closes: a closed
	 * listener renumbers its SO_REUSEPORT group, and until every worker has
	 * its DRAIN a client could land on another worker than its own. The
	 * last worker first, so that the closes move no listener in a group.
	 */
	atomic_store(&ws->shared.draining, true);
	for (unsigned k = ws->n; k-- > 1;) {
		struct gw_worker *w = &ws->w[k];
		if (!worker_running(w)) {
			ws->drains_pending--;
			continue;
		}
		w->drain_ms = timeout_ms;
		worker_call(w, WCMD_DRAIN);
	}
	gw_engine_drain(ws->engs[0], timeout_ms, worker_drained, &ws->w[0]);
}

int gw_workers_reload(struct gw_workers *ws, const struct gw_config *next, char *err, size_t errlen)
{
	struct gw_engine_reload *rl[GW_WORKERS_MAX] = { 0 };

	/* Every worker's rule sets read before any worker changes. */
	for (unsigned k = 0; k < ws->n; k++) {
		if (!ws->engs[k] || (k > 0 && !worker_running(&ws->w[k])))
			continue;
		rl[k] = gw_engine_reload_prepare(ws->engs[k], next, err, errlen);
		if (!rl[k]) {
			while (k-- > 0)
				gw_engine_reload_abort(rl[k]);
			return -EINVAL;
		}
	}
	gw_engine_reload_commit(ws->engs[0], next, rl[0]);
	for (unsigned k = 1; k < ws->n; k++) {
		struct gw_worker *w = &ws->w[k];
		if (!rl[k])
			continue;
		if (!worker_running(w)) {
			gw_engine_reload_abort(rl[k]);
			continue;
		}
		w->next = next;
		w->rl = rl[k];
		worker_call(w, WCMD_RELOAD);
	}
	return 0;
}

size_t gw_workers_sessions(const struct gw_workers *ws)
{
	if (ws->n == 1)
		return ws->engs[0] ? gw_engine_sessions(ws->engs[0]) : 0;
	return atomic_load_explicit(&ws->shared.process_live, memory_order_relaxed);
}

/* How long a snapshot waits for a worker to park before it goes without it. */
enum { WORKER_PARK_TIMEOUT_MS = 2000 };

void gw_workers_snapshot(void *arg, struct gw_stats_visitor *v)
{
	struct gw_workers *ws = arg;
	struct gw_engine *engs[GW_WORKERS_MAX];
	bool parked[GW_WORKERS_MAX] = { false };
	size_t n = 0;

	for (unsigned k = 1; k < ws->n; k++) {
		if (!worker_running(&ws->w[k]))
			continue;
		parked[k] = worker_park_within(&ws->w[k], WORKER_PARK_TIMEOUT_MS);
		if (!parked[k])
			gw_warn("stats: worker %u did not answer within %u ms; its sessions and "
				"counters are left out of this answer",
				k, (unsigned)WORKER_PARK_TIMEOUT_MS);
	}
	if (ws->engs[0])
		engs[n++] = ws->engs[0];
	for (unsigned k = 1; k < ws->n; k++) {
		if (parked[k])
			engs[n++] = ws->engs[k];
	}
	gw_engines_snapshot(engs, n, v);
	for (unsigned k = 1; k < ws->n; k++) {
		if (parked[k])
			worker_release(&ws->w[k]);
	}
}

static void worker_free(struct gw_worker *w)
{
	if (w->cmd_ev)
		event_free(w->cmd_ev);
	for (int i = 0; i < 2; i++) {
		if (w->pipe[i] >= 0)
			close(w->pipe[i]);
	}
	if (w->index > 0 && w->base)
		event_base_free(w->base);
	if (w->sync_ready) {
		pthread_cond_destroy(&w->cond);
		pthread_mutex_destroy(&w->lock);
	}
}

void gw_workers_stop(struct gw_workers *ws)
{
	if (!ws)
		return;
	for (unsigned k = ws->n; k-- > 1;) {
		struct gw_worker *w = &ws->w[k];
		ws->engs[k] = NULL; /* the stats endpoint no longer reads it */
		if (w->thread_started) {
			worker_call(w, WCMD_STOP); /* returns at once if its loop has ended */
			pthread_join(w->thread, NULL);
		}
		if (w->eng)
			gw_engine_stop(w->eng); /* never ran elsewhere, or its loop ended */
		w->eng = NULL;
		worker_free(w);
	}
	if (ws->n > 0 && ws->w[0].eng)
		gw_engine_stop(ws->w[0].eng);
	if (ws->n > 0)
		worker_free(&ws->w[0]);
	if (ws->done_ev)
		event_free(ws->done_ev);
	for (int i = 0; i < 2; i++) {
		if (ws->done_pipe[i] >= 0)
			close(ws->done_pipe[i]);
	}
	/* After every engine: each detached from its handoff when it stopped. */
	for (unsigned k = 0; ws->shared.handoffs && k < ws->n; k++)
		gw_handoff_free(ws->shared.handoffs[k]);
	free(ws->shared.handoffs);
	free(ws->shared.route_live);
	free(ws->engs);
	free(ws->w);
	free(ws);
}

static unsigned online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (unsigned)n : 1;
}

static int worker_init(struct gw_workers *ws, unsigned k, struct event_base *base)
{
	struct gw_worker *w = &ws->w[k];

	w->ws = ws;
	w->index = k;
	w->pipe[0] = w->pipe[1] = -1;
	pthread_condattr_t ca;
	if (pthread_mutex_init(&w->lock, NULL) != 0)
		return -ENOMEM;
	/* The park's time limit on the monotonic clock: a clock step must not stretch it. */
	if (pthread_condattr_init(&ca) != 0) {
		pthread_mutex_destroy(&w->lock);
		return -ENOMEM;
	}
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	int rc = pthread_cond_init(&w->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (rc != 0) {
		pthread_mutex_destroy(&w->lock);
		return -ENOMEM;
	}
	w->sync_ready = true;
	if (k == 0) {
		w->base = base;
		return 0;
	}
	w->base = event_base_new();
	if (!w->base)
		return -ENOMEM;
	if (pipe2(w->pipe, O_NONBLOCK | O_CLOEXEC) != 0)
		return -errno;
	w->cmd_ev = event_new(w->base, w->pipe[0], EV_READ | EV_PERSIST, worker_on_cmd, w);
	if (!w->cmd_ev || event_add(w->cmd_ev, NULL) != 0)
		return -ENOMEM;
	return 0;
}

/* Workers' threads take no process signal: worker 0's loop handles them. */
static int workers_spawn(struct gw_workers *ws)
{
	sigset_t block, old;
	int err = 0;

	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	for (unsigned k = 1; k < ws->n && !err; k++) {
		struct gw_worker *w = &ws->w[k];
		err = pthread_create(&w->thread, NULL, worker_main, w);
		if (!err)
			w->thread_started = true;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -err;
}

/* One handoff per worker: reverse routes' connections from worker 0's listener. */
static int workers_make_handoffs(struct gw_workers *ws)
{
	ws->shared.handoffs = calloc(ws->n, sizeof(struct gw_handoff *));
	if (!ws->shared.handoffs)
		return -ENOMEM;
	for (unsigned k = 0; k < ws->n; k++) {
		ws->shared.handoffs[k] = gw_handoff_new();
		if (!ws->shared.handoffs[k])
			return -ENOMEM;
	}
	return 0;
}

struct gw_workers *gw_workers_start(struct event_base *base, const struct gw_config *cfg, char *err,
				    size_t errlen)
{
	unsigned n = gw_workers_resolve(cfg->workers, online_cpus(),
					cfg->workers ? 0 : rdma_comp_vectors_max());
	struct gw_workers *ws = calloc(1, sizeof(*ws));

	if (!ws) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	ws->base = base;
	ws->done_pipe[0] = ws->done_pipe[1] = -1;
	ws->w = calloc(n, sizeof(*ws->w));
	ws->engs = calloc(n, sizeof(struct gw_engine *));
	ws->shared.route_live =
		calloc(cfg->routes_count ? cfg->routes_count : 1, sizeof(*ws->shared.route_live));
	ws->shared.nroutes = cfg->routes_count;
	if (!ws->w || !ws->engs || !ws->shared.route_live) {
		free(ws->w);
		free(ws->engs);
		free(ws->shared.route_live);
		free(ws);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	ws->n = n;
	for (unsigned k = 0; k < n; k++)
		ws->w[k].pipe[0] = ws->w[k].pipe[1] = -1;
	if (n > 1 && workers_make_handoffs(ws) != 0) {
		snprintf(err, errlen, "cannot set up the workers' hand-over of RDMA connections");
		gw_workers_stop(ws);
		return NULL;
	}
	if (pipe2(ws->done_pipe, O_NONBLOCK | O_CLOEXEC) != 0 ||
	    !(ws->done_ev = event_new(base, ws->done_pipe[0], EV_READ | EV_PERSIST,
				      on_worker_drained, ws)) ||
	    event_add(ws->done_ev, NULL) != 0) {
		snprintf(err, errlen, "cannot set up the workers' pipe: %s", strerror(errno));
		gw_workers_stop(ws);
		return NULL;
	}
	/* In order: each forward route's listeners join their group as 0, 1, ... */
	for (unsigned k = 0; k < n; k++) {
		int e = worker_init(ws, k, base);
		if (e) {
			snprintf(err, errlen, "worker %u: cannot set up its event loop: %s", k,
				 strerror(-e));
			gw_workers_stop(ws);
			return NULL;
		}
		char why[512];
		ws->w[k].eng = gw_engine_start_worker(ws->w[k].base, cfg, gw_modes, k, n,
						      n > 1 ? &ws->shared : NULL, why, sizeof(why));
		if (!ws->w[k].eng) {
			if (n > 1)
				snprintf(err, errlen, "worker %u: %s", k, why);
			else
				snprintf(err, errlen, "%s", why);
			gw_workers_stop(ws);
			return NULL;
		}
		ws->engs[k] = ws->w[k].eng;
	}
	int e = workers_spawn(ws);
	if (e) {
		snprintf(err, errlen, "cannot start a worker thread: %s", strerror(-e));
		gw_workers_stop(ws);
		return NULL;
	}
	if (n > 1)
		gw_info("%u workers, each with its own event loop and RDMA resources", n);
	return ws;
}
