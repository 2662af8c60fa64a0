//! Fork safety of the close-on-exec emulation, observed after `exec`.
//!
//! Creator threads make close-on-exec descriptors in a loop while the main thread forks and
//! execs thousands of children. Each child execs this very test binary, whose ELF
//! constructor (run before `main`, so before libtest starts) sees a marker in its
//! environment, lists `/proc/self/fd` and writes the descriptor numbers to its stdout. Any
//! descriptor the exec'd program holds besides 0-2 and the descriptors every child inherits
//! (measured once without load) leaked through `exec`.
//!
//! Phase 1 creates through the shim (`pipe2`, `socket`, `socketpair`, `eventfd` with their
//! CLOEXEC flags): zero leaks are allowed. Phase 2 uses plain `pipe()` followed by
//! `fcntl(F_SETFD, FD_CLOEXEC)`, gnulib's and most emulations' way: it must leak at least
//! once within a bounded number of children, which shows the test can see a leak.
#![allow(non_snake_case)]
// Every unsafe block here is a direct libc call on locals or descriptors made just before;
// a SAFETY line on each would repeat that.
#![allow(clippy::undocumented_unsafe_blocks)]

#[cfg(not(target_os = "linux"))]
#[test]
fn cloexec__fork_stress_needs_linux() {
    eprintln!("skipped: the fork stress test reads /proc/self/fd and uses an ELF constructor");
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::BTreeSet;
    use std::ffi::CString;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::time::{Duration, Instant};

    use libc::{c_char, c_int};

    const MARKER: &str = "SLURM_SHIM_FD_STRESS_HELPER=1";

    /// Runs in every process that executes this binary, before `main`.
    #[used]
    #[unsafe(link_section = ".init_array")]
    static HELPER: extern "C" fn() = report_fds_if_asked;

    /// Helper mode: write the open descriptors (except 0-2 and the directory's own) to
    /// stdout and exit. Uses only libc, before the Rust runtime is set up.
    extern "C" fn report_fds_if_asked() {
        unsafe {
            if libc::getenv(c"SLURM_SHIM_FD_STRESS_HELPER".as_ptr()).is_null() {
                return;
            }
            let dir = libc::opendir(c"/proc/self/fd".as_ptr());
            if dir.is_null() {
                libc::_exit(3);
            }
            let own = libc::dirfd(dir);
            let mut out = [0u8; 8192];
            let mut n = 0;
            loop {
                let ent = libc::readdir(dir);
                if ent.is_null() {
                    break;
                }
                let name = std::ffi::CStr::from_ptr((*ent).d_name.as_ptr()).to_bytes();
                let mut fd: c_int = 0;
                if name.is_empty() || !name.iter().all(u8::is_ascii_digit) {
                    continue;
                }
                for d in name {
                    fd = fd * 10 + c_int::from(d - b'0');
                }
                if fd <= 2 || fd == own || n + name.len() + 1 > out.len() {
                    continue;
                }
                out[n..n + name.len()].copy_from_slice(name);
                out[n + name.len()] = b' ';
                n += name.len() + 1;
            }
            libc::write(1, out.as_ptr().cast(), n);
            libc::_exit(0);
        }
    }

    /// A prepared fork+exec of this binary in helper mode.
    struct Spawner {
        argv: Vec<*const c_char>,
        envp: Vec<*const c_char>,
        _strings: (CString, CString),
    }

    impl Spawner {
        fn new() -> Spawner {
            let exe = std::env::current_exe().expect("current_exe");
            let exe = CString::new(exe.as_os_str().as_encoded_bytes()).expect("exe path");
            let marker = CString::new(MARKER).expect("marker");
            let argv = vec![exe.as_ptr(), std::ptr::null()];
            let envp = vec![marker.as_ptr(), std::ptr::null()];
            Spawner {
                argv,
                envp,
                _strings: (exe, marker),
            }
        }

        /// Forks, execs the helper, and returns the descriptors it found open after exec.
        fn run(&self) -> BTreeSet<c_int> {
            let mut p = [-1; 2];
            // glibc's own pipe2: atomic, so this pipe never leaks into a child itself.
            assert_eq!(unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                // Only async-signal-safe calls between fork and exec.
                unsafe {
                    libc::dup2(p[1], 1);
                    libc::execve(self.argv[0], self.argv.as_ptr(), self.envp.as_ptr());
                    libc::_exit(127);
                }
            }
            assert!(pid > 0, "fork: {}", std::io::Error::last_os_error());
            unsafe { libc::close(p[1]) };
            let mut out = Vec::new();
            let mut buf = [0u8; 4096];
            loop {
                let n = unsafe { libc::read(p[0], buf.as_mut_ptr().cast(), buf.len()) };
                if n <= 0 {
                    assert!(
                        n == 0
                            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
                    );
                    if n == 0 {
                        break;
                    }
                    continue;
                }
                out.extend_from_slice(&buf[..n as usize]);
            }
            unsafe { libc::close(p[0]) };
            let mut status = 0;
            assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
            assert!(
                libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
                "helper status {status:#x}"
            );
            String::from_utf8_lossy(&out)
                .split_whitespace()
                .map(|s| s.parse().expect("fd number"))
                .collect()
        }
    }

    /// Creates and closes close-on-exec descriptors in a loop until `stop`.
    fn creators(
        threads: usize,
        stop: &Arc<AtomicBool>,
        made: &Arc<AtomicU64>,
        make: fn(u64),
    ) -> Vec<std::thread::JoinHandle<()>> {
        (0..threads)
            .map(|_| {
                let (stop, made) = (Arc::clone(stop), Arc::clone(made));
                std::thread::spawn(move || {
                    let mut i = 0;
                    while !stop.load(Ordering::Relaxed) {
                        make(i);
                        i += 1;
                        made.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect()
    }

    fn close(fd: c_int) {
        assert!(
            fd >= 0,
            "creation failed: {}",
            std::io::Error::last_os_error()
        );
        unsafe { libc::close(fd) };
    }

    fn make_through_shim(i: u64) {
        use slurm_shim::{eventfd, pipe2, socket};
        let mut two = [-1; 2];
        match i % 4 {
            0 => {
                assert_eq!(
                    unsafe { pipe2::slurm_shim_pipe2(two.as_mut_ptr(), libc::O_CLOEXEC) },
                    0
                );
                two.into_iter().for_each(close);
            }
            1 => close(socket::slurm_shim_socket(
                libc::AF_INET,
                libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
                0,
            )),
            2 => {
                let ty = libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK;
                assert_eq!(
                    unsafe {
                        socket::slurm_shim_socketpair(libc::AF_UNIX, ty, 0, two.as_mut_ptr())
                    },
                    0
                );
                two.into_iter().for_each(close);
            }
            _ => close(eventfd::slurm_shim_eventfd(
                0,
                libc::EFD_CLOEXEC | libc::EFD_NONBLOCK,
            )),
        }
    }

    fn make_plain_racy(_: u64) {
        let mut two = [-1; 2];
        assert_eq!(unsafe { libc::pipe(two.as_mut_ptr()) }, 0);
        for fd in two {
            assert_eq!(
                unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) },
                0
            );
        }
        two.into_iter().for_each(close);
    }

    struct PhaseResult {
        children: u64,
        leaky_children: u64,
        leaked_fds: u64,
        created: u64,
        elapsed: Duration,
    }

    /// Forks up to `max_children` (or for `budget`) while 2 threads run `make`; stops early
    /// after `stop_after_leaks` leaking children.
    fn phase(
        spawner: &Spawner,
        inherited: &BTreeSet<c_int>,
        make: fn(u64),
        max_children: u64,
        budget: Duration,
        stop_after_leaks: u64,
    ) -> PhaseResult {
        let stop = Arc::new(AtomicBool::new(false));
        let made = Arc::new(AtomicU64::new(0));
        let threads = creators(2, &stop, &made, make);
        // Let the creators get going.
        while made.load(Ordering::Relaxed) < 100 {
            std::thread::yield_now();
        }
        let start = Instant::now();
        let (mut children, mut leaky, mut leaked) = (0, 0, 0);
        while children < max_children && start.elapsed() < budget && leaky < stop_after_leaks {
            let open = spawner.run();
            let extra = open.difference(inherited).count() as u64;
            children += 1;
            if extra > 0 {
                leaky += 1;
                leaked += extra;
            }
        }
        let elapsed = start.elapsed();
        stop.store(true, Ordering::Relaxed);
        for t in threads {
            t.join().expect("creator thread");
        }
        PhaseResult {
            children,
            leaky_children: leaky,
            leaked_fds: leaked,
            created: made.load(Ordering::Relaxed),
            elapsed,
        }
    }

    fn open_fds() -> BTreeSet<String> {
        std::fs::read_dir("/proc/self/fd")
            .expect("/proc/self/fd")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn cloexec__no_shim_descriptor_survives_exec_in_a_concurrently_forked_child() {
        let before = open_fds();
        let spawner = Spawner::new();
        // What every child inherits anyway (e.g. a jobserver pipe from cargo).
        let inherited = spawner.run();
        assert_eq!(
            spawner.run(),
            inherited,
            "the unloaded baseline is not stable"
        );

        let shim = phase(
            &spawner,
            &inherited,
            make_through_shim,
            2000,
            Duration::from_secs(9),
            u64::MAX,
        );
        println!(
            "shim phase: {} children in {:.1?}, {} descriptors created concurrently, {} leaking children ({} descriptors)",
            shim.children, shim.elapsed, shim.created, shim.leaky_children, shim.leaked_fds
        );
        let plain = phase(
            &spawner,
            &inherited,
            make_plain_racy,
            2000,
            Duration::from_secs(9),
            5,
        );
        println!(
            "pipe()+fcntl phase: {} children in {:.1?}, {} pipes created concurrently, {} leaking children ({} descriptors)",
            plain.children, plain.elapsed, plain.created, plain.leaky_children, plain.leaked_fds
        );

        assert!(
            shim.children >= 500,
            "too few children to mean anything: {}",
            shim.children
        );
        assert!(
            shim.created >= shim.children,
            "the creators barely ran: {}",
            shim.created
        );
        assert_eq!(
            shim.leaky_children, 0,
            "a close-on-exec descriptor made by the shim survived exec"
        );
        assert!(
            plain.leaky_children >= 1,
            "pipe()+fcntl never leaked in {} children: the test cannot see a leak",
            plain.children
        );
        let leaked: Vec<_> = open_fds().difference(&before).cloned().collect();
        assert!(
            leaked.is_empty(),
            "descriptors leaked in this process: {leaked:?}"
        );
    }
}
