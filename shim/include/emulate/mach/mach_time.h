/* Darwin personality: stand-in for macOS's <mach/mach_time.h>: struct mach_timebase_info
 * { uint32_t numer, denom; } (mach_timebase_info_data_t, mach_timebase_info_t),
 * mach_timebase_info() and mach_absolute_time(), and kern_return_t with KERN_SUCCESS (0)
 * and KERN_INVALID_ARGUMENT (4) (SDK mach/mach_time.h, mach/kern_return.h). The shim
 * answers with the modelled Mac's timebase, Apple Silicon's 125/3 unless
 * SLURM_SHIM_MACH_TIMEBASE says otherwise (shim/src/emulate/timebase.rs). */
#ifndef SLURM_SHIM_EMULATE_MACH_MACH_TIME_H
#define SLURM_SHIM_EMULATE_MACH_MACH_TIME_H

#include <stdint.h>

#ifndef KERN_SUCCESS
typedef int kern_return_t;
#define KERN_SUCCESS 0
#define KERN_INVALID_ARGUMENT 4
#endif

struct mach_timebase_info {
	uint32_t numer;
	uint32_t denom;
};
typedef struct mach_timebase_info *mach_timebase_info_t;
typedef struct mach_timebase_info mach_timebase_info_data_t;

kern_return_t mach_timebase_info(mach_timebase_info_t info);
uint64_t mach_absolute_time(void);

#endif
