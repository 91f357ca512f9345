/* SPDX-License-Identifier: MIT */
/*
 * gateway/stats/stats_copy.c - the engines' figures copied out, to render from
 * (gateway/stats/stats_copy.h).
 */
#include "gateway/stats/stats_copy.h"

#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/stats/stats_render.h"

#define container_of(ptr, type, field) stats_container_of(ptr, type, field)
#define COPY_ALIGN		       alignof(max_align_t)

/* The smallest block: a gateway of a few routes and a hundred sessions fits in one. */
enum { COPY_BLOCK_MIN = 256 * 1024 };

struct copy_block {
	struct copy_block *next;
	size_t size; /* of data[] */
	size_t used;
	alignas(max_align_t) unsigned char data[];
};

enum copy_kind { COPY_ROUTE, COPY_SESSION, COPY_DEVICE };

/* One call of the walk, in the order it came. */
struct copy_rec {
	struct copy_rec *next;
	enum copy_kind kind;
	union {
		struct gw_stats_route route;
		struct gw_stats_session session;
		struct gw_stats_device device;
	} u;
};

/* The visitor the walk is given. */
struct copier {
	struct gw_stats_visitor visitor;
	struct gw_stats_copy *c;
	bool session_counters;
};

void gw_stats_copy_init(struct gw_stats_copy *c)
{
	memset(c, 0, sizeof(*c));
}

/*
 * A block of at least @need bytes, and at least as large as the copy so far:
 * a walk that outgrows its estimate adds a few blocks, not one per session.
 * @touch: write its pages now, so that the walk does not fault them in.
 */
static bool copy_block_add(struct gw_stats_copy *c, size_t need, bool touch)
{
	size_t size = need > COPY_BLOCK_MIN ? need : COPY_BLOCK_MIN;
	struct copy_block *b;

	if (size < c->bytes)
		size = c->bytes;
	if (size > SIZE_MAX / 2 - sizeof(*b))
		return false;
	b = malloc(sizeof(*b) + size);
	if (!b)
		return false;
	if (touch)
		memset(b->data, 0, size);
	b->next = c->blocks;
	b->size = size;
	b->used = 0;
	c->blocks = b;
	return true;
}

static size_t round_up(size_t n)
{
	return (n + COPY_ALIGN - 1) & ~(COPY_ALIGN - 1);
}

/* @n bytes of the copy, aligned for any type; NULL (and the copy failed) when memory ran out. */
static void *copy_alloc(struct gw_stats_copy *c, size_t n)
{
	struct copy_block *b = c->blocks;
	void *p;

	n = round_up(n);
	if (!b || b->size - b->used < n) {
		if (!copy_block_add(c, n, false)) {
			c->failed = true;
			return NULL;
		}
		b = c->blocks;
	}
	p = b->data + b->used;
	b->used += n;
	c->bytes += n;
	return p;
}

static void *copy_mem(struct gw_stats_copy *c, const void *src, size_t n)
{
	void *d = copy_alloc(c, n);

	if (d)
		memcpy(d, src, n);
	return d;
}

/* NULL stays NULL: the renderers tell an absent text from an empty one. */
static const char *copy_str(struct gw_stats_copy *c, const char *s)
{
	return s ? copy_mem(c, s, strlen(s) + 1) : NULL;
}

/* The counters and their table by procedure, whose slots keep their places. */
static const struct gw_counters *copy_counters(struct gw_stats_copy *c,
					       const struct gw_counters *src)
{
	struct gw_counters *d;

	if (!src || !(d = copy_mem(c, src, sizeof(*src))))
		return NULL;
	if (src->procs_big)
		d->procs_big =
			copy_mem(c, src->procs_big, src->procs_cap * sizeof(*src->procs_big));
	return d;
}

static const struct gw_stats_shared *copy_shared(struct gw_stats_copy *c,
						 const struct gw_stats_shared *src)
{
	struct gw_stats_shared *d = copy_mem(c, src, sizeof(*src));

	for (uint32_t i = 0; d && i < d->nchannels && i < GW_STATS_MAX_CHANNELS; i++)
		d->channels[i].state = copy_str(c, src->channels[i].state);
	return d;
}

/* What copy_str(), copy_counters() and copy_shared() take of the blocks. */
static size_t str_bytes(const char *s)
{
	return s ? round_up(strlen(s) + 1) : 0;
}

static size_t counters_bytes(const struct gw_counters *c)
{
	if (!c)
		return 0;
	return round_up(sizeof(*c)) +
	       (c->procs_big ? round_up(c->procs_cap * sizeof(*c->procs_big)) : 0);
}

static size_t shared_bytes(const struct gw_stats_shared *sh)
{
	size_t n = round_up(sizeof(*sh));

	for (uint32_t i = 0; i < sh->nchannels && i < GW_STATS_MAX_CHANNELS; i++)
		n += str_bytes(sh->channels[i].state);
	return n;
}

/*
 * A record of @need bytes, all its parts: in the room prepared before the
 * walk, or, on a take's second walk, in a new block. On the first walk a
 * record that finds no room is only measured: the walk goes on without
 * copying (to learn the size of the copy, quickly) and the take walks again
 * into room prepared for that size, rather than fault in new memory with
 * the workers parked. NULL when the record is not copied.
 */
static struct copy_rec *copy_rec_new(struct gw_stats_copy *c, enum copy_kind kind, size_t need)
{
	struct copy_rec *rec;

	need += round_up(sizeof(*rec));
	c->wanted += need;
	if (c->failed || c->outgrown)
		return NULL;
	if (!c->grow && c->blocks->size - c->blocks->used < need) {
		c->outgrown = true;
		return NULL;
	}
	rec = copy_alloc(c, sizeof(*rec));
	if (rec) {
		rec->next = NULL;
		rec->kind = kind;
	}
	return rec;
}

static void copy_rec_link(struct gw_stats_copy *c, struct copy_rec *rec)
{
	if (c->failed)
		return;
	if (c->last)
		c->last->next = rec;
	else
		c->first = rec;
	c->last = rec;
}

static void copy_route(struct gw_stats_visitor *v, const struct gw_stats_route *r)
{
	struct gw_stats_copy *c = container_of(v, struct copier, visitor)->c;
	size_t need = str_bytes(r->name) + str_bytes(r->mode) + str_bytes(r->listen) +
		      str_bytes(r->upstream) + counters_bytes(r->totals);
	struct copy_rec *rec;
	struct gw_stats_route *d;

	if (r->proc_upstream_us)
		need += round_up(GW_PROC_SLOTS * sizeof(*r->proc_upstream_us));
	if (r->shared)
		need += shared_bytes(r->shared);
	if (r->nlm)
		need += round_up(sizeof(*r->nlm));
	if (r->qos)
		need += round_up(sizeof(*r->qos));
	rec = copy_rec_new(c, COPY_ROUTE, need);

	if (!rec)
		return;
	d = &rec->u.route;
	*d = *r;
	d->name = copy_str(c, r->name);
	d->mode = copy_str(c, r->mode);
	d->listen = copy_str(c, r->listen);
	d->upstream = copy_str(c, r->upstream);
	d->totals = copy_counters(c, r->totals);
	if (r->proc_upstream_us)
		d->proc_upstream_us = copy_mem(c, r->proc_upstream_us,
					       GW_PROC_SLOTS * sizeof(*r->proc_upstream_us));
	if (r->shared)
		d->shared = copy_shared(c, r->shared);
	if (r->nlm)
		d->nlm = copy_mem(c, r->nlm, sizeof(*r->nlm));
	if (r->qos)
		d->qos = copy_mem(c, r->qos, sizeof(*r->qos));
	copy_rec_link(c, rec);
}

static void copy_session(struct gw_stats_visitor *v, const struct gw_stats_session *s)
{
	struct copier *cp = container_of(v, struct copier, visitor);
	struct gw_stats_copy *c = cp->c;
	size_t need = str_bytes(s->client) + str_bytes(s->upstream) + str_bytes(s->state) +
		      (cp->session_counters ? counters_bytes(s->counters) : 0);
	struct copy_rec *rec = copy_rec_new(c, COPY_SESSION, need);
	struct gw_stats_session *d;

	if (!rec)
		return;
	d = &rec->u.session;
	*d = *s;
	d->client = copy_str(c, s->client);
	d->upstream = copy_str(c, s->upstream);
	d->state = copy_str(c, s->state);
	d->counters = cp->session_counters ? copy_counters(c, s->counters) : c->zero;
	copy_rec_link(c, rec);
}

static void copy_device(struct gw_stats_visitor *v, const struct gw_stats_device *dev)
{
	struct gw_stats_copy *c = container_of(v, struct copier, visitor)->c;
	struct copy_rec *rec = copy_rec_new(c, COPY_DEVICE, str_bytes(dev->name));

	if (!rec)
		return;
	rec->u.device = *dev;
	rec->u.device.name = copy_str(c, dev->name);
	copy_rec_link(c, rec);
}

bool gw_stats_copy_take(struct gw_stats_copy *c, gw_stats_snapshot_fn snapshot, void *engine,
			bool session_counters)
{
	struct copier cp = {
		.visitor = { .route = copy_route, .session = copy_session, .device = copy_device },
		.c = c,
		.session_counters = session_counters,
	};
	size_t *last = &c->last_bytes[session_counters];
	size_t room = *last + *last / 4;

	for (int walk = 0; walk < 2; walk++) {
		gw_stats_copy_clear(c);
		/*
		 * Room for a walk like the last one of its kind and a quarter
		 * more, its pages written now, while the workers still run.
		 * Out of memory here, nobody is parked.
		 */
		if (!copy_block_add(c, room, true))
			return false;
		if (!session_counters) {
			struct gw_counters *zero = copy_alloc(c, sizeof(*zero));
			if (!zero)
				goto fail;
			memset(zero, 0, sizeof(*zero));
			c->zero = zero;
		}
		c->wanted = c->bytes;
		c->grow = walk > 0;
		snapshot(engine, &cp.visitor);
		if (c->failed)
			goto fail;
		if (!c->outgrown) {
			*last = c->bytes;
			return true;
		}
		room = c->wanted + c->wanted / 4;
	}
fail:
	gw_stats_copy_clear(c);
	return false;
}

void gw_stats_copy_replay(void *arg, struct gw_stats_visitor *v)
{
	const struct gw_stats_copy *c = arg;

	for (const struct copy_rec *rec = c->first; rec; rec = rec->next) {
		switch (rec->kind) {
		case COPY_ROUTE:
			v->route(v, &rec->u.route);
			break;
		case COPY_SESSION:
			v->session(v, &rec->u.session);
			break;
		case COPY_DEVICE:
			v->device(v, &rec->u.device);
			break;
		}
	}
}

void gw_stats_copy_clear(struct gw_stats_copy *c)
{
	struct copy_block *b;

	while ((b = c->blocks)) {
		c->blocks = b->next;
		free(b);
	}
	c->first = c->last = NULL;
	c->zero = NULL;
	c->bytes = c->wanted = 0;
	c->failed = c->outgrown = c->grow = false;
}
