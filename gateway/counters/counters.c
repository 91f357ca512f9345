/* SPDX-License-Identifier: MIT */
#include "gateway/counters/counters.h"

#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/maps/fairq.h"
#include "gateway/counters/rpc_names.h"
#include "gateway/maps/wirexid.h"

static const char *const event_names[] = {
	[GW_EV_ERR_VERS_SENT] = "err_vers_sent",
	[GW_EV_ERR_CHUNK_SENT] = "err_chunk_sent",
	[GW_EV_ERR_VERS_RECEIVED] = "err_vers_received",
	[GW_EV_ERR_CHUNK_RECEIVED] = "err_chunk_received",
	[GW_EV_BAD_TRANSPORT_HEADER] = "bad_transport_header",
	[GW_EV_MALFORMED_RECORD] = "malformed_record",
	[GW_EV_GARBAGE_ARGS] = "garbage_args",
	[GW_EV_RPC_ERROR_REPLY] = "rpc_error_reply",
	[GW_EV_REFUSED_CLIENT] = "refused_client",
	[GW_EV_UPSTREAM_RECONNECT] = "upstream_reconnect",
	[GW_EV_UPSTREAM_FAILURE] = "upstream_failure",
	[GW_EV_CONNECTION_LOST] = "connection_lost",
	[GW_EV_CREDIT_OVERRUN] = "credit_overrun",
	[GW_EV_RETRANSMIT_ABSORBED] = "retransmit_absorbed",
	[GW_EV_UNMATCHED_REPLY] = "unmatched_reply",
	[GW_EV_DONE_DROPPED] = "rdma_done_dropped",
	[GW_EV_ULB_UNKNOWN_OP] = "ulb_unknown_op",
	[GW_EV_REPLY_CHUNK_RETRY] = "reply_chunk_retry",
	[GW_EV_BACKWARD_UNDELIVERABLE] = "backward_undeliverable",
	[GW_EV_NO_BUFFERS] = "no_buffers",
	[GW_EV_OUTPUT_OVERFLOW] = "output_overflow",
	[GW_EV_PROTOCOL_VIOLATION] = "protocol_violation",
	[GW_EV_CALL_TIMEOUT] = "call_timeout",
	[GW_EV_SESSION_LIMIT] = "session_limit",
	[GW_EV_CLIENT_SESSION_LIMIT] = "client_session_limit",
	[GW_EV_RECORD_TIMEOUT] = "record_timeout",
	[GW_EV_CONNECT_TIMEOUT] = "connect_timeout",
	[GW_EV_SESSION_MEMORY_LIMIT] = "session_memory_limit",
	[GW_EV_ERR_INVAL_OPTION_SENT] = "err_inval_option_sent",
	[GW_EV_RPCRDMA_VERSION_FALLBACK] = "rpcrdma_version_fallback",
	[GW_EV_ERR_INVAL_OPTION_RECEIVED] = "err_inval_option_received",
	[GW_EV_VERSION_REMEMBERED] = "rpcrdma_version_remembered",
	[GW_EV_BACKWARD_NO_SESSION] = "backward_no_session",
	[GW_EV_COUNTERS_NO_MEMORY] = "counters_no_memory",
	[GW_EV_BACKCHANNEL_BOUND] = "backchannel_bound",
	[GW_EV_BACKCHANNEL_ADOPTED] = "backchannel_adopted",
	[GW_EV_HANDOFF_REFUSED] = "handoff_refused",
	[GW_EV_SIZE_CLAMPED] = "size_clamped",
	[GW_EV_RECORD_TOO_LARGE_ANSWERED] = "record_too_large_answered",
	[GW_EV_UDP_REPLY_TOO_LARGE] = "udp_reply_too_large",
	[GW_EV_UDP_REPLY_RATE_LIMITED] = "udp_reply_rate_limited",
	[GW_EV_GSS_XID_WAIT] = "gss_xid_wait",
	[GW_EV_INSECURE_PORT] = "insecure_port",
};

/* A kind added to the enum without a name here fails the build, not a scrape. */
static_assert(sizeof(event_names) / sizeof(event_names[0]) == GW_EV_KIND_COUNT,
	      "every event kind has a name");

const char *gw_event_kind_name(enum gw_event_kind kind)
{
	if ((unsigned)kind < GW_EV_KIND_COUNT && event_names[kind])
		return event_names[kind];
	return "unknown";
}

static const char *const session_state_names[] = {
	[GW_SESSION_CONNECTING] = "connecting",
	[GW_SESSION_READY] = "ready",
	[GW_SESSION_DRAINING] = "draining",
	[GW_SESSION_CLOSING] = "closing",
};

static_assert(sizeof(session_state_names) / sizeof(session_state_names[0]) ==
		      GW_SESSION_STATE_COUNT,
	      "every session state has a name");

const char *gw_session_state_name(enum gw_session_state st)
{
	if ((unsigned)st < GW_SESSION_STATE_COUNT)
		return session_state_names[st];
	return "unknown";
}

void gw_hist_add(struct gw_hist *h, uint64_t us)
{
	/*
	 * The smallest i with us <= 2^i is the bit length of us - 1: one
	 * instruction rather than a loop on the completion path.
	 */
	unsigned i = us <= 1 ? 0 : 64 - (unsigned)__builtin_clzll(us - 1);

	if (i > GW_HIST_BUCKETS - 1)
		i = GW_HIST_BUCKETS - 1;
	h->buckets[i]++;
	h->count++;
	h->sum_us += us;
}

uint64_t gw_hist_bucket_le(unsigned i)
{
	return i < GW_HIST_BUCKETS - 1 ? (1ull << i) : UINT64_MAX;
}

/* Where (prog, vers, proc) is looked for first in a table of @nslots. */
static unsigned proc_hash(uint32_t prog, uint32_t vers, uint32_t proc, unsigned nslots)
{
	return ((prog * 2654435761u) ^ (vers * 40503u) ^ (proc * 2246822519u)) % nslots;
}

/*
 * Open addressing: a route sees a handful of programs and a few dozen
 * procedures, a session fewer, so probes are short.
 */
static struct gw_proc_count *proc_find(struct gw_proc_count *tab, unsigned nslots, uint32_t prog,
				       uint32_t vers, uint32_t proc, bool *fresh)
{
	unsigned h = proc_hash(prog, vers, proc, nslots);

	for (unsigned n = 0; n < nslots; n++) {
		struct gw_proc_count *p = &tab[(h + n) % nslots];
		if (!p->used) {
			*fresh = true;
			return p;
		}
		if (p->prog == prog && p->vers == vers && p->proc == proc) {
			*fresh = false;
			return p;
		}
	}
	return NULL;
}

/* Move @c's slots into a zeroed table of @nslots (> its own): they all fit. */
static void procs_move(struct gw_counters *c, struct gw_proc_count *to, unsigned nslots)
{
	unsigned from_n;
	struct gw_proc_count *from = gw_counters_procs(c, &from_n);
	bool fresh;

	for (unsigned i = 0; i < from_n; i++) {
		if (!from[i].used)
			continue;
		struct gw_proc_count *p =
			proc_find(to, nslots, from[i].prog, from[i].vers, from[i].proc, &fresh);
		if (p)
			*p = from[i];
	}
	free(c->procs_big);
	memset(c->procs_small, 0, sizeof(c->procs_small));
	c->procs_big = to;
	c->procs_cap = nslots;
}

/*
 * Double the table of @c, up to GW_PROC_SLOTS. This is the one allocation
 * while counting, made the few times a session uses more procedures than
 * it did; a failure leaves the table as it was, and counts.
 */
static void procs_grow(struct gw_counters *c)
{
	unsigned nslots;
	struct gw_proc_count *to;

	gw_counters_procs(c, &nslots);
	nslots = nslots * 2 < GW_PROC_SLOTS ? nslots * 2 : GW_PROC_SLOTS;
	to = calloc(nslots, sizeof(*to));
	if (!to) {
		c->events[GW_EV_COUNTERS_NO_MEMORY]++;
		return;
	}
	procs_move(c, to, nslots);
}

int gw_counters_reserve_procs(struct gw_counters *c)
{
	struct gw_proc_count *to;

	if (c->procs_big && c->procs_cap == GW_PROC_SLOTS)
		return 0;
	if (!(to = calloc(GW_PROC_SLOTS, sizeof(*to))))
		return -ENOMEM;
	procs_move(c, to, GW_PROC_SLOTS);
	return 0;
}

void gw_counters_release(struct gw_counters *c)
{
	free(c->procs_big);
	c->procs_big = NULL;
	c->procs_cap = 0;
	c->procs_used = 0;
	memset(c->procs_small, 0, sizeof(c->procs_small));
}

struct gw_proc_count *gw_counters_proc(struct gw_counters *c, uint32_t prog, uint32_t vers,
				       uint32_t proc)
{
	unsigned nslots;
	struct gw_proc_count *tab = gw_counters_procs(c, &nslots);
	bool fresh;
	struct gw_proc_count *p = proc_find(tab, nslots, prog, vers, proc, &fresh);

	if (p && !fresh)
		return p;
	/* A new procedure: past three quarters full, a table that may grow does. */
	if (nslots < GW_PROC_SLOTS && (c->procs_used + 1) * 4 > nslots * 3) {
		procs_grow(c);
		tab = gw_counters_procs(c, &nslots);
		p = proc_find(tab, nslots, prog, vers, proc, &fresh);
	}
	if (!p)
		return NULL;
	p->used = true;
	p->prog = prog;
	p->vers = vers;
	p->proc = proc;
	c->procs_used++;
	return p;
}

/*
 * The slot a peer's call may count in. Program, version and procedure are
 * the client's to choose: only those of the well-known table get a slot,
 * and that table fits the slots (gateway/counters/rpc_names.c checks it at compile
 * time), so made-up numbers never crowd out real ones. The rest go to
 * 'other'.
 */
static struct gw_proc_count *counters_proc_known(struct gw_counters *c, uint32_t prog,
						 uint32_t vers, uint32_t proc)
{
	if (!gw_rpc_procedure_known(prog, vers, proc))
		return NULL;
	return gw_counters_proc(c, prog, vers, proc);
}

void gw_counters_count_call(struct gw_counters *c, uint32_t prog, uint32_t vers, uint32_t proc)
{
	struct gw_proc_count *p = counters_proc_known(c, prog, vers, proc);

	c->calls++;
	if (p)
		p->calls++;
	else
		c->procs_other_calls++;
}

struct gw_proc_count *gw_counters_count_reply(struct gw_counters *c, uint32_t prog, uint32_t vers,
					      uint32_t proc)
{
	struct gw_proc_count *p = counters_proc_known(c, prog, vers, proc);

	c->replies++;
	if (p)
		p->replies++;
	else
		c->procs_other_replies++;
	return p;
}

void gw_hist_merge(struct gw_hist *into, const struct gw_hist *from)
{
	for (unsigned i = 0; i < GW_HIST_BUCKETS; i++)
		into->buckets[i] += from->buckets[i];
	into->count += from->count;
	into->sum_us += from->sum_us;
}

void gw_counters_add(struct gw_counters *into, const struct gw_counters *from)
{
	into->calls += from->calls;
	into->replies += from->replies;
	into->backward_calls += from->backward_calls;
	into->backward_replies += from->backward_replies;
	into->calls_queued_for_credits += from->calls_queued_for_credits;
	into->remote_invalidations += from->remote_invalidations;
	into->bytes_inline += from->bytes_inline;
	into->bytes_read_chunk += from->bytes_read_chunk;
	into->bytes_write_chunk += from->bytes_write_chunk;
	into->bytes_reply_chunk += from->bytes_reply_chunk;
	into->tcp_bytes_in += from->tcp_bytes_in;
	into->tcp_bytes_out += from->tcp_bytes_out;
	into->sessions_opened += from->sessions_opened;
	into->sessions_closed += from->sessions_closed;
	for (unsigned i = 0; i < GW_EV_KIND_COUNT; i++)
		into->events[i] += from->events[i];
	gw_hist_merge(&into->gateway_us, &from->gateway_us);
	gw_hist_merge(&into->upstream_us, &from->upstream_us);
	gw_hist_merge(&into->queue_us, &from->queue_us);
	gw_hist_merge(&into->socket_us, &from->socket_us);
	unsigned nslots;
	const struct gw_proc_count *procs = gw_counters_procs(from, &nslots);

	for (unsigned i = 0; i < nslots; i++) {
		const struct gw_proc_count *p = &procs[i];
		if (!p->used)
			continue;
		struct gw_proc_count *q = gw_counters_proc(into, p->prog, p->vers, p->proc);
		if (q) {
			q->calls += p->calls;
			q->replies += p->replies;
		} else {
			into->procs_other_calls += p->calls;
			into->procs_other_replies += p->replies;
		}
	}
	into->procs_other_calls += from->procs_other_calls;
	into->procs_other_replies += from->procs_other_replies;
}

void gw_stats_shared_xids(struct gw_stats_shared *out, const struct wirexid *map)
{
	const struct wirexid_stats *st = &map->st;

	out->xid_entries = map->max;
	out->xid_in_flight = st->in_flight;
	out->xid_answered = st->answered;
	out->xid_kept = st->kept;
	out->xid_kept_clients = st->kept_clients;
	out->xid_new = st->new_calls;
	out->xid_retransmit_in_flight = st->hits_in_flight;
	out->xid_retransmit_answered = st->hits_answered;
	out->xid_expired = st->expired;
	out->xid_evicted = st->evicted;
	out->xid_evicted_safe_twice = st->evicted_safe;
	out->xid_evicted_own = st->evicted_own;
	out->xid_evicted_other = st->evicted_other;
	out->xid_full = st->full;
	out->xid_stray = st->stray;
}

void gw_stats_channel_queue(struct gw_stats_channel *o, const struct fairq *fq, uint32_t clients)
{
	o->credits_granted = fq->grant;
	o->calls_in_flight = fq->in_flight;
	o->calls_queued = fq->queued;
	o->clients = clients;
	o->stalls = fq->stalls;
}
