#include "support/record.h"

#include <stdlib.h>
#include <string.h>

#include "tcp/record.h"

void gwt_stream_put(struct gwt_stream *s, const void *p, size_t n)
{
	if (s->len + n > s->cap) {
		s->cap = (s->len + n) * 2 + 64;
		s->data = realloc(s->data, s->cap);
		if (!s->data)
			abort();
	}
	memcpy(s->data + s->len, p, n);
	s->len += n;
}

void gwt_stream_mark(struct gwt_stream *s, uint32_t len, bool last)
{
	uint8_t m[4];

	rm_encode_mark(m, len, last);
	gwt_stream_put(s, m, 4);
}

uint8_t gwt_pattern(unsigned int r, size_t i)
{
	return (uint8_t)(r * 131u + i * 7u + (i >> 8));
}

void gwt_pattern_fill(uint8_t *p, unsigned int r, size_t len)
{
	for (size_t i = 0; i < len; i++)
		p[i] = gwt_pattern(r, i);
}

void gwt_stream_record(struct gwt_stream *s, unsigned int r, size_t len, size_t frag)
{
	size_t done = 0;

	if (frag == 0)
		frag = len;
	do {
		size_t n = len - done < frag ? len - done : frag;

		gwt_stream_mark(s, (uint32_t)n, done + n == len);
		for (size_t i = 0; i < n; i++) {
			uint8_t b = gwt_pattern(r, done + i);

			gwt_stream_put(s, &b, 1);
		}
		done += n;
	} while (done < len);
}
