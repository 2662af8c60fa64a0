//! The files a Mac node needs from a build of release line `line`: the programs and the
//! plugins a compute node or a submit host loads (the macOS process plugins and gpu/apple
//! among them). The Mach-O check (`cargo xtask build-slurm --target ...`) requires them of
//! every macOS build, and `cluster test` of every darwin-personality prefix before its
//! scenarios run, so a build that lost one fails instead of passing with a gap.

use crate::lines::Line;

pub const PROGRAMS: &[&str] = &[
    "sbin/slurmd",
    "sbin/slurmstepd",
    "sbin/sackd",
    "bin/sbatch",
    "bin/srun",
    "bin/salloc",
    "bin/scancel",
    "bin/sinfo",
    "bin/squeue",
    "bin/scontrol",
    "bin/sacct",
    "bin/sacctmgr",
];

/// Plugins in every line (by file name under `lib/slurm`, without `.so`).
pub const PLUGINS: &[&str] = &[
    "proctrack_pgid",
    "gpu_apple",
    // The macOS process plugins (patches 0040-0044; built on a darwin host).
    "proctrack_darwin",
    "jobacct_gather_darwin",
    "task_darwin",
    "select_cons_tres",
    "gres_gpu",
    "accounting_storage_slurmdbd",
    "mpi_pmi2",
    "prep_script",
    "hash_k12",
    "tls_none",
];

/// Plugins that need json-c and libjwt (cred/slurm is inside auth_slurm in every line).
pub const DEP_PLUGINS: &[&str] = &["auth_slurm", "serializer_json"];

/// The plugins (file names under `lib/slurm` without `.so`) of release `line`; `with_deps`
/// adds those that need json-c and libjwt.
pub fn plugins(line: Line, with_deps: bool) -> Vec<&'static str> {
    let facts = line.facts();
    let mut plugins: Vec<&str> = PLUGINS.to_vec();
    plugins.push(facts.topology_default);
    if facts.certgen {
        plugins.push("certgen_script");
    }
    if with_deps {
        plugins.extend(DEP_PLUGINS);
    }
    plugins
}

/// What of the node files `prefix` lacks (relative paths); `ext` is the shared library's
/// suffix of libslurmfull (`so` for an ELF build, `dylib` for Mach-O).
pub fn missing(prefix: &std::path::Path, line: Line, with_deps: bool, ext: &str) -> Vec<String> {
    PROGRAMS
        .iter()
        .map(|p| p.to_string())
        .chain([format!("lib/slurm/libslurmfull.{ext}")])
        .chain(
            plugins(line, with_deps)
                .into_iter()
                .map(|p| format!("lib/slurm/{p}.so")),
        )
        .filter(|rel| !prefix.join(rel).is_file())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing__names_each_absent_file() {
        let d = tempfile::tempdir().unwrap();
        let all = missing(d.path(), Line::L24_11, true, "so");
        assert!(
            all.contains(&"lib/slurm/gpu_apple.so".to_string()),
            "{all:?}"
        );
        assert!(all.contains(&"sbin/slurmd".to_string()));
        for rel in &all {
            let p = d.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        }
        assert!(missing(d.path(), Line::L24_11, true, "so").is_empty());
        std::fs::remove_file(d.path().join("lib/slurm/gpu_apple.so")).unwrap();
        assert_eq!(
            missing(d.path(), Line::L24_11, true, "so"),
            ["lib/slurm/gpu_apple.so"]
        );
    }
}
