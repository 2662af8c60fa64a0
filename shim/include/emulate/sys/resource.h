/* Darwin personality: <sys/resource.h> with macOS's constants.
 *
 * glibc's header, then the two values in which macOS's <sys/resource.h> differs for what
 * Slurm uses: RLIM_INFINITY (and RLIM_SAVED_*) is (1 << 63) - 1 on macOS, not ~0, and
 * RLIMIT_RSS is defined as RLIMIT_AS (macOS SDK sys/resource.h; xnu bsd/sys/resource.h).
 * The shim's getrlimit/setrlimit (shim/src/emulate/rlimit.rs) take and give the macOS
 * values, so Slurm's comparisons and loops see what they see on a Mac. */
#include_next <sys/resource.h>

#ifndef SLURM_SHIM_EMULATE_SYS_RESOURCE_H
#define SLURM_SHIM_EMULATE_SYS_RESOURCE_H
#undef RLIM_INFINITY
#define RLIM_INFINITY ((rlim_t)0x7fffffffffffffffULL)
#undef RLIM_SAVED_MAX
#define RLIM_SAVED_MAX RLIM_INFINITY
#undef RLIM_SAVED_CUR
#define RLIM_SAVED_CUR RLIM_INFINITY
#undef RLIMIT_RSS
#define RLIMIT_RSS RLIMIT_AS
#endif
