/* SPDX-License-Identifier: MIT */
#include "gateway/nlm_xdr.h"

#include <errno.h>
#include <string.h>

#include <rpc/types.h>
#include <rpc/xdr.h>

enum nlm_args_kind nlm_args_kind(uint32_t proc)
{
	switch (proc) {
	case NLMPROC_TEST:
	case NLMPROC_TEST_MSG:
	case NLMPROC_GRANTED:
	case NLMPROC_GRANTED_MSG:
		return NLM_ARGS_TEST;
	case NLMPROC_LOCK:
	case NLMPROC_LOCK_MSG:
	case NLMPROC_NM_LOCK:
		return NLM_ARGS_LOCK;
	case NLMPROC_CANCEL:
	case NLMPROC_CANCEL_MSG:
		return NLM_ARGS_CANCEL;
	case NLMPROC_UNLOCK:
	case NLMPROC_UNLOCK_MSG:
		return NLM_ARGS_UNLOCK;
	default:
		return NLM_ARGS_NONE;
	}
}

static bool vers_ok(uint32_t vers)
{
	return vers == 1 || vers == 3 || vers == 4;
}

/* ---- decoding: views into the buffer --------------------------------------- */

/*
 * A netobj or string of at most @max bytes, as a view into the buffer
 * (x_public holds its start) rather than a copy as xdr_bytes would make.
 * Not XDR_INLINE: libtirpc's memory stream refuses it on a buffer that is
 * not 4-byte aligned, and a datagram's arguments need not be. xdr_setpos()
 * checks that the bytes and their padding are there.
 */
static bool get_view(XDR *x, struct nlm_bytes *b, uint32_t max)
{
	u_int len, pos;

	if (!xdr_u_int(x, &len) || len > max)
		return false;
	pos = xdr_getpos(x);
	b->len = len;
	b->p = (const uint8_t *)x->x_public + pos;
	return xdr_setpos(x, pos + ((len + 3u) & ~3u));
}

/* xdr_bool takes any non-zero word as TRUE; a peer's 2 is garbage here. */
static bool get_bool(XDR *x, bool *v)
{
	u_int w;

	if (!xdr_u_int(x, &w) || w > 1)
		return false;
	*v = w == 1;
	return true;
}

static bool get_int(XDR *x, int32_t *v)
{
	return xdr_int32_t(x, v);
}

/* A v4 offset or length is 64 bits; v1 and v3 carry 32. */
static bool get_range_word(XDR *x, uint32_t vers, uint64_t *v)
{
	u_int w;

	if (vers == 4)
		return xdr_u_int64_t(x, v);
	if (!xdr_u_int(x, &w))
		return false;
	*v = w;
	return true;
}

static bool get_lock(XDR *x, uint32_t vers, struct nlm_lock *l)
{
	uint32_t fhmax = vers == 4 ? NLM4_FHSIZE : NLM3_FHSIZE;

	if (!get_view(x, &l->caller, NLM_LM_MAXSTRLEN) || !get_view(x, &l->fh, fhmax) ||
	    !get_view(x, &l->oh, NLM_MAXNETOBJ))
		return false;
	l->svid_off = xdr_getpos(x);
	return get_int(x, &l->svid) && get_range_word(x, vers, &l->offset) &&
	       get_range_word(x, vers, &l->len);
}

static bool get_args(XDR *x, struct nlm_args *a)
{
	if (!get_view(x, &a->cookie, NLM_MAXNETOBJ))
		return false;
	switch (a->kind) {
	case NLM_ARGS_TEST:
		return get_bool(x, &a->exclusive) && get_lock(x, a->vers, &a->lock);
	case NLM_ARGS_LOCK:
		return get_bool(x, &a->block) && get_bool(x, &a->exclusive) &&
		       get_lock(x, a->vers, &a->lock) && get_bool(x, &a->reclaim) &&
		       get_int(x, &a->state);
	case NLM_ARGS_CANCEL:
		return get_bool(x, &a->block) && get_bool(x, &a->exclusive) &&
		       get_lock(x, a->vers, &a->lock);
	case NLM_ARGS_UNLOCK:
		return get_lock(x, a->vers, &a->lock);
	case NLM_ARGS_NONE:
		break;
	}
	return false;
}

/* Run @fn over @buf; the arguments must end exactly at the buffer's end. */
static int decode_all(const uint8_t *buf, size_t len, bool (*fn)(XDR *, void *), void *arg)
{
	XDR x;
	bool ok;

	if (len > UINT32_MAX || len % 4)
		return -EBADMSG;
	xdrmem_create(&x, (char *)buf, (u_int)len, XDR_DECODE);
	x.x_public = (char *)buf;
	ok = fn(&x, arg) && xdr_getpos(&x) == len;
	xdr_destroy(&x);
	return ok ? 0 : -EBADMSG;
}

static bool args_fn(XDR *x, void *a)
{
	return get_args(x, a);
}

int nlm_decode_args(uint32_t vers, uint32_t proc, const uint8_t *buf, size_t len,
		    struct nlm_args *a)
{
	memset(a, 0, sizeof(*a));
	a->vers = vers;
	a->kind = nlm_args_kind(proc);
	if (!vers_ok(vers) || a->kind == NLM_ARGS_NONE)
		return -EPROTONOSUPPORT;
	return decode_all(buf, len, args_fn, a);
}

struct testres_ctx {
	uint32_t vers;
	struct nlm_testres *r;
};

static bool testres_fn(XDR *x, void *arg)
{
	struct testres_ctx *c = arg;
	struct nlm_holder *h = &c->r->holder;

	if (!get_view(x, &c->r->cookie, NLM_MAXNETOBJ) || !xdr_u_int(x, &c->r->stat))
		return false;
	if (c->r->stat != NLM_DENIED)
		return true;
	return get_bool(x, &h->exclusive) && get_int(x, &h->svid) &&
	       get_view(x, &h->oh, NLM_MAXNETOBJ) && get_range_word(x, c->vers, &h->offset) &&
	       get_range_word(x, c->vers, &h->len);
}

int nlm_decode_testres(uint32_t vers, const uint8_t *buf, size_t len, struct nlm_testres *r)
{
	struct testres_ctx c = { vers, r };

	memset(r, 0, sizeof(*r));
	if (!vers_ok(vers))
		return -EPROTONOSUPPORT;
	return decode_all(buf, len, testres_fn, &c);
}

static bool res_fn(XDR *x, void *arg)
{
	struct nlm_res *r = arg;

	return get_view(x, &r->cookie, NLM_MAXNETOBJ) && xdr_u_int(x, &r->stat);
}

int nlm_decode_res(const uint8_t *buf, size_t len, struct nlm_res *r)
{
	memset(r, 0, sizeof(*r));
	return decode_all(buf, len, res_fn, r);
}

void nlm_put_svid(uint8_t *buf, const struct nlm_lock *l, int32_t svid)
{
	uint32_t v = (uint32_t)svid;

	buf[l->svid_off] = (uint8_t)(v >> 24);
	buf[l->svid_off + 1] = (uint8_t)(v >> 16);
	buf[l->svid_off + 2] = (uint8_t)(v >> 8);
	buf[l->svid_off + 3] = (uint8_t)v;
}

/* ---- encoding ---------------------------------------------------------------- */

static bool put_view(XDR *x, const struct nlm_bytes *b)
{
	u_int len = b->len;

	/* xdr_opaque only reads the bytes when encoding. */
	return xdr_u_int(x, &len) && (len == 0 || xdr_opaque(x, (char *)(uintptr_t)b->p, len));
}

static bool put_bool(XDR *x, bool v)
{
	u_int w = v ? 1 : 0;

	return xdr_u_int(x, &w);
}

static bool put_range_word(XDR *x, uint32_t vers, uint64_t v)
{
	u_int w = (u_int)v;

	return vers == 4 ? xdr_u_int64_t(x, &v) : xdr_u_int(x, &w);
}

static bool put_lock(XDR *x, uint32_t vers, const struct nlm_lock *l)
{
	int32_t svid = l->svid;

	return put_view(x, &l->caller) && put_view(x, &l->fh) && put_view(x, &l->oh) &&
	       xdr_int32_t(x, &svid) && put_range_word(x, vers, l->offset) &&
	       put_range_word(x, vers, l->len);
}

static bool range_fits(uint32_t vers, uint64_t offset, uint64_t len)
{
	return vers == 4 || (offset <= UINT32_MAX && len <= UINT32_MAX);
}

static bool lock_fits(uint32_t vers, const struct nlm_lock *l)
{
	uint32_t fhmax = vers == 4 ? NLM4_FHSIZE : NLM3_FHSIZE;

	return l->caller.len <= NLM_LM_MAXSTRLEN && l->fh.len <= fhmax &&
	       l->oh.len <= NLM_MAXNETOBJ && range_fits(vers, l->offset, l->len);
}

static bool put_args(XDR *x, const struct nlm_args *a)
{
	int32_t state = a->state;

	if (!put_view(x, &a->cookie))
		return false;
	switch (a->kind) {
	case NLM_ARGS_TEST:
		return put_bool(x, a->exclusive) && put_lock(x, a->vers, &a->lock);
	case NLM_ARGS_LOCK:
		return put_bool(x, a->block) && put_bool(x, a->exclusive) &&
		       put_lock(x, a->vers, &a->lock) && put_bool(x, a->reclaim) &&
		       xdr_int32_t(x, &state);
	case NLM_ARGS_CANCEL:
		return put_bool(x, a->block) && put_bool(x, a->exclusive) &&
		       put_lock(x, a->vers, &a->lock);
	case NLM_ARGS_UNLOCK:
		return put_lock(x, a->vers, &a->lock);
	case NLM_ARGS_NONE:
		break;
	}
	return false;
}

static int encode_all(uint8_t *out, size_t cap, size_t *n, bool (*fn)(XDR *, const void *),
		      const void *arg)
{
	XDR x;
	bool ok;

	*n = 0;
	xdrmem_create(&x, (char *)out, (u_int)(cap > UINT32_MAX ? UINT32_MAX : cap), XDR_ENCODE);
	ok = fn(&x, arg);
	if (ok)
		*n = xdr_getpos(&x);
	xdr_destroy(&x);
	return ok ? 0 : -ENOSPC;
}

static bool put_args_fn(XDR *x, const void *a)
{
	return put_args(x, a);
}

int nlm_encode_args(const struct nlm_args *a, uint8_t *out, size_t cap, size_t *n)
{
	*n = 0;
	if (!vers_ok(a->vers) || a->kind == NLM_ARGS_NONE || a->cookie.len > NLM_MAXNETOBJ ||
	    !lock_fits(a->vers, &a->lock))
		return -EINVAL;
	return encode_all(out, cap, n, put_args_fn, a);
}

struct testres_out {
	uint32_t vers;
	const struct nlm_testres *r;
};

static bool put_testres_fn(XDR *x, const void *arg)
{
	const struct testres_out *c = arg;
	const struct nlm_holder *h = &c->r->holder;
	u_int stat = c->r->stat;
	int32_t svid = h->svid;

	if (!put_view(x, &c->r->cookie) || !xdr_u_int(x, &stat))
		return false;
	if (stat != NLM_DENIED)
		return true;
	return put_bool(x, h->exclusive) && xdr_int32_t(x, &svid) && put_view(x, &h->oh) &&
	       put_range_word(x, c->vers, h->offset) && put_range_word(x, c->vers, h->len);
}

int nlm_encode_testres(uint32_t vers, const struct nlm_testres *r, uint8_t *out, size_t cap,
		       size_t *n)
{
	struct testres_out c = { vers, r };

	*n = 0;
	if (!vers_ok(vers) || r->cookie.len > NLM_MAXNETOBJ ||
	    (r->stat == NLM_DENIED && (r->holder.oh.len > NLM_MAXNETOBJ ||
				       !range_fits(vers, r->holder.offset, r->holder.len))))
		return -EINVAL;
	return encode_all(out, cap, n, put_testres_fn, &c);
}
