//! `slurm_shim_fexecve` against glibc's `fexecve` on the same inputs: errno for bad
//! arguments and descriptors, and a successful exec (in a forked child) that passes `argv`
//! and `envp` through; no leaked descriptor.
#![allow(non_snake_case)]
// Every unsafe block here is a direct libc call on locals or descriptors made just before;
// a SAFETY line on each would repeat that.
#![allow(clippy::undocumented_unsafe_blocks)]

#[cfg(not(target_os = "linux"))]
#[test]
fn fexecve__differential_tests_need_glibc() {
    eprintln!("skipped: the fexecve tests compare the shim with glibc and run on Linux only");
}

#[cfg(target_os = "linux")]
mod common;

#[cfg(target_os = "linux")]
mod linux {
    use crate::common::{errno, leak_checked};
    use std::ffi::CString;
    use std::os::unix::fs::PermissionsExt;

    use libc::{c_char, c_int};
    use slurm_shim::fexecve::slurm_shim_fexecve;

    type Fexecve = unsafe extern "C" fn(c_int, *const *const c_char, *const *const c_char) -> c_int;
    const IMPLS: [(&str, Fexecve); 2] = [("glibc", libc::fexecve), ("shim", shim_fexecve)];

    /// The shim with the libc crate's argument types (it takes Linux's `char *const[]`).
    unsafe extern "C" fn shim_fexecve(
        fd: c_int,
        argv: *const *const c_char,
        envp: *const *const c_char,
    ) -> c_int {
        // SAFETY: the same pointers, only the element type's constness differs.
        unsafe { slurm_shim_fexecve(fd, argv.cast(), envp.cast()) }
    }

    fn open(path: &std::path::Path, flags: c_int) -> c_int {
        let c = CString::new(path.as_os_str().as_encoded_bytes()).expect("path");
        let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC) };
        assert!(fd >= 0, "open {path:?}: {}", errno());
        fd
    }

    /// A shell found on this machine (the test needs one executable to run).
    fn shell() -> std::path::PathBuf {
        ["/bin/sh", "/usr/bin/sh"]
            .iter()
            .map(std::path::PathBuf::from)
            .find(|p| p.exists())
            .expect("a POSIX shell")
    }

    #[test]
    fn fexecve__bad_arguments_and_descriptors_fail_like_glibc() {
        leak_checked(|| {
            let dir = tempfile::tempdir().expect("tempdir");
            let plain = dir.path().join("plain");
            std::fs::write(&plain, "#!/bin/sh\nexit 0\n").expect("write");
            std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644))
                .expect("chmod");
            let dfd = open(dir.path(), libc::O_RDONLY | libc::O_DIRECTORY);
            let ffd = open(&plain, libc::O_RDONLY);
            let sh = open(&shell(), libc::O_RDONLY);
            let mut p = [-1; 2];
            assert_eq!(unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_CLOEXEC) }, 0);

            let arg0 = CString::new("x").expect("arg");
            let argv = [arg0.as_ptr(), std::ptr::null()];
            let envp = [std::ptr::null::<c_char>()];
            let (a, e, null) = (argv.as_ptr(), envp.as_ptr(), std::ptr::null());
            let cases: Vec<(
                &str,
                c_int,
                *const *const c_char,
                *const *const c_char,
                c_int,
            )> = vec![
                ("fd -1", -1, a, e, libc::EINVAL),
                ("fd -1, NULL argv", -1, null, e, libc::EINVAL),
                ("NULL argv", sh, null, e, libc::EINVAL),
                ("NULL envp", sh, a, null, libc::EINVAL),
                ("closed fd", 999, a, e, libc::EBADF),
                ("directory", dfd, a, e, libc::EACCES),
                ("no execute permission", ffd, a, e, libc::EACCES),
                ("pipe", p[0], a, e, libc::EACCES),
            ];
            for (what, fd, argv, envp, want) in cases {
                let mut got = vec![];
                for (name, f) in IMPLS {
                    let r = unsafe { f(fd, argv, envp) };
                    got.push((name, r, errno()));
                }
                assert_eq!(
                    (got[1].1, got[1].2),
                    (got[0].1, got[0].2),
                    "{what}: {got:?}"
                );
                assert_eq!((got[1].1, got[1].2), (-1, want), "{what}");
            }
            for fd in [dfd, ffd, sh, p[0], p[1]] {
                unsafe { libc::close(fd) };
            }
        });
    }

    #[test]
    fn fexecve__runs_the_file_with_argv_and_envp_like_glibc() {
        leak_checked(|| {
            let sh = open(&shell(), libc::O_RDONLY);
            let args: Vec<CString> = ["sh", "-c", "exit $CODE"]
                .iter()
                .map(|s| CString::new(*s).expect("arg"))
                .collect();
            let env = CString::new("CODE=37").expect("env");
            let argv: Vec<*const c_char> = args
                .iter()
                .map(|a| a.as_ptr())
                .chain([std::ptr::null()])
                .collect();
            let envp = [env.as_ptr(), std::ptr::null()];
            for (name, f) in IMPLS {
                let pid = unsafe { libc::fork() };
                if pid == 0 {
                    unsafe {
                        f(sh, argv.as_ptr(), envp.as_ptr());
                        libc::_exit(100 + *libc::__errno_location() % 100);
                    }
                }
                assert!(pid > 0);
                let mut status = 0;
                assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
                assert!(libc::WIFEXITED(status), "{name}: status {status:#x}");
                assert_eq!(
                    libc::WEXITSTATUS(status),
                    37,
                    "{name}: exit status (100+ is exec's errno)"
                );
            }
            unsafe { libc::close(sh) };
        });
    }
}
