/* Stand-in for Linux's <sys/sysinfo.h>, which the macOS SDK lacks (DARWIN-CATALOG B3).
 * Put shim/include/compat on the include path (-I) on macOS only. `struct sysinfo` and
 * `sysinfo()` come from slurm_shim.h (mapped to slurm_shim_sysinfo); SI_LOAD_SHIFT is
 * glibc's scale of `loads[]`, which the shim uses (shim/src/uptime.rs). */
#ifndef SLURM_SHIM_COMPAT_SYS_SYSINFO_H
#define SLURM_SHIM_COMPAT_SYS_SYSINFO_H
#include "../../slurm_shim.h"
#ifndef SI_LOAD_SHIFT
#define SI_LOAD_SHIFT 16
#endif
#endif
