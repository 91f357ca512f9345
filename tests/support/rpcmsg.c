#include "support/rpcmsg.h"

#include <string.h>

#include "common/xdr.h"

size_t gwt_rpc_call_none(uint8_t *b, uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc)
{
	/* xid, CALL, RPC version 2, the procedure, AUTH_NONE<0> twice */
	const uint32_t w[] = { xid, 0, 2, prog, vers, proc, 0, 0, 0, 0 };

	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		xdr_put32(b + 4 * i, w[i]);
	return GWT_RPC_CALL_NONE_LEN;
}

/* An XDR opaque<> of @len bytes at @p into @b, padded with zeros: its length. */
static size_t put_opaque(uint8_t *b, const void *p, uint32_t len)
{
	xdr_put32(b, len);
	memset(b + 4, 0, xdr_align(len));
	memcpy(b + 4, p, len);
	return 4 + xdr_align(len);
}

size_t gwt_sm_notify_call(uint8_t *b, uint32_t xid, const char *mon_name, int32_t state)
{
	size_t n = gwt_rpc_call_none(b, xid, 100024, 1, 6);

	n += put_opaque(b + n, mon_name, (uint32_t)strlen(mon_name));
	xdr_put32(b + n, (uint32_t)state);
	return n + 4;
}

size_t gwt_nlm_res(uint8_t *b, const void *cookie, uint32_t cookie_len, uint32_t stat)
{
	size_t n = put_opaque(b, cookie, cookie_len);

	xdr_put32(b + n, stat);
	return n + 4;
}
