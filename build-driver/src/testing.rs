//! The driver's own test helpers: the shared ones (`driver_common::testing`) and those that
//! need the driver's zig toolchain lookup.

pub use driver_common::testing::*;
use std::path::Path;
use xshell::{Shell, cmd};

/// The pinned zig, or `None` with the reason printed (the calling test is skipped).
pub fn zig_or_skip() -> Option<std::path::PathBuf> {
    match crate::cross::zig::find(&Shell::new().unwrap()) {
        Ok(z) => Some(z.path),
        Err(e) => {
            eprintln!("SKIP: {e}");
            None
        }
    }
}

/// A small Mach-O file for `triple` linked by the pinned zig from C `source`: an executable,
/// or with `dylib` a dynamic library whose install name is `install_name`. `None` (with the
/// reason printed) where zig is not installed.
pub fn zig_macho(
    dir: &Path,
    triple: &str,
    name: &str,
    source: &str,
    dylib: Option<&str>,
) -> Option<std::path::PathBuf> {
    let sh = Shell::new().unwrap();
    let zig = zig_or_skip()?;
    let target = driver_common::targets::lookup(triple)
        .unwrap()
        .zig_target()
        .unwrap();
    let c = dir.join(format!("{name}.c"));
    write(&c, source);
    let out = dir.join(name);
    let mut args = vec![
        "cc".to_string(),
        "-target".into(),
        target,
        "-O1".into(),
        "-g0".into(),
    ];
    if let Some(id) = dylib {
        args.extend(["-shared".into(), format!("-Wl,-install_name,{id}")]);
    }
    args.extend([
        c.display().to_string(),
        "-o".into(),
        out.display().to_string(),
    ]);
    cmd!(sh, "{zig} {args...}").quiet().run().unwrap();
    Some(out)
}
