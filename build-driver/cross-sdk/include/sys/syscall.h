/* sys/syscall.h: minimal stand-in for the zig macOS cross lane (slurm-on-mac).
 * See build-driver/cross-sdk/README.md. Slurm 26.11 includes this header unconditionally
 * (src/common/fd.c) and uses only SYS_close_range under #ifdef; Darwin has no such system
 * call, so none is declared. syscall(2) itself is declared by <unistd.h>. Nothing that
 * depends on a Darwin system-call number is compiled in this lane. */
#ifndef SLURM_ON_MAC_CROSS_SYS_SYSCALL_H
#define SLURM_ON_MAC_CROSS_SYS_SYSCALL_H
#endif
