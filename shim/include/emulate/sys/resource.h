/* Darwin personality: <sys/resource.h> with macOS's constants.
 *
 * glibc's header, then the two values in which macOS's <sys/resource.h> differs for what
 * Slurm uses: RLIM_INFINITY (and RLIM_SAVED_*) is (1 << 63) - 1 on macOS, not ~0, and
 * RLIMIT_RSS is defined as RLIMIT_AS (macOS SDK sys/resource.h; xnu bsd/sys/resource.h).
 * The shim's getrlimit/setrlimit (shim/src/emulate/rlimit.rs) take and give the macOS
 * values, so Slurm's comparisons and loops see what they see on a Mac.
 *
 * Then what macOS's header adds and the darwin plugins use: the darwin priority classes
 * (PRIO_DARWIN_THREAD 3, PRIO_DARWIN_PROCESS 4, PRIO_DARWIN_BG 0x1000, PRIO_DARWIN_NONUI
 * 0x1001; shim/src/emulate/darwin_bg.rs), rusage_info_t, the RUSAGE_INFO_V0..V6 flavors and
 * struct rusage_info_v4 (296 bytes; shim/src/emulate/proc_rusage.rs), with the SDK's
 * layout (checked by shim/tests/emulate_proc_info.rs). */
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

#include <stdint.h>

#define PRIO_DARWIN_THREAD 3
#define PRIO_DARWIN_PROCESS 4
#define PRIO_DARWIN_BG 0x1000
#define PRIO_DARWIN_NONUI 0x1001

typedef void *rusage_info_t;

#define RUSAGE_INFO_V0 0
#define RUSAGE_INFO_V1 1
#define RUSAGE_INFO_V2 2
#define RUSAGE_INFO_V3 3
#define RUSAGE_INFO_V4 4
#define RUSAGE_INFO_V5 5
#define RUSAGE_INFO_V6 6
#define RUSAGE_INFO_CURRENT RUSAGE_INFO_V6

struct rusage_info_v4 {
	uint8_t ri_uuid[16];
	uint64_t ri_user_time;
	uint64_t ri_system_time;
	uint64_t ri_pkg_idle_wkups;
	uint64_t ri_interrupt_wkups;
	uint64_t ri_pageins;
	uint64_t ri_wired_size;
	uint64_t ri_resident_size;
	uint64_t ri_phys_footprint;
	uint64_t ri_proc_start_abstime;
	uint64_t ri_proc_exit_abstime;
	uint64_t ri_child_user_time;
	uint64_t ri_child_system_time;
	uint64_t ri_child_pkg_idle_wkups;
	uint64_t ri_child_interrupt_wkups;
	uint64_t ri_child_pageins;
	uint64_t ri_child_elapsed_abstime;
	uint64_t ri_diskio_bytesread;
	uint64_t ri_diskio_byteswritten;
	uint64_t ri_cpu_time_qos_default;
	uint64_t ri_cpu_time_qos_maintenance;
	uint64_t ri_cpu_time_qos_background;
	uint64_t ri_cpu_time_qos_utility;
	uint64_t ri_cpu_time_qos_legacy;
	uint64_t ri_cpu_time_qos_user_initiated;
	uint64_t ri_cpu_time_qos_user_interactive;
	uint64_t ri_billed_system_time;
	uint64_t ri_serviced_system_time;
	uint64_t ri_logical_writes;
	uint64_t ri_lifetime_max_phys_footprint;
	uint64_t ri_instructions;
	uint64_t ri_cycles;
	uint64_t ri_billed_energy;
	uint64_t ri_serviced_energy;
	uint64_t ri_interval_max_phys_footprint;
	uint64_t ri_runnable_time;
};
#endif
