//! Models of how macOS libSystem and XNU *behave* for calls glibc also has, applied in the
//! Linux darwin personality only (`SLURM_SHIM_EMULATE_DARWIN`; rows of [`crate::table`] with
//! [`crate::table::Map::Emulate`]).
//!
//! The rest of the shim supplies what macOS *lacks*. This module is the other half: where
//! both systems have a call but macOS answers differently (a never-initialised pthread
//! object, a finite `RLIMIT_RSS`, `close_range`, `/proc`), the darwin personality answers as
//! macOS does, so Slurm code that only works because glibc is forgiving fails here as it
//! would on a Mac. Every model says in its module doc which Apple source (file and version)
//! or which observation on a real Mac it rests on.
//!
//! Built on Linux only: on macOS the real behaviour applies and nothing here is linked. The
//! native personality never links the shim at all.
//!
//! Every model reports the macOS behaviour it applied through [`report`], once per call site.

pub mod report;

pub mod pthread_cond;
pub mod pthread_mutex;
pub mod pthread_rwlock;
pub mod pthread_sig;

// Runtime semantics (issue 10 item 1): rlimits, descriptors, paths, groups.
pub mod dlsym;
pub mod hidden_paths;
pub mod inet_addr_len;
pub mod machine;
pub mod mlockall;
pub mod rlimit;
pub mod scope;
pub mod setgroups;
pub mod sysconf;
pub mod unix_socket;

// macOS APIs of Slurm's __APPLE__ branches, from Linux seams (issue 10 item 2).
pub mod fcntl;
pub mod getpeereid;
pub mod libproc;
pub mod procfs;
pub mod sysctl;

// macOS-native node capabilities (issue 13): the machine's CPU and GPU as IOKit and the
// machine sysctls describe them, from a hardware file (gpu/apple, slurmd's node metrics).
pub mod corefoundation;
pub mod iokit;
pub mod mac_hardware;
// macOS process accounting, tracking and scheduling APIs of the darwin plugins
// (jobacct_gather/darwin, proctrack/darwin, task/darwin; issue 13).
pub mod darwin_bg;
pub mod proc_bsdinfo;
pub mod proc_listpids;
pub mod proc_rusage;
pub mod proc_signal;
pub mod timebase;
