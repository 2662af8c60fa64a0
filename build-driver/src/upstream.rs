//! `cargo xtask upstream --version V --out DIR`: the changes of the series marked
//! upstreamable (their header's `Upstreamable:` starts with "yes"), for the line of pinned
//! version V, as a `git format-patch` series against V's pristine tree, with commit messages
//! in SchedMD's style (`component - Sentence.`, a body, a `Changelog:` trailer, the
//! `Signed-off-by:` CONTRIBUTING.md asks for). Our own files (`patches/src/`, decided for the
//! line) go into the commit of the first exported patch that registers them. Proof: the
//! series is applied with `git am` to a fresh repository of the pristine tree and must give
//! exactly the tree it was made from. Where a patch does not fit upstream's tree without a
//! left-out one (its context holds that one's lines), `patches/upstream/<name>` is its
//! hand-made variant for the export; failing that, the export retries with one line of
//! context and says so. `DIR/SERIES.md` lists what was exported, what was
//! left out and why (the header's own words: the shim dependency, or a policy), and any
//! upstreamable patch that does not apply without a left-out one.

mod message;

use crate::patches::{doc, own, series};
use clap::Args;
use driver_common::error::{Error, Result};
use driver_common::pins::Pins;
use std::fs;
use std::path::{Path, PathBuf};
use xshell::{Shell, cmd};

#[derive(Debug, Args)]
pub struct UpstreamArgs {
    /// A pinned, fetched version (slurm-src/<version>/), e.g. 26.11-snapshot.
    #[arg(long)]
    pub version: String,
    /// Where the .patch files and SERIES.md go (created; must be empty if it exists).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

/// The fixed identity and date of the export's commits (reproducible output).
const ENV: &[(&str, &str)] = &[
    ("GIT_AUTHOR_NAME", "slurm-on-mac developers"),
    ("GIT_AUTHOR_EMAIL", "dev@slurm-on-mac.invalid"),
    ("GIT_COMMITTER_NAME", "slurm-on-mac developers"),
    ("GIT_COMMITTER_EMAIL", "dev@slurm-on-mac.invalid"),
    ("GIT_AUTHOR_DATE", "2026-12-01T09:00:00Z"),
    ("GIT_COMMITTER_DATE", "2026-12-01T09:00:00Z"),
];

fn git(sh: &Shell, dir: &Path, args: &[&str]) -> Result<String> {
    let mut c = cmd!(sh, "git -C {dir} {args...}")
        .env("GIT_CEILING_DIRECTORIES", dir.parent().unwrap_or(dir))
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .quiet();
    for (k, v) in ENV {
        c = c.env(k, v);
    }
    let out = c.ignore_status().output()?;
    if !out.status.success() {
        return Err(Error::Usage(format!(
            "git {} in {}: {}",
            args.join(" "),
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A git repository of the pristine tree at `dir`, one commit.
fn pristine_repo(sh: &Shell, pristine: &Path, dir: &Path, version: &str) -> Result<()> {
    driver_common::util::fs::copy_tree(pristine, dir)?;
    git(sh, dir, &["init", "-q"])?;
    git(sh, dir, &["config", "core.autocrlf", "false"])?;
    git(sh, dir, &["add", "-A", "-f"])?;
    git(
        sh,
        dir,
        &[
            "commit",
            "-q",
            "--no-verify",
            "-m",
            &format!("Slurm {version}"),
        ],
    )?;
    Ok(())
}

/// The scratch directory of a run, removed when it ends.
struct Work(PathBuf);

impl Work {
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Work {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Our files as a line gets them: (path in the tree, text).
type OurFiles = Vec<(String, String)>;

/// What became of one series entry.
#[derive(Debug)]
enum Fate {
    Exported(String),
    LeftOut(String),
    DoesNotApply(String),
}

pub fn run(sh: &Shell, root: &Path, args: UpstreamArgs) -> Result<()> {
    let pins = Pins::load(root)?;
    let pin = pins.get(&args.version)?;
    let pristine = root.join("slurm-src").join(&pin.version);
    if !pristine.join("configure.ac").is_file() {
        return Err(Error::Usage(format!(
            "{} is not fetched: cargo xtask fetch --version {}",
            pin.version, pin.version
        )));
    }
    let out = std::path::absolute(&args.out).map_err(|e| Error::io(&args.out, e))?;
    if out.exists()
        && fs::read_dir(&out)
            .map_err(|e| Error::io(&out, e))?
            .next()
            .is_some()
    {
        return Err(Error::Usage(format!("{} is not empty", out.display())));
    }
    fs::create_dir_all(&out).map_err(|e| Error::io(&out, e))?;
    let work_dir = root.join("target").join("upstream-work").join(&pin.version);
    if work_dir.exists() {
        fs::remove_dir_all(&work_dir).map_err(|e| Error::io(&work_dir, e))?;
    }
    fs::create_dir_all(&work_dir).map_err(|e| Error::io(&work_dir, e))?;
    let work = Work(work_dir);
    let repo = work.path().join("export");
    pristine_repo(sh, &pristine, &repo, &pin.version)?;
    let base = git(sh, &repo, &["rev-parse", "HEAD"])?.trim().to_string();
    let (fates, unplaced) = commit_series(sh, root, &pin.line, &repo, work.path())?;
    let range = format!("{base}..HEAD");
    let outs = out.to_str().unwrap_or_default();
    git(
        sh,
        &repo,
        &["format-patch", "-q", "--no-signature", "-o", outs, &range],
    )?;
    let clean = work.path().join("clean");
    pristine_repo(sh, &pristine, &clean, &pin.version)?;
    let (count, tree) = prove(sh, &out, &repo, &clean)?;
    let rows = fates_rows(&fates);
    let report = message::series_md(&pin.version, &pin.line, &rows, &unplaced, count, &tree);
    let md = out.join("SERIES.md");
    fs::write(&md, report).map_err(|e| Error::io(&md, e))?;
    println!(
        "upstream: {count} patch(es) for Slurm {} in {}; git am on a clean copy gives the same tree ({}); see SERIES.md",
        pin.version,
        out.display(),
        &tree[..12.min(tree.len())]
    );
    Ok(())
}

/// Commits every upstreamable entry of `line`'s series in `repo`: what became of each
/// entry, and our files no exported patch registered.
fn commit_series(
    sh: &Shell,
    root: &Path,
    line: &str,
    repo: &Path,
    work: &Path,
) -> Result<(Vec<(String, Fate)>, OurFiles)> {
    let dir = root.join("patches");
    let mut ours = own::for_line(root, line)?;
    let mut fates: Vec<(String, Fate)> = Vec::new();
    for e in series::entries(root)? {
        let Some(file) = e.file_for(&dir, line) else {
            continue;
        };
        let main = fs::read_to_string(dir.join(&e.name))
            .map_err(|err| Error::io(dir.join(&e.name), err))?;
        let h = doc::header(&main);
        if !h.upstreamable.starts_with("yes") {
            fates.push((e.name.clone(), Fate::LeftOut(h.upstreamable.clone())));
            continue;
        }
        // a hand-made variant for the export (patches/upstream/<name>) where the line's
        // file does not fit upstream's tree without a left-out patch
        let export_variant = dir.join("upstream").join(&e.name);
        let file = if export_variant.is_file() {
            export_variant
        } else {
            file
        };
        let note = match apply_for_export(sh, repo, &file)? {
            Ok(note) => note,
            Err(why) => {
                fates.push((e.name.clone(), Fate::DoesNotApply(why)));
                continue;
            }
        };
        // our files this patch registers (its diff names their directory's Makefile or
        // the file itself) go into its commit
        let text = fs::read_to_string(&file).map_err(|err| Error::io(&file, err))?;
        let (mine, rest): (Vec<_>, Vec<_>) =
            ours.into_iter().partition(|(rel, _)| registers(&text, rel));
        ours = rest;
        for (rel, body) in &mine {
            let p = repo.join(rel);
            fs::create_dir_all(p.parent().unwrap_or(repo)).map_err(|err| Error::io(&p, err))?;
            fs::write(&p, body).map_err(|err| Error::io(&p, err))?;
        }
        let msg_file = work.join("msg");
        fs::write(&msg_file, message::commit_message(&h))
            .map_err(|err| Error::io(&msg_file, err))?;
        git(sh, repo, &["add", "-A", "-f"])?;
        let msg = msg_file.to_str().unwrap_or_default();
        git(sh, repo, &["commit", "-q", "--no-verify", "-F", msg])?;
        let files: Vec<&str> = mine.iter().map(|(r, _)| r.as_str()).collect();
        let detail = format!("{note}{}", files.join(", "));
        fates.push((e.name.clone(), Fate::Exported(detail)));
    }
    Ok((fates, ours))
}

/// Applies `file` in `repo`: `Ok(Ok(note))` when it applied (the note says how, if not
/// exactly), `Ok(Err(why))` when it does not.
fn apply_for_export(
    sh: &Shell,
    repo: &Path,
    file: &Path,
) -> Result<std::result::Result<String, String>> {
    let abs = file.canonicalize().map_err(|err| Error::io(file, err))?;
    let abs = abs.to_str().unwrap_or_default();
    if git(sh, repo, &["apply", "-p1", "--whitespace=nowarn", abs]).is_ok() {
        return Ok(Ok(String::new()));
    }
    // its context may hold a left-out patch's lines: one line of context each side
    Ok(match git(sh, repo, &["apply", "-p1", "-C1", "--whitespace=nowarn", abs]) {
        Ok(_) => Ok("applied with one line of context (git apply -C1: a left-out patch's lines were in its context); ".into()),
        Err(err) => Err(err.to_string()),
    })
}

/// The proof: `git am` of the series in `out` on `clean` (a fresh repository of the
/// pristine tree) gives `repo`'s tree. Returns the number of patches and the tree id.
fn prove(sh: &Shell, out: &Path, repo: &Path, clean: &Path) -> Result<(usize, String)> {
    let patches = driver_common::util::fs::files_with_extension(out, "patch")?;
    let mut am = vec!["am", "-q", "--whitespace=nowarn"];
    am.extend(patches.iter().filter_map(|p| p.to_str()));
    git(sh, clean, &am)?;
    let a = git(sh, repo, &["rev-parse", "HEAD^{tree}"])?;
    let b = git(sh, clean, &["rev-parse", "HEAD^{tree}"])?;
    if a != b {
        return Err(Error::Usage(format!(
            "git am of {} gave tree {}, the export's is {}",
            out.display(),
            b.trim(),
            a.trim()
        )));
    }
    Ok((patches.len(), b.trim().to_string()))
}

fn fates_rows(fates: &[(String, Fate)]) -> Vec<(String, &'static str, String)> {
    fates
        .iter()
        .map(|(n, f)| match f {
            Fate::Exported(files) => (n.clone(), "exported", files.clone()),
            Fate::LeftOut(why) => (n.clone(), "left out", why.clone()),
            Fate::DoesNotApply(e) => (n.clone(), "does not apply", e.clone()),
        })
        .collect()
}

/// Whether patch `text` registers our file `rel`: it names the file, or the Makefile of the
/// file's directory (configure.ac's AC_CONFIG_FILES) or the directory in its parent's
/// SUBDIRS.
fn registers(text: &str, rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    let stem = name.split('.').next().unwrap_or(name);
    let dir = rel.rsplit_once('/').map_or("", |(d, _)| d);
    let by_dir = |l: &str| !dir.is_empty() && l.contains(&format!("{dir}/Makefile"));
    text.lines()
        .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
        .any(|l| {
            if name == "Makefile.am" {
                return by_dir(l);
            }
            l.contains(name)
                || by_dir(l)
                || (stem.len() > 8 && l.to_lowercase().contains(&stem.to_lowercase()))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers__by_name_or_the_directory_makefile() {
        let t = "+++ b/src/plugins/task/darwin/Makefile.am\n+\tsrc/plugins/proctrack/darwin/Makefile\n+#include \"src/common/daemon_only.h\"\n context daemon\n+X_AC_APPLE_GPU\n";
        assert!(registers(t, "src/plugins/proctrack/darwin/darwin_proc.c"));
        assert!(registers(t, "src/plugins/proctrack/darwin/Makefile.am"));
        assert!(registers(t, "src/common/daemon_only.h"));
        assert!(registers(t, "auxdir/x_ac_apple_gpu.m4"));
        assert!(!registers(t, "src/plugins/task/darwin/task_darwin.c"));
        assert!(
            !registers(t, "src/plugins/task/darwin/Makefile.am"),
            "not by a +++ line"
        );
    }
}
