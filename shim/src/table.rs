//! The one table that drives both what the library exports and what `slurm_shim.h` maps.
//!
//! Every row names an exported `extern "C"` function (its Rust path, so the table cannot
//! name a function that does not exist) and how the generated header maps the Linux name
//! onto it:
//!
//! * [`Map::Both`]: under `__APPLE__` the header says `#define <linux> slurm_shim_<linux>`
//!   (after including the system header that declares any SDK function of that name); on
//!   Linux with `SLURM_SHIM_EMULATE_DARWIN` it says
//!   `#pragma redefine_extname <linux> slurm_shim_<linux>`, which keeps glibc's prototype
//!   (so no system header has to be included before the translation unit's own
//!   `_GNU_SOURCE`) and only changes the symbol the call links against.
//! * [`Map::Apple`]: mapped under `__APPLE__` only.
//! * [`Map::Helper`]: exported for the header's own macros (`CPU_COUNT`, `CPU_ALLOC`, ...);
//!   no Linux name is mapped onto it.
//! * [`Map::Emulate`]: mapped in the Linux darwin-emulation mode only, by `#pragma
//!   redefine_extname`: a model of how macOS libSystem/XNU *behaves* for a call glibc also
//!   has (module [`crate::emulate`]). Defined on Linux only: a macOS build has the real
//!   behaviour and never links these rows. The rows are listed on every host, so the
//!   generated header is the same wherever `cargo xtask codegen` runs.
//!
//! `cargo xtask codegen` reads [`ENTRIES`]; a test checks that the staticlib defines exactly
//! these `slurm_shim_*` symbols and that every row follows the naming rule.

/// How the generated header maps a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Map {
    /// Mapped on macOS and in the Linux darwin-emulation mode.
    Both,
    /// Mapped on macOS only.
    Apple,
    /// Called by the header's macros; not mapped from a Linux name.
    Helper,
    /// Mapped in the Linux darwin-emulation mode only (a model of macOS behaviour); the
    /// function exists on Linux only.
    Emulate,
}

/// One exported function.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    /// The exported symbol, `slurm_shim_<name>`.
    pub symbol: &'static str,
    /// The module (source file) that implements it.
    pub module: &'static str,
    /// How the header maps it.
    pub map: Map,
}

impl Entry {
    /// Whether the shim library built for `target_os` defines this row: every row on Linux,
    /// every row but [`Map::Emulate`] elsewhere.
    pub fn defined_on(&self, target_os: &str) -> bool {
        self.map != Map::Emulate || target_os == "linux"
    }

    /// The Linux (or glibc-internal) name this row replaces: the symbol without its prefix.
    pub fn linux_name(&self) -> &'static str {
        self.symbol.strip_prefix(PREFIX).unwrap_or(self.symbol)
    }
}

/// Prefix of every exported symbol.
pub const PREFIX: &str = "slurm_shim_";

macro_rules! table {
    ($( $module:ident :: $func:ident => $map:ident ),* $(,)?) => {
        /// Every exported function, in header order.
        pub const ENTRIES: &[Entry] = &[
            $( Entry { symbol: stringify!($func), module: stringify!($module), map: Map::$map } ),*
        ];
        // Each row must name a real function of its module (emulation rows: on Linux, the
        // only OS that builds them).
        const _: () = { $( table!(@exists $map, $module, $func); )* };
    };
    (@exists Emulate, $module:ident, $func:ident) => {
        #[cfg(target_os = "linux")]
        let _ = crate::emulate::$module::$func;
    };
    (@exists $map:ident, $module:ident, $func:ident) => {
        let _ = crate::$module::$func;
    };
}

table! {
    pipe2::slurm_shim_pipe2 => Both,
    accept4::slurm_shim_accept4 => Both,
    socket::slurm_shim_socket => Both,
    socket::slurm_shim_socketpair => Both,
    eventfd::slurm_shim_eventfd => Both,
    eventfd::slurm_shim_eventfd_read => Both,
    eventfd::slurm_shim_eventfd_write => Both,
    timer::slurm_shim_timer_create => Both,
    timer::slurm_shim_timer_settime => Both,
    timer::slurm_shim_timer_gettime => Both,
    timer::slurm_shim_timer_getoverrun => Both,
    timer::slurm_shim_timer_delete => Both,
    cpuset::slurm_shim_sched_getaffinity => Both,
    cpuset::slurm_shim_sched_setaffinity => Both,
    cpuset::slurm_shim_sched_cpucount => Helper,
    cpuset::slurm_shim_sched_cpualloc => Helper,
    cpuset::slurm_shim_sched_cpufree => Helper,
    setresuid::slurm_shim_setresuid => Both,
    setresuid::slurm_shim_setresgid => Both,
    setresuid::slurm_shim_getresuid => Both,
    setresuid::slurm_shim_getresgid => Both,
    fexecve::slurm_shim_fexecve => Both,
    qsort_r::slurm_shim_qsort_r => Both,
    cwd::slurm_shim_get_current_dir_name => Both,
    getgrouplist::slurm_shim_getgrouplist => Both,
    rwlock::slurm_shim_pthread_rwlock_init => Both,
    peercred::slurm_shim_getsockopt => Both,
    uptime::slurm_shim_sysinfo => Both,
    sigtimedwait::slurm_shim_sigtimedwait => Both,
    // pthread objects as macOS libpthread checks them (emulate::pthread_*); pthread_rwlock_init
    // is the `rwlock` fix above, which runs on top of the model in the darwin personality.
    pthread_mutex::slurm_shim_pthread_mutex_init => Emulate,
    pthread_mutex::slurm_shim_pthread_mutex_destroy => Emulate,
    pthread_mutex::slurm_shim_pthread_mutex_lock => Emulate,
    pthread_mutex::slurm_shim_pthread_mutex_trylock => Emulate,
    pthread_mutex::slurm_shim_pthread_mutex_timedlock => Emulate,
    pthread_mutex::slurm_shim_pthread_mutex_unlock => Emulate,
    pthread_cond::slurm_shim_pthread_cond_init => Emulate,
    pthread_cond::slurm_shim_pthread_cond_destroy => Emulate,
    pthread_cond::slurm_shim_pthread_cond_signal => Emulate,
    pthread_cond::slurm_shim_pthread_cond_broadcast => Emulate,
    pthread_cond::slurm_shim_pthread_cond_wait => Emulate,
    pthread_cond::slurm_shim_pthread_cond_timedwait => Emulate,
    pthread_rwlock::slurm_shim_pthread_rwlock_destroy => Emulate,
    pthread_rwlock::slurm_shim_pthread_rwlock_rdlock => Emulate,
    pthread_rwlock::slurm_shim_pthread_rwlock_tryrdlock => Emulate,
    pthread_rwlock::slurm_shim_pthread_rwlock_timedrdlock => Emulate,
    pthread_rwlock::slurm_shim_pthread_rwlock_wrlock => Emulate,
    pthread_rwlock::slurm_shim_pthread_rwlock_trywrlock => Emulate,
    pthread_rwlock::slurm_shim_pthread_rwlock_timedwrlock => Emulate,
    pthread_rwlock::slurm_shim_pthread_rwlock_unlock => Emulate,
    // macOS runtime semantics: resource limits (shim/src/emulate/rlimit.rs).
    rlimit::slurm_shim_getrlimit => Emulate,
    rlimit::slurm_shim_setrlimit => Emulate,
    rlimit::slurm_shim_prlimit => Emulate,
    // macOS runtime semantics: descriptors (shim/src/emulate/{sysconf,dlsym}.rs).
    sysconf::slurm_shim_sysconf => Emulate,
    sysconf::slurm_shim_getdtablesize => Emulate,
    dlsym::slurm_shim_dlsym => Emulate,
    // macOS runtime semantics: no /proc, /run, /sys, /dev/shm (shim/src/emulate/hidden_paths.rs).
    hidden_paths::slurm_shim_open => Emulate,
    hidden_paths::slurm_shim_open64 => Emulate,
    hidden_paths::slurm_shim_openat => Emulate,
    hidden_paths::slurm_shim_fopen => Emulate,
    hidden_paths::slurm_shim_fopen64 => Emulate,
    hidden_paths::slurm_shim_opendir => Emulate,
    hidden_paths::slurm_shim_stat => Emulate,
    hidden_paths::slurm_shim_lstat => Emulate,
    hidden_paths::slurm_shim_statfs => Emulate,
    hidden_paths::slurm_shim_statvfs => Emulate,
    hidden_paths::slurm_shim_access => Emulate,
    hidden_paths::slurm_shim_readlink => Emulate,
    hidden_paths::slurm_shim_realpath => Emulate,
    hidden_paths::slurm_shim_unlink => Emulate,
    hidden_paths::slurm_shim_mkdir => Emulate,
    hidden_paths::slurm_shim_rmdir => Emulate,
    hidden_paths::slurm_shim_symlink => Emulate,
    hidden_paths::slurm_shim_chdir => Emulate,
    // macOS runtime semantics: AF_UNIX paths (shim/src/emulate/unix_socket.rs).
    unix_socket::slurm_shim_connect => Emulate,
    unix_socket::slurm_shim_bind => Emulate,
    // macOS runtime semantics: groups, memory locking (shim/src/emulate/{setgroups,mlockall}.rs).
    setgroups::slurm_shim_setgroups => Emulate,
    mlockall::slurm_shim_mlockall => Emulate,
    mlockall::slurm_shim_munlockall => Emulate,
    // macOS APIs of Slurm's __APPLE__ branches, from Linux seams (shim/src/emulate/
    // {sysctl,libproc,getpeereid,fcntl}.rs; declared by shim/include/emulate/ stand-ins).
    sysctl::slurm_shim_sysctl => Emulate,
    sysctl::slurm_shim_sysctlbyname => Emulate,
    libproc::slurm_shim_proc_pidpath => Emulate,
    libproc::slurm_shim_proc_pidinfo => Emulate,
    getpeereid::slurm_shim_getpeereid => Emulate,
    fcntl::slurm_shim_fcntl => Emulate,
    // IOKit and CoreFoundation as gpu/apple calls them, from the modelled Mac's hardware
    // file (shim/src/emulate/{iokit,corefoundation,mac_hardware}.rs; declared by the
    // stand-ins shim/include/emulate/IOKit/IOKitLib.h, CoreFoundation/CoreFoundation.h).
    iokit::slurm_shim_IOServiceMatching => Emulate,
    iokit::slurm_shim_IOServiceGetMatchingServices => Emulate,
    iokit::slurm_shim_IOIteratorNext => Emulate,
    iokit::slurm_shim_IORegistryEntryCreateCFProperty => Emulate,
    iokit::slurm_shim_IOObjectRelease => Emulate,
    corefoundation::slurm_shim_CFRelease => Emulate,
    corefoundation::slurm_shim_CFGetTypeID => Emulate,
    corefoundation::slurm_shim_CFStringGetTypeID => Emulate,
    corefoundation::slurm_shim_CFNumberGetTypeID => Emulate,
    corefoundation::slurm_shim_CFStringCreateWithCString => Emulate,
    corefoundation::slurm_shim_CFStringGetCString => Emulate,
    corefoundation::slurm_shim_CFNumberGetValue => Emulate,
    // macOS process APIs of the darwin plugins (jobacct_gather/darwin, proctrack/darwin,
    // task/darwin: patches 0040-0049), from Linux seams (shim/src/emulate/{proc_listpids,
    // proc_rusage,proc_signal,timebase,darwin_bg}.rs; proc_pidinfo's process flavors are in
    // proc_bsdinfo.rs behind the row above).
    proc_listpids::slurm_shim_proc_listpids => Emulate,
    proc_listpids::slurm_shim_proc_listallpids => Emulate,
    proc_listpids::slurm_shim_proc_listpgrppids => Emulate,
    proc_listpids::slurm_shim_proc_listchildpids => Emulate,
    proc_rusage::slurm_shim_proc_pid_rusage => Emulate,
    proc_signal::slurm_shim_proc_signal_with_audittoken => Emulate,
    timebase::slurm_shim_mach_timebase_info => Emulate,
    timebase::slurm_shim_mach_absolute_time => Emulate,
    darwin_bg::slurm_shim_setpriority => Emulate,
}

#[cfg(test)]
#[allow(non_snake_case)]
mod tests {
    use super::*;

    #[test]
    fn table__every_symbol_has_the_prefix_and_is_unique() {
        let mut seen = std::collections::BTreeSet::new();
        for e in ENTRIES {
            assert!(e.symbol.starts_with(PREFIX), "{} lacks {PREFIX}", e.symbol);
            assert!(!e.linux_name().is_empty());
            assert!(seen.insert(e.symbol), "{} listed twice", e.symbol);
        }
    }
}
