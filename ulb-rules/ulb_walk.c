/* SPDX-License-Identifier: MIT */
/*
 * ulb-rules/ulb_walk.c - walk RPC arguments and results with the compiled
 * shapes; parse calls and replies of every procedure but NFSv4 COMPOUND
 * (ulb_nfs4.c).
 *
 * Hot path: runs for every call and reply. Words are read with the inline
 * loads of common/xdr.h, not libtirpc's XDR streams, whose per-word
 * indirect calls would cost more than the whole walk. Every read is
 * preceded by a length check against what is left of the message, and every
 * loop consumes at least one XDR unit per turn, so a walk is bounded by the
 * message length whatever the lengths and counts in it claim.
 */
#include <string.h>

#include "common/xdr.h"
#include "ulb-rules/rpc_msg.h"
#include "ulb-rules/ulb_impl.h"

_Thread_local struct ulb_counters ulb_counters;

static inline bool walk_has(const struct ulb_walk *w, uint32_t n)
{
	return n <= w->len - w->pos;
}

void ulb_walk_reset_values(struct ulb_walk *w)
{
	/* all ones: "not seen"; a bound that needs it is then unbounded */
	memset(w->values, 0xff, sizeof(w->values));
}

/* An opaque or string: length word, data, pad. DDP items are noted. */
static bool walk_opaque(struct ulb_walk *w, const struct ulb_node *n)
{
	if (!walk_has(w, 4))
		return false;
	uint32_t len = xdr_get32(w->msg + w->pos);
	w->pos += 4;
	if (len > n->max)
		return false;
	if ((n->flags & UN_MAX_VALUE) && len > w->values[n->max_value])
		return false;
	if (n->flags & UN_SAVE)
		w->values[n->save] = len;
	if ((n->flags & UN_DDP) && w->collect) {
		uint32_t k = w->n_seen++;
		bool moved = w->moved && k < ULB_MAX_ITEMS && (w->moved & (1u << k));
		if (w->n_items < ULB_MAX_ITEMS) {
			struct ulb_reply_item *it = &w->items[w->n_items++];
			it->offset = w->pos;
			it->length = len;
			it->moved = moved;
		}
		/* reduced message: the data and its pad are in a Write chunk */
		if (moved)
			return true;
	}
	if (len > w->len - w->pos || xdr_align(len) > w->len - w->pos)
		return false;
	w->pos += xdr_align(len);
	return true;
}

static const struct ulb_arm *find_arm(const struct ulb_rules *r, const struct ulb_node *n,
				      uint32_t d)
{
	const struct ulb_arm *a = &r->arms[n->first];

	for (uint32_t i = 0; i < n->count; i++)
		if (a[i].value == d)
			return &a[i];
	return NULL;
}

static bool walk_array(struct ulb_walk *w, const struct ulb_node *n)
{
	if (!walk_has(w, 4))
		return false;
	uint32_t count = xdr_get32(w->msg + w->pos);
	w->pos += 4;
	if (count > n->max)
		return false;
	if ((n->flags & UN_MAX_VALUE) && count > w->values[n->max_value])
		return false;
	const struct ulb_node *e = &w->r->nodes[n->first];
	if ((e->flags & (UN_FIXED | UN_SAVE)) == UN_FIXED) {
		uint64_t bytes = (uint64_t)count * e->fixed_len;
		if (bytes > w->len - w->pos)
			return false;
		w->pos += (uint32_t)bytes;
		return true;
	}
	/* every element takes at least 4 bytes (the loader refuses empty ones) */
	if (count > (w->len - w->pos) / 4)
		return false;
	for (uint32_t i = 0; i < count; i++)
		if (!ulb_walk_node(w, n->first))
			return false;
	return true;
}

bool ulb_walk_node(struct ulb_walk *w, uint32_t ni)
{
	const struct ulb_node *n = &w->r->nodes[ni];

	/* the common case: a file handle, an fattr3, a verifier... in one step */
	if (n->flags & UN_FIXED) {
		if (!walk_has(w, n->fixed_len))
			return false;
		w->pos += n->fixed_len;
		return true;
	}
	switch (n->kind) {
	case UK_U32:
		if (!walk_has(w, 4))
			return false;
		if (n->flags & UN_SAVE)
			w->values[n->save] = xdr_get32(w->msg + w->pos);
		w->pos += 4;
		return true;
	case UK_U64:
		if (!walk_has(w, 8))
			return false;
		if (n->flags & UN_SAVE)
			w->values[n->save] = xdr_get64(w->msg + w->pos);
		w->pos += 8;
		return true;
	case UK_OPAQUE:
		return walk_opaque(w, n);
	case UK_STRUCT: {
		const uint32_t *k = &w->r->kids[n->first];
		for (uint32_t i = 0; i < n->count; i++)
			if (!ulb_walk_node(w, k[i]))
				return false;
		return true;
	}
	case UK_OPTIONAL: {
		if (!walk_has(w, 4))
			return false;
		uint32_t present = xdr_get32(w->msg + w->pos);
		w->pos += 4;
		if (present > 1)
			return false;
		return present == 0 || ulb_walk_node(w, n->first);
	}
	case UK_ARRAY:
		return walk_array(w, n);
	case UK_LIST:
		/* each turn consumes the 4-byte "more" flag at least */
		for (;;) {
			if (!walk_has(w, 4))
				return false;
			uint32_t more = xdr_get32(w->msg + w->pos);
			w->pos += 4;
			if (more == 0)
				return true;
			if (more != 1 || !ulb_walk_node(w, n->first))
				return false;
		}
	case UK_UNION: {
		if (!walk_has(w, 4))
			return false;
		uint32_t d = xdr_get32(w->msg + w->pos);
		w->pos += 4;
		if (n->flags & UN_SAVE)
			w->values[n->save] = d;
		const struct ulb_arm *a = find_arm(w->r, n, d);
		uint32_t arm = a ? a->node : n->dflt;
		return arm != ULB_NONE && ulb_walk_node(w, arm);
	}
	default: /* UK_VOID, UK_FIXED are UN_FIXED */
		return true;
	}
}

uint64_t ulb_bound_eval(const struct ulb_bound *b, const uint64_t *values, bool *estimate,
			bool *unbounded)
{
	uint64_t sum = b->base;

	if (b->estimate)
		*estimate = true;
	if (b->unbounded) {
		*unbounded = true;
		return UINT32_MAX;
	}
	for (int i = 0; i < ULB_MAX_VALUES; i++) {
		if (!b->coef[i])
			continue;
		/* a value the walk never met, or absurd: no bound */
		if (values[i] > UINT32_MAX) {
			*unbounded = true;
			return UINT32_MAX;
		}
		sum += (uint64_t)b->coef[i] * ((values[i] + 3) & ~(uint64_t)3);
	}
	if (sum > UINT32_MAX) {
		*unbounded = true;
		return UINT32_MAX;
	}
	return sum;
}

void ulb_expect_results(const struct ulb_proc *p, const uint64_t *values, struct ulb_call *call)
{
	for (uint8_t i = 0; i < p->n_expect && call->n_results < ULB_MAX_ITEMS; i++) {
		const struct ulb_expect *e = &p->expect[i];
		uint32_t max = e->max;
		if (e->value != ULB_NO_VALUE)
			max = values[e->value] <= UINT32_MAX ? (uint32_t)values[e->value]
							     : ULB_LEN_UNKNOWN;
		if (!e->string)
			call->result_opaque |= 1u << call->n_results;
		call->result_max[call->n_results++] = max;
	}
}

/* The reply bound when nothing better is known: the configured default. */
static void bound_default(struct ulb_call *call, const struct ulb_rules *rules)
{
	call->reply_max = rules->default_reply_max;
	call->reply_exact = false;
}

void ulb_set_reply_bound(struct ulb_call *call, const struct ulb_rules *rules, uint64_t body,
			 bool estimate, bool unbounded, uint32_t extra)
{
	uint64_t total = body + ULB_REPLY_HDR_MAX + extra;

	if (unbounded || total > UINT32_MAX) {
		bound_default(call, rules);
		return;
	}
	call->reply_max = (uint32_t)total;
	call->reply_exact = !estimate;
}

/* RPCSEC_GSS data integrity wrapping of a reply: the databody_integ opaque
 * length and sequence number, and a checksum of at most 400 bytes. */
#define GSS_INTEG_OVERHEAD (4u + 4u + 4u + 400u)

/*
 * RPCSEC_GSS credential (RFC 2203): version 1, gss_proc, seq_num, service,
 * handle. False when the credential body is too short to say.
 */
static bool parse_gss_cred(const uint8_t *msg, const struct rpc_call_hdr *h, struct ulb_call *call)
{
	if (h->cred_len < 16 || xdr_get32(msg + h->cred_off) != 1)
		return false;
	call->gss_proc = (uint8_t)(xdr_get32(msg + h->cred_off + 4) & 0xff);
	call->gss_service = (uint8_t)(xdr_get32(msg + h->cred_off + 12) & 0xff);
	return true;
}

static void call_init(struct ulb_call *call, const struct ulb_rules *rules)
{
	/* the item arrays are valid only up to their counts: not cleared */
	memset(call, 0, offsetof(struct ulb_call, args));
	call->reply_max = rules->default_reply_max;
	call->reply_exact = false;
	call->nfs4_mutates = false;
	call->advertises_sizes = false;
	call->minorversion = 0;
	call->nops = 0;
	call->stop_op = 0;
	call->has_sequence = false;
	call->destroys_session = false;
	call->binds_session = false;
	call->rules = rules;
	call->rule = NULL;
}

static enum ulb_status call_garbage(struct ulb_call *call)
{
	call->status = ULB_GARBAGE_ARGS;
	call->n_args = 0;
	call->n_results = 0;
	call->result_opaque = 0;
	ulb_counters.garbage_args++;
	return call->status;
}

enum ulb_status ulb_parse_call(const struct ulb_rules *rules, const struct ulb_sessions *sessions,
			       const uint8_t *msg, size_t len, struct ulb_call *call)
{
	struct rpc_call_hdr h;
	struct ulb_reply_item items[ULB_MAX_ITEMS];

	call_init(call, rules);
	ulb_counters.calls++;
	enum rpc_hdr_status hs = rpc_call_hdr_parse(msg, len, &h);
	if (len >= 4)
		call->xid = xdr_get32(msg);
	if (hs != RPC_HDR_OK) {
		call->status = ULB_BAD_HEADER;
		call->hdr_status = (uint8_t)hs;
		if (hs != RPC_HDR_SHORT && hs != RPC_HDR_NOT_CALL) {
			call->prog = h.prog;
			call->vers = h.vers;
			call->proc = h.proc;
		}
		ulb_counters.bad_headers++;
		return call->status;
	}
	call->prog = h.prog;
	call->vers = h.vers;
	call->proc = h.proc;
	call->flavor = h.cred_flavor;
	call->args_offset = h.args_off;

	struct ulb_walk w = {
		.r = rules,
		.msg = msg,
		.len = (uint32_t)(len > UINT32_MAX ? UINT32_MAX : len),
		.pos = h.args_off,
		.collect = true,
		.items = items,
	};
	ulb_walk_reset_values(&w);
	uint32_t extra = 0;
	if (h.cred_flavor == RPC_AUTH_GSS) {
		/* Only RPCSEC_GSS data with service "none" may use DDP: integrity
		 * and privacy make the body an opaque the gateway cannot split. */
		if (!parse_gss_cred(msg, &h, call) || call->gss_proc != RPC_GSS_PROC_DATA ||
		    call->gss_service == RPC_GSS_SVC_PRIVACY)
			return call->status; /* default bound, estimate */
		if (call->gss_service == RPC_GSS_SVC_INTEGRITY) {
			/* databody_integ: opaque length, seq_num, then the arguments,
			 * walked only for the reply bound */
			if (!walk_has(&w, 8))
				return call_garbage(call);
			uint32_t blen = xdr_get32(msg + w.pos);
			if (blen < 4 || blen > w.len - w.pos - 4)
				return call_garbage(call);
			w.len = w.pos + 4 + blen;
			w.pos += 8;
			w.collect = false;
			extra = GSS_INTEG_OVERHEAD;
		}
	}

	const struct ulb_version *v = ulb_find_version(rules, h.prog, h.vers);
	const struct ulb_proc *p = v && h.proc < v->n_procs ? &v->procs[h.proc] : NULL;
	if (!p || !p->present) {
		ulb_counters.unknown_programs++;
		if (v && v->has_default) {
			bool estimate = false, unbounded = false;
			uint64_t body = ulb_bound_eval(&v->dflt, w.values, &estimate, &unbounded);
			ulb_set_reply_bound(call, rules, body, estimate, unbounded, extra);
		}
		return call->status;
	}
	call->known = true;
	call->rule = p;
	if (p->compound) {
		ulb_nfs4_parse_call(v, sessions, &w, extra, call);
		if (call->status == ULB_GARBAGE_ARGS)
			ulb_counters.garbage_args++;
		return call->status;
	}

	if (p->args != ULB_NONE && !ulb_walk_node(&w, p->args))
		return call_garbage(call);
	for (uint8_t i = 0; i < w.n_items; i++) {
		call->args[i].offset = items[i].offset;
		call->args[i].length = items[i].length;
	}
	call->n_args = w.n_items;
	if (w.collect)
		ulb_expect_results(p, w.values, call);
	/* NFSv3 FSINFO3resok holds rtmax, wtmax... (ulb_clamp_reply) */
	call->advertises_sizes =
		h.prog == 100003 && h.vers == 3 && h.proc == 19 && ulb_plain_body(call);

	bool estimate = false, unbounded = false;
	uint64_t body = ulb_bound_eval(&p->reply, w.values, &estimate, &unbounded);
	ulb_set_reply_bound(call, rules, body, estimate, unbounded, extra);
	return call->status;
}

/* Bit n: procedure n of that program and version only reads. */
static uint32_t read_only_procs(uint32_t prog, uint32_t vers)
{
	if (prog == 100003 && vers == 2) /* NULL GETATTR ROOT LOOKUP READLINK READ READDIR STATFS */
		return 1u << 0 | 1u << 1 | 1u << 3 | 1u << 4 | 1u << 5 | 1u << 6 | 1u << 16 |
		       1u << 17;
	if (prog == 100003 && vers == 3) /* NULL GETATTR LOOKUP ACCESS READLINK READ READDIR(PLUS)
					    FSSTAT FSINFO PATHCONF COMMIT */
		return 1u << 0 | 1u << 1 | 1u << 3 | 1u << 4 | 1u << 5 | 1u << 6 | 1u << 16 |
		       1u << 17 | 1u << 18 | 1u << 19 | 1u << 20 | 1u << 21;
	if (prog == 100227) /* NFSACL: NULL, GETACL */
		return 1u << 0 | 1u << 1;
	return 0;
}

bool ulb_call_read_only(const struct ulb_call *call)
{
	if (call->status != ULB_OK && call->status != ULB_DDP_STOPPED)
		return false;
	/*
	 * RPCSEC_GSS privacy hides the procedure's arguments (an encrypted
	 * COMPOUND walks as one with no operation), a credential too short
	 * to say leaves them unwalked too, and a context call (INIT,
	 * CONTINUE_INIT, DESTROY) changes the server's state whatever its
	 * procedure number says.
	 */
	if (call->flavor == RPC_AUTH_GSS &&
	    (call->gss_proc != RPC_GSS_PROC_DATA ||
	     (call->gss_service != RPC_GSS_SVC_NONE && call->gss_service != RPC_GSS_SVC_INTEGRITY)))
		return false;
	if (call->prog == 100003 && call->vers == 4)
		return call->proc == 0 || (call->proc == 1 && !call->nfs4_mutates);
	return call->proc < 32 && (read_only_procs(call->prog, call->vers) >> call->proc & 1u);
}

bool ulb_call_safe_twice(const struct ulb_call *call)
{
	if (call->flavor == RPC_AUTH_GSS)
		return false;
	if (call->prog == 100003 && call->vers == 4 && call->minorversion >= 1 &&
	    call->has_sequence)
		return true;
	return ulb_call_read_only(call);
}

bool ulb_call_keeps_xid(const struct ulb_call *call)
{
	return call->flavor == RPC_AUTH_GSS;
}

enum ulb_reply_status ulb_parse_reply(const struct ulb_call *call, struct ulb_sessions *sessions,
				      const uint8_t *msg, size_t len, uint32_t moved,
				      struct ulb_reply *reply)
{
	struct rpc_reply_hdr h;

	memset(reply, 0, offsetof(struct ulb_reply, items));
	ulb_counters.replies++;
	if (!rpc_reply_hdr_parse(msg, len, &h)) {
		ulb_counters.garbage_replies++;
		return reply->status = ULB_REPLY_GARBAGE;
	}
	reply->xid = h.xid;
	reply->reply_stat = h.reply_stat;
	reply->stat = h.stat;
	reply->results_offset = h.results_off;
	if (h.reply_stat != RPC_MSG_ACCEPTED || h.stat != RPC_ACC_SUCCESS || !call->rule ||
	    (call->status != ULB_OK && call->status != ULB_DDP_STOPPED) ||
	    (call->flavor == RPC_AUTH_GSS &&
	     (call->gss_proc != RPC_GSS_PROC_DATA || call->gss_service != RPC_GSS_SVC_NONE)))
		return reply->status = ULB_REPLY_NO_RESULTS;

	struct ulb_walk w = {
		.r = call->rules,
		.msg = msg,
		.len = (uint32_t)(len > UINT32_MAX ? UINT32_MAX : len),
		.pos = h.results_off,
		.collect = true,
		.moved = moved,
		.items = reply->items,
	};
	ulb_walk_reset_values(&w);
	const struct ulb_proc *p = call->rule;
	if (p->compound) {
		const struct ulb_version *v = ulb_find_version(call->rules, call->prog, call->vers);
		ulb_nfs4_parse_reply(v, call, sessions, &w, reply);
	} else if (p->results == ULB_NONE) {
		reply->status = ULB_REPLY_NO_RESULTS;
	} else if (!ulb_walk_node(&w, p->results)) {
		reply->status = ULB_REPLY_GARBAGE;
	}
	reply->n_items = w.n_items;
	reply->n_seen = w.n_seen;
	if (reply->status == ULB_REPLY_GARBAGE) {
		ulb_counters.garbage_replies++;
		reply->n_items = 0;
	} else if (reply->status == ULB_REPLY_STOPPED) {
		ulb_counters.replies_stopped++;
	}
	return reply->status;
}
