#include "support/rdmahdr.h"

#include "common/xdr.h"

void gwt_put_words(uint8_t *b, const uint32_t *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		xdr_put32(b + 4 * i, w[i]);
}
