/* Darwin personality: <sys/syscall.h> without the system calls XNU does not have that
 * Slurm tests for. Slurm 26.11's src/common/fd.c defines close_range_internal() and probes
 * for close_range only #ifdef SYS_close_range; macOS's <sys/syscall.h> has no such number
 * (xnu bsd/kern/syscalls.master), so the fallback closeall() runs, as on a Mac. */
#include_next <sys/syscall.h>

#undef SYS_close_range
#undef __NR_close_range
