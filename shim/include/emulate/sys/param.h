/* Darwin personality: macOS's <sys/param.h> says it is BSD (SDK sys/param.h: BSD 199506,
 * BSD4_3, BSD4_4); glibc's does not. Slurm's slurmstepd/pdebug.c takes its ptrace
 * branch for BSD on `#ifdef BSD` (PT_TRACE_ME, PT_DETACH with a caddr_t address: glibc
 * has the same names), and hash/k12's brg_endian.h its <machine/endian.h> branch. */
#include_next <sys/param.h>
#ifndef BSD
#define BSD 199506
#endif
#ifndef BSD4_3
#define BSD4_3 1
#endif
#ifndef BSD4_4
#define BSD4_4 1
#endif
