/* SPDX-License-Identifier: MIT */
#include "gateway/side/nlm/nlm_xdr.h"

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
	case NLMPROC_SHARE:
	case NLMPROC_UNSHARE:
		return NLM_ARGS_SHARE;
	default:
		return NLM_ARGS_NONE;
	}
}

static bool vers_ok(uint32_t vers)
{
	return vers == 1 || vers == 3 || vers == 4;
}

/*
 * One routine per XDR type serves both directions, as libtirpc's own xdr_*
 * routines do (x->x_op says which). Only what differs is split: a decoded
 * netobj is a view into the message, an encoded one is copied from its view.
 * The routines take non-const pointers, like every XDR routine; encoding
 * only reads them.
 */

/*
 * A netobj or string of at most @max bytes. Decoding makes a view into the
 * buffer (x_public holds its start) rather than a copy as xdr_bytes would.
 * Not XDR_INLINE: libtirpc's memory stream refuses it on a buffer that is
 * not 4-byte aligned, and a datagram's arguments need not be. xdr_setpos()
 * checks that the bytes and their padding are there. Encoding trusts @b's
 * length: the callers checked it (lock_fits()).
 */
static bool xdr_view(XDR *x, struct nlm_bytes *b, uint32_t max)
{
	u_int len = b->len, pos;

	if (x->x_op == XDR_ENCODE)
		/* xdr_opaque only reads the bytes when encoding. */
		return xdr_u_int(x, &len) &&
		       (len == 0 || xdr_opaque(x, (char *)(uintptr_t)b->p, len));
	if (!xdr_u_int(x, &len) || len > max)
		return false;
	pos = xdr_getpos(x);
	b->len = len;
	b->p = (const uint8_t *)x->x_public + pos;
	return xdr_setpos(x, pos + ((len + 3u) & ~3u));
}

/* xdr_bool takes any non-zero word as TRUE; a peer's 2 is garbage here. */
static bool xdr_flag(XDR *x, bool *v)
{
	u_int w = *v ? 1 : 0;

	if (!xdr_u_int(x, &w) || w > 1)
		return false;
	*v = w == 1;
	return true;
}

/* A v4 offset or length is 64 bits; v1 and v3 carry 32 (lock_fits() checked). */
static bool xdr_range_word(XDR *x, uint32_t vers, uint64_t *v)
{
	u_int w = (u_int)*v;

	if (vers == 4)
		return xdr_u_int64_t(x, v);
	if (!xdr_u_int(x, &w))
		return false;
	*v = w;
	return true;
}

static bool xdr_lock(XDR *x, uint32_t vers, struct nlm_lock *l)
{
	uint32_t fhmax = vers == 4 ? NLM4_FHSIZE : NLM3_FHSIZE;

	if (!xdr_view(x, &l->caller, NLM_LM_MAXSTRLEN) || !xdr_view(x, &l->fh, fhmax) ||
	    !xdr_view(x, &l->oh, NLM_MAXNETOBJ))
		return false;
	if (x->x_op == XDR_DECODE)
		l->svid_off = xdr_getpos(x);
	return xdr_int32_t(x, &l->svid) && xdr_range_word(x, vers, &l->offset) &&
	       xdr_range_word(x, vers, &l->len);
}

/*
 * nlm_share: caller_name, fh, oh, mode, access. The mode and access words
 * pass as they came (the server judges them, as it does a lock's range).
 */
static bool xdr_share(XDR *x, struct nlm_args *a)
{
	struct nlm_lock *l = &a->lock;
	uint32_t fhmax = a->vers == 4 ? NLM4_FHSIZE : NLM3_FHSIZE;

	return xdr_view(x, &l->caller, NLM_LM_MAXSTRLEN) && xdr_view(x, &l->fh, fhmax) &&
	       xdr_view(x, &l->oh, NLM_MAXNETOBJ) && xdr_u_int(x, &a->mode) &&
	       xdr_u_int(x, &a->access);
}

static bool xdr_nlm_args(XDR *x, void *arg)
{
	struct nlm_args *a = arg;

	if (!xdr_view(x, &a->cookie, NLM_MAXNETOBJ))
		return false;
	switch (a->kind) {
	case NLM_ARGS_TEST:
		return xdr_flag(x, &a->exclusive) && xdr_lock(x, a->vers, &a->lock);
	case NLM_ARGS_LOCK:
		return xdr_flag(x, &a->block) && xdr_flag(x, &a->exclusive) &&
		       xdr_lock(x, a->vers, &a->lock) && xdr_flag(x, &a->reclaim) &&
		       xdr_int32_t(x, &a->state);
	case NLM_ARGS_CANCEL:
		return xdr_flag(x, &a->block) && xdr_flag(x, &a->exclusive) &&
		       xdr_lock(x, a->vers, &a->lock);
	case NLM_ARGS_UNLOCK:
		return xdr_lock(x, a->vers, &a->lock);
	case NLM_ARGS_SHARE:
		return xdr_share(x, a) && xdr_flag(x, &a->reclaim);
	case NLM_ARGS_NONE:
		break;
	}
	return false;
}

struct testres_ctx {
	uint32_t vers;
	struct nlm_testres *r;
};

static bool xdr_nlm_testres(XDR *x, void *arg)
{
	struct testres_ctx *c = arg;
	struct nlm_holder *h = &c->r->holder;

	if (!xdr_view(x, &c->r->cookie, NLM_MAXNETOBJ) || !xdr_u_int(x, &c->r->stat))
		return false;
	if (c->r->stat != NLM_DENIED)
		return true;
	return xdr_flag(x, &h->exclusive) && xdr_int32_t(x, &h->svid) &&
	       xdr_view(x, &h->oh, NLM_MAXNETOBJ) && xdr_range_word(x, c->vers, &h->offset) &&
	       xdr_range_word(x, c->vers, &h->len);
}

static bool xdr_nlm_res(XDR *x, void *arg)
{
	struct nlm_res *r = arg;

	return xdr_view(x, &r->cookie, NLM_MAXNETOBJ) && xdr_u_int(x, &r->stat);
}

static bool xdr_nlm_shareres(XDR *x, void *arg)
{
	struct nlm_shareres *r = arg;

	return xdr_view(x, &r->cookie, NLM_MAXNETOBJ) && xdr_u_int(x, &r->stat) &&
	       xdr_int32_t(x, &r->sequence);
}

struct notify_ctx {
	struct nlm_bytes *name;
	int32_t *state;
};

static bool xdr_nlm_notify(XDR *x, void *arg)
{
	struct notify_ctx *c = arg;

	return xdr_view(x, c->name, NLM_LM_MAXSTRLEN) && xdr_int32_t(x, c->state);
}

/* ---- decoding ------------------------------------------------------------------ */

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

int nlm_decode_args(uint32_t vers, uint32_t proc, const uint8_t *buf, size_t len,
		    struct nlm_args *a)
{
	memset(a, 0, sizeof(*a));
	a->vers = vers;
	a->kind = nlm_args_kind(proc);
	if (!vers_ok(vers) || a->kind == NLM_ARGS_NONE || (a->kind == NLM_ARGS_SHARE && vers == 1))
		return -EPROTONOSUPPORT;
	return decode_all(buf, len, xdr_nlm_args, a);
}

int nlm_decode_testres(uint32_t vers, const uint8_t *buf, size_t len, struct nlm_testres *r)
{
	struct testres_ctx c = { vers, r };

	memset(r, 0, sizeof(*r));
	if (!vers_ok(vers))
		return -EPROTONOSUPPORT;
	return decode_all(buf, len, xdr_nlm_testres, &c);
}

int nlm_decode_res(const uint8_t *buf, size_t len, struct nlm_res *r)
{
	memset(r, 0, sizeof(*r));
	return decode_all(buf, len, xdr_nlm_res, r);
}

int nlm_decode_shareres(const uint8_t *buf, size_t len, struct nlm_shareres *r)
{
	memset(r, 0, sizeof(*r));
	return decode_all(buf, len, xdr_nlm_shareres, r);
}

int nlm_decode_notify(const uint8_t *buf, size_t len, struct nlm_bytes *name, int32_t *state)
{
	struct notify_ctx c = { name, state };

	*name = (struct nlm_bytes){ 0 };
	*state = 0;
	return decode_all(buf, len, xdr_nlm_notify, &c);
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

/* Run @fn into @out; @arg is only read (see the XDR routines above). */
static int encode_all(uint8_t *out, size_t cap, size_t *n, bool (*fn)(XDR *, void *), void *arg)
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

int nlm_encode_args(const struct nlm_args *a, uint8_t *out, size_t cap, size_t *n)
{
	*n = 0;
	if (!vers_ok(a->vers) || a->kind == NLM_ARGS_NONE || a->cookie.len > NLM_MAXNETOBJ ||
	    !lock_fits(a->vers, &a->lock) || (a->kind == NLM_ARGS_SHARE && a->vers == 1))
		return -EINVAL;
	return encode_all(out, cap, n, xdr_nlm_args, (void *)(uintptr_t)a);
}

int nlm_encode_testres(uint32_t vers, const struct nlm_testres *r, uint8_t *out, size_t cap,
		       size_t *n)
{
	struct testres_ctx c = { vers, (struct nlm_testres *)(uintptr_t)r };

	*n = 0;
	if (!vers_ok(vers) || r->cookie.len > NLM_MAXNETOBJ ||
	    (r->stat == NLM_DENIED && (r->holder.oh.len > NLM_MAXNETOBJ ||
				       !range_fits(vers, r->holder.offset, r->holder.len))))
		return -EINVAL;
	return encode_all(out, cap, n, xdr_nlm_testres, &c);
}

int nlm_encode_shareres(const struct nlm_shareres *r, uint8_t *out, size_t cap, size_t *n)
{
	*n = 0;
	if (r->cookie.len > NLM_MAXNETOBJ)
		return -EINVAL;
	return encode_all(out, cap, n, xdr_nlm_shareres, (void *)(uintptr_t)r);
}

int nsm_decode_stat_chge(const uint8_t *buf, size_t len, int32_t *state)
{
	char name[NSM_MAXSTRLEN + 1];
	char *p = name;
	int st = 0;
	XDR x;
	bool ok;

	xdrmem_create(&x, (char *)(uintptr_t)buf, (u_int)len, XDR_DECODE);
	ok = xdr_string(&x, &p, NSM_MAXSTRLEN) && xdr_int(&x, &st) && xdr_getpos(&x) == len;
	xdr_destroy(&x);
	*state = st;
	return ok ? 0 : -EINVAL;
}
