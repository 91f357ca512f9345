/* SPDX-License-Identifier: MIT */
/*
 * gateway/counters/rpc_names.h - names of well-known ONC RPC programs and procedures,
 * for the stats endpoint.
 *
 * The table is deliberately small: the programs an NFS deployment carries
 * (NFS v2/v3/v4, MOUNT, NLM, NSM, NFSACL, rpcbind). Anything else is shown
 * by number. Names are spelled as the programs' specifications spell them.
 */
#ifndef GW_GATEWAY_RPC_NAMES_H
#define GW_GATEWAY_RPC_NAMES_H

#include <stdbool.h>
#include <stdint.h>

/* Short lower-case name of program @prog ("nfs", "mount"), or NULL when unknown. */
const char *gw_rpc_program_name(uint32_t prog);

/* Name of procedure @proc of @prog version @vers ("READ", "COMPOUND"), or NULL. */
const char *gw_rpc_procedure_name(uint32_t prog, uint32_t vers, uint32_t proc);

/*
 * True when (@prog, @vers, @proc) is a procedure of the table above: a
 * known program, a version it has, a procedure it defines. The counters
 * give slots only to these, so that numbers a client makes up cannot fill
 * the table; there are never more of them than GW_PROC_SLOTS (checked at
 * compile time).
 */
bool gw_rpc_procedure_known(uint32_t prog, uint32_t vers, uint32_t proc);

#endif
