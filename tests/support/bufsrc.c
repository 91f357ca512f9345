#include "support/bufsrc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void bufsrc_free(struct gw_buf *b)
{
	struct gwt_bufsrc *s = b->pool;

	if (b->refs != 0)
		s->bad_frees++;
	s->outstanding--;
	s->frees++;
	free(b->base);
	free(b);
}

void gwt_bufsrc_init(struct gwt_bufsrc *s)
{
	memset(s, 0, sizeof(*s));
	s->src.alloc = gwt_bufsrc_alloc;
}

struct gw_buf *gwt_bufsrc_alloc(struct gw_buf_source *src, size_t min_size)
{
	struct gwt_bufsrc *s = (struct gwt_bufsrc *)src;
	struct gw_buf *b;

	if (s->limit != 0 && s->outstanding >= s->limit) {
		s->failed++;
		return NULL;
	}
	if (s->big != 0 && min_size > s->small && min_size <= s->big)
		min_size = s->big;
	b = calloc(1, sizeof(*b));
	if (!b)
		abort();
	b->base = malloc(min_size);
	if (!b->base)
		abort();
	b->size = (uint32_t)min_size;
	b->refs = 1;
	b->free_fn = bufsrc_free;
	b->pool = s;
	s->outstanding++;
	s->allocs++;
	if (min_size > s->largest)
		s->largest = min_size;
	return b;
}

int gwt_bufsrc_all_back(const struct gwt_bufsrc *s)
{
	return s->outstanding == 0 && s->bad_frees == 0 ? 0 : -1;
}
