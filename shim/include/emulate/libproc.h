/* Darwin personality: stand-in for macOS's <libproc.h>, with the SDK's names and values.
 * As the SDK's, it includes <sys/proc_info.h> (flavors, structures, PROX_FDTYPE_*),
 * <sys/resource.h> (struct rusage_info_v4, rusage_info_t) and <mach/message.h>
 * (audit_token_t), and declares: proc_listpids(), proc_listallpids(),
 * proc_listpgrppids(), proc_listchildpids(), proc_pidinfo(), proc_pidpath(),
 * proc_pid_rusage() and proc_signal_with_audittoken(); PROC_PIDPATHINFO_SIZE (1024) and
 * PROC_PIDPATHINFO_MAXSIZE (4096). The shim answers from /proc (shim/src/emulate/
 * libproc.rs, proc_bsdinfo.rs, proc_listpids.rs, proc_rusage.rs, proc_signal.rs). */
#ifndef SLURM_SHIM_EMULATE_LIBPROC_H
#define SLURM_SHIM_EMULATE_LIBPROC_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/resource.h>
#include <mach/message.h>
#include <sys/proc_info.h>

#define PROC_PIDPATHINFO_SIZE 1024
#define PROC_PIDPATHINFO_MAXSIZE 4096

int proc_listpids(uint32_t type, uint32_t typeinfo, void *buffer, int buffersize);
int proc_listallpids(void *buffer, int buffersize);
int proc_listpgrppids(pid_t pgrpid, void *buffer, int buffersize);
int proc_listchildpids(pid_t ppid, void *buffer, int buffersize);
int proc_pidinfo(int pid, int flavor, uint64_t arg, void *buffer, int buffersize);
int proc_pidpath(int pid, void *buffer, uint32_t buffersize);
int proc_pid_rusage(int pid, int flavor, rusage_info_t *buffer);
int proc_signal_with_audittoken(audit_token_t *audittoken, int sig);

#endif
