/* SPDX-License-Identifier: MIT */
#include "gateway/counters/rpc_names.h"

#include <assert.h>
#include <stddef.h>

#include "gateway/counters/counters.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

enum {
	PROG_RPCBIND = 100000,
	PROG_NFS = 100003,
	PROG_MOUNT = 100005,
	PROG_NLM = 100021,
	PROG_NSM = 100024,
	PROG_NFSACL = 100227,
	/* Versions that share a procedure table (the table below and the count of it). */
	MOUNT_VERS_LO = 1,
	MOUNT_VERS_HI = 3,
	NLM_VERS_LO = 1,
	NLM_VERS_HI = 4,
};

static const struct {
	uint32_t prog;
	const char *name;
} programs[] = {
	{ PROG_RPCBIND, "rpcbind" }, { PROG_NFS, "nfs" }, { PROG_MOUNT, "mount" },
	{ PROG_NLM, "nlm" },	     { PROG_NSM, "nsm" }, { PROG_NFSACL, "nfs_acl" },
};

/* RFC 1094 */
static const char *const nfs2[] = {
	[0] = "NULL",	  [1] = "GETATTR",  [2] = "SETATTR",	[3] = "ROOT",	  [4] = "LOOKUP",
	[5] = "READLINK", [6] = "READ",	    [7] = "WRITECACHE", [8] = "WRITE",	  [9] = "CREATE",
	[10] = "REMOVE",  [11] = "RENAME",  [12] = "LINK",	[13] = "SYMLINK", [14] = "MKDIR",
	[15] = "RMDIR",	  [16] = "READDIR", [17] = "STATFS",
};

/* RFC 1813 */
static const char *const nfs3[] = {
	[0] = "NULL",	   [1] = "GETATTR",  [2] = "SETATTR",	   [3] = "LOOKUP",  [4] = "ACCESS",
	[5] = "READLINK",  [6] = "READ",     [7] = "WRITE",	   [8] = "CREATE",  [9] = "MKDIR",
	[10] = "SYMLINK",  [11] = "MKNOD",   [12] = "REMOVE",	   [13] = "RMDIR",  [14] = "RENAME",
	[15] = "LINK",	   [16] = "READDIR", [17] = "READDIRPLUS", [18] = "FSSTAT", [19] = "FSINFO",
	[20] = "PATHCONF", [21] = "COMMIT",
};

/* RFC 7530, RFC 8881: everything else is an operation inside COMPOUND */
static const char *const nfs4[] = { "NULL", "COMPOUND" };

/* RFC 1094 appendix A and RFC 1813 appendix I number these alike */
static const char *const mount[] = { "NULL", "MNT", "DUMP", "UMNT", "UMNTALL", "EXPORT" };

/* X/Open XNFS; version 4 (for NFSv3) keeps the numbering. 16-19 are unassigned. */
static const char *const nlm[] = {
	[0] = "NULL",	    [1] = "TEST",	 [2] = "LOCK",	       [3] = "CANCEL",
	[4] = "UNLOCK",	    [5] = "GRANTED",	 [6] = "TEST_MSG",     [7] = "LOCK_MSG",
	[8] = "CANCEL_MSG", [9] = "UNLOCK_MSG",	 [10] = "GRANTED_MSG", [11] = "TEST_RES",
	[12] = "LOCK_RES",  [13] = "CANCEL_RES", [14] = "UNLOCK_RES",  [15] = "GRANTED_RES",
	[20] = "SHARE",	    [21] = "UNSHARE",	 [22] = "NM_LOCK",     [23] = "FREE_ALL",
};

/* X/Open XNFS, the status monitor */
static const char *const nsm[] = { "NULL",	"STAT",	      "MON",   "UNMON",
				   "UNMON_ALL", "SIMU_CRASH", "NOTIFY" };

/* The NFSACL side protocol of NFSv2 and NFSv3 */
static const char *const nfsacl2[] = { "NULL",	  "GETACL", "SETACL",
				       "GETATTR", "ACCESS", "GETXATTRDIR" };
static const char *const nfsacl3[] = { "NULL", "GETACL", "SETACL", "GETXATTRDIR" };

/* RFC 1833: portmapper (v2) and rpcbind (v3, v4) */
static const char *const pmap2[] = { "NULL", "SET", "UNSET", "GETPORT", "DUMP", "CALLIT" };
static const char *const rpcb3[] = { "NULL",   "SET",	  "UNSET",	 "GETADDR",    "DUMP",
				     "CALLIT", "GETTIME", "UADDR2TADDR", "TADDR2UADDR" };
static const char *const rpcb4[] = {
	"NULL",	    "SET",	   "UNSET",	  "GETADDR",	 "DUMP",
	"BCAST",    "GETTIME",	   "UADDR2TADDR", "TADDR2UADDR", "GETVERSADDR",
	"INDIRECT", "GETADDRLIST", "GETSTAT",
};

static const struct {
	uint32_t prog;
	uint32_t vers_lo, vers_hi;
	const char *const *names;
	size_t count;
} procedures[] = {
	{ PROG_NFS, 2, 2, nfs2, ARRAY_SIZE(nfs2) },
	{ PROG_NFS, 3, 3, nfs3, ARRAY_SIZE(nfs3) },
	{ PROG_NFS, 4, 4, nfs4, ARRAY_SIZE(nfs4) },
	{ PROG_MOUNT, MOUNT_VERS_LO, MOUNT_VERS_HI, mount, ARRAY_SIZE(mount) },
	{ PROG_NLM, NLM_VERS_LO, NLM_VERS_HI, nlm, ARRAY_SIZE(nlm) },
	{ PROG_NSM, 1, 1, nsm, ARRAY_SIZE(nsm) },
	{ PROG_NFSACL, 2, 2, nfsacl2, ARRAY_SIZE(nfsacl2) },
	{ PROG_NFSACL, 3, 3, nfsacl3, ARRAY_SIZE(nfsacl3) },
	{ PROG_RPCBIND, 2, 2, pmap2, ARRAY_SIZE(pmap2) },
	{ PROG_RPCBIND, 3, 3, rpcb3, ARRAY_SIZE(rpcb3) },
	{ PROG_RPCBIND, 4, 4, rpcb4, ARRAY_SIZE(rpcb4) },
};

/*
 * Every (program, version, procedure) the table covers, gaps included: the
 * most slots gw_rpc_procedure_known() can ever let the counters take.
 */
enum {
	KNOWN_PROCEDURES_MAX = ARRAY_SIZE(nfs2) + ARRAY_SIZE(nfs3) + ARRAY_SIZE(nfs4) +
			       (MOUNT_VERS_HI - MOUNT_VERS_LO + 1) * ARRAY_SIZE(mount) +
			       (NLM_VERS_HI - NLM_VERS_LO + 1) * ARRAY_SIZE(nlm) + ARRAY_SIZE(nsm) +
			       ARRAY_SIZE(nfsacl2) + ARRAY_SIZE(nfsacl3) + ARRAY_SIZE(pmap2) +
			       ARRAY_SIZE(rpcb3) + ARRAY_SIZE(rpcb4),
};
static_assert((unsigned)KNOWN_PROCEDURES_MAX <= (unsigned)GW_PROC_SLOTS,
	      "the per-procedure table must hold every known procedure at once");

const char *gw_rpc_program_name(uint32_t prog)
{
	for (size_t i = 0; i < ARRAY_SIZE(programs); i++) {
		if (programs[i].prog == prog)
			return programs[i].name;
	}
	return NULL;
}

const char *gw_rpc_procedure_name(uint32_t prog, uint32_t vers, uint32_t proc)
{
	for (size_t i = 0; i < ARRAY_SIZE(procedures); i++) {
		if (procedures[i].prog != prog || vers < procedures[i].vers_lo ||
		    vers > procedures[i].vers_hi)
			continue;
		/* gaps in a table (NLM 16-19) are NULL: unnamed */
		return proc < procedures[i].count ? procedures[i].names[proc] : NULL;
	}
	return NULL;
}

bool gw_rpc_procedure_known(uint32_t prog, uint32_t vers, uint32_t proc)
{
	return gw_rpc_procedure_name(prog, vers, proc) != NULL;
}
