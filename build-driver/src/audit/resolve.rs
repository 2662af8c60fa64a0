//! Which libraries a process loads, and the symbols they make available.
//!
//! Library names are resolved the way the dynamic loader would, then, for a prefix that was
//! moved after installation, by file name inside the prefix:
//!
//! * ELF (`DT_NEEDED`): a name with a `/` as is; else the requesting object's run path
//!   (`DT_RUNPATH`, or `DT_RPATH` when there is no `DT_RUNPATH`; `$ORIGIN` expanded), the
//!   program's run path (ld.so applies only a `DT_RPATH` there; the audit is lenient), the
//!   system's directories (`/etc/ld.so.conf` and the files it includes, then `/lib`,
//!   `/usr/lib`, `/lib64`, `/usr/lib64`), and last `PREFIX/lib` and `PREFIX/lib/slurm`.
//! * Mach-O (`LC_LOAD_DYLIB`): `@rpath/` tried against the `LC_RPATH`s of the requesting
//!   image and of the program (`@loader_path`, `@executable_path` expanded); a system install
//!   name (`/usr/lib/...`, `/System/...`) is looked up in the SDK stubs (`.tbd`); any other
//!   absolute path is used if it exists; last `PREFIX/lib` and `PREFIX/lib/slurm` by file
//!   name. A missing `LC_LOAD_WEAK_DYLIB` is not an error.
//!
//! A stub library makes its own exports visible and, recursively, those of its
//! `reexported-libraries` (each must have a stub too, or it is reported missing).
//!
//! A process's symbols are the union of the exports of the program, every library in the
//! transitive closure of the program's and the plugin's libraries, and the stub libraries
//! among them. The union ignores ELF symbol versions and Mach-O two-level namespaces: plugins
//! are linked flat (`-undefined dynamic_lookup`), so dyld searches every loaded image too.
//! Other plugins of the same process do not count: Slurm `dlopen`s plugins without
//! `RTLD_GLOBAL`.

use super::image::{Format, Image};
use super::tbd::{self, StubLibrary};
use driver_common::error::{Error, Result};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// A loaded library: a real file, or an SDK stub.
#[derive(Debug, Clone)]
enum Loaded {
    File(Rc<Image>),
    Stub(Rc<StubLibrary>),
}

/// Reads each file once and remembers it.
#[derive(Debug)]
pub struct Resolver {
    prefix: PathBuf,
    system_dirs: Vec<PathBuf>,
    stubs: HashMap<String, Rc<StubLibrary>>,
    images: HashMap<PathBuf, Option<Rc<Image>>>,
}

/// The libraries of one process (program + plugin) and what could not be found.
#[derive(Debug, Default)]
pub struct Closure {
    /// The loaded images and stubs (shared, not copied: a closure is built per pair).
    images: Vec<Rc<Image>>,
    stubs: Vec<Rc<StubLibrary>>,
    /// Library names that resolved to nothing (with the object that asked for them).
    pub missing: BTreeSet<String>,
}

impl Closure {
    /// Whether anything loaded exports `name`.
    pub fn defines(&self, name: &str) -> bool {
        self.images.iter().any(|i| i.exports.contains(name))
            || self.stubs.iter().any(|s| s.exports.contains(name))
    }
}

impl Resolver {
    /// `stub_files`: `.tbd` files for a Mach-O prefix, parsed for `arch` (`arm64`/`x86_64`).
    pub fn new(prefix: &Path, stub_files: &[PathBuf], arch: &str) -> Result<Resolver> {
        let mut stubs = HashMap::new();
        for f in stub_files {
            let text = std::fs::read_to_string(f).map_err(|e| Error::io(f, e))?;
            let libs = tbd::parse(&text, arch).map_err(|detail| Error::File {
                path: f.clone(),
                problem: format!("not a readable .tbd stub: {detail}"),
            })?;
            for l in libs {
                stubs.insert(l.install_name.clone(), Rc::new(l));
            }
        }
        Ok(Resolver {
            prefix: prefix.to_path_buf(),
            system_dirs: elf_system_dirs(),
            stubs,
            images: HashMap::new(),
        })
    }

    /// The image at `path` (read once); `None` when it is not a binary.
    pub fn image(&mut self, path: &Path) -> Result<Option<Rc<Image>>> {
        if let Some(i) = self.images.get(path) {
            return Ok(i.clone());
        }
        let i = Image::read(path)?.map(Rc::new);
        self.images.insert(path.to_path_buf(), i.clone());
        Ok(i)
    }

    /// What `root` and the libraries it loads (transitively) make available in the process
    /// of `program` (whose run paths and directory also apply). A process running a plugin
    /// sees the union of `closure(program, program)` and `closure(plugin, program)`.
    pub fn closure(&mut self, root: &Rc<Image>, program: &Image) -> Result<Closure> {
        let mut out = Closure::default();
        let mut seen: HashSet<String> = HashSet::new();
        let mut queue: Vec<Rc<Image>> = vec![root.clone()];
        out.images.push(root.clone());
        while let Some(img) = queue.pop() {
            for n in &img.needed {
                let key = format!("{}\0{}", n.name, img.path.display());
                if !seen.insert(key) {
                    continue;
                }
                match self.find(&n.name, &img, program)? {
                    Some(Loaded::File(lib)) => {
                        if seen.insert(lib.path.display().to_string()) {
                            out.images.push(lib.clone());
                            queue.push(lib);
                        }
                    }
                    Some(Loaded::Stub(s)) => self.add_stub(&s, &mut out, &mut seen),
                    None if n.optional => {}
                    None => {
                        out.missing.insert(format!(
                            "{} (needed by {})",
                            n.name,
                            img.path.file_name().unwrap_or_default().to_string_lossy()
                        ));
                    }
                }
            }
        }
        Ok(out)
    }

    /// A stub's exports and, recursively, those of the libraries it re-exports.
    fn add_stub(&self, stub: &Rc<StubLibrary>, out: &mut Closure, seen: &mut HashSet<String>) {
        if !seen.insert(format!("stub\0{}", stub.install_name)) {
            return;
        }
        out.stubs.push(stub.clone());
        for r in &stub.reexports {
            match self.stubs.get(r) {
                Some(s) => self.add_stub(s, out, seen),
                None => {
                    out.missing.insert(format!(
                        "{r} (re-exported by {}; no .tbd stub for it)",
                        stub.install_name
                    ));
                }
            }
        }
    }

    fn find(&mut self, name: &str, from: &Image, program: &Image) -> Result<Option<Loaded>> {
        match from.format {
            Format::Elf => self.find_elf(name, from, program),
            Format::MachO => self.find_macho(name, from, program),
        }
    }

    fn load(&mut self, path: &Path) -> Result<Option<Loaded>> {
        if !path.is_file() {
            return Ok(None);
        }
        Ok(self.image(path)?.map(Loaded::File))
    }

    fn in_prefix(&mut self, name: &str) -> Result<Option<Loaded>> {
        let Some(file) = Path::new(name).file_name() else {
            return Ok(None);
        };
        for dir in ["lib", "lib/slurm"] {
            let p = self.prefix.join(dir).join(file);
            if let Some(l) = self.load(&p)? {
                return Ok(Some(l));
            }
        }
        Ok(None)
    }

    fn find_elf(&mut self, name: &str, from: &Image, program: &Image) -> Result<Option<Loaded>> {
        if name.contains('/') {
            return self.load(Path::new(name));
        }
        let origin = |img: &Image| {
            img.path
                .parent()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        };
        let mut dirs: Vec<PathBuf> = Vec::new();
        for (img, paths) in [(from, &from.rpaths), (program, &program.rpaths)] {
            let o = origin(img);
            dirs.extend(
                paths
                    .iter()
                    .map(|r| PathBuf::from(r.replace("${ORIGIN}", &o).replace("$ORIGIN", &o))),
            );
        }
        dirs.extend(self.system_dirs.iter().cloned());
        for d in dirs {
            if let Some(l) = self.load(&d.join(name))? {
                return Ok(Some(l));
            }
        }
        self.in_prefix(name)
    }

    fn find_macho(&mut self, name: &str, from: &Image, program: &Image) -> Result<Option<Loaded>> {
        let expand = |s: &str, loader: &Image| {
            let dir = |i: &Image| {
                i.path
                    .parent()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default()
            };
            s.replace("@loader_path", &dir(loader))
                .replace("@executable_path", &dir(program))
        };
        if let Some(rest) = name.strip_prefix("@rpath/") {
            for img in [from, program] {
                for r in &img.rpaths {
                    let p = PathBuf::from(expand(r, img)).join(rest);
                    if let Some(l) = self.load(&p)? {
                        return Ok(Some(l));
                    }
                }
            }
            return self.in_prefix(name);
        }
        if let Some(s) = self.stubs.get(name) {
            return Ok(Some(Loaded::Stub(s.clone())));
        }
        if name.starts_with("/usr/lib/") || name.starts_with("/System/") {
            // A system library without a stub: nothing on this machine describes it.
            return Ok(None);
        }
        let p = PathBuf::from(expand(name, from));
        if let Some(l) = self.load(&p)? {
            return Ok(Some(l));
        }
        self.in_prefix(name)
    }
}

/// The ELF loader's system directories on this machine: `/etc/ld.so.conf` (with its
/// `include` globs, of the `DIR/*.conf` form Debian uses), then the built-in defaults.
fn elf_system_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    read_ld_so_conf(Path::new("/etc/ld.so.conf"), &mut dirs, 0);
    for d in ["/lib", "/usr/lib", "/lib64", "/usr/lib64"] {
        dirs.push(PathBuf::from(d));
    }
    dirs
}

fn read_ld_so_conf(file: &Path, dirs: &mut Vec<PathBuf>, depth: u32) {
    let Ok(text) = std::fs::read_to_string(file) else {
        return;
    };
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if let Some(pattern) = line.strip_prefix("include ") {
            if depth > 4 {
                continue;
            }
            let pattern = Path::new(pattern.trim());
            let (Some(dir), Some(name)) = (pattern.parent(), pattern.file_name()) else {
                continue;
            };
            let name = name.to_string_lossy();
            let suffix = name.strip_prefix('*').unwrap_or(&name).to_string();
            let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.to_string_lossy().ends_with(&suffix))
                .collect();
            files.sort();
            for f in files {
                read_ld_so_conf(&f, dirs, depth + 1);
            }
        } else if line.starts_with('/') {
            dirs.push(PathBuf::from(line));
        }
    }
}
