//! Descriptor creation through the shim against glibc's own calls, uncontended.
//!
//! `cargo bench -p slurm-shim --bench descriptors` prints one row per call: ns per call
//! for glibc and for the shim (median of several rounds; each call includes closing what it
//! created, and for accept4 the client side is set up outside the timed part) and the ratio
//! shim/glibc. The target is a ratio of at most 1.5.
// Every unsafe block here is a direct libc call on locals or descriptors made just before;
// a SAFETY line on each would repeat that.
#![allow(clippy::undocumented_unsafe_blocks)]

#[cfg(not(target_os = "linux"))]
fn main() {
    println!("descriptors bench skipped: the glibc baseline it compares with exists on Linux only");
}

#[cfg(target_os = "linux")]
fn main() {
    linux::main();
}

#[cfg(target_os = "linux")]
mod linux {
    use std::hint::black_box;
    use std::time::Instant;

    use libc::{c_int, c_uint};
    use slurm_shim::{accept4, eventfd, pipe2, socket};

    const ROUNDS: usize = 7;

    fn close(fd: c_int) {
        assert!(
            fd >= 0,
            "creation failed: {}",
            std::io::Error::last_os_error()
        );
        unsafe { libc::close(fd) };
    }

    /// Median ns per call of `f` run `n` times, over ROUNDS rounds.
    fn time(n: usize, mut f: impl FnMut()) -> f64 {
        for _ in 0..n / 10 {
            f();
        }
        let mut samples: Vec<f64> = (0..ROUNDS)
            .map(|_| {
                let start = Instant::now();
                for _ in 0..n {
                    f();
                }
                start.elapsed().as_nanos() as f64 / n as f64
            })
            .collect();
        samples.sort_by(f64::total_cmp);
        samples[ROUNDS / 2]
    }

    fn pipe_with(
        f: unsafe extern "C" fn(*mut c_int, c_int) -> c_int,
        flags: c_int,
    ) -> impl FnMut() {
        move || {
            let mut p = [-1; 2];
            assert_eq!(unsafe { f(black_box(p.as_mut_ptr()), flags) }, 0);
            close(p[0]);
            close(p[1]);
        }
    }

    fn glibc_socket(d: c_int, t: c_int, p: c_int) -> c_int {
        unsafe { libc::socket(d, t, p) }
    }
    fn shim_socket(d: c_int, t: c_int, p: c_int) -> c_int {
        socket::slurm_shim_socket(d, t, p)
    }

    fn glibc_eventfd(i: c_uint, f: c_int) -> c_int {
        unsafe { libc::eventfd(i, f) }
    }
    fn shim_eventfd(i: c_uint, f: c_int) -> c_int {
        eventfd::slurm_shim_eventfd(i, f)
    }

    type Accept =
        unsafe extern "C" fn(c_int, *mut libc::sockaddr, *mut libc::socklen_t, c_int) -> c_int;

    /// ns per accept4 (+ close), with batches of clients connected outside the timed part.
    fn accept_ns(f: Accept, nonblocking_listener: bool, flags: c_int) -> f64 {
        let dir = std::env::temp_dir().join(format!("shim-bench-{}", std::process::id()));
        let _ = std::fs::remove_file(&dir);
        let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
        addr.sun_family = libc::AF_UNIX as _;
        for (d, &s) in addr
            .sun_path
            .iter_mut()
            .zip(dir.as_os_str().as_encoded_bytes())
        {
            *d = s as _;
        }
        let len = size_of::<libc::sockaddr_un>() as libc::socklen_t;
        let l = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
        unsafe {
            assert_eq!(libc::bind(l, (&raw const addr).cast(), len), 0);
            assert_eq!(libc::listen(l, 512), 0);
            if nonblocking_listener {
                libc::fcntl(l, libc::F_SETFL, libc::O_NONBLOCK);
            }
        }
        const BATCH: usize = 256;
        let mut samples = vec![];
        for _ in 0..ROUNDS * 8 {
            let clients: Vec<c_int> = (0..BATCH)
                .map(|_| unsafe {
                    let c = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
                    assert_eq!(libc::connect(c, (&raw const addr).cast(), len), 0);
                    c
                })
                .collect();
            let start = Instant::now();
            for _ in 0..BATCH {
                close(unsafe { f(l, std::ptr::null_mut(), std::ptr::null_mut(), flags) });
            }
            samples.push(start.elapsed().as_nanos() as f64 / BATCH as f64);
            clients.into_iter().for_each(close);
        }
        close(l);
        let _ = std::fs::remove_file(&dir);
        samples.sort_by(f64::total_cmp);
        samples[samples.len() / 2]
    }

    pub fn main() {
        let n = 20_000;
        let mut rows: Vec<(String, f64, f64)> = vec![];
        let mut row = |name: &str, g: f64, s: f64| {
            println!("{name:<52} {g:>10.0} {s:>10.0} {:>7.2}", s / g);
            rows.push((name.to_string(), g, s));
        };
        println!(
            "{:<52} {:>10} {:>10} {:>7}",
            "call (each includes closing what it made)", "glibc ns", "shim ns", "ratio"
        );
        for (name, flags) in [
            ("pipe2(0)", 0),
            ("pipe2(O_CLOEXEC)", libc::O_CLOEXEC),
            (
                "pipe2(O_CLOEXEC|O_NONBLOCK)",
                libc::O_CLOEXEC | libc::O_NONBLOCK,
            ),
        ] {
            let g = time(n, pipe_with(libc::pipe2, flags));
            let s = time(n, pipe_with(pipe2::slurm_shim_pipe2, flags));
            row(name, g, s);
        }
        for (name, d, t) in [
            (
                "socket(AF_INET, SOCK_STREAM)",
                libc::AF_INET,
                libc::SOCK_STREAM,
            ),
            (
                "socket(AF_INET, SOCK_STREAM|SOCK_CLOEXEC)",
                libc::AF_INET,
                libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            ),
            (
                "socket(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC|SOCK_NONBLOCK)",
                libc::AF_UNIX,
                libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            ),
        ] {
            let g = time(n, || close(glibc_socket(d, t, 0)));
            let s = time(n, || close(shim_socket(d, t, 0)));
            row(name, g, s);
        }
        for (name, nb, flags) in [
            (
                "accept4(SOCK_CLOEXEC), non-blocking listener",
                true,
                libc::SOCK_CLOEXEC,
            ),
            (
                "accept4(SOCK_CLOEXEC), blocking listener",
                false,
                libc::SOCK_CLOEXEC,
            ),
            (
                "accept4(SOCK_CLOEXEC|SOCK_NONBLOCK), non-blocking l.",
                true,
                libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            ),
        ] {
            let g = accept_ns(libc::accept4, nb, flags);
            let s = accept_ns(accept4::slurm_shim_accept4, nb, flags);
            row(name, g, s);
        }
        let flags = libc::EFD_CLOEXEC | libc::EFD_NONBLOCK;
        let g = time(n / 4, || close(glibc_eventfd(0, flags)));
        let s = time(n / 4, || close(shim_eventfd(0, flags)));
        row("eventfd(0, EFD_CLOEXEC|EFD_NONBLOCK)", g, s);
        let (gfd, sfd) = (glibc_eventfd(0, flags), shim_eventfd(0, flags));
        let mut v = 0u64;
        let g = time(n, || unsafe {
            assert_eq!(libc::eventfd_write(gfd, 1), 0);
            assert_eq!(libc::eventfd_read(gfd, &mut v), 0);
        });
        let s = time(n, || unsafe {
            assert_eq!(eventfd::slurm_shim_eventfd_write(sfd, 1), 0);
            assert_eq!(eventfd::slurm_shim_eventfd_read(sfd, &mut v), 0);
        });
        row("eventfd_write(1) + eventfd_read", g, s);
        close(gfd);
        close(sfd);
        let over: Vec<_> = rows
            .iter()
            .filter(|(_, g, s)| s / g > 1.5)
            .map(|(n, _, _)| n.as_str())
            .collect();
        println!(
            "\nrows above the 1.5x target: {}",
            if over.is_empty() {
                "none".to_string()
            } else {
                over.join("; ")
            }
        );
    }
}
