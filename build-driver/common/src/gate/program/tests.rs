use super::*;
use std::fs;
use std::os::unix::fs::PermissionsExt;

/// A stand-in that prints its environment and working directory.
fn stand_in(dir: &Path) -> PathBuf {
    let p = dir.join("prog");
    fs::write(&p, "#!/bin/sh\npwd\nenv\n").unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
    p
}

#[test]
fn program__attack_the_callers_environment_never_reaches_the_child() {
    let d = tempfile::tempdir().unwrap();
    let p = Program::checked(&stand_in(d.path())).unwrap();
    let mut c = p.command();
    // What a caller's environment would carry (set on the command as if inherited: the
    // clean-up must remove what is already there).
    c.env("LD_PRELOAD", "/tmp/evil.so")
        .env("DYLD_INSERT_LIBRARIES", "/tmp/evil.dylib")
        .env("SLURM_CONF", "/tmp/evil.conf");
    env::clean(&mut c);
    let out = c.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("/\n"), "{text}");
    for bad in [
        "LD_PRELOAD",
        "DYLD_INSERT_LIBRARIES",
        "SLURM_CONF",
        "HOME=",
        "TMPDIR",
    ] {
        assert!(!text.contains(bad), "{bad} reached the child:\n{text}");
    }
    assert!(
        text.contains(&format!("PATH={}", env::SYSTEM_PATH)),
        "{text}"
    );
    // The control: an allowed variable set on purpose does reach it.
    let mut c = p.command();
    env::allow(&mut c, "SLURM_CONF", "/etc/slurm/slurm.conf");
    let text = String::from_utf8_lossy(&c.output().unwrap().stdout).to_string();
    assert!(text.contains("SLURM_CONF=/etc/slurm/slurm.conf"), "{text}");
}

#[test]
#[should_panic(expected = "not on the gate's allow-list")]
fn program__an_unlisted_variable_is_a_programming_error() {
    let mut c = std::process::Command::new("/bin/true");
    env::allow(&mut c, "LD_PRELOAD", "x");
}

#[test]
fn program__attack_writable_program_or_directory_is_refused_before_it_runs() {
    let d = tempfile::tempdir().unwrap();
    let p = stand_in(d.path());
    Program::checked(&p).unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o777)).unwrap();
    let e = Program::checked(&p).unwrap_err().to_string();
    assert!(e.contains("mode 0777") && e.contains("chmod go-w"), "{e}");
    fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(d.path(), fs::Permissions::from_mode(0o775)).unwrap();
    assert!(
        Program::checked(&p).is_err(),
        "a group-writable directory above"
    );
    fs::set_permissions(d.path(), fs::Permissions::from_mode(0o700)).unwrap();
    let e = Program::checked(&d.path().join("absent"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("does not exist"), "{e}");
    fs::write(d.path().join("plain"), "x").unwrap();
    let e = Program::checked(&d.path().join("plain"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("not an executable"), "{e}");
}

#[test]
fn program__system_programs_come_from_system_directories_only() {
    let p = Program::system("sh").unwrap();
    assert!(
        p.path.starts_with("/usr/bin") || p.path.starts_with("/bin"),
        "{p:?}"
    );
    let e = Program::system("no-such-program-here")
        .unwrap_err()
        .to_string();
    assert!(e.contains(env::SYSTEM_PATH), "{e}");
}
