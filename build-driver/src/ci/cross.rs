//! Lane 4 of `cargo xtask ci` and `lines verify`: the Mach-O cross build (with s2n-tls where
//! the line has tls/s2n) and its bottle.

use super::Builds;
use crate::build_slurm::BuildArgs;
use crate::build_slurm::BuildOutput;
use crate::deps::DepsArgs;
use crate::report::Report;
use driver_common::personality::Personality;

/// Lane 4: the target's json-c, libjwt and hwloc (and s2n-tls where the line's builds have
/// tls/s2n), then Slurm built with them for aarch64-apple-darwin (zig), its install checked
/// to be arm64 Mach-O.
pub(super) fn cross_lane(builds: &Builds<'_>, report: &mut Report) -> Option<BuildOutput> {
    let (sh, root) = (builds.sh, builds.root);
    // Darwin cross lane: the target's json-c, libjwt and hwloc, then Slurm with them.
    let deps = report.step("deps --target aarch64-apple-darwin", || {
        crate::deps::run(
            sh,
            root,
            DepsArgs {
                target: "aarch64-apple-darwin".to_string(),
                jobs: None,
                debian_mirror: None,
                build_all: true,
                macos_min: None,
            },
        )
        .map(|d| {
            let text = d.dir.display().to_string();
            (d, text)
        })
    });
    // A pinned release is built as the bottle's keg (Cellar prefix, staged with DESTDIR), so
    // the bottle step below packs this very build instead of building again.
    let bottle = builds.src.version.as_deref().and_then(|v| {
        let pin = crate::bottle::pinned(root, v).ok()?;
        crate::bottle::source_of(&pin).ok()?;
        let layout = crate::bottle::Layout::new(
            crate::bottle::FORMULA,
            v,
            &pin.line,
            "aarch64-apple-darwin",
        )
        .ok()?;
        Some((pin, layout))
    });
    // tls/s2n where the native and darwin builds have it (`lines verify` of 25.05 and later),
    // and in a bottle of such a line: s2n-tls cross-compiled against the deps' libcrypto
    // (s2n/apple.rs).
    let wants_s2n = builds.s2n || bottle.as_ref().is_some_and(|(_, l)| l.has_tls());
    let s2n = match (&deps, wants_s2n) {
        (Some(_), true) => report
            .step(
                "s2n --target aarch64-apple-darwin (static, deps' libcrypto)",
                || {
                    crate::s2n::run(
                        sh,
                        root,
                        crate::s2n::S2nArgs {
                            jobs: None,
                            target: Some("aarch64-apple-darwin".to_string()),
                        },
                    )
                    .map(|p| format!("installed in {}", p.display()))
                },
            )
            .is_some(),
        _ => false,
    };
    // The Mach-O build outside the bottle's keg layout (staging prefix), with or without s2n.
    let staged_args = |d: &crate::deps::DepsPrefix, with_s2n: bool| BuildArgs {
        target: Some("aarch64-apple-darwin".to_string()),
        deps_prefix: Some(d.dir.clone()),
        macos_min: None,
        with_s2n,
        s2n_prefix: None,
        ..builds.args(Personality::Native, false)
    };
    // A bottle of a line with TLS is built with s2n-tls (bottle::build_args), so this one
    // build, audited below in ci.rs, is the TLS build too.
    let macho = report.step_after(
        if s2n {
            "build-slurm --target aarch64-apple-darwin --with-s2n (zig, deps, Mach-O check)"
        } else {
            "build-slurm --target aarch64-apple-darwin (zig, deps, Mach-O check)"
        },
        &deps,
        |d| {
            let args = match &bottle {
                Some((_, layout)) => crate::bottle::build_args(root, layout, &d.dir, None),
                None => staged_args(d, s2n),
            };
            builds.build(&args)
        },
    );
    match &bottle {
        Some((pin, layout)) => {
            report.step_after(
                "bottle --target aarch64-apple-darwin (node tool, keg, signatures, scan)",
                &macho,
                |b| {
                    let node_tool = crate::bottle::node_tool::build(sh, root, layout.target)?;
                    let out = driver_common::staging::cargo_target_dir(
                        root,
                        std::env::var("CARGO_TARGET_DIR").ok(),
                    )
                    .join("bottle");
                    let made =
                        crate::bottle::package(root, layout, pin, &b.prefix, &node_tool, &out)?;
                    let size = std::fs::metadata(&made.bottle)
                        .map(|m| m.len())
                        .unwrap_or(0);
                    println!("{}", made.report.summary());
                    Ok(format!(
                        "{} ({size} bytes, {} Mach-O verified by {})",
                        made.bottle.display(),
                        made.report.macho_files,
                        if crate::bottle::codesign::SECOND_VERIFIER {
                            "ours and apple-codesign"
                        } else {
                            "ours only: the driver was built without the apple-codesign feature"
                        }
                    ))
                },
            );
        }
        None => report.not_applicable(
            "bottle --target aarch64-apple-darwin",
            "a bottle is made of a pinned release tarball only (not --source, not a snapshot)",
        ),
    }
    macho
}
