/* Darwin personality: stand-in for macOS's <sys/ucred.h>, which conmgr/con.c and
 * slurmrestd's auth/local include on __APPLE__: struct xucred as in the SDK
 * (cr_version, cr_uid, cr_ngroups, cr_groups[NGROUPS = 16]) and XUCRED_VERSION (0). Slurm
 * reads peer credentials through getsockopt(SO_PEERCRED) (patch 0010) and getpeereid(), so
 * nothing here is called. */
#ifndef SLURM_SHIM_EMULATE_SYS_UCRED_H
#define SLURM_SHIM_EMULATE_SYS_UCRED_H

#include <sys/types.h>

#define XUCRED_VERSION 0

struct xucred {
	unsigned int cr_version;
	uid_t cr_uid;
	short cr_ngroups;
	gid_t cr_groups[16];
};

#endif
