/* SPDX-License-Identifier: MIT */
#include "gateway/side/nlm/nlm_state.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/random.h"
#include "common/statefile.h"

/*
 * Owners, clients and lock records live in arrays made at init; free slots
 * are kept on stacks. Links are indices plus one (0: none).
 */
struct nlm_owner {
	uint32_t client; /* index + 1; 0: free */
	uint16_t gen;	 /* 1..0x7fff, bumped when the slot is reused */
	int32_t svid;	 /* the client's */
	uint32_t oh_len;
	uint8_t *oh; /* max_oh bytes of the state's store */
	uint32_t hnext;
	uint32_t cnext; /* its client's owners */
	uint32_t locks;
	uint32_t calls; /* relayed calls in flight (nlm_state_call_begin()) */
	uint64_t used;	/* the state's tick when last asked for */
};

struct nlm_client {
	bool used;
	struct gw_host host;
	uint32_t owners, locks;
	uint32_t calls; /* its owners' calls in flight */
	uint32_t lock_head;
	uint64_t last;	       /* the state's tick when one of its owners was last asked for */
	struct gw_host via;    /* where its last call reached the gateway (family 0: unknown) */
	bool via_connected;    /* @via learned on a TCP connection: no UDP call replaces it */
	uint32_t hnext, pnext; /* the chains of its host's and its network's hash buckets */
	uint32_t owner_head;   /* its owners, through nlm_owner.cnext */
};

struct nlm_lockrec {
	uint32_t owner; /* index + 1; 0: free */
	uint32_t next;	/* the client's list, or the free list */
	uint32_t vers;
	uint32_t fh_len;
	uint8_t fh[NLM4_FHSIZE];
	uint64_t offset, len;
	bool share; /* a SHARE reservation (no range), not a lock */
};

/*
 * A client host's last SM_NOTIFY state, kept apart from the client's
 * record: that is forgotten at the notification itself.
 */
struct nlm_notified {
	bool used;
	struct gw_host host;
	int32_t state;
	uint64_t at_us; /* when that state came first */
};

struct nlm_state {
	struct nlm_state_limits lim;
	struct nlm_state_stats stats;
	uint64_t instance;
	uint64_t tick;
	struct nlm_owner *owners;
	uint8_t *oh_store;
	uint32_t *free_owners, nfree_owners;
	uint32_t *buckets, nbuckets;
	struct nlm_client *clients;
	/*
	 * Client hosts by address and by network (gw_host_same_prefix()), so
	 * that a new host, forged or not, costs no walk of the table; a
	 * network's chain is at most max_clients_per_prefix long but for the
	 * hosts of other networks in its bucket. Seeded: a forger cannot
	 * choose addresses that fall in one bucket.
	 */
	uint32_t *chash, *phash, ncbuckets, cseed;
	uint32_t *free_clients, nfree_clients;
	struct nlm_lockrec *locks;
	uint32_t free_lock, nlocks;
	struct nlm_unlock *unlocks;    /* max_locks_per_client, for a reboot */
	struct nlm_notified *notified; /* max_clients: the last SM_NOTIFY state per host */
	uint32_t next_notified;	       /* the entry reused when all are taken */
	bool clients_dirty;	       /* the set of clients holding locks changed since taken */
};

static void set_default(uint32_t *v, uint32_t def)
{
	if (*v == 0)
		*v = def;
}

struct nlm_state *nlm_state_new(const struct nlm_state_limits *lim, uint64_t instance)
{
	struct nlm_state *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->lim = *lim;
	set_default(&st->lim.max_clients, 1024);
	set_default(&st->lim.max_owners, 4096);
	set_default(&st->lim.max_locks, 16384);
	set_default(&st->lim.max_locks_per_client, 1024);
	set_default(&st->lim.max_oh, 256);
	set_default(&st->lim.max_owners_per_client,
		    st->lim.max_owners < 1024 ? st->lim.max_owners : 1024);
	uint32_t share = st->lim.max_clients / 4;
	if (share < NLM_PREFIX_SHARE_FLOOR)
		share = NLM_PREFIX_SHARE_FLOOR;
	set_default(&st->lim.max_clients_per_prefix,
		    share < st->lim.max_clients ? share : st->lim.max_clients);
	if (st->lim.max_owners > NLM_STATE_MAX_OWNERS || st->lim.max_oh > NLM_MAXNETOBJ ||
	    st->lim.max_locks_per_client > st->lim.max_locks ||
	    st->lim.max_owners_per_client > st->lim.max_owners ||
	    st->lim.max_clients_per_prefix > st->lim.max_clients) {
		free(st);
		errno = EINVAL;
		return NULL;
	}
	st->instance = instance;
	st->nbuckets = 1;
	while (st->nbuckets < 2 * st->lim.max_owners)
		st->nbuckets <<= 1;
	st->owners = calloc(st->lim.max_owners, sizeof(*st->owners));
	st->oh_store = calloc(st->lim.max_owners, st->lim.max_oh);
	st->free_owners = calloc(st->lim.max_owners, sizeof(*st->free_owners));
	st->buckets = calloc(st->nbuckets, sizeof(*st->buckets));
	st->clients = calloc(st->lim.max_clients, sizeof(*st->clients));
	st->ncbuckets = 1;
	while (st->ncbuckets < 2 * st->lim.max_clients)
		st->ncbuckets <<= 1;
	st->chash = calloc(st->ncbuckets, sizeof(*st->chash));
	st->phash = calloc(st->ncbuckets, sizeof(*st->phash));
	st->free_clients = calloc(st->lim.max_clients, sizeof(*st->free_clients));
	st->cseed = gw_random32();
	st->locks = calloc(st->lim.max_locks, sizeof(*st->locks));
	st->unlocks = calloc(st->lim.max_locks_per_client, sizeof(*st->unlocks));
	st->notified = calloc(st->lim.max_clients, sizeof(*st->notified));
	if (!st->owners || !st->oh_store || !st->free_owners || !st->buckets || !st->clients ||
	    !st->chash || !st->phash || !st->free_clients || !st->locks || !st->unlocks ||
	    !st->notified) {
		nlm_state_free(st);
		errno = ENOMEM;
		return NULL;
	}
	for (uint32_t i = 0; i < st->lim.max_owners; i++) {
		st->owners[i].oh = st->oh_store + (size_t)i * st->lim.max_oh;
		st->owners[i].gen = 1;
		st->free_owners[i] = st->lim.max_owners - 1 - i; /* slot 0 first */
	}
	st->nfree_owners = st->lim.max_owners;
	for (uint32_t i = 0; i < st->lim.max_clients; i++)
		st->free_clients[i] = st->lim.max_clients - 1 - i; /* slot 0 first */
	st->nfree_clients = st->lim.max_clients;
	for (uint32_t i = 0; i < st->lim.max_locks; i++)
		st->locks[i].next = i + 2 <= st->lim.max_locks ? i + 2 : 0;
	st->free_lock = 1;
	return st;
}

void nlm_state_free(struct nlm_state *st)
{
	if (!st)
		return;
	free(st->owners);
	free(st->oh_store);
	free(st->free_owners);
	free(st->buckets);
	free(st->clients);
	free(st->chash);
	free(st->phash);
	free(st->free_clients);
	free(st->locks);
	free(st->unlocks);
	free(st->notified);
	free(st);
}

const struct nlm_state_stats *nlm_state_stats(const struct nlm_state *st)
{
	return &st->stats;
}

const struct nlm_state_limits *nlm_state_limits(const struct nlm_state *st)
{
	return &st->lim;
}

/* ---- owners ------------------------------------------------------------------ */

/* FNV-1a over the client's key: the table is small and the key short. */
static uint32_t owner_hash(const struct nlm_state *st, const struct gw_host *h, int32_t svid,
			   struct nlm_bytes oh)
{
	uint32_t x = 2166136261u;
	uint32_t s = (uint32_t)svid;

	for (size_t i = 0; i < sizeof(h->addr); i++)
		x = (x ^ h->addr[i]) * 16777619u;
	for (int i = 0; i < 4; i++)
		x = (x ^ ((s >> (8 * i)) & 0xff)) * 16777619u;
	for (uint32_t i = 0; i < oh.len; i++)
		x = (x ^ oh.p[i]) * 16777619u;
	return x & (st->nbuckets - 1);
}

/* Upstream svid: generation and slot, positive, never 0. */
static void owner_id(const struct nlm_state *st, uint32_t slot, struct nlm_owner_id *id)
{
	uint16_t gen = st->owners[slot].gen;

	id->svid = (int32_t)(((uint32_t)gen << 16) | slot);
	for (int i = 0; i < 8; i++)
		id->oh[i] = (uint8_t)(st->instance >> (56 - 8 * i));
	for (int i = 0; i < 4; i++) {
		id->oh[8 + i] = (uint8_t)(slot >> (24 - 8 * i));
		id->oh[12 + i] = (uint8_t)((uint32_t)gen >> (24 - 8 * i));
	}
}

/* The live slot an upstream (svid, oh) names, or -1. */
static int32_t owner_slot(const struct nlm_state *st, int32_t svid, struct nlm_bytes oh)
{
	uint32_t slot = (uint32_t)svid & 0xffff;
	struct nlm_owner_id id;

	if (svid <= 0 || slot >= st->lim.max_owners || st->owners[slot].client == 0)
		return -1;
	owner_id(st, slot, &id);
	if (id.svid != svid || oh.len != NLM_TOKEN_LEN || memcmp(id.oh, oh.p, NLM_TOKEN_LEN) != 0)
		return -1;
	return (int32_t)slot;
}

bool nlm_state_owner_of_token(struct nlm_bytes oh, struct nlm_owner_id *out)
{
	uint32_t slot = 0, gen = 0;

	if (oh.len != NLM_TOKEN_LEN)
		return false;
	/* owner_id()'s layout; owner_slot() checks the whole of it when it is used. */
	for (int i = 0; i < 4; i++) {
		slot = slot << 8 | oh.p[8 + i];
		gen = gen << 8 | oh.p[12 + i];
	}
	out->svid = (int32_t)((gen & 0xffff) << 16 | (slot & 0xffff));
	memcpy(out->oh, oh.p, NLM_TOKEN_LEN);
	return true;
}

/* Does @oh look like a token of this gateway (a stale one, if not live)? */
static bool is_our_token(const struct nlm_state *st, struct nlm_bytes oh)
{
	uint8_t inst[8];

	for (int i = 0; i < 8; i++)
		inst[i] = (uint8_t)(st->instance >> (56 - 8 * i));
	return oh.len == NLM_TOKEN_LEN && memcmp(oh.p, inst, 8) == 0;
}

/* FNV-1a over the first @n bytes of @h's address, from the state's seed: a bucket. */
static uint32_t client_bucket(const struct nlm_state *st, const struct gw_host *h, size_t n)
{
	uint32_t x = (2166136261u ^ st->cseed) * 16777619u;

	x = (x ^ h->family) * 16777619u;
	for (size_t i = 0; i < n; i++)
		x = (x ^ h->addr[i]) * 16777619u;
	return x & (st->ncbuckets - 1);
}

static uint32_t host_bucket(const struct nlm_state *st, const struct gw_host *h)
{
	return client_bucket(st, h, sizeof(h->addr));
}

static uint32_t prefix_bucket(const struct nlm_state *st, const struct gw_host *h)
{
	return client_bucket(st, h, gw_host_prefix_len(h->family));
}

static int32_t find_client(const struct nlm_state *st, const struct gw_host *h)
{
	for (uint32_t i = st->chash[host_bucket(st, h)]; i; i = st->clients[i - 1].hnext)
		if (gw_host_equal(&st->clients[i - 1].host, h))
			return (int32_t)i - 1;
	return -1;
}

/* Unlink @slot + 1 from the chain at @head whose links are @field of each client. */
static void unlink_client(struct nlm_state *st, uint32_t *head, uint32_t slot, bool by_prefix)
{
	uint32_t *link = head;

	while (*link && *link != slot + 1)
		link = by_prefix ? &st->clients[*link - 1].pnext : &st->clients[*link - 1].hnext;
	if (*link)
		*link = by_prefix ? st->clients[slot].pnext : st->clients[slot].hnext;
}

/* Client slot @ci, free, becomes host @h's: out of the free stack, into the hashes. */
static void take_client(struct nlm_state *st, uint32_t ci, const struct gw_host *h)
{
	struct nlm_client *c = &st->clients[ci];

	/* Nearly always the top; a client taken again after reclaim_owner() may lie deeper. */
	for (uint32_t k = st->nfree_clients; k-- > 0;) {
		if (st->free_clients[k] == ci) {
			st->free_clients[k] = st->free_clients[--st->nfree_clients];
			break;
		}
	}
	memset(c, 0, sizeof(*c));
	c->used = true;
	c->host = *h;
	c->last = ++st->tick;
	uint32_t *hb = &st->chash[host_bucket(st, h)], *pb = &st->phash[prefix_bucket(st, h)];
	c->hnext = *hb;
	*hb = ci + 1;
	c->pnext = *pb;
	*pb = ci + 1;
}

/* Client slot @ci is free again (it has no owner left); nothing if it is already. */
static void drop_client(struct nlm_state *st, uint32_t ci)
{
	struct nlm_client *c = &st->clients[ci];

	if (!c->used)
		return;
	unlink_client(st, &st->chash[host_bucket(st, &c->host)], ci, false);
	unlink_client(st, &st->phash[prefix_bucket(st, &c->host)], ci, true);
	c->used = false;
	st->free_clients[st->nfree_clients++] = ci;
}

static void free_owner(struct nlm_state *st, uint32_t slot);

/* Forget every owner of client @ci (its records gone already), and the client. */
static void forget_client(struct nlm_state *st, uint32_t ci)
{
	struct nlm_client *c = &st->clients[ci];

	while (c->used && c->owner_head)
		free_owner(st, c->owner_head - 1);
	drop_client(st, ci);
}

/*
 * The least recently used client host holding nothing (no lock, no share,
 * no call in flight) is forgotten with its owners: of @prefix's network
 * (its chain), or of any (@prefix NULL: a walk of the table, when it is
 * full). Its slot, or -1 for none such.
 */
static int32_t reclaim_client(struct nlm_state *st, const struct gw_host *prefix)
{
	int32_t best = -1;

	if (prefix) {
		for (uint32_t i = st->phash[prefix_bucket(st, prefix)]; i;
		     i = st->clients[i - 1].pnext) {
			const struct nlm_client *c = &st->clients[i - 1];
			if (c->locks == 0 && c->calls == 0 &&
			    gw_host_same_prefix(&c->host, prefix) &&
			    (best < 0 || c->last < st->clients[best].last))
				best = (int32_t)i - 1;
		}
	} else {
		for (uint32_t i = 0; i < st->lim.max_clients; i++) {
			const struct nlm_client *c = &st->clients[i];
			if (c->used && c->locks == 0 && c->calls == 0 &&
			    (best < 0 || c->last < st->clients[best].last))
				best = (int32_t)i;
		}
	}
	if (best < 0)
		return -1;
	forget_client(st, (uint32_t)best);
	st->stats.clients_reclaimed++;
	return best;
}

/*
 * A new client host: a free slot, else the least recently used idle
 * client's. A prefix at its share takes the slot of an idle client of its
 * own, or none: forged sources of one network cannot take the table.
 */
static int32_t add_client(struct nlm_state *st, const struct gw_host *h)
{
	int32_t slot = -1;
	uint32_t in_prefix = 0;

	for (uint32_t i = st->phash[prefix_bucket(st, h)]; i; i = st->clients[i - 1].pnext)
		in_prefix += gw_host_same_prefix(&st->clients[i - 1].host, h);
	if (st->lim.max_clients_per_prefix < st->lim.max_clients &&
	    in_prefix >= st->lim.max_clients_per_prefix) {
		slot = reclaim_client(st, h);
		if (slot < 0) {
			st->stats.client_prefix_full++;
			return -1;
		}
	}
	if (slot < 0 && st->nfree_clients > 0)
		slot = (int32_t)st->free_clients[st->nfree_clients - 1];
	if (slot < 0 && (slot = reclaim_client(st, NULL)) < 0) {
		st->stats.clients_full++;
		return -1;
	}
	take_client(st, (uint32_t)slot, h);
	return slot;
}

static void unhash_owner(struct nlm_state *st, uint32_t slot)
{
	struct nlm_owner *o = &st->owners[slot];
	struct nlm_client *c = &st->clients[o->client - 1];
	uint32_t b = owner_hash(st, &c->host, o->svid, (struct nlm_bytes){ o->oh, o->oh_len });
	uint32_t *link = &st->buckets[b];

	while (*link && *link != slot + 1)
		link = &st->owners[*link - 1].hnext;
	if (*link)
		*link = o->hnext;
}

/* Forget an owner (no records left): its slot's next owner has a new generation. */
static void free_owner(struct nlm_state *st, uint32_t slot)
{
	struct nlm_owner *o = &st->owners[slot];
	struct nlm_client *c = &st->clients[o->client - 1];

	unhash_owner(st, slot);
	uint32_t *link = &c->owner_head;
	while (*link && *link != slot + 1)
		link = &st->owners[*link - 1].cnext;
	if (*link)
		*link = o->cnext;
	/* A client's reboot forgets its owners with their calls: a late answer is stale. */
	c->calls -= o->calls;
	if (--c->owners == 0)
		drop_client(st, o->client - 1);
	o->client = 0;
	o->locks = 0;
	o->calls = 0;
	o->gen = o->gen >= 0x7fff ? 1 : (uint16_t)(o->gen + 1);
	st->free_owners[st->nfree_owners++] = slot;
}

/*
 * When every slot is taken (or every slot a client may have), the least
 * recently used owner without locks or calls in flight goes: of any client
 * (@client 0), or of client index @client - 1.
 */
static bool reclaim_owner(struct nlm_state *st, uint32_t client)
{
	int64_t best = -1;

	for (uint32_t i = 0; i < st->lim.max_owners; i++) {
		const struct nlm_owner *o = &st->owners[i];
		if (o->client && (client == 0 || o->client == client) && o->locks == 0 &&
		    o->calls == 0 && (best < 0 || o->used < st->owners[best].used))
			best = i;
	}
	if (best < 0)
		return false;
	free_owner(st, (uint32_t)best);
	return true;
}

/* The owner (slot + 1) of @host's (@svid, @oh) in bucket @b; 0 for none. */
static uint32_t find_owner(const struct nlm_state *st, uint32_t b, const struct gw_host *host,
			   int32_t svid, struct nlm_bytes oh)
{
	for (uint32_t i = st->buckets[b]; i; i = st->owners[i - 1].hnext) {
		const struct nlm_owner *o = &st->owners[i - 1];
		if (o->svid == svid && o->oh_len == oh.len &&
		    gw_host_equal(&st->clients[o->client - 1].host, host) &&
		    (oh.len == 0 || memcmp(o->oh, oh.p, oh.len) == 0))
			return i;
	}
	return 0;
}

/* The owner in @slot is asked for: the most recently used, it and its client. */
static void touch_owner(struct nlm_state *st, uint32_t slot)
{
	struct nlm_owner *o = &st->owners[slot];

	o->used = ++st->tick;
	st->clients[o->client - 1].last = o->used;
}

int nlm_state_find_owner(struct nlm_state *st, const struct gw_host *host, int32_t svid,
			 struct nlm_bytes oh, struct nlm_owner_id *out)
{
	uint32_t i;

	if (oh.len > st->lim.max_oh)
		return -ENOENT; /* never made: nlm_state_owner() refuses such a handle */
	i = find_owner(st, owner_hash(st, host, svid, oh), host, svid, oh);
	if (!i)
		return -ENOENT;
	touch_owner(st, i - 1);
	owner_id(st, i - 1, out);
	return 0;
}

int nlm_state_owner(struct nlm_state *st, const struct gw_host *host, int32_t svid,
		    struct nlm_bytes oh, struct nlm_owner_id *out)
{
	uint32_t b, i;
	int32_t ci;

	if (oh.len > st->lim.max_oh) {
		st->stats.oh_too_long++;
		return -E2BIG;
	}
	b = owner_hash(st, host, svid, oh);
	if ((i = find_owner(st, b, host, svid, oh)) != 0) {
		touch_owner(st, i - 1);
		owner_id(st, i - 1, out);
		return 0;
	}
	ci = find_client(st, host);
	/* One client may not take every owner: its own idle one goes first. */
	if (ci >= 0 && st->clients[ci].owners >= st->lim.max_owners_per_client &&
	    !reclaim_owner(st, (uint32_t)ci + 1)) {
		st->stats.client_owners_full++;
		return -ENOSPC;
	}
	if (ci < 0 && (ci = add_client(st, host)) < 0)
		return -ENOSPC;
	if (st->nfree_owners == 0 && !reclaim_owner(st, 0)) {
		st->stats.owners_full++;
		if (st->clients[ci].owners == 0)
			drop_client(st, (uint32_t)ci);
		return -ENOSPC;
	}
	/* reclaim_owner() may have freed this very client: take it again. */
	if (!st->clients[ci].used)
		take_client(st, (uint32_t)ci, host);
	uint32_t slot = st->free_owners[--st->nfree_owners];
	struct nlm_owner *o = &st->owners[slot];
	o->client = (uint32_t)ci + 1;
	o->svid = svid;
	o->oh_len = oh.len;
	if (oh.len)
		memcpy(o->oh, oh.p, oh.len);
	o->locks = 0;
	o->calls = 0;
	o->hnext = st->buckets[b];
	st->buckets[b] = slot + 1;
	o->cnext = st->clients[ci].owner_head;
	st->clients[ci].owner_head = slot + 1;
	st->clients[ci].owners++;
	touch_owner(st, slot);
	owner_id(st, slot, out);
	return 0;
}

/* The owner in @slot is forgotten if it holds nothing and has no call in flight. */
static void collect_owner(struct nlm_state *st, uint32_t slot)
{
	const struct nlm_owner *o = &st->owners[slot];

	if (o->client && o->locks == 0 && o->calls == 0)
		free_owner(st, slot);
}

void nlm_state_client_via(struct nlm_state *st, const struct nlm_owner_id *owner,
			  const struct gw_host *via, bool connected)
{
	int32_t slot = owner_slot(st, owner->svid, (struct nlm_bytes){ owner->oh, NLM_TOKEN_LEN });

	if (slot < 0 || !via->family)
		return;
	struct nlm_client *c = &st->clients[st->owners[slot].client - 1];
	/* A datagram's source can be forged; a connection's cannot. */
	if (c->via_connected && !connected)
		return;
	if (c->locks && !gw_host_equal(&c->via, via))
		st->clients_dirty = true; /* the saved list names it */
	c->via = *via;
	c->via_connected |= connected;
}

bool nlm_state_call_begin(struct nlm_state *st, const struct nlm_owner_id *owner)
{
	int32_t slot = owner_slot(st, owner->svid, (struct nlm_bytes){ owner->oh, NLM_TOKEN_LEN });

	if (slot < 0)
		return false;
	st->owners[slot].calls++;
	st->clients[st->owners[slot].client - 1].calls++;
	return true;
}

void nlm_state_call_end(struct nlm_state *st, const struct nlm_owner_id *owner, bool settled)
{
	int32_t slot = owner_slot(st, owner->svid, (struct nlm_bytes){ owner->oh, NLM_TOKEN_LEN });

	if (slot < 0 || st->owners[slot].calls == 0)
		return;
	st->owners[slot].calls--;
	st->clients[st->owners[slot].client - 1].calls--;
	if (settled)
		collect_owner(st, (uint32_t)slot);
}

bool nlm_state_lookup_upstream(struct nlm_state *st, int32_t svid, struct nlm_bytes oh,
			       struct nlm_client_owner *out)
{
	int32_t slot = owner_slot(st, svid, oh);

	if (slot < 0) {
		if (is_our_token(st, oh))
			st->stats.stale_owner++;
		return false;
	}
	const struct nlm_owner *o = &st->owners[slot];
	out->host = st->clients[o->client - 1].host;
	out->via = st->clients[o->client - 1].via;
	out->svid = o->svid;
	out->oh = (struct nlm_bytes){ o->oh, o->oh_len };
	return true;
}

void nlm_state_holder_view(struct nlm_state *st, const struct gw_host *host, struct nlm_holder *h)
{
	struct nlm_client_owner co;

	if (!nlm_state_lookup_upstream(st, h->svid, h->oh, &co))
		return;
	if (!gw_host_equal(&co.host, host))
		return; /* another client's: the token tells nothing of it */
	h->svid = co.svid;
	h->oh = co.oh;
}

/* ---- lock records ------------------------------------------------------------- */

static bool fh_eq(const struct nlm_lockrec *r, struct nlm_bytes fh)
{
	return r->fh_len == fh.len && memcmp(r->fh, fh.p, fh.len) == 0;
}

/* A lock or (@share) a share of @owner on @fh; a share has no range (0, 0). */
static int record(struct nlm_state *st, const struct nlm_owner_id *owner, uint32_t vers,
		  struct nlm_bytes fh, uint64_t offset, uint64_t len, bool share)
{
	struct nlm_bytes tok = { owner->oh, NLM_TOKEN_LEN };
	int32_t slot = owner_slot(st, owner->svid, tok);

	if (slot < 0)
		return -ENOENT;
	if (fh.len > NLM4_FHSIZE)
		return -EINVAL;
	struct nlm_owner *o = &st->owners[slot];
	struct nlm_client *c = &st->clients[o->client - 1];
	for (uint32_t i = c->lock_head; i; i = st->locks[i - 1].next) {
		const struct nlm_lockrec *r = &st->locks[i - 1];
		if (r->owner == (uint32_t)slot + 1 && fh_eq(r, fh) && r->offset == offset &&
		    r->len == len && r->share == share)
			return 0; /* a retransmitted LOCK or SHARE, or GRANTED after BLOCKED */
	}
	if (c->locks >= st->lim.max_locks_per_client) {
		st->stats.client_locks_full++;
		return -ENOSPC;
	}
	if (!st->free_lock) {
		st->stats.locks_full++;
		return -ENOSPC;
	}
	uint32_t i = st->free_lock;
	struct nlm_lockrec *r = &st->locks[i - 1];
	st->free_lock = r->next;
	r->owner = (uint32_t)slot + 1;
	r->vers = vers;
	r->fh_len = fh.len;
	memcpy(r->fh, fh.p, fh.len);
	r->offset = offset;
	r->len = len;
	r->share = share;
	r->next = c->lock_head;
	c->lock_head = i;
	/* A client's first lock: the saved client list no longer matches. */
	if (c->locks++ == 0)
		st->clients_dirty = true;
	o->locks++;
	st->nlocks++;
	return 0;
}

int nlm_state_record_lock(struct nlm_state *st, const struct nlm_owner_id *owner, uint32_t vers,
			  struct nlm_bytes fh, uint64_t offset, uint64_t len)
{
	return record(st, owner, vers, fh, offset, len, false);
}

int nlm_state_record_share(struct nlm_state *st, const struct nlm_owner_id *owner, uint32_t vers,
			   struct nlm_bytes fh)
{
	return record(st, owner, vers, fh, 0, 0, true);
}

bool nlm_state_owner_holds(const struct nlm_state *st, const struct nlm_owner_id *owner,
			   struct nlm_bytes fh)
{
	struct nlm_bytes tok = { owner->oh, NLM_TOKEN_LEN };
	int32_t slot = owner_slot(st, owner->svid, tok);

	if (slot < 0)
		return false;
	const struct nlm_client *c = &st->clients[st->owners[slot].client - 1];
	for (uint32_t i = c->lock_head; i; i = st->locks[i - 1].next) {
		const struct nlm_lockrec *r = &st->locks[i - 1];
		if (r->owner == (uint32_t)slot + 1 && fh_eq(r, fh) && !r->share)
			return true;
	}
	return false;
}

/* Does [uoff, uoff+ulen) cover the record entirely? A length 0 runs to the end. */
static bool covers(uint64_t uoff, uint64_t ulen, const struct nlm_lockrec *r)
{
	if (r->offset < uoff)
		return false;
	if (ulen == 0 || uoff + ulen < uoff)
		return true;
	return r->len != 0 && r->offset + r->len >= r->offset && r->offset + r->len <= uoff + ulen;
}

static void release_record(struct nlm_state *st, struct nlm_client *c, uint32_t *link)
{
	uint32_t i = *link;
	struct nlm_lockrec *r = &st->locks[i - 1];

	*link = r->next;
	st->owners[r->owner - 1].locks--;
	r->owner = 0;
	r->next = st->free_lock;
	st->free_lock = i;
	if (--c->locks == 0)
		st->clients_dirty = true;
	st->nlocks--;
}

/*
 * Forget @owner's records on @fh: its shares (@share), else its locks that
 * [@offset, @offset+@len) covers. A share has no range: an UNSHARE ends it.
 */
static void forget_records(struct nlm_state *st, const struct nlm_owner_id *owner,
			   struct nlm_bytes fh, bool share, uint64_t offset, uint64_t len)
{
	struct nlm_bytes tok = { owner->oh, NLM_TOKEN_LEN };
	int32_t slot = owner_slot(st, owner->svid, tok);

	if (slot < 0)
		return;
	struct nlm_client *c = &st->clients[st->owners[slot].client - 1];
	uint32_t *link = &c->lock_head;
	while (*link) {
		const struct nlm_lockrec *r = &st->locks[*link - 1];
		if (r->owner == (uint32_t)slot + 1 && fh_eq(r, fh) && r->share == share &&
		    (share || covers(offset, len, r)))
			release_record(st, c, link);
		else
			link = &st->locks[*link - 1].next;
	}
	/* Its last record gone and no call of its in flight (a refused GRANTED): forgotten. */
	collect_owner(st, (uint32_t)slot);
}

void nlm_state_unlocked(struct nlm_state *st, const struct nlm_owner_id *owner, struct nlm_bytes fh,
			uint64_t offset, uint64_t len)
{
	forget_records(st, owner, fh, false, offset, len);
}

void nlm_state_unshared(struct nlm_state *st, const struct nlm_owner_id *owner, struct nlm_bytes fh)
{
	forget_records(st, owner, fh, true, 0, 0);
}

uint32_t nlm_state_client_locks(const struct nlm_state *st, const struct gw_host *host)
{
	int32_t ci = find_client(st, host);

	return ci < 0 ? 0 : st->clients[ci].locks;
}

uint32_t nlm_state_locks(const struct nlm_state *st)
{
	return st->nlocks;
}

uint32_t nlm_state_clients(const struct nlm_state *st)
{
	return st->lim.max_clients - st->nfree_clients;
}

uint32_t nlm_state_owners(const struct nlm_state *st)
{
	return st->lim.max_owners - st->nfree_owners;
}

static bool already_listed(const struct nlm_unlock *u, size_t n, const struct nlm_owner_id *id,
			   const struct nlm_lockrec *r)
{
	for (size_t k = 0; k < n; k++)
		if (u[k].owner.svid == id->svid && u[k].unshare == r->share &&
		    u[k].fh_len == r->fh_len && memcmp(u[k].fh, r->fh, r->fh_len) == 0)
			return true;
	return false;
}

size_t nlm_state_client_rebooted(struct nlm_state *st, const struct gw_host *host,
				 const struct nlm_unlock **out)
{
	int32_t ci = find_client(st, host);
	size_t n = 0;

	*out = st->unlocks;
	if (ci < 0)
		return 0;
	struct nlm_client *c = &st->clients[ci];
	while (c->lock_head) {
		const struct nlm_lockrec *r = &st->locks[c->lock_head - 1];
		struct nlm_owner_id id;
		owner_id(st, r->owner - 1, &id);
		/* n stays under max_locks_per_client: one entry per record at most. */
		if (!already_listed(st->unlocks, n, &id, r)) {
			struct nlm_unlock *u = &st->unlocks[n++];
			u->vers = r->vers;
			u->unshare = r->share;
			u->owner = id;
			u->fh_len = r->fh_len;
			memcpy(u->fh, r->fh, r->fh_len);
		}
		release_record(st, c, &c->lock_head);
	}
	forget_client(st, (uint32_t)ci);
	return n;
}

size_t nlm_state_server_rebooted(struct nlm_state *st, struct nlm_peer *hosts, size_t max)
{
	size_t n = 0;

	for (uint32_t i = 0; i < st->lim.max_clients; i++) {
		struct nlm_client *c = &st->clients[i];

		if (!c->used || !c->lock_head)
			continue;
		if (n < max)
			hosts[n] = (struct nlm_peer){ .host = c->host, .via = c->via };
		n++;
		while (c->lock_head)
			release_record(st, c, &c->lock_head);
	}
	return n;
}

bool nlm_state_client_notified(struct nlm_state *st, const struct gw_host *host, int32_t state,
			       uint64_t now_us)
{
	struct nlm_notified *free_slot = NULL;

	/* A walk of max_clients entries: once per SM_NOTIFY, a reboot's worth. */
	for (uint32_t i = 0; i < st->lim.max_clients; i++) {
		struct nlm_notified *e = &st->notified[i];

		if (!e->used) {
			if (!free_slot)
				free_slot = e;
			continue;
		}
		if (!gw_host_equal(&e->host, host))
			continue;
		if (e->state == state && now_us - e->at_us < NLM_NOTIFY_REPEAT_US) {
			st->stats.notify_repeated++;
			return false;
		}
		e->state = state;
		e->at_us = now_us;
		return true;
	}
	/*
	 * All taken (max_clients, at least 1, entries): the oldest-made one goes;
	 * that host's next repeat then acts again.
	 */
	if (!free_slot && st->lim.max_clients) {
		free_slot = &st->notified[st->next_notified];
		st->next_notified = (st->next_notified + 1) % st->lim.max_clients;
	}
	if (free_slot)
		*free_slot = (struct nlm_notified){
			.used = true, .host = *host, .state = state, .at_us = now_us
		};
	return true;
}

/* ---- the client list across restarts ------------------------------------------ */

/* Version 2 adds the address called; version 1's lines are read as before. */
static const char nlm_clients_magic[] = "rpcrdma-gw nlm clients 2";
static const char nlm_clients_magic_v1[] = "rpcrdma-gw nlm clients 1";

int nlm_state_save_clients(const struct nlm_state *st, const char *path, char *err, size_t errlen)
{
	char tmp[4096], addr[INET6_ADDRSTRLEN], via[INET6_ADDRSTRLEN];
	FILE *f;
	int rc = 0;
	int fd = gw_statefile_create(path, 0600, tmp, sizeof(tmp));

	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		rc = fd < 0 ? fd : -errno;
		if (fd >= 0) {
			close(fd);
			unlink(tmp);
		}
		snprintf(err, errlen, "%s: a new version beside it: %s", path, strerror(-rc));
		return rc;
	}
	fprintf(f, "%s\n", nlm_clients_magic);
	for (uint32_t i = 0; i < st->lim.max_clients; i++) {
		const struct nlm_client *c = &st->clients[i];
		if (!c->used || !c->locks ||
		    !inet_ntop(c->host.family, c->host.addr, addr, sizeof(addr)))
			continue;
		if (c->via.family && inet_ntop(c->via.family, c->via.addr, via, sizeof(via)))
			fprintf(f, "%s %s\n", addr, via);
		else
			fprintf(f, "%s\n", addr);
	}
	/* The data reaches the disk before the rename makes it the list. */
	if (fflush(f) != 0) {
		rc = -errno;
		unlink(tmp);
	} else {
		rc = gw_statefile_commit(fileno(f), tmp, path);
	}
	if (fclose(f) != 0 && rc == 0)
		rc = -errno;
	if (rc)
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
	return rc;
}

static bool parse_host(const char *s, struct gw_host *h)
{
	memset(h, 0, sizeof(*h));
	if (inet_pton(AF_INET, s, h->addr) == 1) {
		h->family = AF_INET;
		return true;
	}
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6 };
	/* As a socket gives it: ::ffff:a.b.c.d is the IPv4 host. */
	return inet_pton(AF_INET6, s, &s6.sin6_addr) == 1 &&
	       gw_host_from_sockaddr(h, (const struct sockaddr *)&s6, sizeof(s6));
}

/* "ADDRESS[ VIA]" (@v2), or "ADDRESS"; false for anything else. */
static bool parse_peer(char *line, bool v2, struct nlm_peer *p)
{
	char *sp = v2 ? strchr(line, ' ') : NULL;

	memset(&p->via, 0, sizeof(p->via));
	if (sp) {
		*sp = '\0';
		if (!parse_host(sp + 1, &p->via))
			return false;
	}
	return parse_host(line, &p->host);
}

int nlm_state_load_clients(const char *path, struct nlm_peer *hosts, size_t max, size_t *n,
			   char *err, size_t errlen)
{
	char line[128], shown[72];
	unsigned lineno = 0;
	bool v2 = false;
	int rc = 0;
	int fd = gw_statefile_open_read(path); /* never through a planted symlink */
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;

	*n = 0;
	if (!f) {
		rc = fd < 0 ? fd : -errno;
		if (fd >= 0)
			close(fd);
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	while (fgets(line, sizeof(line), f)) {
		size_t len = strlen(line);
		lineno++;
		if (len == 0 || line[len - 1] != '\n') {
			snprintf(err, errlen, "%s:%u: line too long or unterminated", path, lineno);
			rc = -EBADMSG;
			break;
		}
		line[len - 1] = '\0';
		if (lineno == 1) {
			v2 = strcmp(line, nlm_clients_magic) == 0;
			if (!v2 && strcmp(line, nlm_clients_magic_v1) != 0) {
				snprintf(err, errlen, "%s:1: not a client list (want \"%s\")", path,
					 nlm_clients_magic);
				rc = -EBADMSG;
				break;
			}
			continue;
		}
		if (*n >= max) {
			snprintf(err, errlen, "%s:%u: more than %zu clients", path, lineno, max);
			rc = -EBADMSG;
			break;
		}
		snprintf(shown, sizeof(shown), "%.64s", line);
		if (!parse_peer(line, v2, &hosts[*n])) {
			snprintf(err, errlen, "%s:%u: not %s: \"%s\"", path, lineno,
				 v2 ? "an address and the address called" : "an address", shown);
			rc = -EBADMSG;
			break;
		}
		(*n)++;
	}
	if (rc == 0 && lineno == 0) {
		snprintf(err, errlen, "%s: empty, not a client list", path);
		rc = -EBADMSG;
	}
	fclose(f);
	if (rc)
		*n = 0;
	return rc;
}

bool nlm_state_take_clients_dirty(struct nlm_state *st)
{
	bool d = st->clients_dirty;

	st->clients_dirty = false;
	return d;
}
