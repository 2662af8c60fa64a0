/* Darwin personality: stand-in for macOS's <sys/proc_info.h>, the part libproc's callers
 * use, with the SDK's names, values and layouts (checked against the SDK headers zig
 * bundles by shim/tests/emulate_proc_info.rs): the proc_listpids() types (PROC_ALL_PIDS
 * 1 .. PROC_KDBG_ONLY 7), struct proc_bsdinfo (136 bytes), struct proc_bsdshortinfo (64),
 * struct proc_taskinfo (96), the pbi_flags values (PROC_FLAG_*), the proc_pidinfo()
 * flavors and sizes (PROC_PIDLISTFDS 1, PROC_PIDTBSDINFO 3, PROC_PIDTASKINFO 4,
 * PROC_PIDT_SHORTBSDINFO 13, PROC_PID_RUSAGE 16), struct proc_fdinfo and PROX_FDTYPE_*.
 * As in the SDK, the private flavors PROC_PIDUNIQIDENTIFIERINFO (17) and
 * PROC_PIDT_BSDINFOWITHUNIQID (18) are not declared here: code that uses them declares
 * them itself. The shim answers from /proc (shim/src/emulate/proc_bsdinfo.rs). */
#ifndef SLURM_SHIM_EMULATE_SYS_PROC_INFO_H
#define SLURM_SHIM_EMULATE_SYS_PROC_INFO_H

#include <stdint.h>
#include <sys/types.h>

#ifndef MAXCOMLEN
#define MAXCOMLEN 16
#endif

#define PROC_ALL_PIDS 1
#define PROC_PGRP_ONLY 2
#define PROC_TTY_ONLY 3
#define PROC_UID_ONLY 4
#define PROC_RUID_ONLY 5
#define PROC_PPID_ONLY 6
#define PROC_KDBG_ONLY 7

struct proc_bsdinfo {
	uint32_t pbi_flags;
	uint32_t pbi_status;
	uint32_t pbi_xstatus;
	uint32_t pbi_pid;
	uint32_t pbi_ppid;
	uid_t pbi_uid;
	gid_t pbi_gid;
	uid_t pbi_ruid;
	gid_t pbi_rgid;
	uid_t pbi_svuid;
	gid_t pbi_svgid;
	uint32_t rfu_1;
	char pbi_comm[MAXCOMLEN];
	char pbi_name[2 * MAXCOMLEN];
	uint32_t pbi_nfiles;
	uint32_t pbi_pgid;
	uint32_t pbi_pjobc;
	uint32_t e_tdev;
	uint32_t e_tpgid;
	int32_t pbi_nice;
	uint64_t pbi_start_tvsec;
	uint64_t pbi_start_tvusec;
};

struct proc_bsdshortinfo {
	uint32_t pbsi_pid;
	uint32_t pbsi_ppid;
	uint32_t pbsi_pgid;
	uint32_t pbsi_status;
	char pbsi_comm[MAXCOMLEN];
	uint32_t pbsi_flags;
	uid_t pbsi_uid;
	gid_t pbsi_gid;
	uid_t pbsi_ruid;
	gid_t pbsi_rgid;
	uid_t pbsi_svuid;
	gid_t pbsi_svgid;
	uint32_t pbsi_rfu;
};

#define PROC_FLAG_SYSTEM 1
#define PROC_FLAG_TRACED 2
#define PROC_FLAG_INEXIT 4
#define PROC_FLAG_PPWAIT 8
#define PROC_FLAG_LP64 0x10
#define PROC_FLAG_SLEADER 0x20
#define PROC_FLAG_CTTY 0x40
#define PROC_FLAG_CONTROLT 0x80
#define PROC_FLAG_THCWD 0x100
#define PROC_FLAG_PSUGID 0x2000
#define PROC_FLAG_EXEC 0x4000
#define PROC_FLAG_DARWINBG 0x8000
#define PROC_FLAG_EXT_DARWINBG 0x10000

struct proc_taskinfo {
	uint64_t pti_virtual_size;
	uint64_t pti_resident_size;
	uint64_t pti_total_user;
	uint64_t pti_total_system;
	uint64_t pti_threads_user;
	uint64_t pti_threads_system;
	int32_t pti_policy;
	int32_t pti_faults;
	int32_t pti_pageins;
	int32_t pti_cow_faults;
	int32_t pti_messages_sent;
	int32_t pti_messages_received;
	int32_t pti_syscalls_mach;
	int32_t pti_syscalls_unix;
	int32_t pti_csw;
	int32_t pti_threadnum;
	int32_t pti_numrunning;
	int32_t pti_priority;
};

struct proc_fdinfo {
	int32_t proc_fd;
	uint32_t proc_fdtype;
};

#define PROX_FDTYPE_ATALK 0
#define PROX_FDTYPE_VNODE 1
#define PROX_FDTYPE_SOCKET 2
#define PROX_FDTYPE_PSHM 3
#define PROX_FDTYPE_PSEM 4
#define PROX_FDTYPE_KQUEUE 5
#define PROX_FDTYPE_PIPE 6
#define PROX_FDTYPE_FSEVENTS 7
#define PROX_FDTYPE_NETPOLICY 9
#define PROX_FDTYPE_CHANNEL 10
#define PROX_FDTYPE_NEXUS 11

#define PROC_PIDLISTFDS 1
#define PROC_PIDLISTFD_SIZE (sizeof(struct proc_fdinfo))
#define PROC_PIDTBSDINFO 3
#define PROC_PIDTBSDINFO_SIZE (sizeof(struct proc_bsdinfo))
#define PROC_PIDTASKINFO 4
#define PROC_PIDTASKINFO_SIZE (sizeof(struct proc_taskinfo))
#define PROC_PIDT_SHORTBSDINFO 13
#define PROC_PIDT_SHORTBSDINFO_SIZE (sizeof(struct proc_bsdshortinfo))
#define PROC_PID_RUSAGE 16
#define PROC_PID_RUSAGE_SIZE 0

#endif
