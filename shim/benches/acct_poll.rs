//! The per-process cost of one accounting poll, split by what it reads: what
//! `jobacct_gather/darwin` asks the shim for each process (`proc_pid_rusage(RUSAGE_INFO_V4)`
//! and `proc_pidinfo(PROC_PIDTASKINFO)`), what `jobacct_gather/linux`'s `common_jag` reads
//! itself (`/proc/<pid>/stat` and `/proc/<pid>/io` through `fopen`, `fcntl(FD_CLOEXEC)`,
//! `read`, `fclose`), and what proctrack/darwin's scan asks for every process of the machine
//! (`proc_pidinfo(PROC_PIDT_SHORTBSDINFO)`).
//!
//! `cargo bench -p slurm-shim --bench acct_poll [-- PROCS [POLLS]]` (default 1000 sleeping
//! children, 20 polls): prints min/median/max CPU microseconds per poll of the children for
//! each, with and without the emulation log (`SLURM_SHIM_EMULATION_LOG`, which the cluster
//! harness always sets), and the darwin/linux ratio of the medians. A benchmark that
//! prints figures, not a test; it runs where the darwin personality's models run (Linux).

use std::ffi::{CString, c_void};
use std::process::{Child, Command, Stdio};

use libc::c_int;
use slurm_shim::emulate::libproc::slurm_shim_proc_pidinfo;
use slurm_shim::emulate::proc_bsdinfo::{
    PROC_PIDT_SHORTBSDINFO, PROC_PIDTASKINFO, proc_bsdshortinfo, proc_taskinfo,
};
use slurm_shim::emulate::proc_rusage::{
    RUSAGE_INFO_V4, rusage_info_v6, slurm_shim_proc_pid_rusage,
};

/// `proc_pidinfo(pid, flavor, 0, out, sizeof *out)`: the bytes written.
fn pidinfo<T>(pid: c_int, flavor: c_int, out: &mut T) -> c_int {
    // SAFETY: `out` is a `T`, writable for the size given.
    unsafe {
        slurm_shim_proc_pidinfo(
            pid,
            flavor,
            0,
            (out as *mut T).cast(),
            std::mem::size_of::<T>() as c_int,
        )
    }
}

/// What jobacct_gather/darwin's `_measure` asks for one process.
fn darwin_one(pid: c_int) -> u64 {
    let mut ri = rusage_info_v6::default();
    let mut ti = proc_taskinfo::default();
    // SAFETY: `ri` holds V6, larger than the V4 asked for.
    let rc = unsafe { slurm_shim_proc_pid_rusage(pid, RUSAGE_INFO_V4, (&raw mut ri).cast()) };
    let n = pidinfo(pid, PROC_PIDTASKINFO, &mut ti);
    assert!(rc == 0 && n > 0, "pid {pid} could not be read");
    ri.ri_user_time + ti.pti_virtual_size
}

/// What proctrack/darwin's scan asks for one process.
fn scan_one(pid: c_int) -> u64 {
    // SAFETY: all-zero is a valid `proc_bsdshortinfo`.
    let mut si: proc_bsdshortinfo = unsafe { std::mem::zeroed() };
    let n = pidinfo(pid, PROC_PIDT_SHORTBSDINFO, &mut si);
    assert!(n > 0, "pid {pid} could not be read");
    u64::from(si.pbsi_ppid)
}

/// One file the way common_jag reads it: `fopen`, `fcntl(FD_CLOEXEC)`, one `read` of the
/// descriptor, `fclose`.
fn jag_read(path: &CString, buf: &mut [u8]) -> usize {
    // SAFETY: `path` and the mode are NUL-terminated.
    let fp = unsafe { libc::fopen(path.as_ptr(), c"r".as_ptr()) };
    assert!(!fp.is_null(), "{path:?} could not be opened");
    // SAFETY: `fp` is an open stream.
    let fd = unsafe { libc::fileno(fp) };
    // SAFETY: `fd` is open; the flag is a plain value.
    unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    // SAFETY: `buf` is writable for its length.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast::<c_void>(), buf.len()) };
    // SAFETY: `fp` is open and closed once.
    unsafe { libc::fclose(fp) };
    usize::try_from(n).unwrap_or(0)
}

/// What jobacct_gather/linux's `_handle_stats` reads for one process (`stat` and `io`).
fn linux_one(paths: &(CString, CString)) -> u64 {
    let mut buf = [0u8; 4096];
    (jag_read(&paths.0, &mut buf) + jag_read(&paths.1, &mut buf)) as u64
}

fn spawn(n: usize) -> Vec<Child> {
    (0..n)
        .map(|_| {
            Command::new("sleep")
                .arg("600")
                .stdin(Stdio::null())
                .spawn()
                .expect("spawn sleep")
        })
        .collect()
}

/// This thread's CPU time, microseconds (as the cluster benchmark's figure: CPU, not wall
/// time, so other work on the machine does not count).
fn thread_cpu_us() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 * 1e6 + t.tv_nsec as f64 / 1e3
}

/// min / median / max of `polls` polls of every pid, CPU microseconds per poll.
fn time_polls(polls: usize, mut one_poll: impl FnMut() -> u64) -> [f64; 3] {
    let mut us: Vec<f64> = (0..polls)
        .map(|_| {
            let t = thread_cpu_us();
            std::hint::black_box(one_poll());
            thread_cpu_us() - t
        })
        .collect();
    us.sort_by(f64::total_cmp);
    [us[0], us[us.len() / 2], us[us.len() - 1]]
}

fn print(name: &str, procs: usize, f: [f64; 3]) {
    println!(
        "  {name:44} min {:8.0} us, median {:8.0} us, max {:8.0} us per poll ({:.1} us per process)",
        f[0],
        f[1],
        f[2],
        f[1] / procs as f64
    );
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let procs = args.first().copied().unwrap_or(1000);
    let polls = args.get(1).copied().unwrap_or(20).max(3);
    let mut children = spawn(procs);
    let pids: Vec<c_int> = children.iter().map(|c| c.id() as c_int).collect();
    let paths: Vec<(CString, CString)> = pids
        .iter()
        .map(|p| {
            let s = |f: &str| CString::new(format!("/proc/{p}/{f}")).expect("path");
            (s("stat"), s("io"))
        })
        .collect();
    let log = std::env::temp_dir().join(format!("acct_poll-{}.log", std::process::id()));
    println!("acct_poll: {procs} sleeping children, {polls} polls each");
    let linux = time_polls(polls, || paths.iter().map(linux_one).sum());
    print("jobacct_gather/linux reads (stat, io)", procs, linux);
    let mut darwin = [0.0; 3];
    for (label, with_log) in [("without the emulation log", false), ("with it", true)] {
        if with_log {
            // SAFETY: single-threaded here; nothing reads the environment meanwhile.
            unsafe { std::env::set_var("SLURM_SHIM_EMULATION_LOG", &log) };
        }
        darwin = time_polls(polls, || pids.iter().map(|&p| darwin_one(p)).sum());
        print(
            &format!("darwin: rusage + taskinfo, {label}"),
            procs,
            darwin,
        );
        let scan = time_polls(polls, || pids.iter().map(|&p| scan_one(p)).sum());
        print(
            &format!("proctrack scan: shortbsdinfo, {label}"),
            procs,
            scan,
        );
    }
    println!(
        "  darwin/linux median (with the log): {:.2}x",
        darwin[1] / linux[1]
    );
    for c in &mut children {
        let _ = c.kill();
        let _ = c.wait();
    }
    let _ = std::fs::remove_file(&log);
}
