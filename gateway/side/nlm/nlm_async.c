/* SPDX-License-Identifier: MIT */
#include "gateway/side/nlm/nlm_async.h"

#include <errno.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "common/backoff.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/random.h"
#include "common/sendfrom.h"
#include "common/ratelimit.h"
#include "common/xdr.h"
#include "conf/config.h"
#include "gateway/counters/counters.h"
#include "gateway/side/nlm/nlm_relay.h"
#include "gateway/side/rpc/portmap.h"

enum {
	/* A TEST_RES: header 40, cookie 4+1024, stat, holder (oh 4+1024, range). */
	AS_MAX_MSG = 2304,
	AS_DEFAULT_PENDING = 64,
	AS_DEFAULT_RETRY_MS = 1000,
	AS_DEFAULT_TIMEOUT_MS = 10000,
	AS_DEFAULT_PER_CLIENT = 16,
	/*
	 * GETPORTs for one result at most, resent after retry_ms, then twice
	 * that: a forged _MSG makes the gateway call port 111 of whatever
	 * address it claims, so what one call may cost that third party is
	 * bounded (about 170 bytes), and a host that does not answer holds
	 * its slot for 7 x retry_ms, not the stage's whole timeout.
	 */
	AS_MAX_GETPORTS = 3,
	AS_PORT_TTL_MS = 60000,	  /* a client's lockd port, once its portmapper said it */
	AS_SILENT_TTL_MS = 30000, /* a host whose portmapper did not answer: one GETPORT */
	AS_RES_OFFSET = NLMPROC_TEST_RES - NLMPROC_TEST_MSG, /* X_RES = X_MSG + 5 */
	AS_LINUX_SHORT = 8, /* the l_len a Linux v4 TEST_RES leaves out (below) */
};

enum as_stage {
	AS_FREE = 0,
	AS_AWAIT_SERVER, /* the X_MSG went upstream; its X_RES has not come */
	AS_GETPORT,	 /* asking the client's portmapper for its lockd */
	AS_DELIVER,	 /* calling X_RES at the client's lockd */
};

/* The lock of an X_MSG as sent upstream: the bookkeeping of the result needs it. */
struct as_lock {
	bool exclusive;
	int32_t svid;
	uint8_t oh[NLM_TOKEN_LEN];
	uint32_t fh_len;
	uint8_t fh[NLM4_FHSIZE];
	uint64_t offset, len;
};

/* One client X_MSG, from its relaying to the client's taking its X_RES. */
struct as_entry {
	enum as_stage stage;
	uint32_t gen; /* with the slot, the cookie upstream */
	uint32_t vers, proc;
	struct gw_host client;
	struct sockaddr_storage via; /* ours it called (family 0: unknown): calls leave from it */
	uint32_t cookie_len;	     /* the client's cookie, given back in the X_RES */
	uint8_t cookie[NLM_MAXNETOBJ];
	struct as_lock lock;
	/* Toward the client. */
	uint64_t deadline_us, sent_us;
	uint32_t sends;		   /* of the current stage's message */
	struct gw_backoff backoff; /* its resends: retry_ms, then doubling to 8 x retry_ms */
	bool via_cache;		   /* delivering to a lockd port remembered, not just asked for */
	uint32_t xid;
	struct sockaddr_storage to;
	socklen_t tolen;
	uint32_t msg_len;
	uint8_t msg[AS_MAX_MSG]; /* the X_RES call */
	uint32_t getport_len;
	uint8_t getport[64];
};

/*
 * What a client host's portmapper said of its lockd (port), or that it did
 * not answer (port 0), until @until_us: results for that host skip the
 * GETPORT, or try it once.
 */
struct as_port {
	struct gw_host host;
	uint16_t port;
	uint64_t until_us; /* 0: unused */
};

/* A LOCK_MSG that timed out waiting for its LOCK_RES (expire_lock_msg()). */
struct as_expired {
	bool used;
	uint32_t slot, gen, vers;
	struct as_lock lock;
};

struct nlm_async {
	struct nlm_async_config cfg;
	struct as_entry *ent;
	struct as_expired *expired; /* max_pending of them, the oldest overwritten */
	struct as_port *ports;	    /* max_pending of them, the soonest to end overwritten */
	struct gw_ratelimit refusal_log;
	uint32_t next_expired;
	uint32_t live;
	int fd; /* toward clients, bound to the route's listen address */
	struct event *read_ev, *timer;
	struct nlm_async_stats stats;
	uint8_t fixed[AS_MAX_MSG + AS_LINUX_SHORT]; /* a Linux TEST_RES made whole */
};

bool nlm_async_is_msg(uint32_t proc)
{
	return proc >= NLMPROC_TEST_MSG && proc <= NLMPROC_UNLOCK_MSG;
}

bool nlm_async_is_res(uint32_t proc)
{
	return proc >= NLMPROC_TEST_RES && proc <= NLMPROC_UNLOCK_RES;
}

static struct as_entry *find_xid(struct nlm_async *as, uint32_t xid)
{
	for (uint32_t i = 0; i < as->cfg.max_pending; i++) {
		struct as_entry *e = &as->ent[i];

		if ((e->stage == AS_GETPORT || e->stage == AS_DELIVER) && e->xid == xid)
			return e;
	}
	return NULL;
}

/* Whether a call in flight holds @xid: gw_random_xid() draws again. */
static bool xid_in_use(void *arg, uint32_t xid)
{
	return find_xid(arg, xid) != NULL;
}

static void entry_free(struct nlm_async *as, struct as_entry *e)
{
	e->stage = AS_FREE;
	as->live--;
}

/* ---- a client's X_MSG ----------------------------------------------------------- */

/*
 * An entry that yields to a new call when the table is full: one whose
 * result waits for a portmapper that has not answered a GETPORT yet. The
 * server is done with it, and a host that is silent is most likely not
 * there at all: a forged source address. The one closest to giving up.
 */
static struct as_entry *silent_entry(struct nlm_async *as, uint32_t *slot)
{
	struct as_entry *best = NULL;

	for (uint32_t i = 0; i < as->cfg.max_pending; i++) {
		struct as_entry *e = &as->ent[i];

		if (e->stage == AS_GETPORT && e->sends &&
		    (!best || e->sends > best->sends ||
		     (e->sends == best->sends && e->sent_us < best->sent_us))) {
			best = e;
			*slot = i;
		}
	}
	return best;
}

/*
 * A free entry (NULL: none), and how many entries @client holds in *@held
 * and its network (common/host.h, a /24 or /64) in *@net_held.
 */
static struct as_entry *free_entry(struct nlm_async *as, const struct gw_host *client,
				   uint32_t *slot, uint32_t *held, uint32_t *net_held)
{
	struct as_entry *e = NULL;

	*held = 0;
	*net_held = 0;
	for (uint32_t i = 0; i < as->cfg.max_pending; i++) {
		if (as->ent[i].stage == AS_FREE) {
			if (!e) {
				*slot = i;
				e = &as->ent[i];
			}
		} else if (gw_host_same_prefix(&as->ent[i].client, client)) {
			(*net_held)++;
			if (gw_host_equal(&as->ent[i].client, client))
				(*held)++;
		}
	}
	return e;
}

/* One network's share of the table: half, and never less than one host's. */
static uint32_t net_cap(const struct nlm_async *as)
{
	uint32_t half = as->cfg.max_pending / 2;

	return half > as->cfg.max_pending_per_client ? half : as->cfg.max_pending_per_client;
}

/*
 * One client host's entries are capped below the table's size: a host
 * whose portmapper never answers holds each of its entries for both
 * stages' timeouts, and without the cap could refuse every other client's
 * _MSG for that long.
 */
static bool refuse(struct nlm_async *as, const struct gw_host *client, bool table_full,
		   uint32_t held, uint32_t net_held)
{
	char who[INET6_ADDRSTRLEN];
	uint64_t more = 0;
	/* A flood of _MSG calls (forged ones too) is a line a second, with its count. */
	bool log = gw_ratelimit_allow(&as->refusal_log, gw_now_us(), &more);

	as->cfg.counters->events[GW_EV_NO_BUFFERS]++;
	if (!table_full && (held >= as->cfg.max_pending_per_client || net_held >= net_cap(as))) {
		as->stats.refused_client_cap++;
		if (log)
			gw_info("%s: nlm async: a _MSG call of client %s refused: it has %u "
				"pending, its network %u (max_pending_per_client %u, a network "
				"half of max_pending); %llu more refused since the last line",
				as->cfg.route->name, gw_host_str(client, who, sizeof(who)), held,
				net_held, as->cfg.max_pending_per_client, (unsigned long long)more);
		return false;
	}
	as->stats.full++;
	if (log)
		gw_info("%s: nlm async: a _MSG call refused: %u pending (max_pending), none "
			"waiting for a silent portmapper; %llu more refused since the last line",
			as->cfg.route->name, as->live, (unsigned long long)more);
	return false;
}

bool nlm_async_register(struct nlm_async *as, const struct gw_host *client,
			const struct sockaddr_storage *via, uint32_t vers, uint32_t proc,
			struct nlm_args *a, uint8_t cookie[NLM_ASYNC_COOKIE_LEN])
{
	uint32_t slot = 0, held, net_held;
	struct as_entry *e = free_entry(as, client, &slot, &held, &net_held);

	bool within_share = held < as->cfg.max_pending_per_client && net_held < net_cap(as);

	/* nlm_decode_args() bounds both; checked again, the copies are fixed arrays. */
	if (a->cookie.len > NLM_MAXNETOBJ || a->lock.fh.len > NLM4_FHSIZE ||
	    a->lock.oh.len != NLM_TOKEN_LEN)
		return refuse(as, client, !e, held, net_held);
	/* A host or network at its share takes no other host's place. */
	if (!e && within_share && (e = silent_entry(as, &slot))) {
		char who[INET6_ADDRSTRLEN];

		as->stats.yielded++;
		gw_debug("%s: nlm async: the result for client %s, whose portmapper is silent, "
			 "gives its place to a new call",
			 as->cfg.route->name, gw_host_str(&e->client, who, sizeof(who)));
		entry_free(as, e);
	}
	if (!e || !within_share)
		return refuse(as, client, !e, held, net_held);
	e->stage = AS_AWAIT_SERVER;
	e->sends = 0;
	e->gen = gw_random32(); /* the cookie's second half: unguessable (common/random.h) */
	e->vers = vers;
	e->proc = proc;
	e->client = *client;
	e->via = *via;
	e->cookie_len = a->cookie.len;
	memcpy(e->cookie, a->cookie.p, a->cookie.len);
	e->lock.exclusive = a->exclusive;
	e->lock.svid = a->lock.svid;
	memcpy(e->lock.oh, a->lock.oh.p, NLM_TOKEN_LEN);
	e->lock.fh_len = a->lock.fh.len;
	memcpy(e->lock.fh, a->lock.fh.p, a->lock.fh.len);
	e->lock.offset = a->lock.offset;
	e->lock.len = a->lock.len;
	e->deadline_us = gw_now_us() + (uint64_t)as->cfg.timeout_ms * 1000;
	as->live++;
	as->stats.sent++;
	xdr_put32(cookie, slot);
	xdr_put32(cookie + 4, e->gen);
	a->cookie = (struct nlm_bytes){ cookie, NLM_ASYNC_COOKIE_LEN };
	return true;
}

void nlm_async_from_client(struct nlm_async *as)
{
	as->stats.from_client++;
	as->cfg.counters->events[GW_EV_UNMATCHED_REPLY]++;
}

/* ---- the server's X_RES ----------------------------------------------------------- */

/* The entry a cookie of ours names, waiting for @proc's result; NULL for none. */
static struct as_entry *entry_of(struct nlm_async *as, uint32_t vers, uint32_t proc,
				 struct nlm_bytes cookie)
{
	struct as_entry *e;
	uint32_t slot;

	if (cookie.len != NLM_ASYNC_COOKIE_LEN)
		return NULL;
	slot = xdr_get32(cookie.p);
	if (slot >= as->cfg.max_pending)
		return NULL;
	e = &as->ent[slot];
	if (e->stage != AS_AWAIT_SERVER || e->gen != xdr_get32(cookie.p + 4) || e->vers != vers ||
	    e->proc + AS_RES_OFFSET != proc)
		return NULL;
	return e;
}

/* The _MSG's arguments as they went upstream, for nlm_relay's bookkeeping. */
static void upstream_args(uint32_t vers, uint32_t proc, const struct as_lock *l, struct nlm_args *a)
{
	*a = (struct nlm_args){
		.vers = vers,
		.kind = nlm_args_kind(proc),
		.exclusive = l->exclusive,
		.lock = { .fh = { l->fh, l->fh_len },
			  .oh = { l->oh, NLM_TOKEN_LEN },
			  .svid = l->svid,
			  .offset = l->offset,
			  .len = l->len },
	};
}

/*
 * A LOCK_MSG whose LOCK_RES did not come in time is remembered (its
 * cookie and lock), so that a LOCK_RES that comes later, granted or
 * blocked, can be given back: the server then holds (or queues) a lock
 * of an upstream owner that no client UNLOCK will name once the owner is
 * gone and no client reboot will release, as nothing records it.
 *
 * Why not an UNLOCK at the timeout instead: the LOCK_MSG may still be
 * queued at the server (Linux lockd answers a _MSG from a svc thread and
 * sends its _RES as a separate async call), so an UNLOCK sent then can
 * arrive first and the lock be granted after it; and a LOCK_MSG the
 * server denied would have the UNLOCK drop an earlier lock the same owner
 * holds on that range. The late LOCK_RES is the proof that the server
 * holds the lock. A blocked request granted later comes as a GRANTED
 * callback, not a LOCK_RES: the callback service relays it to the
 * client's owner, whose lockd refuses a grant it never waited for, and
 * answers the server DENIED for an owner of none of the gateway's (the
 * server then unlocks it); the give-back of the BLOCKED LOCK_RES also
 * cancels the request (a Linux lockd's UNLOCK cancels a blocked one).
 *
 * Bounded: max_pending of them, the oldest overwritten (a result later
 * than max_pending timeouts is dropped as before).
 */
static void expire_lock_msg(struct nlm_async *as, uint32_t slot, const struct as_entry *e)
{
	struct as_expired *x = &as->expired[as->next_expired];

	as->next_expired = (as->next_expired + 1) % as->cfg.max_pending;
	*x = (struct as_expired){
		.used = true, .slot = slot, .gen = e->gen, .vers = e->vers, .lock = e->lock
	};
}

/*
 * A LOCK_MSG of the same upstream owner on the same file pending (the
 * client sent it again after the first went unanswered): the server
 * grants it over the late one's lock, and an UNLOCK now could take away
 * the lock that result gives the client. Its result is recorded instead,
 * and the client's reboot unlocks the whole file for that owner.
 */
static bool lock_msg_pending(const struct nlm_async *as, const struct as_lock *l)
{
	for (uint32_t i = 0; i < as->cfg.max_pending; i++) {
		const struct as_entry *e = &as->ent[i];

		if (e->stage != AS_FREE && e->proc == NLMPROC_LOCK_MSG && e->lock.svid == l->svid &&
		    memcmp(e->lock.oh, l->oh, NLM_TOKEN_LEN) == 0 && e->lock.fh_len == l->fh_len &&
		    memcmp(e->lock.fh, l->fh, l->fh_len) == 0)
			return true;
	}
	return false;
}

/*
 * The server's LOCK_RES (@stat, @cookie) for an expired LOCK_MSG: true
 * when it was one and the lock was given back. A late refusal holds
 * nothing: false, and it is dropped as an unknown cookie.
 */
static bool give_back_late(struct nlm_async *as, uint32_t vers, struct nlm_bytes cookie,
			   uint32_t stat)
{
	struct nlm_args up;

	if (cookie.len != NLM_ASYNC_COOKIE_LEN)
		return false;
	for (uint32_t i = 0; i < as->cfg.max_pending; i++) {
		struct as_expired *x = &as->expired[i];

		if (!x->used || x->slot != xdr_get32(cookie.p) ||
		    x->gen != xdr_get32(cookie.p + 4) || x->vers != vers)
			continue;
		x->used = false;
		if (stat != NLM_GRANTED && stat != NLM_BLOCKED)
			return false;
		if (lock_msg_pending(as, &x->lock)) {
			gw_info("%s: nlm async: a late LOCK_RES not given back: the same owner's "
				"LOCK_MSG on that file is pending again",
				as->cfg.route->name);
			return false;
		}
		upstream_args(vers, NLMPROC_LOCK_MSG, &x->lock, &up);
		/*
		 * The owner holds something on that file now (a resend was
		 * granted and taken since): an UNLOCK would take that away
		 * on the server and from the records while its client holds
		 * it. The late lock is recorded instead (or, with no room,
		 * given back), so the owner's UNLOCK or its client's reboot
		 * frees it: held a little too long, never lost.
		 */
		if (nlm_relay_owner_holds(as->cfg.relay, &up)) {
			nlm_relay_lock_result(as->cfg.relay, vers, &up, stat);
			gw_info("%s: nlm async: a late LOCK_RES recorded, not given back: its "
				"owner holds a lock on that file",
				as->cfg.route->name);
			return true;
		}
		nlm_relay_give_back(as->cfg.relay, vers, &up);
		as->stats.late_given_back++;
		as->cfg.counters->events[GW_EV_UNMATCHED_REPLY]++;
		gw_info("%s: nlm async: the server's LOCK_RES (%s) came after its LOCK_MSG timed "
			"out: the lock given back (UNLOCK upstream), the client not told",
			as->cfg.route->name, stat == NLM_GRANTED ? "granted" : "blocked");
		return true;
	}
	return false;
}

/* ---- what clients' portmappers said ---------------------------------------------------- */

static struct as_port *port_find(struct nlm_async *as, const struct gw_host *h, uint64_t now)
{
	for (uint32_t i = 0; i < as->cfg.max_pending; i++) {
		struct as_port *p = &as->ports[i];

		if (p->until_us > now && gw_host_equal(&p->host, h))
			return p;
	}
	return NULL;
}

/* Remember @port (0: silent) for @h for @ttl_ms, in its old place or the one soonest to end. */
static void port_note(struct nlm_async *as, const struct gw_host *h, uint16_t port, uint32_t ttl_ms,
		      uint64_t now)
{
	struct as_port *slot = port_find(as, h, now);

	for (uint32_t i = 0; !slot && i < as->cfg.max_pending; i++) {
		struct as_port *p = &as->ports[i];

		if (!slot || p->until_us < slot->until_us)
			slot = p;
	}
	if (!slot)
		return; /* no table (max_pending is at least 1: cannot happen) */
	*slot = (struct as_port){ .host = *h, .port = port, .until_us = now + ttl_ms * 1000ull };
}

static void port_forget(struct nlm_async *as, const struct gw_host *h, uint64_t now)
{
	struct as_port *p = port_find(as, h, now);

	if (p)
		p->until_us = 0;
}

/* ---- toward the client --------------------------------------------------------------- */

static void send_current(struct nlm_async *as, struct as_entry *e)
{
	const uint8_t *m = e->stage == AS_DELIVER ? e->msg : e->getport;
	size_t n = e->stage == AS_DELIVER ? e->msg_len : e->getport_len;

	e->sent_us = gw_now_us();
	e->sends++;
	if (!gw_send_from(as->fd, m, n, (const struct sockaddr *)&e->to, e->tolen, &e->via))
		gw_debug("%s: nlm async: sendto: %s", as->cfg.route->name, strerror(errno));
}

/*
 * @e enters @stage, whose message is sent after @sends_done counted sends:
 * the delay after its next send is the one after the (@sends_done + 1)th.
 */
static void stage_start(const struct nlm_async *as, struct as_entry *e, enum as_stage stage,
			uint32_t sends_done)
{
	uint32_t r = as->cfg.retry_ms;

	e->stage = stage;
	e->sends = sends_done;
	gw_backoff_init(&e->backoff, r, r > UINT32_MAX / 8 ? UINT32_MAX : 8 * r);
	for (uint32_t k = 0; k < sends_done; k++)
		gw_backoff_next(&e->backoff);
}

/* The X_RES call, at the client's lockd on @port. */
static void deliver(struct nlm_async *as, struct as_entry *e, uint16_t port)
{
	stage_start(as, e, AS_DELIVER, 0);
	e->xid = gw_random_xid(xid_in_use, as);
	xdr_put32(e->msg, e->xid);
	gw_host_to_sockaddr(&e->client, port, &e->to, &e->tolen);
	send_current(as, e);
}

/* The GETPORT that finds the client's lockd, @sends_done of its sends counted already. */
static bool ask_portmapper(struct nlm_async *as, struct as_entry *e, uint32_t sends_done)
{
	e->via_cache = false;
	e->xid = gw_random_xid(xid_in_use, as);
	e->getport_len = (uint32_t)pmap_encode_udp_lookup(e->getport, sizeof(e->getport), e->xid,
							  e->client.family, NLM_PROG, e->vers);
	if (!e->getport_len)
		return false;
	gw_host_to_sockaddr(&e->client, as->cfg.pmap_port, &e->to, &e->tolen);
	stage_start(as, e, AS_GETPORT, sends_done);
	send_current(as, e);
	return true;
}

/*
 * The X_RES for the client, with its cookie and (TEST_RES) the holder as
 * it may see it, then the GETPORT that finds its lockd. A TEST's result
 * without a holder and the others' nlm_res are the same bytes (cookie,
 * stat): nlm_encode_testres() writes both.
 */
static bool start_delivery(struct nlm_async *as, struct as_entry *e, struct nlm_testres *r)
{
	size_t hn = rpc_encode_call_hdr(e->msg, sizeof(e->msg), 0, NLM_PROG, e->vers,
					e->proc + AS_RES_OFFSET),
	       m;

	r->cookie = (struct nlm_bytes){ e->cookie, e->cookie_len };
	if (!hn || nlm_encode_testres(e->vers, r, e->msg + hn, sizeof(e->msg) - hn, &m) != 0)
		return false;
	e->msg_len = (uint32_t)(hn + m);
	uint64_t now = gw_now_us();
	const struct as_port *known = port_find(as, &e->client, now);

	e->deadline_us = now + (uint64_t)as->cfg.timeout_ms * 1000;
	if (known && known->port) {
		/* Its portmapper said so lately: no GETPORT, unless the lockd does not answer. */
		deliver(as, e, known->port);
		e->via_cache = true;
		return true;
	}
	/* A host silent lately is asked once (AS_MAX_GETPORTS - 1 sends already counted). */
	return ask_portmapper(as, e, known ? AS_MAX_GETPORTS - 1 : 0);
}

/*
 * Linux lockd's v4 TEST_RES with a holder (NLM_DENIED) ends 8 bytes short:
 * its encode_nlm4_holder() reserves 4 + 4 bytes for two 64-bit words, so
 * the holder's l_len falls outside the message. What a Linux server sends
 * is then decoded with that length as 0 (to the end of the file), and the
 * client gets a whole TEST_RES; anything else still has to decode as it is.
 */
static int decode_testres(struct nlm_async *as, uint32_t vers, const uint8_t *args, size_t len,
			  struct nlm_testres *r)
{
	if (nlm_decode_testres(vers, args, len, r) == 0)
		return 0;
	if (vers != 4 || len + AS_LINUX_SHORT > sizeof(as->fixed))
		return -EBADMSG;
	memcpy(as->fixed, args, len);
	memset(as->fixed + len, 0, AS_LINUX_SHORT);
	if (nlm_decode_testres(vers, as->fixed, len + AS_LINUX_SHORT, r) != 0 ||
	    r->stat != NLM_DENIED)
		return -EBADMSG;
	return 0;
}

int nlm_async_on_res(struct nlm_async *as, uint32_t vers, uint32_t proc, const uint8_t *args,
		     size_t len)
{
	struct nlm_testres r;
	struct nlm_res res;
	struct nlm_args up;
	struct as_entry *e;
	char who[INET6_ADDRSTRLEN];

	if (proc == NLMPROC_TEST_RES ? decode_testres(as, vers, args, len, &r) != 0
				     : nlm_decode_res(args, len, &res) != 0) {
		/* Only the server gets here (nlm_callback checks the address): worth a line. */
		gw_info("%s: nlm async: the server's NLM v%u procedure %u does not decode "
			"(%zu bytes): GARBAGE_ARGS",
			as->cfg.route->name, vers, proc, len);
		return -EBADMSG;
	}
	if (proc != NLMPROC_TEST_RES)
		r = (struct nlm_testres){ .cookie = res.cookie, .stat = res.stat };
	e = entry_of(as, vers, proc, r.cookie);
	if (!e && proc == NLMPROC_LOCK_RES && give_back_late(as, vers, r.cookie, r.stat))
		return 0;
	if (!e) {
		as->stats.unknown_cookie++;
		as->cfg.counters->events[GW_EV_UNMATCHED_REPLY]++;
		gw_info("%s: nlm async: the server's NLM v%u procedure %u for no pending _MSG of "
			"ours (cookie of %u bytes): dropped",
			as->cfg.route->name, vers, proc, r.cookie.len);
		return -ENOENT;
	}
	upstream_args(e->vers, e->proc, &e->lock, &up);
	switch (proc) {
	case NLMPROC_LOCK_RES:
		if (!nlm_relay_lock_result(as->cfg.relay, vers, &up, r.stat))
			r.stat = NLM_DENIED_NOLOCKS;
		break;
	case NLMPROC_UNLOCK_RES:
		nlm_relay_unlock_result(as->cfg.relay, &up, r.stat);
		break;
	case NLMPROC_TEST_RES:
		if (r.stat == NLM_DENIED)
			nlm_relay_holder_view(as->cfg.relay, &e->client, &r.holder);
		break;
	default: /* CANCEL_RES forgets nothing, as a CANCEL's reply (nlm_relay.c) */
		break;
	}
	/* The server has answered: the owner's call in flight ends (after the bookkeeping). */
	nlm_relay_call_done(as->cfg.relay, &up, true);
	if (!start_delivery(as, e, &r)) {
		gw_warn("%s: nlm async: the result for client %s did not encode: dropped",
			as->cfg.route->name, gw_host_str(&e->client, who, sizeof(who)));
		entry_free(as, e);
	}
	return 0;
}

static void client_reply(struct nlm_async *as, struct as_entry *e, const uint8_t *msg, size_t len)
{
	char who[INET6_ADDRSTRLEN];
	uint16_t port;
	size_t off;

	if (e->stage == AS_GETPORT) {
		if (pmap_decode_udp_lookup_reply(msg, len, e->client.family, &port) != 0 ||
		    port == 0) {
			gw_info("%s: nlm async: client %s has no lockd at its portmapper: its "
				"result dropped",
				as->cfg.route->name, gw_host_str(&e->client, who, sizeof(who)));
			entry_free(as, e);
			return;
		}
		port_note(as, &e->client, port, AS_PORT_TTL_MS, gw_now_us());
		deliver(as, e, port);
		return;
	}
	/* A _RES has no results; an accepted, successful reply is the client's taking it. */
	if (rpc_reply_results(msg, len, &off))
		as->stats.delivered++;
	else
		gw_info("%s: nlm async: client %s refused its result", as->cfg.route->name,
			gw_host_str(&e->client, who, sizeof(who)));
	entry_free(as, e);
}

static void on_client_read(evutil_socket_t fd, short what, void *arg)
{
	struct nlm_async *as = arg;
	uint8_t buf[512];
	struct sockaddr_storage from;
	socklen_t flen = sizeof(from);
	struct gw_host h;
	struct as_entry *e;
	ssize_t n;

	(void)what;
	while ((n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &flen)) >= 0) {
		/* Only a reply from the client the call went to, to a call pending. */
		if (n < 8 || !rpc_msg_is_reply(buf, (size_t)n) ||
		    !(e = find_xid(as, xdr_get32(buf))) ||
		    !gw_host_from_sockaddr(&h, (struct sockaddr *)&from, flen) ||
		    !gw_host_equal(&h, &e->client))
			as->cfg.counters->events[GW_EV_UNMATCHED_REPLY]++;
		else
			client_reply(as, e, buf, (size_t)n);
		flen = sizeof(from);
	}
}

/* @e's message is due to be sent again (or, after its last GETPORT, given up). */
static bool resend_due(const struct as_entry *e, uint64_t now)
{
	return gw_backoff_due(&e->backoff, e->sent_us, now);
}

/* A host that did not answer its GETPORTs: its result is dropped, the host asked once next. */
static void portmapper_silent(struct nlm_async *as, struct as_entry *e, uint64_t now)
{
	char who[INET6_ADDRSTRLEN];

	as->stats.portmapper_silent++;
	port_note(as, &e->client, 0, AS_SILENT_TTL_MS, now);
	gw_debug("%s: nlm async: client %s's portmapper did not answer %u GETPORTs: its result "
		 "dropped",
		 as->cfg.route->name, gw_host_str(&e->client, who, sizeof(who)), e->sends);
	entry_free(as, e);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct nlm_async *as = arg;
	uint64_t now = gw_now_us();
	char who[INET6_ADDRSTRLEN];

	(void)fd;
	(void)what;
	for (uint32_t i = 0; i < as->cfg.max_pending; i++) {
		struct as_entry *e = &as->ent[i];

		if (e->stage == AS_FREE)
			continue;
		if (e->stage == AS_GETPORT &&
		    (now >= e->deadline_us ||
		     (e->sends >= AS_MAX_GETPORTS && resend_due(e, now)))) {
			portmapper_silent(as, e, now);
		} else if (now >= e->deadline_us) {
			as->stats.timed_out++;
			as->cfg.counters->events[GW_EV_CALL_TIMEOUT]++;
			gw_info("%s: nlm async: a _MSG of client %s: %s in time, forgotten",
				as->cfg.route->name, gw_host_str(&e->client, who, sizeof(who)),
				e->stage == AS_AWAIT_SERVER ? "no result from the server"
							    : "the client did not take its result");
			if (e->stage == AS_AWAIT_SERVER) {
				struct nlm_args up;
				if (e->proc == NLMPROC_LOCK_MSG)
					expire_lock_msg(as, i, e);
				/*
				 * Its call in flight ends unanswered: a LOCK_MSG's owner
				 * stays, idle, for the client's resend (lock_msg_pending()).
				 */
				upstream_args(e->vers, e->proc, &e->lock, &up);
				nlm_relay_call_done(as->cfg.relay, &up, false);
			} else {
				/* Its lockd did not take it: ask the portmapper again next time. */
				port_forget(as, &e->client, now);
			}
			entry_free(as, e);
		} else if (e->stage == AS_DELIVER && e->via_cache && resend_due(e, now)) {
			/*
			 * The lockd port remembered did not take it: the client's
			 * lockd restarted on another port, say. Ask its portmapper.
			 */
			port_forget(as, &e->client, now);
			if (!ask_portmapper(as, e, 0))
				entry_free(as, e);
		} else if (e->stage != AS_AWAIT_SERVER && resend_due(e, now)) {
			gw_backoff_next(&e->backoff);
			send_current(as, e);
		}
	}
}

/* ---- start and stop -------------------------------------------------------------------- */

struct nlm_async *nlm_async_new(struct event_base *base, const struct nlm_async_config *cfg,
				char *err, size_t errlen)
{
	struct nlm_async *as = calloc(1, sizeof(*as));

	if (!as)
		goto fail;
	as->cfg = *cfg;
	as->fd = -1;
	if (!as->cfg.max_pending)
		as->cfg.max_pending = AS_DEFAULT_PENDING;
	if (!as->cfg.retry_ms)
		as->cfg.retry_ms = AS_DEFAULT_RETRY_MS;
	if (!as->cfg.timeout_ms)
		as->cfg.timeout_ms = AS_DEFAULT_TIMEOUT_MS;
	if (!as->cfg.max_pending_per_client)
		as->cfg.max_pending_per_client = AS_DEFAULT_PER_CLIENT;
	if (as->cfg.max_pending_per_client > as->cfg.max_pending)
		as->cfg.max_pending_per_client = as->cfg.max_pending;
	/* Generations and XIDs from the clock: a restarted gateway's differ from before. */
	as->ent = calloc(as->cfg.max_pending, sizeof(*as->ent));
	as->expired = calloc(as->cfg.max_pending, sizeof(*as->expired));
	as->ports = calloc(as->cfg.max_pending, sizeof(*as->ports));
	if (!as->ent || !as->expired || !as->ports)
		goto fail;
	gw_ratelimit_init(&as->refusal_log, 1000000);
	/* From the listen address: the client knows the gateway by it. */
	as->fd = gw_udp_socket_at(&cfg->route->listen.addr, cfg->route->listen.addrlen);
	if (as->fd < 0)
		goto fail;
	as->read_ev = event_new(base, as->fd, EV_READ | EV_PERSIST, on_client_read, as);
	as->timer = event_new(base, -1, EV_PERSIST, on_timer, as);
	struct timeval tick = gw_ms_timeval(as->cfg.retry_ms / 2 ? as->cfg.retry_ms / 2 : 1);
	if (!as->read_ev || !as->timer || event_add(as->read_ev, NULL) != 0 ||
	    event_add(as->timer, &tick) != 0)
		goto fail;
	return as;
fail:
	snprintf(err, errlen, "route %s: cannot start the NLM asynchronous results: %s",
		 cfg->route->name, strerror(errno ? errno : ENOMEM));
	nlm_async_free(as);
	return NULL;
}

void nlm_async_free(struct nlm_async *as)
{
	if (!as)
		return;
	if (as->read_ev)
		event_free(as->read_ev);
	if (as->timer)
		event_free(as->timer);
	if (as->fd >= 0)
		close(as->fd);
	free(as->ent);
	free(as->expired);
	free(as->ports);
	free(as);
}

uint32_t nlm_async_pending(const struct nlm_async *as)
{
	return as->live;
}

const struct nlm_async_stats *nlm_async_stats(const struct nlm_async *as)
{
	return &as->stats;
}

void nlm_async_set_route(struct nlm_async *as, const struct gw_route *route)
{
	as->cfg.route = route;
}
