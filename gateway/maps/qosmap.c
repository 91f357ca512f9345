/* SPDX-License-Identifier: MIT */
/*
 * gateway/maps/qosmap.c - token buckets per (class, client address).
 */
#include "gateway/maps/qosmap.h"

#include <stdlib.h>
#include <string.h>

/* What a bucket of @rate a second holds when full: @burst_ms of it, at least one unit. */
static uint64_t burst_of(uint64_t rate, uint32_t burst_ms)
{
	uint64_t b = rate / 1000 * burst_ms + rate % 1000 * burst_ms / 1000;

	return b ? b : 1;
}

bool qos_map_init(struct qos_map *m, uint32_t nclasses, uint32_t seed)
{
	memset(m, 0, sizeof(*m));
	m->seed = seed;
	m->nclasses = nclasses;
	m->shared = calloc(nclasses ? nclasses : 1, sizeof(*m->shared));
	m->stats = calloc(nclasses ? nclasses : 1, sizeof(*m->stats));
	if (!m->shared || !m->stats) {
		free(m->shared);
		free(m->stats);
		m->shared = NULL;
		m->stats = NULL;
		return false;
	}
	for (uint32_t i = 0; i < nclasses; i++) {
		m->shared[i].cls = i;
		m->shared[i].shared = true;
		TAILQ_INIT(&m->shared[i].holds);
	}
	return true;
}

void qos_map_fini(struct qos_map *m)
{
	for (size_t i = 0; i < QOSMAP_BUCKETS; i++) {
		while (m->hash[i]) {
			struct qos_entry *e = m->hash[i];
			m->hash[i] = e->next;
			free(e);
		}
	}
	free(m->shared);
	free(m->stats);
	memset(m, 0, sizeof(*m));
}

/* FNV-1a over the class and the address, seeded: a peer cannot aim at one chain. */
static uint32_t chain_of(const struct qos_map *m, uint32_t cls, const struct gw_host *k)
{
	uint32_t h = 2166136261u ^ m->seed;
	size_t n = k->family == AF_INET ? 4 : 16;

	h = (h ^ cls) * 16777619u;
	for (size_t i = 0; i < n; i++) {
		h ^= k->addr[i];
		h *= 16777619u;
	}
	h ^= h >> 15;
	return h & (QOSMAP_BUCKETS - 1);
}

struct qos_entry *qos_map_get(struct qos_map *m, uint32_t cls, const struct sockaddr *peer)
{
	struct gw_host k;

	memset(&k, 0, sizeof(k));
	if (cls >= m->nclasses)
		cls = 0; /* the caller's classes are the map's: cannot happen */
	if (!peer || !gw_host_from_sockaddr(&k, peer, sizeof(struct sockaddr_storage)))
		return &m->shared[cls];
	uint32_t chain = chain_of(m, cls, &k);
	for (struct qos_entry *e = m->hash[chain]; e; e = e->next) {
		if (e->cls == cls && gw_host_equal(&e->key, &k))
			return e;
	}
	struct qos_class_stats *st = &m->stats[cls];
	struct qos_entry *e = st->clients < QOSMAP_MAX_CLIENTS ? calloc(1, sizeof(*e)) : NULL;
	if (!e) {
		st->overflow++;
		return &m->shared[cls];
	}
	e->key = k;
	e->cls = cls;
	TAILQ_INIT(&e->holds);
	e->next = m->hash[chain];
	m->hash[chain] = e;
	st->clients++;
	return e;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

uint64_t qos_entry_admit(struct qos_map *m, struct qos_entry *e, const struct gw_qos_class *c,
			 uint64_t now_us, uint64_t bytes)
{
	uint64_t wait = 0;
	uint64_t calls_burst = burst_of(c->calls_per_s, c->burst_ms);
	uint64_t up_burst = burst_of(c->to_server_bytes_per_s, c->burst_ms);
	uint64_t down_burst = burst_of(c->to_client_bytes_per_s, c->burst_ms);

	if (c->max_in_flight && e->in_flight >= c->max_in_flight)
		return QOSMAP_WAIT_REPLY;
	if (c->calls_per_s)
		wait = max_u64(wait, gw_tbucket_wait_us(&e->calls, now_us, 1, c->calls_per_s,
							calls_burst));
	if (c->to_server_bytes_per_s)
		wait = max_u64(wait, gw_tbucket_wait_us(&e->to_server, now_us, bytes,
							c->to_server_bytes_per_s, up_burst));
	/* Replies already delivered must be paid for: one byte's token shows they are. */
	if (c->to_client_bytes_per_s)
		wait = max_u64(wait, gw_tbucket_wait_us(&e->to_client, now_us, 1,
							c->to_client_bytes_per_s, down_burst));
	if (wait)
		return wait;
	if (c->calls_per_s)
		gw_tbucket_take_debt(&e->calls, now_us, 1, c->calls_per_s, calls_burst);
	if (c->to_server_bytes_per_s)
		gw_tbucket_take_debt(&e->to_server, now_us, bytes, c->to_server_bytes_per_s,
				     up_burst);
	e->in_flight++;
	m->stats[e->cls].calls++;
	m->stats[e->cls].bytes_to_server += bytes;
	return 0;
}

void qos_entry_done(struct qos_map *m, struct qos_entry *e, const struct gw_qos_class *c,
		    uint64_t now_us, uint64_t reply_bytes)
{
	if (e->in_flight)
		e->in_flight--;
	m->stats[e->cls].bytes_to_client += reply_bytes;
	if (c->to_client_bytes_per_s && reply_bytes)
		gw_tbucket_charge(&e->to_client, now_us, reply_bytes, c->to_client_bytes_per_s,
				  burst_of(c->to_client_bytes_per_s, c->burst_ms));
	/* A place in flight is free: whoever waits for one looks again (struct qos_hold). */
	if (c->max_in_flight) {
		struct qos_hold *h;
		TAILQ_FOREACH (h, &e->holds, link) {
			if (h->wake)
				h->wake(h->arg);
		}
	}
}

void qos_entry_wait_begin(struct qos_map *m, struct qos_entry *e)
{
	if (e->waiting++ == 0)
		m->stats[e->cls].throttled_now++;
	m->stats[e->cls].throttles++;
}

void qos_entry_wait_end(struct qos_map *m, struct qos_entry *e, uint64_t waited_us)
{
	if (e->waiting && --e->waiting == 0)
		m->stats[e->cls].throttled_now--;
	m->stats[e->cls].throttled_us += waited_us;
}

/* Whether nothing refers to @e and its buckets are full: forgetting it changes nothing. */
static bool entry_idle(struct qos_entry *e, const struct gw_qos_class *c, uint64_t now_us)
{
	if (e->in_flight || e->waiting)
		return false;
	if (c->calls_per_s && !gw_tbucket_full(&e->calls, now_us, c->calls_per_s,
					       burst_of(c->calls_per_s, c->burst_ms)))
		return false;
	if (c->to_server_bytes_per_s &&
	    !gw_tbucket_full(&e->to_server, now_us, c->to_server_bytes_per_s,
			     burst_of(c->to_server_bytes_per_s, c->burst_ms)))
		return false;
	if (c->to_client_bytes_per_s &&
	    !gw_tbucket_full(&e->to_client, now_us, c->to_client_bytes_per_s,
			     burst_of(c->to_client_bytes_per_s, c->burst_ms)))
		return false;
	return true;
}

uint32_t qos_map_sweep(struct qos_map *m, const struct gw_qos_class *classes, uint32_t nclasses,
		       uint64_t now_us)
{
	uint32_t freed = 0;

	for (size_t i = 0; i < QOSMAP_BUCKETS; i++) {
		struct qos_entry **pp = &m->hash[i];

		while (*pp) {
			struct qos_entry *e = *pp;
			if (e->cls >= nclasses || !entry_idle(e, &classes[e->cls], now_us)) {
				pp = &e->next;
				continue;
			}
			*pp = e->next;
			m->stats[e->cls].clients--;
			free(e);
			freed++;
		}
	}
	return freed;
}

int qos_route_class(const struct gw_route *r, const struct sockaddr *peer, const struct ulb_call *u)
{
	bool writes = u->n_args > 0, reads = u->n_results > 0;

	for (size_t i = 0; i < r->qos_count; i++) {
		if ((r->qos_has_default && i + 1 == r->qos_count) ||
		    gw_qos_class_matches(&r->qos[i], peer, u->prog, reads, writes))
			return (int)i;
	}
	return -1;
}

uint64_t qos_route_admit(struct qos_map *m, const struct gw_route *r, uint32_t cls,
			 const struct sockaddr *peer, uint64_t now_us, uint64_t bytes,
			 struct qos_entry **e)
{
	*e = qos_map_get(m, cls, peer);
	return qos_entry_admit(m, *e, &r->qos[cls], now_us, bytes);
}

struct timeval qos_hold_delay(uint64_t wait)
{
	/* QOSMAP_WAIT_REPLY too: a done call of the entry wakes the session sooner. */
	if (wait > QOSMAP_MAX_WAIT_US)
		wait = QOSMAP_MAX_WAIT_US;
	return (struct timeval){ .tv_sec = (time_t)(wait / 1000000),
				 .tv_usec = (suseconds_t)(wait % 1000000) };
}

void qos_hold_on(struct qos_map *m, struct qos_hold *h, struct qos_entry *e, uint64_t now_us)
{
	if (h->waiting == e)
		return;
	if (h->waiting) {
		TAILQ_REMOVE(&h->waiting->holds, h, link);
		qos_entry_wait_end(m, h->waiting, now_us - h->since);
	}
	qos_entry_wait_begin(m, e);
	TAILQ_INSERT_TAIL(&e->holds, h, link);
	h->waiting = e;
	h->since = now_us;
}

void qos_hold_end(struct qos_map *m, struct qos_hold *h, uint64_t now_us)
{
	if (!h->waiting)
		return;
	TAILQ_REMOVE(&h->waiting->holds, h, link);
	qos_entry_wait_end(m, h->waiting, now_us - h->since);
	h->waiting = NULL;
}
