/*
 * RPC record streams (RFC 5531 record marking) for the tests of the code that
 * reads them: a stream is built in memory, record by record, with payloads of
 * a known pattern, so that a test can write it in any chunks and check what
 * comes out byte by byte.
 */
#ifndef GW_TESTS_SUPPORT_RECORD_H
#define GW_TESTS_SUPPORT_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A stream under construction; zeroed to start, its data free()d by the test. */
struct gwt_stream {
	uint8_t *data;
	size_t len;
	size_t cap;
};

/* Appends @n bytes of @p (it aborts when memory runs out: a test cannot go on). */
void gwt_stream_put(struct gwt_stream *s, const void *p, size_t n);

/* Appends the mark of a fragment of @len bytes, the record's last when @last. */
void gwt_stream_mark(struct gwt_stream *s, uint32_t len, bool last);

/* Payload byte @i of record @r: recognisable, and different from record to record. */
uint8_t gwt_pattern(unsigned int r, size_t i);

/* @len bytes of record @r's payload (gwt_pattern(@r, 0...)) into @p. */
void gwt_pattern_fill(uint8_t *p, unsigned int r, size_t len);

/*
 * Appends record @r of @len bytes of gwt_pattern(), cut into fragments of at
 * most @frag bytes (0: one fragment).
 */
void gwt_stream_record(struct gwt_stream *s, unsigned int r, size_t len, size_t frag);

#endif
