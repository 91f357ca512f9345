/* SPDX-License-Identifier: MIT */
/*
 * gateway/core/admission.c - session limits per route, per process and per
 * client address.
 */
#include "gateway/core/admission.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/host.h"
#include "common/log.h"

/* Refusal messages per route: at most one per this many microseconds. */
#define GW_ADMISSION_LOG_US 1000000u

/* A client address as the table keys it: IPv4 in the first 4 bytes. */
struct gw_client_entry {
	struct gw_client_entry *next;
	struct gw_host key;
	uint32_t sessions;
};

/*
 * The engine's peers are whole addresses of their family (from accept() or
 * rdma_cm), so the storage's size stands for their length.
 */
static bool client_key(const struct sockaddr *sa, struct gw_host *k)
{
	memset(k, 0, sizeof(*k));
	return sa && gw_host_from_sockaddr(k, sa, sizeof(struct sockaddr_storage));
}

/* FNV-1a over the key, seeded. */
static uint32_t client_bucket(const struct gw_admission *a, const struct gw_host *k)
{
	uint32_t h = 2166136261u ^ a->seed;
	size_t n = k->family == AF_INET ? 4 : 16;

	for (size_t i = 0; i < n; i++) {
		h ^= k->addr[i];
		h *= 16777619u;
	}
	h ^= h >> 15;
	return h & (GW_ADMISSION_BUCKETS - 1);
}

/* The link that points at @k's entry, or the NULL link at the end of its bucket. */
static struct gw_client_entry **client_find(struct gw_admission *a, const struct gw_host *k)
{
	struct gw_client_entry **pp = &a->buckets[client_bucket(a, k)];

	while (*pp && !gw_host_equal(&(*pp)->key, k))
		pp = &(*pp)->next;
	return pp;
}

static const struct gw_client_entry *client_lookup(const struct gw_admission *a,
						   const struct gw_host *k)
{
	const struct gw_client_entry *e = a->buckets[client_bucket(a, k)];

	while (e && !gw_host_equal(&e->key, k))
		e = e->next;
	return e;
}

void gw_admission_init(struct gw_admission *a, uint32_t seed)
{
	memset(a, 0, sizeof(*a));
	a->seed = seed;
}

void gw_admission_fini(struct gw_admission *a)
{
	for (size_t i = 0; i < GW_ADMISSION_BUCKETS; i++) {
		while (a->buckets[i]) {
			struct gw_client_entry *e = a->buckets[i];
			a->buckets[i] = e->next;
			free(e);
		}
	}
	a->entries = 0;
}

uint32_t gw_admission_client_sessions(const struct gw_admission *a, const struct sockaddr *peer)
{
	struct gw_host k;

	if (!client_key(peer, &k))
		return 0;
	const struct gw_client_entry *e = client_lookup(a, &k);
	return e ? e->sessions : 0;
}

/*
 * Whether a refusal is logged: not when a message went out less than
 * GW_ADMISSION_LOG_US ago (then it only adds to the next message's tally,
 * *@tally: the refusals that message stands for, itself included).
 */
static bool admission_log_due(struct gw_admission *a, uint64_t now_us, uint64_t *tally)
{
	a->unlogged++;
	if (a->last_log_us != 0 && now_us - a->last_log_us < GW_ADMISSION_LOG_US)
		return false;
	*tally = a->unlogged;
	a->last_log_us = now_us;
	a->unlogged = 0;
	return true;
}

/*
 * Refuse: count it, and log it when admission_log_due() says so. Nothing is
 * formatted for a refusal that is not logged: in a flood, most are not.
 */
static bool admission_refuse(struct gw_admission *a, const struct gw_admission_limits *lim,
			     const struct sockaddr *peer, struct gw_counters *totals,
			     enum gw_event_kind kind, const char *who, uint64_t sessions,
			     const char *key, uint64_t now_us)
{
	char host[INET6_ADDRSTRLEN] = "?";
	struct gw_host k;
	uint64_t tally;

	totals->events[kind]++;
	if (!admission_log_due(a, now_us, &tally))
		return false;
	if (client_key(peer, &k))
		inet_ntop(k.family, k.addr, host, sizeof(host));
	if (tally > 1)
		gw_warn("%s: refused client %s: %s has %llu sessions (%s) (%llu refused since the "
			"last such message)",
			lim->route, host, who, (unsigned long long)sessions, key,
			(unsigned long long)tally - 1);
	else
		gw_warn("%s: refused client %s: %s has %llu sessions (%s)", lim->route, host, who,
			(unsigned long long)sessions, key);
	return false;
}

void gw_admission_refuse_unlisted(struct gw_admission *a, const char *route,
				  const struct sockaddr *peer, struct gw_counters *totals,
				  uint64_t now_us)
{
	char host[INET6_ADDRSTRLEN] = "?";
	struct gw_host k;
	uint64_t tally;

	totals->events[GW_EV_REFUSED_CLIENT]++;
	if (!admission_log_due(a, now_us, &tally))
		return;
	if (client_key(peer, &k))
		inet_ntop(k.family, k.addr, host, sizeof(host));
	if (tally > 1)
		gw_warn("%s: refused client %s (not in allowed_clients) (%llu refused since the "
			"last such message)",
			route, host, (unsigned long long)tally - 1);
	else
		gw_warn("%s: refused client %s (not in allowed_clients)", route, host);
}

bool gw_admission_check(struct gw_admission *a, const struct gw_admission_limits *lim,
			const struct sockaddr *peer, struct gw_counters *totals, uint64_t now_us)
{
	if (lim->client_max != 0 && gw_admission_client_sessions(a, peer) >= lim->client_max)
		return admission_refuse(a, lim, peer, totals, GW_EV_CLIENT_SESSION_LIMIT, "it",
					lim->client_max, "max_sessions_per_client", now_us);
	if (lim->route_max != 0 && lim->route_live >= lim->route_max)
		return admission_refuse(a, lim, peer, totals, GW_EV_SESSION_LIMIT, "the route",
					lim->route_live, "max_sessions", now_us);
	if (lim->process_max != 0 && lim->process_live >= lim->process_max)
		return admission_refuse(a, lim, peer, totals, GW_EV_SESSION_LIMIT, "the gateway",
					lim->process_live, "top-level max_sessions", now_us);
	return true;
}

bool gw_admission_enter(struct gw_admission *a, const struct sockaddr *peer,
			struct gw_admission_ticket *t)
{
	struct gw_host k;

	t->entry = NULL;
	if (!client_key(peer, &k))
		return true; /* not an IP client (tests' socketpairs): nothing to count */
	struct gw_client_entry **pp = client_find(a, &k);
	if (!*pp) {
		struct gw_client_entry *e = calloc(1, sizeof(*e));
		if (!e)
			return false;
		e->key = k;
		*pp = e;
		a->entries++;
	}
	(*pp)->sessions++;
	t->entry = *pp;
	return true;
}

void gw_admission_leave(struct gw_admission *a, struct gw_admission_ticket *t)
{
	struct gw_client_entry *e = t->entry;

	if (!e)
		return;
	t->entry = NULL;
	if (--e->sessions > 0)
		return;
	struct gw_client_entry **pp = client_find(a, &e->key);
	*pp = e->next;
	free(e);
	a->entries--;
}
