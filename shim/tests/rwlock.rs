//! `pthread_rwlock_init` re-initialising a held lock (DARWIN-CATALOG A14).
#![allow(non_snake_case)]

use slurm_shim::rwlock::slurm_shim_pthread_rwlock_init;

fn new_lock() -> Box<libc::pthread_rwlock_t> {
    Box::new(libc::PTHREAD_RWLOCK_INITIALIZER)
}

#[test]
fn pthread_rwlock_init__reinit_of_write_held_lock_succeeds_and_lock_works() {
    let mut l = new_lock();
    let p: *mut libc::pthread_rwlock_t = &mut *l;
    // SAFETY: `p` is a valid lock used by this thread only.
    unsafe {
        assert_eq!(slurm_shim_pthread_rwlock_init(p, core::ptr::null()), 0);
        assert_eq!(libc::pthread_rwlock_wrlock(p), 0);
        assert_eq!(libc::pthread_rwlock_trywrlock(p), libc::EBUSY, "held");
        assert_eq!(slurm_shim_pthread_rwlock_init(p, core::ptr::null()), 0);
        // Usable and unlocked after the re-init.
        assert_eq!(libc::pthread_rwlock_trywrlock(p), 0);
        assert_eq!(libc::pthread_rwlock_unlock(p), 0);
        assert_eq!(libc::pthread_rwlock_rdlock(p), 0);
        assert_eq!(libc::pthread_rwlock_tryrdlock(p), 0);
        assert_eq!(libc::pthread_rwlock_trywrlock(p), libc::EBUSY);
        assert_eq!(
            slurm_shim_pthread_rwlock_init(p, core::ptr::null()),
            0,
            "read-held"
        );
        assert_eq!(libc::pthread_rwlock_wrlock(p), 0);
        assert_eq!(libc::pthread_rwlock_unlock(p), 0);
        assert_eq!(libc::pthread_rwlock_destroy(p), 0);
    }
}

#[test]
fn pthread_rwlock_init__with_attributes_and_null_lock() {
    let mut l = new_lock();
    // SAFETY: valid attribute object and lock.
    unsafe {
        let mut attr: libc::pthread_rwlockattr_t = core::mem::zeroed();
        assert_eq!(libc::pthread_rwlockattr_init(&mut attr), 0);
        assert_eq!(
            libc::pthread_rwlockattr_setpshared(&mut attr, libc::PTHREAD_PROCESS_PRIVATE),
            0
        );
        assert_eq!(slurm_shim_pthread_rwlock_init(&mut *l, &attr), 0);
        assert_eq!(libc::pthread_rwlock_wrlock(&mut *l), 0);
        assert_eq!(libc::pthread_rwlock_unlock(&mut *l), 0);
        assert_eq!(libc::pthread_rwlockattr_destroy(&mut attr), 0);
        slurm_shim::errno::set(77);
        assert_eq!(
            slurm_shim_pthread_rwlock_init(core::ptr::null_mut(), core::ptr::null()),
            libc::EINVAL
        );
        assert_eq!(
            slurm_shim::errno::get(),
            77,
            "pthread functions return the error, errno untouched"
        );
    }
}

#[test]
fn pthread_rwlock_init__child_of_fork_reinits_lock_held_by_parent_thread() {
    let lock: &'static mut libc::pthread_rwlock_t = Box::leak(new_lock());
    let p = lock as *mut libc::pthread_rwlock_t as usize;
    let (tx, rx) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    // Another thread holds the write lock while this thread forks.
    let holder = std::thread::spawn(move || {
        // SAFETY: the leaked lock lives for the whole process.
        assert_eq!(unsafe { libc::pthread_rwlock_wrlock(p as *mut _) }, 0);
        tx.send(()).expect("send");
        done_rx.recv().expect("recv");
        // SAFETY: this thread holds it.
        assert_eq!(unsafe { libc::pthread_rwlock_unlock(p as *mut _) }, 0);
    });
    rx.recv().expect("recv");
    // SAFETY: the child only calls async-signal-safe-in-practice pthread functions on the
    // inherited lock and _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork");
    if pid == 0 {
        let p = p as *mut libc::pthread_rwlock_t;
        // SAFETY: the child owns its copy of the lock; the holder thread does not exist here.
        let code = unsafe {
            if libc::pthread_rwlock_trywrlock(p) != libc::EBUSY {
                10
            } else if slurm_shim_pthread_rwlock_init(p, core::ptr::null()) != 0 {
                11
            } else if libc::pthread_rwlock_wrlock(p) != 0 {
                12
            } else if libc::pthread_rwlock_unlock(p) != 0 {
                13
            } else {
                0
            }
        };
        // SAFETY: leave the child without running the parent's destructors.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: waiting for our own child.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    done_tx.send(()).expect("send");
    holder.join().expect("join");
    assert!(libc::WIFEXITED(status), "child status {status:#x}");
    assert_eq!(
        libc::WEXITSTATUS(status),
        0,
        "child step that failed (10 = lock not inherited held)"
    );
}
