/* Darwin personality: stand-in for macOS's <libproc.h> (and the parts of
 * <sys/proc_info.h> it needs), with the SDK's names and values: proc_pidpath(),
 * proc_pidinfo() with PROC_PIDLISTFDS (1) and struct proc_fdinfo { int32_t proc_fd;
 * uint32_t proc_fdtype; }, PROX_FDTYPE_* (VNODE 1, SOCKET 2, PSHM 3, PSEM 4, KQUEUE 5,
 * PIPE 6, FSEVENTS 7, NETPOLICY 9, CHANNEL 10, NEXUS 11), PROC_PIDPATHINFO_SIZE (1024) and
 * PROC_PIDPATHINFO_MAXSIZE (4096). The shim answers from /proc (shim/src/emulate/libproc.rs). */
#ifndef SLURM_SHIM_EMULATE_LIBPROC_H
#define SLURM_SHIM_EMULATE_LIBPROC_H

#include <stdint.h>
#include <sys/types.h>

#define PROC_PIDLISTFDS 1
#define PROC_PIDPATHINFO_SIZE 1024
#define PROC_PIDPATHINFO_MAXSIZE 4096

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

struct proc_fdinfo {
	int32_t proc_fd;
	uint32_t proc_fdtype;
};
#define PROC_PIDLISTFD_SIZE (sizeof(struct proc_fdinfo))

int proc_pidpath(int pid, void *buffer, uint32_t buffersize);
int proc_pidinfo(int pid, int flavor, uint64_t arg, void *buffer, int buffersize);

#endif
