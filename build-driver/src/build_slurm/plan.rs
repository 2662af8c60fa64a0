//! The build plan: everything `build-slurm` decides before it does any work, computed once
//! at the top of [`super::build`] and read by every later step (stamp, run, verify) instead of
//! being recomputed: the target row and the host, whether this is a cross build, the
//! personality, whether the shim is linked, the staging directories, the patch series, the
//! toolchain (compiler, and the zig wrappers of a macOS target built on Linux), the macOS
//! minimum, the configure arguments and the make variables.

use super::configure::{self, Compiler, ConfigureSpec};
use super::link;
use crate::build_slurm::BuildArgs;
use crate::cross::{self, zig::ZigToolchain};
use crate::fetch::{self, SourceTree};
use crate::patches;
use driver_common::error::{Error, Result};
use driver_common::lines::Line;
use driver_common::personality::Personality;
use driver_common::targets::{self, Os, Target};
use driver_common::util::process::{on_path, require_tool};
use driver_common::util::stamp::{self, Inputs};
use std::path::{Path, PathBuf};
use xshell::Shell;

/// The directories of one staged build.
#[derive(Clone, Debug)]
pub struct Dirs {
    /// `<cargo target dir>/slurm/<staging name>`: holds the others, the logs and the stamp.
    pub base: PathBuf,
    /// The patched copy of the source that is configured.
    pub src: PathBuf,
    /// The out-of-tree build directory (kept after install).
    pub build: PathBuf,
    /// The install prefix the programs are configured for (`--prefix`, else `<base>/prefix`).
    pub prefix: PathBuf,
    /// `--destdir`: `make install DESTDIR=<destdir>`, the files of `prefix` land in
    /// `<destdir>/<prefix>` ([`Dirs::staged`]).
    pub destdir: Option<PathBuf>,
}

impl Dirs {
    /// The directories below `base`; the prefix is `prefix` (made absolute) when given.
    fn new(base: PathBuf, prefix: Option<&Path>, destdir: Option<&Path>) -> Result<Dirs> {
        Ok(Dirs {
            src: base.join("src"),
            build: base.join("build"),
            prefix: match prefix {
                Some(p) => absolute(p)?,
                None => base.join("prefix"),
            },
            destdir: destdir.map(absolute).transpose()?,
            base,
        })
    }

    /// Where the installed files are: `<destdir>/<prefix>` with `--destdir`, else the prefix.
    pub fn staged(&self) -> PathBuf {
        staged_path(self.destdir.as_deref(), &self.prefix)
    }

    pub fn stamp(&self) -> PathBuf {
        self.base.join("stamp")
    }

    pub fn log(&self, step: &str) -> PathBuf {
        self.base.join(format!("{step}.log"))
    }
}

/// The C toolchain of a build.
#[derive(Clone, Debug)]
pub struct Toolchain {
    pub compiler: Compiler,
    /// The zig wrappers, when the build uses them (a macOS target on Linux, no user compiler).
    pub zig: Option<ZigToolchain>,
}

/// Everything decided before the work starts.
#[derive(Clone, Debug)]
pub struct Plan {
    pub target: &'static Target,
    pub host: &'static Target,
    /// Whether the target is another machine than the host (`--build/--host`, the staging
    /// name's triple, the target's own pkg-config).
    pub cross: bool,
    pub personality: Personality,
    /// Whether the shim header is force-included and the shim linked.
    pub uses_shim: bool,
    /// The oldest macOS an Apple target is built for (`None`: a Linux target).
    pub macos_min: Option<&'static str>,
    pub source: SourceTree,
    /// The source's release line (known to [`driver_common::lines`]).
    pub line: Line,
    pub dirs: Dirs,
    /// The patches to apply (empty with `--no-patches`).
    pub series: Vec<PathBuf>,
    /// The checkout (its `patches/` are placed and applied).
    pub root: PathBuf,
    pub no_patches: bool,
    pub toolchain: Toolchain,
    pub deps_prefix: Option<PathBuf>,
    /// s2n-tls for the tls/s2n plugin (`--with-s2n`; checked by `crate::s2n::for_build`).
    pub s2n: Option<PathBuf>,
    /// configure's `--sysconfdir` and `--localstatedir` (`None`: configure's default).
    pub sysconfdir: Option<PathBuf>,
    pub localstatedir: Option<PathBuf>,
    pub jobs: usize,
    /// The force-included shim header.
    pub header: PathBuf,
    pub configure_args: Vec<String>,
    /// The make variables of every make in the build directory; the shim's `LIB_LDFLAGS`
    /// is added by [`Plan::link_shim`].
    pub make_vars: Vec<String>,
}

pub use driver_common::staging::staged_path;

fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).map_err(|e| Error::io(p, e))
}

fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The contributed libraries installed with Slurm (`make -C contribs/<dir> install`), on a
/// Linux target: `libpmi2` (`include/slurm/pmi2.h`, `lib/libpmi2`), the PMI-2 client
/// library an MPI program links for `srun --mpi=pmi2` (the cluster scenarios' PMI-2
/// fixture). Not yet for an Apple target (not tried with zig's linker).
pub const CONTRIBS: &[&str] = &["pmi2"];

/// The staging directory name: `<version>-<personality>[-nopatch][-<triple>]` (the triple
/// only when cross-compiling).
pub fn staging_name(
    version: &str,
    p: Personality,
    no_patches: bool,
    target: &Target,
    cross: bool,
) -> String {
    let mut s = format!("{version}-{}", p.name());
    if no_patches {
        s.push_str("-nopatch");
    }
    if cross {
        s.push('-');
        s.push_str(&target.label());
    }
    s
}

/// The shim header that the build force-includes.
pub fn shim_header(root: &Path) -> PathBuf {
    root.join("shim").join("include").join("slurm_shim.h")
}

impl Plan {
    /// Decides the whole build from the command line and this machine. Needs the source
    /// fetched; prepares the zig wrappers when the build uses them (the only thing it writes).
    pub fn new(sh: &Shell, root: &Path, args: &BuildArgs) -> Result<Plan> {
        let host = targets::host();
        let target = match &args.target {
            Some(t) => targets::lookup(t)?,
            None => host,
        }
        .with_macos_min(args.macos_min.as_deref())?;
        let cross = target.rust != host.rust;
        args.personality.check(target, host)?;
        require_build_tools(sh)?;
        let source = fetch::resolve(sh, root, &args.src)?;
        let line = Line::from_name(
            &source.line,
            &format!("release line of source {}", source.version),
        )?;
        let s2n = if args.with_s2n {
            Some(crate::s2n::for_build(
                root,
                args.s2n_prefix.as_deref(),
                line,
                target,
            )?)
        } else {
            None
        };
        let base = link::cargo_target_dir(root, env_var("CARGO_TARGET_DIR"))
            .join("slurm")
            .join(
                staging_name(
                    &source.version,
                    args.personality,
                    args.no_patches,
                    target,
                    cross,
                ) + if s2n.is_some() { "-s2n" } else { "" },
            );
        if args.destdir.is_some() && args.prefix.is_none() {
            return Err(Error::Usage(
                "--destdir needs --prefix: the prefix the programs are configured for \
                 (e.g. --prefix /opt/homebrew/Cellar/slurm-wlm/24.11.5)"
                    .into(),
            ));
        }
        let dirs = Dirs::new(base, args.prefix.as_deref(), args.destdir.as_deref())?;
        let series = if args.no_patches {
            Vec::new()
        } else {
            patches::series(root, &source.line)?
        };
        let toolchain = toolchain(sh, root, target, host, cross, &dirs.base)?;
        let deps_prefix = args.deps_prefix.as_deref().map(absolute).transpose()?;
        let mut plan = Plan {
            target,
            host,
            cross,
            personality: args.personality,
            uses_shim: configure::uses_shim(args.personality, target),
            macos_min: target.macos_min,
            source,
            line,
            dirs,
            series,
            root: root.to_path_buf(),
            no_patches: args.no_patches,
            toolchain,
            deps_prefix,
            s2n,
            sysconfdir: args.sysconfdir.as_deref().map(absolute).transpose()?,
            localstatedir: args.localstatedir.as_deref().map(absolute).transpose()?,
            jobs: args
                .jobs
                .unwrap_or_else(driver_common::util::process::default_jobs)
                .max(1),
            header: shim_header(root),
            configure_args: Vec::new(),
            make_vars: Vec::new(),
        };
        let spec = plan.configure_spec();
        let configure_args = configure::configure_args(&spec);
        let mut make_vars = vec!["V=0".to_string()];
        if target.os == Os::Apple {
            make_vars.extend(cross::apple_make_vars());
            if cross {
                make_vars.extend(cross::cross_make_vars());
            }
            make_vars.extend(configure::apple_make_cppflags(&spec));
        }
        make_vars.extend(configure::darwin_make_cppflags(&spec));
        plan.configure_args = configure_args;
        plan.make_vars = make_vars;
        Ok(plan)
    }

    /// What configure's command line is made from.
    pub fn configure_spec(&self) -> ConfigureSpec<'_> {
        ConfigureSpec {
            personality: self.personality,
            target: self.target,
            host: self.host,
            cross: self.cross,
            prefix: self.dirs.prefix.clone(),
            sysconfdir: self.sysconfdir.clone(),
            localstatedir: self.localstatedir.clone(),
            compiler: self.toolchain.compiler.clone(),
            header: self.header.clone(),
            user_cppflags: env_var("CPPFLAGS"),
            deps_prefix: self.deps_prefix.clone(),
            s2n: self.s2n.clone(),
            tool_vars: self
                .toolchain
                .zig
                .as_ref()
                .map(|z| cross::zig::configure_env(z, env_var("LDFLAGS").as_deref()))
                .unwrap_or_default(),
        }
    }

    /// Builds the shim for the target (when the build uses it) and adds the `LIB_LDFLAGS`
    /// that link it into Slurm's libraries to the make variables.
    pub fn link_shim(&mut self, sh: &Shell, root: &Path) -> Result<()> {
        if !self.uses_shim {
            return Ok(());
        }
        if !self.header.is_file() {
            return Err(Error::file(
                &self.header,
                "the shim header is missing: run `cargo xtask codegen`",
            ));
        }
        eprintln!("build-slurm: building the shim for {}", self.target.rust);
        let mut shim = link::build_shim(sh, root, self.target, self.macos_min)?;
        if self.target.os == Os::Linux {
            shim = link::relocatable_object(
                sh,
                self.target,
                self.cross,
                &shim,
                &self.dirs.base.join("shim").join("slurm_shim.o"),
            )?;
        }
        let flags = link::lib_ldflags(self.target, &shim, &link::shim_symbols());
        self.make_vars
            .push(format!("LIB_LDFLAGS={}", flags.join(" ")));
        Ok(())
    }

    /// Every input of the build, for the stamp (see [`driver_common::util::stamp`]).
    pub fn inputs(&self, root: &Path) -> Result<Inputs> {
        let mut inputs = Inputs::default();
        inputs.add("driver", env!("CARGO_PKG_VERSION"));
        inputs.add("target", self.target.label());
        inputs.add("personality", self.personality.name());
        inputs.add(
            "source",
            format!(
                "{} {} {}",
                self.source.version,
                self.source.line,
                stamp::tree_metadata_digest(&self.source.path)?
            ),
        );
        if !self.no_patches {
            // the line's patches and our files as the line gets them (patches::tree)
            inputs.add(
                "series",
                patches::tree::inputs_sha256(root, &self.source.line)?,
            );
        }
        if let Some(z) = &self.toolchain.zig {
            inputs.add("zig", &z.version);
            // The wrapper's own text (its flags: the path maps, -g0, -Wl,-S) is an input too.
            let wrapper = std::fs::read_to_string(&z.cc).map_err(|e| Error::io(&z.cc, e))?;
            inputs.add("cc wrapper", wrapper);
            inputs.add(
                "cross-sdk",
                stamp::contents_digest(root, &[cross::zig::sdk_dir(root)])?,
            );
        }
        if self.uses_shim {
            let shim_inputs = [
                root.join("shim").join("src"),
                root.join("shim").join("Cargo.toml"),
                root.join("Cargo.lock"),
                self.header.clone(),
            ];
            inputs.add("shim", stamp::contents_digest(root, &shim_inputs)?);
        }
        inputs.add("compiler", &self.toolchain.compiler.cc);
        inputs.add(
            "configure",
            self.configure_args
                .iter()
                .filter(|a| !a.starts_with("CC="))
                .cloned()
                .collect::<Vec<_>>()
                .join("\u{1f}"),
        );
        inputs.add("make", self.make_vars.join("\u{1f}"));
        if let Some(d) = &self.s2n {
            inputs.add("s2n", crate::s2n::stamp_of(d));
        }
        if let Some(d) = &self.dirs.destdir {
            inputs.add("destdir", d.display().to_string());
        }
        if self.target.os == Os::Linux {
            inputs.add("contribs", CONTRIBS.join(","));
        }
        if self.personality == Personality::Darwin {
            // The config.h rewrite is part of what the build is (a changed answer rebuilds).
            inputs.add(
                "config.h answers",
                format!(
                    "{:?} {}",
                    configure::CONFIG_H_ANSWERS,
                    configure::APPLE_GUARD
                ),
            );
        }
        Ok(inputs)
    }

    /// What the build stages, for the manifest beside the prefix.
    pub fn manifest(&self) -> driver_common::staging::Manifest {
        driver_common::staging::Manifest {
            version: self.source.version.clone(),
            line: self.source.line.clone(),
            personality: self.personality,
            target: self.target.rust.to_string(),
            patched: !self.series.is_empty(),
            prefix: self.dirs.staged(),
            configured_prefix: self
                .dirs
                .destdir
                .is_some()
                .then(|| self.dirs.prefix.clone()),
            sysconfdir: self.sysconfdir.clone(),
            localstatedir: self.localstatedir.clone(),
            source: self.dirs.src.clone(),
            build_dir: self.dirs.build.clone(),
            make_vars: self.make_vars.clone(),
        }
    }
}

/// make and pkg-config, on the PATH.
fn require_build_tools(sh: &Shell) -> Result<()> {
    require_tool(
        sh,
        "make",
        "building Slurm",
        "install GNU make (Debian: apt-get install make)",
    )?;
    require_tool(
        sh,
        "pkg-config",
        "finding Slurm's dependencies",
        "Debian: apt-get install pkg-config; macOS: brew install pkgconf",
    )
}

/// The compiler (and zig wrappers, for a macOS target built on Linux unless the user chose a
/// compiler).
fn toolchain(
    sh: &Shell,
    root: &Path,
    target: &'static Target,
    host: &'static Target,
    cross: bool,
    base: &Path,
) -> Result<Toolchain> {
    let ccache = on_path(sh, "ccache");
    let zig = if cross::default_is_zig(target, host)
        && configure::user_compiler(target, cross, &env_var).is_none()
    {
        Some(cross::zig::prepare(sh, root, base, target, ccache)?)
    } else {
        None
    };
    let compiler = configure::compiler(
        target,
        host,
        cross,
        &env_var,
        ccache,
        zig.as_ref().map(|z| z.cc.as_path()),
    )?;
    Ok(Toolchain { compiler, zig })
}

#[cfg(test)]
mod tests {
    use super::*;
    use driver_common::targets::rows;

    #[test]
    fn staging_name__personality_nopatch_and_cross_triple() {
        let linux = rows::linux_x86();
        let arm = rows::linux_arm();
        for (personality, no_patches, target, cross, want) in [
            (Personality::Native, false, linux, false, "24.11.5-native"),
            (
                Personality::Native,
                true,
                linux,
                false,
                "24.11.5-native-nopatch",
            ),
            (Personality::Darwin, false, linux, false, "24.11.5-darwin"),
            (
                Personality::Native,
                false,
                arm,
                true,
                "24.11.5-native-aarch64-unknown-linux-gnu",
            ),
            (
                Personality::Darwin,
                false,
                rows::mac_x86().with_macos_min(Some("11.0")).unwrap(),
                true,
                "24.11.5-darwin-x86_64-apple-darwin-macos11.0",
            ),
            (
                Personality::Darwin,
                false,
                rows::mac_x86(),
                true,
                "24.11.5-darwin-x86_64-apple-darwin",
            ),
        ] {
            let got = staging_name("24.11.5", personality, no_patches, target, cross);
            assert_eq!(got, want, "case {want}");
        }
    }
}
