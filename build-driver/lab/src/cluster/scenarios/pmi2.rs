//! PMI-2 across nodes (SMD-401) and across a native and a darwin node (SMD-402): a small
//! program (`fixtures/pmi2_kvs.c`, written for the harness), compiled here with the system C
//! compiler against each build's `include/slurm/pmi2.h` and `lib/libpmi2` (build-slurm
//! installs contribs/pmi2), runs as one task per node under `srun --mpi=pmi2`: `PMI2_Init`,
//! a KVS put of its own key, `PMI2_KVS_Fence`, and a get of every other rank's key. The
//! exchange crosses the nodes' slurmstepd (the mpi/pmi2 plugin's KVS tree), so a task can
//! read a value only if the stepd of the other node delivered it.

use super::client::{Ctx, q};
use driver_common::error::{Error, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use xshell::cmd;

/// The fixture's source.
const FIXTURE: &str = include_str!("fixtures/pmi2_kvs.c");

/// Compile the fixture against `prefix`'s libpmi2 into the scenario directory.
fn build_fixture(ctx: &Ctx<'_>, prefix: &Path, label: &str) -> Result<PathBuf> {
    let (inc, lib) = (prefix.join("include"), prefix.join("lib"));
    if !inc.join("slurm/pmi2.h").is_file() {
        return Err(Error::Scenario(format!(
            "{}: no include/slurm/pmi2.h: build-slurm installs contribs/pmi2 on Linux; rebuild the prefix with this driver",
            prefix.display()
        )));
    }
    let src = ctx.path("pmi2_kvs.c");
    driver_common::util::fs::write_atomic(&src, FIXTURE.as_bytes(), 0o644)?;
    let out = ctx.path(&format!("pmi2-kvs-{label}"));
    let rpath = format!("-Wl,-rpath,{}", lib.display());
    let sh = ctx.sh;
    cmd!(
        sh,
        "cc -std=c99 -D_DEFAULT_SOURCE -Wall -Werror -O1 -I{inc} -o {out} {src} -L{lib} -lpmi2 {rpath}"
    )
    .quiet()
    .run()
    .map_err(|e| {
        Error::Scenario(format!(
            "compiling the PMI-2 fixture against {}: {e}",
            prefix.display()
        ))
    })?;
    Ok(out)
}

/// One task's line: `pmi2 rank=R size=N host=H peers=H0,H1 ok`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rank {
    pub rank: u32,
    pub size: u32,
    pub host: String,
    pub peers: Vec<String>,
}

/// The fixture's lines (`srun -l` labels dropped); a `FAIL` line is an error.
pub fn parse_ranks(out: &str) -> Result<Vec<Rank>> {
    let mut ranks = Vec::new();
    for line in out.lines() {
        let text = line.split_once(": ").map_or(line, |(_, t)| t).trim();
        let Some(rest) = text.strip_prefix("pmi2 ") else {
            continue;
        };
        if rest.contains(" FAIL ") {
            return Err(Error::Scenario(format!("a PMI-2 task failed: {text:?}")));
        }
        let field = |k: &str| {
            rest.split_whitespace()
                .find_map(|w| w.strip_prefix(k).and_then(|v| v.strip_prefix('=')))
                .ok_or_else(|| Error::Scenario(format!("PMI-2 line without {k}=: {text:?}")))
        };
        let num = |k: &str| -> Result<u32> {
            field(k)?
                .parse()
                .map_err(|_| Error::Scenario(format!("PMI-2 line: {k}= is not a number: {text:?}")))
        };
        if !rest.ends_with(" ok") {
            return Err(Error::Scenario(format!(
                "PMI-2 line not ending in ok: {text:?}"
            )));
        }
        ranks.push(Rank {
            rank: num("rank")?,
            size: num("size")?,
            host: field("host")?.to_string(),
            peers: field("peers")?.split(',').map(str::to_string).collect(),
        });
    }
    ranks.sort_by_key(|r| r.rank);
    Ok(ranks)
}

/// Every node ran one rank under its own host name; every rank saw the same value of every
/// other rank's key (its host), in rank order.
fn check_exchange(ctx: &Ctx<'_>, ranks: &[Rank], out: &str) -> Result<String> {
    let n = ctx.cluster.nodes().len();
    let ids: Vec<u32> = ranks.iter().map(|r| r.rank).collect();
    let want: Vec<u32> = (0..n as u32).collect();
    if ids != want || ranks.iter().any(|r| r.size as usize != n) {
        return Err(Error::Scenario(format!(
            "ranks {ids:?} of sizes {:?}, expected ranks {want:?} of size {n}: {out:?}",
            ranks.iter().map(|r| r.size).collect::<Vec<_>>()
        )));
    }
    let hosts: Vec<String> = ranks.iter().map(|r| r.host.clone()).collect();
    let mut seen = hosts.clone();
    seen.sort();
    if seen != ctx.hostnames() {
        return Err(Error::Scenario(format!(
            "the ranks ran on {hosts:?}, expected one on each of {:?}",
            ctx.hostnames()
        )));
    }
    for r in ranks {
        if r.peers != hosts {
            return Err(Error::Scenario(format!(
                "rank {} read {:?} from the KVS, expected {hosts:?} (each rank's own host)",
                r.rank, r.peers
            )));
        }
    }
    Ok(format!(
        "{n} ranks on {}: init, put, fence, get of every other rank",
        hosts.join(",")
    ))
}

/// `srun --mpi=pmi2` of `program` (a path, or a shell line) with one task per node.
fn run_step(ctx: &Ctx<'_>, program: &[&str]) -> Result<String> {
    let n = ctx.cluster.nodes().len().to_string();
    let mut args = vec!["-N", &n, "--ntasks-per-node=1", "--mpi=pmi2", "-l"];
    args.extend_from_slice(program);
    ctx.srun_stdout("srun --mpi=pmi2", &args)
}

/// SMD-401: the fixture on every node of one build.
pub fn across_nodes(ctx: &mut Ctx<'_>) -> Result<String> {
    let prefix = ctx.cluster.nodes()[0].prefix.clone();
    let prog = build_fixture(ctx, &prefix, "node")?;
    let prog = prog.to_string_lossy().to_string();
    let out = run_step(ctx, &[&prog])?;
    let ranks = parse_ranks(&out)?;
    check_exchange(ctx, &ranks, &out)
}

/// SMD-402: the fixture on a native and a darwin node, each task the program built against
/// its own node's libpmi2, started by that node's slurmstepd.
pub fn across_builds(ctx: &mut Ctx<'_>) -> Result<String> {
    let mut by_prefix: BTreeMap<PathBuf, PathBuf> = BTreeMap::new();
    for node in ctx.cluster.nodes().to_vec() {
        if !by_prefix.contains_key(&node.prefix) {
            let bin = build_fixture(ctx, &node.prefix, &node.build)?;
            by_prefix.insert(node.prefix.clone(), bin);
        }
    }
    let mut cases = String::new();
    for node in ctx.cluster.nodes() {
        cases.push_str(&format!(
            "  {}) exec {} ;;\n",
            node.name,
            q(&by_prefix[&node.prefix])
        ));
    }
    // The task says which slurmstepd started it, then becomes its node's build's program.
    let wrapper = ctx.script(
        "pmi2-by-node",
        &format!(
            "echo \"stepd $SLURMD_NODENAME $(readlink /proc/$PPID/exe)\"\ncase \"$SLURMD_NODENAME\" in\n{cases}esac\necho \"pmi2 rank=? FAIL no program for node $SLURMD_NODENAME rc=0\"\nexit 1\n"
        ),
    )?;
    let out = run_step(ctx, &[&wrapper.to_string_lossy()])?;
    let ranks = parse_ranks(&out)?;
    let exchange = check_exchange(ctx, &ranks, &out)?;
    let mut builds = Vec::new();
    for node in ctx.cluster.nodes() {
        let want = format!(
            "stepd {} {}",
            node.name,
            node.prefix.join("sbin/slurmstepd").display()
        );
        if !out.lines().any(|l| l.ends_with(&want)) {
            return Err(Error::Scenario(format!(
                "no task on {} started by its own build's slurmstepd ({want:?}): {out:?}",
                node.name
            )));
        }
        builds.push(format!("{} [{}]", node.name, node.build));
    }
    Ok(format!(
        "{exchange}; each task its node's build ({}) with that build's libpmi2",
        builds.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_ranks__sorted_by_rank_and_failures_are_errors() {
        let out = "1: pmi2 rank=1 size=2 host=node2 peers=node1,node2 ok\n0: stepd node1 /p/sbin/slurmstepd\n0: pmi2 rank=0 size=2 host=node1 peers=node1,node2 ok\n";
        let r = parse_ranks(out).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].rank, r[0].host.as_str()), (0, "node1"));
        assert_eq!(r[1].peers, ["node1", "node2"]);
        let e = parse_ranks("0: pmi2 rank=0 FAIL PMI2_KVS_Fence rc=14\n").unwrap_err();
        assert!(e.to_string().contains("PMI2_KVS_Fence"), "{e}");
        assert!(parse_ranks("pmi2 rank=x size=2 host=a peers=a ok\n").is_err());
        assert!(parse_ranks("pmi2 rank=0 size=2 host=a peers=a\n").is_err());
    }

    /// The fixture compiles alone against the header of the Slurm source it is written for.
    #[test]
    fn fixture__compiles_against_slurms_pmi2_header() {
        let root = driver_common::project_root();
        let header_dir = root.join("slurm-src/24.11.5/contribs/pmi2");
        if !header_dir.join("slurm/pmi2.h").is_file() {
            eprintln!(
                "skipped: {} is not unpacked (cargo xtask fetch --version 24.11.5)",
                header_dir.display()
            );
            return;
        }
        let (_dir, src) = driver_common::testing::scratch("f.c");
        std::fs::write(&src, FIXTURE).unwrap();
        let out = std::process::Command::new("cc")
            .args([
                "-std=c99",
                "-D_DEFAULT_SOURCE",
                "-Wall",
                "-Werror",
                "-fsyntax-only",
                "-I",
            ])
            .arg(&header_dir)
            .arg(&src)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
