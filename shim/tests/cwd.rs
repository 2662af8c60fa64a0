//! `get_current_dir_name` against glibc's. The working directory and `PWD` are
//! process-wide, so all scenarios run in one test, one after the other.
#![allow(non_snake_case)]

use std::ffi::CStr;
use std::os::unix::ffi::OsStrExt;

use libc::c_char;
use slurm_shim::cwd::slurm_shim_get_current_dir_name;

unsafe extern "C" {
    /// glibc's function (declared by <unistd.h> under _GNU_SOURCE; not in the libc crate).
    fn get_current_dir_name() -> *mut c_char;
}

fn take(p: *mut c_char) -> Option<Vec<u8>> {
    if p.is_null() {
        return None;
    }
    // SAFETY: a malloc'd NUL-terminated string, freed once here with free().
    let v = unsafe { CStr::from_ptr(p) }.to_bytes().to_vec();
    // SAFETY: as above.
    unsafe { libc::free(p.cast()) };
    Some(v)
}

fn both() -> (Option<Vec<u8>>, Option<Vec<u8>>, i32, i32) {
    slurm_shim::errno::set(0);
    // SAFETY: glibc's function has no preconditions.
    let g = take(unsafe { get_current_dir_name() });
    let ge = slurm_shim::errno::get();
    slurm_shim::errno::set(0);
    let s = take(slurm_shim_get_current_dir_name());
    let se = slurm_shim::errno::get();
    (g, s, ge, se)
}

fn set_pwd(v: Option<&[u8]>) {
    // SAFETY: this test binary runs a single test, so no other thread reads the environment.
    unsafe {
        match v {
            Some(v) => std::env::set_var("PWD", std::ffi::OsStr::from_bytes(v)),
            None => std::env::remove_var("PWD"),
        }
    }
}

#[test]
fn get_current_dir_name__same_as_glibc_for_right_wrong_unset_and_symlinked_pwd() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let real = tmp.path().join("real");
    std::fs::create_dir(&real).expect("mkdir");
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    let other = tmp.path().join("other");
    std::fs::create_dir(&other).expect("mkdir");
    let old_cwd = std::env::current_dir().expect("cwd");
    let old_pwd = std::env::var_os("PWD");
    std::env::set_current_dir(&link).expect("chdir");
    let canon = std::fs::canonicalize(&real)
        .expect("canon")
        .as_os_str()
        .as_bytes()
        .to_vec();
    let link_b = link.as_os_str().as_bytes().to_vec();

    type Case = (&'static str, Option<Vec<u8>>, Vec<u8>);
    let cases: Vec<Case> = vec![
        (
            "PWD through the symlink",
            Some(link_b.clone()),
            link_b.clone(),
        ),
        ("PWD canonical", Some(canon.clone()), canon.clone()),
        (
            "PWD names another directory",
            Some(other.as_os_str().as_bytes().to_vec()),
            canon.clone(),
        ),
        (
            "PWD does not exist",
            Some(b"/nonexistent/xyz".to_vec()),
            canon.clone(),
        ),
        ("PWD empty", Some(Vec::new()), canon.clone()),
        ("PWD unset", None, canon.clone()),
        ("PWD relative '.'", Some(b".".to_vec()), Vec::new()),
    ];
    for (what, pwd, want) in cases {
        set_pwd(pwd.as_deref());
        let (g, s, _ge, se) = both();
        assert_eq!(s, g, "{what}");
        if !want.is_empty() {
            assert_eq!(s.as_deref(), Some(&want[..]), "{what}");
        }
        // On success glibc may leave stat's ENOENT in errno; the shim preserves errno.
        assert_eq!(se, 0, "{what}: errno preserved on success");
    }

    // Current directory removed: both fail the same way (getcwd's ENOENT).
    let gone = tmp.path().join("gone");
    std::fs::create_dir(&gone).expect("mkdir");
    std::env::set_current_dir(&gone).expect("chdir");
    std::fs::remove_dir(&gone).expect("rmdir");
    set_pwd(None);
    let (g, s, ge, se) = both();
    assert_eq!((s.is_none(), se), (g.is_none(), ge), "removed cwd");
    assert_eq!(ge, libc::ENOENT);

    std::env::set_current_dir(old_cwd).expect("chdir back");
    set_pwd(old_pwd.as_ref().map(|v| v.as_bytes()));
}
