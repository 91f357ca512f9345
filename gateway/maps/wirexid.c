/* SPDX-License-Identifier: MIT */
#include "gateway/maps/wirexid.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

/*
 * Both tables are chained through entry indices (key_next, wire_next), with
 * a bucket per WIREXID_ENTRIES_PER_BUCKET entries rounded up to a power of
 * two: a load factor of at most four, no allocation after init, and O(1)
 * removal of an entry whose chain is short. The existing gateway/xidmap is an open-addressing table
 * of 32-bit keys; these keys are 24 bytes and each entry sits in two tables
 * at once, which index chains do without a second copy of the key.
 */

/*
 * A keyed multiply-xor mix: a client chooses its port and XIDs, and the
 * secret keeps it from aiming many keys at one bucket. Not a MAC: a chain
 * is bounded anyway by the entries the client may hold.
 */
static uint32_t key_hash(const struct wirexid *m, const struct wirexid_key *k)
{
	uint32_t w[sizeof(*k) / 4];
	uint64_t h = m->secret;

	memcpy(w, k, sizeof(w));
	for (unsigned i = 0; i < sizeof(w) / 4; i++) {
		h = (h ^ w[i]) * 0x9e3779b97f4a7c15ull;
		h ^= h >> 29;
	}
	return (uint32_t)(h ^ (h >> 32)) & m->mask;
}

/* The ledger's hash: the address alone (keyed as key_hash(), another constant). */
static uint32_t addr_hash(const struct wirexid *m, const uint8_t addr[16])
{
	uint32_t w[4];
	uint64_t h = m->secret ^ 0x5851f42d4c957f2dull;

	memcpy(w, addr, sizeof(w));
	for (unsigned i = 0; i < 4; i++) {
		h = (h ^ w[i]) * 0x9e3779b97f4a7c15ull;
		h ^= h >> 29;
	}
	return (uint32_t)(h ^ (h >> 32)) & m->mask;
}

/* Wire XIDs are the gateway's own, sequential per channel: a multiplicative hash spreads them. */
static uint32_t wire_hash(const struct wirexid *m, uint16_t chan, uint32_t xid)
{
	return ((xid ^ ((uint32_t)chan * 0x9e3779b9u)) * 2654435761u) & m->mask;
}

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

int wirexid_init(struct wirexid *m, const struct wirexid_params *p)
{
	uint32_t max = p->max_entries ? p->max_entries : WIREXID_DEFAULT_MAX;
	uint32_t buckets = 16;
	uint64_t s = p->seed;

	memset(m, 0, sizeof(*m));
	if (max > WIREXID_MAX_ENTRIES || p->channels == 0 || p->channels > WIREXID_MAX_CHANNELS)
		return -EINVAL;
	/*
	 * A bucket per WIREXID_ENTRIES_PER_BUCKET entries: the tables are set
	 * up (touched) whole at init, sized for every slot of every admissible
	 * client (2 MiB at a route's defaults with max_sessions 1,100, a bucket
	 * an entry), while the map holds a few calls a client most of the time.
	 * Chains average up to 4 entries when the map is full, which a busy
	 * route's answered entries (kept for the TTL) can keep it: a cost in
	 * time only.
	 */
	while ((uint64_t)buckets * WIREXID_ENTRIES_PER_BUCKET < max)
		buckets *= 2;
	m->e = calloc(max, sizeof(*m->e));
	m->key_head = malloc(buckets * sizeof(*m->key_head));
	m->wire_head = malloc(buckets * sizeof(*m->wire_head));
	m->next_xid = malloc(p->channels * sizeof(*m->next_xid));
	/*
	 * The ledger: an address holds a kept entry or is not in it, so max
	 * records (record 0 unused) always suffice, whoever calls. Its tables
	 * say "none" with 0, so calloc'd they start empty, and pages no
	 * address reached are never touched.
	 */
	m->cl = calloc((size_t)max + 1, sizeof(*m->cl));
	m->cl_head = calloc(buckets, sizeof(*m->cl_head));
	m->by_kept = calloc((size_t)max + 1, sizeof(*m->by_kept));
	if (!m->e || !m->key_head || !m->wire_head || !m->next_xid || !m->cl || !m->cl_head ||
	    !m->by_kept) {
		wirexid_destroy(m);
		return -ENOMEM;
	}
	m->max = max;
	m->ttl_us = p->ttl_us ? p->ttl_us : WIREXID_DEFAULT_TTL_US;
	m->channels = p->channels;
	m->mask = buckets - 1;
	m->secret = splitmix(&s);
	for (uint32_t b = 0; b < buckets; b++)
		m->key_head[b] = m->wire_head[b] = WIREXID_NONE;
	for (uint16_t c = 0; c < p->channels; c++)
		m->next_xid[c] = (uint32_t)splitmix(&s);
	m->free_head = WIREXID_NONE; /* entries are taken from made on: none linked yet */
	m->safe.head = m->safe.tail = WIREXID_NONE;
	m->kept.head = m->kept.tail = WIREXID_NONE;
	m->cl_made = 1;
	return 0;
}

void wirexid_destroy(struct wirexid *m)
{
	free(m->e);
	free(m->key_head);
	free(m->wire_head);
	free(m->next_xid);
	free(m->cl);
	free(m->cl_head);
	free(m->by_kept);
	memset(m, 0, sizeof(*m));
}

bool wirexid_key_from_sockaddr(struct wirexid_key *k, const struct sockaddr *sa, uint32_t xid)
{
	memset(k, 0, sizeof(*k));
	k->xid = xid;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		k->addr[10] = k->addr[11] = 0xff;
		memcpy(&k->addr[12], &in->sin_addr, 4);
		k->port = ntohs(in->sin_port);
		return true;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
		memcpy(k->addr, &in6->sin6_addr, 16);
		k->port = ntohs(in6->sin6_port);
		return true;
	}
	return false;
}

static uint32_t key_find(const struct wirexid *m, const struct wirexid_key *k)
{
	for (uint32_t i = m->key_head[key_hash(m, k)]; i != WIREXID_NONE; i = m->e[i].key_next)
		if (memcmp(&m->e[i].key, k, sizeof(*k)) == 0)
			return i;
	return WIREXID_NONE;
}

/* The live entry (in flight or answered) that holds @xid on @chan. */
static uint32_t wire_find(const struct wirexid *m, uint16_t chan, uint32_t xid)
{
	for (uint32_t i = m->wire_head[wire_hash(m, chan, xid)]; i != WIREXID_NONE;
	     i = m->e[i].wire_next)
		if (m->e[i].wire_xid == xid && m->e[i].chan == chan)
			return i;
	return WIREXID_NONE;
}

static void key_link(struct wirexid *m, uint32_t i)
{
	uint32_t b = key_hash(m, &m->e[i].key);

	m->e[i].key_next = m->key_head[b];
	m->key_head[b] = i;
}

static void key_unlink(struct wirexid *m, uint32_t i)
{
	uint32_t *p = &m->key_head[key_hash(m, &m->e[i].key)];

	while (*p != i)
		p = &m->e[*p].key_next;
	*p = m->e[i].key_next;
}

static void wire_link(struct wirexid *m, uint32_t i)
{
	uint32_t b = wire_hash(m, m->e[i].chan, m->e[i].wire_xid);

	m->e[i].wire_next = m->wire_head[b];
	m->wire_head[b] = i;
}

static void wire_unlink(struct wirexid *m, uint32_t i)
{
	uint32_t *p = &m->wire_head[wire_hash(m, m->e[i].chan, m->e[i].wire_xid)];

	while (*p != i)
		p = &m->e[*p].wire_next;
	*p = m->e[i].wire_next;
}

/*
 * Answered entries are appended to their age list as they are answered:
 * with one TTL, oldest first is expiry order.
 */
static void age_append(struct wirexid *m, struct wirexid_age *a, uint32_t i)
{
	m->e[i].next = WIREXID_NONE;
	m->e[i].prev = a->tail;
	if (a->tail != WIREXID_NONE)
		m->e[a->tail].next = i;
	else
		a->head = i;
	a->tail = i;
}

static void age_unlink(struct wirexid *m, struct wirexid_age *a, uint32_t i)
{
	struct wirexid_entry *e = &m->e[i];

	if (e->prev != WIREXID_NONE)
		m->e[e->prev].next = e->next;
	else
		a->head = e->next;
	if (e->next != WIREXID_NONE)
		m->e[e->next].prev = e->prev;
	else
		a->tail = e->prev;
}

/* ---- the ledger: addresses and their kept entries ---- */

static uint32_t client_find(const struct wirexid *m, const uint8_t addr[16])
{
	for (uint32_t c = m->cl_head[addr_hash(m, addr)]; c != 0; c = m->cl[c].hnext)
		if (memcmp(m->cl[c].addr, addr, 16) == 0)
			return c;
	return 0;
}

/* A record for @addr, holding nothing yet; 0 when none is left (never: see wirexid_init()). */
static uint32_t client_make(struct wirexid *m, const uint8_t addr[16])
{
	uint32_t c = m->cl_free;

	if (c != 0)
		m->cl_free = m->cl[c].hnext;
	else if (m->cl_made <= m->max)
		c = m->cl_made++;
	else
		return 0;
	struct wirexid_client *r = &m->cl[c];
	memset(r, 0, sizeof(*r));
	memcpy(r->addr, addr, 16);
	r->head = r->tail = WIREXID_NONE;
	uint32_t b = addr_hash(m, addr);
	r->hnext = m->cl_head[b];
	m->cl_head[b] = c;
	return c;
}

static void client_release(struct wirexid *m, uint32_t c)
{
	uint32_t *p = &m->cl_head[addr_hash(m, m->cl[c].addr)];

	while (*p != c)
		p = &m->cl[*p].hnext;
	*p = m->cl[c].hnext;
	m->cl[c].hnext = m->cl_free;
	m->cl_free = c;
}

/*
 * The addresses holding n kept entries are listed in by_kept[n], and most
 * is the largest n listed: a count moves by one at a time, so keeping it
 * is O(1), and so is finding an address that holds the most.
 */
static void count_link(struct wirexid *m, uint32_t c)
{
	struct wirexid_client *r = &m->cl[c];
	uint32_t *head = &m->by_kept[r->kept];

	r->bprev = 0;
	r->bnext = *head;
	if (*head != 0)
		m->cl[*head].bprev = c;
	*head = c;
	if (r->kept > m->most)
		m->most = r->kept;
}

static void count_unlink(struct wirexid *m, uint32_t c)
{
	struct wirexid_client *r = &m->cl[c];

	if (r->bprev != 0)
		m->cl[r->bprev].bnext = r->bnext;
	else
		m->by_kept[r->kept] = r->bnext;
	if (r->bnext != 0)
		m->cl[r->bnext].bprev = r->bprev;
	/* The last of the most: the next most is one less, this address's count once dropped. */
	if (m->by_kept[r->kept] == 0 && m->most == r->kept)
		m->most--;
}

/* Answered entry @i of a run-once call is kept for address @c: the newest of its entries. */
static void client_add(struct wirexid *m, uint32_t c, uint32_t i)
{
	struct wirexid_client *r = &m->cl[c];
	struct wirexid_entry *e = &m->e[i];

	e->client = c;
	e->cnext = WIREXID_NONE;
	e->cprev = r->tail;
	if (r->tail != WIREXID_NONE)
		m->e[r->tail].cnext = i;
	else
		r->head = i;
	r->tail = i;
	if (r->kept == 0)
		m->st.kept_clients++;
	else
		count_unlink(m, c);
	r->kept++;
	count_link(m, c);
	m->st.kept++;
}

/* Kept entry @i leaves its address (recycled, or its call sent again); an empty record goes. */
static void client_drop(struct wirexid *m, uint32_t i)
{
	struct wirexid_entry *e = &m->e[i];
	uint32_t c = e->client;
	struct wirexid_client *r = &m->cl[c];

	if (e->cprev != WIREXID_NONE)
		m->e[e->cprev].cnext = e->cnext;
	else
		r->head = e->cnext;
	if (e->cnext != WIREXID_NONE)
		m->e[e->cnext].cprev = e->cprev;
	else
		r->tail = e->cprev;
	e->client = 0;
	count_unlink(m, c);
	r->kept--;
	m->st.kept--;
	if (r->kept != 0) {
		count_link(m, c);
	} else {
		client_release(m, c);
		m->st.kept_clients--;
	}
}

/* Answered entry @i is taken off its lists (it is recycled, or its call goes again). */
static void answered_unlink(struct wirexid *m, uint32_t i)
{
	if (m->e[i].client != 0) {
		age_unlink(m, &m->kept, i);
		client_drop(m, i);
	} else {
		age_unlink(m, &m->safe, i);
	}
	m->st.answered--;
}

static void entry_free(struct wirexid *m, uint32_t i)
{
	struct wirexid_entry *e = &m->e[i];

	key_unlink(m, i);
	wire_unlink(m, i);
	if (e->state == WIREXID_ANSWERED)
		answered_unlink(m, i);
	else
		m->st.in_flight--;
	e->state = WIREXID_FREE;
	e->next = m->free_head;
	m->free_head = i;
}

void wirexid_expire(struct wirexid *m, uint64_t now_us)
{
	while (m->safe.head != WIREXID_NONE && m->e[m->safe.head].expire_us <= now_us) {
		entry_free(m, m->safe.head);
		m->st.expired++;
	}
	while (m->kept.head != WIREXID_NONE && m->e[m->kept.head].expire_us <= now_us) {
		entry_free(m, m->kept.head);
		m->st.expired++;
	}
}

/*
 * The answered entry to recycle early for a new call from @addr, or
 * WIREXID_NONE when every entry is in flight (wirexid.h, "Retention"):
 * the oldest safe-twice one; else the caller's own oldest kept one when it
 * holds at least an equal share of them; else the oldest of an address
 * that holds the most, which a caller below its share never is.
 */
static uint32_t entry_victim(struct wirexid *m, const uint8_t addr[16])
{
	if (m->safe.head != WIREXID_NONE) {
		m->st.evicted_safe++;
		return m->safe.head;
	}
	if (m->kept.head == WIREXID_NONE)
		return WIREXID_NONE;
	uint32_t c = client_find(m, addr);
	if (c != 0 && (uint64_t)m->cl[c].kept * m->st.kept_clients >= m->st.kept) {
		m->st.evicted_own++;
		return m->cl[c].head;
	}
	m->st.evicted_other++;
	return m->cl[m->by_kept[m->most]].head;
}

/*
 * A freed entry; else one never used; else an answered one, recycled
 * early (entry_victim()); else none: all in flight.
 */
static uint32_t entry_take(struct wirexid *m, const uint8_t addr[16])
{
	uint32_t i = m->free_head;

	if (i == WIREXID_NONE && m->made < m->max)
		return m->made++; /* calloc'd: state WIREXID_FREE, no client */
	if (i == WIREXID_NONE) {
		uint32_t v = entry_victim(m, addr);
		if (v == WIREXID_NONE)
			return WIREXID_NONE;
		entry_free(m, v);
		m->st.evicted++;
		i = m->free_head;
	}
	m->free_head = m->e[i].next;
	return i;
}

/*
 * The next value of the channel's counter that no live entry holds there.
 * At most st.in_flight + st.answered values can be skipped, and in practice
 * none: a value comes round only after 2^32 allocations on the channel.
 */
static uint32_t wire_alloc(struct wirexid *m, uint16_t chan)
{
	uint32_t x;

	do
		x = m->next_xid[chan]++;
	while (wire_find(m, chan, x) != WIREXID_NONE);
	return x;
}

static enum wirexid_verdict map_call(struct wirexid *m, const struct wirexid_key *k, uint16_t chan,
				     uint64_t owner, enum wirexid_twice twice, bool own_xid,
				     uint64_t now_us, uint32_t *idx)
{
	struct wirexid_key key = *k;
	uint32_t i;

	key.zero = 0; /* keys compare as bytes */
	wirexid_expire(m, now_us);
	i = key_find(m, &key);
	if (i != WIREXID_NONE) {
		struct wirexid_entry *e = &m->e[i];

		e->owner = owner;
		*idx = i;
		/* One copy that may not run twice is enough: the same call, kept then. */
		if (twice != WIREXID_SAFE_TWICE)
			e->twice = WIREXID_RUN_ONCE;
		if (e->state == WIREXID_INFLIGHT) {
			m->st.hits_in_flight++;
			return WIREXID_IN_FLIGHT;
		}
		answered_unlink(m, i);
		m->st.in_flight++;
		e->state = WIREXID_INFLIGHT;
		m->st.hits_answered++;
		return WIREXID_RESEND;
	}
	/* A channel out of range is the caller's bug; keep the map consistent anyway. */
	chan = chan < m->channels ? chan : (uint16_t)(chan % m->channels);
	if (own_xid && (i = wire_find(m, chan, key.xid)) != WIREXID_NONE) {
		if (m->e[i].state == WIREXID_INFLIGHT) {
			m->st.own_xid_busy++;
			return WIREXID_XID_BUSY;
		}
		entry_free(m, i);
		m->st.own_xid_displaced++;
	}
	i = entry_take(m, key.addr);
	if (i == WIREXID_NONE) {
		m->st.full++;
		return WIREXID_FULL;
	}
	struct wirexid_entry *e = &m->e[i];
	e->key = key;
	e->owner = owner;
	e->expire_us = 0;
	e->twice = twice == WIREXID_SAFE_TWICE ? WIREXID_SAFE_TWICE : WIREXID_RUN_ONCE;
	e->chan = chan;
	e->own_xid = own_xid;
	e->wire_xid = own_xid ? key.xid : wire_alloc(m, e->chan);
	e->state = WIREXID_INFLIGHT;
	key_link(m, i);
	wire_link(m, i);
	m->st.in_flight++;
	m->st.new_calls++;
	*idx = i;
	return WIREXID_NEW;
}

enum wirexid_verdict wirexid_map(struct wirexid *m, const struct wirexid_key *k, uint16_t chan,
				 uint64_t owner, enum wirexid_twice twice, uint64_t now_us,
				 uint32_t *idx)
{
	return map_call(m, k, chan, owner, twice, false, now_us, idx);
}

enum wirexid_verdict wirexid_map_own_xid(struct wirexid *m, const struct wirexid_key *k,
					 uint16_t chan, uint64_t owner, uint64_t now_us,
					 uint32_t *idx)
{
	return map_call(m, k, chan, owner, WIREXID_RUN_ONCE, true, now_us, idx);
}

uint32_t wirexid_reply(struct wirexid *m, uint16_t chan, uint32_t wire_xid, uint64_t now_us)
{
	uint32_t i;

	wirexid_expire(m, now_us);
	i = chan < m->channels ? wire_find(m, chan, wire_xid) : WIREXID_NONE;
	if (i == WIREXID_NONE || m->e[i].state != WIREXID_INFLIGHT) {
		m->st.stray++;
		return WIREXID_NONE;
	}
	m->e[i].state = WIREXID_ANSWERED;
	m->e[i].expire_us = now_us + m->ttl_us;
	/*
	 * A run-once call's entry is kept for its address. A record is always
	 * there to be had (wirexid_init()); were none, the entry would be
	 * recyclable by anyone, as before the ledger, rather than lost.
	 */
	uint32_t c = 0;
	if (m->e[i].twice == WIREXID_RUN_ONCE) {
		c = client_find(m, m->e[i].key.addr);
		if (c == 0)
			c = client_make(m, m->e[i].key.addr);
	}
	if (c != 0) {
		age_append(m, &m->kept, i);
		client_add(m, c, i);
	} else {
		age_append(m, &m->safe, i);
	}
	m->st.in_flight--;
	m->st.answered++;
	return i;
}

uint32_t wirexid_lookup_reply(struct wirexid *m, uint16_t chan, uint32_t wire_xid)
{
	uint32_t i = chan < m->channels ? wire_find(m, chan, wire_xid) : WIREXID_NONE;

	if (i == WIREXID_NONE || m->e[i].state != WIREXID_INFLIGHT) {
		m->st.stray++;
		return WIREXID_NONE;
	}
	return i;
}

void wirexid_cancel(struct wirexid *m, uint32_t idx)
{
	if (idx < m->max && m->e[idx].state == WIREXID_INFLIGHT)
		entry_free(m, idx);
}

void wirexid_rewire(struct wirexid *m, uint32_t idx)
{
	/* An own-XID call goes under its own XID or not at all. */
	if (idx >= m->max || m->e[idx].state != WIREXID_INFLIGHT || m->e[idx].own_xid)
		return;
	wire_unlink(m, idx);
	m->e[idx].wire_xid = wire_alloc(m, m->e[idx].chan);
	wire_link(m, idx);
}
