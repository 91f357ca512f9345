#include "support/rpcmsg.h"

#include "common/xdr.h"

size_t gwt_rpc_call_none(uint8_t *b, uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc)
{
	/* xid, CALL, RPC version 2, the procedure, AUTH_NONE<0> twice */
	const uint32_t w[] = { xid, 0, 2, prog, vers, proc, 0, 0, 0, 0 };

	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		xdr_put32(b + 4 * i, w[i]);
	return GWT_RPC_CALL_NONE_LEN;
}
