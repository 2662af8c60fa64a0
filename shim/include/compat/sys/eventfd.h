/* Stand-in for Linux's <sys/eventfd.h>, which the macOS SDK lacks (DARWIN-CATALOG A4).
 * Put shim/include/compat on the include path (-I) on macOS only. Everything it declares
 * (eventfd_t, EFD_*, eventfd, eventfd_read, eventfd_write) comes from slurm_shim.h. */
#ifndef SLURM_SHIM_COMPAT_SYS_EVENTFD_H
#define SLURM_SHIM_COMPAT_SYS_EVENTFD_H
#include "../../slurm_shim.h"
#endif
