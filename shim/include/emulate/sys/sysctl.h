/* Darwin personality: stand-in for macOS's <sys/sysctl.h> (glibc has none since 2.32).
 *
 * Declares what Slurm's __APPLE__ branches use: sysctl() and sysctlbyname(), the MIB names
 * and values of the macOS SDK (sys/sysctl.h: CTL_KERN 1, CTL_HW 6, KERN_PROC 14,
 * KERN_PROC_ALL/PID/PGRP 0/1/2, KERN_BOOTTIME 21, KERN_MAXFILESPERPROC 29, HW_NCPU 3,
 * HW_PHYSMEM 5, HW_MEMSIZE 24), the process states of sys/proc.h (SIDL .. SZOMB = 1 .. 5)
 * and struct kinfo_proc with the SDK's members, in the SDK's order and with macOS's widths
 * (sigset_t and dev_t are 32 bits there, so they are spelled uint32_t/int32_t here); its
 * size is the SDK's (648 bytes on LP64; shim/tests/emulate_sysctl.rs compares it with the
 * SDK's for aarch64-macos when zig is installed). The shim answers from /proc and the
 * machine's figures (shim/src/emulate/sysctl.rs). */
#ifndef SLURM_SHIM_EMULATE_SYS_SYSCTL_H
#define SLURM_SHIM_EMULATE_SYS_SYSCTL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>
#include <sys/types.h>

#define CTL_KERN 1
#define CTL_HW 6
#define KERN_PROC 14
#define KERN_BOOTTIME 21
#define KERN_MAXFILESPERPROC 29
#define KERN_PROC_ALL 0
#define KERN_PROC_PID 1
#define KERN_PROC_PGRP 2
#define HW_NCPU 3
#define HW_PHYSMEM 5
#define HW_MEMSIZE 24

#define SIDL 1
#define SRUN 2
#define SSLEEP 3
#define SSTOP 4
#define SZOMB 5

#define WMESGLEN 7
#define COMAPT_MAXLOGNAME 12
#ifndef MAXCOMLEN
#define MAXCOMLEN 16
#endif
#define SLURM_SHIM_MAC_NGROUPS 16

struct extern_proc {
	union {
		struct {
			struct proc *__p_forw;
			struct proc *__p_back;
		} p_st1;
		struct timeval __p_starttime;
	} p_un;
#define p_starttime p_un.__p_starttime
	struct vmspace *p_vmspace;
	struct sigacts *p_sigacts;
	int p_flag;
	char p_stat;
	pid_t p_pid;
	pid_t p_oppid;
	int p_dupfd;
	char *user_stack;
	void *exit_thread;
	int p_debugger;
	int sigwait;
	unsigned int p_estcpu;
	int p_cpticks;
	uint32_t p_pctcpu;
	void *p_wchan;
	char *p_wmesg;
	unsigned int p_swtime;
	unsigned int p_slptime;
	struct itimerval p_realtimer;
	struct timeval p_rtime;
	uint64_t p_uticks;
	uint64_t p_sticks;
	uint64_t p_iticks;
	int p_traceflag;
	struct vnode *p_tracep;
	int p_siglist;
	struct vnode *p_textvp;
	int p_holdcnt;
	uint32_t p_sigmask;
	uint32_t p_sigignore;
	uint32_t p_sigcatch;
	unsigned char p_priority;
	unsigned char p_usrpri;
	char p_nice;
	char p_comm[MAXCOMLEN + 1];
	struct pgrp *p_pgrp;
	struct user *p_addr;
	unsigned short p_xstat;
	unsigned short p_acflag;
	struct rusage *p_ru;
};

struct _pcred {
	char pc_lock[72];
	struct ucred *pc_ucred;
	uid_t p_ruid;
	uid_t p_svuid;
	gid_t p_rgid;
	gid_t p_svgid;
	int p_refcnt;
};

struct _ucred {
	int32_t cr_ref;
	uid_t cr_uid;
	short cr_ngroups;
	gid_t cr_groups[SLURM_SHIM_MAC_NGROUPS];
};

struct slurm_shim_mac_vmspace {
	int32_t dummy;
	char *dummy2;
	int32_t dummy3[5];
	char *dummy4[3];
};

struct kinfo_proc {
	struct extern_proc kp_proc;
	struct eproc {
		struct proc *e_paddr;
		struct session *e_sess;
		struct _pcred e_pcred;
		struct _ucred e_ucred;
		struct slurm_shim_mac_vmspace e_vm;
		pid_t e_ppid;
		pid_t e_pgid;
		short e_jobc;
		int32_t e_tdev;
		pid_t e_tpgid;
		struct session *e_tsess;
		char e_wmesg[WMESGLEN + 1];
		int32_t e_xsize;
		short e_xrssize;
		short e_xccount;
		short e_xswrss;
		int32_t e_flag;
		char e_login[COMAPT_MAXLOGNAME];
		int32_t e_spare[4];
	} kp_eproc;
};

int sysctl(int *name, unsigned int namelen, void *oldp, size_t *oldlenp, void *newp,
	   size_t newlen);
int sysctlbyname(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);

#endif
