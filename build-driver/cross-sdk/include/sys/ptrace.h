/* sys/ptrace.h: minimal declarations for the zig macOS cross lane (slurm-on-mac).
 * Written from the ptrace(2) manual page; see build-driver/cross-sdk/README.md. Request
 * numbers are the BSD ptrace interface's. ptrace() is exported by macOS's libSystem. */
#ifndef SLURM_ON_MAC_CROSS_SYS_PTRACE_H
#define SLURM_ON_MAC_CROSS_SYS_PTRACE_H

#include <sys/types.h>

#define PT_TRACE_ME 0     /* the child asks to be traced by its parent */
#define PT_CONTINUE 7     /* continue a stopped process */
#define PT_KILL 8         /* kill a traced process */
#define PT_STEP 9         /* single-step a traced process */
#define PT_ATTACH 10      /* trace a running process (deprecated on macOS) */
#define PT_DETACH 11      /* stop tracing */
#define PT_DENY_ATTACH 31 /* refuse future tracing */

#ifdef __cplusplus
extern "C" {
#endif

int ptrace(int request, pid_t pid, caddr_t addr, int data);

#ifdef __cplusplus
}
#endif

#endif
