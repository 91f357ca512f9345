/* SPDX-License-Identifier: MIT */
#include "gateway/maps/fairq.h"

#include <string.h>

/* A grant of 0 is read as 1 (RFC 8166, section 3.3.1): the connection is never stuck. */
static uint32_t grant_of(uint32_t grant)
{
	return grant ? grant : 1;
}

void fairq_init(struct fairq *q, uint32_t quantum, uint32_t grant)
{
	memset(q, 0, sizeof(*q));
	TAILQ_INIT(&q->ring);
	q->quantum = quantum ? quantum : 1;
	q->grant = grant_of(grant);
}

void fairq_set_grant(struct fairq *q, uint32_t grant)
{
	q->grant = grant_of(grant);
}

uint32_t fairq_share_cap(uint32_t credits, uint32_t configured)
{
	if (configured)
		return credits && configured > credits ? credits : configured;
	return credits > 1 ? credits / 2 : 1;
}

void fairq_set_contended_cap(struct fairq *q, uint32_t cap)
{
	q->contended_cap = cap;
}

bool fairq_contended(const struct fairq *q, uint64_t now_us)
{
	return gw_contention_active(&q->contention, now_us);
}

void fairq_client_init(struct fairq_client *c, uint32_t cap)
{
	memset(c, 0, sizeof(*c));
	TAILQ_INIT(&c->calls);
	c->cap = cap;
}

static bool below_cap(const struct fairq_client *c)
{
	return c->cap == 0 || c->in_flight < c->cap;
}

/* A client is in the ring exactly when it has queued calls and room under its cap. */
static void ring_join(struct fairq *q, struct fairq_client *c)
{
	if (c->in_ring || c->paused || c->queued == 0 || !below_cap(c))
		return;
	TAILQ_INSERT_TAIL(&q->ring, c, ring);
	c->in_ring = true;
	c->burst = q->quantum;
}

static void ring_leave(struct fairq *q, struct fairq_client *c)
{
	if (!c->in_ring)
		return;
	TAILQ_REMOVE(&q->ring, c, ring);
	c->in_ring = false;
}

void fairq_enqueue(struct fairq *q, struct fairq_client *c, struct fairq_item *it, uint64_t now_us)
{
	it->client = c;
	it->t_enq = now_us;
	TAILQ_INSERT_TAIL(&c->calls, it, link);
	c->queued++;
	q->queued++;
	ring_join(q, c);
}

static void take_queued(struct fairq *q, struct fairq_item *it)
{
	struct fairq_client *c = it->client;

	TAILQ_REMOVE(&c->calls, it, link);
	c->queued--;
	q->queued--;
}

/*
 * @c at the head of the ring is over the contended cap while others are
 * served: it leaves the ring (fairq_complete() brings it back, and a client
 * over any cap has calls in flight, so one will).
 */
static bool held_by_contention(struct fairq *q, struct fairq_client *c, uint64_t now_us)
{
	if (q->contended_cap == 0 || c->in_flight < q->contended_cap)
		return false;
	if (!fairq_contended(q, now_us) && !gw_contention_would(&q->contention, c, now_us))
		return false;
	ring_leave(q, c);
	return true;
}

struct fairq_item *fairq_pick(struct fairq *q, uint64_t now_us)
{
	struct fairq_client *c = TAILQ_FIRST(&q->ring);
	struct fairq_item *it;

	if (!c)
		return NULL;
	if (q->in_flight >= q->grant) {
		q->stalls++;
		return NULL;
	}
	while (c && held_by_contention(q, c, now_us))
		c = TAILQ_FIRST(&q->ring);
	if (!c)
		return NULL;
	gw_contention_note(&q->contention, c, now_us);
	it = TAILQ_FIRST(&c->calls);
	take_queued(q, it);
	c->in_flight++;
	q->in_flight++;
	q->picks++;
	c->picked++;
	uint64_t waited = now_us > it->t_enq ? now_us - it->t_enq : 0;
	c->queue_us += waited;
	if (waited > c->queue_max_us)
		c->queue_max_us = waited;

	if (c->queued == 0 || !below_cap(c)) {
		ring_leave(q, c);
	} else if (--c->burst == 0) {
		/* Its turn is over: to the back of the ring, with a fresh quantum. */
		ring_leave(q, c);
		ring_join(q, c);
	}
	return it;
}

void fairq_complete(struct fairq *q, struct fairq_client *c)
{
	if (q->in_flight == 0)
		return; /* a caller's double completion must not wrap the count */
	q->in_flight--;
	if (!c) {
		if (q->orphans)
			q->orphans--;
		return;
	}
	if (c->in_flight)
		c->in_flight--;
	ring_join(q, c);
}

void fairq_unpick(struct fairq *q, struct fairq_item *it)
{
	struct fairq_client *c = it->client;

	if (q->in_flight)
		q->in_flight--;
	if (c->in_flight)
		c->in_flight--;
	if (q->picks)
		q->picks--;
	if (c->picked)
		c->picked--;
	TAILQ_INSERT_HEAD(&c->calls, it, link);
	c->queued++;
	q->queued++;
	ring_leave(q, c);
	if (c->paused)
		return;
	TAILQ_INSERT_HEAD(&q->ring, c, ring);
	c->in_ring = true;
	c->burst = q->quantum;
}

void fairq_client_pause(struct fairq *q, struct fairq_client *c, bool paused)
{
	c->paused = paused;
	if (paused)
		ring_leave(q, c);
	else
		ring_join(q, c);
}

void fairq_remove(struct fairq *q, struct fairq_item *it)
{
	struct fairq_client *c = it->client;

	take_queued(q, it);
	if (c->queued == 0)
		ring_leave(q, c);
}

void fairq_client_detach(struct fairq *q, struct fairq_client *c,
			 void (*drop)(struct fairq_item *it, void *arg), void *arg)
{
	struct fairq_item *it;

	ring_leave(q, c);
	gw_contention_forget(&q->contention, c);
	while ((it = TAILQ_FIRST(&c->calls)) != NULL) {
		take_queued(q, it);
		c->dropped++;
		if (drop)
			drop(it, arg);
	}
	q->orphans += c->in_flight;
	c->in_flight = 0;
}
